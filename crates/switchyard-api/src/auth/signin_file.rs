//! Sign-ins another tool keeps in a file: finding, reading and refreshing them, and writing
//! the refreshed tokens back. Errors name the file, never a token.
//! Spec: R4.2, R10.5.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorKind};
use crate::transport::HttpClient;

/// Looks up an environment variable: `std::env::var`, or a test's or a check's own.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub(crate) fn expand_home(path: &str, env: Env<'_>) -> PathBuf {
    match (
        path.strip_prefix("~/"),
        env("HOME").filter(|h| !h.is_empty()),
    ) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

pub(crate) fn in_home(relative: &str, env: Env<'_>) -> Option<PathBuf> {
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(relative))
}

/// Where one handler finds another tool's sign-in and refreshes it, one at a time.
pub(crate) struct SigninSource {
    path: Option<PathBuf>,
    pub(crate) token_url: String,
    pub(crate) client: Arc<HttpClient>,
    pub(crate) refreshing: tokio::sync::Mutex<()>,
}

impl SigninSource {
    pub(crate) fn new(path: Option<PathBuf>, token_url: &str, client: Arc<HttpClient>) -> Self {
        Self {
            path,
            token_url: token_url.to_owned(),
            client,
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// The file, or an [`auth_error`]'s sentence saying there is no home folder to find it in.
    pub(crate) fn path(&self, provider: &str, sign_in: &str) -> Result<&PathBuf, String> {
        self.path.as_ref().ok_or_else(|| {
            format!(
                "no home folder to find the sign-in in: set `credentials_file` under [providers.{provider}]; {sign_in}"
            )
        })
    }
}

pub(crate) fn auth_error(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorKind::Auth, message)
}

/// Reads and parses the sign-in file at `path`; the error is an [`auth_error`]'s sentence,
/// `missing` when there is no file.
pub(crate) fn read<T: DeserializeOwned>(path: &Path, missing: &str) -> Result<T, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("no sign-in found at {}: {missing}", path.display()));
        }
        Err(e) => {
            return Err(format!(
                "cannot read the sign-in file {} ({e}); check its permissions",
                path.display()
            ));
        }
    };
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "the sign-in file {} is not in the expected shape (line {}, column {}): {missing}",
            path.display(),
            e.line(),
            e.column()
        )
    })
}

/// Writes `value` to `path` pretty-printed as the tools do, atomically and readable by the
/// user only. Both tools' refresh tokens are single-use, so a refresh not saved signs the user
/// out of their CLI, and a crash must leave the old or the new file, never half of one.
pub(crate) fn write_atomically<T: Serialize>(path: &Path, value: &T) -> Result<(), String> {
    let failed = |e: std::io::Error| {
        format!(
            "the refreshed sign-in could not be saved to {} ({e}); sign in again with its CLI if the next request is refused",
            path.display()
        )
    };
    let text = serde_json::to_string_pretty(value).map_err(|e| failed(std::io::Error::other(e)))?;
    let folder = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "signin".to_owned(), |n| n.to_string_lossy().into_owned());
    let temp = crate::private_file::unique_path(folder, &format!(".{name}.switchyard"), "tmp");
    let written = crate::private_file::create(&temp, text.as_bytes());
    let renamed = written.and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = renamed {
        let _ = std::fs::remove_file(&temp);
        return Err(failed(e));
    }
    Ok(())
}

/// An exclusive lock file next to a sign-in file, as the Qwen CLI takes before it refreshes.
pub(crate) struct LockFile(PathBuf);

/// Age past which a lock file is a crashed holder's: the Qwen CLI's `LOCK_TIMEOUT_MS`.
const STALE_LOCK: Duration = Duration::from_secs(10);

impl LockFile {
    /// Takes the lock at `path`, waiting for another holder for at most about 12 s.
    pub(crate) async fn acquire(path: PathBuf) -> Result<Self, ApiError> {
        let mut wait = Duration::from_millis(100);
        let mut waited = Duration::ZERO;
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut file) => {
                    let _ = write!(file, "switchyard {}", std::process::id());
                    return Ok(Self(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > STALE_LOCK);
                    if stale {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    if waited > STALE_LOCK + Duration::from_secs(2) {
                        return Err(auth_error(format!(
                            "another program holds the sign-in lock {} and does not let go; try again",
                            path.display()
                        )));
                    }
                    tokio::time::sleep(wait).await;
                    waited += wait;
                    wait = (wait * 3 / 2).min(Duration::from_secs(1));
                }
                Err(e) => {
                    return Err(auth_error(format!(
                        "cannot create the sign-in lock {} ({e}); check the folder's permissions",
                        path.display()
                    )));
                }
            }
        }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub(crate) fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `secs` since the Unix epoch as RFC 3339 UTC with microseconds, as Codex's `last_refresh`.
pub(crate) fn rfc3339(secs: u64, micros: u32) -> String {
    let t = crate::time::utc(i64::try_from(secs).unwrap_or(i64::MAX));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

pub(crate) fn rfc3339_now() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs(), now.subsec_micros())
}

