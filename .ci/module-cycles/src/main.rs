//! `module-cycles [--manifest-path Cargo.toml] [--allow PACKAGE]...`
//!
//! Checks every target of every package in the workspace (from `cargo metadata --no-deps`) for
//! import cycles between its modules. Prints each cycle with its files and the lines that close
//! it, and exits 1 when any package not listed with `--allow` has one (2 when the check itself
//! cannot run). An allowed package's cycles are still printed, as a reminder.

use module_cycles::report::{Target, check, describe};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("module-cycles: {e}");
            ExitCode::from(2)
        }
    }
}

struct Args {
    manifest: Option<PathBuf>,
    allow: BTreeSet<String>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        manifest: None,
        allow: BTreeSet::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--manifest-path" => {
                a.manifest = Some(it.next().ok_or("--manifest-path needs a path")?.into())
            }
            "--allow" => {
                a.allow
                    .insert(it.next().ok_or("--allow needs a package name")?);
            }
            "-h" | "--help" => {
                println!("usage: module-cycles [--manifest-path Cargo.toml] [--allow PACKAGE]...");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}; see --help")),
        }
    }
    Ok(a)
}

/// The workspace root and every target of its member packages.
fn targets(manifest: Option<&Path>) -> Result<(PathBuf, Vec<Target>), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]);
    if let Some(m) = manifest {
        cmd.arg("--manifest-path").arg(m);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let meta: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    let root = meta["workspace_root"]
        .as_str()
        .ok_or("cargo metadata: no workspace_root")?;
    let mut list = Vec::new();
    let mut roots = BTreeSet::new();
    for p in meta["packages"].as_array().into_iter().flatten() {
        let package = p["name"].as_str().unwrap_or_default().to_string();
        for t in p["targets"].as_array().into_iter().flatten() {
            let root_file = PathBuf::from(t["src_path"].as_str().unwrap_or_default());
            // A file shared by two targets (rare) is checked once.
            if !roots.insert(root_file.clone()) {
                continue;
            }
            list.push(Target {
                package: package.clone(),
                kind: t["kind"][0].as_str().unwrap_or("?").to_string(),
                name: t["name"].as_str().unwrap_or_default().to_string(),
                root: root_file,
            });
        }
    }
    Ok((PathBuf::from(root), list))
}

fn run() -> Result<bool, String> {
    let a = args()?;
    let (base, targets) = targets(a.manifest.as_deref())?;
    let packages: BTreeSet<&str> = targets.iter().map(|t| t.package.as_str()).collect();
    for name in &a.allow {
        if !packages.contains(name.as_str()) {
            return Err(format!("--allow {name}: no such package in the workspace"));
        }
    }
    let (mut modules, mut failed, mut allowed_with) = (0, BTreeSet::new(), BTreeSet::new());
    for t in &targets {
        let f = check(t).map_err(|e| e.to_string())?;
        modules += f.krate.modules.len();
        if f.cycles.is_empty() {
            continue;
        }
        if a.allow.contains(&t.package) {
            allowed_with.insert(t.package.clone());
            println!("(allowed: `{}` is listed with --allow)", t.package);
        } else {
            failed.insert(t.package.clone());
        }
        print!("{}", describe(&f, &base));
    }
    for name in a.allow.difference(&allowed_with) {
        println!("note: `{name}` has no module cycles any more; remove it from the --allow list");
    }
    let ok = failed.is_empty();
    let verdict = if ok {
        "no cycles outside the allowed packages".to_string()
    } else {
        let names: Vec<String> = failed.into_iter().collect();
        format!("cycles in {}", names.join(", "))
    };
    println!(
        "module-cycles: {} packages, {} targets, {} modules: {verdict}",
        packages.len(),
        targets.len(),
        modules,
    );
    Ok(ok)
}
