//! Shared by the tests: the catalog artifact, built from the pinned npm package when it is
//! missing or stale (never skipped: without the package the tests fail with the reason).

use std::sync::OnceLock;

use platform_search::catalog::Catalog;

pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let out = platform_catalog::artifact_path();
        platform_catalog::ensure(&platform_catalog::package_dir(), &out)
            .unwrap_or_else(|e| panic!("cannot build the catalog artifact: {e}"));
        Catalog::load(&out).unwrap_or_else(|e| panic!("cannot load {}: {e}", out.display()))
    })
}
