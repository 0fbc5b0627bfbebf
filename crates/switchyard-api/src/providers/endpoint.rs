//! Where a provider's requests go: regional endpoints, the Bedrock and Vertex AI hosts by region,
//! Bedrock's cross-region model ids, and which URLs are on this machine.
//! Spec: R4.8.

use crate::config::ConfigError;
#[cfg(feature = "bedrock")]
use crate::model::lookup::CROSS_REGION_PREFIXES;

/// Providers with an endpoint per region, `(provider, region, base URL)`, from the reference's
/// `*ApiLine` options; the first row is the default. Every provider defaults to `international`,
/// qwen too though the reference says `china`, so one setting means the same for all four.
pub const REGIONAL_ENDPOINTS: &[(&str, &str, &str)] = &[
    (
        "qwen",
        "international",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    ),
    (
        "qwen",
        "china",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
    ),
    ("zai", "international", "https://api.z.ai/api/paas/v4"),
    ("zai", "china", "https://open.bigmodel.cn/api/paas/v4"),
    ("moonshot", "international", "https://api.moonshot.ai/v1"),
    ("moonshot", "china", "https://api.moonshot.cn/v1"),
    (
        "minimax",
        "international",
        "https://api.minimax.io/anthropic",
    ),
    ("minimax", "china", "https://api.minimaxi.com/anthropic"),
];

/// A provider's region and base URL: `configured`, else its first row; `Ok(None)` for others.
pub(crate) fn regional_endpoint(
    provider: &str,
    configured: Option<&str>,
) -> Result<Option<(&'static str, &'static str)>, ConfigError> {
    let rows: Vec<_> = REGIONAL_ENDPOINTS
        .iter()
        .filter(|(p, _, _)| *p == provider)
        .collect();
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let Some(wanted) = configured.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(Some((first.1, first.2)));
    };
    rows.iter()
        .find(|(_, r, _)| r.eq_ignore_ascii_case(wanted))
        .map(|(_, r, url)| Some((*r, *url)))
        .ok_or_else(|| ConfigError::Region {
            provider: provider.to_owned(),
            region: wanted.to_owned(),
            known: rows
                .iter()
                .map(|(_, r, _)| *r)
                .collect::<Vec<_>>()
                .join(" or "),
        })
}

/// The base model id of a Bedrock inference-profile id, or `None` without a cross-region prefix.
#[cfg(feature = "bedrock")]
pub(crate) fn strip_cross_region_prefix(id: &str) -> Option<&str> {
    CROSS_REGION_PREFIXES
        .iter()
        .find_map(|p| id.strip_prefix(p))
        .filter(|rest| rest.contains('.'))
}

/// Bedrock's regional endpoint, with a literal `{region}` for the handler to fill in at request
/// time when no region is known yet.
pub(crate) fn bedrock_base_url(region: Option<&str>) -> String {
    format!(
        "https://bedrock-runtime.{}.amazonaws.com",
        region.unwrap_or("{region}")
    )
}

/// The Vertex AI host: the global one for `global` or no region, else the regional one.
pub(crate) fn vertex_base_url(region: Option<&str>) -> String {
    match region {
        None | Some("global") => "https://aiplatform.googleapis.com".to_owned(),
        Some(r) => format!("https://{r}-aiplatform.googleapis.com"),
    }
}

/// The lower-case host and port of `url`, such as `127.0.0.1:8089` or `[::1]:80`; `None` when it
/// does not parse or names no host.
pub fn url_host(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    Some(match parsed.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// Whether `url` is on this machine, so its server needs no key. Only the parsed host counts:
/// `https://127.0.0.1.attacker.example` and `http://localhost@evil.example` are not local, and
/// neither is a URL that does not parse.
pub fn is_loopback(url: &str) -> bool {
    use reqwest::Url;
    use std::net::IpAddr;
    let Ok(parsed) = Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.trim_end_matches('.').eq_ignore_ascii_case("localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_detection() {
        assert!(is_loopback("http://127.0.0.1:8089/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:80/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("https://localhost.evil.com/v1"));
        // The issue-14 finding: a host that starts like a loopback address is not one.
        assert!(!is_loopback("https://127.0.0.1.attacker.example/v1"));
        assert!(!is_loopback("http://localhost@evil.example/v1"));
        assert!(!is_loopback("http://127.0.0.1:8089@evil.example/v1"));
        assert!(!is_loopback("not a url"));
        assert!(is_loopback("http://127.0.0.2:1/v1"));
        assert!(is_loopback("http://LOCALHOST.:1/v1"));
    }
}
