//! The one classification function, and whether waiting can fix a failure, with every
//! provider's error wordings in one place.
//! Spec: R7, R7.2, R7.3, R7.4, R7.5.

use std::time::Duration;

use super::kind::ErrorKind;

/// Maps a failure to its [`ErrorKind`] from its HTTP status, the provider's error code and its
/// message; unlike the reference, a bare `invalid_request_error` is no overflow, nor 404 or 413
/// auth. `status` is `None` or a 2xx for an error event inside a 200 stream, where a numeric
/// `code` stands in for it. The first match wins:
/// 1. spend limits, whatever the status;
/// 2. quota and credits, before the code, because quotas arrive as 429s;
/// 3. a specific error code;
/// 4. the HTTP status;
/// 5. context-window and bad-credential wordings;
/// 6. defaults: 4xx invalid request, 5xx server, else by wording.
pub fn classify(status: Option<u16>, code: Option<&str>, message: &str) -> ErrorKind {
    classify_with_hint(status, code, message, None)
}

/// The longest reset after which a limit worded "per day" is still a rate limit. OpenAI's
/// requests-per-day limit rolls, freeing a request every few seconds; a spent quota resets once.
const ROLLING_WINDOW_MAX_RESET: Duration = Duration::from_secs(3600);

/// [`classify`], with the server's `retry_after` hint: a rate limit worded with a long window
/// is a spent quota unless the hint says it rolls within [`ROLLING_WINDOW_MAX_RESET`].
pub(super) fn classify_with_hint(
    status: Option<u16>,
    code: Option<&str>,
    message: &str,
    retry_after: Option<Duration>,
) -> ErrorKind {
    let code = normalize_code(code.unwrap_or(""));
    let msg = strip_urls(&message.to_ascii_lowercase());
    let status = status
        .filter(|s| !(200..300).contains(s))
        .or_else(|| code.parse::<u16>().ok().filter(|c| (400..600).contains(c)));
    let code_kind = kind_from_code(&code, &msg);
    let rate_class =
        status == Some(429) || code_kind == Some(CodeKind::Definite(ErrorKind::RateLimited));

    if code.contains("spend_limit")
        || msg.contains("spend limit")
        || msg.contains("spending limit")
        || msg.contains("budget has been exceeded")
    {
        return ErrorKind::SpendLimit;
    }
    let rolling = retry_after.is_some_and(|d| d <= ROLLING_WINDOW_MAX_RESET);
    if is_quota(&code, &msg, status, rate_class && !rolling) {
        return ErrorKind::QuotaExceeded;
    }
    if let Some(CodeKind::Definite(kind)) = code_kind {
        return kind;
    }
    match status {
        Some(401) => return ErrorKind::Auth,
        Some(402) => return ErrorKind::QuotaExceeded,
        Some(403) => {
            return if is_entitlement(&msg) {
                ErrorKind::Entitlement
            } else if is_content_blocked(&msg) {
                ErrorKind::ContentBlocked
            } else {
                ErrorKind::Auth
            };
        }
        Some(408) => return ErrorKind::Timeout,
        Some(413) => return ErrorKind::ContextWindowExceeded,
        Some(429) => return ErrorKind::RateLimited,
        Some(503) | Some(529) => return ErrorKind::Overloaded,
        _ => {}
    }
    if is_context_window(&msg, status) {
        return ErrorKind::ContextWindowExceeded;
    }
    if is_bad_credentials(&msg) {
        return ErrorKind::Auth;
    }
    if is_entitlement(&msg) && matches!(status, Some(400..=499) | None) {
        return ErrorKind::Entitlement;
    }
    match status {
        Some(s) if (400..500).contains(&s) => ErrorKind::InvalidRequest,
        Some(s) if s >= 500 => ErrorKind::Server,
        // Without a status, the words decide where they say what happened.
        _ if msg.contains("overloaded") => ErrorKind::Overloaded,
        _ if says_rate_limited(&msg) => ErrorKind::RateLimited,
        _ if says_unauthenticated(&msg) => ErrorKind::Auth,
        _ if code_kind == Some(CodeKind::Generic) => ErrorKind::InvalidRequest,
        _ => ErrorKind::Server,
    }
}

