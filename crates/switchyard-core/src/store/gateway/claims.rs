//! The SQL both backends decide holds and leases with: running totals and live claims.
//! Spec: R14.7.

use super::budget::BudgetWindow;
use super::holds::HoldRequest;
use super::leases::{LeaseScope, LeaseWant};
use super::totals::{TotalKey, TotalScope};

/// A value bound to a statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Int(i64),
    Text(String),
}

/// SQL with numbered placeholders and its arguments in their order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bound {
    pub(crate) sql: String,
    pub(crate) args: Vec<Arg>,
}

/// `sql` with each `:name` numbered by first appearance after `mark`, and `named`'s values.
pub(crate) fn bind(sql: &str, mark: char, named: &[(String, Arg)]) -> Bound {
    let (mut out, mut order): (String, Vec<String>) = (String::new(), Vec::new());
    let mut rest = sql;
    while let Some(at) = rest.find(':') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..len];
        let n = match order.iter().position(|o| o == name) {
            Some(i) => i + 1,
            None => {
                order.push(name.to_owned());
                order.len()
            }
        };
        out.push_str(&format!("{mark}{n}"));
        rest = &after[len..];
    }
    out.push_str(rest);
    let args = (order.iter())
        .map(|name| {
            let found = named.iter().find(|(n, _)| n == name);
            found.map_or_else(|| panic!("no value named {name}"), |(_, a)| a.clone())
        })
        .collect();
    Bound { sql: out, args }
}

/// One budget window's claims to read: the scope, its id, its window and the window's bucket.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Claim {
    pub(crate) scope: LeaseScope,
    pub(crate) id: String,
    pub(crate) window: BudgetWindow,
    pub(crate) now_ms: i64,
}

impl Claim {
    /// The claim `want` is decided on at `now_ms`: a parallel limit counts over no window.
    pub(crate) fn of_want(want: &LeaseWant, now_ms: i64) -> Self {
        let window = match want.scope {
            LeaseScope::Parallel => BudgetWindow::Total,
            _ => want.window,
        };
        Self {
            scope: want.scope,
            id: want.id.clone(),
            window,
            now_ms,
        }
    }

    /// The values [`claim_sql`] with prefix `p` reads.
    pub(crate) fn args(&self, p: &str) -> Vec<(String, Arg)> {
        let from = match self.scope {
            LeaseScope::Parallel => i64::MIN,
            _ => self.window.start_ms(self.now_ms),
        };
        vec![
            (format!("{p}id"), Arg::Text(self.id.clone())),
            (format!("{p}span"), Arg::Text(self.window.name().to_owned())),
            (
                format!("{p}bucket"),
                Arg::Int(self.window.bucket_ms(self.now_ms)),
            ),
            (format!("{p}from"), Arg::Int(from)),
        ]
    }

    /// The totals row every decision on this claim locks on PostgreSQL.
    #[cfg(feature = "postgres")]
    pub(crate) fn lock_row(&self) -> TotalKey {
        match self.scope {
            LeaseScope::Key | LeaseScope::Parallel => {
                TotalKey::of(TotalScope::Key, &self.id, BudgetWindow::Total, 0)
            }
            LeaseScope::User => TotalKey::of(TotalScope::User, &self.id, BudgetWindow::Total, 0),
            LeaseScope::Team => TotalKey::of(TotalScope::Team, &self.id, BudgetWindow::Total, 0),
            LeaseScope::Gateway => {
                TotalKey::of(TotalScope::Gateway, "", BudgetWindow::Day, self.now_ms)
            }
        }
    }
}

/// What a claim's window has used, leases of holders but `:holder` included.
pub(crate) fn claim_sql(scope: LeaseScope, p: &str, sqlite: bool) -> String {
    format!("{} + {}", used_sql(scope, p, sqlite), leases_sql(scope, p))
}

/// The live leases of holders other than `:holder` on a claim's window.
fn leases_sql(scope: LeaseScope, p: &str) -> String {
    format!(
        "(SELECT coalesce(sum(amount), 0.0) FROM budget_leases WHERE scope = '{s}' AND id = :{p}id
           AND span = :{p}span AND bucket_ms = :{p}bucket AND expires_ms > :now
           AND holder <> :holder)",
        s = scope.name()
    )
}

