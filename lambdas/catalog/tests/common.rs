//! Shared by the tests: the catalog artifact, built from the pinned npm package and the vendor
//! documents when it is missing or stale (never skipped: without the package the tests fail with
//! the reason), and the evaluation sets.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::OnceLock;

use catalog_core::Catalog;
use serde_json::Value;

pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let out = platform_catalog::artifact_path();
        platform_catalog::ensure(&platform_catalog::package_dir(), &out)
            .unwrap_or_else(|e| panic!("cannot build the catalog artifact: {e}"));
        Catalog::load(&out).unwrap_or_else(|e| panic!("cannot load {}: {e}", out.display()))
    })
}

fn read_json(rel: &str) -> Value {
    let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub struct Task {
    pub id: String,
    pub service: String,
    pub query: String,
    pub no_operation_words: bool,
    pub tune: bool,
    /// `document#operationId` or `document#METHOD path`.
    pub accept: Vec<String>,
}

/// The evaluation of issue 22: requests written before any ranking, over about a hundred
/// services.
pub fn tool_tasks() -> Vec<Task> {
    read_json("eval/tool_tasks.json")
        .as_array()
        .expect("an array of tasks")
        .iter()
        .map(|t| Task {
            id: t["id"].as_str().unwrap_or_default().to_string(),
            service: t["service"].as_str().unwrap_or_default().to_string(),
            query: t["query"].as_str().unwrap_or_default().to_string(),
            no_operation_words: t["phrasing"] == "no-operation-words",
            tune: t["split"] == "tune",
            accept: t["accept"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        })
        .collect()
}

/// The first evaluation (123 tasks over 33 apps), in tool names of the first catalog: they
/// must keep resolving.
pub fn regression_tasks() -> Vec<(String, Vec<String>)> {
    read_json("../platform/eval/search_tasks.json")
        .as_array()
        .expect("an array of tasks")
        .iter()
        .map(|t| {
            (
                t["query"].as_str().unwrap_or_default().to_string(),
                t["expected"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            )
        })
        .collect()
}

pub struct AppQuery {
    pub query: String,
    pub kind: String,
    pub expect: String,
}

pub fn app_queries() -> Vec<AppQuery> {
    read_json("eval/app_queries.json")
        .as_array()
        .expect("an array of queries")
        .iter()
        .map(|q| AppQuery {
            query: q["query"].as_str().unwrap_or_default().to_string(),
            kind: q["kind"].as_str().unwrap_or_default().to_string(),
            expect: q["expect"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

/// Resolves `document#operation` references to tool indices.
pub struct Resolver {
    by_op: HashMap<(u32, String), Vec<usize>>,
    doc_ids: HashMap<String, u32>,
}

impl Resolver {
    pub fn new(cat: &Catalog) -> Resolver {
        let doc_ids = cat
            .docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.id.clone(), i as u32))
            .collect();
        let mut by_op: HashMap<(u32, String), Vec<usize>> = HashMap::new();
        for (i, t) in cat.tools.iter().enumerate() {
            if let Some(id) = &t.operation_id {
                by_op.entry((t.doc, id.clone())).or_default().push(i);
            }
            by_op
                .entry((t.doc, format!("{} {}", t.method.as_str(), t.path)))
                .or_default()
                .push(i);
        }
        Resolver { by_op, doc_ids }
    }

    /// The tools a reference names; `None` when its document is not in the catalog at all.
    pub fn resolve(&self, reference: &str) -> Option<Vec<usize>> {
        let (doc, op) = reference.split_once('#')?;
        let d = *self.doc_ids.get(doc)?;
        Some(
            self.by_op
                .get(&(d, op.to_string()))
                .cloned()
                .unwrap_or_default(),
        )
    }
}
