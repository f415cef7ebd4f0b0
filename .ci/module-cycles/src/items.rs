//! What one source file declares and refers to: its `mod` declarations (with `#[path]`), inline
//! modules, `use` trees and the paths written in code, each attributed to the module it sits in.

use crate::source::blank;
use crate::tokens::{Tok, Token, tokenize};

/// `mod name;`: a module whose body is in another file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModDecl {
    pub name: String,
    /// The value of a `#[path = "…"]` attribute on the declaration.
    pub path_attr: Option<String>,
    pub line: usize,
}

/// A path that may name one of the crate's modules (`crate::a::B`, `super::x`, `self::y::z`, or
/// `child::f` where `child` is a submodule), as written, with `use` groups expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRef {
    pub segments: Vec<String>,
    pub line: usize,
}

/// A `pub use` (any visibility but private): the module offers `path` under `name` (`*` for a
/// glob). It is an alias, not a use: whoever names it depends on the module that defines the
/// item, not on the module that re-exports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reexport {
    pub name: String,
    pub path: PathRef,
}

/// A module of the file: index 0 is the file's own module, the others are `mod name { … }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalModule {
    /// Empty for the file's own module.
    pub name: String,
    /// The enclosing module, as an index into [`FileScan::modules`].
    pub parent: Option<usize>,
    pub line: usize,
    pub decls: Vec<ModDecl>,
    pub refs: Vec<PathRef>,
    pub reexports: Vec<Reexport>,
    /// Names of the items it defines (`fn`, `struct`, `const`, …; methods included, which only
    /// over-approximates).
    pub defines: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileScan {
    pub modules: Vec<LocalModule>,
}

enum Scope {
    Module(usize),
    Block,
}

/// Scans one file's source.
pub fn scan(src: &str) -> FileScan {
    let blanked = blank(src);
    let tokens = tokenize(&blanked);
    let mut s = Scanner {
        t: &tokens,
        src,
        blanked: &blanked,
        modules: vec![LocalModule {
            line: 1,
            ..LocalModule::default()
        }],
        scopes: Vec::new(),
    };
    let mut i = 0;
    while i < tokens.len() {
        i = s.step(i);
    }
    FileScan { modules: s.modules }
}

/// The state of one file's scan: the modules found so far and the open braces.
struct Scanner<'a> {
    t: &'a [Token],
    src: &'a str,
    blanked: &'a str,
    modules: Vec<LocalModule>,
    scopes: Vec<Scope>,
}

impl Scanner<'_> {
    /// The module the scan is inside.
    fn here(&self) -> usize {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| match s {
                Scope::Module(m) => Some(*m),
                Scope::Block => None,
            })
            .unwrap_or(0)
    }

    fn tok(&self, i: usize) -> Option<&Tok> {
        self.t.get(i).map(|t| &t.tok)
    }

    /// Reads what starts at token `i`; returns the index of the next token to read.
    fn step(&mut self, i: usize) -> usize {
        let here = self.here();
        match &self.t[i].tok {
            Tok::Ident(kw) if kw == "mod" => self.module(i, here),
            // `use<'a>` is precise capturing in `impl Trait + use<'a>`, not a declaration.
            Tok::Ident(kw) if kw == "use" && self.tok(i + 1) != Some(&Tok::Punct(b'<')) => {
                self.use_declaration(i, here)
            }
            // (`'static` is a lifetime, not an item.)
            Tok::Ident(kw)
                if DEFINING.contains(&kw.as_str())
                    && i.checked_sub(1).and_then(|p| self.tok(p)) != Some(&Tok::Punct(b'\'')) =>
            {
                if let Some(Tok::Ident(name)) = self.tok(i + 1) {
                    let name = name.clone();
                    self.modules[here].defines.push(name);
                }
                i + 1
            }
            Tok::Open => {
                self.scopes.push(Scope::Block);
                i + 1
            }
            Tok::Close => {
                self.scopes.pop();
                i + 1
            }
            Tok::Ident(first) if starts_path(self.t, i) => {
                let mut segments = vec![first.clone()];
                let line = self.t[i].line;
                let mut i = i + 1;
                while let (Some(Tok::PathSep), Some(Tok::Ident(s))) = (self.tok(i), self.tok(i + 1))
                {
                    segments.push(s.clone());
                    i += 2;
                }
                self.modules[here].refs.push(PathRef { segments, line });
                i
            }
            _ => i + 1,
        }
    }

    /// `mod name;` (a declaration) or `mod name {` (an inline module, entered).
    fn module(&mut self, i: usize, here: usize) -> usize {
        let Some(Tok::Ident(name)) = self.tok(i + 1) else {
            return i + 1;
        };
        let name = name.clone();
        match self.tok(i + 2) {
            Some(Tok::Semi) => {
                let path_attr = path_attr(self.t, i, self.src, self.blanked);
                self.modules[here].decls.push(ModDecl {
                    name,
                    path_attr,
                    line: self.t[i].line,
                });
                i + 3
            }
            Some(Tok::Open) => {
                self.modules.push(LocalModule {
                    name,
                    parent: Some(here),
                    line: self.t[i].line,
                    ..LocalModule::default()
                });
                self.scopes.push(Scope::Module(self.modules.len() - 1));
                i + 3
            }
            _ => i + 1,
        }
    }

    /// A `use` declaration: its paths are uses, or re-exports when it has a visibility.
    fn use_declaration(&mut self, i: usize, here: usize) -> usize {
        let line = self.t[i].line;
        let public = is_public(self.t, i);
        let mut i = i + 1;
        let mut paths = Vec::new();
        use_tree(self.t, &mut i, Vec::new(), &mut paths, 0);
        for (segments, name) in paths {
            let path = PathRef { segments, line };
            if public {
                self.modules[here].reexports.push(Reexport { name, path });
            } else {
                self.modules[here].refs.push(path);
            }
        }
        while i < self.t.len() && self.t[i].tok != Tok::Semi {
            i += 1;
        }
        i
    }
}

