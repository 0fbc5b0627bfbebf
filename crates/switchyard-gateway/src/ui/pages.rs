//! The dashboard's HTML: one shell per page, whose empty tables `app.js` fills from the JSON
//! endpoints, and the sign-in form. No inline script or style: the content security policy
//! allows only the gateway's own files.
//! Spec: R14.11.

use super::session::Session;

/// The pages an administrator moves between: path segment and title.
pub(crate) const PAGES: [(&str, &str); 6] = [
    ("spend", "Spend"),
    ("keys", "Keys and teams"),
    ("providers", "Providers"),
    ("live", "Live"),
    ("audit", "Audit log"),
    ("users", "Users"),
];

/// The one page a member or viewer sees: their own keys.
const OWN_PAGES: [(&str, &str); 1] = [("keys", "Your keys")];

/// `text` escaped for HTML text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The sign-in page, with `problem` when the last try failed, and a single sign-on button when
/// `sso`.
pub(crate) fn sign_in(problem: Option<&str>, sso: bool) -> String {
    let sso = if sso {
        "<p><a class=\"button\" id=\"sso\" href=\"/ui/oidc/start\">Sign in with single sign-on</a></p><p class=\"help\">Or, as an administrator, with a key:</p>"
    } else {
        ""
    };
    let problem = problem.map_or(String::new(), |p| {
        format!(
            "<p class=\"problem\" role=\"alert\" id=\"problem\">{}</p>",
            escape(p)
        )
    });
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · Switchyard</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/ui/assets/style.css"></head>
<body><main class="signin"><h1>Switchyard gateway</h1>
{sso}<form method="post" action="/ui/signin">
<label for="key">Admin client key</label>
<input id="key" name="key" type="password" autocomplete="off" required autofocus
 aria-describedby="key-help">
<p id="key-help" class="help">A key made with <code>switchyard keys create --admin</code>. It is checked once and never kept; the session lasts 8 hours.</p>
{problem}
<button type="submit">Sign in</button>
</form></main></body></html>"#
    )
}

/// The page `page` as `session` may see it: an administrator any of [`PAGES`], anyone else
/// only their own keys, without the forms when they may change nothing.
pub(crate) fn page(page: &str, session: &Session) -> Option<String> {
    let pages: &[(&str, &str)] = if session.admin() { &PAGES } else { &OWN_PAGES };
    let (_, title) = pages.iter().find(|(p, _)| *p == page)?;
    let nav: String = pages
        .iter()
        .map(|(p, t)| {
            let current = if *p == page {
                " aria-current=\"page\""
            } else {
                ""
            };
            format!("<li><a href=\"/ui/{p}\"{current}>{t}</a></li>")
        })
        .collect();
    let keys = match session.role_name() {
        "member" => format!("{YOUR_BUDGET}{OWN_KEYS}{CREATE_OWN}{EDIT_KEY}</section>"),
        "viewer" => format!(
            "{YOUR_BUDGET}{OWN_KEYS}<p class=\"help\">As a viewer you see your keys and change nothing.</p></section>"
        ),
        _ => format!("{KEYS}{EDIT_KEY}</section>{TEAMS}"),
    };
    let body = match page {
        "spend" => SPEND,
        "keys" => keys.as_str(),
        "providers" => PROVIDERS,
        "audit" => AUDIT,
        "users" => USERS,
        _ => LIVE,
    };
    let chart_css = if page == "spend" {
        "<link rel=\"stylesheet\" href=\"/ui/assets/uPlot.min.css\"><script src=\"/ui/assets/uPlot.min.js\" defer></script>"
    } else {
        ""
    };
    Some(format!(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · Switchyard</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/ui/assets/style.css">{chart_css}
<script src="/ui/assets/app.js" defer></script></head>
<body data-page="{page}" data-role="{role}"><a class="skip" href="#main">Skip to the content</a>
<header><span class="brand">Switchyard</span><nav aria-label="Pages"><ul>{nav}</ul></nav>
<form method="post" action="/ui/signout" class="signout"><span class="who">signed in as {who}</span>
<button type="submit">Sign out</button></form></header>
<main id="main"><h1>{title}</h1><p class="status" role="status" aria-live="polite" id="status"></p>
{body}</main></body></html>"##,
        who = escape(&session.shown()),
        role = session.role_name(),
    ))
}

const SPEND: &str = r#"<form id="spend-form" class="controls" aria-label="What to show">
<label>Group by <select name="by" id="by"><option value="key">key</option><option value="team">team</option><option value="model">model</option></select></label>
<label>Per <select name="bucket" id="bucket"><option value="day">day</option><option value="hour">hour</option></select></label>
<label>From <input type="date" name="from" id="from"></label>
<label>To <input type="date" name="to" id="to"></label>
<button type="submit">Show</button>
<a id="csv" href="/ui/api/spend.csv" download>Download CSV</a>
</form>
<figure><div id="chart" role="img" aria-label="Cost per bucket by group"></div>
<figcaption>Cost in USD of the requests in each bucket (UTC), from the request log; the table below has the same figures.</figcaption></figure>
<table id="totals"><caption>Totals over the range</caption><thead><tr><th scope="col">Group</th><th scope="col">Requests</th><th scope="col">Tokens in</th><th scope="col">Tokens out</th><th scope="col">Cost (USD)</th><th scope="col">Unpriced</th><th scope="col">Input from cache</th></tr></thead><tbody></tbody></table>"#;

