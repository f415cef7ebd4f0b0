//! Search latency over the whole catalog, and the cost of loading the artifact.
//!
//! `cargo bench -p platform-catalog --bench search` prints, besides criterion's estimates, the
//! p50/p99 latency of every evaluation query (each run many times) and the artifact load time.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use platform_search::catalog::Catalog;
use serde_json::Value;

fn queries() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../platform/eval/search_tasks.json"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t["query"].as_str().unwrap().to_string())
        .collect()
}

fn catalog() -> Catalog {
    let out = platform_catalog::artifact_path();
    platform_catalog::ensure(&platform_catalog::package_dir(), &out).unwrap();
    Catalog::load(&out).unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn bench(c: &mut Criterion) {
    let queries = queries();
    let out = platform_catalog::artifact_path();
    let cat = catalog();

    // Latency distribution over the evaluation queries (global search, limit 5).
    let mut lat = Vec::new();
    for _ in 0..20 {
        for q in &queries {
            let t = Instant::now();
            black_box(cat.find(q, None, 5));
            lat.push(t.elapsed());
        }
    }
    lat.sort();
    println!(
        "search latency over {} queries x 20: p50 {:?}, p99 {:?}, max {:?}",
        queries.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat[lat.len() - 1]
    );

    let mut g = c.benchmark_group("search");
    g.bench_function("eval_queries_each", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(cat.find(&queries[i], None, 5))
        })
    });
    g.bench_function("global_common_words", |b| {
        b.iter(|| black_box(cat.find("list all users and get their details", None, 5)))
    });
    g.bench_function("app_filter", |b| {
        b.iter(|| black_box(cat.find("create an issue", Some("github"), 5)))
    });
    g.finish();

    let mut g = c.benchmark_group("artifact");
    g.sample_size(10);
    g.bench_function("load", |b| {
        b.iter(|| black_box(Catalog::load(&out).unwrap()))
    });
    g.bench_function("input_schema_github", |b| {
        b.iter(|| black_box(cat.input_schema("github.issues_create").unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
