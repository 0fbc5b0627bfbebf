// Single sign-on's end-to-end test in headless Chromium (SPEC R14.11b), run by
// crates/switchyard-cli/tests/ui_sso.rs against a real `switchyard serve` and a real OpenID
// provider (oidc-provider's development login page, which takes any password). Each person
// signs in in a browser context of their own. Exits non-zero on the first failed check,
// naming it; prints `ok N checks` at the end. Only 127.0.0.1 is reached: any other request
// (the login page's web font) is aborted.
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const base = env("GATEWAY");
const issuer = env("ISSUER");
const shots = env("SHOTS");
const require = createRequire(join(env("PLAYWRIGHT_DIR"), "package.json"));
const { chromium } = require("playwright-core");

let checks = 0;
function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  checks += 1;
}
const shot = (page, name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

// A fresh context signs `login` in through the provider: the page once back on the gateway.
async function signIn(browser, login, { first } = {}) {
  const context = await browser.newContext();
  await context.route("**/*", (route) => {
    const url = route.request().url();
    return url.startsWith("http://127.0.0.1:") ? route.continue() : route.abort();
  });
  const page = await context.newPage();
  page.on("dialog", (d) => d.accept());
  // A failed request is named on stderr, for the test's message when a check fails.
  page.on("requestfailed", (r) => console.error(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  await page.goto(`${base}/ui/signin`);
  if (first) await shot(page, "sso-signin");
  await page.click("#sso");
  await page.waitForURL((u) => u.href.startsWith(issuer));
  await page.fill("input[name=login]", login);
  await page.fill("input[name=password]", "any password");
  if (first) await shot(page, "sso-idp-login");
  await page.click("button[type=submit]");
  // The provider asks for consent the first time; then sends the browser back.
  await page.waitForURL((u) => u.href.startsWith(base) || u.pathname.startsWith("/interaction"));
  if (!page.url().startsWith(base)) {
    await page.click("button[type=submit]");
    await page.waitForURL((u) => u.href.startsWith(base));
  }
  await page.waitForLoadState("domcontentloaded");
  return { context, page };
}

// A request from inside `page`, with its session cookie: [status, JSON body].
async function call(page, method, path, body) {
  return page.evaluate(async ([method, path, body]) => {
    const r = await fetch(path, {
      method, credentials: "same-origin",
      headers: method === "POST" ? { "content-type": "application/json", "x-switchyard-ui": "1" } : {},
      body: method === "POST" ? JSON.stringify(body || {}) : undefined,
    });
    let json = null;
    try { json = await r.json(); } catch { json = null; }
    return [r.status, json];
  }, [method, path, body]);
}

async function makeKey(page, name, models) {
  await page.fill("#create-key input[name=name]", name);
  await page.fill("#create-key input[name=models]", models || "");
  await page.click("#create-key button[type=submit]");
  await page.waitForSelector("#new-key-value");
  return (await page.textContent("#new-key-value")).trim();
}

async function chat(key) {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 50, messages: [{ role: "user", content: "hi" }] }),
  });
  return r.status;
}

async function member(browser) {
  const { context, page } = await signIn(browser, "ada", { first: true });
  check(new URL(page.url()).pathname === "/ui/keys", `a member lands on their keys (${page.url()})`);
  check((await page.textContent(".who")).includes("ada@example.com (member)"), "the header names the member");
  const secret = await makeKey(page, "ada-laptop", "claude-sonnet-*");
  check(secret.startsWith("sk-sy-"), "a member's new key is shown once");
  const served = await chat(secret);
  check(served === 200, `a member's key works through the gateway (${served})`);
  // The request's record is written after its answer: ask until the user's budget shows it.
  let you = null;
  for (let i = 0; i < 50 && !(you && you.budget && you.budget.used_usd > 0); i++) {
    if (i) await new Promise((r) => setTimeout(r, 100));
    you = (await call(page, "GET", "/ui/api/keys"))[1].you;
  }
  const b = you.budget;
  check(b.usd === 5 && b.window === "day" && b.used_usd > 0, `the member's own budget and its use (${JSON.stringify(you)})`);
  check(Math.abs(b.left_usd - (5 - b.used_usd)) < 1e-9 && b.resets_ms > Date.now(), "what is left of it and when it resets");
  await page.reload();
  await page.waitForFunction(() => document.getElementById("own-budget").textContent.includes("used"));
  const shown = await page.textContent("#own-budget");
  check(shown.includes(`$${b.used_usd.toFixed(6)} used`) && shown.includes("of $5/day"), `the page shows it (${shown})`);
  console.log(`ada used ${b.used_usd}`);
  const [, listed] = await call(page, "GET", "/ui/api/keys");
  const mine = listed.keys.find((k) => k.name === "ada-laptop");
  check(mine && mine.team === "eng" && mine.models.join() === "claude-sonnet-*", "the key is in the member's team with the models asked");
  check(listed.keys.every((k) => k.owner === mine.owner), "a member lists only their own keys");
  check(!JSON.stringify(listed).includes(secret), "the list never holds the secret");
  await page.fill("#create-key input[name=name]", "ada-wide");
  await page.fill("#create-key input[name=models]", "gpt-*");
  await page.click("#create-key button[type=submit]");
  await page.waitForFunction(() => document.getElementById("status").textContent.includes("outside"));
  check(true, "a key beyond the member's models is refused on the page");
  const [status] = await call(page, "POST", "/ui/api/keys", { name: "sneaky", admin: true });
  check(status === 400, `a member cannot make an admin key (${status})`);
  const [teamStatus] = await call(page, "POST", "/ui/api/keys", { name: "other-team", team: "ops" });
  check(teamStatus === 400, `a member cannot make a key in another team (${teamStatus})`);
  await page.reload();
  await page.waitForSelector("#keys tbody tr[data-key]");
  await shot(page, "sso-member-keys");
  return { context, page, key: mine };
}

