//! API keys: generation, the at-rest hash, the visible prefix and the Bearer header.
//!
//! A key is `cpk_` followed by 43 base64url characters (32 random bytes). Only its SHA-256 is
//! stored: with 256 bits of entropy a fast hash is enough (no salt or slow KDF needed, as there
//! is nothing to brute-force), and the hash doubles as the lookup key. The first 12 characters
//! (`cpk_` + 8) are kept in clear so people can tell keys apart.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use subtle::ConstantTimeEq;

/// Every key starts with this.
pub const KEY_PREFIX: &str = "cpk_";
const RANDOM_BYTES: usize = 32;
/// Length of a well-formed key: prefix plus unpadded base64url of 32 bytes.
pub const KEY_LEN: usize = KEY_PREFIX.len() + 43;
/// How many leading characters of a key are stored and shown in clear.
pub const VISIBLE_LEN: usize = 12;

/// A freshly generated secret key. `Debug` never prints it.
pub struct ApiKey(String);

impl ApiKey {
    pub fn generate() -> Self {
        let mut bytes = [0u8; RANDOM_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        Self(format!("{KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The secret itself, to be shown once to its owner.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> KeyHash {
        KeyHash::of(&self.0)
    }

    pub fn visible_prefix(&self) -> String {
        self.0.chars().take(VISIBLE_LEN).collect()
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({}…)", self.visible_prefix())
    }
}

/// Lower-case hex SHA-256 of a key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct KeyHash(String);

impl KeyHash {
    pub fn of(key: &str) -> Self {
        Self(crate::ids::sha256_hex(key))
    }

    /// Wraps a hash read back from the store.
    pub fn from_stored(hex: String) -> Self {
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Constant-time equality, for comparing a presented key's hash with a stored one.
    pub fn matches(&self, other: &KeyHash) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}

impl std::fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyHash({}…)", &self.0[..self.0.len().min(8)])
    }
}

/// Whether `key` has the shape of one of our keys. Checked before any store lookup so junk
/// never costs a read.
pub fn well_formed(key: &str) -> bool {
    key.len() == KEY_LEN
        && key.starts_with(KEY_PREFIX)
        && key[KEY_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The credential in an `Authorization` header value, if it uses the Bearer scheme
/// (case-insensitive scheme, as RFC 9110 says).
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_well_formed_and_distinct() {
        let a = ApiKey::generate();
        let b = ApiKey::generate();
        assert!(well_formed(a.expose()), "{}", a.expose());
        assert_ne!(a.expose(), b.expose());
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.visible_prefix().len(), VISIBLE_LEN);
        assert!(a.expose().starts_with(&a.visible_prefix()));
    }

    #[test]
    fn debug_never_prints_the_secret() {
        let k = ApiKey::generate();
        assert!(!format!("{k:?}").contains(k.expose()));
        assert!(!format!("{:?}", k.hash()).contains(k.hash().as_str()));
    }

    #[test]
    fn hash_is_sha256_hex() {
        // sha256("abc"), FIPS 180-2 test vector.
        assert_eq!(
            KeyHash::of("abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(KeyHash::of("abc").matches(&KeyHash::of("abc")));
        assert!(!KeyHash::of("abc").matches(&KeyHash::of("abd")));
    }

    #[test]
    fn bearer_parsing() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer   abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearer"), None);
    }

    #[test]
    fn malformed_keys_are_rejected_early() {
        assert!(!well_formed("cpk_short"));
        assert!(!well_formed(&format!("xyz_{}", "a".repeat(43))));
        assert!(!well_formed(&format!("cpk_{}", "a!".repeat(21) + "a")));
        assert!(well_formed(&format!("cpk_{}", "a".repeat(43))));
    }
}
