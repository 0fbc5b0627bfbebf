// Switchyard dashboard (SPEC R14.11, R14.11b). Every figure comes from the gateway's JSON, as the store
// computed it; this script only places and formats them (no sums here).
"use strict";

const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"];
const DASHES = [[], [6, 3], [2, 2], [8, 3, 2, 3]];

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") e.textContent = v; else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) e.append(c);
  return e;
}
function usd(v) { return v === null || v === undefined ? "-" : "$" + Number(v).toFixed(6); }
function utc(ms) { return ms === null || ms === undefined ? "-" : new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC"; }
function status(text, problem) {
  const s = document.getElementById("status");
  s.textContent = text || "";
  s.className = problem ? "status problem" : "status";
}
async function getJson(url) {
  const r = await fetch(url, { credentials: "same-origin" });
  if (r.status === 401) { location.href = "/ui/signin"; throw new Error("signed out"); }
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
async function post(url, body) {
  const r = await fetch(url, {
    method: "POST", credentials: "same-origin",
    headers: { "content-type": "application/json", "x-switchyard-ui": "1" },
    body: JSON.stringify(body || {}),
  });
  if (r.status === 401) { location.href = "/ui/signin"; throw new Error("signed out"); }
  const answer = await r.json();
  if (!r.ok) throw new Error(answer.error || r.statusText);
  return answer;
}
function row(cells) {
  // cells: [label, value, className?]
  return el("tr", {}, ...cells.map(([label, v, cls]) => {
    const td = el("td", { "data-label": label, class: cls });
    if (v instanceof Node) td.append(v); else td.textContent = v;
    return td;
  }));
}
function fill(tableId, rows, empty) {
  const tbody = document.querySelector(`#${tableId} tbody`);
  document.getElementById(tableId).classList.add("stack");
  tbody.replaceChildren(...rows);
  if (!rows.length && empty) {
    const cols = document.querySelectorAll(`#${tableId} thead th`).length;
    tbody.append(el("tr", {}, el("td", { colspan: cols, text: empty })));
  }
}

// ---- spend ----
let chart = null;
function spendQuery() {
  const f = new FormData(document.getElementById("spend-form"));
  const q = new URLSearchParams();
  for (const k of ["by", "bucket", "from", "to"]) if (f.get(k)) q.set(k, f.get(k));
  return q.toString();
}
async function loadSpend() {
  const q = spendQuery();
  document.getElementById("csv").href = "/ui/api/spend.csv?" + q;
  status("Loading…");
  let data;
  try { data = await getJson("/ui/api/spend?" + q); } catch (e) { status(e.message, true); return; }
  const day = (ms) => new Date(ms).toISOString().slice(0, 10);
  document.getElementById("from").value = day(data.from_ms);
  document.getElementById("to").value = day(data.to_ms - 86400000);
  drawChart(data);
  fill("totals", data.totals.map((t) => {
    const r = row([["Group", t.label], ["Requests", String(t.requests), "num"],
      ["Tokens in", String(t.input_tokens + t.cache_read_tokens + t.cache_write_tokens), "num"],
      ["Tokens out", String(t.output_tokens), "num"], ["Cost (USD)", usd(t.cost_usd), "num"],
      ["Unpriced", String(t.unpriced_requests), "num"],
      ["Input from cache", t.cache_read_share === null ? "-" : `${Math.round(t.cache_read_share * 100)}%`, "num"]]);
    r.dataset.group = t.group === null ? "" : t.group;
    r.dataset.cost = String(t.cost_usd);
    return r;
  }), "No requests in this range.");
  status(`${data.totals.length} groups, ${data.buckets.length} ${data.bucket}s (UTC).`);
}
function drawChart(data) {
  const box = document.getElementById("chart");
  if (chart) { chart.destroy(); chart = null; }
  box.replaceChildren();
  box.dataset.series = JSON.stringify(data.series.map((s) => s.label));
  if (typeof uPlot === "undefined") { box.textContent = "The chart library did not load."; return; }
  const xs = data.buckets.map((ms) => ms / 1000);
  // The x axis in UTC on bucket boundaries (a plain number scale: uPlot's time scale would
  // align ticks to the browser's time zone).
  const hourly = data.bucket === "hour";
  const when = (v) => { const t = new Date(v * 1000).toISOString(); return hourly ? t.slice(5, 10) + " " + t.slice(11, 13) + ":00" : t.slice(0, 10); };
  const series = [{ label: hourly ? "Hour (UTC)" : "Day (UTC)", value: (u, v) => (v === null || v === undefined ? "-" : when(v)) }].concat(
    data.series.map((s, i) => ({
      label: s.label, stroke: PALETTE[i % PALETTE.length], width: 2, dash: DASHES[Math.floor(i / PALETTE.length) % DASHES.length],
      points: { show: true, size: 8, fill: PALETTE[i % PALETTE.length] },
      value: (u, v) => usd(v),
    })));
  const opts = {
    width: Math.max(280, box.clientWidth), height: 320, series,
    // Room for the last x label; costs from 0, so heights compare.
    padding: [12, 48, 0, 0],
    scales: { x: { time: false }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [
      { incrs: hourly ? [3600, 7200, 10800, 21600, 43200, 86400] : [86400, 172800, 604800, 2592000], space: hourly ? 80 : 70,
        values: (u, vals) => vals.map(when) },
      { label: "USD", size: 70, values: (u, vals) => vals.map((v) => "$" + v.toFixed(4)) },
    ],
    legend: { live: true },
  };
  chart = new uPlot(opts, [xs, ...data.series.map((s) => s.costs)], box);
}

// ---- keys ----
function budgetCell(b) {
  if (!b) return "none";
  return `${usd(b.used_usd)} used, ${usd(b.left_usd)} left of $${b.usd}/${b.window}` + (b.resets_ms ? ` (resets ${utc(b.resets_ms)})` : "");
}
function showSecret(text, answer) {
  const box = document.getElementById("new-key");
  box.hidden = false;
  box.replaceChildren(el("p", { text }), el("code", { id: "new-key-value", text: answer.key }),
    el("p", { text: "It is shown only now: copy it somewhere safe." }));
}
async function loadKeys() {
  let data;
  try { data = await getJson("/ui/api/keys"); } catch (e) { status(e.message, true); return; }
  const role = document.body.dataset.role;
  const own = document.getElementById("own-budget");
  if (own && data.you) {
    own.textContent = data.you.budget ? budgetCell(data.you.budget)
      : "You have no budget of your own: only your keys' and your team's budgets apply.";
  }
  fill("keys", data.keys.map((k) => {
    const actions = el("span", {});
    // A viewer changes nothing, so is offered nothing to change.
    if (k.state !== "revoked" && role !== "viewer") {
      const rev = el("button", { type: "button", class: "danger", "aria-label": `Revoke ${k.name} (${k.prefix}…)`, text: "Revoke" });
      rev.addEventListener("click", () => act(`Revoke the key ${k.name} (${k.prefix}…)? It stops working within a second.`,
        `/ui/api/keys/${encodeURIComponent(k.id)}/revoke`, null));
      const rot = el("button", { type: "button", "aria-label": `Rotate ${k.name} (${k.prefix}…)`, text: "Rotate" });
      rot.addEventListener("click", () => act(`Rotate the key ${k.name} (${k.prefix}…)? Its old secret stops working.`,
        `/ui/api/keys/${encodeURIComponent(k.id)}/rotate`, `New secret for ${k.name}:`));
      const edit = el("button", { type: "button", "aria-label": `Edit ${k.name} (${k.prefix}…)`, text: "Edit" });
      edit.addEventListener("click", () => editKey(k));
      actions.append(rev, " ", rot, " ", edit);
    }
    const owner = role === "admin" ? [["Owner", k.owner || "-"]] : [];
    const r = row([["Key", `${k.prefix}…` + (k.admin ? " (admin)" : "")], ["Name", k.name], ...owner, ["Team", k.team || "-"],
      ["State", k.state, `state-${k.state}`], ["Budget", budgetCell(k.budget)],
      ["Requests / min", k.rpm ? `${k.rpm_used} of ${k.rpm}` : `${k.rpm_used}`, "num"],
      ["Tokens / min", k.tpm ? `${k.tpm_used} of ${k.tpm}` : `${k.tpm_used}`, "num"],
      ["Expires", k.expires_ms ? utc(k.expires_ms) : "never"], ["Last used", utc(k.last_used_ms)], ["Actions", actions]]);
    r.dataset.key = k.id;
    r.dataset.state = k.state;
    return r;
  }), "No keys yet.");
  if (!document.getElementById("teams")) return;
  fill("teams", data.teams.map((t) => {
    const edit = el("button", { type: "button", "aria-label": `Change the budget of ${t.name}`, text: "Change budget" });
    edit.addEventListener("click", () => editTeam(t));
    return row([["Team", t.name], ["Keys", String(t.keys), "num"], ["Budget", budgetCell(t.budget)], ["Actions", edit]]);
  }), "No teams yet.");
}
function budgetText(b) { return b ? (b.window === "total" ? `${b.usd}` : `${b.usd}/${b.window}`) : ""; }
// The edit form starts from the key's values and sends only the fields changed; emptied is none.
function editKey(k) {
  const form = document.getElementById("edit-key");
  const values = {
    name: k.name, team: k.team || "", models: k.models.length ? k.models.join(",") : "",
    budget: budgetText(k.budget), rpm: k.rpm ? String(k.rpm) : "", tpm: k.tpm ? String(k.tpm) : "",
    max_parallel: k.max_parallel ? String(k.max_parallel) : "",
    expires: k.expires_ms ? new Date(k.expires_ms).toISOString().slice(0, 19) + "Z" : "",
  };
  for (const [name, v] of Object.entries(values)) form.elements[name].value = v;
  form.elements.id.value = k.id;
  form.dataset.original = JSON.stringify(values);
  document.getElementById("edit-key-title").textContent = `Edit the key ${k.name} (${k.prefix}…)`;
  form.hidden = false;
  form.elements.name.focus();
}
function editedFields(form) {
  const original = JSON.parse(form.dataset.original || "{}");
  const out = {};
  for (const [name, was] of Object.entries(original)) {
    const now = form.elements[name].value.trim();
    if (now === was) continue;
    out[name] = now === "" ? (name === "models" ? "*" : "none") : now;
  }
  return out;
}
async function editTeam(t) {
  const budget = prompt(`New budget for the team ${t.name}: USD, USD/day, USD/month, or none.`, budgetText(t.budget));
  if (budget === null) return;
  try {
    const answer = await post(`/ui/api/teams/${encodeURIComponent(t.name)}/update`, { budget: budget.trim() || "none" });
    status(`Team ${answer.name}: ${answer.changed}.`);
  } catch (e) { status(e.message, true); }
  loadKeys();
}
async function act(question, url, secretText) {
  if (!confirm(question)) return;
  try {
    const answer = await post(url);
    if (secretText) showSecret(secretText, answer);
    status(secretText ? "Rotated." : "Revoked.");
  } catch (e) { status(e.message, true); }
  loadKeys();
}
function formFields(form) {
  const f = new FormData(form);
  const out = {};
  for (const [k, v] of f.entries()) {
    if (v === "") continue;
    out[k] = ["rpm", "tpm", "max_parallel"].includes(k) ? Number(v) : v;
  }
  if (form.elements.admin) out.admin = form.elements.admin.checked;
  return out;
}
function keysPage() {
  const create = document.getElementById("create-key");
  if (create) create.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const answer = await post("/ui/api/keys", formFields(ev.target));
      showSecret(`New key ${answer.prefix}…:`, answer);
      ev.target.reset();
      status("Key created.");
    } catch (e) { status(e.message, true); }
    loadKeys();
  });
  const team = document.getElementById("create-team");
  if (team) team.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try { await post("/ui/api/teams", formFields(ev.target)); ev.target.reset(); status("Team created."); }
    catch (e) { status(e.message, true); }
    loadKeys();
  });
  const edit = document.getElementById("edit-key");
  if (!edit) { loadKeys(); setInterval(loadKeys, 5000); return; }
  edit.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const changed = editedFields(edit);
    if (!Object.keys(changed).length) { status("Nothing changed."); return; }
    try {
      const answer = await post(`/ui/api/keys/${encodeURIComponent(edit.elements.id.value)}/update`, changed);
      status(`Key updated: ${answer.changed}.`);
      edit.hidden = true;
    } catch (e) { status(e.message, true); }
    loadKeys();
  });
  document.getElementById("edit-cancel").addEventListener("click", () => { edit.hidden = true; });
  loadKeys();
  setInterval(loadKeys, 5000);
}