/// Keywords followed by the name of the item they define.
const DEFINING: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "const",
    "static",
    "macro_rules",
];

/// True when the `use` at `t[i]` has a visibility (`pub`, `pub(crate)`, `pub(in …)`).
fn is_public(t: &[Token], i: usize) -> bool {
    let Some(prev) = i.checked_sub(1) else {
        return false;
    };
    match &t[prev].tok {
        Tok::Ident(kw) => kw == "pub",
        Tok::Punct(b')') => (0..prev)
            .rev()
            .find(|&k| t[k].tok == Tok::Punct(b'('))
            .and_then(|open| open.checked_sub(1))
            .is_some_and(|k| t[k].tok == Tok::Ident("pub".into())),
        _ => false,
    }
}

/// True at the first segment of a path (`a::…`) in code: not a later segment, not `$crate`, and
/// not the path of a `pub(in …)` visibility.
fn starts_path(t: &[Token], i: usize) -> bool {
    let next_is_sep = t.get(i + 1).map(|t| &t.tok) == Some(&Tok::PathSep);
    let prev = i.checked_sub(1).map(|p| &t[p].tok);
    let after_sep = prev == Some(&Tok::PathSep);
    let macro_var = prev == Some(&Tok::Punct(b'$'));
    let visibility = matches!(prev, Some(Tok::Ident(kw)) if kw == "in");
    next_is_sep && !after_sep && !macro_var && !visibility
}

/// One path a `use` brings in and the name it is known by (`*` for a glob, which imports its
/// prefix).
type Imported = (Vec<String>, String);

/// Parses one use tree at `t[*i]`, appending each full path it imports. Stops at anything it
/// does not understand, leaving the caller to skip to `;`.
fn use_tree(
    t: &[Token],
    i: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<Imported>,
    depth: usize,
) {
    if depth > 32 {
        return;
    }
    let mut path = prefix;
    if t.get(*i).map(|t| &t.tok) == Some(&Tok::PathSep) {
        // `use ::name`: an external crate, never one of our modules.
        if path.is_empty() {
            return;
        }
        *i += 1;
    }
    loop {
        match t.get(*i).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
                if t.get(*i).map(|t| &t.tok) == Some(&Tok::PathSep) {
                    *i += 1;
                    continue;
                }
                let mut name = s.clone();
                if s == "self" && path.len() >= 2 {
                    name = path[path.len() - 2].clone();
                }
                if matches!(t.get(*i).map(|t| &t.tok), Some(Tok::Ident(kw)) if kw == "as") {
                    if let Some(Tok::Ident(alias)) = t.get(*i + 1).map(|t| &t.tok) {
                        name = alias.clone();
                    }
                    *i += 2;
                }
                out.push((path, name));
                return;
            }
            Some(Tok::Star) => {
                *i += 1;
                out.push((path, "*".into()));
                return;
            }
            Some(Tok::Open) => {
                *i += 1;
                loop {
                    match t.get(*i).map(|t| &t.tok) {
                        Some(Tok::Close) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Comma) => *i += 1,
                        None | Some(Tok::Semi) => return,
                        Some(_) => {
                            let before = *i;
                            use_tree(t, i, path.clone(), out, depth + 1);
                            if *i == before {
                                return;
                            }
                        }
                    }
                }
            }
            _ => return,
        }
    }
}

