//! Entry points for the fuzz targets `serve_headers` and `websocket_messages`, behind the
//! `fuzzing` feature and never part of the library's API: what the gateway reads from a
//! request's headers, the dashboard's form bodies and a WebSocket's messages. Each is a thin
//! call of the crate's own code.
//! Spec: R14.1b, R14.2, R14.6, R14.11.

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

/// One Responses WebSocket's conversation, read message by message as its session reads them
/// once their shape has passed.
pub struct SocketChain(crate::websocket::Chain);

/// What a socket does with one message.
#[derive(Debug)]
pub enum SocketRead {
    /// Runs this Responses body through the pipeline.
    Run(Vec<u8>),
    /// Answers with these events and no model: a warm-up.
    Answer(Vec<serde_json::Value>),
    /// Refuses it with this `error` event.
    Refuse(serde_json::Value),
    /// Owes nothing back.
    Nothing,
}

impl SocketChain {
    /// A socket whose bodies are capped at `body_limit` bytes.
    pub fn new(body_limit: usize) -> Self {
        Self(crate::websocket::Chain::new(body_limit))
    }

    /// Reads the message `text`.
    pub fn read(&mut self, text: &[u8]) -> SocketRead {
        use crate::websocket::Read;
        match self.0.read(text) {
            Read::Run(body) => SocketRead::Run(body),
            Read::Answer(events) => SocketRead::Answer(events),
            Read::Refuse(event) => SocketRead::Refuse(event),
            Read::Nothing => SocketRead::Nothing,
        }
    }

    /// Notes an event of the turn being run.
    pub fn saw(&mut self, event: &serde_json::Value) {
        self.0.saw(event);
    }
}
