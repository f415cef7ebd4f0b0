//! App search: the app a person means, from what they type ("github", "gh", "hubspt",
//! "google sheet", "whisper").
//!
//! Each app answers to names (slug, title, aliases, former ids). A query is compared with every
//! name, and the best match decides the app's tier:
//! exact name > name starting with the query > every query word matching a word of the name
//! (whole, as a prefix, or within one or two typos) > a typo of the whole name > words of the
//! description. Within a tier, how much of the name the query covers and the app's prior (the
//! products people ask for most, then completeness) order the apps. The catalog is small
//! (about two thousand apps), so this is a scan, well under a millisecond.

pub use crate::index::{AppIndex, AppName, NameKind};
use crate::model::{Catalog, normalise};

impl AppIndex {
    /// Builds the index from the apps' slugs, titles, aliases, former ids and descriptions.
    pub fn build(apps: &[crate::model::App]) -> AppIndex {
        let mut names = Vec::with_capacity(apps.len());
        let mut words = Vec::with_capacity(apps.len());
        for a in apps {
            let mut n: Vec<AppName> = Vec::new();
            let mut push = |text: String, kind: NameKind| {
                if !text.is_empty() && !n.iter().any(|x| x.text == text) {
                    n.push(AppName { text, kind });
                }
            };
            push(normalise(&a.slug), NameKind::Own);
            push(normalise(&a.title), NameKind::Own);
            // "Twilio API", "Stripe API": the title without generic words is a name too.
            push(strip_generic(&normalise(&a.title)), NameKind::Own);
            for al in &a.aliases {
                push(normalise(al), NameKind::Alias);
            }
            for f in &a.former_ids {
                push(normalise(f), NameKind::Former);
            }
            names.push(n);
            let mut w: Vec<String> = normalise(&a.description)
                .split(' ')
                .chain(a.categories.iter().flat_map(|c| c.split('_')))
                .filter(|w| w.len() > 2)
                .map(str::to_string)
                .collect();
            w.sort();
            w.dedup();
            words.push(w);
        }
        AppIndex { names, words }
    }
}

const GENERIC: &[&str] = &[
    "api", "apis", "rest", "web", "the", "service", "platform", "v1", "v2", "v3",
];

