//! Error classification (SPEC R7) and retry hints (R5.2), table-driven:
//!
//! * one row per provider wording, through [`classify`] and [`ApiError::from_provider`];
//! * every stored response of `tests/fixtures` and `tests/cases` whose status is not 2xx,
//!   served by the testkit server and read through the real HTTP error path of two providers,
//!   against a table keyed by file name. A new non-2xx file fails the test until it has a row.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use switchyard_api::retry::{RetryPolicy, is_provider_retryable};
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ErrorKind, Message, Mode, RequestOptions,
    build_api_handler, classify,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, test_data_dir};

use ErrorKind::{
    Auth, ContentBlocked, ContextWindowExceeded as Context, Entitlement, InvalidRequest,
    Overloaded, QuotaExceeded as Quota, RateLimited, Server, SpendLimit, Timeout,
};

const KEY: &str = "sk-test-key-never-shown-0123456789";

/// `(provider and source, HTTP status, error type/code, message, kind)`.
type Row = (
    &'static str,
    Option<u16>,
    Option<&'static str>,
    &'static str,
    ErrorKind,
);

/// Every wording of SPEC R7.2/R7.3, `tests/fixtures/README.md` "Error classes" and the cases.
const WORDINGS: &[Row] = &[
    // --- Context window (SPEC R7.2) ---
    (
        "OpenAI code (fixture openai_context_length)",
        Some(400),
        Some("context_length_exceeded"),
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
        Context,
    ),
    (
        "OpenAI code alone",
        Some(400),
        Some("context_length_exceeded"),
        "",
        Context,
    ),
    (
        "OpenAI Responses wording",
        Some(400),
        Some("invalid_request_error"),
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        Context,
    ),
    (
        "Anthropic prompt too long (C10)",
        Some(400),
        Some("invalid_request_error"),
        "prompt is too long: 213369 tokens > 200000 maximum",
        Context,
    ),
    (
        "Anthropic 413 (C10b)",
        Some(413),
        Some("invalid_request_error"),
        "Request size exceeds model context window",
        Context,
    ),
    (
        "Anthropic input + max_tokens (C10c)",
        Some(400),
        Some("invalid_request_error"),
        "input length and `max_tokens` exceed context limit: 196758 + 8192 > 200000, decrease input length or `max_tokens` and try again",
        Context,
    ),
    (
        "Anthropic prompt too long, in-stream",
        None,
        Some("invalid_request_error"),
        "prompt is too long: 208310 tokens > 200000 maximum",
        Context,
    ),
    (
        "DeepSeek (C11)",
        Some(400),
        Some("invalid_request_error"),
        "This model's maximum context length is 65536 tokens. However, you requested 68897 tokens (60705 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
        Context,
    ),
    (
        "OpenRouter context length (C11c)",
        Some(400),
        Some("400"),
        "This endpoint's maximum context length is 200000 tokens. However, you requested about 201326 tokens (197771 of text input, 3555 of tool input).",
        Context,
    ),
    (
        "OpenRouter output reservation (C12)",
        Some(400),
        Some("400"),
        "This endpoint's maximum context length is 131072 tokens. however, you requested about 138956 tokens (7884 of text input, 131072 in the output).",
        Context,
    ),
    (
        "OpenRouter maximum context",
        Some(400),
        None,
        "Input exceeds the maximum context of this model",
        Context,
    ),
    (
        "OpenRouter tokens exceed",
        Some(400),
        None,
        "Input tokens exceed the configured limit of 272000 tokens",
        Context,
    ),
    (
        "OpenRouter too many tokens",
        Some(400),
        None,
        "Too many tokens in the request",
        Context,
    ),
    (
        "Cerebras / Groq",
        Some(400),
        None,
        "Please reduce the length of the messages or completion.",
        Context,
    ),
    (
        "Bedrock input too long (C15)",
        Some(400),
        Some("ValidationException"),
        "Input is too long for requested model.",
        Context,
    ),
    (
        "Bedrock input + max_tokens",
        Some(400),
        Some("ValidationException"),
        "input length and max_tokens exceed context limit: 199000 + 8192 > 200000",
        Context,
    ),
    (
        "Bedrock text bytes",
        Some(400),
        Some("ValidationException"),
        "Too many total text bytes: 4000000 > 3000000",
        Context,
    ),
    (
        "Bedrock in-stream validationException",
        None,
        Some("validationException"),
        "Input is too long for requested model.",
        Context,
    ),
    (
        "Gemini input token count",
        Some(400),
        Some("INVALID_ARGUMENT"),
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).",
        Context,
    ),
    (
        "Gemini short wording (SPEC)",
        Some(400),
        Some("INVALID_ARGUMENT"),
        "input token count exceeds the maximum",
        Context,
    ),
    (
        "llama.cpp",
        Some(400),
        Some("exceed_context_size_error"),
        "the request exceeds the available context size, try increasing it",
        Context,
    ),
    (
        "llama.cpp / Ollama wording, 500",
        Some(500),
        None,
        "the request exceeds the context size",
        Context,
    ),
    (
        "xAI",
        Some(400),
        None,
        "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
        Context,
    ),
    (
        "HTTP 413, no details",
        Some(413),
        None,
        "Request Entity Too Large",
        Context,
    ),
    // Negative controls: invalid requests, never overflow (C10, SPEC R7.2 Improve).
    (
        "DeepSeek reasoning_content (C18b)",
        Some(400),
        Some("invalid_request_error"),
        "Missing `reasoning_content` field in the assistant message at message index 2.",
        InvalidRequest,
    ),
    (
        "Anthropic thinking signature (C19c)",
        Some(400),
        Some("invalid_request_error"),
        "messages.1.content.0: Invalid `signature` in `thinking` block",
        InvalidRequest,
    ),
    (
        "Anthropic budget vs max_tokens (C20)",
        Some(400),
        Some("invalid_request_error"),
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
        InvalidRequest,
    ),
    (
        "Anthropic budget < 1024 (C20b)",
        Some(400),
        Some("invalid_request_error"),
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        InvalidRequest,
    ),
    (
        "Gemini empty parts (C23b)",
        Some(400),
        Some("INVALID_ARGUMENT"),
        "* GenerateContentRequest.contents[23].parts: contents.parts must not be empty.\n",
        InvalidRequest,
    ),
    (
        "Anthropic orphan tool_use (C37)",
        Some(400),
        Some("invalid_request_error"),
        "messages.82: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_X",
        InvalidRequest,
    ),
    (
        "Anthropic max_tokens above model max",
        Some(400),
        Some("invalid_request_error"),
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-opus-4",
        InvalidRequest,
    ),
    (
        "Anthropic bare invalid_request_error",
        Some(400),
        Some("invalid_request_error"),
        "messages: roles must alternate",
        InvalidRequest,
    ),
    (
        "Gemini unknown model (C38)",
        Some(404),
        Some("NOT_FOUND"),
        "models/gemini-9-nonexistent is not found for API version v1beta",
        InvalidRequest,
    ),
    (
        "404 without code",
        Some(404),
        None,
        "model not found",
        InvalidRequest,
    ),
    (
        "Anthropic not_found_error",
        Some(404),
        Some("not_found_error"),
        "model: claude-9",
        InvalidRequest,
    ),
    (
        "OpenAI model_not_found",
        Some(404),
        Some("model_not_found"),
        "The model `gpt-9` does not exist or you do not have access to it.",
        InvalidRequest,
    ),
    (
        "422",
        Some(422),
        None,
        "Unprocessable Entity",
        InvalidRequest,
    ),
    (
        "OpenRouter 403 moderation",
        Some(403),
        None,
        "Your input was flagged for \"harassment\"",
        ContentBlocked,
    ),
    // --- Quota and credits (SPEC R7.3) ---
    (
        "OpenAI insufficient_quota (fixture)",
        Some(429),
        Some("insufficient_quota"),
        "You exceeded your current quota, please check your plan and billing details.",
        Quota,
    ),
    (
        "OpenAI quota wording without code",
        Some(429),
        None,
        "You exceeded your current quota, please check your plan and billing details.",
        Quota,
    ),
    (
        "OpenRouter 402",
        Some(402),
        Some("402"),
        "Insufficient credits. Add more using https://openrouter.ai/credits",
        Quota,
    ),
    (
        "OpenRouter 402, afford wording",
        Some(402),
        None,
        "This request requires more credits, or fewer max_tokens. You requested up to 8192 tokens, but can only afford 1234.",
        Quota,
    ),
    (
        "Anthropic credit balance",
        Some(400),
        Some("invalid_request_error"),
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
        Quota,
    ),
    (
        "Anthropic billing_error",
        Some(400),
        Some("billing_error"),
        "billing issue",
        Quota,
    ),
    (
        "DeepSeek 402",
        Some(402),
        None,
        "Insufficient Balance",
        Quota,
    ),
    (
        "OpenRouter free-models-per-day (C09)",
        Some(429),
        Some("429"),
        "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day",
        Quota,
    ),
    (
        "5-hour usage quota (C09b)",
        Some(429),
        Some("usage_quota_exceeded"),
        "You have exceeded the 5-hour usage quota. It will reset at 2026-01-01 05:00:00 +0000 UTC.",
        Quota,
    ),
    (
        "5-hour usage quota, type only",
        Some(429),
        Some("rate_limit_error"),
        "You have exceeded the 5-hour usage quota.",
        Quota,
    ),
    (
        "daily limit",
        Some(429),
        None,
        "You have reached your daily request limit",
        Quota,
    ),
    // --- Spend limits ---
    (
        "spend limit",
        Some(402),
        None,
        "You have reached your spend limit for this month",
        SpendLimit,
    ),
    (
        "LiteLLM budget",
        Some(400),
        None,
        "Budget has been exceeded! Current cost: 1.2, Max budget: 1.0",
        SpendLimit,
    ),
    // --- Rate limits (R5.1: retried at the provider level) ---
    (
        "Anthropic rate_limit_error (fixture anthropic_429)",
        Some(429),
        Some("rate_limit_error"),
        "This request would exceed the rate limit for your organization of 30,000 input tokens per minute.",
        RateLimited,
    ),
    (
        "OpenAI TPM",
        Some(429),
        Some("rate_limit_exceeded"),
        "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000. Please try again in 6m0s.",
        RateLimited,
    ),
    (
        "OpenAI Responses in-stream (C07)",
        None,
        Some("rate_limit_exceeded"),
        "Rate limit reached for gpt-4o. Please try again in 915ms.",
        RateLimited,
    ),
    (
        "OpenRouter numeric 429 in-stream",
        None,
        Some("429"),
        "Rate limit exceeded",
        RateLimited,
    ),
    (
        "Gemini RESOURCE_EXHAUSTED (fixture gemini_429)",
        Some(429),
        Some("RESOURCE_EXHAUSTED"),
        "You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generate_content_free_tier_requests, limit: 10\nPlease retry in 36.2s.",
        RateLimited,
    ),
    (
        "Bedrock throttling, too many tokens (C16)",
        Some(429),
        Some("ThrottlingException"),
        "Too many tokens, please wait before trying again.",
        RateLimited,
    ),
    (
        "Bedrock throttling header form",
        Some(429),
        Some("ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
        "Too many requests, please wait before trying again.",
        RateLimited,
    ),
    (
        "Bedrock throttling in-stream",
        None,
        Some("throttlingException"),
        "Too many tokens, please wait before trying again.",
        RateLimited,
    ),
    (
        "429 too many tokens, no code",
        Some(429),
        None,
        "Too many tokens, please wait before trying again.",
        RateLimited,
    ),
    ("429 bare", Some(429), None, "", RateLimited),
    // --- Overload (task level, R6.7) ---
    (
        "Anthropic 529 (C04)",
        Some(529),
        Some("overloaded_error"),
        "Overloaded",
        Overloaded,
    ),
    (
        "Anthropic overloaded in-stream (C03)",
        None,
        Some("overloaded_error"),
        "Overloaded",
        Overloaded,
    ),
    (
        "OpenRouter 503",
        Some(503),
        None,
        "No available model provider that meets your routing requirements",
        Overloaded,
    ),
    (
        "Gemini UNAVAILABLE",
        Some(503),
        Some("UNAVAILABLE"),
        "The model is overloaded. Please try again later.",
        Overloaded,
    ),
    (
        "Bedrock serviceUnavailableException",
        None,
        Some("serviceUnavailableException"),
        "Service unavailable",
        Overloaded,
    ),
    // --- Server ---
    (
        "Anthropic api_error",
        Some(500),
        Some("api_error"),
        "Internal server error",
        Server,
    ),
    (
        "Proxy 502 (C08)",
        Some(502),
        Some("server_error"),
        "Bad gateway: upstream connect error",
        Server,
    ),
    (
        "OpenRouter server_error in-stream (C02)",
        None,
        Some("server_error"),
        "Provider disconnected unexpectedly",
        Server,
    ),
    (
        "OpenRouter numeric 502 in-stream",
        None,
        Some("502"),
        "Bad gateway",
        Server,
    ),
    (
        "Bedrock modelStreamErrorException",
        None,
        Some("modelStreamErrorException"),
        "Model stream error",
        Server,
    ),
    (
        "Bedrock internalServerException",
        None,
        Some("internalServerException"),
        "Internal error",
        Server,
    ),
    (
        "Ollama error line",
        None,
        None,
        "model runner has unexpectedly stopped",
        Server,
    ),
    // --- Auth ---
    (
        "Anthropic authentication_error",
        Some(401),
        Some("authentication_error"),
        "invalid x-api-key",
        Auth,
    ),
    (
        "Anthropic permission_error",
        Some(403),
        Some("permission_error"),
        "Your API key does not have permission to use the specified resource.",
        Auth,
    ),
    (
        "OpenAI invalid_api_key",
        Some(401),
        Some("invalid_api_key"),
        "Incorrect API key provided: sk-***.",
        Auth,
    ),
    (
        "AWS expired token (C17)",
        Some(403),
        Some("ExpiredTokenException"),
        "The security token included in the request is expired",
        Auth,
    ),
    (
        "AWS invalid token",
        Some(403),
        Some("UnrecognizedClientException"),
        "The security token included in the request is invalid.",
        Auth,
    ),
    (
        "Gemini bad key (a 400)",
        Some(400),
        Some("INVALID_ARGUMENT"),
        "API key not valid. Please pass a valid API key.",
        Auth,
    ),
    (
        "Gemini PERMISSION_DENIED",
        Some(403),
        Some("PERMISSION_DENIED"),
        "Method doesn't allow unregistered callers.",
        Auth,
    ),
    ("401 bare", Some(401), None, "Unauthorized", Auth),
    // --- Issue 12 item 4: the reference's wordings (context-error-handling.ts, v4.0.10) and
    // those its users reported since; each with a near miss below. ---
    (
        "llama.cpp exceed_context_size_error at 400",
        Some(400),
        Some("exceed_context_size_error"),
        "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it",
        Context,
    ),
    (
        "llama.cpp 'Context size has been exceeded' at 500",
        Some(500),
        None,
        "Context size has been exceeded.",
        Context,
    ),
    (
        "Bedrock total number of tokens",
        Some(400),
        Some("ValidationException"),
        "The total number of tokens (212000) exceeds the limit of 200000.",
        Context,
    ),
    (
        "requested N tokens … exceeds",
        Some(400),
        Some("ValidationException"),
        "You requested 210000 tokens, which exceeds the model's limit of 200000 tokens.",
        Context,
    ),
    (
        "Requested input length … exceeds (Vercel)",
        Some(400),
        None,
        "Requested input length 210000 exceeds maximum input length 200000",
        Context,
    ),
    (
        "Context Window overflow",
        None,
        None,
        "Context Window overflow: the conversation no longer fits",
        Context,
    ),
    (
        "Qwen / DashScope range of input length (H12)",
        Some(400),
        Some("invalid_parameter_error"),
        "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 204800]",
        Context,
    ),
    (
        "LM Studio n_keep >= n_ctx (H13b)",
        Some(400),
        None,
        "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)",
        Context,
    ),
    (
        "LM Studio tokens to keep (H13)",
        Some(400),
        None,
        "The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096).",
        Context,
    ),
    (
        "xAI input_too_large (H17)",
        Some(400),
        None,
        "Failed to start sampling: [input_too_large] Current message (1149677 tokens) exceeds budget (975424 tokens)",
        Context,
    ),
    (
        "in-stream error with its status in a field (Vercel, Bedrock through the AI SDK)",
        None,
        Some("400"),
        "input tokens exceed the configured limit of 272000 tokens",
        Context,
    ),
    // Near misses: the same words about something else.
    (
        "near miss: max_tokens above the model's output limit",
        Some(400),
        Some("ValidationException"),
        "The maximum tokens you requested exceeds the model limit of 8192. Try again with a maximum tokens value that is lower than 8192.",
        InvalidRequest,
    ),
    (
        "near miss: a throughput limit that names tokens (H04)",
        Some(429),
        Some("rate_limit_exceeded"),
        "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully.",
        RateLimited,
    ),
    (
        "near miss: n_ctx alone",
        Some(400),
        None,
        "invalid value for n_ctx: must be positive",
        InvalidRequest,
    ),
    (
        "near miss: a budget that is not tokens",
        Some(400),
        None,
        "The request exceeds budget for this project.",
        InvalidRequest,
    ),
    // --- Message-only errors (no status: an error event inside a 200 stream) ---
    ("in-stream 'Unauthorized'", None, None, "Unauthorized", Auth),
    (
        "in-stream invalid API key",
        None,
        None,
        "Invalid API key provided: sk-…abcd",
        Auth,
    ),
    (
        "in-stream authentication failed",
        None,
        Some("provider_error"),
        "Upstream authentication failed for this key",
        Auth,
    ),
    (
        "in-stream rate limit",
        None,
        None,
        "Rate limit exceeded for this model, slow down",
        RateLimited,
    ),
    (
        "in-stream resource exhausted",
        None,
        None,
        "Resource exhausted (e.g. check quota).",
        RateLimited,
    ),
    (
        "in-stream 'status code 429'",
        None,
        None,
        "upstream request failed with status code 429",
        RateLimited,
    ),
    // The reference's status-less patterns (Cline v4.0.12 `ClineError.ts`: `authErrorRegex`,
    // `RATE_LIMIT_PATTERNS`).
    (
        "in-stream 'invalid token'",
        None,
        None,
        "Invalid token",
        Auth,
    ),
    (
        "in-stream 'valid key required'",
        None,
        None,
        "A valid key required to use this endpoint",
        Auth,
    ),
    (
        "in-stream 'quota exceeded'",
        None,
        None,
        "Quota exceeded, slow down",
        RateLimited,
    ),
    (
        "near miss: a token that is a JSON token",
        None,
        None,
        "invalid token in JSON at position 12",
        Server,
    ),
    (
        "near miss: 'authorized' in a tool's words",
        None,
        None,
        "the model is not authorized to call tools in this mode",
        Server,
    ),
    (
        "near miss: a 400 that says unauthorized stays a bad request",
        Some(400),
        None,
        "unauthorized field `foo` in request",
        InvalidRequest,
    ),
    // --- Content blocked (SPEC R7.5) ---
    (
        "OpenRouter 403 guardrail",
        Some(403),
        None,
        "Request blocked by guardrail policy",
        ContentBlocked,
    ),
    // --- Entitlement ---
    (
        "Bedrock model access",
        Some(403),
        Some("AccessDeniedException"),
        "You don't have access to the model with the specified model ID.",
        Entitlement,
    ),
    (
        "Gemini region",
        Some(400),
        Some("FAILED_PRECONDITION"),
        "User location is not supported for the API use.",
        Entitlement,
    ),
    // --- Timeout ---
    ("408", Some(408), None, "Request Timeout", Timeout),
    (
        "Gemini DEADLINE_EXCEEDED",
        Some(504),
        Some("DEADLINE_EXCEEDED"),
        "Deadline expired before operation could complete.",
        Timeout,
    ),
];

