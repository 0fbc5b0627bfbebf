//! Budgets and the UTC calendar their windows and running totals are bucketed by.
//! Spec: R14.6, R14.7.

/// One UTC day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// The window a budget counts spend over (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BudgetWindow {
    /// The UTC day.
    Day,
    /// The UTC calendar month.
    Month,
    /// Ever.
    Total,
}

impl BudgetWindow {
    /// The stored name: `day`, `month` or `total`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Month => "month",
            Self::Total => "total",
        }
    }

    /// The window named `name`, as [`BudgetWindow::name`] writes it.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Day, Self::Month, Self::Total]
            .into_iter()
            .find(|w| w.name() == name)
    }

    /// The start of the window holding `ms`, the key of its running total: 0 for `Total`.
    pub fn bucket_ms(self, ms: i64) -> i64 {
        match self {
            Self::Day => ms.div_euclid(DAY_MS) * DAY_MS,
            Self::Month => {
                let (y, m, _) = civil_from_days(ms.div_euclid(DAY_MS));
                days_from_civil(y, m, 1) * DAY_MS
            }
            Self::Total => 0,
        }
    }

    /// The first instant of the window holding `ms`; `i64::MIN` for `Total`.
    pub fn start_ms(self, ms: i64) -> i64 {
        match self {
            Self::Total => i64::MIN,
            w => w.bucket_ms(ms),
        }
    }

    /// When the window holding `ms` ends; `None` for `Total`.
    pub fn end_ms(self, ms: i64) -> Option<i64> {
        match self {
            Self::Day => Some(self.bucket_ms(ms) + DAY_MS),
            Self::Month => {
                let (y, m, _) = civil_from_days(ms.div_euclid(DAY_MS));
                let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                Some(days_from_civil(y, m, 1) * DAY_MS)
            }
            Self::Total => None,
        }
    }
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
    /// `USD`, `USD/day`, `USD/month` or `USD/total`, a `$` allowed; `None` for anything else.
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
        self.window.name()
    }

    /// The budget from its stored columns; `None` when either is NULL or the name unknown.
    pub fn from_columns(usd: Option<f64>, window: Option<&str>) -> Option<Self> {
        Self::parse(&format!("{}/{}", usd?, window?))
    }

    /// When the window holding `now_ms` started; `i64::MIN` for `total`.
    pub fn window_start_ms(&self, now_ms: i64) -> i64 {
        self.window.start_ms(now_ms)
    }

    /// When the window holding `now_ms` ends and the budget is whole again; `None` for `total`.
    pub fn resets_ms(&self, now_ms: i64) -> Option<i64> {
        self.window.end_ms(now_ms)
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "${}/{}", self.usd, self.window_name())
    }
}

/// Days since 1970-01-01 of the proleptic Gregorian date, by H. Hinnant's algorithm.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01 as year, month 1–12 and day 1–31.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `YYYY-MM-DD` as UTC midnight or `YYYY-MM-DDTHH:MM:SSZ`, in Unix milliseconds.
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn buckets_are_window_starts_and_total_is_zero() {
        let now = parse_utc_date("2026-03-01T05:00:00Z").unwrap();
        let first = parse_utc_date("2026-03-01").unwrap();
        assert_eq!(BudgetWindow::Day.bucket_ms(now), first);
        assert_eq!(BudgetWindow::Month.bucket_ms(now), first);
        assert_eq!(BudgetWindow::Total.bucket_ms(now), 0);
        assert_eq!(BudgetWindow::Day.bucket_ms(-1), -86_400_000);
        for w in [BudgetWindow::Day, BudgetWindow::Month, BudgetWindow::Total] {
            assert_eq!(BudgetWindow::from_name(w.name()), Some(w));
        }
    }
}
