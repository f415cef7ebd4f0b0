//! Secrets at rest behind a port: OAuth tokens, third-party API keys and passwords, connector
//! headers and webhook signing secrets are stored only sealed. The implementation (AES-256-GCM
//! envelopes with a local or KMS key) lives with the other storage code; the domain only asks to
//! seal and open, always with a `context` naming the item the secret belongs to (`conn#<id>`), so
//! a sealed value copied onto another item does not open.

use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("KMS: {0}")]
    Kms(String),
    /// Wrong key, wrong context, or tampered data. Deliberately says nothing more.
    #[error("the sealed value does not open")]
    Open,
    #[error("the sealed value is malformed")]
    Malformed,
}

/// Seals and opens secrets.
#[async_trait]
pub trait SecretBox: Send + Sync + std::fmt::Debug {
    /// Encrypts `plaintext` bound to `context`; the result is safe to store.
    async fn seal(&self, plaintext: &[u8], context: &str) -> Result<String, SealError>;

    /// Decrypts a value made by [`SecretBox::seal`] with the same `context`.
    async fn open(&self, sealed: &str, context: &str) -> Result<Vec<u8>, SealError>;
}
