//! The query side of tool search: app detection, term expansion and BM25F ranking over the
//! prebuilt [`Index`]. Kept apart from the index builder so changing how queries are ranked does
//! not change the artifact (the builder fingerprints only the files that shape it).

use std::collections::HashMap;

use super::*;

/// BM25F per field (`Field` order: name, summary, description, resource, path, parameters,
/// app): weights, length normalisation and saturation. Chosen by coordinate ascent on the tune
/// half of the evaluation (MRR, then recall@1), from 3.0 / 2.0 / 0.6 / 1.5 / 1.0 / 0.4 / 1.5 with
/// b 0.5 / 0.6 / 0.75 / 0.3 / 0.5 / 0.75 / 0.3: the name counts less against the resource
/// acted on, and a long summary, description or parameter list is barely penalised for its
/// length (`catalog/eval/README.md` has the scores on the other sets).
const WEIGHTS: [f32; NFIELDS] = [1.1, 1.0, 0.6, 2.0, 1.0, 0.5, 0.55];
const B: [f32; NFIELDS] = [0.5, 0.1, 0.1, 0.75, 0.75, 0.1, 0.5];
const K1: f32 = 1.2;

/// How much an operation name made only of the request's words counts (create_image over
/// create_image_edit for "generate an image").
const NAME_COVERAGE_WEIGHT: f32 = 0.5;
/// Weight of the embedding's cosine against BM25F scaled to its best candidate (1.0).
const SEMANTIC_WEIGHT: f32 = 0.5;
/// Inside an app, a tool no request word matches is an answer only when its cosine with the
/// request reaches this ("bake a chocolate cake" in GitHub stays unanswered).
const SEMANTIC_FLOOR: f32 = 0.35;
/// Lexical candidates re-scored with the embedding across the whole catalog.
const GLOBAL_RERANK: usize = 300;
/// Weight of the words that named the app, inside that app.
const ALIAS_WORD_WEIGHT: f32 = 0.3;
/// A tool whose name's verb is the class the request asks for (chosen on the tune half:
/// 1.05–1.3 all within one task there).
const NAME_VERB_MATCH: f32 = 1.15;
/// Per path parameter.
const DEPTH_DECAY: f32 = 0.97;
const MODIFIER_PENALTY: f32 = 0.8;
/// Words that make an operation a side operation of the thing named with them.
const MODIFIERS: &[&str] = &[
    "usage",
    "stats",
    "statistics",
    "count",
    "counts",
    "exception",
    "exceptions",
    "template",
    "templates",
    "settings",
    "setting",
    "bulk",
    "batch",
    "preview",
    "audit",
    "legacy",
    "migrate",
    "metadata",
    "schema",
    "report",
    "reports",
    "config",
    "validate",
    "estimate",
    "draft",
];

/// Phrasal verbs of everyday English (head, particle) with their action and the words APIs use
/// for it. The particle may come up to three words after the head ("hand the asana task over").
const PHRASAL: &[(&str, &str, Verb, &[&str])] = &[
    ("set", "up", Verb::Create, &["create"]),
    ("sign", "up", Verb::Create, &["register", "signup"]),
    ("spin", "up", Verb::Create, &["create", "launch"]),
    ("look", "up", Verb::Get, &["lookup"]),
    ("look", "for", Verb::List, &["search"]),
    ("find", "out", Verb::Get, &["get"]),
    ("hand", "over", Verb::Update, &["assign", "transfer"]),
    ("pass", "on", Verb::Create, &["forward"]),
    ("give", "back", Verb::Create, &["refund", "return"]),
    ("pay", "back", Verb::Create, &["refund"]),
    ("tick", "off", Verb::Update, &["complete"]),
    ("check", "off", Verb::Update, &["complete"]),
    ("cross", "off", Verb::Update, &["complete"]),
    ("turn", "on", Verb::Update, &["enable"]),
    ("switch", "on", Verb::Update, &["enable"]),
    ("turn", "off", Verb::Update, &["disable"]),
    ("switch", "off", Verb::Update, &["disable"]),
    ("turn", "into", Verb::Create, &["convert"]),
    ("shut", "down", Verb::Update, &["stop", "shutdown"]),
    ("take", "down", Verb::Delete, &["remove"]),
    ("put", "off", Verb::Update, &["postpone", "reschedule"]),
    ("push", "back", Verb::Update, &["postpone", "reschedule"]),
    ("let", "know", Verb::Create, &["notify", "message"]),
    ("reach", "out", Verb::Create, &["message", "contact"]),
    ("get", "rid", Verb::Delete, &["delete"]),
    ("clean", "up", Verb::Delete, &["delete", "cleanup"]),
    ("back", "up", Verb::Create, &["backup", "export"]),
    ("sign", "in", Verb::Create, &["login"]),
    ("log", "in", Verb::Create, &["login"]),
    ("sign", "out", Verb::Delete, &["logout"]),
    ("log", "out", Verb::Delete, &["logout"]),
    ("follow", "up", Verb::Create, &["reminder"]),
    ("fill", "out", Verb::Create, &["submit", "response"]),
    ("roll", "back", Verb::Update, &["rollback", "revert"]),
    ("roll", "out", Verb::Create, &["deploy", "release"]),
    ("wrap", "up", Verb::Update, &["complete", "close"]),
];