/// Whether a failure is the provider's "this model does not exist": `model_not_found`, a 404
/// or not-found code that speaks of the model, or a wording saying `model_id` is not a model.
/// Spec: R2.5.
pub fn is_model_not_found(
    status: Option<u16>,
    code: Option<&str>,
    message: &str,
    model_id: &str,
) -> bool {
    let code = normalize_code(code.unwrap_or(""));
    let msg = message.to_ascii_lowercase();
    let id = model_id.trim().to_ascii_lowercase();
    let names_id = !id.is_empty() && msg.contains(&id);
    if code == "model_not_found" {
        return true;
    }
    let not_found = status == Some(404)
        || matches!(
            code.as_str(),
            "not_found_error" | "not_found" | "resourcenotfoundexception"
        );
    if not_found && (names_id || msg.contains("model")) {
        return true;
    }
    names_id
        && [
            "not a valid model",
            "model not found",
            "unknown model",
            "does not exist",
            "no such model",
            "not found",
        ]
        .iter()
        .any(|w| msg.contains(w))
}

fn says_rate_limited(msg: &str) -> bool {
    [
        "quota exceeded",
        "rate limit",
        "rate_limit",
        "ratelimit",
        "too many requests",
        "throttl",
        "resource exhausted",
        "resource_exhausted",
        "status code 429",
    ]
    .iter()
    .any(|w| msg.contains(w))
}

fn says_unauthenticated(msg: &str) -> bool {
    names_a_valid_key(msg)
        || [
            "unauthorized",
            "unauthenticated",
            "authentication failed",
            "authentication_failed",
            "authentication error",
            "invalid_api_key",
            "invalid api key",
            "invalid access token",
            "not authenticated",
            "status code 401",
        ]
        .iter()
        .any(|w| msg.contains(w))
}

/// The reference's `/(?:in)?valid[-_ ]?(?:api )?(?:token|key)/` on a lower-case message, but
/// not in a message about JSON, where "invalid token" is a parse error.
fn names_a_valid_key(msg: &str) -> bool {
    !msg.contains("json")
        && msg.match_indices("valid").any(|(at, w)| {
            let rest = &msg[at + w.len()..];
            let rest = rest.strip_prefix(['-', '_', ' ']).unwrap_or(rest);
            let rest = rest.strip_prefix("api ").unwrap_or(rest);
            rest.starts_with("token") || rest.starts_with("key")
        })
}

/// Lower case, without AWS decorations such as `:http://…` or `com.amazonaws.bedrock#`.
pub(super) fn normalize_code(code: &str) -> String {
    let code = code.trim();
    let code = code.split_once(':').map_or(code, |(head, _)| head);
    let code = code.rsplit_once('#').map_or(code, |(_, tail)| tail);
    code.trim().to_ascii_lowercase()
}

