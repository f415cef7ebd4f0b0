//! Tool search over the catalog: hand-written BM25F with app alias detection.
//!
//! Pipeline (see lambdas/README.md for the reasons):
//! 1. Split the query into words, drop stop words, stem.
//! 2. Detect an app alias ("google sheet", "slack"); the longest alias wins. With an app, rank
//!    only its tools (two-stage search); if that finds nothing, or no app is named, rank all.
//! 3. Expand every remaining term with its synonyms (weighted lower); a term counts as matched
//!    by a tool when the term or one of its synonyms occurs in any field.
//! 4. BM25F: per-field term frequencies, length-normalised per field and summed with field
//!    weights, so a long description cannot swamp a matching name.
//! 5. Multiply by a method prior when the query expresses a verb ("add" favours POST).
//! 6. Minimum-match floor: with 4 or more answerable terms, a tool must match at least half of
//!    them; when none does the answer is empty with a hint instead of weak matches.

pub mod text;

use serde::{Deserialize, Serialize};

use crate::model::Method;
use text::Verb;

pub const NFIELDS: usize = 7;

/// Index fields of a tool.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    /// Operation name / operationId words plus the verb derived from method and path.
    Name = 0,
    /// The operation's summary and tags.
    Summary = 1,
    /// The start of the long description: weighted low, so it cannot swamp a short summary.
    Description = 2,
    /// The last static path segment: the resource acted on (`/repos/{o}/{r}/issues` → issues).
    Resource = 3,
    /// Static path segments.
    Path = 4,
    /// Parameter and top-level body property names.
    Params = 5,
    /// The app's title and id, so an app named in a way no alias covers still counts.
    App = 6,
}

const WEIGHTS: [f32; NFIELDS] = [3.0, 2.0, 0.6, 1.5, 1.0, 0.4, 1.5];
const B: [f32; NFIELDS] = [0.5, 0.6, 0.75, 0.3, 0.5, 0.75, 0.3];
const K1: f32 = 1.2;

/// A single-word alias is dropped when its word also occurs in the tools of more than this many
/// other apps: "sheets" or "tasks" are ordinary words, "slack" or "stripe" are names.
const ALIAS_SPREAD_MAX: usize = 12;
/// The same for a provider's brand (`openai` from openai.com), which other apps mention more
/// often (integrations) but which is still a name; only everyday words (`data.gov`) exceed it.
const BRAND_SPREAD_MAX: usize = 40;
const MAX_QUERY_TERMS: usize = 32;
pub const MAX_LIMIT: usize = 50;

/// What the catalog builder knows about one tool, as text.
pub struct DocText<'a> {
    pub app: u32,
    /// operationId, or the generated operation name when there is none.
    pub name: &'a str,
    /// Summary and tags.
    pub summary: &'a str,
    pub description: &'a str,
    pub path: &'a str,
    pub params: &'a [String],
    pub verb: Option<Verb>,
}

/// What the catalog builder knows about one app, for aliases and the app field.
pub struct AppText<'a> {
    pub id: &'a str,
    pub title: &'a str,
    /// Provider domain, e.g. `googleapis.com`.
    pub provider: &'a str,
    pub service: Option<&'a str>,
    /// Names of the provider's family ("google" for googleapis.com), prefixed to the service.
    pub family: &'a [&'a str],
    /// Hand-made aliases; never dropped by the spread rule.
    pub extra: &'a [&'a str],
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Index {
    /// Sorted vocabulary (stemmed terms).
    terms: Vec<String>,
    /// Postings of `terms[i]` are `post_start[i]..post_start[i + 1]`, sorted by document.
    post_start: Vec<u32>,
    post_doc: Vec<u32>,
    post_tf: Vec<[u8; NFIELDS]>,
    doc_len: Vec<[u8; NFIELDS]>,
    avg_len: [f32; NFIELDS],
    /// Sorted alias keys (stemmed words joined by spaces) with the apps they name.
    aliases: Vec<(String, Vec<u32>)>,
    max_alias_words: u32,
}

