//! How a typed model id finds its catalogue entry; the id itself is always sent as typed.
//! Spec: R2.3.

use super::catalogue::{CatalogueEntry, ModelTable};
use super::info::ModelInfo;

/// Prefixes Bedrock puts before a model id for cross-region inference profiles.
pub const CROSS_REGION_PREFIXES: &[&str] = &[
    "us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.",
];

/// The context window of a `:1m` or `[1m]` variant, in tokens.
const ONE_MILLION: u64 = 1_000_000;

#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    pub key: &'a str,
    pub entry: &'a CatalogueEntry,
    pub exact: bool,
    /// The typed id asks for the 1M-token context that `key` lacks.
    one_million: bool,
}

impl Found<'_> {
    /// The info for the typed id, with a 1M-token context window for a `:1m` variant.
    pub fn info(&self) -> ModelInfo {
        let mut info = self.entry.info.clone();
        if self.one_million {
            info.context_window = info.context_window.max(ONE_MILLION);
        }
        info
    }
}

/// The entry `typed` is, or is a variant of, in `table`: the id itself; the entry it varies,
/// taking off what providers add to a base id such as a region prefix, a date or `:1m`; the
/// newest dated variant of the id; the id in another letter case. `:free` stays on, as a free
/// model's price is not its base's.
pub fn find<'a>(table: &'a ModelTable, typed: &str) -> Option<Found<'a>> {
    let found = |key: &'a str, entry, exact| Found {
        key,
        entry,
        exact,
        one_million: !exact && wants_one_million(typed) && !wants_one_million(key),
    };
    if let Some((key, entry)) = table.models.get_key_value(typed) {
        return Some(found(key, entry, true));
    }
    for base in bases(typed) {
        if let Some((key, entry)) = table.models.get_key_value(&base) {
            return Some(found(key, entry, false));
        }
    }
    for base in std::iter::once(typed.to_owned()).chain(bases(typed)) {
        if let Some((key, entry)) = newest_variant_of(table, &base) {
            return Some(found(key, entry, false));
        }
    }
    table
        .models
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(typed))
        .map(|(key, entry)| found(key, entry, false))
}

/// A known id of `table` one edit away from `typed`, the table's default first.
pub fn suggest<'a>(table: &'a ModelTable, typed: &str) -> Option<&'a str> {
    let close: Vec<&str> = table
        .models
        .keys()
        .map(String::as_str)
        .filter(|k| edit_distance(k, typed) == 1)
        .collect();
    close
        .iter()
        .find(|k| table.default.as_deref() == Some(**k))
        .or(close.first())
        .copied()
}

/// Up to `n` known ids of `table` within two edits of `typed`, nearest first, never `typed`.
pub fn nearest<'a>(table: &'a ModelTable, typed: &str, n: usize) -> Vec<&'a str> {
    let mut close: Vec<(usize, &str)> = table
        .models
        .keys()
        .map(String::as_str)
        .filter(|k| *k != typed)
        .map(|k| (edit_distance(k, typed), k))
        .filter(|(d, _)| *d <= 2)
        .collect();
    close.sort_by_key(|(d, _)| *d);
    close.into_iter().take(n).map(|(_, k)| k).collect()
}

/// The id among `known` closest to `typed` within two edits, a change of case counting one.
pub fn closest<'a>(known: impl IntoIterator<Item = &'a str>, typed: &str) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| {
            let d = if k.eq_ignore_ascii_case(typed) {
                1
            } else {
                edit_distance(&k.to_ascii_lowercase(), &typed.to_ascii_lowercase())
            };
            (d, k)
        })
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn wants_one_million(id: &str) -> bool {
    id.ends_with(":1m") || id.ends_with("[1m]") || id.contains(":1m:")
}

fn bases(typed: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut frontier = vec![typed.to_owned()];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for id in &frontier {
            for base in strip_once(id) {
                if base.len() >= 2 && base != typed && !out.contains(&base) {
                    out.push(base.clone());
                    next.push(base);
                }
            }
        }
        frontier = next;
    }
    out
}

fn strip_once(id: &str) -> Vec<String> {
    let mut out = Vec::new();
    for prefix in CROSS_REGION_PREFIXES {
        if let Some(rest) = id.strip_prefix(prefix).filter(|r| r.contains('.')) {
            out.push(rest.to_owned());
        }
    }
    for suffix in [":thinking", ":fast", ":1m", "[1m]", "-latest", ":latest"] {
        if let Some(rest) = id.strip_suffix(suffix) {
            out.push(rest.to_owned());
        }
    }
    if let Some(rest) = strip_date(id) {
        out.push(rest.to_owned());
    }
    if let Some(rest) = strip_version(id) {
        out.push(rest.to_owned());
    }
    out
}

