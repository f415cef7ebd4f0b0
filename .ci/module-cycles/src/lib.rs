//! Finds import cycles between the modules of each crate in a Cargo workspace.
//!
//! The check reads source text, not compiled code, so it runs in well under a second and needs
//! nothing beyond `cargo metadata`: comments and literals are blanked ([`source`]), the rest is
//! tokenised ([`tokens`]) and scanned for `mod` declarations, `use` trees and paths
//! ([`items`]); the module tree is read the way rustc finds module files ([`tree`]); paths are
//! resolved to modules, and the cycles are the strongly connected components of that graph and,
//! under each module, of the graph between its children's subtrees ([`graph`]). Macro-generated paths other than `crate::`/`super::` ones written in the macro
//! body, and names brought in by one `use` and then used as a path prefix elsewhere, are not
//! followed; both are rare, and the first `use` already records the dependency.

pub mod graph;
pub mod items;
pub mod report;
pub mod source;
pub mod tokens;
pub mod tree;
