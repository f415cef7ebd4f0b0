//! Text normalisation shared by the index builder and the query side: word splitting (including
//! camelCase and snake_case identifiers), stop words, a light stemmer, verb classes and synonyms.
//! Both sides must use exactly these functions, or terms stop matching.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::model::Method;

/// Splits text into lowercase words: on anything not alphanumeric, on camelCase boundaries
/// (`postMessage` → `post`, `message`; `HTTPServer` → `http`, `server`) and between letters and
/// digits only where the digit part is a version (`v1`), which is dropped.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        if chunk.is_empty() {
            continue;
        }
        let chars: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            // `IPs` stays one word: a lone plural "s" after an acronym does not start a word.
            let plural = chars.get(i + 1) == Some(&'s')
                && !chars.get(i + 2).is_some_and(|c| c.is_lowercase());
            let boundary = (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && next_lower && !plural);
            if boundary {
                push_word(&mut out, &chars[start..i]);
                start = i;
            }
        }
        push_word(&mut out, &chars[start..]);
    }
    out
}

fn push_word(out: &mut Vec<String>, chars: &[char]) {
    let w: String = chars.iter().flat_map(|c| c.to_lowercase()).collect();
    if w.is_empty() || w.chars().all(|c| c.is_ascii_digit()) || is_version(&w) {
        return;
    }
    out.push(w);
}

fn is_version(w: &str) -> bool {
    let mut it = w.chars();
    it.next() == Some('v') && w.len() > 1 && it.all(|c| c.is_ascii_digit())
}

/// Words that carry no meaning for finding an operation. "api" and friends are here because
/// every document would match them.
pub fn is_stop_word(w: &str) -> bool {
    matches!(
        w,
        "a" | "an"
            | "the"
            | "to"
            | "of"
            | "for"
            | "in"
            | "on"
            | "at"
            | "by"
            | "with"
            | "from"
            | "into"
            | "onto"
            | "and"
            | "or"
            | "my"
            | "me"
            | "i"
            | "we"
            | "our"
            | "us"
            | "you"
            | "your"
            | "it"
            | "its"
            | "is"
            | "are"
            | "be"
            | "this"
            | "that"
            | "these"
            | "those"
            | "some"
            | "any"
            | "please"
            | "can"
            | "could"
            | "would"
            | "should"
            | "want"
            | "need"
            | "how"
            | "do"
            | "does"
            | "what"
            | "which"
            | "who"
            | "whose"
            | "about"
            | "via"
            | "using"
            | "use"
            | "api"
            | "apis"
            | "rest"
            | "endpoint"
            | "given"
            | "specific"
            | "certain"
            | "one"
    )
}

/// A light stemmer (plural and -ing/-ed endings, final e, doubled final consonant). Deliberately
/// weaker than Porter, which conflates API nouns such as "organization" and "organ".
pub fn stem(word: &str) -> String {
    let mut w = word.to_string();
    let n = w.len();
    if n <= 3 || !w.is_ascii() {
        return w;
    }
    if w.ends_with("ies") && n > 4 {
        w.truncate(n - 3);
        w.push('y');
    } else if w.ends_with("sses")
        || w.ends_with("xes")
        || w.ends_with("ches")
        || w.ends_with("shes")
    {
        w.truncate(n - 2);
    } else if w.ends_with('s') && !(w.ends_with("ss") || w.ends_with("us") || w.ends_with("is")) {
        w.truncate(n - 1);
    } else if w.ends_with("ing") && n > 5 {
        w.truncate(n - 3);
        undouble(&mut w);
    } else if w.ends_with("ed") && n > 5 {
        w.truncate(n - 2);
        undouble(&mut w);
    }
    if w.len() > 4 && w.ends_with('e') && !w.ends_with("ee") {
        w.pop();
    }
    w
}

fn undouble(w: &mut String) {
    let b = w.as_bytes();
    let n = b.len();
    if n >= 3 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z') {
        w.pop();
    }
}