/// Phrasal verbs whose object may stand between head and particle ("hand the task over", "let
/// the team know", "turn the flag on"); the others count only with the particle right after
/// the head ("log the expense in my sheet" is not logging in, "check who is off today" not
/// ticking off, "put my day off in the calendar" not postponing).
const SEPARABLE: &[&str] = &[
    "hand", "pass", "give", "pay", "tick", "cross", "turn", "switch", "shut", "take", "push",
    "let", "clean", "back", "roll", "wrap",
];

/// The request's phrasal verb, with its action and words, when it is the request's first
/// verb: in "delete the issue and let the reporter know" the action is the deletion.
fn phrasal_verb(raw: &[String]) -> Option<(Verb, &'static [&'static str])> {
    let first_verb = raw
        .iter()
        .position(|w| Verb::of_term(&text::stem(w)).is_some())
        .unwrap_or(raw.len());
    raw.iter()
        .enumerate()
        .take(first_verb + 1)
        .find_map(|(i, w)| {
            let reach = if SEPARABLE.contains(&w.as_str()) {
                4
            } else {
                1
            };
            PHRASAL.iter().find_map(|&(head, particle, verb, adds)| {
                (w == head && raw.iter().skip(i + 1).take(reach).any(|p| p == particle))
                    .then_some((verb, adds))
            })
        })
}

/// Function words of conversational English that the catalog's stop words leave in
/// (pronouns, auxiliaries, conjunctions; a general list, not words picked from requests). A
/// request says "what meetings do I have coming up"; an operation's text rarely means anything
/// by these, yet one of them matching a description counted as covering another word of the
/// request (for the floor and the score) and pulled the request's embedding toward nothing in
/// particular. Dropped from requests only: the index and the artifact are unchanged. "up",
/// "off", "out" and "back" stay: they carry the action in phrasal verbs ("thumbs up", "sign
/// out"). The apostrophe splits words, so the remnants of contractions and
/// the possessive ("what's", "I'd", "don't", "customer's") go too.
const FILLER: &[&str] = &[
    "am",
    "was",
    "were",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "did",
    "doing",
    "will",
    "shall",
    "may",
    "might",
    "must",
    "he",
    "she",
    "they",
    "them",
    "their",
    "theirs",
    "him",
    "her",
    "his",
    "hers",
    "mine",
    "yours",
    "ours",
    "myself",
    "yourself",
    "himself",
    "herself",
    "itself",
    "ourselves",
    "themselves",
    "but",
    "if",
    "because",
    "as",
    "until",
    "while",
    "than",
    "so",
    "such",
    "too",
    "just",
    "there",
    "here",
    "whom",
    "nor",
    "s",
    "t",
    "m",
    "d",
    "ve",
    "ll",
    "re",
];

fn is_filler(w: &str) -> bool {
    FILLER.contains(&w)
}

/// One query term: the words typed, its stem, and the vocabulary entries it matches with their
/// weights.
struct QueryTerm {
    surface: String,
    variants: Vec<(usize, f32)>,
    /// A word that named the app: alone it does not make a tool an answer.
    app_word: bool,
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
        // The request's words as typed (phrasal verbs, missing services, questions read them),
        // then without function words and stemmed (what is ranked).
        let raw = text::words(query);
        let mut words: Vec<(String, String)> = raw
            .iter()
            .filter(|w| !text::is_stop_word(w) && !is_filler(w))
            .cloned()
            .map(|w| {
                let s = text::stem(&w);
                (w, s)
            })
            .take(MAX_QUERY_TERMS * 2)
            .collect();

        // A phrasal verb ("hand the task over", "let everyone know") says its action in words
        // no operation uses: add the words operations use for it, and take its action. They
        // come after the typed words, which alone name the app.
        let phrasal = phrasal_verb(&raw);
        let typed = words.len();
        if let Some((_, adds)) = phrasal {
            for w in adds
                .iter()
                .take((MAX_QUERY_TERMS * 2).saturating_sub(typed))
            {
                words.push((w.to_string(), text::stem(w)));
            }
        }
        let words = words;
        // The action asked for: the first verb we know, else a question ("what's on…",
        // "which teams…", "how much…") asks to list or read.
        let verb = phrasal
            .map(|(v, _)| v)
            .or_else(|| words.iter().find_map(|(_, s)| Verb::of_term(s)))
            .or_else(|| {
                raw.first().and_then(|w| match w.as_str() {
                    "what" | "whats" | "which" | "who" | "any" | "show" => Some(Verb::List),
                    "how" | "where" | "when" | "is" | "has" | "did" => Some(Verb::Get),
                    _ => None,
                })
            });

        // A request whose action has no class ("star a repository", "archive the channel")
        // still asks for the operations named by that action.
        let other_verb = match verb {
            Some(_) => None,
            None => words
                .iter()
                .find(|(w, _)| text::is_other_action(w))
                .and_then(|(_, s)| idx.term_id(s))
                .map(|t| t as u32),
        };

