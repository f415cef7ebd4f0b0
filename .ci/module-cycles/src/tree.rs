//! The module tree of one crate target, read from its root file by following `mod` declarations
//! the way rustc finds module files (`name.rs` or `name/mod.rs`, `#[path]`, inline modules).

use crate::items::{PathRef, Reexport, scan};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One module of the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// `crate`, `crate::a`, `crate::a::tests`, …
    pub path: String,
    /// The file that holds the module's body.
    pub file: PathBuf,
    /// True for `mod name { … }` inside `file`.
    pub inline: bool,
    /// The line of its `mod` (inline modules), else 1.
    pub line: usize,
    pub parent: Option<usize>,
    pub children: BTreeMap<String, usize>,
    pub refs: Vec<PathRef>,
    pub reexports: Vec<Reexport>,
    pub defines: Vec<String>,
    /// The directory where its `mod name;` children live.
    child_dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crate {
    /// Index 0 is the crate root.
    pub modules: Vec<Module>,
}

/// Why a crate could not be read.
#[derive(Debug)]
pub enum LoadError {
    Read(PathBuf, std::io::Error),
    /// `mod name;` with neither `name.rs` nor `name/mod.rs` (nor its `#[path]`).
    Missing {
        declared_in: PathBuf,
        line: usize,
        name: String,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Read(p, e) => write!(f, "cannot read {}: {e}", p.display()),
            Self::Missing {
                declared_in,
                line,
                name,
            } => write!(
                f,
                "{}:{line}: no file for `mod {name};` (looked for {name}.rs and {name}/mod.rs)",
                declared_in.display()
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads the crate whose root file is `root` (`src/lib.rs`, `src/main.rs`, …).
pub fn load(root: &Path) -> Result<Crate, LoadError> {
    let mut c = Crate {
        modules: Vec::new(),
    };
    let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
    load_file(&mut c, root, "crate".into(), None, dir)?;
    Ok(c)
}

/// Adds the module in `file` (and everything it declares) under `parent`; returns its index.
fn load_file(
    c: &mut Crate,
    file: &Path,
    path: String,
    parent: Option<usize>,
    child_dir: PathBuf,
) -> Result<usize, LoadError> {
    let src = std::fs::read_to_string(file).map_err(|e| LoadError::Read(file.to_path_buf(), e))?;
    let scan = scan(&src);
    let mut index = Vec::with_capacity(scan.modules.len());
    for (n, local) in scan.modules.iter().enumerate() {
        let (path, parent, dir) = match local.parent {
            None => (path.clone(), parent, child_dir.clone()),
            Some(p) => {
                let up: usize = index[p];
                let dir = c.modules[up].child_dir.join(&local.name);
                (
                    format!("{}::{}", c.modules[up].path, local.name),
                    Some(up),
                    dir,
                )
            }
        };
        let id = c.modules.len();
        c.modules.push(Module {
            path,
            file: file.to_path_buf(),
            inline: n > 0,
            line: local.line,
            parent,
            children: BTreeMap::new(),
            refs: local.refs.clone(),
            reexports: local.reexports.clone(),
            defines: local.defines.clone(),
            child_dir: dir,
        });
        // A file's own module is registered by the declaration that loads it (below).
        if let (Some(up), true) = (parent, n > 0) {
            c.modules[up].children.insert(local.name.clone(), id);
        }
        index.push(id);
    }
    for (n, local) in scan.modules.iter().enumerate() {
        let owner = index[n];
        for decl in &local.decls {
            let (child_file, dir) = match &decl.path_attr {
                Some(p) => {
                    let f = file.parent().unwrap_or(Path::new(".")).join(p);
                    let d = f.parent().unwrap_or(Path::new(".")).to_path_buf();
                    (f, d)
                }
                None => {
                    let base = c.modules[owner].child_dir.clone();
                    let flat = base.join(format!("{}.rs", decl.name));
                    let nested = base.join(&decl.name).join("mod.rs");
                    if flat.is_file() {
                        (flat, base.join(&decl.name))
                    } else if nested.is_file() {
                        (nested, base.join(&decl.name))
                    } else {
                        return Err(LoadError::Missing {
                            declared_in: file.to_path_buf(),
                            line: decl.line,
                            name: decl.name.clone(),
                        });
                    }
                }
            };
            let path = format!("{}::{}", c.modules[owner].path, decl.name);
            let id = load_file(c, &child_file, path, Some(owner), dir)?;
            c.modules[owner].children.insert(decl.name.clone(), id);
        }
    }
    Ok(index[0])
}

/// How many re-exports a path may pass through (a guard against alias loops).
const MAX_ALIAS_DEPTH: usize = 16;

impl Crate {
    /// The module a path written in module `from` leads to, if it names one of ours: `crate`,
    /// `super` and `self` prefixes, or a first segment that is a submodule of `from`; then as
    /// many following segments as are submodules. An item reached through a re-export
    /// (`pub use`) resolves to the module that defines it. `None` for anything else (other
    /// crates, local items, prelude names).
    pub fn resolve(&self, from: usize, segments: &[String]) -> Option<usize> {
        self.resolve_at(from, segments, 0)
    }

    fn resolve_at(&self, from: usize, segments: &[String], depth: usize) -> Option<usize> {
        let (first, rest) = segments.split_first()?;
        let mut at = match first.as_str() {
            "crate" => 0,
            "self" => from,
            "super" => self.modules[from].parent?,
            name => match self.modules[from].children.get(name) {
                Some(&child) => child,
                None => return None,
            },
        };
        let mut rest = rest.iter().peekable();
        if first == "super" {
            while rest.peek().is_some_and(|s| *s == "super") {
                rest.next();
                at = self.modules[at].parent?;
            }
        }
        for seg in rest {
            match self.modules[at].children.get(seg.as_str()) {
                Some(&child) => at = child,
                None if seg == "self" => {}
                None => return Some(self.alias_target(at, seg, depth).unwrap_or(at)),
            }
        }
        Some(at)
    }

    /// Where module `m` gets `name` from when it does not define it but re-exports it.
    fn alias_target(&self, m: usize, name: &str, depth: usize) -> Option<usize> {
        let module = &self.modules[m];
        if depth >= MAX_ALIAS_DEPTH || module.defines.iter().any(|d| d == name) {
            return None;
        }
        let named = module.reexports.iter().find(|r| r.name == name);
        if let Some(r) = named {
            return self.resolve_at(m, &r.path.segments, depth + 1);
        }
        // Through a glob: the first one whose module has the name (defined or re-exported).
        module
            .reexports
            .iter()
            .filter(|r| r.name == "*")
            .filter_map(|r| self.resolve_at(m, &r.path.segments, depth + 1))
            .find(|&g| g != m && self.offers(g, name, depth + 1))
            .map(|g| self.alias_target(g, name, depth + 1).unwrap_or(g))
    }

    /// True when module `m` defines `name` or re-exports something under it.
    fn offers(&self, m: usize, name: &str, depth: usize) -> bool {
        let module = &self.modules[m];
        depth < MAX_ALIAS_DEPTH
            && (module.defines.iter().any(|d| d == name)
                || module.children.contains_key(name)
                || module.reexports.iter().any(|r| r.name == name))
    }
}