/// Stemmed content terms of a text, in order, stop words removed.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stop_word(w))
        .map(|w| stem(&w))
        .collect()
}

/// The verb a request expresses, used for the method prior and added to every tool's name field
/// (derived from its method and path) so "add", "create" and "post" meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Create,
    Get,
    List,
    Update,
    Delete,
}

impl Verb {
    /// The canonical term put into the name field of tools of this verb.
    pub fn term(self) -> &'static str {
        match self {
            Verb::Create => "creat",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Update => "updat",
            Verb::Delete => "delet",
        }
    }

    /// The verb an operation performs, from its method and whether the path ends in a parameter.
    pub fn of_operation(method: Method, path: &str) -> Option<Verb> {
        let item = path.trim_end_matches('/').ends_with('}');
        match method {
            Method::Get if item => Some(Verb::Get),
            Method::Get => Some(Verb::List),
            Method::Post => Some(Verb::Create),
            Method::Put | Method::Patch => Some(Verb::Update),
            Method::Delete => Some(Verb::Delete),
            _ => None,
        }
    }

    /// The verb class of a (stemmed) word, if it is a verb we know.
    pub fn of_term(term: &str) -> Option<Verb> {
        VERBS.get(term).copied()
    }

    /// Multiplier for a tool's score when the query expresses this verb.
    pub fn method_prior(self, method: Method) -> f32 {
        use Method::*;
        match (self, method) {
            (Verb::Create, Post) => 1.2,
            (Verb::Create, Put) => 1.0,
            (Verb::Create, Delete) => 0.7,
            (Verb::Create, _) => 0.85,
            (Verb::Get | Verb::List, Get) => 1.15,
            (Verb::Get | Verb::List, Delete) => 0.7,
            (Verb::Get | Verb::List, _) => 0.9,
            (Verb::Update, Put | Patch) => 1.2,
            (Verb::Update, Post) => 1.05,
            (Verb::Update, Delete) => 0.7,
            (Verb::Update, _) => 0.85,
            (Verb::Delete, Delete) => 1.3,
            (Verb::Delete, Post) => 0.95,
            (Verb::Delete, _) => 0.8,
        }
    }
}

static VERBS: LazyLock<HashMap<String, Verb>> = LazyLock::new(|| {
    let table: &[(Verb, &[&str])] = &[
        (
            Verb::Create,
            &[
                "create", "add", "new", "make", "insert", "post", "send", "submit", "upload",
                "write", "generate", "register", "append", "publish", "invite", "start",
            ],
        ),
        (
            Verb::Get,
            &[
                "get", "fetch", "retrieve", "read", "show", "view", "lookup", "look", "detail",
                "describe", "download", "check", "info",
            ],
        ),
        (
            Verb::List,
            &[
                "list",
                "all",
                "search",
                "browse",
                "enumerate",
                "find",
                "query",
            ],
        ),
        (
            Verb::Update,
            &[
                "update", "edit", "modify", "change", "set", "patch", "rename", "replace", "move",
                "assign", "mark",
            ],
        ),
        (
            Verb::Delete,
            &[
                "delete",
                "remove",
                "erase",
                "destroy",
                "drop",
                "clear",
                "unsubscribe",
                "revoke",
                "purge",
            ],
        ),
    ];
    let mut m = HashMap::new();
    for (verb, words) in table {
        for w in *words {
            m.insert(stem(w), *verb);
        }
    }
    m
});

/// Weight of a synonym's match relative to the word itself.
pub const SYNONYM_WEIGHT: f32 = 0.7;

