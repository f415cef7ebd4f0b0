//! The search indexes as data: what the catalog artifact stores for tool search (`Index`) and
//! app search (`AppIndex`). The builders and the query side live in `search` and `apps`, above
//! the catalog model; keeping the stored shapes here lets the model hold them without importing
//! the code that reads the model.

use serde::{Deserialize, Serialize};

pub const NFIELDS: usize = 7;

/// The words an app is found by.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppIndex {
    /// Per app (same order as `Catalog::apps`): its names, normalised (`google sheets`).
    pub names: Vec<Vec<AppName>>,
    /// Per app: normalised words of its description and categories.
    pub words: Vec<Vec<String>>,
    /// The names' words as ids into one vocabulary: derived on the first search, not stored.
    #[serde(skip)]
    pub(crate) shapes: std::sync::OnceLock<NameShapes>,
}

/// Every name of [`AppIndex::names`] as word ids, so a query word is compared with each
/// distinct word of the catalog's names once rather than with every occurrence (typo distances
/// were most of an app search).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NameShapes {
    /// Distinct words of all names.
    pub(crate) vocab: Vec<String>,
    /// Per app, per name (as in `names`): its words, `ids[start..end]`, and its length in
    /// characters without spaces.
    pub(crate) names: Vec<Vec<(u32, u32, u32)>>,
    pub(crate) ids: Vec<u32>,
    /// Letter masks (`apps::letters`) of `vocab`, and per app and name of the name's letters.
    pub(crate) vocab_letters: Vec<u64>,
    pub(crate) name_letters: Vec<Vec<u64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppName {
    pub text: String,
    pub kind: NameKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NameKind {
    /// The slug or the title.
    Own,
    /// An alias people use.
    Alias,
    /// An id an earlier catalog gave one of the app's documents.
    Former,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Index {
    /// Sorted vocabulary (stemmed terms).
    pub(crate) terms: Vec<String>,
    /// Postings of `terms[i]` are `post_start[i]..post_start[i + 1]`, sorted by document.
    pub(crate) post_start: Vec<u32>,
    /// `post_doc`, `post_tf` and `doc_len` are stored in sections of their own after the
    /// postcard core (`model::Sections`): decompressed straight into these vectors, they are
    /// neither decoded element by element nor copied at a cold start.
    #[serde(skip)]
    pub(crate) post_doc: Vec<u32>,
    #[serde(skip)]
    pub(crate) post_tf: Vec<[u8; NFIELDS]>,
    #[serde(skip)]
    pub(crate) doc_len: Vec<[u8; NFIELDS]>,
    pub(crate) avg_len: [f32; NFIELDS],
    /// Sorted alias keys (stemmed words joined by spaces) with the apps they name and how
    /// strong the alias is (2: the app's own name or a hand-made alias; 1: derived from a
    /// title, brand or service).
    pub(crate) aliases: Vec<(String, Vec<u32>, u8)>,
    pub(crate) max_alias_words: u32,
    /// Per tool, what ranking reads of it besides the postings: derived from the tools on the
    /// first search, not stored. A common-word query has tens of thousands of candidates, and
    /// reading each one's `Tool` (its path, to count parameters) was a cache miss per candidate
    /// and a quarter of that query's time.
    #[serde(skip)]
    pub(crate) doc_meta: std::sync::OnceLock<Vec<DocMeta>>,
}

/// See [`Index::doc_meta`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct DocMeta {
    pub(crate) method: crate::method::Method,
    /// `{parameters}` in the path, at most 8.
    pub(crate) depth: u8,
    pub(crate) deprecated: bool,
    /// Bit `i`: the operation name's last segment has the word `MODIFIERS[i]` of tool search;
    /// bit 31: some such word occurs twice (then the name is read).
    pub(crate) modifiers: u32,
    /// What the operation's name says it does.
    pub(crate) verb: crate::text::NameVerb,
    /// The vocabulary id of the word stating it (`u32::MAX`: none).
    pub(crate) verb_term: u32,
    /// The same operation reached directly, when this one is a nested copy of it
    /// (`/me/mailFolders/{id}/messages/{id}/reply` of `/me/messages/{id}/reply`); `u32::MAX`:
    /// none.
    pub(crate) direct: u32,
}
