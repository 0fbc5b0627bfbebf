//! Scripted replies and the loader for `tests/cases/*.meta.json`.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::watch;

use crate::HttpResponse;

/// A point that replies wait at until the test opens it: a barrier between the server's
/// connections and the test, with no timing involved. Clones share one gate.
///
/// Give it to replies with [`Reply::gate_at`]; [`Gate::wait_until_reached`] tells the test when
/// that many replies are waiting there (so that many clients are mid-stream at once), and
/// [`Gate::open`] lets them all go on. An open gate stays open.
#[derive(Clone, Debug)]
pub struct Gate {
    state: std::sync::Arc<watch::Sender<GateState>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct GateState {
    open: bool,
    /// How many replies have reached the gate so far (whether or not they have passed it).
    reached: usize,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        Self {
            state: std::sync::Arc::new(watch::Sender::new(GateState::default())),
        }
    }

    /// Opens the gate: every reply waiting there goes on, and later ones do not stop.
    pub fn open(&self) {
        self.state.send_modify(|s| s.open = true);
    }

    /// How many replies have reached the gate so far.
    pub fn reached(&self) -> usize {
        self.state.borrow().reached
    }

    /// Resolves once `n` replies have reached the gate (at once, if they already have).
    pub async fn wait_until_reached(&self, n: usize) {
        let mut rx = self.state.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|s| s.reached >= n).await;
    }

    /// Called by the server: counts this reply in and waits until the gate is open.
    pub(crate) async fn pass(&self) {
        let mut rx = self.state.subscribe();
        self.state.send_modify(|s| s.reached += 1);
        let _ = rx.wait_for(|s| s.open).await;
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// How the BODY of a reply is cut into separate socket writes (the head is always one write).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// The whole body in one write.
    Whole,
    /// Pieces of this many bytes (the last may be shorter). `Every(0)` behaves like `Whole`.
    Every(usize),
    /// Cut at these byte offsets inside the body. Offsets are sorted and deduplicated; `0` and
    /// offsets at or past the end of the body are ignored.
    At(Vec<usize>),
}

/// What happens after the last body byte has been written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AfterBody {
    /// Close the connection gracefully (FIN), or keep it alive for the next request when the
    /// response is self-delimiting (see the crate docs).
    Close,
    /// Keep the socket open and silent for this long, then close it (FIN). Ends early if the
    /// client closes its side.
    HoldOpen(Duration),
    /// Abort the connection with `SO_LINGER` 0 so that the peer sees a TCP reset, once the
    /// peer has acknowledged the bytes sent (bounded wait; see the crate docs, "Resets").
    Reset,
}

/// One scripted reply.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The response, sent byte for byte.
    pub response: HttpResponse,
    /// How the body is cut into socket writes.
    pub split: Split,
    /// What happens after the last body byte.
    pub after_body: AfterBody,
    /// Pause after the request has been read and recorded, before the head is written.
    pub delay_before: Duration,
    /// Pause between consecutive body writes (after a `tokio::task::yield_now`).
    pub write_gap: Duration,
    /// Pause this long after this many body bytes have been written (`0` = after the head).
    pub stall_at: Option<(usize, Duration)>,
    /// Wait at this gate once this many body bytes have been written (`0` = after the head),
    /// after any stall there, until the test opens it.
    pub gate_at: Option<(usize, Gate)>,
    /// Close the connection (no more bytes) after this many body bytes (`0` = right after the
    /// head). The close is a FIN, or a reset when `after_body` is [`AfterBody::Reset`]. An offset
    /// past the end of the body never triggers, but the connection is still closed after the
    /// reply instead of being kept alive.
    pub drop_at: Option<usize>,
}

impl Reply {
    /// A reply that sends `response` whole, immediately, then closes (or keeps the connection
    /// alive if the response is self-delimiting).
    pub fn new(response: HttpResponse) -> Self {
        Self {
            response,
            split: Split::Whole,
            after_body: AfterBody::Close,
            delay_before: Duration::ZERO,
            write_gap: Duration::ZERO,
            stall_at: None,
            gate_at: None,
            drop_at: None,
        }
    }

    /// Sets how the body is cut into socket writes.
    pub fn split(mut self, split: Split) -> Self {
        self.split = split;
        self
    }

    /// Sets what happens after the last body byte.
    pub fn after_body(mut self, after_body: AfterBody) -> Self {
        self.after_body = after_body;
        self
    }

    /// Sets the pause before the head is written.
    pub fn delay_before(mut self, delay: Duration) -> Self {
        self.delay_before = delay;
        self
    }

    /// Sets the pause between consecutive body writes.
    pub fn write_gap(mut self, gap: Duration) -> Self {
        self.write_gap = gap;
        self
    }

    /// Pauses for `pause` once `body_bytes` body bytes have been written.
    pub fn stall_at(mut self, body_bytes: usize, pause: Duration) -> Self {
        self.stall_at = Some((body_bytes, pause));
        self
    }