/// A claim's settled total and live holds; SQLite is told the index of live holds to use.
pub(crate) fn used_sql(scope: LeaseScope, p: &str, sqlite: bool) -> String {
    let index = |name: &str| {
        if sqlite {
            format!("INDEXED BY {name}")
        } else {
            String::new()
        }
    };
    let total = |s: &str| {
        format!(
            "(SELECT coalesce(sum(settled_usd), 0.0) FROM budget_totals WHERE scope = '{s}'
               AND id = :{p}id AND span = :{p}span AND bucket_ms = :{p}bucket)"
        )
    };
    let live = |what: &str, idx: &str, filter: &str| {
        format!(
            "(SELECT {what} FROM budget_holds {} WHERE {filter} settled_usd IS NULL
               AND expires_ms > :now)",
            index(idx)
        )
    };
    let held = "coalesce(sum(reserved_usd), 0.0)";
    match scope {
        LeaseScope::Key => format!(
            "{} + {}",
            total("key"),
            live(
                held,
                "budget_holds_open_by_key",
                &format!("key_id = :{p}id AND ts_ms >= :{p}from AND")
            )
        ),
        LeaseScope::User => format!(
            "{} + {}",
            total("user"),
            live(
                held,
                "budget_holds_open_by_user",
                &format!("user_id = :{p}id AND ts_ms >= :{p}from AND")
            )
        ),
        LeaseScope::Team => format!(
            "{} + {}",
            total("team"),
            live(
                held,
                "budget_holds_open_by_team",
                &format!("team = :{p}id AND ts_ms >= :{p}from AND")
            )
        ),
        LeaseScope::Gateway => format!(
            "{} + {}",
            total("gateway"),
            live(held, "budget_holds_open", "")
        ),
        LeaseScope::Parallel => live(
            "count(*)",
            "budget_holds_open_by_key",
            &format!("key_id = :{p}id AND"),
        ),
    }
}

/// The five claims a hold is decided on: key, parallel, user, team and gateway.
pub(crate) fn hold_claims(req: &HoldRequest) -> [Claim; 5] {
    let window = |b: Option<super::budget::Budget>| b.map_or(BudgetWindow::Total, |b| b.window);
    let (team, user) = (req.team.as_ref(), req.user.as_ref());
    let claim = |scope, id: &str, window| Claim {
        scope,
        id: id.to_owned(),
        window,
        now_ms: req.now_ms,
    };
    [
        claim(LeaseScope::Key, &req.key.id, window(req.key.budget)),
        claim(LeaseScope::Parallel, &req.key.id, BudgetWindow::Total),
        claim(
            LeaseScope::User,
            user.map_or("", |u| u.id.as_str()),
            window(user.and_then(|u| u.budget)),
        ),
        claim(
            LeaseScope::Team,
            team.map_or("", |t| t.name.as_str()),
            window(team.and_then(|t| t.budget)),
        ),
        claim(LeaseScope::Gateway, "", BudgetWindow::Day),
    ]
}

/// The claims of `req` a hold must lock on PostgreSQL: only scopes with a limit.
#[cfg(feature = "postgres")]
pub(crate) fn hold_locks(req: &HoldRequest) -> Vec<TotalKey> {
    let [key, _, user, team, gateway] = hold_claims(req);
    let mut locks = Vec::new();
    if req.key.budget.is_some() || req.key.max_parallel.is_some() {
        locks.push(key.lock_row());
    }
    if req.user.as_ref().is_some_and(|u| u.budget.is_some()) {
        locks.push(user.lock_row());
    }
    if req.team.as_ref().is_some_and(|t| t.budget.is_some()) {
        locks.push(team.lock_row());
    }
    if req.gateway_per_day.is_some() {
        locks.push(gateway.lock_row());
    }
    locks
}

/// The statement reading a hold's five claims in one snapshot.
pub(crate) fn hold_sql(req: &HoldRequest, mark: char, sqlite: bool) -> Bound {
    let claims = hold_claims(req);
    let prefixes = ["k", "p", "u", "t", "g"];
    let mut named = vec![
        ("now".to_owned(), Arg::Int(req.now_ms)),
        ("holder".to_owned(), Arg::Text(String::new())),
    ];
    let mut columns = Vec::new();
    for (claim, p) in claims.iter().zip(prefixes) {
        columns.push(format!("({})", claim_sql(claim.scope, p, sqlite)));
        named.extend(claim.args(p));
    }
    bind(&format!("SELECT {}", columns.join(", ")), mark, &named)
}

