//! The evaluation sets in `lambdas/catalog/eval/` and how they are scored, shared by the tests
//! (`tests/search_eval.rs`, with the BM25 baseline) and the CLI (`catalog eval`).

use std::collections::{HashMap, HashSet};

use catalog_core::{Catalog, Tool};
use serde_json::Value;

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

/// recall@1, recall@5 and mean reciprocal rank.
#[derive(Debug, Default, Clone, Copy)]
pub struct Metrics {
    pub n: usize,
    pub at1: usize,
    pub at5: usize,
    pub rr: f64,
}

impl Metrics {
    pub fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        if let Some(r) = rank {
            if r == 0 {
                self.at1 += 1;
            }
            if r < 5 {
                self.at5 += 1;
            }
            self.rr += 1.0 / (r + 1) as f64;
        }
    }
    pub fn r1(&self) -> f64 {
        self.at1 as f64 / self.n.max(1) as f64
    }
    pub fn r5(&self) -> f64 {
        self.at5 as f64 / self.n.max(1) as f64
    }
    pub fn mrr(&self) -> f64 {
        self.rr / self.n.max(1) as f64
    }
    pub fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {:.3} | {:.3} | {:.3} |",
            self.n,
            self.r1(),
            self.r5(),
            self.mrr()
        )
    }
}

/// Every tool a task accepts.
pub fn accepted(resolver: &Resolver, t: &Task) -> HashSet<usize> {
    t.accept
        .iter()
        .filter_map(|r| resolver.resolve(r))
        .flatten()
        .collect()
}

/// Rank of the first accepted tool in our search (top 10 looked at).
pub fn rank_of(cat: &Catalog, query: &str, accepted: &HashSet<usize>) -> Option<usize> {
    cat.find(query, None, 10).hits.iter().position(|h| {
        cat.tool_index_of(&h.tool)
            .is_some_and(|i| accepted.contains(&i))
    })
}

/// The tool's operation name: its `operationId`, else the part of its name after the app.
pub fn operation_name(t: &Tool) -> String {
    t.operation_id.clone().unwrap_or_else(|| {
        t.name
            .split_once('.')
            .map_or(t.name.as_str(), |(_, op)| op)
            .to_string()
    })
}

/// The text a sentence encoder reads for a tool: the operation name in words, then the
/// description (`catalog texts`, `catalog eval dump`).
pub fn tool_text(t: &Tool) -> String {
    let name = catalog_core::text::words(&operation_name(t)).join(" ");
    if t.description.is_empty() {
        name
    } else {
        format!("{name}. {}", t.description)
    }
}