const KEYS: &str = r#"<section aria-labelledby="keys-h"><h2 id="keys-h">Keys</h2>
<div class="scroll"><table id="keys"><thead><tr><th scope="col">Key</th><th scope="col">Name</th><th scope="col">Owner</th><th scope="col">Team</th><th scope="col">State</th><th scope="col">Budget used / left</th><th scope="col">Requests / min</th><th scope="col">Tokens / min</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody></tbody></table></div>
<div id="new-key" class="secret" role="alert" hidden></div>
<form id="create-key" class="controls" aria-label="Create a key">
<label>Name <input name="name" required></label>
<label>Team <input name="team"></label>
<label>Models (globs) <input name="models" placeholder="claude-*,gpt-5"></label>
<label>Budget <input name="budget" placeholder="5/day"></label>
<label>Requests / min <input name="rpm" type="number" min="1"></label>
<label>Tokens / min <input name="tpm" type="number" min="1"></label>
<label>Expires <input name="expires" type="date"></label>
<label><input name="admin" type="checkbox"> Admin</label>
<button type="submit">Create key</button></form>"#;

/// A member's or viewer's own budget, over every key they own.
const YOUR_BUDGET: &str = r#"<section aria-labelledby="you-h"><h2 id="you-h">Your budget</h2>
<p id="own-budget">…</p>
<p class="help">It counts every key you own, beside each key's own budget and your team's.</p></section>"#;

/// A member's or viewer's own keys: no owner or team column to choose.
const OWN_KEYS: &str = r#"<section aria-labelledby="keys-h"><h2 id="keys-h">Keys</h2>
<div class="scroll"><table id="keys"><thead><tr><th scope="col">Key</th><th scope="col">Name</th><th scope="col">Team</th><th scope="col">State</th><th scope="col">Budget used / left</th><th scope="col">Requests / min</th><th scope="col">Tokens / min</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody></tbody></table></div>
<div id="new-key" class="secret" role="alert" hidden></div>"#;

/// A member's create form: their keys are made in their own team, owned by them.
const CREATE_OWN: &str = r#"<form id="create-key" class="controls" aria-label="Create a key">
<label>Name <input name="name" required></label>
<label>Models (globs) <input name="models" placeholder="claude-*,gpt-5"></label>
<label>Budget <input name="budget" placeholder="5/day"></label>
<label>Requests / min <input name="rpm" type="number" min="1"></label>
<label>Tokens / min <input name="tpm" type="number" min="1"></label>
<label>Expires <input name="expires" type="date"></label>
<button type="submit">Create key</button></form>"#;

const EDIT_KEY: &str = r#"<form id="edit-key" class="controls" aria-labelledby="edit-key-title" hidden>
<h3 id="edit-key-title">Edit a key</h3><input type="hidden" name="id">
<label>Name <input name="name"></label>
<label>Team <input name="team" placeholder="none"></label>
<label>Models (globs) <input name="models" placeholder="*"></label>
<label>Budget <input name="budget" placeholder="none"></label>
<label>Requests / min <input name="rpm" placeholder="none"></label>
<label>Tokens / min <input name="tpm" placeholder="none"></label>
<label>In flight at once <input name="max_parallel" placeholder="none"></label>
<label>Expires <input name="expires" placeholder="none"></label>
<button type="submit">Save changes</button> <button type="button" id="edit-cancel">Cancel</button>
<p class="help">A field emptied removes that limit. Every gateway applies a change within a second.</p></form>"#;

const TEAMS: &str = r#"<section aria-labelledby="teams-h"><h2 id="teams-h">Teams</h2>
<table id="teams"><thead><tr><th scope="col">Team</th><th scope="col">Keys</th><th scope="col">Budget used / left</th><th scope="col">Actions</th></tr></thead><tbody></tbody></table>
<form id="create-team" class="controls" aria-label="Create a team">
<label>Name <input name="name" required></label><label>Budget <input name="budget" placeholder="50/month"></label>
<button type="submit">Create team</button></form></section>"#;

const USERS: &str = r#"<p>Everyone who signed in through single sign-on, newest sign-in first. Their role, team, models and budget come from their groups at each sign-in.</p>
<div class="scroll"><table id="users"><thead><tr><th scope="col">User</th><th scope="col">Email</th><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Team</th><th scope="col">Models</th><th scope="col">Budget</th><th scope="col">Last sign-in</th><th scope="col">Disabled</th></tr></thead><tbody></tbody></table></div>"#;

const AUDIT: &str = r#"<p>Every change to keys and teams and every sign-in, newest first (the last 500; <code>switchyard audit</code> prints them all).</p>
<div class="scroll"><table id="audit"><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">From</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">What changed</th></tr></thead><tbody></tbody></table></div>"#;

const PROVIDERS: &str = r#"<div id="routes"></div>
<section aria-labelledby="other-h"><h2 id="other-h">Other cooldowns in the store</h2>
<table id="other"><thead><tr><th scope="col">Entry</th><th scope="col">Reason</th><th scope="col">Resets at</th></tr></thead><tbody></tbody></table></section>
<p id="spend-cap"></p>"#;

const LIVE: &str = r#"<section aria-labelledby="flights-h"><h2 id="flights-h">In flight</h2>
<table id="flights"><thead><tr><th scope="col">Request</th><th scope="col">Key</th><th scope="col">Route</th><th scope="col">Model</th><th scope="col">Elapsed</th><th scope="col">Tokens so far</th></tr></thead><tbody></tbody></table></section>
<section aria-labelledby="errors-h"><h2 id="errors-h">Last errors</h2>
<table id="errors"><thead><tr><th scope="col">When</th><th scope="col">Key</th><th scope="col">Route</th><th scope="col">Kind</th><th scope="col">What happened</th></tr></thead><tbody></tbody></table></section>"#;
