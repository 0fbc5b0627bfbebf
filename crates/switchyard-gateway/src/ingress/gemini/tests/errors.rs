//! Failures in Google's shape, `{"error": {code, message, status}}`, as Gemini CLI classifies
//! them.

use std::time::Duration;

use serde_json::json;
use switchyard_api::{ApiError, ErrorKind};

use super::super::super::request::IngressError;
use super::super::wire::{error_response, invalid_request, refusal_body};

#[test]
fn each_kind_has_googles_status_name() {
    let cases = [
        (ErrorKind::Auth, 401, "UNAUTHENTICATED"),
        (ErrorKind::Entitlement, 403, "PERMISSION_DENIED"),
        (ErrorKind::RateLimited, 429, "RESOURCE_EXHAUSTED"),
        (ErrorKind::QuotaExceeded, 402, "RESOURCE_EXHAUSTED"),
        (ErrorKind::Overloaded, 503, "UNAVAILABLE"),
        (ErrorKind::ContextWindowExceeded, 400, "INVALID_ARGUMENT"),
        (ErrorKind::InvalidRequest, 400, "INVALID_ARGUMENT"),
        (ErrorKind::Timeout, 504, "DEADLINE_EXCEEDED"),
        (ErrorKind::Server, 502, "INTERNAL"),
        (ErrorKind::Network, 502, "UNAVAILABLE"),
    ];
    for (kind, code, status) in cases {
        let (got, body) = error_response(&ApiError::new(kind, "It failed."));
        assert_eq!(got, code, "{kind:?}");
        assert_eq!(body["error"]["code"], code, "{kind:?}");
        assert_eq!(body["error"]["status"], status, "{kind:?}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("It failed.")
        );
    }
}

#[test]
fn a_providers_wait_goes_in_retry_info_as_gemini_cli_reads_it() {
    let mut error = ApiError::new(ErrorKind::RateLimited, "Slow down.");
    error.retry_after = Some(Duration::from_millis(36_200));
    let (_, body) = error_response(&error);
    assert_eq!(
        body["error"]["details"],
        json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"}])
    );
}

#[test]
fn the_gateways_own_404_and_413_keep_their_status_and_blame_no_provider() {
    let mut missing = ApiError::new(ErrorKind::InvalidRequest, "The model `x` is not routed.");
    missing.status = Some(404);
    let (code, body) = error_response(&missing);
    assert_eq!(
        (code, body["error"]["status"].as_str()),
        (404, Some("NOT_FOUND"))
    );
    assert_eq!(body["error"]["message"], "The model `x` is not routed.");
}

#[test]
fn refusals_and_malformed_bodies() {
    for (status, name) in [
        (401, "UNAUTHENTICATED"),
        (402, "RESOURCE_EXHAUSTED"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
        (413, "INVALID_ARGUMENT"),
        (429, "RESOURCE_EXHAUSTED"),
        (500, "INTERNAL"),
        (503, "UNAVAILABLE"),
    ] {
        let body = refusal_body(status, "No.");
        assert_eq!(
            body,
            json!({"error": {"code": status, "message": "No.", "status": name}})
        );
    }
    let (status, body) = invalid_request(&IngressError::new("contents[0].role", "is wrong."));
    assert_eq!(status, 400);
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(
        body["error"]["details"][0]["fieldViolations"][0],
        json!({"field": "contents[0].role", "description": "is wrong."})
    );
}