/// Whether the caller's account can run the tool now. The search does not know accounts: the
/// REST layer fills this in before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    NotRequired,
    Connected,
    ConnectionRequired,
    NeedsReauth,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub tool: String,
    pub app: String,
    pub score: f32,
    /// Query words (as typed) that the tool matched, directly or through a synonym.
    pub matched_terms: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection: Option<ConnectionStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub hits: Vec<Hit>,
    /// The app the search was narrowed to (given, or detected from the query).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// Why `hits` is empty and what to try instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Found {
    fn empty(app: Option<String>, hint: String) -> Found {
        Found {
            hits: Vec::new(),
            app,
            hint: Some(hint),
        }
    }
}

/// What ranking needs to know about the documents an [`Index`] was built over: the catalog
/// artifact implements it, and so does nothing else the index must know about. The seam keeps the
/// index free of the artifact's layout (`catalog` depends on `search`, never the reverse).
pub trait Corpus {
    /// Position of the app with id `id`.
    fn app_position(&self, id: &str) -> Option<u32>;
    /// The id of the app at `app`.
    fn app_id(&self, app: u32) -> &str;
    /// The documents (tools) of the app at `app`: a half-open range.
    fn app_docs(&self, app: u32) -> (u32, u32);
    /// Document `d` as ranking sees it.
    fn doc(&self, d: u32) -> Doc<'_>;
}

/// One document (tool) of a [`Corpus`].
#[derive(Debug, Clone, Copy)]
pub struct Doc<'a> {
    pub name: &'a str,
    pub app: u32,
    pub method: Method,
    pub deprecated: bool,
}

fn tokens_of(text: &str) -> Vec<String> {
    text::terms(text)
}

fn count_into(counts: &mut Vec<(String, [u8; NFIELDS])>, field: Field, terms: Vec<String>) {
    for t in terms {
        match counts.iter_mut().find(|(x, _)| *x == t) {
            Some((_, tf)) => tf[field as usize] = tf[field as usize].saturating_add(1),
            None => {
                let mut tf = [0u8; NFIELDS];
                tf[field as usize] = 1;
                counts.push((t, tf));
            }
        }
    }
}

/// The terms of each index field of one document (`app_terms`: each app's title and id terms).
fn doc_fields(doc: &DocText, app_terms: &[Vec<String>]) -> [(Field, Vec<String>); NFIELDS] {
    let mut name = tokens_of(doc.name);
    if let Some(v) = doc.verb {
        name.push(v.term().to_string());
    }
    // A leading verb in the operation name ("retrieve", "remove") also gets its canonical term,
    // so both spellings meet.
    if let Some(v) = name.first().and_then(|w| Verb::of_term(w)) {
        name.push(v.term().to_string());
    }
    [
        (Field::Name, name),
        (Field::Summary, tokens_of(doc.summary)),
        (Field::Description, tokens_of(doc.description)),
        (Field::Resource, resource_of(doc.path)),
        (Field::Path, static_path_terms(doc.path)),
        (
            Field::Params,
            doc.params.iter().flat_map(|p| tokens_of(p)).collect(),
        ),
        (
            Field::App,
            app_terms.get(doc.app as usize).cloned().unwrap_or_default(),
        ),
    ]
}