/// The `#[path = "…"]` value among the attributes before the `mod` at `t[i]`.
fn path_attr(t: &[Token], i: usize, src: &str, blanked: &str) -> Option<String> {
    let mut j = i;
    loop {
        let prev = j.checked_sub(1)?;
        match &t[prev].tok {
            Tok::Ident(kw) if matches!(kw.as_str(), "pub" | "crate" | "super" | "self" | "in") => {
                j = prev
            }
            Tok::Punct(b'(' | b')') | Tok::PathSep => j = prev,
            Tok::Punct(b']') => {
                let open = (0..prev).rev().find(|&k| t[k].tok == Tok::Punct(b'['))?;
                let is_path = open >= 1
                    && t[open - 1].tok == Tok::Punct(b'#')
                    && matches!(&t.get(open + 1)?.tok, Tok::Ident(p) if p == "path");
                if is_path {
                    let quote = (open..prev).find(|&k| t[k].tok == Tok::Punct(b'"'))?;
                    let start = t[quote].at + 1;
                    let len = blanked[start..].find('"')?;
                    return Some(src[start..start + len].to_string());
                }
                j = open.checked_sub(1)?;
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(src: &str) -> Vec<Vec<String>> {
        scan(src).modules[0]
            .refs
            .iter()
            .map(|r| r.segments.clone())
            .collect()
    }

    #[test]
    fn public_uses_are_reexports_with_their_names() {
        let s = scan(
            "pub use self::a::{B, C as D, e::self};\npub(crate) use f::*;\nuse g::H;\npub fn k() {}\nstruct L;",
        );
        let m = &s.modules[0];
        let named: Vec<_> = m
            .reexports
            .iter()
            .map(|r| (r.name.as_str(), r.path.segments.join("::")))
            .collect();
        assert_eq!(
            named,
            [
                ("B", "self::a::B".to_string()),
                ("D", "self::a::C".into()),
                ("e", "self::a::e::self".into()),
                ("*", "f".into())
            ]
        );
        assert_eq!(m.refs[0].segments, p("g::H"));
        assert_eq!(m.defines, ["k", "L"]);
    }

    fn p(s: &str) -> Vec<String> {
        s.split("::").map(str::to_string).collect()
    }

    #[test]
    fn use_trees_expand_to_full_paths() {
        let r = refs("use super::super::f::G;\nuse ::ext::x;\nuse std::fmt;");
        let all = refs("use crate::{a::{self, B as C}, d::*, e};");
        assert_eq!(
            all,
            [
                p("crate::a::self"),
                p("crate::a::B"),
                p("crate::d"),
                p("crate::e")
            ]
        );
        assert_eq!(r, [p("super::super::f::G"), p("std::fmt")]);
    }

    #[test]
    fn code_paths_but_not_comments_strings_or_macro_vars() {
        let r = refs(
            "fn f() { let x = crate::a::b(); // crate::c::d\n let s = \"self::e\"; $crate::g::h; Vec::<u8>::new(); }",
        );
        assert_eq!(r, [p("crate::a::b"), p("Vec")]);
    }

    #[test]
    fn inline_modules_own_their_references_and_declarations() {
        let s = scan(
            "mod a;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    mod deep;\n}\nfn g() { crate::z::y(); }",
        );
        assert_eq!(s.modules.len(), 2);
        assert_eq!(s.modules[0].decls[0].name, "a");
        assert_eq!(s.modules[1].name, "tests");
        assert_eq!(s.modules[1].parent, Some(0));
        assert_eq!(s.modules[1].refs[0].segments, p("super"));
        assert_eq!(s.modules[1].decls[0].name, "deep");
        assert_eq!(s.modules[0].refs[0].segments, p("crate::z::y"));
        assert_eq!(s.modules[0].refs[0].line, 7);
    }

    #[test]
    fn path_attributes_are_read_from_the_original_text() {
        let s = scan("#[cfg(unix)]\n#[path = \"os/unix.rs\"]\npub(crate) mod os;\nmod plain;");
        assert_eq!(
            s.modules[0].decls[0].path_attr.as_deref(),
            Some("os/unix.rs")
        );
        assert_eq!(s.modules[0].decls[1].path_attr, None);
    }

    #[test]
    fn visibility_paths_are_not_references() {
        assert!(refs("pub(in crate::a) fn f() {}").is_empty());
    }
}
