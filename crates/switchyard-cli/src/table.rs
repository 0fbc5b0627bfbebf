//! The text tables of the listing commands: column widths and UTC times.

/// The width of a column: its widest cell or its header, in characters.
pub fn column_width<'a>(cells: impl IntoIterator<Item = &'a str>, header: &str) -> usize {
    cells
        .into_iter()
        .map(|cell| cell.chars().count())
        .max()
        .unwrap_or(0)
        .max(header.len())
}

/// `YYYY-MM-DD HH:MM` in UTC of a Unix time in milliseconds.
pub fn utc_minute(ms: i64) -> String {
    let t = switchyard_api::time::utc(ms.div_euclid(1000));
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time in milliseconds.
pub fn utc_second(ms: i64) -> String {
    let t = switchyard_api::time::utc(ms.div_euclid(1000));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

#[cfg(test)]
mod tests {
    use super::{column_width, utc_minute, utc_second};

    #[test]
    fn dates() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        assert_eq!(utc_minute(951_782_400_000), "2000-02-29 00:00");
        assert_eq!(utc_minute(1_764_471_234_567), "2025-11-30 02:53");
        assert_eq!(utc_second(1_764_471_234_567), "2025-11-30T02:53:54Z");
    }

    #[test]
    fn widths_count_characters_and_the_header() {
        assert_eq!(column_width(["a", "bb"], "MODEL"), 5);
        assert_eq!(column_width(["claude-sonnet-4", "é"], "MODEL"), 15);
        assert_eq!(column_width(["ééé"], "ID"), 3);
        assert_eq!(column_width([], "STATE"), 5);
    }
}
