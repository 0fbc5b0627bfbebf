//! The gateway's requests to the OpenID provider, each bounded in time and size and never
//! following a redirect, so a slow or hostile provider cannot hold a sign-in or fill memory.
//! Spec: R14.11b.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use openidconnect::{AsyncHttpClient, HttpRequest, HttpResponse};

/// The longest one request to the provider may take, connection included.
pub(crate) const IDP_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read from the provider: a discovery document, a key set or tokens.
pub(crate) const IDP_BODY_MAX: usize = 256 * 1024;

/// Why a request to the provider failed, in one sentence without the request's body.
#[derive(Debug)]
pub(crate) struct IdpError(String);

impl fmt::Display for IdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for IdpError {}

/// The HTTP client `openidconnect` sends its requests through.
pub(crate) struct IdpHttp {
    client: reqwest::Client,
}

impl IdpHttp {
    pub(crate) fn new() -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(IDP_TIMEOUT)
            .connect_timeout(IDP_TIMEOUT)
            .build()
            .map_err(|e| {
                format!("The HTTP client for the OpenID provider could not be built: {e}.")
            })?;
        Ok(Self { client })
    }

    /// Sends `request`; an answer over [`IDP_BODY_MAX`] bytes is an error, read no further.
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, IdpError> {
        let (parts, body) = request.into_parts();
        let host = parts.uri.host().unwrap_or("the provider").to_owned();
        let failed = |e: reqwest::Error| {
            let why = if e.is_timeout() {
                "did not answer in 10 s".to_owned()
            } else {
                e.without_url().to_string()
            };
            IdpError(format!("the OpenID provider at {host} {why}"))
        };
        let mut answer = (self.client)
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(failed)?;
        let too_big = || {
            IdpError(format!(
                "the OpenID provider at {host} sent more than {} KiB",
                IDP_BODY_MAX / 1024
            ))
        };
        if answer
            .content_length()
            .is_some_and(|n| n > IDP_BODY_MAX as u64)
        {
            return Err(too_big());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = answer.chunk().await.map_err(failed)? {
            if bytes.len() + chunk.len() > IDP_BODY_MAX {
                return Err(too_big());
            }
            bytes.extend_from_slice(&chunk);
        }
        let mut built = http_response(answer.status(), bytes);
        *built.headers_mut() = answer.headers().clone();
        Ok(built)
    }
}

// A boxed future: a closure over `&self` would not be `Send` for every lifetime the client's
// bound asks, and the dashboard's answers must be `Send` to be spawned.
impl<'c> AsyncHttpClient<'c> for IdpHttp {
    type Error = IdpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, IdpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(self.send(request))
    }
}

fn http_response(status: reqwest::StatusCode, body: Vec<u8>) -> HttpResponse {
    let mut response = HttpResponse::new(body);
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use switchyard_testkit::{HttpResponse, MockServer, Reply};

    use super::*;

    fn get(url: &str) -> HttpRequest {
        let mut r = HttpRequest::new(Vec::new());
        *r.uri_mut() = url.parse().unwrap();
        r
    }

    #[tokio::test]
    async fn an_answer_over_the_bound_or_a_redirect_is_not_taken() {
        let big = vec![b'x'; IDP_BODY_MAX + 1];
        let moved = HttpResponse::new(302, &[("location", "http://127.0.0.1:9/evil")], "");
        let small = HttpResponse::new(200, &[("content-type", "application/json")], "{}");
        let server = MockServer::start(vec![
            Reply::new(HttpResponse::new(200, &[], big)),
            Reply::new(moved),
            Reply::new(small),
        ])
        .await;
        let http = IdpHttp::new().unwrap();
        let e = http.send(get(&server.url())).await.unwrap_err();
        assert!(e.to_string().contains("more than 256 KiB"), "{e}");
        // A redirect comes back as it is; openidconnect then refuses its status.
        let r = http.send(get(&server.url())).await.unwrap();
        assert_eq!(r.status().as_u16(), 302);
        let r = http.send(get(&server.url())).await.unwrap();
        assert_eq!(
            (r.status().as_u16(), r.body().as_slice()),
            (200, b"{}".as_slice())
        );
        assert_eq!(server.request_count(), 3);
    }
}
