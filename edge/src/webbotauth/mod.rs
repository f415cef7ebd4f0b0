//! Web Bot Auth (`draft-ietf-webbotauth-httpsig-protocol`): verifying signed agent requests
//! (RFC 9421, Ed25519) and signing the site's own key directory.
//!
//! Verification never fails a request: a bad signature only means the client is treated as
//! anonymous. Only a signature verified against a directory fetched over HTTPS from the agent's
//! own origin, and already in the cache, names an identity the limiter trusts (see
//! [`Outcome::agent_key`]). The work is split so that this module does no I/O: [`start`] checks everything it
//! can from the request and, when the key directory lives at an HTTPS URL, says which URL the
//! glue must fetch; [`finish`] verifies against the fetched directory.
//!
//! - `verify`: picking and checking a request's signature.
//! - `directory`: where an agent's keys are (`Signature-Agent`), the SSRF guard on that URL and
//!   the per-isolate cache of fetched directories.
//! - `sign`: the site's own key directory and its response signature.
//! - `fields`: structured-field helpers both directions share.
//!
//! Structured fields are parsed and serialised with `sfv` and signatures checked with
//! `ed25519-dalek`. The `web-bot-auth` crate is the reference these are tested against (a
//! dev-dependency: its signer and verifier cross-check ours in the unit tests) rather than a
//! runtime dependency, because it links the whole `regex` engine with its Unicode tables for one
//! header-unfolding pattern, which nearly doubled the gzipped Worker.

mod directory;
mod fields;
mod sign;
mod verify;

#[cfg(test)]
mod tests;

pub use directory::{
    DIRECTORY_CONTENT_TYPE, DIRECTORY_TTL_S, DirectoryCache, MAX_DIRECTORY_BYTES, directory_url,
    is_public_host, origin,
};
pub use sign::{
    ResponseSignature, content_digest, directory_body, public_x, sign_directory, thumbprint,
};
pub use verify::{Check, KeyDirectory, Outcome, Pending, finish, start};
