//! The query side of tool search: app detection, term expansion and BM25F ranking over the
//! prebuilt [`Index`]. Kept apart from the index builder so changing how queries are ranked does
//! not change the artifact (the builder fingerprints only the files that shape it).

use super::*;
use crate::model::Tool;

/// One query term: the words typed, its stem, and the vocabulary entries it matches with their
/// weights.
struct QueryTerm {
    surface: String,
    variants: Vec<(usize, f32)>,
}

/// Documents a search ranks: everything, or the tool ranges of some apps.
enum Scope {
    All,
    Ranges(Vec<(u32, u32)>),
}

impl Catalog {
    /// Finds the tools for a plain-language task. `app` narrows the search to one app id.
    pub fn find(&self, query: &str, app: Option<&str>, limit: usize) -> Found {
        let limit = limit.clamp(1, MAX_LIMIT);
        let idx = &self.index;
        if query.len() > 1000 {
            return Found::empty(
                None,
                "The query is too long; describe the task in a sentence.".into(),
            );
        }
        let words: Vec<(String, String)> = text::words(query)
            .into_iter()
            .filter(|w| !text::is_stop_word(w))
            .map(|w| {
                let s = text::stem(&w);
                (w, s)
            })
            .take(MAX_QUERY_TERMS * 2)
            .collect();

        // Stage 1: which app does the query name?
        let detected = detect_app(idx, &words);
        let (scope_apps, used): (Option<Vec<u32>>, Vec<bool>) = match app {
            Some(id) => {
                let Some(a) = self.app_index_of(id) else {
                    return Found::empty(
                        None,
                        format!("Unknown app '{id}'; list apps with GET /catalog."),
                    );
                };
                let mut used = vec![false; words.len()];
                if let Some((apps, span)) = &detected
                    && apps.contains(&(a as u32))
                {
                    used[span.clone()].iter_mut().for_each(|u| *u = true);
                }
                (Some(vec![a as u32]), used)
            }
            None => match &detected {
                Some((apps, span)) => {
                    let mut used = vec![false; words.len()];
                    used[span.clone()].iter_mut().for_each(|u| *u = true);
                    (Some(apps.clone()), used)
                }
                None => (None, vec![false; words.len()]),
            },
        };
        let app_label = scope_apps.as_ref().and_then(|apps| match apps.as_slice() {
            [one] => Some(self.apps[*one as usize].slug.clone()),
            _ => None,
        });

        if let Some(apps) = &scope_apps {
            let terms = query_terms(idx, &words, &used);
            if terms.is_empty() && words.iter().zip(&used).all(|(_, u)| *u) {
                return Found::empty(
                    app_label,
                    "The query names only an app; add what to do, e.g. 'send a message'.".into(),
                );
            }
            let ranges = apps.iter().map(|&a| self.apps[a as usize].tools).collect();
            let covered: Vec<String> = words
                .iter()
                .zip(&used)
                .filter(|(_, u)| **u)
                .map(|((_, s), _)| s.clone())
                .collect();
            let (hits, hint) = rank(
                self,
                &terms,
                &words,
                &covered,
                &Scope::Ranges(ranges),
                limit,
            );
            // An explicit app filter is never widened.
            if !hits.is_empty() || app.is_some() {
                return Found {
                    hint: if hits.is_empty() { hint } else { None },
                    hits,
                    app: app_label,
                };
            }
        }
        // Stage 2: the whole catalog, with every word (an alias word may be a real term).
        let none_used = vec![false; words.len()];
        let terms = query_terms(idx, &words, &none_used);
        let (hits, hint) = rank(self, &terms, &words, &[], &Scope::All, limit);
        Found {
            hint: if hits.is_empty() { hint } else { None },
            hits,
            app: None,
        }
    }
}

