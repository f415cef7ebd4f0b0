//! Search quality on the evaluation sets (`lambdas/catalog/eval/`), over the whole catalog, with a
//! plain BM25 baseline (the `bm25` crate, not our code) over the same fields in the same run.
//!
//! `cargo test -p platform-catalog --release --test search_eval -- --nocapture` prints the
//! table the README records.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::sync::OnceLock;

use bm25::{Language, SearchEngine, SearchEngineBuilder};
use catalog_core::Catalog;
use common::{Metrics, Resolver, accepted};

/// Floors CI holds the ranking to: just under what it measures now, so a change that makes search
/// worse fails. The targets of issue 22 (recall@5 0.95, recall@1 0.80, MRR 0.85) are not met
/// yet; the README reports the measured numbers.
const MIN_RECALL_AT_5: f64 = 0.81;
const MIN_RECALL_AT_1: f64 = 0.61;
const MIN_MRR: f64 = 0.70;
const MIN_REGRESSION_RECALL_AT_5: f64 = 0.97;
const MIN_APP_TOP1: f64 = 0.95;

/// Tool names as words, the way a plain tokenizer would want them (`chat_postMessage` → "chat
/// post message"): the only help the baseline gets.
fn split_identifier(s: &str) -> String {
    catalog_core::text::words(s).join(" ")
}

/// The baseline: BM25 over the tool's app title, document title, operation name, description
/// and path, one text per tool.
fn baseline() -> &'static SearchEngine<u32> {
    static ENGINE: OnceLock<SearchEngine<u32>> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let cat = common::catalog();
        let corpus: Vec<String> = cat
            .tools
            .iter()
            .map(|t| {
                let app = cat.app_of(t);
                let doc = cat.doc_of(t);
                format!(
                    "{} {} {} {} {} {}",
                    app.title,
                    doc.title,
                    split_identifier(t.operation_id.as_deref().unwrap_or(&t.name)),
                    t.description,
                    split_identifier(&t.path),
                    t.method.as_str()
                )
            })
            .collect();
        SearchEngineBuilder::<u32>::with_corpus(Language::English, corpus).build()
    })
}

/// Ranks of the first accepted tool in our search and in the baseline (top 10 looked at).
fn ranks(cat: &Catalog, query: &str, accepted: &HashSet<usize>) -> (Option<usize>, Option<usize>) {
    let ours = cat.find(query, None, 10).hits.iter().position(|h| {
        cat.tool_index_of(&h.tool)
            .is_some_and(|i| accepted.contains(&i))
    });
    let base = baseline()
        .search(query, 10)
        .iter()
        .position(|r| accepted.contains(&(r.document.id as usize)));
    (ours, base)
}

