//! `catalog [build|stats]`: builds the catalog artifact (skipped when its inputs are unchanged),
//! or loads it and reports load time, resident memory and counts.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

/// Writes one line to standard output from `main`. A reader that closes the pipe early
/// (`catalog texts | head`) ends the listing quietly; `println!` panics there.
macro_rules! out {
    ($($arg:tt)*) => {
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("catalog: writing the output: {e}");
            return ExitCode::FAILURE;
        }
    };
}

fn rss_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// CPU time this thread has run, in nanoseconds (Linux; `None` elsewhere). The load runs on the
/// calling thread, so the difference across it is the load's CPU time whatever else the machine
/// runs: wall time on a shared machine says more about the neighbours than about the load.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Loads the built artifact for a subcommand, reporting a failure on standard error.
fn load(out: &std::path::Path) -> Option<catalog_core::Catalog> {
    catalog_core::Catalog::load(out)
        .map_err(|e| eprintln!("catalog: {e}"))
        .ok()
}

fn main() -> ExitCode {
    let cmd = std::env::args().nth(1).unwrap_or_else(|| "build".into());
    let out = platform_catalog::artifact_path();
    match cmd.as_str() {
        "build" | "rebuild" => {
            if cmd == "rebuild" {
                let _ = std::fs::remove_file(out.with_extension("key"));
            }
            let t = Instant::now();
            match platform_catalog::ensure(&platform_catalog::package_dir(), &out) {
                Ok(outcome) => {
                    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
                    out!(
                        "catalog: {outcome:?} {} ({:.1} MiB) in {:.2?}",
                        out.display(),
                        size as f64 / 1048576.0,
                        t.elapsed()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("catalog: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        "stats" => {
            let before = rss_kib("VmRSS:").unwrap_or(0);
            let cpu = thread_cpu_ns();
            let t = Instant::now();
            let Some(catalog) = load(&out) else {
                return ExitCode::FAILURE;
            };
            let load = t.elapsed();
            let cpu = cpu
                .zip(thread_cpu_ns())
                .map(|(a, b)| format!(", {:.1} ms CPU", b.saturating_sub(a) as f64 / 1e6))
                .unwrap_or_default();
            let after = rss_kib("VmRSS:").unwrap_or(0);
            let peak = rss_kib("VmHWM:").unwrap_or(0);
            out!("artifact: {}", out.display());
            out!("load: {load:.2?} wall{cpu}");
            out!(
                "resident: +{:.1} MiB after load (peak {:.1} MiB for the process)",
                after.saturating_sub(before) as f64 / 1024.0,
                peak as f64 / 1024.0
            );
            out!(
                "apps: {}, tools: {}, categories: {}, vocabulary: {}, postings: {}, aliases: {}",
                catalog.apps.len(),
                catalog.tools.len(),
                catalog.categories().len(),
                catalog.index.vocabulary_len(),
                catalog.index.postings_len(),
                catalog.index.alias_count()
            );
            let schema: usize = catalog.schema_blob.len();
            let text: usize = catalog
                .tools
                .iter()
                .map(|t| t.description.len() + t.name.len() + t.path.len())
                .sum();
            out!(
                "tool input schemas and examples (compressed, 16 tools a chunk): {:.1} MiB, names/paths/descriptions: {:.1} MiB",
                schema as f64 / 1048576.0,
                text as f64 / 1048576.0
            );
            ExitCode::SUCCESS
        }
        "tools" => {
            let prefix = std::env::args().nth(2).unwrap_or_default();
            let Some(catalog) = load(&out) else {
                return ExitCode::FAILURE;
            };
            for t in catalog.tools.iter().filter(|t| t.name.starts_with(&prefix)) {
                out!(
                    "{}\t{} {}\t{}",
                    t.name,
                    t.method.as_str(),
                    t.path,
                    t.description.chars().take(90).collect::<String>()
                );
            }
            ExitCode::SUCCESS
        }
        "texts" => {
            use platform_catalog::eval;
            // One JSON line per tool: the text a sentence encoder reads (operation name in
            // words, then the description) and the words the build embeds for the tool's
            // vector (stop words dropped), for `embed/tokenlearn.py`.
            let Some(catalog) = load(&out) else {
                return ExitCode::FAILURE;
            };
            for t in &catalog.tools {
                let words: Vec<String> = catalog_core::text::words(&eval::operation_name(t))
                    .into_iter()
                    .chain(catalog_core::text::words(&t.description))
                    .filter(|w| !catalog_core::text::is_stop_word(w))
                    .collect();
                out!(
                    "{}",
                    serde_json::json!({"tool": t.name, "text": eval::tool_text(t), "words": words})
                );
            }
            ExitCode::SUCCESS
        }
        "apps" => {
            let Some(catalog) = load(&out) else {
                return ExitCode::FAILURE;
            };
            for a in &catalog.apps {
                out!(
                    "{}\t{}\t{}\t{}",
                    a.slug,
                    a.tools.1 - a.tools.0,
                    a.title,
                    a.categories.join(",")
                );
            }
            ExitCode::SUCCESS
        }
        "search" => {
            let query = std::env::args().nth(2).unwrap_or_default();
            let app = std::env::args().nth(3);
            let Some(catalog) = load(&out) else {
                return ExitCode::FAILURE;
            };
            let t = Instant::now();
            let found = catalog.find(&query, app.as_deref(), 5);
            let took = t.elapsed();
            for h in &found.hits {
                let tool = catalog.tool(&h.tool);
                out!(
                    "{:7.2}  {:50} {} {}  [{}]  {}",
                    h.score,
                    h.tool,
                    tool.map(|t| t.method.as_str()).unwrap_or(""),
                    tool.map(|t| t.path.as_str()).unwrap_or(""),
                    h.matched_terms.join(","),
                    tool.map(|t| t.description.chars().take(60).collect::<String>())
                        .unwrap_or_default()
                );
            }
            out!("app: {:?} hint: {:?} ({took:.2?})", found.app, found.hint);
            ExitCode::SUCCESS
        }
        "eval" if std::env::args().nth(2).as_deref() == Some("dump") => {
            // Our top K (default 50) with scores and tool texts for every task of both
            // evaluations, one JSON line each, for reranking offline (`embed/rerank_eval.py`).
            use platform_catalog::eval;
            let k = match std::env::args().nth(3).map(|s| s.parse::<usize>()) {
                None => 50,
                Some(Ok(k)) if k > 0 => k,
                Some(_) => {
                    eprintln!("catalog: eval dump K: K must be a positive count");
                    return ExitCode::from(2);
                }
            };
            let Some(catalog) = load(&out) else {
                return ExitCode::FAILURE;
            };
            let resolver = eval::Resolver::new(&catalog);
            let tool_tasks = eval::tool_tasks().into_iter().map(|t| {
                let acc = eval::accepted(&resolver, &t);
                let set = if t.tune { "tune" } else { "test" };
                (t.id, set, t.no_operation_words, t.query, acc)
            });
            let first =
                eval::regression_tasks()
                    .into_iter()
                    .enumerate()
                    .map(|(i, (query, expected))| {
                        let acc = expected
                            .iter()
                            .filter_map(|e| catalog.tool_index_of(e))
                            .collect();
                        (format!("first-{i}"), "first", false, query, acc)
                    });
            for (id, set, no_operation_words, query, acc) in tool_tasks.chain(first) {
                let hits: Vec<serde_json::Value> = catalog
                    .find(&query, None, k)
                    .hits
                    .into_iter()
                    .map(|h| {
                        let text = catalog.tool(&h.tool).map(eval::tool_text);
                        serde_json::json!({"tool": h.tool, "score": h.score, "text": text})
                    })
                    .collect();
                let accepted: Vec<&str> = acc
                    .iter()
                    .map(|&i: &usize| catalog.tools[i].name.as_str())
                    .collect();
                out!(
                    "{}",
                    serde_json::json!({"id": id, "set": set, "no_operation_words": no_operation_words,
                                       "query": query, "hits": hits, "accepted": accepted})
                );
            }
            ExitCode::SUCCESS
        }
        "eval" => {
            // Our ranking on the evaluation (the tests add the BM25 baseline); `eval tune`
            // or `eval test` prints that half's misses.
            use platform_catalog::eval;
            let show = std::env::args().nth(2);
            let Some(catalog) = load(&out) else {
                return ExitCode::FAILURE;
            };
            let resolver = eval::Resolver::new(&catalog);
            let (mut all, mut tune, mut test, mut plain_words) = Default::default();
            for t in eval::tool_tasks() {
                let acc = eval::accepted(&resolver, &t);
                let rank = eval::rank_of(&catalog, &t.query, &acc);
                eval::Metrics::add(&mut all, rank);
                if t.no_operation_words {
                    eval::Metrics::add(&mut plain_words, rank);
                }
                if t.tune {
                    eval::Metrics::add(&mut tune, rank);
                } else {
                    eval::Metrics::add(&mut test, rank);
                }
                let half = if t.tune { "tune" } else { "test" };
                if rank != Some(0) && show.as_deref() == Some(half) {
                    let top: Vec<String> = catalog
                        .find(&t.query, None, 3)
                        .hits
                        .into_iter()
                        .map(|h| h.tool)
                        .collect();
                    out!("miss {} {:?} rank {rank:?} → {top:?}", t.id, t.query);
                }
            }
            // The first evaluation, in the first catalog's tool names (they still resolve).
            let mut first = eval::Metrics::default();
            for (query, expected) in eval::regression_tasks() {
                let acc = expected
                    .iter()
                    .filter_map(|e| catalog.tool_index_of(e))
                    .collect();
                first.add(eval::rank_of(&catalog, &query, &acc));
            }
            let (all, tune, test, plain_words): (
                eval::Metrics,
                eval::Metrics,
                eval::Metrics,
                eval::Metrics,
            ) = (all, tune, test, plain_words);
            out!(
                "{}\n{}\n{}\n{}\n{}",
                all.row("all"),
                tune.row("tune"),
                test.row("test"),
                plain_words.row("no operation words"),
                first.row("first evaluation")
            );
            ExitCode::SUCCESS
        }
        other => {
            eprintln!(
                "usage: catalog [build|rebuild|stats|apps|tools PREFIX|texts|search QUERY [APP]|eval [tune|test|dump [K]]] (got {other:?})"
            );
            ExitCode::from(2)
        }
    }
}
