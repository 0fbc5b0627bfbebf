//! Client keys, teams and budget holds (SPEC R14.6, R14.7): what `switchyard keys` and
//! `switchyard teams` keep, the [`KeyStore`] trait every store backend implements beside
//! [`crate::store::TaskStore`] on the same storage, and the one rule for how much a request
//! that held a reservation finally counts ([`settled_amount`]).
//!
//! A key is shown once, when it is made: the store keeps its SHA-256 hash (hex) and a short
//! prefix for display ([`KEY_PREFIX_LEN`] characters), never the key.
//!
//! A hold is one request's reservation, under the gateway's request id: taken before the
//! upstream request against the key's, its team's and the gateway's caps in one atomic step
//! ([`KeyStore::hold`]), settled with the exact cost when the request's record is written
//! ([`crate::store::RequestLog::record_request`], same transaction), and counted until its
//! lease expires when it never is (the process died).

use sha2::{Digest, Sha256};

use super::error::StoreFuture;
use super::requests::{RequestOutcome, RequestRecord};

/// What every client key starts with.
pub const KEY_SCHEME: &str = "sk-sy-";

/// How many characters of a key are kept for display (the scheme and 6 more).
pub const KEY_PREFIX_LEN: usize = 12;

/// Random bytes in a key (shown as 48 hex characters after [`KEY_SCHEME`]).
const KEY_RANDOM_BYTES: usize = 24;

/// A new key: the secret (shown once, never stored), its hash and its display prefix.
pub struct NewSecret {
    /// The key itself, `sk-sy-` and 48 hex characters.
    pub key: String,
    /// Its SHA-256, lowercase hex.
    pub hash: String,
    /// Its first [`KEY_PREFIX_LEN`] characters.
    pub prefix: String,
}