fn all_digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

/// `id` without a trailing date: `-YYYY-MM-DD`, `-YYYYMMDD`, `@YYYYMMDD`, `-YYMMDD`, `-MMDD`.
fn strip_date(id: &str) -> Option<&str> {
    // An id is the user's text: fuzzing found a non-ASCII character straddling the cut.
    if let Some((head, tail)) =
        (id.len().checked_sub(11).filter(|&at| at > 0)).and_then(|at| id.split_at_checked(at))
    {
        let parts: Vec<&str> = tail.split('-').collect();
        if let ["", y, m, d] = parts[..] {
            if all_digits(y, 4) && all_digits(m, 2) && all_digits(d, 2) {
                return Some(head);
            }
        }
    }
    let (head, tail) = id.rsplit_once(['-', '@'])?;
    let sep = id.as_bytes()[head.len()];
    let dated = match sep {
        b'@' => all_digits(tail, 8),
        _ => [8, 6, 4].iter().any(|n| all_digits(tail, *n)),
    };
    (dated && !head.is_empty()).then_some(head)
}

/// `id` without a trailing Bedrock version such as `-v1:0`, when it has a provider part.
fn strip_version(id: &str) -> Option<&str> {
    let (head, tail) = id.rsplit_once('-')?;
    let number = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    let pair = |s: &str| {
        s.split_once(':')
            .is_some_and(|(a, b)| number(a) && number(b))
    };
    let versioned = match tail.strip_prefix('v') {
        Some(v) => number(v) || pair(v),
        None => pair(tail),
    };
    (versioned && head.contains('.')).then_some(head)
}

