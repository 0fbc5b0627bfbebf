//! The dashboard's HTML: one shell per page, whose empty tables `app.js` fills from the JSON
//! endpoints, and the sign-in form. No inline script or style: the content security policy
//! allows only the gateway's own files.
//! Spec: R14.11.

/// The pages a signed-in user moves between: path segment and title.
pub(crate) const PAGES: [(&str, &str); 5] = [
    ("spend", "Spend"),
    ("keys", "Keys and teams"),
    ("providers", "Providers"),
    ("live", "Live"),
    ("audit", "Audit log"),
];

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

/// The sign-in page, with `problem` when the last try failed.
pub(crate) fn sign_in(problem: Option<&str>) -> String {
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
<form method="post" action="/ui/signin">
<label for="key">Admin client key</label>
<input id="key" name="key" type="password" autocomplete="off" required autofocus
 aria-describedby="key-help">
<p id="key-help" class="help">A key made with <code>switchyard keys create --admin</code>. It is checked once and never kept; the session lasts 8 hours.</p>
{problem}
<button type="submit">Sign in</button>
</form></main></body></html>"#
    )
}

/// The page `page`, one of [`PAGES`], for the admin key shown as `prefix`.
pub(crate) fn page(page: &str, prefix: &str) -> Option<String> {
    let (_, title) = PAGES.iter().find(|(p, _)| *p == page)?;
    let nav: String = PAGES
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
    let body = match page {
        "spend" => SPEND,
        "keys" => KEYS,
        "providers" => PROVIDERS,
        "audit" => AUDIT,
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
<body data-page="{page}"><a class="skip" href="#main">Skip to the content</a>
<header><span class="brand">Switchyard</span><nav aria-label="Pages"><ul>{nav}</ul></nav>
<form method="post" action="/ui/signout" class="signout"><span class="who">signed in as {who}…</span>
<button type="submit">Sign out</button></form></header>
<main id="main"><h1>{title}</h1><p class="status" role="status" aria-live="polite" id="status"></p>
{body}</main></body></html>"##,
        who = escape(prefix),
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
<table id="totals"><caption>Totals over the range</caption><thead><tr><th scope="col">Group</th><th scope="col">Requests</th><th scope="col">Tokens in</th><th scope="col">Tokens out</th><th scope="col">Cost (USD)</th><th scope="col">Unpriced</th><th scope="col">Cache read</th></tr></thead><tbody></tbody></table>"#;

const KEYS: &str = r#"<section aria-labelledby="keys-h"><h2 id="keys-h">Keys</h2>
<div class="scroll"><table id="keys"><thead><tr><th scope="col">Key</th><th scope="col">Name</th><th scope="col">Team</th><th scope="col">State</th><th scope="col">Budget used / left</th><th scope="col">Requests / min</th><th scope="col">Tokens / min</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody></tbody></table></div>
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
<button type="submit">Create key</button></form>
<form id="edit-key" class="controls" aria-labelledby="edit-key-title" hidden>
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
<p class="help">A field emptied removes that limit. Every gateway applies a change within a second.</p></form></section>
<section aria-labelledby="teams-h"><h2 id="teams-h">Teams</h2>
<table id="teams"><thead><tr><th scope="col">Team</th><th scope="col">Keys</th><th scope="col">Budget used / left</th><th scope="col">Actions</th></tr></thead><tbody></tbody></table>
<form id="create-team" class="controls" aria-label="Create a team">
<label>Name <input name="name" required></label><label>Budget <input name="budget" placeholder="50/month"></label>
<button type="submit">Create team</button></form></section>"#;

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