/// The alias in the query that names an app most surely: the longest, then the strongest (an
/// app's own name over a word taken from a title), then the last one ("upload a video to
/// youtube": the app is named last). Answers the apps it names and the word span it covers.
fn detect_app(
    idx: &Index,
    words: &[(String, String)],
) -> Option<(Vec<u32>, std::ops::Range<usize>)> {
    let max = (idx.max_alias_words as usize).min(words.len());
    let mut best: Option<((usize, u8, usize), Vec<u32>, std::ops::Range<usize>)> = None;
    for n in (1..=max).rev() {
        for start in 0..=words.len() - n {
            let key = words[start..start + n]
                .iter()
                .map(|(_, s)| s.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if let Some((apps, strength)) = idx.alias(&key) {
                let rank = (n, strength, start);
                if best.as_ref().is_none_or(|(r, _, _)| rank > *r) {
                    best = Some((rank, apps.to_vec(), start..start + n));
                }
            }
        }
    }
    best.map(|(_, apps, span)| (apps, span))
}

fn query_terms(idx: &Index, words: &[(String, String)], used: &[bool]) -> Vec<QueryTerm> {
    let mut out: Vec<QueryTerm> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for ((surface, stem), used) in words.iter().zip(used) {
        if *used || seen.contains(&stem.as_str()) {
            continue;
        }
        seen.push(stem);
        let mut variants = Vec::new();
        if let Some(t) = idx.term_id(stem) {
            variants.push((t, 1.0));
        }
        for syn in text::synonyms(stem) {
            if let Some(t) = idx.term_id(syn)
                && !variants.iter().any(|(v, _)| *v == t)
            {
                variants.push((t, text::SYNONYM_WEIGHT));
            }
        }
        out.push(QueryTerm {
            surface: surface.clone(),
            variants,
        });
        if out.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    out
}

fn rank(
    cat: &Catalog,
    terms: &[QueryTerm],
    words: &[(String, String)],
    covered: &[String],
    scope: &Scope,
    limit: usize,
) -> (Vec<Hit>, Option<String>) {
    let idx = &cat.index;
    let answerable: Vec<&QueryTerm> = terms.iter().filter(|t| !t.variants.is_empty()).collect();
    if answerable.is_empty() {
        let hint = if terms.is_empty() {
            "The query has no searchable words; describe the task, e.g. 'create a github issue'."
                .to_string()
        } else {
            format!(
                "None of the words ({}) occur in the catalog; try other words or name the app.",
                terms
                    .iter()
                    .map(|t| t.surface.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return (Vec::new(), Some(hint));
    }
    let need = if answerable.len() >= 4 {
        answerable.len().div_ceil(2)
    } else {
        1
    };
    let verb = words.iter().find_map(|(_, s)| Verb::of_term(s));

    let n_docs = idx.doc_len.len();
    let mut acc = vec![0f32; n_docs];
    let mut mask = vec![0u32; n_docs];
    let mut best = vec![0f32; n_docs];
    // Per tool: how many query words (and words of the app name the query used) occur in its
    // operation name; with the name's length this says how exactly the name fits the request.
    let mut name_hits = vec![0u8; n_docs];
    let mut in_name = vec![false; n_docs];
    let mut touched: Vec<u32> = Vec::new();
    let for_scope = |docs: &[u32], visit: &mut dyn FnMut(usize, usize)| match scope {
        Scope::All => visit(0, docs.len()),
        Scope::Ranges(ranges) => {
            for &(a, b) in ranges {
                let lo = docs.partition_point(|&d| d < a);
                let hi = docs.partition_point(|&d| d < b);
                visit(lo, hi);
            }
        }
    };
    for stem in covered {
        if let Some(t) = idx.term_id(stem) {
            let range = idx.postings(t);
            let docs = &idx.post_doc[range.clone()];
            for_scope(docs, &mut |lo, hi| {
                for p in lo..hi {
                    if idx.post_tf[range.start + p][Field::Name as usize] > 0 {
                        let d = docs[p] as usize;
                        name_hits[d] = name_hits[d].saturating_add(1);
                    }
                }
            });
        }
    }
    for (bit, term) in answerable.iter().enumerate() {
        touched.clear();
        for &(t, weight) in &term.variants {
            let idf = idf_weight(idx, t) * weight;
            let range = idx.postings(t);
            let docs = &idx.post_doc[range.clone()];
            let mut visit = |lo: usize, hi: usize| {
                for (p, &d) in docs.iter().enumerate().take(hi).skip(lo) {
                    let d = d as usize;
                    let tf = &idx.post_tf[range.start + p];
                    let len = &idx.doc_len[d];
                    let mut x = 0f32;
                    for f in 0..NFIELDS {
                        if tf[f] > 0 {
                            let norm = 1.0 - B[f] + B[f] * len[f] as f32 / idx.avg_len[f];
                            x += WEIGHTS[f] * tf[f] as f32 / norm;
                        }
                    }
                    let s = idf * x * (K1 + 1.0) / (K1 + x);
                    if best[d] == 0.0 {
                        touched.push(d as u32);
                    }
                    if s > best[d] {
                        best[d] = s;
                    }
                    if tf[Field::Name as usize] > 0 {
                        in_name[d] = true;
                    }
                }
            };
            for_scope(docs, &mut visit);
        }
        for &d in &touched {
            let d = d as usize;
            acc[d] += best[d];
            mask[d] |= 1 << bit;
            best[d] = 0.0;
            if in_name[d] {
                name_hits[d] = name_hits[d].saturating_add(1);
                in_name[d] = false;
            }
        }
    }
    let best_matched = mask
        .iter()
        .map(|m| m.count_ones() as usize)
        .max()
        .unwrap_or(0);
    // The floor keeps global answers to long requests from being single shared words; inside
    // an app the best available matches are the answer (conversational requests rarely use
    // the operation's words), and globally two words in common are enough to answer.
    let need = match scope {
        Scope::Ranges(_) => need.min(best_matched),
        Scope::All if best_matched >= 2 => need.min(best_matched),
        Scope::All => need,
    };

    let mut cands: Vec<(f32, u32)> = Vec::new();
    for (d, &m) in mask.iter().enumerate() {
        if m == 0 {
            continue;
        }
        let matched = m.count_ones() as usize;
        if matched < need.max(1) {
            continue;
        }
        let tool: &Tool = &cat.tools[d];
        let name_len = idx.doc_len[d][Field::Name as usize].max(1);
        let coverage = (f32::from(name_hits[d]) / f32::from(name_len)).min(1.0);
        let mut s = acc[d] * (1.0 + NAME_COVERAGE_WEIGHT * coverage);
        if let Some(v) = verb {
            s *= v.method_prior(tool.method);
        }
        if tool.deprecated {
            s *= 0.8;
        }
        cands.push((s, d as u32));
    }
    if cands.is_empty() {
        let list = answerable
            .iter()
            .map(|t| t.surface.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return (
            Vec::new(),
            Some(format!(
                "No tool matches at least {need} of the {} searchable words ({list}); the best \
                 matched {best_matched}. Use fewer, more specific words or name the app.",
                answerable.len()
            )),
        );
    }
    let order = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if cands.len() > limit {
        cands.select_nth_unstable_by(limit - 1, order);
        cands.truncate(limit);
    }
    cands.sort_by(order);
    let hits = cands
        .into_iter()
        .map(|(score, d)| {
            let tool = &cat.tools[d as usize];
            let m = mask[d as usize];
            Hit {
                tool: tool.name.clone(),
                app: cat.apps[tool.app as usize].slug.clone(),
                score,
                matched_terms: answerable
                    .iter()
                    .enumerate()
                    .filter(|(bit, _)| m & (1 << bit) != 0)
                    .map(|(_, t)| t.surface.clone())
                    .collect(),
                connection: None,
            }
        })
        .collect();
    (hits, None)
}

fn idf_weight(idx: &Index, t: usize) -> f32 {
    idx.idf(t)
}