async function otherMember(browser, ada) {
  const { context, page } = await signIn(browser, "bob");
  const secret = await makeKey(page, "bob-key", "");
  const [, listed] = await call(page, "GET", "/ui/api/keys");
  const bobs = listed.keys.find((k) => k.name === "bob-key");
  check(bobs && bobs.models.join() === "claude-*", "a key made without models gets the member's globs");
  check(!listed.keys.some((k) => k.id === ada.key.id), "one member does not see another's key");
  for (const action of ["revoke", "rotate"]) {
    const [status] = await call(ada.page, "POST", `/ui/api/keys/${bobs.id}/${action}`);
    check(status === 404, `a member cannot ${action} another's key by a direct POST (${status})`);
  }
  const [upd] = await call(ada.page, "POST", `/ui/api/keys/${bobs.id}/update`, { budget: "0.01" });
  check(upd === 404, `a member cannot update another's key (${upd})`);
  const still = await chat(secret);
  check(still === 200, `the other member's key still works (${still})`);
  for (const path of ["/ui/api/audit", "/ui/api/users", "/ui/api/spend", "/ui/api/providers", "/ui/api/live.json"]) {
    const [status] = await call(ada.page, "GET", path);
    check(status === 403, `a member cannot read ${path} (${status})`);
  }
  const [team] = await call(ada.page, "POST", "/ui/api/teams", { name: "mine" });
  check(team === 403, `a member cannot make a team (${team})`);
  // Their own key: rotated (a new secret, the old refused), then revoked.
  const [rot, rotated] = await call(ada.page, "POST", `/ui/api/keys/${ada.key.id}/rotate`);
  check(rot === 200 && rotated.key.startsWith("sk-sy-"), "a member rotates their own key");
  const [rev] = await call(ada.page, "POST", `/ui/api/keys/${ada.key.id}/revoke`);
  check(rev === 200, "a member revokes their own key");
  await context.close();
  return bobs;
}

async function viewer(browser, bobs) {
  const { context, page } = await signIn(browser, "vic");
  check((await page.textContent(".who")).includes("(viewer)"), "the header names the viewer");
  check(await page.$("#create-key") === null, "a viewer gets no create form");
  const [made] = await call(page, "POST", "/ui/api/keys", { name: "v" });
  check(made === 403, `a viewer cannot make a key (${made})`);
  const [rev] = await call(page, "POST", `/ui/api/keys/${bobs.id}/revoke`);
  check(rev === 403, `a viewer cannot revoke a key (${rev})`);
  await shot(page, "sso-viewer-keys");
  await context.close();
}

async function admin(browser, bobs) {
  const { context, page } = await signIn(browser, "root");
  check(new URL(page.url()).pathname === "/ui/spend", "an admin lands on the spend page");
  const [, listed] = await call(page, "GET", "/ui/api/keys");
  check(listed.keys.some((k) => k.id === bobs.id && k.owner), "an admin sees every member's keys with their owner");
  await page.goto(`${base}/ui/users`);
  await page.waitForSelector("#users tbody tr[data-user]");
  const [, users] = await call(page, "GET", "/ui/api/users");
  const by = (email) => users.users.find((u) => u.email === email);
  check(by("ada@example.com").role === "member" && by("ada@example.com").team === "eng", "groups map to role and team");
  check(by("ada@example.com").budget === "$5/day", `groups map to a budget (${by("ada@example.com").budget})`);
  check(by("vic@example.com").role === "viewer" && by("root@example.com").role === "admin", "the highest role of a person's groups");
  check(by("root@example.com").budget === "$100/month" && by("root@example.com").team === "eng",
    "the admin group's budget first, then the team of the next group that sets one");
  await shot(page, "sso-admin-users");
  const [rev] = await call(page, "POST", `/ui/api/keys/${bobs.id}/revoke`);
  check(rev === 200, "an admin revokes a member's key");
  await context.close();
}

async function unmapped(browser) {
  const { context, page } = await signIn(browser, "eve");
  check((await page.textContent("#problem")).includes("none of your groups"), "a person in no mapped group is told why");
  const [status] = await call(page, "GET", "/ui/api/keys");
  check(status === 401, `and gets no session (${status})`);
  await shot(page, "sso-unmapped");
  await context.close();
  // A callback this browser never started: no login cookie, an unknown state.
  const r = await fetch(`${base}/ui/oidc/callback?code=abc&state=forged`, { redirect: "manual" });
  const text = await r.text();
  check(r.status === 401 && text.includes("not started in this browser"), `a callback not started here is refused (${r.status})`);
}

mkdirSync(shots, { recursive: true });
// No background traffic of Chromium's own: only the gateway and the provider are reached.
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const ada = await member(browser);
  const bobs = await otherMember(browser, ada);
  await viewer(browser, bobs);
  await admin(browser, bobs);
  await unmapped(browser);
} finally {
  await browser.close();
}
console.log(`ok ${checks} checks`);
