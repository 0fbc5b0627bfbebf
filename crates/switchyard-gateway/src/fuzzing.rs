//! Entry points for the fuzz target `serve_headers`, behind the `fuzzing` feature and never
//! part of the library's API: what the gateway reads from a request's headers, and the
//! dashboard's form bodies. Each is a thin call of the crate's own code.
//! Spec: R14.2, R14.6, R14.11.

use std::net::IpAddr;

use hyper::HeaderMap;
use switchyard_api::config::ServeSettings;

use crate::ingress::Dialect;

/// The longest client key read from a header, in bytes; a longer one is refused unread.
pub const KEY_MAX: usize = crate::auth::KEY_MAX;

/// What the gateway reads from one request's `headers`, coming from `peer`.
#[derive(Debug)]
pub struct HeadersRead<'h> {
    /// The client key presented: `Authorization: Bearer KEY`, else `x-api-key`, else
    /// `x-goog-api-key`.
    pub key: Option<&'h str>,
    /// The dashboard's session id in `Cookie`.
    pub session: Option<&'h str>,
    /// The headers sent on with a forwarded body, for Chat, Responses and Messages in that
    /// order.
    pub forwarded: [Vec<(String, String)>; 3],
    /// Whether the session cookie is `Secure` when `trust_forwarded_headers` is set.
    pub secure_when_trusted: bool,
    /// The client address sign-ins are counted under, trusting forwarded headers.
    pub address_when_trusted: IpAddr,
    /// The same without that trust: always `peer`.
    pub address_untrusted: IpAddr,
}

/// Reads `headers` as every reader of the gateway does.
pub fn read_headers(headers: &HeaderMap, peer: IpAddr) -> HeadersRead<'_> {
    let trusted = ServeSettings {
        trust_forwarded_headers: true,
        ..ServeSettings::default()
    };
    let forwarded = [
        Dialect::ChatCompletions,
        Dialect::Responses,
        Dialect::AnthropicMessages,
    ]
    .map(|d| d.rules().forward_headers(headers));
    HeadersRead {
        key: crate::auth::presented_key(headers),
        session: crate::ui::session::session_id(headers),
        forwarded,
        secure_when_trusted: crate::ui::forwarded::secure_cookie(&trusted, headers),
        address_when_trusted: crate::ui::forwarded::client_address(&trusted, headers, peer),
        address_untrusted: crate::ui::forwarded::client_address(
            &ServeSettings::default(),
            headers,
            peer,
        ),
    }
}

/// The value of `name` in the urlencoded form body `text`.
pub fn form_field(text: &str, name: &str) -> Option<String> {
    crate::ui::form::field(text, name)
}

/// `text` with `+` as space and `%XX` decoded, as the dashboard reads a form value.
pub fn form_decode(text: &str) -> String {
    crate::ui::form::decode(text)
}