        // Stage 1: which app does the query name?
        let detected = detect_app(idx, &words[..typed]);
        // `used`: the words that name the app; `spanned`: those and the other words of the
        // alias that found it ("payment" of "stripe payment"). Those count as the request's
        // words in full, but a request of nothing else ("google sheets") names only an app.
        let mark = |positions: &[usize]| {
            let mut v = vec![false; words.len()];
            positions.iter().for_each(|&i| v[i] = true);
            v
        };
        let none = vec![false; words.len()];
        let (scope_apps, used, spanned): (Option<Vec<u32>>, Vec<bool>, Vec<bool>) = match app {
            Some(id) => {
                let Some(a) = self.app_index_of(id) else {
                    return Found::empty(
                        None,
                        format!("Unknown app '{id}'; list apps with GET /catalog."),
                    );
                };
                match &detected {
                    Some(d) if d.apps.contains(&(a as u32)) => {
                        (Some(vec![a as u32]), mark(&d.name), mark(&d.span))
                    }
                    _ => (Some(vec![a as u32]), none.clone(), none.clone()),
                }
            }
            None => match &detected {
                Some(d) => (Some(d.apps.clone()), mark(&d.name), mark(&d.span)),
                None => (None, none.clone(), none.clone()),
            },
        };
        let app_label = scope_apps.as_ref().and_then(|apps| match apps.as_slice() {
            [one] => Some(self.apps[*one as usize].slug.clone()),
            _ => None,
        });

