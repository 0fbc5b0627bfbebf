//! Client keys and teams as stored: the store keeps a key's SHA-256 and a display prefix only.
//! Spec: R14.6.

use sha2::{Digest, Sha256};

use super::budget::Budget;

/// What every client key starts with.
pub const KEY_SCHEME: &str = "sk-sy-";

/// How many characters of a key are kept for display: the scheme and 6 more.
pub const KEY_PREFIX_LEN: usize = 12;

/// Random bytes in a key, shown as 48 hex characters after [`KEY_SCHEME`].
const KEY_RANDOM_BYTES: usize = 24;

/// A new key: the secret, which is shown once and never stored, its hash and its prefix.
pub struct NewSecret {
    /// The key itself, `sk-sy-` and 48 hex characters.
    pub key: String,
    /// Its SHA-256, lowercase hex.
    pub hash: String,
    /// Its first [`KEY_PREFIX_LEN`] characters.
    pub prefix: String,
}

impl std::fmt::Debug for NewSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSecret")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Random hex from the OS RNG; `Err` says why the OS gave none.
fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    getrandom::getrandom(&mut buf).map_err(|e| format!("the OS random source failed: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A new client key of 192 bits from the OS RNG.
pub fn generate_key() -> Result<NewSecret, String> {
    let key = format!("{KEY_SCHEME}{}", random_hex(KEY_RANDOM_BYTES)?);
    Ok(NewSecret {
        hash: hash_key(&key),
        prefix: key[..KEY_PREFIX_LEN].to_owned(),
        key,
    })
}

/// A new key id, `key_` and 16 hex characters.
pub fn generate_key_id() -> Result<String, String> {
    Ok(format!("key_{}", random_hex(8)?))
}

/// The SHA-256 of `key` in lowercase hex: what the store keeps and looks keys up by.
pub fn hash_key(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One client key as stored, never the key itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientKey {
    /// `key_` and 16 hex characters.
    pub id: String,
    /// The key's first [`KEY_PREFIX_LEN`] characters, for display and metric labels.
    pub prefix: String,
    /// Who or what it is for.
    pub name: String,
    /// Its team, when it has one.
    pub team: Option<String>,
    /// The model names it may use, as globs where `*` is any run; empty: every model.
    pub models: Vec<String>,
    /// Its own budget.
    pub budget: Option<Budget>,
    /// Requests per minute.
    pub rpm: Option<u64>,
    /// Input tokens per minute, by Switchyard's estimate of each request.
    pub tpm: Option<u64>,
    /// Requests in flight at once.
    pub max_parallel: Option<u64>,
    /// When it stops working, Unix ms.
    pub expires_ms: Option<i64>,
    /// For `/metrics` and the dashboard only, never for completions.
    pub admin: bool,
    /// When it was made, Unix ms.
    pub created_ms: i64,
    /// When it was revoked, Unix ms.
    pub revoked_ms: Option<i64>,
    /// The user who owns it, by id: their budget counts it and their state decides its use.
    pub owner: Option<String>,
}

/// A team: the keys that name it share its budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Team {
    /// Its name, unique on a store.
    pub name: String,
    /// Its budget.
    pub budget: Option<Budget>,
    /// When it was made, Unix ms.
    pub created_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_hashed_and_prefixed() {
        let a = generate_key().unwrap();
        let b = generate_key().unwrap();
        assert_ne!(a.key, b.key);
        assert!(a.key.starts_with(KEY_SCHEME) && a.key.len() == 6 + 48);
        assert_eq!(a.hash, hash_key(&a.key));
        assert_eq!(a.hash.len(), 64);
        assert!(a.key.starts_with(&a.prefix) && a.prefix.len() == KEY_PREFIX_LEN);
        assert!(!format!("{a:?}").contains(&a.key));
    }
}
