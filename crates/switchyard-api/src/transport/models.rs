//! Which models an OpenAI-compatible server serves, so a `--base-url` without `--model` can use the
//! one model a local server has.

use std::time::Duration;

use super::client::HttpClient;
use crate::config::HttpSettings;

/// How long the listing may take, connection included.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of the listing's body read, in bytes.
const MAX_LIST_BYTES: usize = 1024 * 1024;

/// The ids `GET {base_url}/models` lists, within 5 s and 1 MiB; an error is one phrase, keyless.
pub async fn served_models(
    base_url: &str,
    key: Option<&str>,
    settings: &HttpSettings,
) -> Result<Vec<String>, String> {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let listing = async {
        let http = HttpClient::shared(settings, base_url)?;
        let client = http.get()?;
        let mut request = client.get(&url).header("accept", "application/json");
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| format!("GET {url} failed ({})", crate::error::body::innermost(&e)))?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_LIST_BYTES {
                return Err(format!("GET {url} answered more than 1 MiB"));
            }
        }
        if !(200..300).contains(&status) {
            return Err(format!("GET {url} answered HTTP {status}"));
        }
        model_ids(&body).ok_or_else(|| format!("GET {url} did not answer a list of models"))
    };
    match tokio::time::timeout(LIST_TIMEOUT, listing).await {
        Ok(listed) => listed,
        Err(_) => Err(format!("GET {url} did not answer within 5 s")),
    }
}

/// The `data[].id` of an OpenAI model list.
fn model_ids(body: &[u8]) -> Option<Vec<String>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value
        .get("data")?
        .as_array()?
        .iter()
        .map(|m| m.get("id")?.as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::model_ids;

    #[test]
    fn the_ids_of_an_openai_model_list_are_read_in_order() {
        let body = br#"{"object":"list","data":[{"id":"a","object":"model"},{"id":"b"}]}"#;
        assert_eq!(model_ids(body), Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(model_ids(br#"{"data":[{"name":"a"}]}"#), None);
        assert_eq!(model_ids(b"<html>"), None);
    }
}