/// Seconds since the Unix epoch of an RFC 3339 time, fractions dropped. Its fields are fixed
/// width, so a crafted file cannot overflow the arithmetic.
pub(crate) fn parse_rfc3339(text: &str) -> Option<u64> {
    let at = crate::retry_after::parse_rfc3339(text)?;
    Some(at.duration_since(UNIX_EPOCH).ok()?.as_secs())
}

/// Panics unless `file` written back after a refresh keeps every non-null field of `text`
/// with its value, for the fuzz target `signin_file`: a refresh must not lose a CLI's data.
#[cfg(feature = "fuzzing")]
pub(crate) fn assert_written_back<T: Serialize>(file: &T, text: &str) {
    fn kept(read: &serde_json::Value, written: &serde_json::Value) -> bool {
        match (read, written) {
            (serde_json::Value::Object(r), serde_json::Value::Object(w)) => r
                .iter()
                .all(|(k, v)| v.is_null() || w.get(k).is_some_and(|x| kept(v, x))),
            _ => read == written,
        }
    }
    let (Ok(read), Ok(written)) = (
        serde_json::from_str::<serde_json::Value>(text),
        serde_json::to_value(file),
    ) else {
        panic!("a sign-in file that parsed did not read as JSON or write back");
    };
    assert!(
        kept(&read, &written),
        "a sign-in file written back lost or changed a field: {written}"
    );
}

/// The claims of a JWT, unverified: only to read when it expires and whose account it is.
pub(crate) fn jwt_claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    serde_json::from_slice(&base64url_decode(payload)?).ok()
}

fn base64url_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xFF).ok()?);
        }
    }
    Some(out)
}

/// The sentence for an OAuth token endpoint's refusal: its JSON `error` and
/// `error_description`, never the body itself, which may echo what it was sent.
pub(crate) fn refusal(status: u16, body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let code = v.get("error").and_then(|e| {
        e.as_str()
            .or_else(|| e.get("code").and_then(serde_json::Value::as_str))
    });
    let text = v
        .get("error_description")
        .and_then(serde_json::Value::as_str)
        .or_else(|| {
            v.get("error")
                .and_then(|e| e.get("message"))
                .and_then(serde_json::Value::as_str)
        });
    match (code, text) {
        (Some(c), Some(t)) => format!("HTTP {status}, {c}: {t}"),
        (Some(c), None) => format!("HTTP {status}, {c}"),
        (None, Some(t)) => format!("HTTP {status}: {t}"),
        (None, None) => format!("HTTP {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            rfc3339(1_759_321_496, 123_456),
            "2025-10-01T12:24:56.123456Z"
        );
        assert_eq!(rfc3339(951_782_400, 0), "2000-02-29T00:00:00.000000Z");
        assert_eq!(
            parse_rfc3339("2025-10-01T12:24:56.123456789Z"),
            Some(1_759_321_496)
        );
        assert_eq!(
            parse_rfc3339("2025-10-01T14:24:56+02:00"),
            Some(1_759_321_496)
        );
        assert_eq!(parse_rfc3339("2000-02-29T00:00:00Z"), Some(951_782_400));
        assert_eq!(parse_rfc3339("yesterday"), None);
        // Digits past a field's width, and offsets past a day, are no time: they overflowed
        // the arithmetic of the reader this one replaced (issue 27).
        for crafted in [
            "99999999999999999-01-01T00:00:00Z",
            "2025-10-01T12:24:56+9999999999999999:00",
            "2025-10-01T12:24:56-99:00",
            "2025-13-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(crafted), None, "{crafted}");
        }
    }

    #[test]
    fn jwt_claims_are_read_without_padding() {
        // {"exp":1700000000,"sub":"u"}
        let token = "eyJhbGciOiJub25lIn0.eyJleHAiOjE3MDAwMDAwMDAsInN1YiI6InUifQ.sig";
        let claims = jwt_claims(token).unwrap();
        assert_eq!(claims["exp"], 1_700_000_000);
        assert!(jwt_claims("not-a-jwt").is_none());
    }

    #[test]
    fn refusals_name_the_oauth_error_only() {
        assert_eq!(
            refusal(
                400,
                br#"{"error":"invalid_grant","error_description":"Refresh token expired"}"#
            ),
            "HTTP 400, invalid_grant: Refresh token expired"
        );
        assert_eq!(refusal(502, b"<html>bad gateway</html>"), "HTTP 502");
    }

    #[test]
    fn atomic_writes_replace_the_file_with_mode_0600() {
        let dir =
            std::env::temp_dir().join(format!("switchyard-signin-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("creds.json");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, &serde_json::json!({"a": 1})).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\n  \"a\": 1\n}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
