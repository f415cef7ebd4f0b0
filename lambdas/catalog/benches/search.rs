//! Search latency over the whole catalog, and the cost of loading the artifact.
//!
//! `cargo bench -p platform-catalog --bench search` prints, besides criterion's estimates, the
//! p50/p99 latency of every evaluation query (each run many times), of every app query, and the
//! artifact load time.

use std::hint::black_box;
use std::time::{Duration, Instant};

use catalog_core::Catalog;
use serde_json::Value;

fn queries(rel: &str) -> Vec<String> {
    let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["query"].as_str().map(str::to_string))
        .collect()
}

fn catalog() -> Catalog {
    let out = platform_catalog::artifact_path();
    if let Err(e) = platform_catalog::ensure(&platform_catalog::package_dir(), &out) {
        panic!("cannot build the catalog: {e}");
    }
    Catalog::load(&out).unwrap_or_else(|e| panic!("cannot load the catalog: {e}"))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn distribution(name: &str, n: usize, mut run: impl FnMut(usize)) {
    let mut lat = Vec::new();
    for _ in 0..20 {
        for i in 0..n {
            let t = Instant::now();
            run(i);
            lat.push(t.elapsed());
        }
    }
    lat.sort();
    println!(
        "{name}: {n} queries x 20: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat[lat.len() - 1]
    );
}

fn bench(c: &mut criterion::Criterion) {
    let mut tasks = queries("eval/tool_tasks.json");
    tasks.extend(queries("../platform/eval/search_tasks.json"));
    let apps = queries("eval/app_queries.json");
    let out = platform_catalog::artifact_path();
    let cat = catalog();

    distribution("tool search (global, limit 10)", tasks.len(), |i| {
        black_box(cat.find(&tasks[i], None, 10));
    });
    distribution("app search (limit 10)", apps.len(), |i| {
        black_box(cat.search_apps(&apps[i], 10));
    });

    let mut g = c.benchmark_group("search");
    g.bench_function("eval_queries_each", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % tasks.len();
            black_box(cat.find(&tasks[i], None, 10))
        })
    });
    g.bench_function("global_common_words", |b| {
        b.iter(|| black_box(cat.find("list all users and get their details", None, 10)))
    });
    g.bench_function("app_filter", |b| {
        b.iter(|| black_box(cat.find("create an issue", Some("github"), 10)))
    });
    g.bench_function("apps_each", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % apps.len();
            black_box(cat.search_apps(&apps[i], 10))
        })
    });
    g.finish();

    let mut g = c.benchmark_group("artifact");
    g.sample_size(10);
    g.bench_function("load", |b| b.iter(|| black_box(Catalog::load(&out))));
    g.bench_function("tool_input_largest_app", |b| {
        // A tool deep inside Microsoft Graph's Outlook part: one 16-tool chunk is read.
        let name = cat.tools_of(cat.app("outlook").unwrap())[1500].name.clone();
        b.iter(|| black_box(cat.input(&name)))
    });
    g.finish();
}

criterion::criterion_group!(benches, bench);
criterion::criterion_main!(benches);
