//! Secrets at rest (OAuth tokens, third-party API keys and passwords, connector headers, webhook
//! signing secrets): AES-256-GCM envelope encryption.
//!
//! Each secret gets a fresh 256-bit data key. In AWS the data key comes from KMS
//! (`GenerateDataKey` under the credentials key) and only its KMS-encrypted form is stored;
//! locally a configured key-encryption key wraps it. The caller's `context` (e.g. `conn#<id>`) is
//! bound as AES-GCM associated data and as the KMS encryption context, so a sealed value copied
//! onto another item does not open.
//!
//! Stored form: `v1.<kms|local>.<b64 wrapped data key>.<b64 nonce ‖ ciphertext ‖ tag>`.

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use async_trait::async_trait;
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use platform_domain::secrets::{SealError, SecretBox};
use rand::RngCore;

const NONCE_LEN: usize = 12;
const KMS_CONTEXT_KEY: &str = "context";

/// A local key-encryption key that is not base64 of exactly 32 bytes.
#[derive(Debug, thiserror::Error)]
#[error("must be base64 of exactly 32 bytes")]
pub struct BadLocalKey;

enum Keys {
    Local(Box<Aes256Gcm>),
    Kms {
        client: aws_sdk_kms::Client,
        key_id: String,
    },
}

/// Seals and opens secrets. Build once per process.
pub struct Sealer {
    keys: Keys,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.keys {
            Keys::Local(_) => "local",
            Keys::Kms { .. } => "kms",
        };
        f.debug_struct("Sealer").field("keys", &kind).finish()
    }
}

fn encrypt(cipher: &Aes256Gcm, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, SealError> {
    let mut nonce = [0u8; NONCE_LEN];
    rand::rng().fill_bytes(&mut nonce);
    let ct = cipher
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .map_err(|_| SealError::Malformed)?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&ct);
    Ok(out)
}

fn decrypt(cipher: &Aes256Gcm, sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>, SealError> {
    if sealed.len() < NONCE_LEN {
        return Err(SealError::Malformed);
    }
    let (nonce, ct) = sealed.split_at(NONCE_LEN);
    cipher
        .decrypt(Nonce::from_slice(nonce), Payload { msg: ct, aad })
        .map_err(|_| SealError::Open)
}

fn data_cipher(key: &[u8]) -> Result<Aes256Gcm, SealError> {
    Aes256Gcm::new_from_slice(key).map_err(|_| SealError::Malformed)
}

/// The wrapped data key's associated data: binds it to the same context as the payload.
fn wrap_aad(context: &str) -> Vec<u8> {
    format!("dek|{context}").into_bytes()
}

impl Sealer {
    /// A sealer whose data keys are wrapped by `kek` (development and tests).
    pub fn local(kek: [u8; 32]) -> Sealer {
        Sealer {
            keys: Keys::Local(Box::new(Aes256Gcm::new(&kek.into()))),
        }
    }

    /// A sealer using KMS key `key_id` for data keys.
    pub fn kms(client: aws_sdk_kms::Client, key_id: impl Into<String>) -> Sealer {
        Sealer {
            keys: Keys::Kms {
                client,
                key_id: key_id.into(),
            },
        }
    }

    /// A local sealer from base64 of a 32-byte key-encryption key.
    pub fn local_from_base64(raw: &str) -> Result<Sealer, BadLocalKey> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(raw.trim())
            .map_err(|_| BadLocalKey)?;
        let kek: [u8; 32] = bytes.try_into().map_err(|_| BadLocalKey)?;
        Ok(Sealer::local(kek))
    }
}

