//! [`KeyStore`]: where client keys, teams, budget holds and their running totals are kept.
//! Spec: R14.6, R14.7, R14.8.

use super::audit::Actor;
use super::holds::{HoldOutcome, HoldRequest};
use super::keys::{ClientKey, Team};
use super::totals::TotalsCheck;
use super::usage::{UsageBy, UsageQuery, UsageRow, UsageSlice};
use super::users::{SignIn, User, UserUpdate};
use crate::store::StoreFuture;

/// Client keys, teams, budget holds and running totals, implemented by every store backend.
pub trait KeyStore: Send + Sync {
    /// Stores `key` with its `hash`; an id or hash already stored is a conflict.
    fn create_key<'a>(&'a self, key: &'a ClientKey, hash: &'a str) -> StoreFuture<'a, ()>;

    /// Every key, revoked ones too, oldest first.
    fn client_keys(&self) -> StoreFuture<'_, Vec<ClientKey>>;

    /// The key whose hash is `hash`, revoked and expired ones too: the caller says why not.
    fn key_by_hash<'a>(&'a self, hash: &'a str) -> StoreFuture<'a, Option<ClientKey>>;

    /// Whether any key that is not revoked is stored; `serve` then requires one.
    fn has_client_keys(&self) -> StoreFuture<'_, bool>;

    /// Revokes key `id` at `now_ms`, keeping an earlier revocation; `false` for no such key.
    fn revoke_key<'a>(&'a self, id: &'a str, now_ms: i64) -> StoreFuture<'a, bool>;

    /// Gives key `id` a new hash and prefix; `false` when it is missing or revoked.
    fn rotate_key<'a>(
        &'a self,
        id: &'a str,
        hash: &'a str,
        prefix: &'a str,
    ) -> StoreFuture<'a, bool>;

    /// Stores `team`; a team of that name is a conflict.
    fn create_team<'a>(&'a self, team: &'a Team) -> StoreFuture<'a, ()>;

    /// Every team, by name.
    fn teams(&self) -> StoreFuture<'_, Vec<Team>>;

    /// The team `name`.
    fn team<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Option<Team>>;

    /// Takes `req`'s reservation when [`crate::store::decide_hold`] allows it, atomically.
    fn hold<'a>(&'a self, req: &'a HoldRequest) -> StoreFuture<'a, HoldOutcome>;

    /// The request log since `since_ms` grouped `by`, requests without a group last.
    fn usage(&self, by: UsageBy, since_ms: i64) -> StoreFuture<'_, Vec<UsageRow>>;

    /// The request log over `query`'s range, grouped and bucketed as it says.
    fn usage_between<'a>(&'a self, query: &'a UsageQuery) -> StoreFuture<'a, Vec<UsageSlice>>;

    /// What the key or team has used since `from_ms`, settled and held.
    fn used_since<'a>(
        &'a self,
        key_id: Option<&'a str>,
        team: Option<&'a str>,
        from_ms: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, f64>;

    /// Recomputes every running total and reports those that differ; `repair` rewrites them.
    fn check_totals(&self, repair: bool) -> StoreFuture<'_, TotalsCheck>;

    /// Makes or rewrites the user `sign_in` names and enables them, in one transaction with its
    /// audit row when anything but the sign-in time changed.
    fn sign_in_user<'a>(&'a self, sign_in: &'a SignIn, by: &'a Actor) -> StoreFuture<'a, User>;

    /// Disables user `id` from `at_ms`, keeping an earlier time, audited; `false` for no such user.
    fn disable_user<'a>(&'a self, id: &'a str, at_ms: i64, by: &'a Actor) -> StoreFuture<'a, bool>;

    /// Every user, oldest first.
    fn users(&self) -> StoreFuture<'_, Vec<User>>;

    /// The user `id`.
    fn user<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<User>>;

    /// Applies `update` to user `id` with its audit row in one transaction, ending the user's
    /// leases when the budget changes or the user is disabled; `None` for no such user.
    fn change_user<'a>(
        &'a self,
        id: &'a str,
        update: &'a UserUpdate,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(User, User)>>;
}