impl std::fmt::Debug for NewSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSecret")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Random hex from the OS RNG; `Err` names why the OS gave none.
fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    getrandom::getrandom(&mut buf).map_err(|e| format!("the OS random source failed: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A new client key from the OS RNG (192 bits).
///
/// # Errors
///
/// The OS random source failed (one sentence).
pub fn generate_key() -> Result<NewSecret, String> {
    let key = format!("{KEY_SCHEME}{}", random_hex(KEY_RANDOM_BYTES)?);
    Ok(NewSecret {
        hash: hash_key(&key),
        prefix: key[..KEY_PREFIX_LEN].to_owned(),
        key,
    })
}

/// A new key id, `key_` and 16 hex characters.
///
/// # Errors
///
/// The OS random source failed.
pub fn generate_key_id() -> Result<String, String> {
    Ok(format!("key_{}", random_hex(8)?))
}

/// The SHA-256 of `key`, lowercase hex: what the store keeps and looks keys up by.
pub fn hash_key(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The window a budget counts spend over (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetWindow {
    /// The UTC day.
    Day,
    /// The UTC calendar month.
    Month,
    /// Ever.
    Total,
}

/// A budget: at most `usd` spent in each `window`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// USD.
    pub usd: f64,
    /// Over which window.
    pub window: BudgetWindow,
}

impl Budget {
    /// `USD`, `USD/day`, `USD/month` or `USD/total` (`$` allowed): `None` for anything else
    /// or a negative or non-finite amount.
    pub fn parse(text: &str) -> Option<Self> {
        let (amount, window) = text.split_once('/').unwrap_or((text, "total"));
        let usd: f64 = amount.trim().trim_start_matches('$').parse().ok()?;
        let window = match window.trim() {
            "day" | "daily" => BudgetWindow::Day,
            "month" | "monthly" => BudgetWindow::Month,
            "total" => BudgetWindow::Total,
            _ => return None,
        };
        (usd.is_finite() && usd >= 0.0).then_some(Self { usd, window })
    }

    /// The stored window name: `day`, `month` or `total`.
    pub fn window_name(&self) -> &'static str {
        match self.window {
            BudgetWindow::Day => "day",
            BudgetWindow::Month => "month",
            BudgetWindow::Total => "total",
        }
    }

    /// The budget from its stored columns (`None` when either is NULL or the name unknown).
    pub fn from_columns(usd: Option<f64>, window: Option<&str>) -> Option<Self> {
        Self::parse(&format!("{}/{}", usd?, window?))
    }

    /// When the window holding `now_ms` started (Unix ms; `i64::MIN` for `total`).
    pub fn window_start_ms(&self, now_ms: i64) -> i64 {
        match self.window {
            BudgetWindow::Day => crate::limits::utc_day_start_ms(now_ms),
            BudgetWindow::Month => {
                let (y, m, _) = civil_from_days(now_ms.div_euclid(86_400_000));
                days_from_civil(y, m, 1) * 86_400_000
            }
            BudgetWindow::Total => i64::MIN,
        }
    }

    /// When the window holding `now_ms` ends and the budget is whole again (Unix ms); `None`
    /// for `total`.
    pub fn resets_ms(&self, now_ms: i64) -> Option<i64> {
        match self.window {
            BudgetWindow::Day => Some(crate::limits::utc_day_start_ms(now_ms) + 86_400_000),
            BudgetWindow::Month => {
                let (y, m, _) = civil_from_days(now_ms.div_euclid(86_400_000));
                let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                Some(days_from_civil(y, m, 1) * 86_400_000)
            }
            BudgetWindow::Total => None,
        }
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "${}/{}", self.usd, self.window_name())
    }
}

/// Days since 1970-01-01 of the proleptic Gregorian date (H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of `days` since 1970-01-01: (year, month 1–12, day 1–31).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// `YYYY-MM-DD` (UTC midnight) or `YYYY-MM-DDTHH:MM:SSZ` as Unix milliseconds; `None` for
/// anything else.
pub fn parse_utc_date(text: &str) -> Option<i64> {
    let (date, time) = text.split_once('T').unwrap_or((text, "00:00:00Z"));
    let mut parts = date.split('-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let time = time.strip_suffix('Z')?;
    let mut hms = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (hms.next()??, hms.next()??, hms.next().unwrap_or(Some(0))?);
    if h > 23 || min > 59 || s > 60 {
        return None;
    }
    Some((days_from_civil(y, m, d) * 86_400 + h * 3600 + min * 60 + s) * 1000)
}

/// One client key as stored (never the key itself).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientKey {
    /// `key_` and 16 hex characters.
    pub id: String,
    /// The key's first [`KEY_PREFIX_LEN`] characters, for display and metric labels.
    pub prefix: String,
    /// Who or what it is for.
    pub name: String,
    /// Its team, when it has one.
    pub team: Option<String>,
    /// The model names it may use, as globs (`*` any run); empty: every model.
    pub models: Vec<String>,
    /// Its own budget.
    pub budget: Option<Budget>,
    /// Requests per minute.
    pub rpm: Option<u64>,
    /// Input tokens per minute (Switchyard's estimate of each request).
    pub tpm: Option<u64>,
    /// Requests in flight at once.
    pub max_parallel: Option<u64>,
    /// When it stops working, Unix ms.
    pub expires_ms: Option<i64>,
    /// For `/metrics` only: never for completions.
    pub admin: bool,
    /// When it was made, Unix ms.
    pub created_ms: i64,
    /// When it was revoked, Unix ms.
    pub revoked_ms: Option<i64>,
}

/// A team: the keys that name it share its budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Team {
    /// Its name (unique on a store).
    pub name: String,
    /// Its budget.
    pub budget: Option<Budget>,
    /// When it was made, Unix ms.
    pub created_ms: i64,
}

/// One request's reservation to take (USD; times Unix ms).
#[derive(Debug, Clone, PartialEq)]
pub struct HoldRequest {
    /// The gateway's request id: the hold's id, settled by the request's record.
    pub id: String,
    /// The key.
    pub key: ClientKey,
    /// The key's team, as stored now.
    pub team: Option<Team>,
    /// The reservation.
    pub amount_usd: f64,
    /// The gateway-wide daily cap (`[limits] max_cost_usd_per_day`).
    pub gateway_per_day: Option<f64>,
    /// Now.
    pub now_ms: i64,
    /// When the hold stops counting if it is never settled (its process died).
    pub expires_ms: i64,
}

/// Which cap refused a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldScope {
    /// The key's budget.
    Key,
    /// The team's budget.
    Team,
    /// The gateway-wide daily cap.
    Gateway,
    /// The key's parallel requests.
    Parallel,
}

/// What [`KeyStore::hold`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum HoldOutcome {
    /// The reservation was taken.
    Held,
    /// Nothing was written: `scope` has `left_usd` of `limit` (USD, or requests for
    /// [`HoldScope::Parallel`]) and is whole again at `resets_ms` (`None`: never, or when a
    /// request in flight ends).
    Refused {
        /// The cap.
        scope: HoldScope,
        /// The cap's size.
        limit: f64,
        /// What is left of it now.
        left: f64,
        /// When its window resets.
        resets_ms: Option<i64>,
    },
}