impl Index {
    /// Builds the index; `docs[i]` describes `Catalog::tools[i]`.
    pub fn build(apps: &[AppText], docs: &[DocText]) -> Index {
        use std::collections::BTreeMap;
        let app_terms: Vec<Vec<String>> = apps
            .iter()
            .map(|a| {
                let mut t = tokens_of(a.title);
                t.extend(tokens_of(a.id));
                t.sort();
                t.dedup();
                t
            })
            .collect();

        let mut postings: BTreeMap<String, Vec<(u32, [u8; NFIELDS])>> = BTreeMap::new();
        let mut doc_len = Vec::with_capacity(docs.len());
        let mut sum_len = [0f64; NFIELDS];
        for (d, doc) in docs.iter().enumerate() {
            let mut counts: Vec<(String, [u8; NFIELDS])> = Vec::new();
            let mut lens = [0u8; NFIELDS];
            for (f, terms) in doc_fields(doc, &app_terms) {
                lens[f as usize] = terms.len().min(255) as u8;
                sum_len[f as usize] += terms.len().min(255) as f64;
                count_into(&mut counts, f, terms);
            }
            doc_len.push(lens);
            for (t, tf) in counts {
                postings.entry(t).or_default().push((d as u32, tf));
            }
        }
        let n = docs.len().max(1) as f64;
        let avg_len = sum_len.map(|s| ((s / n) as f32).max(1.0));

        let mut terms = Vec::with_capacity(postings.len());
        let mut post_start = vec![0u32];
        let mut post_doc = Vec::new();
        let mut post_tf = Vec::new();
        for (t, list) in postings {
            terms.push(t);
            for (d, tf) in list {
                post_doc.push(d);
                post_tf.push(tf);
            }
            post_start.push(post_doc.len() as u32);
        }
        let mut index = Index {
            terms,
            post_start,
            post_doc,
            post_tf,
            doc_len,
            avg_len,
            aliases: Vec::new(),
            max_alias_words: 0,
        };
        index.aliases = index.build_aliases(apps, docs);
        index.max_alias_words = index
            .aliases
            .iter()
            .map(|(k, _)| k.split(' ').count() as u32)
            .max()
            .unwrap_or(0);
        index
    }

    fn build_aliases(&self, apps: &[AppText], docs: &[DocText]) -> Vec<(String, Vec<u32>)> {
        use std::collections::{BTreeMap, BTreeSet};
        // Words that describe what a title is rather than what the app is called.
        const GENERIC: &[&str] = &[
            "web",
            "service",
            "services",
            "client",
            "openapi",
            "swagger",
            "json",
            "http",
            "official",
            "public",
            "platform",
            "v",
            "version",
            "developer",
            "interface",
        ];
        let generic: BTreeSet<String> = GENERIC.iter().map(|w| text::stem(w)).collect();
        // Per key: the apps it names and the most lenient spread limit of its sources.
        let mut keys: BTreeMap<String, (BTreeSet<u32>, usize)> = BTreeMap::new();
        let mut add = |key: Vec<String>, app: u32, limit: usize| {
            if key.is_empty() || key.len() > 5 {
                return;
            }
            let e = keys.entry(key.join(" ")).or_default();
            e.0.insert(app);
            e.1 = e.1.max(limit);
        };
        for (i, a) in apps.iter().enumerate() {
            let i = i as u32;
            let title: Vec<String> = tokens_of(a.title)
                .into_iter()
                .filter(|t| !generic.contains(t))
                .collect();
            add(title.clone(), i, ALIAS_SPREAD_MAX);
            let brand = brand_of(a.provider);
            if let Some(b) = &brand {
                add(vec![b.clone()], i, BRAND_SPREAD_MAX);
            }
            if let Some(s) = a.service {
                let s = tokens_of(s);
                if !s.is_empty() {
                    add(s.clone(), i, ALIAS_SPREAD_MAX);
                    for f in a.family {
                        let mut k = tokens_of(f);
                        k.extend(s.iter().cloned());
                        add(k, i, ALIAS_SPREAD_MAX);
                    }
                    if let Some(b) = &brand {
                        let mut k = vec![b.clone()];
                        k.extend(s.iter().cloned());
                        add(k, i, ALIAS_SPREAD_MAX);
                    }
                }
            }
            for e in a.extra {
                add(tokens_of(e), i, usize::MAX);
            }
        }
        keys.into_iter()
            .filter(|(key, (owners, limit))| {
                *limit == usize::MAX
                    || key.contains(' ')
                    || self.spread(key, owners, docs) <= *limit
            })
            .map(|(k, (owners, _))| (k, owners.into_iter().collect()))
            .collect()
    }

