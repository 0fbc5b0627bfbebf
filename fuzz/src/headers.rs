//! The target `serve_headers`: a client request's header block and a dashboard form body read
//! as `switchyard serve` reads them (SPEC R14.2, R14.3, R14.11), with what each reader
//! promises checked.

use std::net::IpAddr;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use switchyard_gateway::fuzzing::{KEY_MAX, form_decode, form_field, read_headers};

/// `data`'s lines up to the first blank one as `name: value` headers (lines that are not a
/// valid header are skipped, as hyper refuses them before the gateway sees them); the rest is
/// a urlencoded form body.
pub fn check(data: &[u8]) {
    let blank = data.windows(2).position(|w| w == b"\n\n");
    let (head, form) = blank.map_or((data, &[][..]), |i| (&data[..i], &data[i + 2..]));
    let headers = header_map(head);
    check_headers(&headers);
    check_form(&String::from_utf8_lossy(form));
}

fn header_map(head: &[u8]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in head.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let name = HeaderName::from_bytes(line[..colon].trim_ascii());
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) = (name, value) {
            headers.append(name, value);
        }
    }
    headers
}

/// The values of header `name` that are text.
fn texts<'h>(headers: &'h HeaderMap, name: &str) -> Vec<&'h str> {
    (headers.get_all(name).iter())
        .filter_map(|v| v.to_str().ok())
        .collect()
}

fn check_headers(headers: &HeaderMap) {
    let peer = IpAddr::from([192, 0, 2, 7]);
    let read = read_headers(headers, peer);
    if let Some(key) = read.key {
        assert!(!key.is_empty() && key.len() <= KEY_MAX, "{key:?}");
        assert_eq!(key, key.trim(), "a key read with spaces around it");
        let sent = texts(headers, "authorization")
            .into_iter()
            .chain(texts(headers, "x-api-key"));
        assert!(
            sent.into_iter().any(|v| v.contains(key)),
            "a key no header holds: {key:?}"
        );
    }
    if let Some(id) = read.session {
        assert!(
            id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id:?}"
        );
    }
    let [chat, responses, messages] = &read.forwarded;
    assert!(
        chat.is_empty() && responses.is_empty(),
        "{:?}",
        read.forwarded
    );
    let beta = texts(headers, "anthropic-beta");
    for (name, value) in messages {
        assert_eq!(name, "anthropic-beta");
        assert!(
            value.len() <= 4096 && beta.contains(&value.as_str()),
            "{value:?}"
        );
    }
    assert_eq!(read.address_untrusted, peer);
    if read.address_when_trusted != peer {
        let said = texts(headers, "x-forwarded-for").join(",");
        let address = read.address_when_trusted.to_string();
        assert!(
            said.split(',')
                .any(|a| a.trim().parse() == Ok(read.address_when_trusted)),
            "{address} from {said:?}"
        );
    }
    if read.secure_when_trusted {
        let proto = texts(headers, "x-forwarded-proto").join(",");
        assert!(proto.to_ascii_lowercase().contains("https"), "{proto:?}");
    }
}

/// `text` percent-encoded as a browser would, every byte but the unreserved ones.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn check_form(text: &str) {
    let _ = form_field(text, "key");
    let _ = form_decode(text);
    // What a browser encodes reads back as it was, as a value among others.
    let encoded = encode(text);
    assert_eq!(form_decode(&encoded), text);
    let body = format!("next=%2Fui&key={encoded}&x");
    assert_eq!(form_field(&body, "key").as_deref(), Some(text));
}