/// The amounts a hold is decided on (USD), read in one snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HoldUse {
    /// The key's settled spend and live holds in its budget's window.
    pub key_usd: f64,
    /// The key's live unsettled holds (requests in flight).
    pub key_in_flight: u64,
    /// The team's, in its budget's window.
    pub team_usd: f64,
    /// The gateway's spend today and every live hold.
    pub gateway_usd: f64,
}

/// The one rule deciding a hold (SPEC R14.7): refused by the first cap that `amount` would
/// pass, in the order parallel, key, team, gateway.
pub fn decide_hold(req: &HoldRequest, used: &HoldUse) -> HoldOutcome {
    let now = req.now_ms;
    if let Some(max) = req.key.max_parallel
        && used.key_in_flight >= max
    {
        return HoldOutcome::Refused {
            scope: HoldScope::Parallel,
            limit: max as f64,
            left: 0.0,
            resets_ms: None,
        };
    }
    let caps = [
        (HoldScope::Key, req.key.budget, used.key_usd),
        (
            HoldScope::Team,
            req.team.as_ref().and_then(|t| t.budget),
            used.team_usd,
        ),
        (
            HoldScope::Gateway,
            req.gateway_per_day.map(|usd| Budget {
                usd,
                window: BudgetWindow::Day,
            }),
            used.gateway_usd,
        ),
    ];
    for (scope, budget, used) in caps {
        if let Some(b) = budget
            && used + req.amount_usd > b.usd + 1e-12
        {
            return HoldOutcome::Refused {
                scope,
                limit: b.usd,
                left: (b.usd - used).max(0.0),
                resets_ms: b.resets_ms(now),
            };
        }
    }
    HoldOutcome::Held
}

/// What a request that held `reserved_usd` counts once its record is written (SPEC R14.7):
/// its exact cost when known; nothing when no provider answered and it failed (nothing was
/// billed); else the reservation stands (a stream cut without usage, a cancelled request, a
/// model without prices).
pub fn settled_amount(record: &RequestRecord, reserved_usd: f64) -> f64 {
    settled_without_reservation(record).unwrap_or(reserved_usd)
}

/// [`settled_amount`] where the record alone decides it; `None` where the reservation
/// stands.
pub fn settled_without_reservation(record: &RequestRecord) -> Option<f64> {
    match (record.cost_usd, &record.provider, &record.outcome) {
        (Some(cost), _, _) => Some(cost),
        (None, None, RequestOutcome::Error(_)) => Some(0.0),
        _ => None,
    }
}

/// How `switchyard usage` groups the request log (SPEC R14.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageBy {
    /// By client key id.
    Key,
    /// By team.
    Team,
    /// By `provider:model` that answered.
    Model,
    /// By UTC day (the group is the day's number since 1970-01-01).
    Day,
}

/// One group of the request log (tokens; USD).
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// The group's value (`None`: requests without one, e.g. no key, or no model answered).
    pub group: Option<String>,
    /// Requests.
    pub requests: u64,
    /// Non-cached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache reads.
    pub cache_read_tokens: u64,
    /// Cache writes.
    pub cache_write_tokens: u64,
    /// The sum of the known costs.
    pub cost_usd: f64,
    /// Requests whose cost is unknown.
    pub unpriced: u64,
}

// The request log over a range, per hour or day (SPEC R14.8, R14.11): what the dashboard's
// spend page charts and totals, read by the same SQL as `switchyard usage`
// ([`KeyStore::usage_between`]; `usage` is the one with no end and no buckets).

/// How long one bucket of a spend series is (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageBucket {
    /// One UTC hour.
    Hour,
    /// One UTC day.
    Day,
}

impl UsageBucket {
    /// The bucket's length in milliseconds.
    pub fn millis(self) -> i64 {
        match self {
            Self::Hour => 3_600_000,
            Self::Day => 86_400_000,
        }
    }
}

/// What to sum: the groups, the buckets (`None`: one row per group over the whole range) and
/// the range `[from_ms, to_ms)` of arrival times (Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageQuery {
    /// How requests are grouped.
    pub by: UsageBy,
    /// Per hour or per day; `None`: totals over the range.
    pub bucket: Option<UsageBucket>,
    /// The first arrival counted, Unix ms (inclusive).
    pub from_ms: i64,
    /// The end of the range, Unix ms (exclusive).
    pub to_ms: i64,
}

/// One group's sums in one bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageSlice {
    /// The bucket's start (Unix ms, a multiple of its length); `None` for totals.
    pub bucket_ms: Option<i64>,
    /// The group's last request in the bucket (its arrival, Unix ms).
    pub last_ms: i64,
    /// The group and its sums, as `switchyard usage` reports them.
    pub row: UsageRow,
}