    /// Number of apps outside `owners` whose tools use `term` in their name, summary or path.
    fn spread(
        &self,
        term: &str,
        owners: &std::collections::BTreeSet<u32>,
        docs: &[DocText],
    ) -> usize {
        let Some(t) = self.term_id(term) else {
            return 0;
        };
        let mut apps = std::collections::BTreeSet::new();
        for p in self.postings(t) {
            let tf = self.post_tf[p];
            let named = tf[Field::Name as usize] as u32
                + tf[Field::Summary as usize] as u32
                + tf[Field::Path as usize] as u32;
            let app = docs[self.post_doc[p] as usize].app;
            if named > 0 && !owners.contains(&app) {
                apps.insert(app);
            }
        }
        apps.len()
    }

    fn term_id(&self, term: &str) -> Option<usize> {
        self.terms.binary_search_by(|t| t.as_str().cmp(term)).ok()
    }

    fn postings(&self, t: usize) -> std::ops::Range<usize> {
        self.post_start[t] as usize..self.post_start[t + 1] as usize
    }

    pub fn vocabulary_len(&self) -> usize {
        self.terms.len()
    }

    pub fn postings_len(&self) -> usize {
        self.post_doc.len()
    }

    pub fn alias_count(&self) -> usize {
        self.aliases.len()
    }

    fn alias(&self, key: &str) -> Option<&[u32]> {
        self.aliases
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.aliases[i].1.as_slice())
    }

    fn idf(&self, t: usize) -> f32 {
        let n = self.doc_len.len() as f32;
        let df = (self.post_start[t + 1] - self.post_start[t]) as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }
}

/// Terms of the path without its `{parameters}` (those are in the params field): otherwise
/// `/pullrequests/{pull_request_id}/decline` would match "pull request" twice.
fn static_path_terms(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.starts_with('{'))
        .flat_map(tokens_of)
        .collect()
}

/// Terms of the last static path segment.
fn resource_of(path: &str) -> Vec<String> {
    path.split('/')
        .rev()
        .find(|s| !s.is_empty() && !s.starts_with('{'))
        .map(tokens_of)
        .unwrap_or_default()
}

/// The registrable name of a provider domain: `slack.com` → `slack`, `api.video` → none.
fn brand_of(provider: &str) -> Option<String> {
    let labels: Vec<&str> = provider.split('.').collect();
    let core = match labels.as_slice() {
        [.., name, "co" | "com" | "org" | "net" | "gov" | "ac", _] if labels.len() >= 3 => name,
        [.., name, _tld] => name,
        _ => return None,
    };
    let t = tokens_of(core);
    (t.len() == 1).then(|| t[0].clone())
}

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