/// General vocabulary of API documentation: each group lists words used for the same thing.
/// A query word matches documents containing any word of its groups.
const SYNONYM_GROUPS: &[&[&str]] = &[
    &["sheet", "spreadsheet", "worksheet"],
    &["row", "record", "values", "entry"],
    &["email", "mail", "gmail"],
    &["message", "msg", "chat"],
    &["text", "sms"],
    &["channel", "conversation"],
    &["issue", "ticket", "bug"],
    &["user", "member", "account", "people", "person"],
    &["contact", "person", "people"],
    &["file", "document", "attachment"],
    &["folder", "directory"],
    &["repo", "repository"],
    &["pr", "pull"],
    &["meeting", "event", "appointment"],
    &["customer", "client"],
    &["invoice", "bill"],
    &["payment", "charge", "transaction"],
    &["image", "photo", "picture"],
    &["comment", "reply", "note"],
    &["team", "group"],
    &["org", "organization", "organisation"],
    &["task", "todo"],
    &["doc", "document"],
    &["song", "track"],
    &["movie", "film"],
    &["weather", "forecast"],
    &["stock", "quote", "ticker"],
    &["translate", "translation"],
    &["vm", "instance", "server"],
    &["bucket", "container"],
    &["tweet", "tweets", "post"],
    &["subscribe", "subscription", "subscriber"],
    &["subscriber", "member", "contact"],
    &["sms", "message"],
    &["product", "item"],
    &["order", "purchase"],
    &["domain", "dns"],
    &["shorten", "short", "link"],
    &["url", "link"],
    &["address", "location"],
    &["job", "build", "pipeline"],
    &["permission", "role", "access"],
    &["secret", "credential", "key"],
    &["label", "tag"],
    &["deal", "opportunity"],
    &["lead", "prospect"],
];

static SYNONYMS: LazyLock<HashMap<String, Vec<String>>> = LazyLock::new(|| {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    for group in SYNONYM_GROUPS {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        for a in &stems {
            let alts = m.entry(a.clone()).or_default();
            for b in &stems {
                if a != b && !alts.contains(b) {
                    alts.push(b.clone());
                }
            }
        }
    }
    // Verbs of one class are synonyms of each other through the canonical term only: "add"
    // also finds "create", but "send" does not turn into "delete" or "upload".
    for (term, verb) in VERBS.iter() {
        let canonical = verb.term();
        if term != canonical {
            let alts = m.entry(term.clone()).or_default();
            if !alts.iter().any(|a| a == canonical) {
                alts.push(canonical.to_string());
            }
        }
    }
    m
});

/// The synonyms of a stemmed term (not including the term itself).
pub fn synonyms(term: &str) -> &'static [String] {
    SYNONYMS.get(term).map(Vec::as_slice).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(words("chat.postMessage"), ["chat", "post", "message"]);
        assert_eq!(words("PostRefunds"), ["post", "refunds"]);
        assert_eq!(
            words("HTTPServer_list-all"),
            ["http", "server", "list", "all"]
        );
        assert_eq!(words("/v1/users/{user_id}"), ["users", "user", "id"]);
        assert_eq!(words("floatingIPs_create"), ["floating", "ips", "create"]);
    }

    #[test]
    fn inflections_meet() {
        for (a, b) in [
            ("messages", "message"),
            ("created", "create"),
            ("creating", "creates"),
            ("policies", "policy"),
            ("spreadsheets", "spreadsheet"),
            ("mapped", "map"),
            ("running", "run"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
        assert_eq!(stem("organization"), "organization");
        assert_eq!(stem("status"), "status");
    }

    #[test]
    fn verbs_reach_their_canonical_term() {
        assert_eq!(Verb::of_term(&stem("add")), Some(Verb::Create));
        assert!(synonyms(&stem("add")).iter().any(|s| s == "creat"));
        assert!(!synonyms(&stem("send")).iter().any(|s| s == "delet"));
        assert_eq!(
            Verb::of_operation(Method::Get, "/users/{id}"),
            Some(Verb::Get)
        );
        assert_eq!(Verb::of_operation(Method::Get, "/users"), Some(Verb::List));
    }
}