// ---- audit ----
async function loadAudit() {
  let data;
  try { data = await getJson("/ui/api/audit"); } catch (e) { status(e.message, true); return; }
  fill("audit", data.entries.map((e) => row([["When", utc(e.ts_ms)], ["Who", e.actor], ["From", e.origin],
    ["Action", e.action], ["Target", e.target], ["What changed", e.detail]])), "Nothing audited yet.");
}

// ---- users ----
async function loadUsers() {
  let data;
  try { data = await getJson("/ui/api/users"); } catch (e) { status(e.message, true); return; }
  fill("users", data.users.map((u) => {
    const r = row([["User", u.id], ["Email", u.email || "-"], ["Name", u.name || "-"], ["Role", u.role],
      ["Team", u.team || "-"], ["Models", u.models.length ? u.models.join(", ") : "all"], ["Budget", u.budget || "none"],
      ["Last sign-in", u.signed_in], ["Disabled", u.disabled || "-"]]);
    r.dataset.user = u.id;
    return r;
  }), "Nobody has signed in through single sign-on yet.");
}

// ---- providers ----
async function loadProviders() {
  let data;
  try { data = await getJson("/ui/api/providers"); } catch (e) { status(e.message, true); return; }
  const box = document.getElementById("routes");
  box.replaceChildren(...data.routes.map((r) => {
    const id = "route-" + r.route.replace(/[^A-Za-z0-9_-]/g, "_");
    const t = el("table", { id, class: "stack", "data-route": r.route },
      el("caption", { text: `Route ${r.route}` }),
      el("thead", {}, el("tr", {}, ...["#", "Entry", "State", "Reason", "Resets at", "Rate window (60 s)", "Provider says"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, ...r.entries.map((e) => {
        const c = e.cooldown;
        const rate = (e.requests_per_minute ? `${e.requests_in_window} of ${e.requests_per_minute} requests` : `${e.requests_in_window} requests`) +
          (e.input_tokens_per_minute ? `, ${e.input_tokens_in_window} of ${e.input_tokens_per_minute} input tokens` : "");
        const l = e.learnt;
        const learnt = l ? [l.requests_remaining !== null ? `${l.requests_remaining} requests left` : null,
          l.tokens_remaining !== null ? `${l.tokens_remaining} tokens left` : null,
          l.requests_reset_ms ? `resets ${utc(l.requests_reset_ms)}` : null].filter(Boolean).join(", ") || "-" : "-";
        const tr = row([["#", String(e.position)], ["Entry", `${e.entry} (${e.base_url})`],
          ["State", e.state === "cooling_down" ? "cooling down" : "ready", `state-${e.state}`],
          ["Reason", c ? c.reason : "-"], ["Resets at", c ? `${utc(c.until_ms)} (in ${c.seconds_left} s)` : "-", "resets"],
          ["Rate window", rate], ["Provider says", learnt]]);
        tr.dataset.entry = e.entry;
        tr.dataset.state = e.state;
        if (c) tr.dataset.until = String(c.until_ms);
        return tr;
      })));
    return el("section", {}, t);
  }));
  if (!data.routes.length) box.append(el("p", { text: "No [serve.routes] in the configuration." }));
  fill("other", data.other_cooldowns.map((o) => row([["Entry", `${o.entry} (${o.base_url})`], ["Reason", o.cooldown.reason],
    ["Resets at", `${utc(o.cooldown.until_ms)} (in ${o.cooldown.seconds_left} s)`]])), "None.");
  const s = data.spend;
  document.getElementById("spend-cap").textContent = `Spent today (UTC): ${usd(s.spent_today_usd)}; daily cap: ${s.max_cost_usd_per_day === null ? "none" : "$" + s.max_cost_usd_per_day}.`;
  const problems = data.problems.slice();
  const conf = data.configuration;
  if (conf && conf.refused) {
    problems.unshift(`The configuration file was refused at ${utc(conf.refused.at_ms)}, so the one in effect stays: ${conf.refused.reason}`);
  }
  const loaded = conf && conf.loaded_ms ? ` Configuration reloaded ${utc(conf.loaded_ms)}.` : "";
  status(problems.length ? problems.join(" ") : `As of ${utc(data.now_ms)}.${loaded}`, problems.length > 0);
}

// ---- live ----
function renderLive(data) {
  fill("flights", data.flights.map((f) => {
    const r = row([["Request", f.id], ["Key", f.key_prefix ? f.key_prefix + "…" : "-"], ["Route", f.route],
      ["Model", f.model || "choosing…"], ["Elapsed", (f.elapsed_ms / 1000).toFixed(1) + " s", "num"],
      ["Tokens so far", String(f.output_tokens), "num"]]);
    r.dataset.id = f.id;
    return r;
  }), "Nothing in flight.");
  fill("errors", data.errors.map((e) => {
    const r = row([["When", utc(e.at_ms)], ["Key", e.key_prefix ? e.key_prefix + "…" : "-"], ["Route", e.route], ["Kind", e.kind], ["What happened", e.sentence]]);
    r.dataset.id = e.id;
    return r;
  }), "No errors since the gateway started.");
  status(`Updated ${utc(data.now_ms)}.`);
}
function livePage() {
  const source = new EventSource("/ui/api/live");
  source.addEventListener("snapshot", (ev) => renderLive(JSON.parse(ev.data)));
  source.addEventListener("error", () => status("The live feed stopped; it reconnects by itself.", true));
}

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  if (page === "spend") {
    document.getElementById("spend-form").addEventListener("submit", (ev) => { ev.preventDefault(); loadSpend(); });
    let t = null;
    window.addEventListener("resize", () => { clearTimeout(t); t = setTimeout(loadSpend, 250); });
    loadSpend();
  } else if (page === "keys") keysPage();
  else if (page === "providers") { loadProviders(); setInterval(loadProviders, 2000); }
  else if (page === "live") livePage();
  else if (page === "audit") { loadAudit(); setInterval(loadAudit, 5000); }
  else if (page === "users") { loadUsers(); setInterval(loadUsers, 5000); }
});
