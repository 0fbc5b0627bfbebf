//! Signing in through the OpenID provider: `/ui/oidc/start` sends the browser there, and
//! `/ui/oidc/callback` checks what it brings back, maps the groups and opens a session.
//! Spec: R14.11b.

use std::net::IpAddr;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::{Request, Response};
use switchyard_core::limits::Clock;
use switchyard_core::store::{Actor, TaskStore};

use super::answers::{html, redirect};
use super::board::Board;
use super::forwarded::{client_address, secure_cookie};
use super::session::{Refused, Who, cookie, login_cookie, login_id};
use super::throttle::Throttle;
use super::{pages, people};
use crate::oidc::{Identity, LOGIN_TTL, Oidc, grant};
use crate::reply::{Body, set_header};

/// `GET /ui/oidc/start`: a new sign-in at the provider, bound to this browser by a cookie.
pub(super) async fn start(
    board: &Board,
    oidc: &Oidc,
    request: &Request<Incoming>,
    peer: IpAddr,
) -> Response<Body> {
    let settings = &board.config().serve;
    let address = client_address(settings, request.headers(), peer);
    match oidc.begin(address, login_id(request.headers())).await {
        Ok((browser, to)) => {
            let mut r = redirect(&to);
            let secure = secure_cookie(settings, request.headers());
            set_header(
                &mut r,
                "set-cookie",
                &login_cookie(&browser, secure, LOGIN_TTL.as_secs()),
            );
            r
        }
        Err(problem) => {
            tracing::warn!(%problem, "single sign-on could not start");
            let sentence = format!("Single sign-on is not available now: {problem}.");
            html(503, pages::sign_in(Some(&sentence), true))
        }
    }
}

/// `GET /ui/oidc/callback`: the provider's answer. A user whose groups map to a role gets a
/// session; one whose groups map to nothing is disabled and refused.
pub(super) async fn callback(
    (board, throttle): (&Board, &Throttle),
    oidc: &Oidc,
    request: &Request<Incoming>,
    peer: IpAddr,
) -> Response<Body> {
    let settings = &board.config().serve;
    let address = client_address(settings, request.headers(), peer);
    if let Err(wait) = throttle.begin(address, Instant::now()) {
        let secs = wait.as_secs().max(1);
        let problem = format!("Too many failed sign-ins: wait {secs} s, then try again.");
        let mut r = html(429, pages::sign_in(Some(&problem), true));
        set_header(&mut r, "retry-after", &secs.to_string());
        return r;
    }
    let secure = secure_cookie(settings, request.headers());
    let query = request.uri().query().unwrap_or("");
    let store = &*board.store;
    let now = Clock::system().now_ms();
    let from = address.to_string();
    let who = match oidc.finish(query, login_id(request.headers())).await {
        Ok(who) => who,
        Err(problem) => {
            let by = Actor {
                who: "single sign-on".to_owned(),
                origin: from,
            };
            super::audit::sso(store, &by, now, Some(&problem)).await;
            let sentence = format!("Signing in through the identity provider failed: {problem}.");
            return html(401, pages::sign_in(Some(&sentence), true));
        }
    };
    // The person is who they say: whatever follows, the attempt is not a failed one.
    throttle.succeeded(address, Instant::now());
    let by = Actor {
        who: format!("sso {}", who.display()),
        origin: from,
    };
    let Some(granted) = grant(&who.groups, &oidc.settings.groups) else {
        return unmapped(store, &who, &by, now).await;
    };
    let person = match people::sign_in(store, &who, &granted, (&by, now)).await {
        Ok(person) => person,
        Err(problem) => {
            let sentence = format!("The gateway's store could not record the sign-in: {problem}.");
            return html(503, pages::sign_in(Some(&sentence), true));
        }
    };
    let by = Actor {
        who: super::audit::person_name(&person),
        origin: by.origin,
    };
    let landing = if person.role == people::Role::Admin {
        "/ui/spend"
    } else {
        "/ui/keys"
    };
    match board.sessions.open(Who::User(person)) {
        Ok(id) => {
            super::audit::sso(store, &by, now, None).await;
            let mut r = redirect(landing);
            set_header(&mut r, "set-cookie", &cookie(&id, secure, true));
            // The login cookie has done its work.
            if let Ok(v) = hyper::header::HeaderValue::from_str(&login_cookie("", secure, 0)) {
                r.headers_mut().append(hyper::header::SET_COOKIE, v);
            }
            r
        }
        Err(Refused::Key(p) | Refused::Unavailable(p)) => html(503, pages::sign_in(Some(&p), true)),
    }
}

/// A sign-in whose groups map to nothing: the user is disabled, so their keys stop working,
/// and told why in one sentence.
async fn unmapped(store: &dyn TaskStore, who: &Identity, by: &Actor, now: i64) -> Response<Body> {
    if let Err(e) = people::disable(store, who, (by, now)).await {
        tracing::warn!(error = %e, "a user whose groups map to nothing could not be disabled");
    }
    let sentence = format!(
        "You signed in as {}, but none of your groups gives access to this gateway: ask an administrator to add you to one of the groups it maps.",
        who.display()
    );
    super::audit::sso(store, by, now, Some("none of the user's groups is mapped")).await;
    html(403, pages::sign_in(Some(&sentence), true))
}
