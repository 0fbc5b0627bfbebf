// The dashboard's end-to-end test in headless Chromium (SPEC R14.11), run by
// crates/switchyard-cli/tests/ui_dashboard.rs against a real `switchyard serve`. Every input
// comes from the environment (the gateway's address, the keys, the figures the store holds);
// it prints `slow-ready` when the live page is open and `slow-seen` once the slow stream is on
// it (the Rust test then sends that request and lets it finish), and exits non-zero on the
// first failed check, naming it.
import { createRequire } from "node:module";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const base = env("GATEWAY");
const admin = env("ADMIN_KEY");
const keyA = env("KEY_A");
const keyB = env("KEY_B");
const expect = JSON.parse(env("EXPECT"));
const shots = env("SHOTS");
const require = createRequire(join(env("PLAYWRIGHT_DIR"), "package.json"));
const { chromium } = require("playwright-core");

let checks = 0;
const began = Date.now();
const step = (name) => process.stdout.write(`step ${name} at ${Date.now() - began} ms, ${checks} checks so far\n`);
function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  checks += 1;
}
const usd = (v) => "$" + Number(v).toFixed(6);
const utc = (ms) => new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC";
const secrets = [admin, keyA, keyB];
function noSecret(text, where) {
  for (const s of secrets) check(!text.includes(s), `no key in ${where}`);
}

