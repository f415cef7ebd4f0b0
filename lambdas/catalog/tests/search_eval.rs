//! Recall@k of tool search on a hand-written evaluation set of plain-language tasks
//! (`lambdas/platform/eval/search_tasks.json`), over the whole catalog.

mod common;

use serde_json::Value;

struct Task {
    query: String,
    expected: Vec<String>,
}

fn tasks() -> Vec<Task> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../platform/eval/search_tasks.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| Task {
            query: t["query"].as_str().unwrap().to_string(),
            expected: t["expected"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap().to_string())
                .collect(),
        })
        .collect()
}

#[test]
fn the_eval_set_is_large_varied_and_names_real_tools() {
    let cat = common::catalog();
    let tasks = tasks();
    assert!(tasks.len() >= 100, "only {} tasks", tasks.len());
    let mut apps = std::collections::BTreeSet::new();
    for t in &tasks {
        assert!(!t.expected.is_empty(), "{}: no expected tool", t.query);
        for e in &t.expected {
            let tool = cat.tool(e);
            assert!(
                tool.is_some(),
                "{}: expected tool {e} is not in the catalog",
                t.query
            );
            apps.insert(cat.apps[tool.unwrap().app as usize].id.clone());
        }
    }
    assert!(apps.len() >= 30, "only {} apps covered", apps.len());
}

#[test]
fn recall_at_5_is_at_least_0_9() {
    let cat = common::catalog();
    let tasks = tasks();
    let (mut at1, mut at5) = (0usize, 0usize);
    let mut misses = Vec::new();
    for t in &tasks {
        let found = cat.find(&t.query, None, 5);
        let rank = found.hits.iter().position(|h| t.expected.contains(&h.tool));
        match rank {
            Some(0) => {
                at1 += 1;
                at5 += 1;
            }
            Some(_) => at5 += 1,
            None => misses.push(format!(
                "{:?} → {:?} (hint {:?})",
                t.query,
                found
                    .hits
                    .iter()
                    .map(|h| h.tool.as_str())
                    .collect::<Vec<_>>(),
                found.hint
            )),
        }
    }
    let n = tasks.len() as f64;
    let (r1, r5) = (at1 as f64 / n, at5 as f64 / n);
    println!(
        "search eval: {} tasks, recall@1 {r1:.3}, recall@5 {r5:.3}",
        tasks.len()
    );
    for m in &misses {
        println!("miss: {m}");
    }
    assert!(
        r5 >= 0.9,
        "recall@5 {r5:.3} < 0.9; misses:\n{}",
        misses.join("\n")
    );
}