/// The message without URLs, so a documentation link's anchor cannot match a wording.
fn strip_urls(msg: &str) -> String {
    msg.split_whitespace()
        .filter(|w| !w.contains("://"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a provider error code says on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CodeKind {
    Definite(ErrorKind),
    /// A generic "bad request" code: the status and message decide.
    Generic,
}

fn kind_from_code(code: &str, msg: &str) -> Option<CodeKind> {
    use ErrorKind::*;
    let definite = match code {
        "authentication_error"
        | "invalid_api_key"
        | "invalid_authentication"
        | "unauthenticated"
        | "unauthorized"
        | "expiredtokenexception"
        | "expiredtoken"
        | "unrecognizedclientexception"
        | "invalidsignatureexception"
        | "incompletesignature"
        | "missingauthenticationtokenexception" => Auth,
        "permission_error" | "permission_denied" | "accessdeniedexception" => {
            if is_entitlement(msg) {
                Entitlement
            } else {
                Auth
            }
        }
        "rate_limit_error"
        | "rate_limit_exceeded"
        | "resource_exhausted"
        | "throttlingexception"
        | "too_many_requests" => RateLimited,
        "overloaded_error"
        | "unavailable"
        | "serviceunavailableexception"
        | "modelnotreadyexception" => Overloaded,
        "api_error"
        | "server_error"
        | "internal"
        | "internal_error"
        | "internalserverexception"
        | "modelstreamerrorexception"
        | "modelerrorexception"
        // Groq's malformed tool call is sampling noise, retried like Gemini's though sent as a 400.
        | "tool_use_failed" => Server,
        "deadline_exceeded" | "modeltimeoutexception" => Timeout,
        "context_length_exceeded"
        | "exceed_context_size_error"
        | "model_context_window_exceeded" => ContextWindowExceeded,
        "not_found_error" | "not_found" | "model_not_found" | "resourcenotfoundexception" => {
            InvalidRequest
        }
        "invalid_request_error"
        | "invalid_request"
        | "invalid_argument"
        | "failed_precondition"
        | "bad_request"
        | "validationexception"
        | "request_too_large" => return Some(CodeKind::Generic),
        _ => return None,
    };
    Some(CodeKind::Definite(definite))
}

fn is_quota(code: &str, msg: &str, status: Option<u16>, rate_class: bool) -> bool {
    let quota_code = matches!(
        code,
        "insufficient_quota"
            | "billing_error"
            | "usage_quota_exceeded"
            | "quota_exceeded"
            | "insufficient_credits"
            | "insufficient_balance"
            | "payment_required"
            | "servicequotaexceededexception"
    );
    // Gemini's per-minute RESOURCE_EXHAUSTED also says "exceeded your current quota".
    let openai_quota_words =
        msg.contains("exceeded your current quota") && code != "resource_exhausted";
    // A 429 that names a long window, such as Z.ai's 5-hour limit, is a spent quota.
    let long_window = rate_class
        && [
            "per-day",
            "per day",
            "daily",
            "usage quota",
            "usage limit reached",
            "weekly",
            "per week",
            "per month",
            "monthly",
        ]
        .iter()
        .any(|w| msg.contains(w));
    quota_code
        || status == Some(402)
        || openai_quota_words
        || long_window
        || msg.contains("insufficient credits")
        || msg.contains("insufficient balance")
        || msg.contains("credit balance is too low")
        || msg.contains("out of credits")
        // Alibaba DashScope's 403 `AllocationQuota.FreeTierOnly`.
        || code.starts_with("allocationquota")
        || msg.contains("quota has been exhausted")
}

/// Every provider's context-window wording in a lower-case `msg`, asked after code and status.
fn is_context_window(msg: &str, status: Option<u16>) -> bool {
    const WORDINGS: &[&str] = &[
        "prompt is too long",
        "maximum context",
        "context length exceeded",
        "context_length_exceeded",
        "exceeds the context window",
        "exceeds model context window",
        "context window exceeded",
        "exceed context limit",
        "exceeds context limit",
        "exceeds the context limit",
        "reduce the length of the messages",
        "input is too long",
        "too many total text bytes",
        "maximum prompt length",
        "input tokens exceed",
        "range of input length",
        "[input_too_large]",
    ];
    if WORDINGS.iter().any(|w| msg.contains(w)) {
        return true;
    }
    // Word sequences, each after the previous one, after the reference's Bedrock and Vercel ones.
    const SEQUENCES: &[&[&str]] = &[
        &["total number of tokens", "exceed"],
        &["requested", "tokens", "exceed"],
        &["requested input length", "exceed"],
        &["context window", "overflow"],
        &["context window", "exceed"],
        &["tokens", "exceeds budget"],
        // llama.cpp and LM Studio: a prompt that cannot be truncated to fit.
        &["n_keep", "n_ctx"],
    ];
    if SEQUENCES.iter().any(|words| in_order(msg, words)) {
        return true;
    }
    if msg.contains("input token count") && msg.contains("exceeds the maximum") {
        return true;
    }
    if msg.contains("context size") && msg.contains("exceed") {
        return true;
    }
    if msg.contains("context length") || msg.contains("context overflow") {
        return true;
    }
    // On a 400 these cannot be a throughput limit.
    status == Some(400) && (msg.contains("tokens exceed") || msg.contains("too many tokens"))
}

fn in_order(msg: &str, words: &[&str]) -> bool {
    let mut rest = msg;
    for w in words {
        match rest.find(w) {
            Some(at) => rest = &rest[at + w.len()..],
            None => return false,
        }
    }
    true
}

/// Wordings of a bad or expired key, sent with a 400 or without a status.
fn is_bad_credentials(msg: &str) -> bool {
    msg.contains("api key not valid")
        || msg.contains("invalid api key")
        || msg.contains("incorrect api key")
        || msg.contains("api key expired")
        || msg.contains("invalid x-api-key")
}

/// The account may not use this model, feature or region.
fn is_entitlement(msg: &str) -> bool {
    msg.contains("access to model")
        || msg.contains("access to the model")
        || msg.contains("not available in your")
        || msg.contains("location is not supported")
        || msg.contains("model is not available")
        || msg.contains("not allowed to use")
}

/// A moderation or guardrail refusal.
fn is_content_blocked(msg: &str) -> bool {
    msg.contains("flagged") || msg.contains("moderation") || msg.contains("guardrail")
}

/// Whether a provider error of `kind` with this `message` fails the same way however long one
/// waits: a request larger than the rate limit itself, or a model too large for the server.
pub(super) fn waiting_cannot_fix(kind: ErrorKind, message: &str) -> bool {
    let msg = message.to_ascii_lowercase();
    match kind {
        ErrorKind::RateLimited => match limit_and_requested(&msg) {
            Some((limit, requested)) => requested > limit,
            None => msg.contains("request too large"),
        },
        ErrorKind::Server => [
            "requires more system memory",
            "model requires more memory",
            "insufficient memory",
            "not enough memory",
        ]
        .iter()
        .any(|w| msg.contains(w)),
        _ => false,
    }
}

/// The numbers after the first `limit` and the first `requested` in lower-case `msg`.
fn limit_and_requested(msg: &str) -> Option<(u64, u64)> {
    let number_after = |word: &str| -> Option<u64> {
        let at = msg.find(word)? + word.len();
        let rest = msg[at..].trim_start_matches([' ', ':']);
        let digits: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    Some((number_after("limit ")?, number_after("requested ")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_fixture_wordings() {
        let cases: &[(Option<u16>, Option<&str>, &str, ErrorKind)] = &[
            (
                Some(429),
                Some("insufficient_quota"),
                "You exceeded your current quota",
                ErrorKind::QuotaExceeded,
            ),
            (
                Some(429),
                Some("rate_limit_error"),
                "Number of request tokens has exceeded your per-minute rate limit",
                ErrorKind::RateLimited,
            ),
            (
                Some(400),
                Some("context_length_exceeded"),
                "This model's maximum context length is 128000 tokens.",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                Some(400),
                Some("invalid_request_error"),
                "prompt is too long: 208310 tokens > 200000 maximum",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                Some(400),
                Some("invalid_request_error"),
                "messages: roles must alternate",
                ErrorKind::InvalidRequest,
            ),
            (
                Some(404),
                None,
                "model not found",
                ErrorKind::InvalidRequest,
            ),
            (
                Some(413),
                None,
                "request entity too large",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                Some(402),
                None,
                "Insufficient credits",
                ErrorKind::QuotaExceeded,
            ),
            (
                Some(401),
                Some("authentication_error"),
                "invalid x-api-key",
                ErrorKind::Auth,
            ),
            (
                Some(529),
                Some("overloaded_error"),
                "Overloaded",
                ErrorKind::Overloaded,
            ),
            (
                Some(200),
                Some("overloaded_error"),
                "Overloaded",
                ErrorKind::Overloaded,
            ),
            (
                None,
                Some("server_error"),
                "Provider disconnected unexpectedly",
                ErrorKind::Server,
            ),
            (
                Some(500),
                None,
                "the request exceeds the context size",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                Some(400),
                Some("invalid_request_error"),
                "Your credit balance is too low to access the Anthropic API.",
                ErrorKind::QuotaExceeded,
            ),
        ];
        for (status, code, msg, want) in cases {
            assert_eq!(
                classify(*status, *code, msg),
                *want,
                "{status:?} {code:?} {msg}"
            );
        }
    }

    /// The reference's status-less patterns (Cline v4.0.12 `ClineError.ts`,
    /// `ClineError.getErrorType`: `authErrorRegex` and `RATE_LIMIT_PATTERNS`).
    #[test]
    fn status_less_wordings_follow_the_reference() {
        for msg in [
            "Invalid token",
            "invalid api key provided",
            "Valid key required",
            "invalid_key",
            "Authentication failed",
        ] {
            assert_eq!(classify(None, None, msg), ErrorKind::Auth, "{msg}");
        }
        assert_eq!(
            classify(None, None, "Quota exceeded for this minute"),
            ErrorKind::RateLimited
        );
        // A spent quota keeps its own wordings and codes.
        assert_eq!(
            classify(None, Some("insufficient_quota"), "quota exceeded"),
            ErrorKind::QuotaExceeded
        );
        assert_eq!(
            classify(None, None, "the input is not valid JSON"),
            ErrorKind::Server
        );
    }

    #[test]
    fn a_model_not_found_answer_is_recognised() {
        let cases = [
            (
                Some(404),
                Some("model_not_found"),
                "The model `gpt-6-codex` does not exist or you do not have access to it.",
                true,
            ),
            (
                Some(404),
                Some("not_found_error"),
                "model: claude-sonnet-9",
                true,
            ),
            (
                Some(404),
                None,
                "model \"qwen9\" not found, try pulling it first",
                true,
            ),
            (Some(400), None, "gpt-6-codex is not a valid model ID", true),
            (Some(404), None, "Not Found", false),
            (
                Some(400),
                Some("invalid_request_error"),
                "messages: roles must alternate",
                false,
            ),
        ];
        for (status, code, msg, want) in cases {
            let model = ["gpt-6-codex", "claude-sonnet-9", "qwen9"]
                .into_iter()
                .find(|m| msg.contains(m))
                .unwrap_or("gpt-4o");
            assert_eq!(is_model_not_found(status, code, msg, model), want, "{msg}");
        }
    }

    #[test]
    fn aws_codes_are_normalized() {
        assert_eq!(
            normalize_code(
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"
            ),
            "throttlingexception"
        );
        assert_eq!(
            normalize_code("com.amazonaws.bedrock#ValidationException"),
            "validationexception"
        );
        assert_eq!(normalize_code(" RESOURCE_EXHAUSTED "), "resource_exhausted");
    }

    #[test]
    fn numeric_code_stands_in_for_a_missing_status() {
        assert_eq!(
            classify(None, Some("429"), "slow down"),
            ErrorKind::RateLimited
        );
        assert_eq!(
            classify(None, Some("502"), "bad gateway"),
            ErrorKind::Server
        );
        assert_eq!(
            classify(
                None,
                Some("400"),
                "This endpoint's maximum context length is 1 tokens."
            ),
            ErrorKind::ContextWindowExceeded
        );
    }

    #[test]
    fn requested_beyond_the_limit_is_permanent_and_a_full_window_is_not() {
        use ErrorKind::{RateLimited, Server};
        let cases: &[(ErrorKind, &str, bool)] = &[
            // H04: the request alone is over the per-minute budget.
            (
                RateLimited,
                "Request too large for gpt-4o … on tokens per min (TPM): Limit 30000, Requested 31538.",
                true,
            ),
            // H05 (Groq 413).
            (
                RateLimited,
                "Request too large for model `llama-3.3-70b-versatile` … (TPM): Limit 12000, Requested 14137, please reduce your message size",
                true,
            ),
            // Near miss H04b: the window is full, the request fits.
            (
                RateLimited,
                "Rate limit reached for gpt-4o … (TPM): Limit 30000, Used 28461, Requested 3082. Please try again in 3.086s.",
                false,
            ),
            // Near miss: equal to the limit fits.
            (RateLimited, "Limit 1,000, Requested 1,000", false),
            (RateLimited, "Request too large for this model.", true),
            (RateLimited, "Too many requests", false),
            // H30.
            (
                Server,
                "model requires more system memory (7.5 GiB) than is available (6.0 GiB)",
                true,
            ),
            // Near miss: a plain 500.
            (Server, "internal error while loading the model", false),
            // The words matter only for their kind.
            (ErrorKind::InvalidRequest, "Limit 10, Requested 20", false),
        ];
        for (kind, message, want) in cases {
            assert_eq!(
                waiting_cannot_fix(*kind, message),
                *want,
                "{kind} {message}"
            );
        }
    }
}