    /// Waits at `gate` once `body_bytes` body bytes have been written, until the test opens it.
    pub fn gate_at(mut self, body_bytes: usize, gate: &Gate) -> Self {
        self.gate_at = Some((body_bytes, gate.clone()));
        self
    }

    /// Closes the connection once `body_bytes` body bytes have been written.
    pub fn drop_at(mut self, body_bytes: usize) -> Self {
        self.drop_at = Some(body_bytes);
        self
    }

    /// Body offsets at which a write ends: the split points, the stall, gate and drop points,
    /// and the end of the body; sorted, unique, all in `1..=len`.
    pub(crate) fn write_ends(&self) -> Vec<usize> {
        let len = self.response.body.len();
        let mut ends = BTreeSet::new();
        match &self.split {
            Split::Whole | Split::Every(0) => {}
            Split::Every(n) => ends.extend((*n..len).step_by(*n)),
            Split::At(offsets) => ends.extend(offsets.iter().copied()),
        }
        ends.extend(self.stall_at.map(|(at, _)| at));
        ends.extend(self.gate_at.as_ref().map(|(at, _)| *at));
        ends.extend(self.drop_at);
        ends.insert(len);
        ends.into_iter().filter(|&e| e > 0 && e <= len).collect()
    }
}

impl From<HttpResponse> for Reply {
    fn from(response: HttpResponse) -> Self {
        Self::new(response)
    }
}

/// The replay directives of a `tests/cases/{id}.meta.json`.
#[derive(Deserialize)]
struct CaseMeta {
    #[serde(default)]
    sequence: Vec<String>,
    #[serde(default)]
    splits: Option<Vec<usize>>,
    #[serde(default)]
    after_body: Option<String>,
    #[serde(default)]
    hold_open_seconds: Option<f64>,
}

/// Hold duration when a meta.json says `hold_open` without `hold_open_seconds`.
const DEFAULT_HOLD_OPEN: Duration = Duration::from_secs(600);

/// The scripted reply sequence of case `id` (`"C33"`; a trailing `.http` is ignored): request 1
/// gets element 0, request 2 element 1, and so on; [`crate::MockServer`] repeats the last one.
///
/// Without `tests/cases/{id}.meta.json` this is the single reply `{id}.http`. With it:
///
/// * `sequence` lists the files for request 1, 2, 3 … (a missing `.http` suffix is added);
///   without `sequence` the list is just `{id}.http`.
/// * `splits` (byte offsets inside the body → [`Split::At`]), `after_body`
///   (`close` | `hold_open` | `reset`) and `hold_open_seconds` (default 600) apply to the
///   entries that serve the case's own file `{id}.http` — if no entry does, to the first entry.
///   The other entries (typically the successful retry, e.g. `C02c.http` after `C33.http`) are
///   plain replies that close normally.
/// * `notes` and unknown keys are ignored.
///
/// # Panics
///
/// If a file is missing, the meta.json is not valid JSON of that shape, or `after_body` has an
/// unknown value.
pub fn case_replies(id: &str) -> Vec<Reply> {
    case_replies_in(&crate::test_data_dir().join("cases"), id)
}

/// [`case_replies`] for an explicit cases directory.
fn case_replies_in(cases: &Path, id: &str) -> Vec<Reply> {
    let id = id.strip_suffix(".http").unwrap_or(id);
    let meta_path = cases.join(format!("{id}.meta.json"));
    let own_file = format!("{id}.http");
    if !meta_path.exists() {
        return vec![Reply::new(HttpResponse::load(cases.join(own_file)))];
    }
    let meta = load_meta(&meta_path);

    let files: Vec<String> = if meta.sequence.is_empty() {
        vec![own_file.clone()]
    } else {
        meta.sequence
            .iter()
            .map(|f| {
                if f.ends_with(".http") {
                    f.clone()
                } else {
                    format!("{f}.http")
                }
            })
            .collect()
    };

    let after_body = match meta.after_body.as_deref() {
        None | Some("close") => AfterBody::Close,
        Some("hold_open") => AfterBody::HoldOpen(
            meta.hold_open_seconds
                .map(Duration::from_secs_f64)
                .unwrap_or(DEFAULT_HOLD_OPEN),
        ),
        Some("reset") => AfterBody::Reset,
        Some(other) => panic!(
            "{}: unknown after_body {other:?} (expected close, hold_open or reset)",
            meta_path.display()
        ),
    };
    let split = match meta.splits {
        Some(offsets) if !offsets.is_empty() => Split::At(offsets),
        _ => Split::Whole,
    };

    let targets_own = files.contains(&own_file);
    files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let reply = Reply::new(HttpResponse::load(cases.join(file)));
            let directed = if targets_own {
                *file == own_file
            } else {
                i == 0
            };
            if directed {
                reply.split(split.clone()).after_body(after_body.clone())
            } else {
                reply
            }
        })
        .collect()
}