impl Index {
    /// Finds the tools of `corpus` (the documents this index was built over) for a
    /// plain-language task. `app` narrows the search to one app id.
    pub fn find(
        &self,
        corpus: &impl Corpus,
        query: &str,
        app: Option<&str>,
        limit: usize,
    ) -> Found {
        let limit = limit.clamp(1, MAX_LIMIT);
        let idx = self;
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
        let (scope_apps, used) = match scope(idx, corpus, &words, app) {
            Ok(s) => s,
            Err(unknown) => return unknown,
        };
        let app_label = scope_apps.as_ref().and_then(|apps| match apps.as_slice() {
            [one] => Some(corpus.app_id(*one).to_owned()),
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
            let ranges = apps.iter().map(|&a| corpus.app_docs(a)).collect();
            let (hits, hint) = rank(self, corpus, &terms, &words, &Scope::Ranges(ranges), limit);
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
        let (hits, hint) = rank(self, corpus, &terms, &words, &Scope::All, limit);
        Found {
            hint: if hits.is_empty() { hint } else { None },
            hits,
            app: None,
        }
    }
}

/// The apps a search is narrowed to (the `app` asked for, else the one the query names) and the
/// query words that named it; `Err` with the answer for an unknown `app`.
fn scope(
    idx: &Index,
    corpus: &impl Corpus,
    words: &[(String, String)],
    app: Option<&str>,
) -> Result<(Option<Vec<u32>>, Vec<bool>), Found> {
    let detected = detect_app(idx, words);
    let mut used = vec![false; words.len()];
    match app {
        Some(id) => {
            let Some(a) = corpus.app_position(id) else {
                return Err(Found::empty(
                    None,
                    format!("Unknown app '{id}'; list apps with GET /catalog."),
                ));
            };
            if let Some((apps, span)) = &detected
                && apps.contains(&a)
            {
                used[span.clone()].iter_mut().for_each(|u| *u = true);
            }
            Ok((Some(vec![a]), used))
        }
        None => match detected {
            Some((apps, span)) => {
                used[span].iter_mut().for_each(|u| *u = true);
                Ok((Some(apps), used))
            }
            None => Ok((None, used)),
        },
    }
}

/// The longest alias in the query: the apps it names and the word span it covers.
fn detect_app(
    idx: &Index,
    words: &[(String, String)],
) -> Option<(Vec<u32>, std::ops::Range<usize>)> {
    let max = (idx.max_alias_words as usize).min(words.len());
    for n in (1..=max).rev() {
        for start in 0..=words.len() - n {
            let key = words[start..start + n]
                .iter()
                .map(|(_, s)| s.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if let Some(apps) = idx.alias(&key) {
                return Some((apps.to_vec(), start..start + n));
            }
        }
    }
    None
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
    idx: &Index,
    corpus: &impl Corpus,
    terms: &[QueryTerm],
    words: &[(String, String)],
    scope: &Scope,
    limit: usize,
) -> (Vec<Hit>, Option<String>) {
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
    let (acc, mask) = score_docs(idx, &answerable, scope);

    let mut cands: Vec<(f32, u32)> = Vec::new();
    let mut best_matched = 0usize;
    for (d, &m) in mask.iter().enumerate() {
        if m == 0 {
            continue;
        }
        let matched = m.count_ones() as usize;
        best_matched = best_matched.max(matched);
        if matched < need {
            continue;
        }
        let tool = corpus.doc(d as u32);
        let mut s = acc[d];
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
    (top_hits(corpus, cands, &mask, &answerable, limit), None)
}

/// BM25F per document within `scope`: the summed score of the answerable terms (each term's best
/// variant) and, per document, a bit per term it matched.
fn score_docs(idx: &Index, answerable: &[&QueryTerm], scope: &Scope) -> (Vec<f32>, Vec<u32>) {
    let n_docs = idx.doc_len.len();
    let mut acc = vec![0f32; n_docs];
    let mut mask = vec![0u32; n_docs];
    let mut best = vec![0f32; n_docs];
    let mut touched: Vec<u32> = Vec::new();
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
                }
            };
            match scope {
                Scope::All => visit(0, docs.len()),
                Scope::Ranges(ranges) => {
                    for &(a, b) in ranges {
                        let lo = docs.partition_point(|&d| d < a);
                        let hi = docs.partition_point(|&d| d < b);
                        visit(lo, hi);
                    }
                }
            }
        }
        for &d in &touched {
            let d = d as usize;
            acc[d] += best[d];
            mask[d] |= 1 << bit;
            best[d] = 0.0;
        }
    }
    (acc, mask)
}

/// The best `limit` candidates, best first (ties by document order), as hits.
fn top_hits(
    corpus: &impl Corpus,
    mut cands: Vec<(f32, u32)>,
    mask: &[u32],
    answerable: &[&QueryTerm],
    limit: usize,
) -> Vec<Hit> {
    let order = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if cands.len() > limit {
        cands.select_nth_unstable_by(limit - 1, order);
        cands.truncate(limit);
    }
    cands.sort_by(order);
    cands
        .into_iter()
        .map(|(score, d)| {
            let tool = corpus.doc(d);
            let m = mask[d as usize];
            Hit {
                tool: tool.name.to_owned(),
                app: corpus.app_id(tool.app).to_owned(),
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
        .collect()
}

fn idf_weight(idx: &Index, t: usize) -> f32 {
    idx.idf(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brands_come_from_the_registrable_label() {
        assert_eq!(brand_of("slack.com").as_deref(), Some("slack"));
        assert_eq!(brand_of("bbc.co.uk").as_deref(), Some("bbc"));
        assert_eq!(brand_of("api.video"), None);
    }
}