/// The statement reading what everyone but `holder` uses of `claim`.
pub(crate) fn others_sql(claim: &Claim, holder: &str, mark: char, sqlite: bool) -> Bound {
    let mut named = claim.args("c");
    named.push(("now".to_owned(), Arg::Int(claim.now_ms)));
    named.push(("holder".to_owned(), Arg::Text(holder.to_owned())));
    let sql = format!("SELECT {}", claim_sql(claim.scope, "c", sqlite));
    bind(&sql, mark, &named)
}

/// Adds to a running total, creating it at first use.
pub(crate) const ADD_TOTAL: &str =
    "INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (scope, id, span, bucket_ms)
     DO UPDATE SET settled_usd = budget_totals.settled_usd + excluded.settled_usd";

/// Every running total recomputed from the ledger, in SQLite's or PostgreSQL's SQL.
pub(crate) fn recompute_sql(sqlite: bool) -> String {
    let month = if sqlite { month_sqlite } else { month_pg };
    let holds = |scope: &str, column: &str| {
        let filter = format!("settled_usd IS NOT NULL AND {column} IS NOT NULL");
        [
            ("day", day_sql("ts_ms")),
            ("month", month("ts_ms")),
            ("total", "0".to_owned()),
        ]
        .map(|(span, bucket)| {
            format!(
                "SELECT '{scope}', {column}, '{span}', {bucket}, sum(settled_usd)
                     FROM budget_holds WHERE {filter} GROUP BY 2, 4"
            )
        })
        .join(" UNION ALL ")
    };
    format!(
        "{} UNION ALL {} UNION ALL {} UNION ALL SELECT 'gateway', '', 'day', {}, sum(cost_usd)
         FROM spend GROUP BY 4",
        holds("key", "key_id"),
        holds("user", "user_id"),
        holds("team", "team"),
        day_sql("ts_ms"),
    )
}

/// The UTC month start of the time column `c` on SQLite.
fn month_sqlite(c: &str) -> String {
    format!(
        "(CAST(strftime('%s', {} / 1000, 'unixepoch', 'start of month') AS INTEGER) * 1000)",
        day_sql(c)
    )
}

/// The UTC month start of the time column `c` on PostgreSQL.
fn month_pg(c: &str) -> String {
    format!(
        "(CAST(extract(epoch FROM date_trunc('month', to_timestamp({} / 1000) AT TIME ZONE 'UTC'))
           AS BIGINT) * 1000)",
        day_sql(c)
    )
}

/// The UTC day start of the time column `c`, in SQL both backends run.
pub(crate) fn day_sql(c: &str) -> String {
    format!("({c} - ((({c} % 86400000) + 86400000) % 86400000))")
}

/// The window a budget read from `from_ms` at `now_ms` covers, when it starts one.
pub(crate) fn window_from(from_ms: i64, now_ms: i64) -> Option<BudgetWindow> {
    [BudgetWindow::Total, BudgetWindow::Day, BudgetWindow::Month]
        .into_iter()
        .find(|w| w.start_ms(now_ms) == from_ms)
}

/// The statement reading what `scope`'s `id` has used since `from_ms`: settled and live holds.
pub(crate) fn used_since_sql(
    scope: LeaseScope,
    id: &str,
    window: BudgetWindow,
    now_ms: i64,
    mark: char,
    sqlite: bool,
) -> Bound {
    let claim = Claim {
        scope,
        id: id.to_owned(),
        window,
        now_ms,
    };
    let mut named = claim.args("c");
    named.push(("now".to_owned(), Arg::Int(now_ms)));
    bind(
        &format!("SELECT {}", used_sql(scope, "c", sqlite)),
        mark,
        &named,
    )
}

/// A running total's key from its stored columns.
pub(crate) fn total_key(scope: &str, id: String, span: &str, bucket_ms: i64) -> Option<TotalKey> {
    Some(TotalKey {
        scope: TotalScope::from_name(scope)?,
        id,
        window: BudgetWindow::from_name(span)?,
        bucket_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_numbered_by_first_appearance() {
        let named = vec![
            ("a".to_owned(), Arg::Int(1)),
            ("bb".to_owned(), Arg::Text("x".into())),
        ];
        let b = bind("x = :bb AND y = :a OR z = :bb", '$', &named);
        assert_eq!(b.sql, "x = $1 AND y = $2 OR z = $1");
        assert_eq!(b.args, vec![Arg::Text("x".into()), Arg::Int(1)]);
    }
}
