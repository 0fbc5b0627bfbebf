//! What the dashboard believes of a proxy in front of the gateway: nothing unless `[serve]
//! trust_forwarded_headers` says so.
//! Spec: R14.11.

use std::net::IpAddr;

use hyper::HeaderMap;
use switchyard_api::config::ServeSettings;

/// Whether the session cookie is `Secure`: always with `secure_cookie`, or when a trusted
/// proxy's first `X-Forwarded-Proto` value is `https`.
pub(crate) fn secure_cookie(settings: &ServeSettings, headers: &HeaderMap) -> bool {
    settings.secure_cookie
        || (settings.trust_forwarded_headers
            && last_or_first(headers, "x-forwarded-proto", First)
                .is_some_and(|p| p.eq_ignore_ascii_case("https")))
}

/// The client address sign-in attempts are counted under: `peer`, or the last
/// `X-Forwarded-For` address, the one a trusted proxy appended.
pub(crate) fn client_address(
    settings: &ServeSettings,
    headers: &HeaderMap,
    peer: IpAddr,
) -> IpAddr {
    if !settings.trust_forwarded_headers {
        return peer;
    }
    (last_or_first(headers, "x-forwarded-for", Last))
        .and_then(|a| a.parse().ok())
        .unwrap_or(peer)
}

#[derive(Clone, Copy)]
enum Which {
    First,
    Last,
}
use Which::{First, Last};

/// The first or last comma-separated value of header `name` over all its lines, trimmed.
fn last_or_first<'h>(headers: &'h HeaderMap, name: &str, which: Which) -> Option<&'h str> {
    let mut values = (headers.get_all(name).iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty());
    match which {
        First => values.next(),
        Last => values.next_back(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, value.parse().unwrap());
        }
        h
    }

    #[test]
    fn forwarded_headers_count_only_when_trusted() {
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let h = headers(&[
            ("x-forwarded-proto", "https"),
            ("x-forwarded-for", "203.0.113.9, 198.51.100.7"),
        ]);
        let mut s = ServeSettings::default();
        assert!(!secure_cookie(&s, &h));
        assert_eq!(client_address(&s, &h, peer), peer);
        s.trust_forwarded_headers = true;
        assert!(secure_cookie(&s, &h));
        assert_eq!(client_address(&s, &h, peer).to_string(), "198.51.100.7");
        assert!(!secure_cookie(
            &s,
            &headers(&[("x-forwarded-proto", "http, https")])
        ));
        assert_eq!(
            client_address(&s, &headers(&[("x-forwarded-for", "nonsense")]), peer),
            peer
        );
        let always = ServeSettings {
            secure_cookie: true,
            ..ServeSettings::default()
        };
        assert!(secure_cookie(&always, &HeaderMap::new()));
    }
}