#[async_trait]
impl SecretBox for Sealer {
    /// Encrypts `plaintext` bound to `context`; the result is safe to store.
    async fn seal(&self, plaintext: &[u8], context: &str) -> Result<String, SealError> {
        let (kind, dek, wrapped) = match &self.keys {
            Keys::Local(kek) => {
                let mut dek = [0u8; 32];
                rand::rng().fill_bytes(&mut dek);
                let wrapped = encrypt(kek, &dek, &wrap_aad(context))?;
                ("local", dek.to_vec(), wrapped)
            }
            Keys::Kms { client, key_id } => {
                let out = client
                    .generate_data_key()
                    .key_id(key_id)
                    .key_spec(DataKeySpec::Aes256)
                    .encryption_context(KMS_CONTEXT_KEY, context)
                    .send()
                    .await
                    .map_err(|e| {
                        SealError::Kms(aws_sdk_kms::error::DisplayErrorContext(&e).to_string())
                    })?;
                let dek = out
                    .plaintext()
                    .ok_or_else(|| SealError::Kms("no plaintext data key".into()))?
                    .as_ref()
                    .to_vec();
                let wrapped = out
                    .ciphertext_blob()
                    .ok_or_else(|| SealError::Kms("no encrypted data key".into()))?
                    .as_ref()
                    .to_vec();
                ("kms", dek, wrapped)
            }
        };
        let payload = encrypt(&data_cipher(&dek)?, plaintext, context.as_bytes())?;
        Ok(format!(
            "v1.{kind}.{}.{}",
            B64.encode(wrapped),
            B64.encode(payload)
        ))
    }

    /// Decrypts a value made by [`SecretBox::seal`] with the same `context`.
    async fn open(&self, sealed: &str, context: &str) -> Result<Vec<u8>, SealError> {
        let mut parts = sealed.split('.');
        let (Some("v1"), Some(kind), Some(wrapped), Some(payload), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(SealError::Malformed);
        };
        let wrapped = B64.decode(wrapped).map_err(|_| SealError::Malformed)?;
        let payload = B64.decode(payload).map_err(|_| SealError::Malformed)?;
        let dek = match (&self.keys, kind) {
            (Keys::Local(kek), "local") => decrypt(kek, &wrapped, &wrap_aad(context))?,
            (Keys::Kms { client, key_id }, "kms") => client
                .decrypt()
                .key_id(key_id)
                .ciphertext_blob(Blob::new(wrapped))
                .encryption_context(KMS_CONTEXT_KEY, context)
                .send()
                .await
                .map_err(|e| {
                    // A context mismatch is InvalidCiphertextException: the value does not open.
                    if e.as_service_error()
                        .is_some_and(|s| s.is_invalid_ciphertext_exception())
                    {
                        SealError::Open
                    } else {
                        SealError::Kms(aws_sdk_kms::error::DisplayErrorContext(&e).to_string())
                    }
                })?
                .plaintext()
                .ok_or_else(|| SealError::Kms("no plaintext data key".into()))?
                .as_ref()
                .to_vec(),
            _ => return Err(SealError::Open),
        };
        decrypt(&data_cipher(&dek)?, &payload, context.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform_domain::secrets::SecretBox;

    fn sealer(byte: u8) -> Sealer {
        Sealer::local([byte; 32])
    }

    #[tokio::test]
    async fn a_sealed_secret_opens_only_with_its_key_and_context() {
        let s = sealer(7);
        let sealed = s.seal(b"xoxb-secret-token", "conn#1").await.unwrap();
        assert!(sealed.starts_with("v1.local."));
        assert!(!sealed.contains("xoxb"));
        assert_eq!(
            s.open(&sealed, "conn#1").await.unwrap(),
            b"xoxb-secret-token"
        );
        assert!(matches!(
            s.open(&sealed, "conn#2").await,
            Err(SealError::Open)
        ));
        assert!(matches!(
            sealer(8).open(&sealed, "conn#1").await,
            Err(SealError::Open)
        ));
    }

    #[tokio::test]
    async fn each_seal_is_fresh_and_tampering_is_detected() {
        let s = sealer(1);
        let a = s.seal(b"same", "c").await.unwrap();
        let b = s.seal(b"same", "c").await.unwrap();
        assert_ne!(a, b, "fresh data key and nonce each time");
        let mut parts: Vec<String> = a.split('.').map(str::to_owned).collect();
        let mut payload = B64.decode(&parts[3]).unwrap();
        let last = payload.len() - 1;
        payload[last] ^= 1;
        parts[3] = B64.encode(payload);
        assert!(matches!(
            s.open(&parts.join("."), "c").await,
            Err(SealError::Open)
        ));
        for junk in [
            "",
            "v1",
            "v2.local.a.b",
            "v1.local.!!.b",
            "v1.kms.AA.AA",
            "v1.local.a.b.c",
        ] {
            assert!(s.open(junk, "c").await.is_err(), "{junk:?}");
        }
    }
}