/// Where client keys, teams and holds are kept: implemented by every store backend on the
/// same storage as its tasks (a supertrait of [`crate::store::TaskStore`]).
pub trait KeyStore: Send + Sync {
    /// Stores `key` with its `hash`. An id or hash already stored:
    /// [`StoreError::Conflict`](super::StoreError::Conflict).
    fn create_key<'a>(&'a self, key: &'a ClientKey, hash: &'a str) -> StoreFuture<'a, ()>;

    /// Every key, oldest first (revoked ones too).
    fn client_keys(&self) -> StoreFuture<'_, Vec<ClientKey>>;

    /// The key whose hash is `hash` (revoked and expired ones too: the caller says why no).
    fn key_by_hash<'a>(&'a self, hash: &'a str) -> StoreFuture<'a, Option<ClientKey>>;

    /// Whether any key that is not revoked is stored (`serve` then requires one).
    fn has_client_keys(&self) -> StoreFuture<'_, bool>;

    /// Revokes key `id` at `now_ms`; `false` when there is no such key.
    fn revoke_key<'a>(&'a self, id: &'a str, now_ms: i64) -> StoreFuture<'a, bool>;

    /// Gives key `id` a new hash and prefix (the old key stops working at once); `false` when
    /// there is no such key or it is revoked.
    fn rotate_key<'a>(
        &'a self,
        id: &'a str,
        hash: &'a str,
        prefix: &'a str,
    ) -> StoreFuture<'a, bool>;

    /// Stores `team`. A team of that name: [`StoreError::Conflict`](super::StoreError::Conflict).
    fn create_team<'a>(&'a self, team: &'a Team) -> StoreFuture<'a, ()>;

    /// Every team, by name.
    fn teams(&self) -> StoreFuture<'_, Vec<Team>>;

    /// The team `name`.
    fn team<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Option<Team>>;

    /// Takes `req`'s reservation when [`decide_hold`] allows it, in one atomic step against
    /// every process on the store; refused, nothing is written.
    fn hold<'a>(&'a self, req: &'a HoldRequest) -> StoreFuture<'a, HoldOutcome>;

    /// The request log since `since_ms` grouped `by`, in the group's order (requests without one last).
    fn usage(&self, by: UsageBy, since_ms: i64) -> StoreFuture<'_, Vec<UsageRow>>;

    /// The request log over `query`'s range, grouped and bucketed as it says (SPEC R14.11:
    /// the dashboard's spend page; the SQL of [`KeyStore::usage`] with an end and buckets).
    fn usage_between<'a>(&'a self, query: &'a UsageQuery) -> StoreFuture<'a, Vec<UsageSlice>>;

    /// What key `key_id` (or, with `team`, the team) has used since `from_ms`: settled
    /// spend plus holds alive at `now_ms` (USD).
    fn used_since<'a>(
        &'a self,
        key_id: Option<&'a str>,
        team: Option<&'a str>,
        from_ms: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, f64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_hashed_and_prefixed() {
        let a = generate_key().unwrap();
        let b = generate_key().unwrap();
        assert_ne!(a.key, b.key);
        assert!(a.key.starts_with(KEY_SCHEME) && a.key.len() == 6 + 48);
        assert_eq!(a.hash, hash_key(&a.key));
        assert_eq!(a.hash.len(), 64);
        assert!(a.key.starts_with(&a.prefix) && a.prefix.len() == KEY_PREFIX_LEN);
        assert!(!format!("{a:?}").contains(&a.key));
    }

    #[test]
    fn budgets_parse_and_windows_reset() {
        let b = Budget::parse("5/day").unwrap();
        assert_eq!((b.usd, b.window), (5.0, BudgetWindow::Day));
        assert_eq!(Budget::parse("$2.5").unwrap().window, BudgetWindow::Total);
        assert!(Budget::parse("-1/day").is_none() && Budget::parse("1/week").is_none());
        let now = parse_utc_date("2026-12-02T01:10:00Z").unwrap();
        let m = Budget::parse("10/month").unwrap();
        assert_eq!(
            m.window_start_ms(now),
            parse_utc_date("2026-12-01").unwrap()
        );
        assert_eq!(m.resets_ms(now), parse_utc_date("2027-01-01"));
        assert_eq!(b.resets_ms(now), parse_utc_date("2026-12-03"));
        assert_eq!(parse_utc_date("1970-01-02"), Some(86_400_000));
        assert!(parse_utc_date("2026-13-01").is_none());
    }
}
