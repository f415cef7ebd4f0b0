//! Page search: words of a query matched against the words of page paths, with title words as a
//! tie-break. Paths are short and chosen to name their subject, so matching them is predictable
//! for agents and needs no index.

use crate::pages::{self, Page};
use serde::Serialize;
use serde_json::{Value, json};

/// Largest `limit` a caller may ask for; there are far fewer pages than this.
pub const MAX_LIMIT: usize = 50;
pub const DEFAULT_LIMIT: usize = 10;

/// Points for a query word equal to a path word.
const EXACT: f64 = 1.0;
/// Points for a query word with the same stem as a path word (`price` → `pricing`).
const STEM: f64 = 0.75;
/// Points for a query word that starts a path word (`engi` → `engine`).
const PREFIX: f64 = 0.5;
/// Points per query word found in the title: small enough never to outrank a path match.
const TITLE: f64 = 0.01;

/// The response body of `GET /agent/search` and the `search_pages` tool.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchResults {
    pub query: String,
    pub results: Vec<Hit>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    pub path: String,
    pub title: String,
    pub url: String,
    pub score: f64,
}

/// JSON Schema of [`SearchResults`], shared by the `search_pages` tool and the OpenAPI document.
pub fn results_schema() -> Value {
    let hit = json!({
        "type": "object",
        "required": ["path", "title", "url", "score"],
        "properties": {
            "path": {"type": "string"},
            "title": {"type": "string"},
            "url": {"type": "string", "format": "uri"},
            "score": {"type": "number"}
        }
    });
    json!({
        "type": "object",
        "required": ["query", "results"],
        "properties": {
            "query": {"type": "string"},
            "results": {"type": "array", "items": hit}
        }
    })
}

/// Why a search request was refused; each maps to a 400 problem or a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("the query has no words; pass q=<words>, e.g. q=pricing")]
    EmptyQuery,
    #[error("limit must be an integer from 1 to {MAX_LIMIT}")]
    BadLimit,
}

/// Parses a `limit` given as text (query string), defaulting when absent.
pub fn parse_limit(raw: Option<&str>) -> Result<usize, SearchError> {
    match raw {
        None | Some("") => Ok(DEFAULT_LIMIT),
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            _ => Err(SearchError::BadLimit),
        },
    }
}

/// Lower-case alphanumeric words of `s`.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A crude English stem: enough for `alerts`/`alert` and `pricing`/`price` to meet, without a
/// stemming library for a dozen page paths.
fn stem(w: &str) -> &str {
    for suffix in ["ing", "es", "ed", "s", "e"] {
        if let Some(s) = w.strip_suffix(suffix)
            && s.len() >= 3
        {
            return s;
        }
    }
    w
}

/// Searches all pages; `base_url` makes each hit's absolute `url`.
pub fn search(query: &str, limit: usize, base_url: &str) -> Result<SearchResults, SearchError> {
    search_in(pages::all(), query, limit, base_url)
}

fn search_in(
    pages: &[Page],
    query: &str,
    limit: usize,
    base_url: &str,
) -> Result<SearchResults, SearchError> {
    let q = words(query);
    if q.is_empty() {
        return Err(SearchError::EmptyQuery);
    }
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(SearchError::BadLimit);
    }
    let mut hits: Vec<Hit> = pages
        .iter()
        .filter_map(|page| {
            let path_words = words(page.path);
            let title_words = words(page.title);
            let mut path_score = 0.0;
            let mut title_score = 0.0;
            for w in &q {
                if path_words.iter().any(|p| p == w) {
                    path_score += EXACT;
                } else if path_words.iter().any(|p| stem(p) == stem(w)) {
                    path_score += STEM;
                } else if w.len() >= 3 && path_words.iter().any(|p| p.starts_with(w.as_str())) {
                    path_score += PREFIX;
                }
                if title_words.iter().any(|t| t == w) {
                    title_score += TITLE;
                }
            }
            (path_score > 0.0).then(|| Hit {
                path: page.path.to_string(),
                title: page.title.to_string(),
                url: format!("{}{}", base_url.trim_end_matches('/'), page.path),
                // Rounded so the JSON shows 1.01, not 1.0100000000000002.
                score: ((path_score + title_score) * 100.0).round() / 100.0,
            })
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
    });
    hits.truncate(limit);
    Ok(SearchResults {
        query: query.to_string(),
        results: hits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(path: &'static str, title: &'static str) -> Page {
        Page {
            path,
            title,
            description: "",
            markdown: "",
        }
    }

    #[test]
    fn exact_path_word_beats_prefix() {
        let pages = [page("/pricing", "Pricing"), page("/price-list", "Prices")];
        let r = search_in(&pages, "price", 10, "https://x.test").expect("ok");
        assert_eq!(r.results[0].path, "/price-list");
        assert_eq!(r.results[0].score, 1.0);
        assert_eq!(r.results[1].path, "/pricing");
        assert_eq!(r.results[1].score, 0.75);
        assert_eq!(r.results[1].url, "https://x.test/pricing");
        let r = search_in(&pages, "pri", 10, "").expect("ok");
        assert_eq!(r.results[0].score, 0.5);
    }

    #[test]
    fn title_breaks_ties_but_never_adds_a_page() {
        let pages = [
            page("/docs/a", "Nothing"),
            page("/docs/b", "Docs about engine"),
            page("/engine-room", "Unrelated"),
        ];
        let r = search_in(&pages, "docs engine", 10, "").expect("ok");
        let paths: Vec<_> = r.results.iter().map(|h| h.path.as_str()).collect();
        // /docs/b: 1 + 0.02; /engine-room: 1; /docs/a: 1.
        assert_eq!(paths, ["/docs/b", "/docs/a", "/engine-room"]);
        let none = search_in(&pages, "unrelated", 10, "").expect("ok");
        assert!(none.results.is_empty());
    }

    #[test]
    fn more_matching_words_rank_higher_and_limit_applies() {
        let r = search("away alerts setup", 1, "https://x.test").expect("ok");
        assert_eq!(r.results.len(), 1);
        assert_eq!(r.results[0].path, "/docs/away-alerts-setup");
    }

    #[test]
    fn rejects_empty_queries_and_bad_limits() {
        assert_eq!(search(" -/ ", 10, ""), Err(SearchError::EmptyQuery));
        assert_eq!(search("x", 0, ""), Err(SearchError::BadLimit));
        assert_eq!(parse_limit(Some("51")), Err(SearchError::BadLimit));
        assert_eq!(parse_limit(Some("abc")), Err(SearchError::BadLimit));
        assert_eq!(parse_limit(None), Ok(DEFAULT_LIMIT));
        assert_eq!(parse_limit(Some("3")), Ok(3));
    }

    #[test]
    fn short_words_do_not_prefix_match() {
        let r = search("pr", 10, "").expect("ok");
        assert!(r.results.is_empty());
        assert_eq!(stem("alerts"), "alert");
        assert_eq!(stem("bus"), "bus");
        let r = search("zzz", 10, "").expect("ok");
        assert!(r.results.is_empty());
    }
}
