//! `/ui`: the one place a dashboard path is answered. Without a live session only the
//! sign-in form and its stylesheet answer.
//! Spec: R14.11.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::json;
use switchyard_api::ApiConfiguration;
use switchyard_core::store::TaskStore;

use super::answers::{html, redirect};
use super::assets::{STYLE, asset};
use super::board::Board;
use super::form::read_body;
use super::forwarded::{client_address, secure_cookie};
use super::live::Live;
use super::reloads::Reloads;
use super::session::{Refused, cookie, cookie_cleared};
use super::throttle::Throttle;
use super::{form, pages};
use crate::reply::{Body, json as json_response, set_header, with_body};

/// The dashboard.
pub(crate) struct Ui {
    board: Arc<Board>,
    /// Failed sign-ins, bounded per client address and overall.
    throttle: Throttle,
}

impl Ui {
    /// The dashboard over `store` and `config`, listing what `live` registers.
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        config: ApiConfiguration,
        live: Arc<Live>,
        reloads: Arc<Reloads>,
    ) -> Self {
        Self {
            board: Arc::new(Board::new(store, (config, reloads), live)),
            throttle: Throttle::new(Instant::now()),
        }
    }

    /// `serve` is shutting down: every live-page stream ends at once, so none holds the drain to
    /// its deadline; one opened after ends as it starts.
    pub(crate) fn stop(&self) {
        self.board.stopping.cancel();
    }

    /// Shows `config` from now on: its routes, its cap and its `[serve]` settings.
    pub(crate) fn reload(&self, config: ApiConfiguration) {
        self.board.reload(config);
    }

    /// Answers one `/ui` request from a client connected from `peer`. Every answer allows only
    /// the gateway's own files and is not cached.
    pub(crate) async fn handle(&self, request: Request<Incoming>, peer: IpAddr) -> Response<Body> {
        let mut response = self.route(request, peer).await;
        let h = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
        set_header(&mut response, "content-security-policy", h);
        set_header(&mut response, "x-content-type-options", "nosniff");
        set_header(&mut response, "referrer-policy", "no-referrer");
        if response.headers().get("cache-control").is_none() {
            set_header(&mut response, "cache-control", "no-store");
        }
        response
    }

    async fn route(&self, request: Request<Incoming>, peer: IpAddr) -> Response<Body> {
        let path = request.uri().path().to_owned();
        let method = request.method().clone();
        let sso = self.board.oidc.clone();
        match (&method, path.as_str(), &sso) {
            (&Method::GET, "/ui/signin", _) => {
                return html(200, pages::sign_in(None, sso.is_some()));
            }
            (&Method::POST, "/ui/signin", _) => return self.sign_in(request, peer).await,
            (&Method::GET, "/ui/oidc/start", Some(oidc)) => {
                return super::sso::start(&self.board, oidc, &request, peer).await;
            }
            (&Method::GET, "/ui/oidc/callback", Some(oidc)) => {
                let board = (&*self.board, &self.throttle);
                return super::sso::callback(board, oidc, &request, peer).await;
            }
            (&Method::GET, p, _) if p == format!("/ui/assets/{STYLE}") => return file(STYLE),
            _ => {}
        }
        let Some(session) = self.board.sessions.current(request.headers()) else {
            return refused(&path);
        };
        if !self.board.sessions.key_still_good(&session).await {
            self.board.sessions.sign_out(request.headers());
            return refused(&path);
        }
        if let Some(api) = path.strip_prefix("/ui/api/") {
            let address = client_address(&self.board.config().serve, request.headers(), peer);
            let by = super::audit::actor(&session, address);
            return super::api::handle(&self.board, request, api.to_owned(), (&by, &session)).await;
        }
        match (&method, path.as_str()) {
            (&Method::POST, "/ui/signout") => {
                self.board.sessions.sign_out(request.headers());
                let mut r = redirect("/ui/signin");
                let secure = secure_cookie(&self.board.config().serve, request.headers());
                set_header(&mut r, "set-cookie", &cookie_cleared(secure));
                r
            }
            (&Method::GET, "/ui" | "/ui/") => redirect("/ui/spend"),
            (&Method::GET, p) if p.starts_with("/ui/assets/") => file(&p["/ui/assets/".len()..]),
            (&Method::GET, p) => match pages::page(&p["/ui/".len()..], &session) {
                Some(page) => html(200, page),
                None => not_found(),
            },
            _ => not_found(),
        }
    }

    /// `POST /ui/signin`: a good key gets a session cookie and the spend page, another the form
    /// again with the sentence why not. Past the failed attempts allowed, a 429 comes before the
    /// key is read.
    async fn sign_in(&self, request: Request<Incoming>, peer: IpAddr) -> Response<Body> {
        let config = self.board.config();
        let settings = &config.serve;
        let address = client_address(settings, request.headers(), peer);
        if let Err(wait) = self.throttle.begin(address, Instant::now()) {
            let secs = wait.as_secs().max(1);
            let problem = format!(
                "Too many failed sign-ins: wait {secs} s, then try again with an admin key."
            );
            let mut r = html(
                429,
                pages::sign_in(Some(&problem), config.serve.oidc.is_some()),
            );
            set_header(&mut r, "retry-after", &secs.to_string());
            return r;
        }
        let secure = secure_cookie(settings, request.headers());
        let sso = self.board.oidc.is_some();
        let body = match read_body(request).await {
            Ok(body) => body,
            Err(problem) => return html(400, pages::sign_in(Some(&problem), sso)),
        };
        let key = form::field(&String::from_utf8_lossy(&body), "key").unwrap_or_default();
        let signed = self.board.sessions.sign_in(&key).await;
        let problem = match &signed {
            Ok(_) => None,
            Err(Refused::Key(p)) => Some(p.as_str()),
            Err(Refused::Unavailable(_)) => Some("the store could not check the key"),
        };
        let now = switchyard_core::limits::Clock::system().now_ms();
        super::audit::sign_in(&*self.board.store, &key, address, now, problem).await;
        match signed {
            Ok(id) => {
                // A good key: the attempt is not counted.
                self.throttle.succeeded(address, Instant::now());
                let mut r = redirect("/ui/spend");
                set_header(&mut r, "set-cookie", &cookie(&id, secure, false));
                r
            }
            Err(Refused::Key(problem)) => html(401, pages::sign_in(Some(&problem), sso)),
            // Not the key's fault: the attempt is not counted.
            Err(Refused::Unavailable(problem)) => {
                self.throttle.succeeded(address, Instant::now());
                html(503, pages::sign_in(Some(&problem), sso))
            }
        }
    }
}

/// A request without a session: 401 for the API, a redirect to sign in for a page.
fn refused(path: &str) -> Response<Body> {
    if path.starts_with("/ui/api/") {
        let body = json!({"error": "Sign in first: this dashboard needs a session (/ui/signin)."});
        json_response(401, &body)
    } else {
        redirect("/ui/signin")
    }
}

fn not_found() -> Response<Body> {
    json_response(404, &json!({"error": "There is no such dashboard page."}))
}

/// An embedded file, cached for an hour: its bytes change only with the binary.
fn file(name: &str) -> Response<Body> {
    match asset(name) {
        Some(a) => {
            let mut r = with_body(
                200,
                a.content_type,
                Full::new(Bytes::from_static(a.bytes)).boxed(),
            );
            set_header(&mut r, "cache-control", "private, max-age=3600");
            r
        }
        None => not_found(),
    }
}