/// The newest entry of `table` that is `base` with a date or version added.
fn newest_variant_of<'a>(
    table: &'a ModelTable,
    base: &str,
) -> Option<(&'a str, &'a CatalogueEntry)> {
    table
        .models
        .range::<str, _>((std::ops::Bound::Excluded(base), std::ops::Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(base))
        .filter(|(k, _)| {
            let k = k.as_str();
            strip_date(k) == Some(base) || strip_version(k) == Some(base)
        })
        .max_by(|a, b| a.0.cmp(b.0))
        .map(|(k, e)| (k.as_str(), e))
}

/// The optimal-string-alignment distance: swaps of neighbours count one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 2 {
        return 3;
    }
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Catalogue;

    fn key_of(provider: &str, region: Option<&str>, typed: &str) -> Option<String> {
        let table = Catalogue::builtin().table(provider, region).unwrap();
        find(table, typed).map(|f| f.key.to_owned())
    }

    #[test]
    fn variants_take_their_base_entry() {
        let cases = [
            ("openai-native", "gpt-5.1-2025-11-13", "gpt-5.1-2025-11-13"),
            ("openai-native", "gpt-5.2-2026-01-15", "gpt-5.2"),
            ("openai-native", "gpt-5", "gpt-5-2025-08-07"),
            ("openai-native", "gpt-5-mini", "gpt-5-mini-2025-08-07"),
            ("openai-native", "gpt-4o-2024-11-20", "gpt-4o"),
            (
                "anthropic",
                "claude-sonnet-4-6-20260201",
                "claude-sonnet-4-6",
            ),
            (
                "anthropic",
                "claude-sonnet-4-5",
                "claude-sonnet-4-5-20250929",
            ),
            (
                "anthropic",
                "claude-3-7-sonnet-latest",
                "claude-3-7-sonnet-20250219",
            ),
            (
                "anthropic",
                "claude-3-7-sonnet-20250219:thinking",
                "claude-3-7-sonnet-20250219",
            ),
            ("anthropic", "claude-opus-4-7:fast", "claude-opus-4-7"),
            (
                "anthropic",
                "claude-opus-4-6:1m:fast",
                "claude-opus-4-6:1m:fast",
            ),
            ("vertex", "claude-sonnet-4-6@20260201", "claude-sonnet-4-6"),
            (
                "vertex",
                "claude-opus-4-1@20250805",
                "claude-opus-4-1@20250805",
            ),
            (
                "bedrock",
                "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "anthropic.claude-sonnet-4-5-20250929-v1:0",
            ),
            (
                "bedrock",
                "global.anthropic.claude-sonnet-5",
                "anthropic.claude-sonnet-5",
            ),
            (
                "bedrock",
                "anthropic.claude-sonnet-5-v1:0",
                "anthropic.claude-sonnet-5",
            ),
            (
                "bedrock",
                "eu.anthropic.claude-opus-4-6-v1:0",
                "anthropic.claude-opus-4-6-v1",
            ),
            ("deepseek", "DeepSeek-Chat", "deepseek-chat"),
        ];
        for (provider, typed, want) in cases {
            assert_eq!(
                key_of(provider, None, typed).as_deref(),
                Some(want),
                "{provider} {typed}"
            );
        }
        assert_eq!(
            key_of("qwen", Some("international"), "qwen3-coder-plus-2025-07-22").as_deref(),
            Some("qwen3-coder-plus")
        );
    }

    #[test]
    fn unknown_ids_find_nothing() {
        for (provider, typed) in [
            ("openai-native", "gpt-7"),
            ("openai-native", "gpt-5.1-codex-ultra"),
            ("anthropic", "claude-sonnet"),
            ("anthropic", "2025"),
            ("deepseek", "deepseek-chat:free"),
        ] {
            assert_eq!(key_of(provider, None, typed), None, "{provider} {typed}");
        }
    }

    #[test]
    fn a_1m_variant_gets_a_1m_context() {
        let table = Catalogue::builtin().table("anthropic", None).unwrap();
        let f = find(table, "claude-opus-4-5-20251101:1m").unwrap();
        assert_eq!(f.key, "claude-opus-4-5-20251101");
        assert_eq!(f.info().context_window, 1_000_000);
        // An entry that already is the 1M variant keeps its own.
        let f = find(table, "claude-sonnet-4-6:1m").unwrap();
        assert!(f.exact);
        assert_eq!(f.info(), f.entry.info);
    }

    #[test]
    fn suggestions_are_one_edit_away() {
        let table = Catalogue::builtin().table("openai-native", None).unwrap();
        assert_eq!(suggest(table, "gtp-5.5"), Some("gpt-5.5"));
        assert_eq!(suggest(table, "gpt-5.5x"), Some("gpt-5.5"));
        assert_eq!(suggest(table, "gpt-4.1-nan"), Some("gpt-4.1-nano"));
        assert_eq!(suggest(table, "gpt-9000"), None);
        assert_eq!(nearest(table, "gpt-6-codex", 3)[0], "gpt-5-codex");
        assert!(!nearest(table, "gpt-5-codex", 3).contains(&"gpt-5-codex"));
        assert!(nearest(table, "an-entirely-other-name", 3).is_empty());
        assert_eq!(edit_distance("abc", "acb"), 1);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let ids = ["anthropic", "openai", "openai-native", "nousResearch"];
        assert_eq!(closest(ids, "antropic"), Some("anthropic"));
        assert_eq!(closest(ids, "nousresearch"), Some("nousResearch"));
        assert_eq!(closest(ids, "openai-nativ"), Some("openai-native"));
        assert_eq!(closest(ids, "mistral"), None);
    }

    #[test]
    fn date_and_version_shapes() {
        assert_eq!(strip_date("gpt-5.1-2025-11-13"), Some("gpt-5.1"));
        assert_eq!(strip_date("claude-x-20250929"), Some("claude-x"));
        assert_eq!(strip_date("claude-x@20250929"), Some("claude-x"));
        assert_eq!(
            strip_date("doubao-1-5-pro-256k-250115"),
            Some("doubao-1-5-pro-256k")
        );
        assert_eq!(strip_date("kimi-k2-0905"), Some("kimi-k2"));
        assert_eq!(strip_date("claude-x@2025"), None);
        assert_eq!(strip_date("gpt-4o"), None);
        // A character straddling the 11th byte from the end (issue 27's config_toml finding).
        assert_eq!(strip_date("aé1234567890"), None);
        assert_eq!(strip_date("gpt…-2025-11-13"), Some("gpt…"));
        assert_eq!(strip_date("qwen3-235b"), None);
        assert_eq!(strip_version("anthropic.x-v1:0"), Some("anthropic.x"));
        assert_eq!(strip_version("anthropic.x-v2"), Some("anthropic.x"));
        assert_eq!(
            strip_version("openai.gpt-oss-120b-1:0"),
            Some("openai.gpt-oss-120b")
        );
        assert_eq!(strip_version("gpt-oss-120b"), None);
        assert_eq!(strip_version("gpt-5"), None);
    }
}
