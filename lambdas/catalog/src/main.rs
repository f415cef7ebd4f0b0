//! `catalog [build|stats]`: builds the catalog artifact (skipped when its inputs are unchanged),
//! or loads it and reports load time, resident memory and counts.

use std::process::ExitCode;
use std::time::Instant;

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
                    println!(
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
            let t = Instant::now();
            let catalog = match platform::catalog::Catalog::load(&out) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("catalog: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let load = t.elapsed();
            let after = rss_kib("VmRSS:").unwrap_or(0);
            let peak = rss_kib("VmHWM:").unwrap_or(0);
            println!("artifact: {}", out.display());
            println!("load: {load:.2?}");
            println!(
                "resident: +{:.1} MiB after load (peak {:.1} MiB for the process)",
                after.saturating_sub(before) as f64 / 1024.0,
                peak as f64 / 1024.0
            );
            println!(
                "apps: {}, tools: {}, categories: {}, vocabulary: {}, postings: {}, aliases: {}",
                catalog.apps.len(),
                catalog.tools.len(),
                catalog.categories().len(),
                catalog.index.vocabulary_len(),
                catalog.index.postings_len(),
                catalog.index.alias_count()
            );
            let schema: usize = catalog.tools.iter().map(|t| t.input_schema.len()).sum();
            let text: usize = catalog
                .tools
                .iter()
                .map(|t| t.description.len() + t.name.len() + t.path.len())
                .sum();
            println!(
                "tool input schemas: {:.1} MiB, names/paths/descriptions: {:.1} MiB",
                schema as f64 / 1048576.0,
                text as f64 / 1048576.0
            );
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("usage: catalog [build|rebuild|stats] (got {other:?})");
            ExitCode::from(2)
        }
    }
}