        if let Some(slug) = &app_label
            && !self.in_memory
            && let Some(part) = crate::missing::part_named_in(slug, &raw)
        {
            return Found::empty(app_label.clone(), crate::missing::part_hint(part));
        }
        if let Some(apps) = &scope_apps {
            if spanned.iter().all(|u| *u) {
                return Found::empty(
                    app_label,
                    "The query names only an app; add what to do, e.g. 'send a message'.".into(),
                );
            }
            // The app's name words still count, weakly: "teams" in "which teams am I in on
            // Microsoft Teams" is also what the tools are about.
            let terms = query_terms(idx, &words, &used, ALIAS_WORD_WEIGHT);
            let ranges = apps.iter().map(|&a| self.apps[a as usize].tools).collect();
            let covered: Vec<String> = words
                .iter()
                .zip(&used)
                .filter(|(_, u)| **u)
                .map(|((_, s), _)| s.clone())
                .collect();
            let semantic = self.embed_query(&words, &used);
            let (hits, hint) = rank(
                self,
                &terms,
                verb,
                other_verb,
                &covered,
                semantic,
                &Scope::Ranges(ranges),
                app.is_some(),
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
        // A service the catalog lacks, named where no app of the catalog was: say so rather
        // than answer with another app's tools that share the request's words.
        if app.is_none()
            && detected.is_none()
            && !self.in_memory
            && let Some(m) = crate::missing::named_in(&raw)
        {
            return Found::empty(None, crate::missing::hint(m));
        }
        // Stage 2: the whole catalog, with every word (an alias word may be a real term).
        let terms = query_terms(idx, &words, &none, 1.0);
        let semantic = self.embed_query(&words, &none);
        let (hits, hint) = rank(
            self,
            &terms,
            verb,
            other_verb,
            &[],
            semantic,
            &Scope::All,
            false,
            limit,
        );
        Found {
            hint: if hits.is_empty() { hint } else { None },
            hits,
            app: None,
        }
    }
}

impl Catalog {
    /// The query's embedding from the words that did not name the app.
    fn embed_query(&self, words: &[(String, String)], used: &[bool]) -> Option<Vec<f32>> {
        if self.tool_vectors.is_empty() {
            return None;
        }
        self.embedding.embed_words(
            words
                .iter()
                .zip(used)
                .filter(|(_, u)| !**u)
                .map(|((w, _), _)| w.as_str()),
        )
    }
}

/// The alias in the query that names an app most surely: the longest, then the strongest (an
/// app's own name over a word taken from a title), then the last one ("upload a video to
/// youtube": the app is named last).
fn detect_app(idx: &Index, words: &[(String, String)]) -> Option<Detected> {
    let max = (idx.max_alias_words as usize).min(words.len());
    // (words, strength, start) orders the candidates.
    type Candidate = ((usize, u8, usize), Vec<u32>, std::ops::Range<usize>);
    let mut best: Option<Candidate> = None;
    for n in (1..=max).rev() {
        for start in 0..=words.len() - n {
            if let Some((apps, strength)) = idx.alias(&alias_key(&words[start..start + n])) {
                let rank = (n, strength, start);
                if best.as_ref().is_none_or(|(r, _, _)| rank > *r) {
                    best = Some((rank, apps.to_vec(), start..start + n));
                }
            }
        }
    }
    let (_, apps, span) = best?;
    // "refund a stripe payment" names Stripe by "stripe payment", but "stripe" alone names it
    // too: "payment" is what the request is about, not the app's name. The shortest part of
    // the span that names the same apps is the name.
    for n in 1..span.len() {
        for start in span.start..=span.end - n {
            let key = alias_key(&words[start..start + n]);
            if idx.alias(&key).is_some_and(|(a, _)| a == apps.as_slice()) {
                return Some(Detected {
                    apps,
                    span: span.collect(),
                    name: (start..start + n).collect(),
                });
            }
        }
    }
    Some(Detected {
        apps,
        span: span.clone().collect(),
        name: span.collect(),
    })
}

/// The alias key of some of a request's words: their stems joined by spaces.
fn alias_key(words: &[(String, String)]) -> String {
    words
        .iter()
        .map(|(_, s)| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What [`detect_app`] found: the apps, the positions of the alias's words, and of the part of
/// them that names the apps.
struct Detected {
    apps: Vec<u32>,
    span: Vec<usize>,
    name: Vec<usize>,
}

/// The query's terms with their vocabulary variants; words that named the app count with
/// `used_weight` and without synonyms (0 leaves them out).
fn query_terms(
    idx: &Index,
    words: &[(String, String)],
    used: &[bool],
    used_weight: f32,
) -> Vec<QueryTerm> {
    let mut out: Vec<QueryTerm> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for ((surface, stem), used) in words.iter().zip(used) {
        if (*used && used_weight == 0.0) || seen.contains(&stem.as_str()) {
            continue;
        }
        seen.push(stem);
        let mut variants = Vec::new();
        if *used {
            if let Some(t) = idx.term_id(stem) {
                variants.push((t, used_weight));
            }
            out.push(QueryTerm {
                surface: surface.clone(),
                variants,
                app_word: true,
            });
            continue;
        }
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
            app_word: false,
        });
        if out.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn rank(
    cat: &Catalog,
    terms: &[QueryTerm],
    verb: Option<Verb>,
    other_verb: Option<u32>,
    covered: &[String],
    semantic: Option<Vec<f32>>,
    scope: &Scope,
    explicit: bool,
    limit: usize,
) -> (Vec<Hit>, Option<String>) {
    let idx = &cat.index;
    let query_stems: Vec<String> = terms.iter().map(|t| text::stem(&t.surface)).collect();
    let answerable: Vec<&QueryTerm> = terms.iter().filter(|t| !t.variants.is_empty()).collect();
    let scoped = matches!(scope, Scope::Ranges(_));
    if answerable.is_empty() && !(scoped && semantic.is_some()) {
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

    let n_docs = idx.doc_len.len();
    let meta = idx.doc_meta.get_or_init(|| doc_meta(cat));
    SCRATCH.with_borrow_mut(|scratch| {
        scratch.reset(n_docs);
        rank_in(
            cat,
            idx,
            meta,
            scratch,
            &answerable,
            &query_stems,
            need,
            verb,
            other_verb,
            covered,
            semantic,
            scope,
            explicit,
            limit,
        )
    })
}

/// Per-document arrays of one ranking, kept per thread between searches: allocating and
/// zeroing five catalog-sized arrays was a fixed cost of every query, and visiting all of them
/// to collect candidates was most of a common-word query after the postings. Only the entries
/// of documents some posting reached are set, listed in `touched`, and cleared again.
#[derive(Default)]
struct Scratch {
    acc: Vec<f32>,
    mask: Vec<u32>,
    best: Vec<f32>,
    /// Per tool: how many query words (and words of the app name the query used) occur in its
    /// operation name; with the name's length this says how exactly the name fits the request.
    name_hits: Vec<u8>,
    in_name: Vec<bool>,
    /// Whether the document is in `touched`.
    seen: Vec<bool>,
    /// Every document with a non-zero entry, in the order first reached.
    touched: Vec<u32>,
    /// The documents the current query term reached (a subset of `touched`).
    term_docs: Vec<u32>,
}

impl Scratch {
    /// All entries zero and sized for `n` documents. Clears what the last search left (also
    /// when it did not finish).
    fn reset(&mut self, n: usize) {
        for &d in &self.touched {
            let d = d as usize;
            if d < self.acc.len() {
                self.acc[d] = 0.0;
                self.mask[d] = 0;
                self.best[d] = 0.0;
                self.name_hits[d] = 0;
                self.in_name[d] = false;
                self.seen[d] = false;
            }
        }
        self.touched.clear();
        self.term_docs.clear();
        if self.acc.len() != n {
            *self = Scratch {
                acc: vec![0.0; n],
                mask: vec![0; n],
                best: vec![0.0; n],
                name_hits: vec![0; n],
                in_name: vec![false; n],
                seen: vec![false; n],
                touched: Vec::new(),
                term_docs: Vec::new(),
            };
        }
    }

    fn touch(&mut self, d: usize) {
        if !self.seen[d] {
            self.seen[d] = true;
            self.touched.push(d as u32);
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Per tool, the tool that does the same thing by a shorter path in the same app: same method,
/// same scope (the path's first segment, with the parameter right after it; for a versioned API,
/// `/v1`, the version alone), the same non-empty description, and a path that is the scope
/// followed by a tail of this one's. Nested copies of
/// an operation are common in large APIs (Microsoft Graph reaches a message's `reply` from
/// every mail folder, with the same text), and their extra path words let them outscore the
/// direct operation a request means. A nested path with its own description is another thing
/// (a budget month's category is not the category).
///
/// Derived on the first search, so it is cheap: paths are compared by hashes of their
/// segments (FNV-1a; a parameter is `{}`), and a hash hit is confirmed on the paths themselves.
fn direct_forms(cat: &Catalog) -> Vec<u32> {
    fn seg_hash(s: &str) -> u64 {
        let bytes = if s.starts_with('{') {
            b"{}"
        } else {
            s.as_bytes()
        };
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }
    fn mix(a: u64, b: u64) -> u64 {
        (a ^ b.rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
    fn segments(path: &str) -> impl DoubleEndedIterator<Item = &str> + Clone {
        path.split('/').filter(|s| !s.is_empty())
    }
    fn same(a: &str, b: &str) -> bool {
        a == b || (a.starts_with('{') && b.starts_with('{'))
    }
    // One pass over the paths: per tool its scope's length and key, and its segments' hashes
    // (flat, `hashes[at[i]..at[i + 1]]`).
    let mut hashes: Vec<u64> = Vec::with_capacity(cat.tools.len() * 6);
    let mut at: Vec<usize> = Vec::with_capacity(cat.tools.len() + 1);
    let mut scopes: Vec<(usize, u64)> = Vec::with_capacity(cat.tools.len());
    for t in &cat.tools {
        at.push(hashes.len());
        let mut p = 1;
        for (j, seg) in segments(&t.path).enumerate() {
            if j == 1 && seg.starts_with('{') {
                p = 2;
            }
            hashes.push(seg_hash(seg));
        }
        let own = &hashes[at[at.len() - 1]..];
        let scope = own
            .iter()
            .take(p)
            .fold(mix(u64::from(t.app), t.method as u64), |k, h| mix(k, *h));
        scopes.push((p, scope));
    }
    at.push(hashes.len());
    let param = seg_hash("{}");
    // Every path of two or more segments after its scope, by (app, method, scope, rest).
    let mut by_path: HashMap<u64, u32> = HashMap::with_capacity(cat.tools.len());
    for (i, &(p, scope)) in scopes.iter().enumerate() {
        let own = &hashes[at[i]..at[i + 1]];
        if own.len() >= p + 2 {
            let key = own[p..].iter().fold(scope, |k, h| mix(k, *h));
            by_path.entry(key).or_insert(i as u32);
        }
    }
    let confirm = |t: &crate::model::Tool, d: u32, p: usize, k: usize| {
        let other = &cat.tools[d as usize];
        let segs: Vec<&str> = segments(&t.path).collect();
        let theirs: Vec<&str> = segments(&other.path).collect();
        let n = segs.len();
        other.app == t.app
            && other.method == t.method
            && !t.description.trim().is_empty()
            && other.description == t.description
            && theirs.len() == p + k
            && theirs[..p].iter().zip(&segs[..p]).all(|(a, b)| same(a, b))
            && theirs[p..]
                .iter()
                .zip(&segs[n - k..])
                .all(|(a, b)| same(a, b))
    };
    cat.tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (p, scope) = scopes[i];
            let own = &hashes[at[i]..at[i + 1]];
            let n = own.len();
            // Tails from the shortest (two segments: `messages/{}`) to one shorter than the
            // path's own; a tail starts at a static segment (`{}/labels` of
            // `/repos/{o}/{r}/issues/{n}/labels` would find `/repos/{o}/{r}/labels`).
            (2..n.saturating_sub(p))
                .filter(|&k| own[n - k] != param)
                .find_map(|k| {
                    let key = own[n - k..].iter().fold(scope, |h, x| mix(h, *x));
                    let &d = by_path.get(&key)?;
                    confirm(t, d, p, k).then_some(d)
                })
                .unwrap_or(u32::MAX)
        })
        .collect()
}

fn doc_meta(cat: &Catalog) -> Vec<crate::index::DocMeta> {
    let direct = direct_forms(cat);
    // Verb words are few (a few hundred) and tools many: look each up in the vocabulary once.
    let mut verb_terms: HashMap<&str, u32> = HashMap::new();
    cat.tools
        .iter()
        .zip(direct)
        .map(|(t, direct)| {
            let mut modifiers = 0u32;
            let words: Vec<&str> = t.name.rsplit('.').next().unwrap_or("").split('_').collect();
            for &w in &words {
                if let Some(i) = MODIFIERS.iter().position(|m| *m == w) {
                    if modifiers & 1 << i != 0 {
                        modifiers |= REPEATED_MODIFIER;
                    }
                    modifiers |= 1 << i;
                }
            }
            let named = text::name_verb_at(&words);
            crate::index::DocMeta {
                method: t.method,
                depth: t.path.matches('{').count().min(8) as u8,
                deprecated: t.deprecated,
                modifiers,
                verb: named.map_or(text::NameVerb::None, |(_, v)| v),
                verb_term: named.map_or(u32::MAX, |(i, _)| {
                    *verb_terms.entry(words[i]).or_insert_with(|| {
                        cat.index
                            .term_id(&text::stem(words[i]))
                            .map_or(u32::MAX, |t| t as u32)
                    })
                }),
                direct,
            }
        })
        .collect()
}

/// Multiplier for a tool whose name states the action the request asks for: "start a
/// fine-tuning job" wants `create_fine_tuning_job`, not `pause_fine_tuning_job` (both `POST`);
/// "upload a video" wants `videos_insert`, not `videos_rate`. Only a match counts: a penalty
/// for a name stating another action (0.7–0.95) gained nothing on the tune half.
fn name_verb_prior(asked: Verb, named: text::NameVerb) -> f32 {
    match named {
        text::NameVerb::Class(v) if v == asked => NAME_VERB_MATCH,
        _ => 1.0,
    }
}

/// Bit of [`crate::index::DocMeta::modifiers`]: a modifier word occurs twice in the name.
const REPEATED_MODIFIER: u32 = 1 << 31;
const _: () = assert!(MODIFIERS.len() < 31);

#[allow(clippy::too_many_arguments)]
fn rank_in(
    cat: &Catalog,
    idx: &Index,
    meta: &[crate::index::DocMeta],
    sc: &mut Scratch,
    answerable: &[&QueryTerm],
    query_stems: &[String],
    need: usize,
    verb: Option<Verb>,
    other_verb: Option<u32>,
    covered: &[String],
    semantic: Option<Vec<f32>>,
    scope: &Scope,
    explicit: bool,
    limit: usize,
) -> (Vec<Hit>, Option<String>) {
    let scoped = matches!(scope, Scope::Ranges(_));
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
                for (p, &d) in docs.iter().enumerate().take(hi).skip(lo) {
                    if idx.post_tf[range.start + p][Field::Name as usize] > 0 {
                        let d = d as usize;
                        sc.name_hits[d] = sc.name_hits[d].saturating_add(1);
                        sc.touch(d);
                    }
                }
            });
        }
    }
    // BM25F's length normalisation per field and field length (a `u8`), computed once per
    // query with the same expression as per posting before, so scores are unchanged.
    let mut norms = [[0f32; 256]; NFIELDS];
    for (f, row) in norms.iter_mut().enumerate() {
        for (len, n) in row.iter_mut().enumerate() {
            *n = 1.0 - B[f] + B[f] * len as f32 / idx.avg_len[f];
        }
    }
    for (bit, term) in answerable.iter().enumerate() {
        sc.term_docs.clear();
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
                            x += WEIGHTS[f] * tf[f] as f32 / norms[f][usize::from(len[f])];
                        }
                    }
                    let s = idf * x * (K1 + 1.0) / (K1 + x);
                    if sc.best[d] == 0.0 {
                        sc.term_docs.push(d as u32);
                    }
                    if s > sc.best[d] {
                        sc.best[d] = s;
                    }
                    if tf[Field::Name as usize] > 0 {
                        sc.in_name[d] = true;
                    }
                }
            };
            for_scope(docs, &mut visit);
        }
        for i in 0..sc.term_docs.len() {
            let d = sc.term_docs[i] as usize;
            sc.acc[d] += sc.best[d];
            sc.mask[d] |= 1 << bit;
            sc.best[d] = 0.0;
            if sc.in_name[d] {
                sc.name_hits[d] = sc.name_hits[d].saturating_add(1);
                sc.in_name[d] = false;
            }
            sc.touch(d);
        }
    }
    let (acc, mask, name_hits) = (&sc.acc, &sc.mask, &sc.name_hits);
    let best_matched = sc
        .touched
        .iter()
        .map(|&d| mask[d as usize].count_ones() as usize)
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

    // Bits of the words that named the app: a tool matched by those alone is not an answer.
    let app_bits: u32 = answerable
        .iter()
        .enumerate()
        .filter(|(_, t)| t.app_word)
        .fold(0, |bits, (bit, _)| bits | 1 << bit);
    // The side-operation words the request did not ask for, decided once per query rather than
    // by stemming every candidate's name words (common-word queries have tens of thousands).
    let penalised: Vec<&str> = MODIFIERS
        .iter()
        .copied()
        .filter(|w| !query_stems.iter().any(|q| q == &text::stem(w)))
        .collect();
    let mut cands: Vec<(f32, u32)> = Vec::new();
    // The touched documents in first-reached order: every later step orders candidates by
    // score, then document, so the answer does not depend on this order.
    for &d in &sc.touched {
        let d = d as usize;
        let m = mask[d];
        if m & !app_bits == 0 {
            continue;
        }
        let matched = m.count_ones() as usize;
        if matched < need.max(1) {
            continue;
        }
        let tool = meta[d];
        let name_len = idx.doc_len[d][Field::Name as usize].max(1);
        let coverage = (f32::from(name_hits[d]) / f32::from(name_len)).min(1.0);
        let mut s = acc[d] * (1.0 + NAME_COVERAGE_WEIGHT * coverage);
        if let Some(v) = verb {
            s *= v.method_prior(tool.method) * name_verb_prior(v, tool.verb);
        } else if other_verb.is_some_and(|t| t == tool.verb_term) {
            s *= NAME_VERB_MATCH;
        }
        if tool.deprecated {
            s *= 0.8;
        }
        // Fewer parameters in the path: the direct operation before its nested copies
        // (`/me/messages/{id}/reply` before `/me/mailFolders/{id}/messages/{id}/reply`).
        s *= DEPTH_DECAY.powi(i32::from(tool.depth));
        cands.push((s, d as u32));
    }
    // Side operations (usage, stats, templates…) rank behind the operation itself unless the
    // request asks for them. The penalty only lowers a score, so across the catalog it is
    // applied to the best candidates first (see `penalise_best`).
    // Every factor is the same, so the product depends only on how many name words are
    // penalised: counted from the tool's modifier bits unless a word repeats.
    let penalised_bits = MODIFIERS
        .iter()
        .enumerate()
        .filter(|(_, m)| penalised.contains(m))
        .fold(0u32, |bits, (i, _)| bits | 1 << i);
    let side_penalty = |d: u32| {
        let bits = meta[d as usize].modifiers;
        let words = if bits & REPEATED_MODIFIER == 0 {
            (bits & penalised_bits).count_ones() as usize
        } else {
            let name = &cat.tools[d as usize].name;
            name.rsplit('.')
                .next()
                .unwrap_or("")
                .split('_')
                .filter(|w| penalised.contains(w))
                .count()
        };
        (0..words).fold(1.0f32, |p, _| p * MODIFIER_PENALTY)
    };
    let keep = match (scope, &semantic) {
        (Scope::All, Some(_)) => GLOBAL_RERANK.max(limit),
        (Scope::All, None) => limit,
        // Inside an app the fusion normalises by the best score of all candidates: keep all.
        (Scope::Ranges(_), _) => usize::MAX,
    };
    penalise_best(&mut cands, keep, side_penalty);
    // Inside an app the embedding may add tools no word matched, but only where some word of
    // the request matched a tool of the app (or the caller chose the app): a request the app's
    // tools know nothing about falls through to the whole catalog and its floor.
    if let Some(q) = semantic
        && (!scoped || !cands.is_empty() || explicit)
    {
        cands = fuse(cat, cands, &q, scope);
    }
    place_after_direct_forms(meta, &mut cands);
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

