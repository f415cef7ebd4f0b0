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

use crate::index::NameShapes;
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
        AppIndex {
            names,
            words,
            shapes: Default::default(),
        }
    }

    fn shapes(&self) -> &NameShapes {
        self.shapes.get_or_init(|| {
            let mut ids_of: std::collections::HashMap<&str, u32> = Default::default();
            let mut shapes = NameShapes::default();
            for names in &self.names {
                let mut row = Vec::with_capacity(names.len());
                shapes
                    .name_letters
                    .push(names.iter().map(|n| letters(&n.text)).collect());
                for n in names {
                    let start = shapes.ids.len() as u32;
                    for w in n.text.split(' ') {
                        let id = *ids_of.entry(w).or_insert_with(|| {
                            shapes.vocab_letters.push(letters(w));
                            shapes.vocab.push(w.to_string());
                            shapes.vocab.len() as u32 - 1
                        });
                        shapes.ids.push(id);
                    }
                    let chars = n.text.chars().filter(|&c| c != ' ').count() as u32;
                    row.push((start, shapes.ids.len() as u32, chars));
                }
                shapes.names.push(row);
            }
            shapes
        })
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

/// The letters of a text (spaces left out) as bits, one per character modulo 64. A bit that
/// one text has and the other lacks stands for at least one character of the first that the
/// second does not contain, and each such character costs an edit: so the larger of the two
/// counts is a lower bound of the edit distance (transpositions keep the letters), found
/// without the distance's table.
fn letters(text: &str) -> u64 {
    text.chars()
        .filter(|&c| c != ' ')
        .fold(0, |m, c| m | 1 << (u32::from(c) % 64))
}

fn letters_apart(a: u64, b: u64) -> usize {
    (a & !b).count_ones().max((b & !a).count_ones()) as usize
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

/// The query as [`name_score`] reads it.
struct Query<'a> {
    text: &'a str,
    /// Without spaces.
    compact: &'a str,
    /// Its length in characters.
    compact_chars: usize,
    /// [`letters`] of the query.
    letters: u64,
    words: usize,
    /// `word_scores[q * vocab + w]`: [`word_match`] of query word `q` and vocabulary word `w`.
    word_scores: Vec<f32>,
    vocab: usize,
}

/// Score of one name against the query: tier plus coverage, or `None`. Runs for every name of
/// the catalog, so it allocates nothing; word matches and typo distances were computed once per
/// distinct word in `q.word_scores`.
fn name_score(
    q: &Query,
    name: &str,
    words: &[u32],
    name_chars: usize,
    name_letters: u64,
) -> Option<f32> {
    let (query, compact_q) = (q.text, q.compact);
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
    for row in q.word_scores.chunks_exact(q.vocab.max(1)).take(q.words) {
        let best = words
            .iter()
            .map(|&w| row[w as usize])
            .fold(0.0f32, f32::max);
        if best == 0.0 {
            total = -1.0;
            break;
        }
        total += best;
    }
    if total > 0.0 {
        let coverage = q.words as f32 / words.len().max(1) as f32;
        return Some(2.0 + total / q.words as f32 + 0.5 * coverage.min(1.0));
    }
    // A typo of the whole name, spaces ignored ("gogle calendar", "twillio"); names whose
    // length alone is out of reach are skipped before any distance.
    let budget = typo_budget(compact_q.len());
    if budget == 0
        || q.compact_chars.abs_diff(name_chars) > budget
        || letters_apart(q.letters, name_letters) > budget
    {
        return None;
    }
    let name_chars = name.chars().filter(|&c| c != ' ');
    if edit_distance_chars(compact_q.chars(), name_chars, budget) <= budget {
        return Some(2.5);
    }
    None
}

impl Catalog {
    /// Apps for what a person typed, best first, at most `limit`.
    pub fn search_apps(&self, query: &str, limit: usize) -> Vec<AppHit> {
        let prior = |i: usize| self.apps.get(i).map(|a| a.prior).unwrap_or(0.0);
        self.app_index.search(query, limit, &prior)
    }
}

impl AppIndex {
    /// [`Catalog::search_apps`] with the apps' priors given by index.
    fn search(&self, query: &str, limit: usize, prior: &dyn Fn(usize) -> f32) -> Vec<AppHit> {
        let q = normalise(query);
        if q.is_empty() || q.len() > 200 {
            return Vec::new();
        }
        let qwords: Vec<&str> = q.split(' ').collect();
        let compact_q = q.replace(' ', "");
        let idx = self;
        let shapes = idx.shapes();
        let query = Query {
            text: &q,
            compact: &compact_q,
            compact_chars: compact_q.chars().count(),
            letters: letters(&compact_q),
            words: qwords.len(),
            word_scores: qwords
                .iter()
                .flat_map(|qw| {
                    let (qm, budget) = (letters(qw), typo_budget(qw.len()));
                    shapes
                        .vocab
                        .iter()
                        .zip(&shapes.vocab_letters)
                        .map(move |(w, &wm)| {
                            // Only a typo could match, and the letters alone differ too much.
                            if qw.len() >= 4 && letters_apart(qm, wm) > budget && !w.starts_with(qw)
                            {
                                0.0
                            } else {
                                word_match(qw, w)
                            }
                        })
                })
                .collect(),
            vocab: shapes.vocab.len(),
        };
        let mut hits: Vec<AppHit> = Vec::new();
        for (i, names) in idx.names.iter().enumerate() {
            let mut best: Option<(f32, &str)> = None;
            let rows = shapes.names.get(i).map(Vec::as_slice).unwrap_or_default();
            let masks = shapes
                .name_letters
                .get(i)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for ((n, &(start, end, chars)), &mask) in names.iter().zip(rows).zip(masks) {
                let words = &shapes.ids[start as usize..end as usize];
                if let Some(mut s) = name_score(&query, &n.text, words, chars as usize, mask) {
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
            hits.push(AppHit {
                app: i as u32,
                score: tier + 0.8 * prior(i),
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

    /// The scan as it was before names became word ids: every name word compared with every
    /// query word, the whole-name distance run for every name.
    fn reference_search(idx: &AppIndex, query: &str, limit: usize) -> Vec<AppHit> {
        fn score(query: &str, compact_q: &str, qwords: &[&str], name: &str) -> Option<f32> {
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
            let budget = typo_budget(compact_q.len());
            let name_chars = name.chars().filter(|&c| c != ' ');
            if budget > 0 && edit_distance_chars(compact_q.chars(), name_chars, budget) <= budget {
                return Some(2.5);
            }
            None
        }
        let q = normalise(query);
        if q.is_empty() || q.len() > 200 {
            return Vec::new();
        }
        let qwords: Vec<&str> = q.split(' ').collect();
        let compact_q = q.replace(' ', "");
        let mut hits = Vec::new();
        for (i, names) in idx.names.iter().enumerate() {
            let mut best: Option<(f32, &str)> = None;
            for n in names {
                if let Some(mut s) = score(&q, &compact_q, &qwords, &n.text) {
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
            hits.push(AppHit {
                app: i as u32,
                score: tier + 0.8 * ((i % 7) as f32 / 7.0),
                matched,
            });
        }
        let order = |a: &AppHit, b: &AppHit| b.score.total_cmp(&a.score).then(a.app.cmp(&b.app));
        hits.sort_by(order);
        hits.truncate(limit.max(1));
        hits
    }

    /// Word ids and the length filter answer exactly as the plain scan, on generated names
    /// and queries over a small alphabet (so prefixes and typos are common).
    #[test]
    fn the_word_id_scan_answers_as_the_plain_scan() {
        let mut seed = 0x1234_5678_u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let word = |next: &mut dyn FnMut() -> u32| -> String {
            (0..1 + next() % 9)
                .map(|_| ['a', 'b', 'c', 'd', 'é'][(next() % 5) as usize])
                .collect()
        };
        let text = |next: &mut dyn FnMut() -> u32, n: u32| -> String {
            (0..1 + next() % n)
                .map(|_| word(next))
                .collect::<Vec<_>>()
                .join(" ")
        };
        for round in 0..20 {
            let mut idx = AppIndex::default();
            for _ in 0..200 {
                let names = (0..1 + next() % 4)
                    .map(|k| AppName {
                        text: text(&mut next, 3),
                        kind: [NameKind::Own, NameKind::Alias, NameKind::Former][k as usize % 3],
                    })
                    .collect();
                idx.names.push(names);
                let mut words: Vec<String> = (0..next() % 4).map(|_| word(&mut next)).collect();
                words.sort();
                words.dedup();
                idx.words.push(words);
            }
            let prior = |i: usize| (i % 7) as f32 / 7.0;
            for _ in 0..100 {
                let q = text(&mut next, 3);
                let want = reference_search(&idx, &q, 10);
                assert_eq!(idx.search(&q, 10, &prior), want, "round {round}: {q:?}");
            }
        }
    }

    #[test]
    fn names_score_exact_over_prefix_over_words_over_typos() {
        let s = |q: &str, n: &str| {
            let qw: Vec<&str> = q.split(' ').collect();
            let cq: String = q.split(' ').collect();
            let vocab: Vec<&str> = n.split(' ').collect();
            let query = Query {
                text: q,
                compact: &cq,
                compact_chars: cq.chars().count(),
                letters: letters(&cq),
                words: qw.len(),
                word_scores: qw
                    .iter()
                    .flat_map(|q| vocab.iter().map(|w| word_match(q, w)))
                    .collect(),
                vocab: vocab.len(),
            };
            let ids: Vec<u32> = (0..vocab.len() as u32).collect();
            name_score(
                &query,
                n,
                &ids,
                n.chars().filter(|&c| c != ' ').count(),
                letters(n),
            )
        };
        assert!(s("slack", "slack").unwrap() > s("sla", "slack").unwrap());
        assert!(s("google sheet", "google sheets").unwrap() > s("sheet", "google sheets").unwrap());
        assert!(s("hubspt", "hubspot").is_some());
        assert!(s("gogle calendar", "google calendar").is_some());
        assert_eq!(s("zebra", "slack"), None);
    }
}
