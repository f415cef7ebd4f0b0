//! Fingerprints the code that shapes the artifact (this crate and `platform-search`: the catalog
//! layout, the search index and the OpenAPI reader; not the CLI), so the builder rebuilds the artifact when that
//! code changes and skips the work otherwise.

use std::hash::{Hash, Hasher};
use std::path::Path;

fn visit(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            visit(&p, files);
        } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("main.rs") {
            files.push(p);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    visit(&root.join("src"), &mut files);
    // The artifact's layout, the index and the OpenAPI reader: all of `platform-search`.
    visit(&root.join("../platform-search/src"), &mut files);
    files.sort();
    // SipHash with fixed keys: deterministic for a toolchain, which is all a cache key needs.
    let mut h = std::hash::DefaultHasher::new();
    for f in &files {
        println!("cargo::rerun-if-changed={}", f.display());
        let rel = f.strip_prefix(root).unwrap_or(f);
        rel.hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    println!(
        "cargo::rustc-env=CATALOG_BUILDER_FINGERPRINT={:016x}",
        h.finish()
    );
}