/// Multiplies candidates' scores by `penalty` (at most 1) and drops candidates that can no
/// longer be among the best `keep`. Common-word queries over the whole catalog have tens of
/// thousands of candidates and the penalty reads each one's name; since it never raises a score,
/// it is applied to the best `4 × keep` by the unpenalised score, and the rest are dropped only
/// when the `keep`-th penalised score is still strictly above the best of them (else every
/// candidate is penalised, so the answer is always the same as penalising all).
fn penalise_best(cands: &mut Vec<(f32, u32)>, keep: usize, penalty: impl Fn(u32) -> f32) {
    let first = keep.saturating_mul(4);
    if keep == 0 || cands.len() <= first {
        cands.iter_mut().for_each(|c| c.0 *= penalty(c.1));
        return;
    }
    cands.select_nth_unstable_by(first - 1, order);
    let rest_best = cands[first..]
        .iter()
        .map(|c| c.0)
        .fold(f32::NEG_INFINITY, f32::max);
    cands[..first].iter_mut().for_each(|c| c.0 *= penalty(c.1));
    let mut top: Vec<f32> = cands[..first].iter().map(|c| c.0).collect();
    top.select_nth_unstable_by(keep - 1, |a, b| b.total_cmp(a));
    if top[keep - 1] > rest_best {
        cands.truncate(first);
    } else {
        cands[first..].iter_mut().for_each(|c| c.0 *= penalty(c.1));
    }
}