// 1. Without a session every /ui path is refused: API paths 401, pages a redirect to sign in.
async function refusedWithoutSession() {
  const pages = ["/ui", "/ui/", "/ui/spend", "/ui/keys", "/ui/providers", "/ui/live", "/ui/nothing",
    "/ui/assets/app.js", "/ui/assets/uPlot.min.js", "/ui/assets/uPlot-LICENSE.txt"];
  const apis = ["/ui/api/spend", "/ui/api/spend.csv", "/ui/api/keys", "/ui/api/providers", "/ui/api/live",
    "/ui/api/live.json", "/ui/api/nothing"];
  const forged = "switchyard_session=" + "0".repeat(64);
  for (const cookie of [null, forged, `switchyard_session=${admin}`]) {
    const headers = cookie ? { cookie } : {};
    for (const p of pages) {
      const r = await fetch(base + p, { redirect: "manual", headers });
      check(r.status === 303 && r.headers.get("location") === "/ui/signin", `${p} without a session redirects (${r.status})`);
    }
    for (const p of apis) {
      const r = await fetch(base + p, { redirect: "manual", headers });
      check(r.status === 401, `${p} without a session is 401 (${r.status})`);
    }
    for (const p of ["/ui/api/keys", `/ui/api/keys/${expect.key_b.id}/revoke`, "/ui/api/teams", "/ui/signout"]) {
      const r = await fetch(base + p, { method: "POST", redirect: "manual", headers: { ...headers, "x-switchyard-ui": "1", "content-type": "application/json" }, body: '{"name":"x"}' });
      check(r.status === 401 || (p === "/ui/signout" && r.status === 303), `POST ${p} without a session is refused (${r.status})`);
    }
  }
  // A client key that is not an admin key does not sign in.
  const r = await fetch(base + "/ui/signin", { method: "POST", redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" }, body: "key=" + encodeURIComponent(keyA) });
  check(r.status === 401 && !r.headers.get("set-cookie"), `a non-admin key is refused at sign-in (${r.status})`);
  const text = await r.text();
  check(text.includes("is not an admin key"), "the refusal says why");
  noSecret(text, "the sign-in refusal");
}

async function signIn(page, context) {
  await page.goto(base + "/ui/spend");
  check(new URL(page.url()).pathname === "/ui/signin", "a page without a session goes to sign in");
  await page.screenshot({ path: join(shots, "signin.png"), fullPage: true });
  await page.getByLabel("Admin client key").fill(admin);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(base + "/ui/spend");
  const cookies = await context.cookies();
  const c = cookies.find((c) => c.name === "switchyard_session");
  check(c && c.httpOnly && c.sameSite === "Strict" && c.path === "/ui", "the session cookie is HttpOnly, SameSite=Strict, Path=/ui");
  check(/^[0-9a-f]{64}$/.test(c.value) && !c.value.includes(admin), "the cookie holds a random id, not the key");
  check(!(await page.evaluate(() => document.cookie)).includes("switchyard_session"), "the page's script cannot read the cookie");
}

async function spend(page) {
  for (const k of [expect.key_a, expect.key_b]) {
    const row = page.locator(`#totals tbody tr[data-group="${k.id}"]`);
    await row.waitFor();
    const cells = await row.locator("td").allTextContents();
    check(cells[0] === `${k.prefix}… (${k.name})`, `the totals name ${k.name} (${cells[0]})`);
    check(cells[1] === String(k.requests), `${k.name}'s requests (${cells[1]} vs ${k.requests})`);
    check(cells[4] === usd(k.cost_usd), `${k.name}'s cost is the spend log's (${cells[4]} vs ${usd(k.cost_usd)})`);
    check(Number(await row.getAttribute("data-cost")) === k.cost_usd, `${k.name}'s cost is exact`);
    check(cells[6] === k.cache_read, `${k.name}'s share of input read from the cache (${cells[6]} vs ${k.cache_read})`);
  }
  await page.locator("#chart canvas").first().waitFor();
  const series = JSON.parse(await page.locator("#chart").getAttribute("data-series"));
  for (const k of [expect.key_a, expect.key_b]) {
    check(series.includes(`${k.prefix}… (${k.name})`), `the chart has a series for ${k.name}`);
    check((await page.locator(".u-legend").textContent()).includes(`${k.prefix}… (${k.name})`), `the chart's legend names ${k.name}`);
  }
  await page.screenshot({ path: join(shots, "spend.png"), fullPage: true });
  const csv = await (await page.request.get(base + "/ui/api/spend.csv")).text();
  for (const k of [expect.key_a, expect.key_b]) {
    const line = csv.split("\n").find((l) => l.includes(`,${k.id},`));
    check(line && line.split(",")[3] === String(k.requests) && Number(line.split(",")[8]) === k.cost_usd, `the CSV has ${k.name}'s day with its exact cost`);
  }
  // By model, the same range: the route's model is there.
  await page.selectOption("#by", "model");
  await page.getByRole("button", { name: "Show" }).click();
  await page.locator(`#totals tbody tr[data-group="anthropic:claude-sonnet-4-5"]`).waitFor();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.selectOption("#by", "key");
  await page.getByRole("button", { name: "Show" }).click();
  await page.locator(`#totals tbody tr[data-group="${expect.key_a.id}"]`).waitFor();
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  check(wide <= 392, `the spend page fits a phone's width (${wide}px)`);
  await page.screenshot({ path: join(shots, "spend-phone.png"), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function keys(page) {
  await page.goto(base + "/ui/keys");
  const b = page.locator(`#keys tbody tr[data-key="${expect.key_b.id}"]`);
  await b.waitFor();
  check((await b.getAttribute("data-state")) === "active", "key B is active");
  const lastUsed = await b.locator('td[data-label="Last used"]').textContent();
  check(lastUsed.endsWith(" UTC"), `key B's last use is shown (${lastUsed})`);
  const budget = await page.locator(`#keys tbody tr[data-key="${expect.key_a.id}"] td[data-label="Budget"]`).textContent();
  check(budget.includes(`${usd(expect.key_a.budget_used_usd)} used`), `key A's budget used is the store's (${budget})`);
  noSecret(await page.content(), "the keys page");
  await page.screenshot({ path: join(shots, "keys.png"), fullPage: true });
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: `Revoke ${expect.key_b.name} (${expect.key_b.prefix}…)` }).click();
  await page.locator(`#keys tbody tr[data-key="${expect.key_b.id}"][data-state="revoked"]`).waitFor();
  // Its next request is refused (the gateway trusts a key for at most 1 s).
  let last = null;
  for (let i = 0; i < 50; i += 1) {
    last = await fetch(base + "/v1/chat/completions", { method: "POST",
      headers: { authorization: `Bearer ${keyB}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "sonnet", max_tokens: 50, messages: [{ role: "user", content: "hi" }] }) });
    if (last.status === 401) break;
    await last.text();
    await new Promise((r) => setTimeout(r, 200));
  }
  check(last.status === 401, `the revoked key's next request is refused (${last.status})`);
  check((await last.json()).error.message.includes("was revoked"), "the refusal says it was revoked");
  // A key made on the page is shown once and works; its budget is too small for any
  // completion (the live page's refusal below).
  await page.getByLabel("Name", { exact: true }).first().fill("made-on-the-page");
  await page.getByLabel("Budget", { exact: true }).first().fill("0.0001/day");
  await page.getByRole("button", { name: "Create key" }).click();
  const made = (await page.locator("#new-key-value").textContent()).trim();
  check(/^sk-sy-[0-9a-f]{48}$/.test(made), "the new key is shown");
  const models = await fetch(base + "/v1/models", { headers: { authorization: `Bearer ${made}` } });
  check(models.status === 200, `the new key works (${models.status})`);
  await models.text();
  await page.reload();
  await page.locator(`#keys tbody tr[data-key="${expect.key_a.id}"]`).waitFor();
  check(!(await page.content()).includes(made), "the new key is not shown again");
  const listed = await (await page.request.get(base + "/ui/api/keys")).text();
  check(!listed.includes(made), "the key list never holds a key");
  secrets.push(made);
  return made;
}

// Key A's parallel limit changed with the edit form is in the store's list, and the change and
// this session's sign-in are on the audit page, by this admin, with no key anywhere.
async function editAndAudit(page) {
  await page.goto(base + "/ui/keys");
  const a = expect.key_a;
  await page.getByRole("button", { name: `Edit ${a.name} (${a.prefix}…)` }).click();
  await page.locator('#edit-key input[name="max_parallel"]').fill("50");
  await page.getByRole("button", { name: "Save changes" }).click();
  await page.locator("#status", { hasText: "Key updated" }).waitFor();
  const listed = await (await page.request.get(base + "/ui/api/keys")).json();
  const edited = listed.keys.find((k) => k.id === a.id);
  check(edited.max_parallel === 50, `the edit is in the store (${edited.max_parallel})`);
  await page.goto(base + "/ui/audit");
  const row = page.locator("#audit tbody tr", { hasText: "key.update" }).first();
  await row.waitFor();
  const text = await row.textContent();
  check(text.includes("max_parallel: none → 50") && text.includes("dashboard admin"), `the edit is audited (${text})`);
  check(await page.locator("#audit tbody tr", { hasText: "signin" }).count() >= 1, "the sign-in is audited");
  noSecret(await page.content(), "the audit page");
  await page.screenshot({ path: join(shots, "audit.png"), fullPage: true });
}

async function providers(page) {
  await page.goto(base + "/ui/providers");
  const c = expect.cooldown;
  const row = page.locator(`table[data-route="flaky"] tr[data-entry="${c.entry}"]`);
  await row.waitFor();
  check((await row.getAttribute("data-state")) === "cooling_down", "the 429'd entry is cooling down");
  // `switchyard limits` shows the reset time to the second.
  check(Math.floor(Number(await row.getAttribute("data-until")) / 1000) * 1000 === c.until_ms, "its reset time is the store's");
  const resets = await row.locator('td[data-label="Resets at"]').textContent();
  check(resets.startsWith(utc(c.until_ms)), `the reset time is shown (${resets})`);
  const reason = await row.locator('td[data-label="Reason"]').textContent();
  check(reason === c.reason, `the reason is the store's (${reason})`);
  const backup = page.locator(`table[data-route="flaky"] tr[data-state="ready"]`);
  check((await backup.count()) === 1, "the fallback entry is ready");
  await page.screenshot({ path: join(shots, "providers.png"), fullPage: true });
}

async function live(page, poor) {
  await page.goto(base + "/ui/live");
  const err = page.locator(`#errors tbody tr`, { hasText: expect.error.route });
  await err.first().waitFor();
  const cells = await err.first().locator("td").allTextContents();
  check(cells[3] === expect.error.kind, `the last error's kind is the record's (${cells[3]})`);
  check(cells[4].length > 10 && !cells[4].includes("\n"), "the last error has its sentence");
  // A request refused at admission (its budget) is among the last errors too.
  const refused = await fetch(base + "/v1/chat/completions", { method: "POST",
    headers: { authorization: `Bearer ${poor}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "sonnet", max_tokens: 50, messages: [{ role: "user", content: "hi" }] }) });
  check(refused.status === 402, `the page-made key's request is refused for its budget (${refused.status})`);
  await refused.text();
  const prefix = poor.slice(0, 12);
  const b = page.locator("#errors tbody tr", { hasText: `${prefix}…` });
  await b.first().waitFor();
  const bc = await b.first().locator("td").allTextContents();
  check(bc[3] === "budget" && bc[2] === "sonnet", `the 402 is listed with its kind and route (${bc[3]}, ${bc[2]})`);
  check(bc[4].includes("budget") && !bc[4].includes(poor), `the 402's sentence, without the key (${bc[4]})`);
  process.stdout.write("slow-ready\n");
  const slow = page.locator("#flights tbody tr[data-id]", { hasText: "slow" });
  await slow.waitFor({ timeout: 60000 });
  const f = await slow.locator("td").allTextContents();
  check(f[1] === `${expect.key_a.prefix}…`, `the slow stream's key prefix (${f[1]})`);
  check(f[3] === "anthropic:claude-sonnet-4-5", `the slow stream's model (${f[3]})`);
  await page.locator("#flights tbody tr[data-id] td[data-label='Tokens so far']").filter({ hasNotText: /^0$/ }).first().waitFor();
  await page.screenshot({ path: join(shots, "live.png"), fullPage: true });
  process.stdout.write("slow-seen\n");
  await slow.waitFor({ state: "detached", timeout: 60000 });
  check(true, "the slow stream left the live page when it ended");
  noSecret(await page.content(), "the live page");
}

async function main() {
  mkdirSync(shots, { recursive: true });
  await refusedWithoutSession();
  step("refused");
  const profile = mkdtempSync(join(tmpdir(), "switchyard-ui-"));
  // A fresh, empty profile of its own (Playwright's persistent context takes it as
  // --user-data-dir).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = await context.newPage();
    const problems = [];
    page.on("pageerror", (e) => problems.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") problems.push(m.text()); });
    page.on("request", (r) => { if (!r.url().startsWith(base)) problems.push(`request off the gateway: ${r.url()}`); });
    await signIn(page, context);
    step("signIn");
    await providers(page);
    step("providers");
    await page.goto(base + "/ui/spend");
    await spend(page);
    step("spend");
    const poor = await keys(page);
    step("keys");
    await live(page, poor);
    step("live");
    await editAndAudit(page);
    step("audit");
    for (const p of ["spend", "keys", "providers", "audit"]) {
      const text = await (await page.request.get(`${base}/ui/api/${p}`)).text();
      noSecret(text, `/ui/api/${p}`);
    }
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(base + "/ui/signin");
    const after = await page.request.get(base + "/ui/api/keys");
    check(after.status() === 401, "after sign-out the API refuses");
    check(problems.length === 0, `no script errors and nothing fetched from elsewhere: ${problems.join("; ")}`);
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  // Exit now: fetch's keep-alive connections to the gateway would hold the process until the
  // gateway's idle timeout closes them.
  process.stdout.write(`ok ${checks} checks\n`, () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
