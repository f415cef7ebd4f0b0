//! The binary against two tiny crates: one with two cycles must fail and name them, the same
//! shape without the back edges must pass.

use std::path::PathBuf;
use std::process::{Command, Output};

fn run(fixture: &str, extra: &[&str]) -> (i32, String) {
    let manifest: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        fixture,
        "Cargo.toml",
    ]
    .iter()
    .collect();
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_module-cycles"))
        .arg("--manifest-path")
        .arg(&manifest)
        .args(extra)
        .output()
        .expect("the binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    (status.code().unwrap_or(-1), text)
}

#[test]
fn a_crate_with_cycles_fails_and_each_cycle_is_named_with_its_files() {
    let (code, out) = run("cyclic", &[]);
    assert_eq!(code, 1, "{out}");
    // Two modules using each other.
    assert!(
        out.contains("cycle 1 of 3 in package `cyclic` (lib `cyclic`, src/lib.rs): 2 modules"),
        "{out}"
    );
    assert!(
        out.contains("for example: crate::a -> crate::b -> crate::a"),
        "{out}"
    );
    assert!(
        out.contains("src/a.rs:1: crate::a -> crate::b (`crate::b::helper`)"),
        "{out}"
    );
    assert!(
        out.contains("src/b/mod.rs:9: crate::b -> crate::a (`crate::a::a`)"),
        "{out}"
    );
    // A parent and its child.
    assert!(out.contains("cycle 2 of 3"), "{out}");
    assert!(
        out.contains("src/layers/top.rs:1: crate::layers::top -> crate::layers (`super::Shared`)"),
        "{out}"
    );
    assert!(
        out.contains("src/layers/mod.rs:7: crate::layers -> crate::layers::top (`top::build`)"),
        "{out}"
    );
    // Two layers, through submodules that do not use each other.
    assert!(
        out.contains("cycle 3 of 3 in package `cyclic` (lib `cyclic`, src/lib.rs): 2 submodules of `crate` use each other through their own submodules"),
        "{out}"
    );
    assert!(
        out.contains("crate::lower  src/lower/mod.rs and its 2 submodules"),
        "{out}"
    );
    assert!(
        out.contains("for example: crate::lower -> crate::upper -> crate::lower"),
        "{out}"
    );
    assert!(
        out.contains("src/lower/z.rs:1: crate::lower::z -> crate::upper (`crate::upper::Config`)"),
        "{out}"
    );
    assert!(
        out.contains("src/upper/y.rs:1: crate::upper::y -> crate::lower::x (`crate::lower::x::X`)"),
        "{out}"
    );
    // Comments, strings and a test module using its parent are not cycles.
    assert!(!out.contains("crate::leaf"), "{out}");
    assert!(out.contains("cycles in cyclic"), "{out}");
}

#[test]
fn an_allowed_package_is_reported_but_does_not_fail() {
    let (code, out) = run("cyclic", &["--allow", "cyclic"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("(allowed: `cyclic` is listed with --allow)"),
        "{out}"
    );
    assert!(out.contains("cycle 1 of 3"), "{out}");
}

#[test]
fn the_same_crate_without_back_edges_passes() {
    let (code, out) = run("acyclic", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("1 packages, 1 targets, 7 modules: no cycles"),
        "{out}"
    );
    let (code, out) = run("acyclic", &["--allow", "acyclic"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("`acyclic` has no module cycles any more"),
        "{out}"
    );
}

#[test]
fn an_unknown_allowed_package_is_an_error() {
    let (code, out) = run("acyclic", &["--allow", "nope"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--allow nope: no such package"), "{out}");
}
