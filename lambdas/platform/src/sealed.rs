//! TEMPORARY stand-in for the lead's `sealed` module (plan9.md signature); replaced on merge.
//! AES-256-GCM with a local key only; the context is the associated data.

const LOCAL_KEY_VAR: &str = "CREDENTIALS_KEY";

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore;

#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("no credentials key configured")]
    NotConfigured,
    #[error("the credentials key is malformed")]
    BadKey,
    #[error("sealed data is malformed or was sealed for another context")]
    Open,
}

pub struct Sealer {
    cipher: Aes256Gcm,
}

impl Sealer {
    pub async fn from_env() -> Result<Sealer, SealError> {
        let raw = std::env::var(LOCAL_KEY_VAR).map_err(|_| SealError::NotConfigured)?;
        let bytes = STANDARD.decode(raw.trim()).map_err(|_| SealError::BadKey)?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| SealError::BadKey)?;
        Ok(Self::local(key))
    }

    pub fn local(key: [u8; 32]) -> Sealer {
        Sealer {
            cipher: Aes256Gcm::new(&key.into()),
        }
    }

    pub async fn seal(&self, plaintext: &[u8], context: &str) -> Result<String, SealError> {
        let mut nonce = [0u8; 12];
        rand::rng().fill_bytes(&mut nonce);
        let ct = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| SealError::Open)?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        Ok(STANDARD.encode(out))
    }

    pub async fn open(&self, sealed: &str, context: &str) -> Result<Vec<u8>, SealError> {
        let raw = STANDARD.decode(sealed).map_err(|_| SealError::Open)?;
        if raw.len() < 12 {
            return Err(SealError::Open);
        }
        let (nonce, ct) = raw.split_at(12);
        self.cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ct,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| SealError::Open)
    }
}
