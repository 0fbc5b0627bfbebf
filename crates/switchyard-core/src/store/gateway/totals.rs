//! Running totals of settled spend, kept in the transaction that changes the rows they sum.
//! Spec: R14.14.

use std::collections::BTreeMap;

use super::budget::BudgetWindow;

/// Whose running total. The order is the order every writer locks totals rows in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TotalScope {
    /// A client key, by id.
    Key,
    /// A user, by id: the keys they own.
    User,
    /// A team, by name.
    Team,
    /// The whole gateway, id `""`: the spend rows of tasks and gateway requests.
    Gateway,
}

impl TotalScope {
    /// The stored name: `key`, `team` or `gateway`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Key => "key",
            Self::User => "user",
            Self::Team => "team",
            Self::Gateway => "gateway",
        }
    }

    /// The scope named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Key, Self::User, Self::Team, Self::Gateway]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// One running total: a scope's id, window and the window's start in Unix ms, 0 for ever.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TotalKey {
    /// Whose.
    pub scope: TotalScope,
    /// The key id, the user id, the team name, or `""` for the gateway.
    pub id: String,
    /// Per day, per month or ever.
    pub window: BudgetWindow,
    /// [`BudgetWindow::bucket_ms`] of the rows it sums.
    pub bucket_ms: i64,
}

impl TotalKey {
    /// The total of `scope`'s `id` over the `window` holding `ms`.
    pub fn of(scope: TotalScope, id: &str, window: BudgetWindow, ms: i64) -> Self {
        Self {
            scope,
            id: id.to_owned(),
            window,
            bucket_ms: window.bucket_ms(ms),
        }
    }
}

/// A total whose stored amount is not what the ledger sums to.
#[derive(Debug, Clone, PartialEq)]
pub struct TotalsDiff {
    /// Which total.
    pub key: TotalKey,
    /// What the store held, USD; 0 for a missing row.
    pub stored_usd: f64,
    /// What the ledger sums to, USD.
    pub recomputed_usd: f64,
}

/// What [`super::KeyStore::check_totals`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TotalsCheck {
    /// Totals compared: those stored and those the ledger gives, once each.
    pub checked: u64,
    /// The totals that differ.
    pub differences: Vec<TotalsDiff>,
    /// Whether the differences were rewritten to the ledger's amounts.
    pub repaired: bool,
}

/// Amounts to add to totals, in lock order.
#[derive(Debug, Default)]
pub(crate) struct Deltas(pub(crate) BTreeMap<TotalKey, f64>);

impl Deltas {
    /// Adds a settled hold of `key_id`, its owner `user` and `team` at `ts_ms` to their totals.
    pub(crate) fn hold(
        &mut self,
        (key_id, user): (&str, Option<&str>),
        team: Option<&str>,
        ts_ms: i64,
        usd: f64,
    ) {
        let windows = [BudgetWindow::Day, BudgetWindow::Month, BudgetWindow::Total];
        for w in windows {
            self.add(TotalKey::of(TotalScope::Key, key_id, w, ts_ms), usd);
            if let Some(user) = user {
                self.add(TotalKey::of(TotalScope::User, user, w, ts_ms), usd);
            }
            if let Some(team) = team {
                self.add(TotalKey::of(TotalScope::Team, team, w, ts_ms), usd);
            }
        }
    }

    /// Adds a spend row at `ts_ms` to the gateway's day.
    pub(crate) fn spend(&mut self, ts_ms: i64, usd: f64) {
        let key = TotalKey::of(TotalScope::Gateway, "", BudgetWindow::Day, ts_ms);
        self.add(key, usd);
    }

    fn add(&mut self, key: TotalKey, usd: f64) {
        if usd != 0.0 {
            *self.0.entry(key).or_insert(0.0) += usd;
        }
    }
}

/// Whether two sums of the same rows differ by more than their order of addition explains.
fn differs(a: f64, b: f64) -> bool {
    (a - b).abs() > 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// Every total in `stored` or `recomputed` compared, a missing one read as 0.
pub(crate) fn compare(
    stored: Vec<(TotalKey, f64)>,
    recomputed: Vec<(TotalKey, f64)>,
) -> TotalsCheck {
    let mut both: BTreeMap<TotalKey, (f64, f64)> = BTreeMap::new();
    for (k, v) in stored {
        both.entry(k).or_default().0 += v;
    }
    for (k, v) in recomputed {
        both.entry(k).or_default().1 += v;
    }
    let checked = both.len() as u64;
    let differences = (both.into_iter())
        .filter(|(_, (s, r))| differs(*s, *r))
        .map(|(key, (stored_usd, recomputed_usd))| TotalsDiff {
            key,
            stored_usd,
            recomputed_usd,
        })
        .collect();
    TotalsCheck {
        checked,
        differences,
        repaired: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settled_hold_adds_to_three_windows_of_its_key_and_team() {
        let mut d = Deltas::default();
        let ts = 31 * 86_400_000 + 5;
        d.hold(("k", None), Some("t"), ts, 0.5);
        d.hold(("k", None), None, ts, 0.25);
        d.spend(ts, 1.0);
        let got: Vec<_> =
            d.0.iter()
                .map(|(k, v)| (k.scope, k.window, k.bucket_ms, *v))
                .collect();
        assert_eq!(got.len(), 7);
        assert_eq!(
            got[0],
            (TotalScope::Key, BudgetWindow::Day, 31 * 86_400_000, 0.75)
        );
        assert_eq!(
            got[1],
            (TotalScope::Key, BudgetWindow::Month, 31 * 86_400_000, 0.75)
        );
        assert_eq!(got[2], (TotalScope::Key, BudgetWindow::Total, 0, 0.75));
        assert_eq!(got[5].3, 0.5);
        assert_eq!(
            got[6],
            (TotalScope::Gateway, BudgetWindow::Day, 31 * 86_400_000, 1.0)
        );
    }

    #[test]
    fn compare_reads_a_missing_total_as_zero_and_ignores_rounding() {
        let k = |id: &str| TotalKey::of(TotalScope::Key, id, BudgetWindow::Total, 0);
        let stored = vec![(k("a"), 0.1 + 0.2), (k("b"), 0.0), (k("c"), 1.0)];
        let recomputed = vec![(k("a"), 0.3), (k("c"), 2.0), (k("d"), 0.5)];
        let check = compare(stored, recomputed);
        assert_eq!(check.checked, 4);
        let ids: Vec<_> = check
            .differences
            .iter()
            .map(|d| d.key.id.as_str())
            .collect();
        assert_eq!(ids, ["c", "d"]);
        assert_eq!(check.differences[1].stored_usd, 0.0);
    }
}