#[test]
fn every_provider_wording_is_classified() {
    let mut failures = Vec::new();
    for (label, status, code, message, want) in WORDINGS {
        let got = classify(*status, *code, message);
        let via_error = ApiError::from_provider(*status, *code, message, None).kind;
        if got != *want || via_error != *want {
            failures.push(format!(
                "{label}: {status:?} {code:?} {message:?}: want {want}, got {got} / {via_error}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A limit worded as a long window ("per day") is a spent quota unless the server's hint says
/// the window rolls within the hour (tests/cases H14, H14b against C09): the hint decides.
#[test]
fn a_daily_limit_is_a_rate_limit_when_it_resets_within_the_hour() {
    let rpd = |wait: &str| {
        ApiError::from_provider(
            Some(429),
            Some("rate_limit_exceeded"),
            &format!(
                "Rate limit reached for gpt-4o-mini on requests per day (RPD): Limit 200, Used 200, Requested 1. Please try again in {wait}."
            ),
            None,
        )
    };
    for (wait, kind, secs) in [
        ("8.64s", RateLimited, 8.64),
        ("7m12s", RateLimited, 432.0),
        ("59m0s", RateLimited, 3540.0),
        // Near miss: the same words with a reset hours away are a spent quota.
        ("2h0m0s", Quota, 7200.0),
    ] {
        let e = rpd(wait);
        assert_eq!(e.kind, kind, "{wait}: {e}");
        assert_retry_after(wait, e.retry_after, Some(secs));
    }
    // Without any hint the words decide, as before (C09).
    assert_eq!(
        classify(
            Some(429),
            Some("rate_limit_exceeded"),
            "free-models-per-day"
        ),
        Quota
    );
}

/// What `Display` says to change, for the failures waiting cannot fix (SPEC R7.4).
#[test]
fn failures_waiting_cannot_fix_say_what_to_change() {
    let shown = |status, code, message: &str, model: &str| {
        let e = ApiError::from_provider(status, code, message, None).with_origin("p", model);
        (e.permanent, e.to_string())
    };
    let (permanent, text) = shown(
        Some(429),
        Some("rate_limit_exceeded"),
        "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 31538.",
        "gpt-4o",
    );
    assert!(permanent);
    assert!(
        text.contains("31538") && text.contains("lower max_tokens"),
        "{text}"
    );
    let (permanent, text) = shown(
        Some(500),
        None,
        "model requires more system memory (7.5 GiB) than is available (6.0 GiB)",
        "deepseek-r1:8b",
    );
    assert!(permanent);
    assert!(text.contains("smaller model"), "{text}");
    let (_, text) = shown(
        Some(404),
        None,
        "model \"llama3\" not found, try pulling it first",
        "llama3",
    );
    assert!(
        text.ends_with(
            "download it with `ollama pull llama3`, or pick a model `ollama list` shows"
        ),
        "{text}"
    );
    let (_, text) = shown(
        Some(400),
        Some("ValidationException"),
        "Invocation of model ID anthropic.claude-3-7-sonnet-20250219-v1:0 with on-demand throughput isn’t supported.",
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
    );
    assert!(text.contains("use_cross_region_inference = true"), "{text}");
    // Near misses: a momentary limit and a plain 500 are retried, and say nothing more.
    let (permanent, text) = shown(
        Some(429),
        Some("rate_limit_exceeded"),
        "Rate limit reached: Limit 30000, Used 28461, Requested 3082. Please try again in 3.086s.",
        "gpt-4o",
    );
    assert!(
        !permanent && !text.contains("waiting cannot help"),
        "{text}"
    );
    let (permanent, _) = shown(Some(500), None, "internal error", "m");
    assert!(!permanent);
}

#[test]
fn classification_ignores_case_and_aws_decoration() {
    for code in [
        "throttlingexception",
        "THROTTLINGEXCEPTION",
        "com.amazonaws.bedrock#ThrottlingException",
        "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
    ] {
        assert_eq!(classify(Some(400), Some(code), "x"), RateLimited, "{code}");
    }
}

// ---------------------------------------------------------------------------------------------
// Every stored non-2xx response through the real HTTP error path.
// ---------------------------------------------------------------------------------------------

/// `(folder/name, kind, retry_after in seconds)` for every non-2xx `.http` file.
const STORED: &[(&str, ErrorKind, Option<f64>)] = &[
    ("fixtures/anthropic_429", RateLimited, Some(17.0)), // retry-after: 17
    ("fixtures/anthropic_prompt_too_long", Context, None),
    ("fixtures/bedrock_429", RateLimited, None), // x-amzn-ErrorType: ThrottlingException
    ("fixtures/gemini_429", RateLimited, Some(36.0)), // RetryInfo.retryDelay "36s"
    ("fixtures/openai_context_length", Context, None),
    ("fixtures/openai_insufficient_quota", Quota, None),
    ("cases/C04", Overloaded, None),
    ("cases/C05", RateLimited, Some(7.0)),  // retry-after: 7
    ("cases/C05b", RateLimited, Some(7.0)), // anthropic-ratelimit-*-reset − Date
    ("cases/C08", Server, None),
    ("cases/C09", Quota, Some(86_400.0)), // X-RateLimit-Reset (Unix ms) − Date
    ("cases/C09b", Quota, Some(18_000.0)), // "will reset at …" − Date
    ("cases/C10", Context, None),
    ("cases/C10b", Context, None),
    ("cases/C10c", Context, None),
    ("cases/C11", Context, None),
    ("cases/C11b", Context, None),
    ("cases/C11c", Context, None),
    ("cases/C12", Context, None),
    ("cases/C15", Context, None),
    ("cases/C16", RateLimited, None),
    ("cases/C17", Auth, None),
    ("cases/K02", Auth, None), // LiteLLM's proxy echoes the key it was sent
    ("cases/C18b", InvalidRequest, None),
    ("cases/C19c", InvalidRequest, None),
    ("cases/C20", InvalidRequest, None),
    ("cases/C20b", InvalidRequest, None),
    ("cases/C23b", InvalidRequest, None),
    ("cases/C37", InvalidRequest, None),
    ("cases/C38", InvalidRequest, None),
    // The team's cases (issue 12): CASES.md "Cases found by the team".
    ("cases/H04", RateLimited, None), // the request alone is over the limit: no hint
    ("cases/H04b", RateLimited, Some(3.086)), // "Please try again in 3.086s"
    ("cases/H05", RateLimited, None), // Groq 413 with code rate_limit_exceeded
    ("cases/H12", Context, None),
    ("cases/H13", Context, None),
    ("cases/H13b", Context, None),
    ("cases/H14", RateLimited, Some(8.64)), // x-ratelimit-reset-requests: 8.64s; "per day"
    ("cases/H14b", RateLimited, Some(432.0)), // x-ratelimit-reset-requests: 7m12s
    ("cases/H15", InvalidRequest, None),
    ("cases/H16", RateLimited, None), // Cerebras request_quota_exceeded: per second
    ("cases/H17", Context, None),
    ("cases/H25", InvalidRequest, None),
    // Issue 26's hunt: quotas on a 429 or a 403, overflows on a 400 (in metadata.raw) or a 500.
    ("cases/C80", Quota, None),
    ("cases/C81", Quota, None),
    ("cases/C82", Quota, None),
    ("cases/C83", Context, None),
    ("cases/C84", Context, None),
    // Issue 46: a quota of 0 (no wait helps, so no hint is kept); llama.cpp's two overflows.
    ("cases/C89", Entitlement, None),
    ("cases/C90", Entitlement, None),
    ("cases/C91", Context, None),
    ("cases/C91b", Context, None),
    ("cases/C92b", Context, None), // llama-cpp-python 0.3.36, captured on 127.0.0.1
    ("cases/H26", Entitlement, None),
    ("cases/H30", Server, None),
    ("cases/H31", InvalidRequest, None),
    ("cases/L03", RateLimited, Some(20.0)), // retry-after: 20
    // A monthly spend limit in a rate_limit_error, retry-after-ms three days away (kandev#3811).
    ("cases/L04", SpendLimit, Some(274_579.0)),
];

/// A raw `.http` file: status, headers, and the body with any chunk framing removed.
struct RawResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Splits at the first `\r\n\r\n`, reads the status line and header lines, and de-chunks a
/// `Transfer-Encoding: chunked` body (tolerating a missing final chunk, as C31 and C34 have).
fn parse_http(raw: &[u8]) -> RawResponse {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = std::str::from_utf8(&raw[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let mut resp = RawResponse {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    };
    if resp
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        resp.body = dechunk(&resp.body);
    }
    resp
}

fn dechunk(mut framed: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = framed.windows(2).position(|w| w == b"\r\n") {
        let size_text = std::str::from_utf8(&framed[..line_end]).unwrap();
        let size_text = size_text.split(';').next().unwrap().trim();
        let size = usize::from_str_radix(size_text, 16).unwrap();
        framed = &framed[line_end + 2..];
        if size == 0 {
            break;
        }
        let take = size.min(framed.len());
        out.extend_from_slice(&framed[..take]);
        framed = framed.get(take + 2..).unwrap_or_default();
    }
    out
}

#[test]
fn dechunking_a_truncated_chunked_body() {
    let raw = std::fs::read(test_data_dir().join("cases/C31.http")).unwrap();
    let resp = parse_http(&raw);
    assert_eq!(resp.status, 200);
    let body = String::from_utf8(resp.body).unwrap();
    assert!(body.starts_with("data: {"), "{body}");
    assert!(body.contains("\"content\":\"Partial answer\""), "{body}");
    assert!(!body.contains("\r\nd5\r\n"));
    assert_eq!(
        dechunk(b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"),
        b"hello world"
    );
}

/// Every `.http` file of `tests/fixtures` and `tests/cases` as `folder/name`.
fn stored_files() -> Vec<(String, RawResponse)> {
    let mut out = Vec::new();
    for folder in ["fixtures", "cases"] {
        let mut names: Vec<String> = std::fs::read_dir(test_data_dir().join(folder))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|n| n.strip_suffix(".http").map(str::to_owned))
            .collect();
        names.sort();
        for name in names {
            let raw = std::fs::read(test_data_dir().join(format!("{folder}/{name}.http"))).unwrap();
            out.push((format!("{folder}/{name}"), parse_http(&raw)));
        }
    }
    out
}

#[test]
fn every_non_2xx_file_has_a_row() {
    let table: BTreeMap<&str, _> = STORED.iter().map(|(n, k, r)| (*n, (k, r))).collect();
    assert_eq!(table.len(), STORED.len(), "duplicate rows");
    let files = stored_files();
    assert!(files.len() > 60, "tests/ not found? {}", files.len());
    let errors: Vec<&str> = files
        .iter()
        .filter(|(_, r)| !(200..300).contains(&r.status))
        .map(|(n, _)| n.as_str())
        .collect();
    let missing: Vec<&&str> = errors.iter().filter(|n| !table.contains_key(**n)).collect();
    assert!(
        missing.is_empty(),
        "non-2xx files without a row in STORED: {missing:?}"
    );
    let stale: Vec<&&str> = table.keys().filter(|n| !errors.contains(n)).collect();
    assert!(stale.is_empty(), "rows without a non-2xx file: {stale:?}");
}

/// A handler for `provider` whose base URL is the mock server.
fn handler(provider: &str, server: &MockServer) -> Box<dyn ApiHandler> {
    let (model, base_url) = match provider {
        "openai" => ("gpt-4o", format!("{}/v1", server.url())),
        _ => ("claude-sonnet-4-5-20250929", server.url()),
    };
    let text = format!(
        "[act]\nprovider = \"{provider}\"\nmodel = \"{model}\"\n[providers.\"{provider}\"]\nbase_url = \"{base_url}\"\n"
    );
    let config = ApiConfiguration::from_toml(&text, "test.toml", |_| Some(KEY.to_owned())).unwrap();
    build_api_handler(&config, Mode::Act).unwrap()
}

/// Serves `resp` once and returns the single error `provider`'s stream yields.
async fn error_via_http(provider: &str, resp: HttpResponse) -> ApiError {
    let server = MockServer::start(vec![Reply::new(resp)]).await;
    let h = handler(provider, &server);
    let items: Vec<_> = h
        .create_message(
            "You are terse.",
            &[Message::user_text("hi")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    let e = match <[_; 1]>::try_from(items) {
        Ok([Err(e)]) => e,
        other => panic!("expected exactly one error, got {other:?}"),
    };
    // Rate limits are retried at the provider level before the stream (SPEC R5.1: 3 requests
    // in all for these providers), unless waiting cannot fix them or the server asks for more
    // than the cap (R7.4, H04, H14b); everything else is sent once.
    let want = if is_provider_retryable(&e, &RetryPolicy::STANDARD) {
        3
    } else {
        1
    };
    assert_eq!(server.request_count(), want, "{e}");
    e
}

/// `Display` is one sentence on one line naming provider and status, with no HTML, no raw
/// JSON body and no key.
fn assert_clear_sentence(label: &str, e: &ApiError, provider: &str, status: u16) {
    let text = e.to_string();
    let lower = text.to_ascii_lowercase();
    assert!(text.starts_with(&format!("{provider} ")), "{label}: {text}");
    assert!(
        text.contains(&format!("(HTTP {status})")),
        "{label}: {text}"
    );
    assert!(
        !text.contains('\n') && !text.contains('\r'),
        "{label}: {text}"
    );
    assert!(
        !lower.contains("<html") && !lower.contains("<!doctype") && !lower.contains("<body"),
        "{label}: {text}"
    );
    assert!(!text.contains("{\""), "{label}: raw JSON in {text}");
    assert!(!text.contains(KEY), "{label}: {text}");
    assert!(text.len() < 1000, "{label}: {text}");
}

fn assert_retry_after(label: &str, got: Option<Duration>, want: Option<f64>) {
    match (got, want) {
        (None, None) => {}
        (Some(g), Some(w)) => assert!(
            (g.as_secs_f64() - w).abs() < 0.001,
            "{label}: retry_after {g:?}, want {w} s"
        ),
        _ => panic!("{label}: retry_after {got:?}, want {want:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn every_stored_error_response_through_the_http_path() {
    let files: BTreeMap<String, RawResponse> = stored_files().into_iter().collect();
    for (name, kind, retry_after) in STORED {
        let raw = &files[*name];
        let (folder, file) = name.split_once('/').unwrap();
        for provider in ["openai", "anthropic"] {
            let resp = match folder {
                "fixtures" => HttpResponse::fixture(file),
                _ => HttpResponse::case(file),
            };
            assert_eq!(resp.status(), raw.status, "{name}");
            let label = format!("{name} via {provider}");
            let e = error_via_http(provider, resp).await;
            assert_eq!(e.kind, *kind, "{label}: {e}");
            assert_eq!(e.status, Some(raw.status), "{label}");
            assert_retry_after(&label, e.retry_after, *retry_after);
            assert_eq!(e.provider_id.as_deref(), Some(provider), "{label}");
            assert_clear_sentence(&label, &e, provider, raw.status);
            // AWS errors name their type only in the x-amzn-ErrorType header.
            if let Some(aws) = raw.header("x-amzn-ErrorType") {
                assert_eq!(e.code.as_deref(), aws.split(':').next(), "{label}");
            }
            if let Some(id) = raw
                .header("request-id")
                .or(raw.header("x-request-id"))
                .or(raw.header("x-amzn-RequestId"))
            {
                assert_eq!(e.request_id.as_deref(), Some(id), "{label}");
            }
        }
    }
}

/// Display details the stored responses call for: C09's reset time, C17's advice.
#[tokio::test(start_paused = true)]
async fn quota_reset_and_expired_credentials_are_named() {
    let e = error_via_http("openai", HttpResponse::case("C09")).await;
    assert!(e.to_string().ends_with("; it resets in about 24 h"), "{e}");
    let e = error_via_http("openai", HttpResponse::case("C09b")).await;
    // The message names the reset itself; no second reset time is added.
    assert!(
        e.to_string()
            .ends_with("It will reset at 2026-01-01 05:00:00 +0000 UTC."),
        "{e}"
    );
    let e = error_via_http("openai", HttpResponse::case("C17")).await;
    assert!(e.to_string().contains("refresh the credentials"), "{e}");
    let e = error_via_http("openai", HttpResponse::fixture("gemini_429")).await;
    assert_eq!(e.code.as_deref(), Some("RESOURCE_EXHAUSTED"));
}

/// Shapes no stored file has: an HTML 429 with a hint, an AWS error with a non-JSON body,
/// Gemini's array-wrapped error, OpenRouter's upstream `metadata.raw`, `retry-after-ms`.
#[tokio::test(start_paused = true)]
async fn other_error_shapes_through_the_http_path() {
    let page = "<!DOCTYPE html><html><body><h1>429</h1>secret internals</body></html>";
    let e = error_via_http(
        "openai",
        HttpResponse::new(
            429,
            &[("content-type", "text/html"), ("retry-after", "5")],
            page,
        ),
    )
    .await;
    assert_eq!(
        (e.kind, e.retry_after),
        (RateLimited, Some(Duration::from_secs(5)))
    );
    assert_clear_sentence("html 429", &e, "openai", 429);
    assert!(!e.to_string().contains("secret"), "{e}");

    let e = error_via_http(
        "anthropic",
        HttpResponse::new(
            503,
            &[("content-type", "text/html")],
            "<html><body>Service Unavailable</body></html>",
        ),
    )
    .await;
    assert_eq!(e.kind, Overloaded);
    assert_clear_sentence("html 503", &e, "anthropic", 503);

    let e = error_via_http(
        "openai",
        HttpResponse::new(
            429,
            &[
                ("content-type", "text/plain"),
                (
                    "x-amzn-ErrorType",
                    "ThrottlingException:http://internal.amazon.com/coral/",
                ),
            ],
            "slow down",
        ),
    )
    .await;
    assert_eq!(e.kind, RateLimited);
    assert_eq!(e.code.as_deref(), Some("ThrottlingException"));

    let e = error_via_http(
        "openai",
        HttpResponse::json(
            400,
            r#"[{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#,
        ),
    )
    .await;
    assert_eq!(e.kind, Context);

    let e = error_via_http(
        "openai",
        HttpResponse::json(
            400,
            r#"{"error":{"code":400,"message":"Provider returned error","metadata":{"provider_name":"Anthropic","raw":"{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}"}}}"#,
        ),
    )
    .await;
    assert_eq!(e.kind, Context, "{e}");

    let e = error_via_http(
        "openai",
        HttpResponse::new(
            429,
            &[
                ("content-type", "application/json"),
                ("retry-after-ms", "250"),
                ("retry-after", "1"),
            ],
            r#"{"error":{"message":"Please try again in 20s.","type":"requests","code":"rate_limit_exceeded"}}"#,
        ),
    )
    .await;
    assert_eq!(
        (e.kind, e.retry_after),
        (RateLimited, Some(Duration::from_millis(250)))
    );

    // No header: the message's hint.
    let e = error_via_http(
        "openai",
        HttpResponse::json(
            429,
            r#"{"error":{"message":"Rate limit reached. Please try again in 1.5s.","type":"tokens","code":"rate_limit_exceeded"}}"#,
        ),
    )
    .await;
    assert_eq!(e.retry_after, Some(Duration::from_millis(1500)));
}

/// What the provider layer makes of an Anthropic 429 `rate_limit_error` whose `retry-after` is
/// days away and whose words name no window (issue 46 item 8, from BerriAI/litellm#37754): a
/// rate limit, not a spent quota (SPEC R7.3 wants the words of a long window, as L04's "monthly
/// spend limit" has), with the 3-day hint kept, sent once (the hint is past the cap a provider
/// waits), and a sentence naming when it resets. A gateway maps this kind to its 429.
#[tokio::test(start_paused = true)]
async fn an_anthropic_rate_limit_days_away_stays_a_rate_limit_with_its_hint() {
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}"#;
    let resp = HttpResponse::new(
        429,
        &[
            ("content-type", "application/json"),
            ("retry-after", "259200"),
        ],
        body,
    );
    let e = error_via_http("anthropic", resp).await;
    assert_eq!(e.kind, RateLimited, "{e}");
    assert_eq!(e.retry_after, Some(Duration::from_secs(259_200)));
    assert!(e.to_string().contains("resets in about 72 h"), "{e}");
}