fn strip_generic(name: &str) -> String {
    name.split(' ')
        .filter(|w| !GENERIC.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One ranked app.
#[derive(Debug, Clone, PartialEq)]
pub struct AppHit {
    pub app: u32,
    pub score: f32,
    /// Which name matched (normalised), for explaining the hit.
    pub matched: String,
}

/// Edit distance with adjacent transpositions (optimal string alignment), bounded: answers
/// `max + 1` as soon as it is exceeded.
fn edit_distance(a: &str, b: &str, max: usize) -> usize {
    edit_distance_chars(a.chars(), b.chars(), max)
}

/// Names and query words are short: up to this many characters the distance runs on the stack.
/// App search calls it for most names of the catalog on every typo-tolerant query, and the
/// allocations were most of that query's time.
const STACK_CHARS: usize = 48;

/// [`edit_distance`] over any two character sequences (a name with its spaces skipped, say),
/// without allocating when both fit [`STACK_CHARS`].
fn edit_distance_chars<A, B>(a: A, b: B, max: usize) -> usize
where
    A: Iterator<Item = char> + Clone,
    B: Iterator<Item = char> + Clone,
{
    let (la, lb) = (a.clone().count(), b.clone().count());
    // Most pairs differ in length by more than the budget: answer before any work.
    if la.abs_diff(lb) > max {
        return max + 1;
    }
    if la <= STACK_CHARS && lb <= STACK_CHARS {
        let (mut ab, mut bb) = (['\0'; STACK_CHARS], ['\0'; STACK_CHARS]);
        ab.iter_mut().zip(a).for_each(|(d, c)| *d = c);
        bb.iter_mut().zip(b).for_each(|(d, c)| *d = c);
        let mut rows = [[0u16; STACK_CHARS + 1]; 3];
        let [r0, r1, r2] = &mut rows;
        osa(&ab[..la], &bb[..lb], max, [r0, r1, r2])
    } else {
        // Cells are u16: a distance between texts this long is never within a typo budget.
        if la.max(lb) >= usize::from(u16::MAX) {
            return max + 1;
        }
        let (a, b): (Vec<char>, Vec<char>) = (a.collect(), b.collect());
        let mut rows = vec![vec![0u16; lb + 1]; 3];
        let [r0, r1, r2] = rows.as_mut_slice() else {
            return max + 1;
        };
        osa(&a, &b, max, [r0, r1, r2])
    }
}

/// The distance proper, over three caller-provided rows of at least `b.len() + 1` cells (u16:
/// small rows to clear, and both texts are shorter than `u16::MAX`).
fn osa(a: &[char], b: &[char], max: usize, rows: [&mut [u16]; 3]) -> usize {
    let [mut prev2, mut prev, mut cur] = rows;
    let n = b.len();
    for (j, cell) in (0u16..).zip(prev[..=n].iter_mut()) {
        *cell = j;
    }
    let max16 = u16::try_from(max).unwrap_or(u16::MAX);
    for (i, &ca) in (1u16..).zip(a) {
        let iu = usize::from(i);
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=n {
            let cost = u16::from(ca != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if iu > 1 && j > 1 && ca == b[j - 2] && a[iu - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        if row_min > max16 {
            return max + 1;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    usize::from(prev[n]).min(max + 1)
}

/// Typos tolerated in a word of this length.
fn typo_budget(len: usize) -> usize {
    match len {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// How well one query word matches one name word: 1 exact, else partial credit.
fn word_match(q: &str, w: &str) -> f32 {
    if q == w {
        1.0
    } else if q.len() >= 2 && w.starts_with(q) {
        0.6 + 0.3 * q.len() as f32 / w.len() as f32
    } else if q.len() >= 4 && edit_distance(q, w, typo_budget(q.len())) <= typo_budget(q.len()) {
        0.55
    } else {
        0.0
    }
}

/// `text` without its spaces, as bytes.
fn compact(text: &str) -> impl Iterator<Item = u8> + '_ {
    text.bytes().filter(|&b| b != b' ')
}

/// Score of one name against the query (`compact_q`: the query without spaces): tier plus
/// coverage, or `None`. Runs for every name of the catalog, so it allocates only for typos.
fn name_score(query: &str, compact_q: &str, qwords: &[&str], name: &str) -> Option<f32> {
    if query == name {
        return Some(5.0);
    }
    if compact(name).eq(compact_q.bytes()) {
        return Some(4.9);
    }
    let compact_prefix = || {
        let mut n = compact(name);
        compact_q.bytes().all(|b| n.next() == Some(b))
    };
    if query.len() >= 2 && (name.starts_with(query) || compact_prefix()) {
        return Some(4.0 + query.len() as f32 / name.len().max(1) as f32);
    }
    // Every query word must match some word of the name.
    let mut total = 0.0;
    for q in qwords {
        let best = name
            .split(' ')
            .map(|w| word_match(q, w))
            .fold(0.0f32, f32::max);
        if best == 0.0 {
            total = -1.0;
            break;
        }
        total += best;
    }
    if total > 0.0 {
        let coverage = qwords.len() as f32 / name.split(' ').count().max(1) as f32;
        return Some(2.0 + total / qwords.len() as f32 + 0.5 * coverage.min(1.0));
    }
    // A typo of the whole name, spaces ignored ("gogle calendar", "twillio").
    let budget = typo_budget(compact_q.len());
    let name_chars = name.chars().filter(|&c| c != ' ');
    if budget > 0 && edit_distance_chars(compact_q.chars(), name_chars, budget) <= budget {
        return Some(2.5);
    }
    None
}

impl Catalog {
    /// Apps for what a person typed, best first, at most `limit`.
    pub fn search_apps(&self, query: &str, limit: usize) -> Vec<AppHit> {
        let q = normalise(query);
        if q.is_empty() || q.len() > 200 {
            return Vec::new();
        }
        let qwords: Vec<&str> = q.split(' ').collect();
        let compact_q = q.replace(' ', "");
        let idx = &self.app_index;
        let mut hits: Vec<AppHit> = Vec::new();
        for (i, names) in idx.names.iter().enumerate() {
            let mut best: Option<(f32, &str)> = None;
            for n in names {
                if let Some(mut s) = name_score(&q, &compact_q, &qwords, &n.text) {
                    // A former document id is weaker evidence than the product's own names.
                    if n.kind == NameKind::Former {
                        s -= 0.3;
                    }
                    if best.is_none_or(|(b, _)| s > b) {
                        best = Some((s, &n.text));
                    }
                }
            }
            let (tier, matched) = match best {
                Some((s, m)) => (s, m.to_string()),
                None => {
                    // Last resort: the query's words in the description or categories.
                    let words = &idx.words[i];
                    let found = qwords
                        .iter()
                        .filter(|w| {
                            w.len() > 2 && words.binary_search_by(|x| x.as_str().cmp(w)).is_ok()
                        })
                        .count();
                    if found == 0 {
                        continue;
                    }
                    (found as f32 / qwords.len() as f32, String::new())
                }
            };
            let prior = self.apps.get(i).map(|a| a.prior).unwrap_or(0.0);
            hits.push(AppHit {
                app: i as u32,
                score: tier + 0.8 * prior,
                matched,
            });
        }
        let order = |a: &AppHit, b: &AppHit| b.score.total_cmp(&a.score).then(a.app.cmp(&b.app));
        let limit = limit.max(1);
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, order);
            hits.truncate(limit);
        }
        hits.sort_by(order);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_typos_and_transpositions() {
        assert_eq!(edit_distance("hubspt", "hubspot", 2), 1);
        assert_eq!(edit_distance("stirpe", "stripe", 2), 1);
        assert_eq!(edit_distance("slak", "slack", 2), 1);
        assert!(edit_distance("github", "gitlab", 1) > 1);
        assert_eq!(edit_distance("", "ab", 2), 2);
        // Past the stack buffer the same answers come from the heap path.
        let long = "a".repeat(STACK_CHARS + 5);
        let typo = format!("{}b", "a".repeat(STACK_CHARS + 4));
        assert_eq!(edit_distance(&long, &typo, 2), 1);
        assert_eq!(edit_distance(&long, "a", 2), 3);
    }

    /// The bounded distance agrees with a plain, unbounded one on generated word pairs.
    #[test]
    fn bounded_distance_matches_the_textbook_one() {
        fn reference(a: &[char], b: &[char]) -> usize {
            let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
            for (i, row) in d.iter_mut().enumerate() {
                row[0] = i;
            }
            for (j, cell) in d[0].iter_mut().enumerate() {
                *cell = j;
            }
            for i in 1..=a.len() {
                for j in 1..=b.len() {
                    let cost = usize::from(a[i - 1] != b[j - 1]);
                    d[i][j] = (d[i - 1][j] + 1)
                        .min(d[i][j - 1] + 1)
                        .min(d[i - 1][j - 1] + cost);
                    if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                        d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
                    }
                }
            }
            d[a.len()][b.len()]
        }
        let mut seed = 0x2545_f491_u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for _ in 0..3000 {
            // Short words over a small alphabet (plus one non-ASCII letter), so typos are common.
            let mut word = |n: u32| -> String {
                (0..1 + next() % n)
                    .map(|_| ['a', 'b', 'c', 'é'][(next() % 4) as usize])
                    .collect()
            };
            let (a, b) = (word(9), word(9));
            let max = (next() % 4) as usize;
            let (ac, bc): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
            let want = reference(&ac, &bc).min(max + 1);
            assert_eq!(edit_distance(&a, &b, max), want, "{a:?} {b:?} max {max}");
        }
    }

    #[test]
    fn names_score_exact_over_prefix_over_words_over_typos() {
        let s = |q: &str, n: &str| {
            let qw: Vec<&str> = q.split(' ').collect();
            let cq: String = q.split(' ').collect();
            name_score(q, &cq, &qw, n)
        };
        assert!(s("slack", "slack").unwrap() > s("sla", "slack").unwrap());
        assert!(s("google sheet", "google sheets").unwrap() > s("sheet", "google sheets").unwrap());
        assert!(s("hubspt", "hubspot").is_some());
        assert!(s("gogle calendar", "google calendar").is_some());
        assert_eq!(s("zebra", "slack"), None);
    }
}
