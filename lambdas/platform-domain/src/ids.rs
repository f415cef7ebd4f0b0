//! Identifiers and the hashes secrets are stored under. Every id of the platform is a prefix plus
//! random hex (some with the creation time first, so they sort by it); every secret the platform
//! must recognise later (API keys, connect links, OAuth states, webhook ingress tokens) is kept
//! only as its SHA-256.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// `n` random bytes as lower-case hex.
pub fn random_hex(n: usize) -> String {
    let mut r = vec![0u8; n];
    rand::rng().fill_bytes(&mut r);
    hex(&r)
}

/// `prefix` + `n` random bytes as hex, e.g. `acc_` + 20 hex digits.
pub fn random_id(prefix: &str, n: usize) -> String {
    format!("{prefix}{}", random_hex(n))
}

/// `prefix` + 12 hex digits of `now_ms` + 16 random hex digits: unique and sorted by time.
pub fn timed_id(prefix: &str, now_ms: i64) -> String {
    format!("{prefix}{:012x}{}", now_ms.max(0), random_hex(8))
}

/// `n` random bytes, base64url without padding (tokens that travel in URLs).
pub fn random_token(n: usize) -> String {
    let mut r = vec![0u8; n];
    rand::rng().fill_bytes(&mut r);
    URL_SAFE_NO_PAD.encode(r)
}

/// Lower-case hex SHA-256 of `secret`: the form secrets are stored and looked up in.
pub fn sha256_hex(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_their_shape() {
        assert_eq!(random_id("acc_", 10).len(), 24);
        assert_ne!(random_id("x", 8), random_id("x", 8));
        let t = timed_id("run_", 0x1234);
        assert!(t.starts_with("run_000000001234"), "{t}");
        assert_eq!(t.len(), 4 + 12 + 16);
        assert_eq!(random_token(32).len(), 43);
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