#[test]
fn the_evaluation_is_large_varied_and_names_real_operations() {
    let cat = common::catalog();
    let resolver = Resolver::new(cat);
    let tasks = common::tool_tasks();
    assert!(tasks.len() >= 200, "only {} tasks", tasks.len());
    let services: BTreeSet<&str> = tasks.iter().map(|t| t.service.as_str()).collect();
    assert!(services.len() >= 80, "only {} services", services.len());
    let plain = tasks.iter().filter(|t| t.no_operation_words).count();
    assert!(
        plain * 5 >= tasks.len(),
        "{plain} of {} tasks avoid the operation's words; at least a fifth must",
        tasks.len()
    );
    let mut problems = Vec::new();
    let mut merged = 0;
    for t in &tasks {
        let resolved = accepted(&resolver, t);
        if resolved.is_empty() {
            problems.push(format!("{}: no accepted tool is in the catalog", t.id));
            continue;
        }
        // A reference that names nothing is allowed only beside one that does: the build keeps
        // one operation of two versions or copies of an API (Datadog v1/v2 events).
        merged += t
            .accept
            .iter()
            .filter(|r| resolver.resolve(r).is_none_or(|tools| tools.is_empty()))
            .count();
    }
    println!("references into versions or copies the build merged: {merged}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn tool_search_meets_its_targets_and_beats_plain_bm25() {
    let cat = common::catalog();
    let resolver = Resolver::new(cat);
    let tasks = common::tool_tasks();
    let (mut all, mut tune, mut test, mut conv) = Default::default();
    let (mut b_all, mut b_tune, mut b_test, mut b_conv) = Default::default();
    let mut misses = Vec::new();
    for t in &tasks {
        let acc = accepted(&resolver, t);
        let (ours, base) = ranks(cat, &t.query, &acc);
        let (m, b): (&mut Metrics, &mut Metrics) = if t.tune {
            (&mut tune, &mut b_tune)
        } else {
            (&mut test, &mut b_test)
        };
        m.add(ours);
        b.add(base);
        Metrics::add(&mut all, ours);
        Metrics::add(&mut b_all, base);
        if t.no_operation_words {
            Metrics::add(&mut conv, ours);
            Metrics::add(&mut b_conv, base);
        }
        if ours != Some(0) {
            let top: Vec<String> = cat
                .find(&t.query, None, 3)
                .hits
                .into_iter()
                .map(|h| h.tool)
                .collect();
            misses.push(format!(
                "{} [{}] {:?} rank {:?} → {:?}",
                t.id,
                if t.tune { "tune" } else { "test" },
                t.query,
                ours,
                top
            ));
        }
    }
    let all: Metrics = all;
    let b_all: Metrics = b_all;
    println!("| set | tasks | recall@1 | recall@5 | MRR |");
    println!("|---|---|---|---|---|");
    for (name, m) in [
        ("ours, all", all),
        ("ours, tune half", tune),
        ("ours, held-back half", test),
        ("ours, no operation words", conv),
        ("BM25, all", b_all),
        ("BM25, tune half", b_tune),
        ("BM25, held-back half", b_test),
        ("BM25, no operation words", b_conv),
    ] {
        println!("{}", m.row(name));
    }
    for m in &misses {
        println!("miss: {m}");
    }
    assert!(all.r1() > b_all.r1() && all.r5() > b_all.r5() && all.mrr() > b_all.mrr());
    assert!(all.r5() >= MIN_RECALL_AT_5, "recall@5 {:.3}", all.r5());
    assert!(all.r1() >= MIN_RECALL_AT_1, "recall@1 {:.3}", all.r1());
    assert!(all.mrr() >= MIN_MRR, "MRR {:.3}", all.mrr());
}

#[test]
fn the_first_evaluation_still_passes_under_its_old_tool_names() {
    let cat = common::catalog();
    let tasks = common::regression_tasks();
    let mut m = Metrics::default();
    let mut missing = Vec::new();
    let mut misses = Vec::new();
    for (query, expected) in &tasks {
        let acc: HashSet<usize> = expected
            .iter()
            .filter_map(|e| {
                let i = cat.tool_index_of(e);
                if i.is_none() {
                    missing.push(e.clone());
                }
                i
            })
            .collect();
        let rank = cat
            .find(query, None, 10)
            .hits
            .iter()
            .position(|h| cat.tool_index_of(&h.tool).is_some_and(|i| acc.contains(&i)));
        if rank.is_none_or(|r| r >= 5) {
            misses.push(format!("{query:?} rank {rank:?}"));
        }
        m.add(rank);
    }
    println!("regression set:\n{}", m.row("ours, first evaluation"));
    for x in &misses {
        println!("regression miss: {x}");
    }
    assert!(
        missing.is_empty(),
        "old tool names no longer resolve: {missing:?}"
    );
    assert!(
        m.r5() >= MIN_REGRESSION_RECALL_AT_5,
        "recall@5 {:.3}",
        m.r5()
    );
}

#[test]
fn app_search_puts_the_meant_app_first() {
    let cat = common::catalog();
    let queries = common::app_queries();
    assert!(queries.len() >= 50);
    // Baseline: BM25 over each app's slug, title and aliases.
    let corpus: Vec<String> = cat
        .apps
        .iter()
        .map(|a| {
            format!(
                "{} {} {}",
                a.slug.replace('_', " "),
                a.title,
                a.aliases.join(" ")
            )
        })
        .collect();
    let engine = SearchEngineBuilder::<u32>::with_corpus(Language::English, corpus).build();
    let (mut top1, mut top3, mut b_top1) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for q in &queries {
        let expect = cat
            .app(&q.expect)
            .unwrap_or_else(|| panic!("{}: no app {}", q.query, q.expect));
        let hits = cat.search_apps(&q.query, 3);
        let rank = hits
            .iter()
            .position(|h| cat.apps[h.app as usize].slug == expect.slug);
        match rank {
            Some(0) => top1 += 1,
            _ => misses.push(format!(
                "{:?} ({}) → {:?}",
                q.query,
                q.kind,
                hits.iter()
                    .map(|h| cat.apps[h.app as usize].slug.as_str())
                    .collect::<Vec<_>>()
            )),
        }
        if rank.is_some() {
            top3 += 1;
        }
        if engine
            .search(&q.query, 1)
            .first()
            .is_some_and(|r| cat.apps[r.document.id as usize].slug == expect.slug)
        {
            b_top1 += 1;
        }
    }
    let n = queries.len() as f64;
    println!(
        "app search: {} queries, ours top-1 {:.3}, top-3 {:.3}; BM25 over names top-1 {:.3}",
        queries.len(),
        top1 as f64 / n,
        top3 as f64 / n,
        b_top1 as f64 / n
    );
    for m in &misses {
        println!("app miss: {m}");
    }
    assert!(
        top1 as f64 / n >= MIN_APP_TOP1,
        "top-1 {:.3}",
        top1 as f64 / n
    );
    assert_eq!(top3, queries.len(), "not in the top 3: {misses:?}");
}