fn load_meta(path: &Path) -> CaseMeta {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read case meta {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("malformed case meta {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(body: &str) -> Reply {
        Reply::new(HttpResponse::sse(body))
    }

    #[test]
    fn write_ends_for_each_split() {
        let r = reply("0123456789");
        assert_eq!(r.write_ends(), vec![10]);
        assert_eq!(r.clone().split(Split::Every(0)).write_ends(), vec![10]);
        assert_eq!(
            r.clone().split(Split::Every(3)).write_ends(),
            vec![3, 6, 9, 10]
        );
        assert_eq!(r.clone().split(Split::Every(5)).write_ends(), vec![5, 10]);
        assert_eq!(r.clone().split(Split::Every(50)).write_ends(), vec![10]);
        assert_eq!(
            r.clone()
                .split(Split::At(vec![7, 0, 2, 7, 10, 99]))
                .write_ends(),
            vec![2, 7, 10]
        );
        assert_eq!(
            r.clone()
                .stall_at(4, Duration::from_secs(1))
                .drop_at(8)
                .write_ends(),
            vec![4, 8, 10]
        );
        assert_eq!(r.clone().gate_at(3, &Gate::new()).write_ends(), vec![3, 10]);
        assert!(reply("").write_ends().is_empty());
    }

    /// A scratch cases directory with three responses and one meta.json.
    fn scratch_cases(meta: &str) -> std::path::PathBuf {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "switchyard-testkit-cases-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, body) in [("X1", "one"), ("X1ok", "ok"), ("X2", "two")] {
            let raw = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            std::fs::write(dir.join(format!("{name}.http")), raw).unwrap();
        }
        std::fs::write(dir.join("X1.meta.json"), meta).unwrap();
        dir
    }

    #[test]
    fn meta_directives_apply_to_the_cases_own_file() {
        let dir = scratch_cases(
            r#"{"sequence":["X1.http","X1","X1ok.http"],"splits":[1,2],
                "after_body":"hold_open","hold_open_seconds":2.5,"notes":"n","extra":1}"#,
        );
        let replies = case_replies_in(&dir, "X1.http");
        let bodies: Vec<&[u8]> = replies.iter().map(|r| &r.response.body[..]).collect();
        assert_eq!(bodies, [&b"one"[..], b"one", b"ok"]);
        for r in &replies[..2] {
            assert_eq!(r.split, Split::At(vec![1, 2]));
            assert_eq!(
                r.after_body,
                AfterBody::HoldOpen(Duration::from_millis(2500))
            );
        }
        assert_eq!(replies[2].split, Split::Whole);
        assert_eq!(replies[2].after_body, AfterBody::Close);
        // Without meta: the single file.
        let plain = case_replies_in(&dir, "X2");
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].response.body, b"two");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn meta_without_the_own_file_targets_the_first_entry() {
        let dir = scratch_cases(r#"{"sequence":["X2","X1ok"],"after_body":"reset"}"#);
        let replies = case_replies_in(&dir, "X1");
        assert_eq!(replies[0].response.body, b"two");
        assert_eq!(replies[0].after_body, AfterBody::Reset);
        assert_eq!(replies[1].after_body, AfterBody::Close);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn hold_open_defaults_to_600_seconds() {
        let dir = scratch_cases(r#"{"after_body":"hold_open"}"#);
        let replies = case_replies_in(&dir, "X1");
        assert_eq!(replies.len(), 1);
        assert_eq!(
            replies[0].after_body,
            AfterBody::HoldOpen(Duration::from_secs(600))
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    #[should_panic(expected = "unknown after_body \"explode\"")]
    fn unknown_after_body_panics() {
        let dir = scratch_cases(r#"{"after_body":"explode"}"#);
        case_replies_in(&dir, "X1");
    }

    #[test]
    #[should_panic(expected = "malformed case meta")]
    fn malformed_meta_panics() {
        let dir = scratch_cases(r#"{"sequence":"X1"}"#);
        case_replies_in(&dir, "X1");
    }

    #[test]
    fn builders_set_fields() {
        let r = Reply::from(HttpResponse::json(200, "{}"))
            .split(Split::Every(2))
            .after_body(AfterBody::Reset)
            .delay_before(Duration::from_millis(5))
            .write_gap(Duration::from_millis(6))
            .stall_at(1, Duration::from_millis(7))
            .drop_at(2);
        assert_eq!(r.split, Split::Every(2));
        assert_eq!(r.after_body, AfterBody::Reset);
        assert_eq!(r.delay_before, Duration::from_millis(5));
        assert_eq!(r.write_gap, Duration::from_millis(6));
        assert_eq!(r.stall_at, Some((1, Duration::from_millis(7))));
        assert_eq!(r.drop_at, Some(2));
    }
}
