//! Checks the targets of workspace packages and words what it finds.

use crate::graph::{Cycle, cycles};
use crate::tree::{Crate, LoadError, load};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One compilation target of a package (its library, a binary, a test, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub package: String,
    /// `lib`, `bin`, `test`, …
    pub kind: String,
    pub name: String,
    pub root: PathBuf,
}

/// What the check found in one target.
#[derive(Debug)]
pub struct Finding {
    pub target: Target,
    pub krate: Crate,
    pub cycles: Vec<Cycle>,
}

pub fn check(target: &Target) -> Result<Finding, LoadError> {
    let krate = load(&target.root)?;
    let cycles = cycles(&krate);
    Ok(Finding {
        target: target.clone(),
        krate,
        cycles,
    })
}

fn shown(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// A human-readable account of one finding's cycles, with paths shown relative to `base`.
pub fn describe(f: &Finding, base: &Path) -> String {
    let m = &f.krate.modules;
    let place = |i: usize| {
        let file = shown(&m[i].file, base);
        if m[i].inline {
            format!("{file} (inline `mod` at line {})", m[i].line)
        } else {
            file
        }
    };
    let mut s = String::new();
    for (n, c) in f.cycles.iter().enumerate() {
        let what = match c.under {
            None => format!("{} modules", c.modules.len()),
            Some(p) => format!(
                "{} submodules of `{}` use each other through their own submodules",
                c.modules.len(),
                m[p].path
            ),
        };
        let _ = writeln!(
            s,
            "cycle {} of {} in package `{}` ({} `{}`, {}): {what}",
            n + 1,
            f.cycles.len(),
            f.target.package,
            f.target.kind,
            f.target.name,
            shown(&f.target.root, base),
        );
        let width = c
            .modules
            .iter()
            .map(|&i| m[i].path.len())
            .max()
            .unwrap_or(0);
        for &i in &c.modules {
            let below = subtree_size(&f.krate, i) - 1;
            let note = match (c.under, below) {
                (Some(_), 1) => " and its 1 submodule".to_string(),
                (Some(_), n) if n > 1 => format!(" and its {n} submodules"),
                _ => String::new(),
            };
            let _ = writeln!(s, "    {:width$}  {}{note}", m[i].path, place(i));
        }
        let example: Vec<&str> = c.example.iter().map(|&i| m[i].path.as_str()).collect();
        let _ = writeln!(s, "  for example: {}", example.join(" -> "));
        let _ = writeln!(s, "  uses inside the cycle (first occurrence of each):");
        for e in &c.edges {
            let _ = writeln!(
                s,
                "    {}:{}: {} -> {} (`{}`)",
                shown(&m[e.from].file, base),
                e.line,
                m[e.from].path,
                m[e.to].path,
                e.path
            );
        }
    }
    s
}

/// How many modules `m`'s subtree holds, itself included.
fn subtree_size(c: &Crate, m: usize) -> usize {
    1 + c.modules[m]
        .children
        .values()
        .map(|&child| subtree_size(c, child))
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_names_its_files_lines_and_an_example() {
        let dir = std::env::temp_dir().join(format!("module-cycles-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
        std::fs::write(dir.join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
        std::fs::write(
            dir.join("b.rs"),
            "pub struct B;\nfn f() { let _ = super::a::A; }\n",
        )
        .unwrap();
        let t = Target {
            package: "p".into(),
            kind: "lib".into(),
            name: "p".into(),
            root: dir.join("lib.rs"),
        };
        let f = check(&t).unwrap();
        let text = describe(&f, &dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(f.cycles.len(), 1, "{text}");
        assert!(
            text.contains("cycle 1 of 1 in package `p` (lib `p`, lib.rs): 2 modules"),
            "{text}"
        );
        assert!(
            text.contains("for example: crate::a -> crate::b -> crate::a"),
            "{text}"
        );
        assert!(
            text.contains("a.rs:1: crate::a -> crate::b (`crate::b::B`)"),
            "{text}"
        );
        assert!(
            text.contains("b.rs:2: crate::b -> crate::a (`super::a::A`)"),
            "{text}"
        );
    }
}
