//! UTC calendar dates of Unix times, after H. Hinnant's date algorithms.
//! Spec: R4.2, R12.2.

/// A Unix time as a UTC date and time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    /// 1 to 12.
    pub month: i64,
    /// 1 to 31.
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
}

/// The UTC date and time of `secs` seconds since the Unix epoch, negative before it.
pub fn utc(secs: i64) -> UtcTime {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    UtcTime {
        year: yoe + era * 400 + i64::from(month <= 2),
        month,
        day,
        hour: rem / 3600,
        minute: rem % 3600 / 60,
        second: rem % 60,
    }
}

/// Seconds since the Unix epoch of a UTC date and time, the inverse of [`utc`].
pub fn unix_seconds(t: UtcTime) -> i64 {
    let y = if t.month <= 2 { t.year - 1 } else { t.year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (t.month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + t.day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + t.hour * 3600 + t.minute * 60 + t.second
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        for secs in [0, 951_782_400, 1_759_321_496, -86_400, 4_102_444_799] {
            assert_eq!(unix_seconds(utc(secs)), secs);
        }
        let t = utc(951_782_400);
        assert_eq!((t.year, t.month, t.day), (2000, 2, 29));
    }
}
