//! The ID token's checks: its signature by one of the provider's published keys, its issuer,
//! its audience, its expiry and the nonce this sign-in sent; then who it names and their groups.
//! Spec: R14.11b.

use std::collections::HashMap;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use openidconnect::core::{
    CoreGenderClaim, CoreJsonWebKeySet, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm,
};
use openidconnect::{
    AdditionalClaims, ClaimsVerificationError, ClientId, IdToken, IdTokenVerifier, IssuerUrl, Nonce,
};
use serde::{Deserialize, Serialize};

/// How far the provider's clock may be behind ours before a fresh token looks expired.
pub(crate) const CLOCK_SKEW_SECONDS: i64 = 60;

/// The largest number of groups read from one token.
const GROUPS_MAX: usize = 1000;

/// Every claim of the token besides the standard ones, read by name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct OtherClaims {
    #[serde(flatten)]
    pub(crate) rest: HashMap<String, serde_json::Value>,
}

impl AdditionalClaims for OtherClaims {}

pub(crate) type Token = IdToken<
    OtherClaims,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

/// Who a verified ID token names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Identity {
    pub(crate) issuer: String,
    pub(crate) subject: String,
    pub(crate) email: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) groups: Vec<String>,
}

impl Identity {
    /// How the dashboard shows this person: email, else name, else subject.
    pub(crate) fn display(&self) -> String {
        (self.email.clone().or_else(|| self.name.clone())).unwrap_or_else(|| self.subject.clone())
    }
}

/// What the checks need: who we are, who the provider is, its keys, and this sign-in's nonce.
pub(crate) struct Expected<'a> {
    pub(crate) client_id: &'a str,
    pub(crate) issuer: &'a str,
    pub(crate) keys: &'a CoreJsonWebKeySet,
    pub(crate) nonce: &'a str,
    pub(crate) groups_claim: &'a str,
    pub(crate) now: DateTime<Utc>,
}

/// Checks the compact ID token `raw` against `expected`: the identity it names, or one sentence
/// saying which check failed. The token itself is never in the sentence.
pub(crate) fn verify(raw: &str, expected: &Expected<'_>) -> Result<Identity, String> {
    let token = Token::from_str(raw).map_err(|e| format!("the ID token could not be read: {e}"))?;
    let issuer = IssuerUrl::new(expected.issuer.to_owned())
        .map_err(|e| format!("the issuer URL is not valid: {e}"))?;
    // Asymmetric algorithms only: a token signed with the client secret proves less.
    let algs = [
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
        CoreJwsSigningAlgorithm::RsaSsaPssSha256,
        CoreJwsSigningAlgorithm::EcdsaP256Sha256,
        CoreJwsSigningAlgorithm::EcdsaP384Sha384,
        CoreJwsSigningAlgorithm::EdDsa,
    ];
    let now = expected.now;
    let verifier = IdTokenVerifier::new_public_client(
        ClientId::new(expected.client_id.to_owned()),
        issuer,
        expected.keys.clone(),
    )
    .set_allowed_algs(algs)
    // Expiry is compared with a clock set back by the skew allowed.
    .set_time_fn(move || now - chrono::Duration::seconds(CLOCK_SKEW_SECONDS));
    let nonce = Nonce::new(expected.nonce.to_owned());
    let claims = token.into_claims(&verifier, &nonce).map_err(|e| match e {
        ClaimsVerificationError::SignatureVerification(why) => {
            format!("the ID token was refused: its signature did not verify ({why})")
        }
        e => format!("the ID token was refused: {e}"),
    })?;
    let email = claims.email().map(|e| e.to_string());
    let name = (claims.name().and_then(|n| n.get(None))).map(|n| n.to_string());
    let groups = groups(&claims.additional_claims().rest, expected.groups_claim)?;
    Ok(Identity {
        issuer: claims.issuer().to_string(),
        subject: claims.subject().to_string(),
        email,
        name,
        groups,
    })
}

/// The groups listed under `claim`: an array of strings, or one string. A claim left out is no
/// group, unless the provider said it left them out because there were too many.
fn groups(other: &HashMap<String, serde_json::Value>, claim: &str) -> Result<Vec<String>, String> {
    let listed = match other.get(claim) {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|g| g.as_str())
            .map(str::to_owned)
            .collect(),
        Some(serde_json::Value::String(one)) => vec![one.clone()],
        Some(_) => {
            return Err(format!(
                "the ID token's `{claim}` claim is not a list of group names"
            ));
        }
        None if overage(other, claim) => {
            return Err(format!(
                "the identity provider left the `{claim}` claim out because you are in too many groups: have it send only the groups assigned to this application"
            ));
        }
        None => Vec::new(),
    };
    if listed.len() > GROUPS_MAX {
        return Err(format!(
            "the ID token lists more than {GROUPS_MAX} groups: have the identity provider send only the groups assigned to this application"
        ));
    }
    Ok(listed)
}

/// Whether the token says `claim` is elsewhere (`_claim_names`), as Microsoft Entra does past
/// 200 groups.
fn overage(other: &HashMap<String, serde_json::Value>, claim: &str) -> bool {
    other
        .get("_claim_names")
        .and_then(|n| n.get(claim))
        .is_some()
}

#[cfg(test)]
mod tests;
