//! Test support for the fast readings of `fast_json` (issue 17): the recorded events of the
//! repository, changed copies of them, and the check that a provider's fast reading maps each
//! one exactly as its general `serde_json::Value` path does.

use serde_json::Value;

use crate::error::ApiError;
use crate::stream::ApiStreamChunk;
use crate::transport::EventParser;
use crate::wire::sse::{SseEvent, SseEventRef};

/// A provider parser with two readings of an SSE event: the fast one (`on_event`) and the
/// general path alone.
pub(crate) trait TwoReadings: EventParser<Event = SseEvent> {
    /// A parser as the provider makes it.
    fn fresh() -> Self;
    /// Maps `event` through the general path only, as `on_event` does when the fast reading
    /// gives up.
    fn general(&mut self, event: SseEventRef<'_>, out: &mut Vec<Result<ApiStreamChunk, ApiError>>);
}

/// One event through both readings, of two parsers fed alike: what each mapped, as text, with
/// the counters of made-up tool-call ids set aside (each parser draws its own).
fn both_ways<P: TwoReadings>(
    fast: &mut P,
    general: &mut P,
    name: &str,
    data: &str,
) -> (String, String) {
    let event = SseEventRef {
        event: name,
        data,
        id: None,
        retry: None,
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    fast.on_event(event, &mut a);
    general.general(event, &mut b);
    (
        generated_ids_alike(format!("{a:?}")),
        generated_ids_alike(format!("{b:?}")),
    )
}

/// `text` with the counter of every made-up tool-call id replaced by `N`.
fn generated_ids_alike(text: String) -> String {
    let sample = crate::stream::generated_tool_call_id();
    let prefix = &sample[..=sample.rfind('_').unwrap()];
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at + prefix.len()]);
        out.push('N');
        rest = rest[at + prefix.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// Every recorded event, and every changed copy of it, maps alike through both readings, in
/// stream order, and so does the end of each stream.
pub(crate) fn assert_agreement_on_recorded_events<P: TwoReadings>() {
    let mut compared = 0;
    for (file, passes) in recorded_events() {
        for (pass, events) in passes.iter().enumerate() {
            let (mut fast, mut general) = (P::fresh(), P::fresh());
            for (name, data) in events {
                let (a, b) = both_ways(&mut fast, &mut general, name, data);
                assert_eq!(a, b, "{file} pass {pass}: {data}");
                compared += 1;
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            fast.on_end(&mut a);
            general.on_end(&mut b);
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "{file} pass {pass}: end"
            );
        }
    }
    assert!(compared > 1000, "only {compared} events");
}

/// One recorded event with one byte changed (`mutate`), after the events before it as recorded,
/// maps alike through both readings.
pub(crate) fn agreement_after_one_changed_byte<P: TwoReadings>(
    file: proptest::sample::Index,
    event: proptest::sample::Index,
    at: proptest::sample::Index,
    edit: u8,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let files = recorded_events();
    let (path, passes) = &files[file.index(files.len())];
    let events = &passes[0];
    let last = event.index(events.len());
    let (mut fast, mut general) = (P::fresh(), P::fresh());
    for (i, (name, data)) in events[..=last].iter().enumerate() {
        let data = if i == last {
            mutate(data, at, edit)
        } else {
            data.clone()
        };
        let (a, b) = both_ways(&mut fast, &mut general, name, &data);
        proptest::prop_assert_eq!(a, b, "{} event {}: {}", path, i, data);
    }
    Ok(())
}

/// One pass over a recorded stream, as `(event name, data)` pairs.
pub(crate) type RecordedPass = Vec<(String, String)>;

/// Every `data:` payload of the repository's recorded streams
/// (`tests/cases/*.http`, `tests/fixtures/*.http`), per file in order, with the `event:` name
/// before it (`message` when none), and the payloads changed in ways the fast readings must
/// agree with serde on: re-serialized with whitespace and sorted keys, cut in half, a member
/// written twice, a `\u` escape in every string value that follows a `"text":`-like key.
pub(crate) fn recorded_events() -> &'static [(String, Vec<RecordedPass>)] {
    static EVENTS: std::sync::OnceLock<Vec<(String, Vec<RecordedPass>)>> =
        std::sync::OnceLock::new();
    EVENTS.get_or_init(read_recorded_events)
}

fn read_recorded_events() -> Vec<(String, Vec<RecordedPass>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let mut files = Vec::new();
    for dir in ["cases", "fixtures"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "http"))
            .collect();
        paths.sort();
        for path in paths {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            let mut events = Vec::new();
            let mut name = "message".to_owned();
            for line in text.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    name = e.trim().to_owned();
                } else if let Some(d) = line.strip_prefix("data:") {
                    let d = d.strip_prefix(' ').unwrap_or(d);
                    events.push((name.clone(), d.to_owned()));
                    name = "message".to_owned();
                }
            }
            if events.is_empty() {
                continue;
            }
            let variants: Vec<fn(&str) -> String> = vec![
                str::to_owned,
                |d| match serde_json::from_str::<Value>(d) {
                    Ok(v) => serde_json::to_string_pretty(&v).unwrap(),
                    Err(_) => d.to_owned(),
                },
                |d| {
                    let mut cut = d.len() / 2;
                    while !d.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    d[..cut].to_owned()
                },
                |d| d.replacen('{', r#"{"type":"x","choices":null,"delta":null,"#, 1),
                |d| {
                    d.replace(r#"text":""#, r#"text":"\u0041"#)
                        .replace(r#"content":""#, r#"content":"\u00e9"#)
                        .replace(r#"thinking":""#, r#"thinking":"\ud83d\ude00"#)
                        .replace(r#"arguments":""#, r#"arguments":"\u0022"#)
                },
            ];
            let passes = variants
                .iter()
                .map(|f| events.iter().map(|(n, d)| (n.clone(), f(d))).collect())
                .collect();
            files.push((path.display().to_string(), passes));
        }
    }
    files
}

/// A one-byte change of `doc`: a byte removed, or one of JSON's structural bytes
/// put in.
pub(crate) fn mutate(doc: &str, at: proptest::sample::Index, edit: u8) -> String {
    let mut bytes = doc.as_bytes().to_vec();
    if bytes.is_empty() {
        return String::new();
    }
    let at = at.index(bytes.len());
    match edit % 13 {
        0 => {
            bytes.remove(at);
        }
        n => bytes.insert(at, b"\"{}[],:0-e.\\"[usize::from(n) - 1]),
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
