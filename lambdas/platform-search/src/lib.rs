//! The app catalog and its tool search: the built artifact ([`catalog`]), the BM25F index over its
//! tools ([`search`]), and the OpenAPI reader that derives tools from a document ([`derive`]),
//! used by the catalog builder (`lambdas/catalog`) and by custom REST connectors alike.
//!
//! Why a crate of its own: this is the code that runs hot in tests and in the catalog build
//! (hundreds of megabytes of OpenAPI, 95,000 tools ranked per query), so the workspace builds it
//! at `opt-level = 3` even in dev and test profiles; everything else of the platform builds at the
//! default level, which keeps its many test crates quick to compile. It is pure: no I/O beyond
//! reading an artifact file, no HTTP, no AWS, no accounts.
//!
//! Layers inside, each using only those above it in this list: [`model`] (methods and credential
//! schemes), [`search::text`] (words, stems, verbs, synonyms), [`search`] (the index, ranking over
//! a [`search::Corpus`]), [`catalog`] (the artifact, which is that corpus), [`derive`] (OpenAPI →
//! tools).

pub mod catalog;
pub mod derive;
pub mod model;
pub mod search;
