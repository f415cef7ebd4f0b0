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

use serde::Serialize;

mod query;

use crate::model::Catalog;
use crate::text::{self, Verb};

pub use crate::index::{Index, NFIELDS};

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
    /// Title of the source document (`Twilio - Verify`), searched with the app's name.
    pub doc_title: &'a str,
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

fn tokens_of(text: &str) -> Vec<String> {
    text::terms(text)
}

/// The key of a name written in camel case as people type it, lower case and joined
/// (`OneDrive` → `onedrive`, `SharePoint` → `sharepoint`); `None` when that is no other key.
fn joined_form(name: &str) -> Option<Vec<String>> {
    let joined = tokens_of(&name.to_lowercase());
    (!joined.is_empty() && joined != tokens_of(name)).then_some(joined)
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
            let mut name = tokens_of(doc.name);
            if let Some(v) = doc.verb {
                name.push(v.term().to_string());
            }
            // A leading verb in the operation name ("retrieve", "remove") also gets its
            // canonical term, so both spellings meet.
            if let Some(v) = name.first().and_then(|w| Verb::of_term(w)) {
                name.push(v.term().to_string());
            }
            let mut lens = [0u8; NFIELDS];
            let fields = [
                (Field::Name, name),
                (Field::Summary, tokens_of(doc.summary)),
                (Field::Description, tokens_of(doc.description)),
                (Field::Resource, resource_of(doc.path)),
                (Field::Path, static_path_terms(doc.path)),
                (
                    Field::Params,
                    doc.params.iter().flat_map(|p| tokens_of(p)).collect(),
                ),
                (Field::App, {
                    let mut t = app_terms.get(doc.app as usize).cloned().unwrap_or_default();
                    for w in tokens_of(doc.doc_title) {
                        if !t.contains(&w) {
                            t.push(w);
                        }
                    }
                    t
                }),
            ];
            for (f, terms) in fields {
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
            doc_meta: Default::default(),
        };
        index.aliases = index.build_aliases(apps, docs);
        index.max_alias_words = index
            .aliases
            .iter()
            .map(|(k, _, _)| k.split(' ').count() as u32)
            .max()
            .unwrap_or(0);
        index
    }

    fn build_aliases(&self, apps: &[AppText], docs: &[DocText]) -> Vec<(String, Vec<u32>, u8)> {
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
        // Per key: the apps it names, the most lenient spread limit of its sources, strength.
        let mut keys: BTreeMap<String, (BTreeSet<u32>, usize, u8)> = BTreeMap::new();
        let mut add = |key: Vec<String>, app: u32, limit: usize, strength: u8| {
            if key.is_empty() || key.len() > 5 {
                return;
            }
            let e = keys.entry(key.join(" ")).or_default();
            e.0.insert(app);
            e.1 = e.1.max(limit);
            e.2 = e.2.max(strength);
        };
        for (i, a) in apps.iter().enumerate() {
            let i = i as u32;
            let title: Vec<String> = tokens_of(a.title)
                .into_iter()
                .filter(|t| !generic.contains(t))
                .collect();
            add(title.clone(), i, ALIAS_SPREAD_MAX, 1);
            // "OneDrive" splits into "one drive", but people type "onedrive".
            if let Some(joined) = joined_form(a.title) {
                add(joined, i, ALIAS_SPREAD_MAX, 1);
            }
            let brand = brand_of(a.provider);
            if let Some(b) = &brand {
                add(vec![b.clone()], i, BRAND_SPREAD_MAX, 1);
            }
            if let Some(s) = a.service {
                let s = tokens_of(s);
                if !s.is_empty() {
                    add(s.clone(), i, ALIAS_SPREAD_MAX, 1);
                    for f in a.family {
                        let mut k = tokens_of(f);
                        k.extend(s.iter().cloned());
                        add(k, i, ALIAS_SPREAD_MAX, 1);
                    }
                    if let Some(b) = &brand {
                        let mut k = vec![b.clone()];
                        k.extend(s.iter().cloned());
                        add(k, i, ALIAS_SPREAD_MAX, 1);
                    }
                }
            }
            for e in a.extra {
                // A hand-made name is kept whatever its spread, unless dropping stop words
                // shrank it to an ordinary word ("api video" → "video").
                let raw = text::words(e).len();
                let key = tokens_of(e);
                if key.len() == raw {
                    add(key, i, usize::MAX, 2);
                    if let Some(joined) = joined_form(e) {
                        add(joined, i, usize::MAX, 2);
                    }
                } else {
                    add(key, i, ALIAS_SPREAD_MAX, 1);
                }
            }
        }
        keys.into_iter()
            .filter(|(key, (owners, limit, _))| {
                *limit == usize::MAX
                    || key.contains(' ')
                    || self.spread(key, owners, docs) <= *limit
            })
            .map(|(k, (owners, _, strength))| (k, owners.into_iter().collect(), strength))
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

    fn alias(&self, key: &str) -> Option<(&[u32], u8)> {
        self.aliases
            .binary_search_by(|(k, _, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| (self.aliases[i].1.as_slice(), self.aliases[i].2))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Method, Tool};

    /// (app id, title, provider, [(operationId, method, path, summary)])
    type Spec = (
        &'static str,
        &'static str,
        &'static str,
        &'static [(&'static str, Method, &'static str, &'static str)],
    );

    fn catalog(specs: &[Spec]) -> Catalog {
        use crate::model::{App, Doc};
        let mut apps = Vec::new();
        let mut docs = Vec::new();
        let mut tools = Vec::new();
        for (i, (id, title, provider, ops)) in specs.iter().enumerate() {
            let start = tools.len() as u32;
            for (op, method, path, _) in *ops {
                tools.push(Tool {
                    name: format!("{id}.{op}"),
                    app: i as u32,
                    doc: i as u32,
                    server: 0,
                    method: *method,
                    path: path.to_string(),
                    operation_id: Some(op.to_string()),
                    description: String::new(),
                    security: Vec::new(),
                    deprecated: false,
                });
            }
            docs.push(Doc {
                id: provider.to_string(),
                title: title.to_string(),
                version: "1".into(),
                license: None,
                origin: "test".into(),
                servers: Vec::new(),
                auth: Vec::new(),
            });
            apps.push(App {
                slug: id.to_string(),
                title: title.to_string(),
                description: String::new(),
                aliases: Vec::new(),
                former_ids: Vec::new(),
                categories: Vec::new(),
                logo_url: None,
                docs: vec![i as u32],
                tools: (start, tools.len() as u32),
                prior: 0.5,
            });
        }
        let app_texts: Vec<AppText> = apps
            .iter()
            .zip(specs)
            .map(|(a, s)| AppText {
                id: &a.slug,
                title: &a.title,
                provider: s.2,
                service: None,
                family: &[],
                extra: &[],
            })
            .collect();
        let summaries: Vec<&str> = specs.iter().flat_map(|s| s.3.iter().map(|o| o.3)).collect();
        let docs_text: Vec<DocText> = tools
            .iter()
            .zip(&summaries)
            .map(|(t, s)| DocText {
                app: t.app,
                name: t.operation_id.as_deref().unwrap_or(""),
                summary: s,
                description: "",
                path: &t.path,
                params: &[],
                verb: Verb::of_operation(t.method, &t.path),
                doc_title: "",
            })
            .collect();
        let index = Index::build(&app_texts, &docs_text);
        Catalog::in_memory("test", apps, docs, tools, index)
    }

    fn small() -> Catalog {
        catalog(&[
            (
                "acme_mail",
                "Acme Mail API",
                "acmemail.com",
                &[
                    ("sendMessage", Method::Post, "/messages", "Send a message"),
                    ("listMessages", Method::Get, "/messages", "List messages"),
                    (
                        "deleteMessage",
                        Method::Delete,
                        "/messages/{id}",
                        "Delete a message",
                    ),
                ],
            ),
            (
                "zeta_sheets",
                "Zeta Sheets",
                "zetasheets.io",
                &[
                    (
                        "appendValues",
                        Method::Post,
                        "/spreadsheets/{id}/values:append",
                        "Append values to a spreadsheet",
                    ),
                    (
                        "getSpreadsheet",
                        Method::Get,
                        "/spreadsheets/{id}",
                        "Get a spreadsheet",
                    ),
                ],
            ),
            (
                "notes",
                "Notes",
                "notes.example",
                &[(
                    "createMessageNote",
                    Method::Post,
                    "/notes",
                    "Create a note about a message",
                )],
            ),
            (
                "weather",
                "Weather",
                "weather.example",
                &[(
                    "getForecast",
                    Method::Get,
                    "/forecast/{city}",
                    "Get the forecast",
                )],
            ),
        ])
    }

    #[test]
    fn an_alias_narrows_the_search_and_verbs_pick_the_method() {
        let cat = small();
        let found = cat.find("remove a message in acme mail", None, 5);
        assert_eq!(found.app.as_deref(), Some("acme_mail"));
        assert_eq!(found.hits[0].tool, "acme_mail.deleteMessage");
        assert!(found.hits.iter().all(|h| h.app == "acme_mail"));
        let found = cat.find("send a message", None, 5);
        assert_eq!(found.app, None);
        assert_eq!(found.hits[0].tool, "acme_mail.sendMessage");
    }

    #[test]
    fn synonyms_and_inflections_match() {
        let cat = small();
        // "rows" → "row" → synonym "values"; "sheet" → "spreadsheet".
        let found = cat.find("add rows to a sheet", None, 5);
        assert_eq!(found.hits[0].tool, "zeta_sheets.appendValues", "{found:?}");
        assert!(found.hits[0].matched_terms.contains(&"rows".to_string()));
    }

    #[test]
    fn the_floor_refuses_global_queries_sharing_single_words() {
        let cat = small();
        // Five answerable words; appendValues matches three of them.
        let found = cat.find("delete message spreadsheet values append", None, 5);
        assert_eq!(found.hits[0].tool, "zeta_sheets.appendValues", "{found:?}");
        // Four answerable words, no tool matches two: nothing rather than noise.
        let found = cat.find("delete spreadsheet forecast list", None, 5);
        assert!(found.hits.is_empty(), "{found:?}");
        assert!(found.hint.unwrap().contains("at least 2 of the 4"));
        // Inside a named app the best matches are the answer, however few words they share.
        let found = cat.find("jot down this message thing in my notes", None, 5);
        assert_eq!(found.app.as_deref(), Some("notes"));
        assert_eq!(found.hits[0].tool, "notes.createMessageNote");
        // Words missing from the catalog do not count: two known words, one matches.
        let found = cat.find("delete zebra giraffe yellow purple", None, 5);
        assert_eq!(found.hits[0].tool, "acme_mail.deleteMessage");
    }

    #[test]
    fn camel_case_names_also_answer_joined() {
        assert_eq!(joined_form("OneDrive"), Some(tokens_of("onedrive")));
        assert_eq!(joined_form("SharePoint"), Some(tokens_of("sharepoint")));
        assert_eq!(joined_form("Slack"), None);
        assert_eq!(joined_form("Microsoft Teams"), None);
    }

    #[test]
    fn brands_come_from_the_registrable_label() {
        assert_eq!(brand_of("slack.com").as_deref(), Some("slack"));
        assert_eq!(brand_of("bbc.co.uk").as_deref(), Some("bbc"));
        assert_eq!(brand_of("api.video"), None);
    }
}
