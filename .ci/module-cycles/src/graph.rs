//! The "uses" graph between a crate's modules and its cycles.
//!
//! Module A uses module B when A's code or private `use` declarations name B or an item of B.
//! A module's declaration of its children (`mod b;`) is not a use: a parent may own children
//! that use it. Nor is a re-export (`pub use b::Item`): it is an alias, and whoever names the
//! alias uses the module that defines the item, so a facade `mod.rs` that re-exports its
//! children while they use its types is not a cycle.
//!
//! Two kinds of cycle are found, both as strongly connected components (Tarjan's algorithm):
//! modules that use each other, and, under any module, children whose subtrees use each other
//! (layers: `alerts::service` using `engine::runner` while `engine::watchers` uses `alerts`
//! makes `alerts` and `engine` a cycle, though no two modules are).

use crate::tree::Crate;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The first place module `from` uses module `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub line: usize,
    /// The path as written, `::`-joined.
    pub path: String,
}

/// One strongly connected component: modules that all reach each other through uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// `None` for a cycle between modules; `Some(parent)` for a cycle between the subtrees of
    /// `parent`'s children (each member stands for itself and all its submodules).
    pub under: Option<usize>,
    /// Its modules, in module-path order.
    pub modules: Vec<usize>,
    /// One shortest cycle through the first module, starting and ending there.
    pub example: Vec<usize>,
    /// Every use between two of its modules.
    pub edges: Vec<Edge>,
}

/// The uses between distinct modules, one edge (its first occurrence) per pair.
pub fn edges(c: &Crate) -> Vec<Edge> {
    let mut seen: BTreeMap<(usize, usize), Edge> = BTreeMap::new();
    for (from, m) in c.modules.iter().enumerate() {
        for r in &m.refs {
            let Some(to) = c.resolve(from, &r.segments) else {
                continue;
            };
            if to != from {
                seen.entry((from, to)).or_insert_with(|| Edge {
                    from,
                    to,
                    line: r.line,
                    path: r.segments.join("::"),
                });
            }
        }
    }
    seen.into_values().collect()
}

/// Every cycle of the crate: first those between modules, then those between the subtrees of
/// one module's children (layers) that no module cycle already shows; each group ordered by
/// its first module's path.
pub fn cycles(c: &Crate) -> Vec<Cycle> {
    let all = edges(c);
    let mut out = module_cycles(c, &all);
    let mut layers = subtree_cycles(c, &all, &out);
    out.sort_by(|a, b| {
        c.modules[a.modules[0]]
            .path
            .cmp(&c.modules[b.modules[0]].path)
    });
    layers.sort_by(|a, b| {
        c.modules[a.modules[0]]
            .path
            .cmp(&c.modules[b.modules[0]].path)
    });
    out.extend(layers);
    out
}

fn module_cycles(c: &Crate, all: &[Edge]) -> Vec<Cycle> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); c.modules.len()];
    for e in all {
        next[e.from].push(e.to);
    }
    strongly_connected(&next)
        .into_iter()
        .filter(|scc| scc.len() > 1)
        .map(|scc| {
            let mut modules = scc;
            modules.sort_by(|a, b| c.modules[*a].path.cmp(&c.modules[*b].path));
            let members: BTreeSet<usize> = modules.iter().copied().collect();
            let example = shortest_cycle(modules[0], &next, &members);
            let edges = all
                .iter()
                .filter(|e| members.contains(&e.from) && members.contains(&e.to))
                .cloned()
                .collect();
            Cycle {
                under: None,
                modules,
                example,
                edges,
            }
        })
        .collect()
}

/// `m` and every module below it.
fn subtree(c: &Crate, m: usize) -> Vec<usize> {
    let mut out = vec![m];
    let mut i = 0;
    while i < out.len() {
        out.extend(c.modules[out[i]].children.values().copied());
        i += 1;
    }
    out
}

/// For each module with several children: cycles between its children's subtrees (`alerts`
/// using `engine::runner` while `engine::watchers` uses `alerts` is a cycle between two
/// layers even when no two modules use each other). One already shown by a module cycle
/// that reaches into every member subtree is left out.
fn subtree_cycles(c: &Crate, all: &[Edge], module_cycles: &[Cycle]) -> Vec<Cycle> {
    let mut out = Vec::new();
    for parent in 0..c.modules.len() {
        let children: Vec<usize> = c.modules[parent].children.values().copied().collect();
        if children.len() < 2 {
            continue;
        }
        // Which child's subtree each module is in (by position in `children`).
        let mut owner: BTreeMap<usize, usize> = BTreeMap::new();
        for (k, &child) in children.iter().enumerate() {
            for m in subtree(c, child) {
                owner.insert(m, k);
            }
        }
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); children.len()];
        for e in all {
            if let (Some(&a), Some(&b)) = (owner.get(&e.from), owner.get(&e.to))
                && a != b
                && !next[a].contains(&b)
            {
                next[a].push(b);
            }
        }
        for scc in strongly_connected(&next)
            .into_iter()
            .filter(|s| s.len() > 1)
        {
            let members: BTreeSet<usize> = scc.iter().copied().collect();
            let shown = module_cycles.iter().any(|mc| {
                members
                    .iter()
                    .all(|&k| mc.modules.iter().any(|m| owner.get(m) == Some(&k)))
            });
            if shown {
                continue;
            }
            let mut modules: Vec<usize> = scc.iter().map(|&k| children[k]).collect();
            modules.sort_by(|a, b| c.modules[*a].path.cmp(&c.modules[*b].path));
            let first = scc
                .iter()
                .copied()
                .find(|&k| children[k] == modules[0])
                .unwrap_or(scc[0]);
            let example = shortest_cycle(first, &next, &members)
                .into_iter()
                .map(|k| children[k])
                .collect();
            let edges = all
                .iter()
                .filter(|e| match (owner.get(&e.from), owner.get(&e.to)) {
                    (Some(a), Some(b)) => a != b && members.contains(a) && members.contains(b),
                    _ => false,
                })
                .cloned()
                .collect();
            out.push(Cycle {
                under: Some(parent),
                modules,
                example,
                edges,
            });
        }
    }
    out
}

/// Tarjan's strongly connected components over adjacency lists.
fn strongly_connected(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        next: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.next[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                scc.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(scc);
        }
    }
    let n = next.len();
    let mut s = State {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// A shortest path `start → … → start` inside `members` (breadth-first).
fn shortest_cycle(start: usize, next: &[Vec<usize>], members: &BTreeSet<usize>) -> Vec<usize> {
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &next[v] {
            if !members.contains(&w) {
                continue;
            }
            if w == start {
                let mut path = vec![start, v];
                let mut at = v;
                while at != start {
                    at = came_from[&at];
                    path.push(at);
                }
                path.reverse();
                return path;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = came_from.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_and_a_shortest_example() {
        // 0 → 1 → 2 → 0, 2 → 3, 3 → 4 → 3, 5 alone.
        let next = vec![vec![1], vec![2], vec![0, 3], vec![4], vec![3], vec![]];
        let mut sccs: Vec<Vec<usize>> = strongly_connected(&next)
            .into_iter()
            .map(|mut s| {
                s.sort();
                s
            })
            .filter(|s| s.len() > 1)
            .collect();
        sccs.sort();
        assert_eq!(sccs, [vec![0, 1, 2], vec![3, 4]]);
        let members = BTreeSet::from([0, 1, 2]);
        assert_eq!(shortest_cycle(0, &next, &members), [0, 1, 2, 0]);
    }
}