/// A nested copy of an operation never ranks above the direct operation when both are
/// candidates: it takes a score just below it.
fn place_after_direct_forms(meta: &[crate::index::DocMeta], cands: &mut [(f32, u32)]) {
    // Most candidates are no one's copy: look up only the scores that are needed.
    let mut score: HashMap<u32, f32> = cands
        .iter()
        .map(|c| meta[c.1 as usize].direct)
        .filter(|&d| d != u32::MAX)
        .map(|d| (d, f32::NAN))
        .collect();
    if score.is_empty() {
        return;
    }
    for &(s, d) in cands.iter() {
        if let Some(x) = score.get_mut(&d) {
            *x = s;
        }
    }
    for c in cands.iter_mut() {
        // NaN (the direct form is not a candidate) compares false: the copy keeps its score.
        // Just below, also for a fused score at or below zero (a negative cosine).
        if let Some(&s) = score.get(&meta[c.1 as usize].direct)
            && c.0 >= s
        {
            c.0 = s - s.abs().max(1e-6) * 1e-3;
        }
    }
}

fn order(a: &(f32, u32), b: &(f32, u32)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Adds the embedding's view: each candidate's score becomes its BM25F score relative to the
/// best one plus `SEMANTIC_WEIGHT` × the cosine of query and tool. Inside an app every tool of
/// the app whose cosine reaches `SEMANTIC_FLOOR` is a candidate (a request in other words than
/// the tool's still finds it); across the
/// catalog only the best lexical candidates are re-scored, which bounds the cost.
fn fuse(cat: &Catalog, mut cands: Vec<(f32, u32)>, q: &[f32], scope: &Scope) -> Vec<(f32, u32)> {
    let dims = cat.embedding.dims as usize;
    if dims == 0 || cat.tool_vectors.len() < cat.tools.len() * dims {
        return cands;
    }
    if cands.len() > GLOBAL_RERANK {
        cands.select_nth_unstable_by(GLOBAL_RERANK - 1, order);
        cands.truncate(GLOBAL_RERANK);
    }
    let best = cands.iter().map(|c| c.0).fold(0f32, f32::max);
    let lexical = |s: f32| if best > 0.0 { s / best } else { 0.0 };
    let cos = cosines_of(cat, q, dims, cands.iter().map(|c| c.1));
    let mut out: Vec<(f32, u32)> = cands
        .iter()
        .zip(cos)
        .map(|(&(s, d), c)| (lexical(s) + SEMANTIC_WEIGHT * c, d))
        .collect();
    if let Scope::Ranges(ranges) = scope {
        let seen: std::collections::HashSet<u32> = cands.iter().map(|c| c.1).collect();
        for &(a, b) in ranges {
            for (d, c) in (a..b).zip(cosines_of(cat, q, dims, a..b)) {
                if c >= SEMANTIC_FLOOR && !seen.contains(&d) {
                    out.push((SEMANTIC_WEIGHT * c, d));
                }
            }
        }
    }
    out
}

/// The cosines of the query with the tools `docs`, in order, eight at a time (the largest
/// apps have thousands of tools, and one sum at a time left the processor waiting on each
/// addition).
fn cosines_of(cat: &Catalog, q: &[f32], dims: usize, docs: impl Iterator<Item = u32>) -> Vec<f32> {
    const LANES: usize = 8;
    let row = |d: u32| {
        let d = d as usize;
        &cat.tool_vectors[d * dims..(d + 1) * dims]
    };
    let docs: Vec<u32> = docs.collect();
    let mut out = Vec::with_capacity(docs.len());
    let mut chunks = docs.chunks_exact(LANES);
    for c in &mut chunks {
        let rows: [&[i8]; LANES] = std::array::from_fn(|i| row(c[i]));
        out.extend(crate::embed::cosines(q, rows));
    }
    out.extend(
        chunks
            .remainder()
            .iter()
            .map(|&d| crate::embed::cosine(q, row(d))),
    );
    out
}

fn idf_weight(idx: &Index, t: usize) -> f32 {
    idx.idf(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phrasal_verb_is_found_with_its_object_between_only_when_separable() {
        let p = |q: &str| phrasal_verb(&text::words(q)).map(|(v, adds)| (v, adds[0]));
        assert_eq!(
            p("hand the asana task over to Priya"),
            Some((Verb::Update, "assign"))
        );
        assert_eq!(p("let the team know"), Some((Verb::Create, "notify")));
        assert_eq!(p("log in to the dashboard"), Some((Verb::Create, "login")));
        // "log" is not separable: an expense logged in a sheet is not a login.
        assert_eq!(p("log today's expenses in my sheet"), None);
        assert_eq!(p("create a card"), None);
        // Another verb first: that is the action.
        assert_eq!(p("delete the issue and let the reporter know"), None);
        assert_eq!(p("check who is off today"), None);
    }

    /// The best `keep` after `penalise_best` are exactly the best `keep` after penalising every
    /// candidate, whether or not the shortcut applies.
    #[test]
    fn penalising_the_best_first_answers_as_penalising_all() {
        // A small deterministic generator: scores in 0..1, some tied, penalties of 1, 0.8, 0.64.
        let mut seed = 0x9e37_79b9_u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for round in 0..200 {
            let n = 1 + (next() % 3000) as usize;
            let keep = 1 + (next() % 60) as usize;
            let cands: Vec<(f32, u32)> = (0..n as u32)
                .map(|d| (f32::from((next() % 500) as u16) / 500.0, d))
                .collect();
            let pens: Vec<f32> = (0..n)
                .map(|_| [1.0, 1.0, 0.8, 0.64][(next() % 4) as usize])
                .collect();
            let penalty = |d: u32| pens[d as usize];
            let mut all = cands.clone();
            all.iter_mut().for_each(|c| c.0 *= penalty(c.1));
            all.sort_by(order);
            all.truncate(keep);
            let mut fast = cands.clone();
            penalise_best(&mut fast, keep, penalty);
            fast.sort_by(order);
            fast.truncate(keep);
            assert_eq!(fast, all, "round {round}: n {n}, keep {keep}");
        }
    }
}
