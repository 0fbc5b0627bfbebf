//! Tokens signed here with test keys: the provider's key, a forger's key under the same key id,
//! and a shared secret; each claim the checks read is set wrong once.

use chrono::{Duration, Utc};
use openidconnect::core::{
    CoreHmacKey, CoreJsonWebKeySet, CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey,
};
use openidconnect::{
    Audience, EndUserEmail, IdTokenClaims, IssuerUrl, JsonWebKeyId, Nonce, PrivateSigningKey,
    StandardClaims, SubjectIdentifier,
};
use serde_json::json;

use super::*;

const ISSUER: &str = "https://idp.example.com/realms/eng";
const CLIENT: &str = "switchyard";
const NONCE: &str = "n-0S6_WzA2Mj";

fn key(pem: &str) -> CoreRsaPrivateSigningKey {
    CoreRsaPrivateSigningKey::from_pem(pem, Some(JsonWebKeyId::new("k1".to_owned()))).unwrap()
}

fn provider_key() -> CoreRsaPrivateSigningKey {
    key(include_str!("test-signing-key-a.pem"))
}

/// The provider's published key set: only its own key.
fn published() -> CoreJsonWebKeySet {
    CoreJsonWebKeySet::new(vec![provider_key().as_verification_key()])
}

/// Claims as the provider would send them, changed by `edit`.
fn claims(edit: impl FnOnce(&mut Claims)) -> IdTokenClaims<OtherClaims, CoreGenderClaim> {
    let mut c = Claims {
        issuer: ISSUER.to_owned(),
        audience: CLIENT.to_owned(),
        expires: Utc::now() + Duration::minutes(5),
        issued: Utc::now() - Duration::minutes(1),
        nonce: NONCE.to_owned(),
        other: json!({"groups": ["eng", "everyone"]}),
    };
    edit(&mut c);
    let other: OtherClaims = serde_json::from_value(c.other).unwrap();
    IdTokenClaims::new(
        IssuerUrl::new(c.issuer).unwrap(),
        vec![Audience::new(c.audience)],
        c.expires,
        c.issued,
        StandardClaims::new(SubjectIdentifier::new("user-1".to_owned()))
            .set_email(Some(EndUserEmail::new("ada@example.com".to_owned()))),
        other,
    )
    .set_nonce(Some(Nonce::new(c.nonce)))
}

struct Claims {
    issuer: String,
    audience: String,
    expires: DateTime<Utc>,
    issued: DateTime<Utc>,
    nonce: String,
    other: serde_json::Value,
}

fn signed(
    claims: IdTokenClaims<OtherClaims, CoreGenderClaim>,
    by: &impl PrivateSigningKey<
        VerificationKey = impl openidconnect::JsonWebKey<SigningAlgorithm = CoreJwsSigningAlgorithm>,
    >,
    alg: CoreJwsSigningAlgorithm,
) -> String {
    Token::new(claims, by, alg, None, None).unwrap().to_string()
}

fn check(raw: &str) -> Result<Identity, String> {
    let keys = published();
    verify(
        raw,
        &Expected {
            client_id: CLIENT,
            issuer: ISSUER,
            keys: &keys,
            nonce: NONCE,
            groups_claim: "groups",
            now: Utc::now(),
        },
    )
}

fn rs256(edit: impl FnOnce(&mut Claims)) -> String {
    signed(
        claims(edit),
        &provider_key(),
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    )
}

#[test]
fn a_token_the_provider_signed_for_us_names_the_user_and_their_groups() {
    let who = check(&rs256(|_| {})).unwrap();
    assert_eq!(
        (who.issuer.as_str(), who.subject.as_str()),
        (ISSUER, "user-1")
    );
    assert_eq!(who.email.as_deref(), Some("ada@example.com"));
    assert_eq!(who.groups, ["eng", "everyone"]);
    // A provider clock a little behind ours: a token expired 30 s ago by our clock still passes.
    assert!(check(&rs256(|c| c.expires = Utc::now() - Duration::seconds(30))).is_ok());
    // A provider clock ahead of ours: issued 30 s in our future.
    assert!(check(&rs256(|c| c.issued = Utc::now() + Duration::seconds(30))).is_ok());
    // One group as a string, as some providers send a single value.
    let one = check(&rs256(|c| c.other = json!({"groups": "eng"}))).unwrap();
    assert_eq!(one.groups, ["eng"]);
    assert!(
        check(&rs256(|c| c.other = json!({})))
            .unwrap()
            .groups
            .is_empty()
    );
}

#[test]
fn a_forged_token_is_refused() {
    let forger = key(include_str!("test-signing-key-b.pem"));
    let forged = signed(
        claims(|_| {}),
        &forger,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    );
    let e = check(&forged).unwrap_err();
    assert!(e.contains("signature did not verify"), "{e}");
    // A key id the provider does not publish: named, so the keys are fetched again once.
    let other = CoreRsaPrivateSigningKey::from_pem(
        include_str!("test-signing-key-b.pem"),
        Some(JsonWebKeyId::new("k2".to_owned())),
    )
    .unwrap();
    let e = check(&signed(
        claims(|_| {}),
        &other,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    ))
    .unwrap_err();
    assert!(e.contains("No matching key found"), "{e}");
    // Signed with a shared secret instead of the provider's key.
    let hmac = CoreHmacKey::new(b"a secret anyone with the client secret knows".to_vec());
    let e = check(&signed(
        claims(|_| {}),
        &hmac,
        CoreJwsSigningAlgorithm::HmacSha256,
    ))
    .unwrap_err();
    assert!(e.contains("refused"), "{e}");
    // The signature cut off.
    let good = rs256(|_| {});
    let cut = &good[..good.rfind('.').unwrap() + 1];
    assert!(check(cut).is_err());
}

#[test]
fn an_expired_wrong_audience_wrong_issuer_or_wrong_nonce_token_is_refused() {
    for (edit, named) in [
        (
            Box::new(|c: &mut Claims| c.expires = Utc::now() - Duration::seconds(120))
                as Box<dyn FnOnce(&mut Claims)>,
            "expired",
        ),
        (
            Box::new(|c: &mut Claims| c.audience = "another-app".to_owned()),
            "audience",
        ),
        (
            Box::new(|c: &mut Claims| c.issuer = "https://evil.example.com/realms/eng".to_owned()),
            "issuer",
        ),
        (
            Box::new(|c: &mut Claims| c.nonce = "replayed".to_owned()),
            "nonce",
        ),
    ] {
        let e = check(&rs256(edit)).unwrap_err();
        assert!(e.to_lowercase().contains(named), "{named}: {e}");
        assert!(
            !e.contains("eyJ"),
            "the token is never in the sentence: {e}"
        );
    }
}

#[test]
fn groups_left_out_for_being_too_many_are_named_not_taken_as_none() {
    let overage = json!({"_claim_names": {"groups": "src1"}, "_claim_sources": {"src1": {"endpoint": "https://graph.microsoft.com/v1.0/users/x/getMemberObjects"}}});
    let e = check(&rs256(|c| c.other = overage)).unwrap_err();
    assert!(e.contains("too many groups"), "{e}");
    let e = check(&rs256(|c| c.other = json!({"groups": {"a": 1}}))).unwrap_err();
    assert!(e.contains("not a list"), "{e}");
}
