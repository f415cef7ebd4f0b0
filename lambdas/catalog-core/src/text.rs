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
        let path = path.trim_end_matches('/');
        let item = path.ends_with('}');
        // A custom method (`…/values/{range}:append`) names its own verb.
        if let Some((_, custom)) = path.rsplit('/').next().unwrap_or("").rsplit_once(':') {
            return Verb::of_term(&stem(&custom.to_ascii_lowercase()));
        }
        match method {
            Method::Get if item => Some(Verb::Get),
            Method::Get => Some(Verb::List),
            // `POST /pullrequests/{id}/merge` acts on an item; it creates nothing, so a "create"
            // request must not find it as readily as `POST /pullrequests`.
            Method::Post if is_action_path(path) => None,
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

/// A path ending in a static, singular segment right after a parameter: an action on one item
/// (`/invoices/{id}/send`, `/pulls/{n}/merge`), not a collection to add to
/// (`/issues/{n}/comments`).
fn is_action_path(path: &str) -> bool {
    let mut segs = path.rsplit('/');
    let (Some(last), Some(prev)) = (segs.next(), segs.next()) else {
        return false;
    };
    prev.starts_with('{')
        && !last.starts_with('{')
        && !last.contains(['#', '.'])
        && !last.ends_with('s')
}

/// Verbs by class, as requests use them.
const VERB_TABLE: &[(Verb, &[&str])] = &[
    (
        Verb::Create,
        &[
            "create", "add", "new", "make", "insert", "post", "send", "submit", "upload", "write",
            "generate", "register", "append", "publish", "invite", "start", "book", "schedule",
            "arrange", "launch", "spin", "draft", "compose", "tell", "notify", "announce", "ping",
            "log", "record", "put", "buy", "purchase", "pay", "save", "store", "open", "setup",
            "declare",
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
            "update",
            "edit",
            "modify",
            "change",
            "set",
            "patch",
            "rename",
            "replace",
            "move",
            "assign",
            "mark",
            "reassign",
            "reschedule",
            "tick",
            "complete",
            "finish",
            "close",
            "resolve",
            "turn",
            "enable",
            "disable",
            "toggle",
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
            "cancel",
            "kick",
            "trash",
            "discard",
        ],
    ),
];

static VERBS: LazyLock<HashMap<String, Verb>> = LazyLock::new(|| {
    let mut m = HashMap::new();
    for (verb, words) in VERB_TABLE {
        for w in *words {
            m.insert(stem(w), *verb);
        }
    }
    m
});

/// What an operation's own name says it does: a verb of a class (`create_user`,
/// `events_insert`), another action (`pause_job`, `videos_rate`, `events_import`), or nothing
/// (`usage_embeddings`). The method alone says `POST` for all of the first three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameVerb {
    None,
    Class(Verb),
    Other,
}

/// Request verbs that are mostly nouns in an operation name (`log_entries`, `book_list`,
/// `all_users`, `ip_set`): wherever they stand, they do not state its action (but "set" and
/// "put" do when they come first: [`name_verb_at`]).
const NOUN_LIKE: &[&str] = &[
    "all", "info", "detail", "look", "log", "record", "book", "store", "tell", "ping", "spin",
    "turn", "draft", "query", "schedule", "complete", "finish", "order", "check", "set", "put",
];

/// Actions of API operations outside the five classes, as they begin or end an operation's
/// name. General API vocabulary (lifecycle, moderation, social, money, workflow), not words
/// picked from evaluation requests.
const OTHER_ACTIONS: &[&str] = &[
    "approve",
    "reject",
    "accept",
    "decline",
    "archive",
    "unarchive",
    "restore",
    "copy",
    "clone",
    "duplicate",
    "export",
    "import",
    "merge",
    "pause",
    "resume",
    "stop",
    "restart",
    "retry",
    "rerun",
    "rate",
    "follow",
    "unfollow",
    "like",
    "unlike",
    "star",
    "unstar",
    "pin",
    "unpin",
    "mute",
    "unmute",
    "lock",
    "unlock",
    "block",
    "unblock",
    "verify",
    "validate",
    "test",
    "preview",
    "sync",
    "watch",
    "unwatch",
    "transfer",
    "void",
    "capture",
    "refund",
    "confirm",
    "execute",
    "run",
    "trigger",
    "crosspost",
    "forward",
    "reply",
    "share",
    "unshare",
    "convert",
    "translate",
    "transcribe",
    "count",
    "exchange",
    "authorize",
    "rotate",
    "reset",
    "refresh",
    "acknowledge",
    "ack",
    "snooze",
    "dismiss",
    "hide",
    "unhide",
    "ban",
    "unban",
    "join",
    "leave",
    "enroll",
    "unenroll",
    "activate",
    "deactivate",
    "suspend",
    "unsuspend",
    "expire",
    "finalize",
    "calculate",
    "compute",
    "estimate",
    "upsert",
    "render",
    "unassign",
    "subscribe",
    "link",
    "unlink",
    "attach",
    "detach",
    "claim",
    "release",
    "redeem",
    "reverse",
    "print",
    "ship",
    "deploy",
    "rollback",
    "promote",
];

static NAME_VERBS: LazyLock<HashMap<&'static str, NameVerb>> = LazyLock::new(|| {
    let mut m = HashMap::new();
    for w in OTHER_ACTIONS {
        m.insert(*w, NameVerb::Other);
    }
    for (verb, words) in VERB_TABLE {
        for w in *words {
            if !NOUN_LIKE.contains(w) {
                m.insert(*w, NameVerb::Class(*verb));
            }
        }
    }
    m
});

/// Whether a word is an action outside the five classes (`star`, `archive`, `merge`).
pub fn is_other_action(word: &str) -> bool {
    NAME_VERBS.get(word) == Some(&NameVerb::Other)
}

/// The verb of an operation name's words (`["pause", "fine", "tuning", "job"]`) and its
/// position: the first word, else the last (`calendar_events_insert`), else the first one
/// between (`me_create_contacts`, `people_search_contacts`). A word counts only in its base
/// form, so `logs_list` and `posts_get` name their verbs last.
pub fn name_verb_at(words: &[&str]) -> Option<(usize, NameVerb)> {
    let n = words.len();
    let at = |i: usize| {
        words
            .get(i)
            .and_then(|w| NAME_VERBS.get(w).map(|v| (i, *v)))
    };
    // First in a name, "set" and "put" are the action (`set_parent_for_task`,
    // `put_bucket_policy`); elsewhere they may be a noun (`ip_set`, `get_put_history`).
    let first = || {
        let w = *words.first()?;
        let v = match w {
            "set" => Verb::Update,
            "put" => Verb::Create,
            _ => return None,
        };
        Some((0, NameVerb::Class(v)))
    };
    at(0)
        .or_else(first)
        .or_else(|| if n > 1 { at(n - 1) } else { None })
        .or_else(|| (1..n.saturating_sub(1)).find_map(at))
}

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
    // Everyday words for what APIs call otherwise.
    &["meeting", "call"],
    &["music", "track", "song", "playback", "player"],
    &["stop", "pause", "halt"],
    &["skip", "next"],
    &["money", "balance", "funds"],
    &["refund", "reimburse"],
    &[
        "share",
        "sharing",
        "permission",
        "collaborator",
        "collaboration",
        "acl",
    ],
    &["alert", "monitor", "alarm"],
    &["silence", "mute", "downtime", "snooze"],
    &["harmful", "moderation", "toxic", "offensive", "abusive"],
    &["summarize", "completion", "response", "prompt"],
    &["ask", "prompt", "completion"],
    &["transcribe", "transcription", "transcript"],
    &["audio", "recording", "podcast", "voice", "sound"],
    &["speech", "speak", "aloud", "spoken", "tts"],
    &["png", "jpeg", "jpg", "render", "image"],
    &["feedback", "comment"],
    &["history", "version", "revision"],
    &["fix", "fixed", "resolve", "resolved"],
    &["sign", "signature", "signed", "envelope"],
    &["contract", "agreement", "envelope"],
    &["vm", "machine", "droplet", "instance", "server"],
    &["deploy", "deployment", "ship", "release"],
    &["rollback", "restore", "revert"],
    &["reboot", "restart"],
    &["due", "deadline"],
    &[
        "done",
        "complete",
        "completed",
        "finish",
        "finished",
        "tick",
    ],
    &["unpaid", "outstanding", "overdue"],
    &["pay", "paid", "payment"],
    &["cost", "price", "rate", "quote", "pricing", "estimate"],
    &["package", "parcel", "shipment"],
    &["track", "tracking"],
    &["arrival", "departure", "next"],
    &["journey", "trip", "route", "directions", "itinerary"],
    &["cook", "recipe", "meal", "dish", "ingredient"],
    &["concert", "gig", "show", "event"],
    &["sale", "listing", "item"],
    &["heart", "like", "favorite", "favourite"],
    &["follow", "subscribe", "subscription"],
    &["notify", "notification", "alert"],
    &["tell", "message", "notify"],
    &["dm", "direct", "private"],
    &["locked", "lock", "unlock"],
    &["offboard", "deactivate", "suspend", "disable"],
    &["onboard", "activate", "provision"],
    &[
        "employee",
        "staff",
        "colleague",
        "coworker",
        "teammate",
        "user",
    ],
    &["expense", "transaction", "spending"],
    &["otp", "code", "verification", "passcode"],
    &["carrier", "lookup"],
    &["vote", "poll", "survey"],
    &["signup", "subscriber", "contact"],
    &["newsletter", "campaign", "broadcast", "blast"],
    &["bounce", "bounced", "suppression"],
    &["inbox", "mail", "message"],
    &["coordinate", "geocode", "latitude", "longitude"],
    &["place", "nearby", "near"],
    &["elevation", "altitude"],
    &["timezone", "zone"],
    &["video", "clip"],
    &["vector", "embedding"],
    &["article", "blog", "story"],
    &["gif", "sticker", "animation"],
    &["flag", "feature", "toggle"],
    &["env", "environment", "variable"],
    &["block", "ban", "deny", "firewall"],
    &["metric", "measurement", "gauge"],
    &["log", "logs", "logging"],
    &["incident", "outage"],
    &["subtask", "piece", "step"],
    &["watchlist", "watch"],
    &["licence", "license"],
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
    fn an_operation_name_states_its_verb_first_last_or_between() {
        let v = |name: &str| {
            name_verb_at(&name.split('_').collect::<Vec<_>>()).map_or(NameVerb::None, |(_, v)| v)
        };
        assert_eq!(v("pause_fine_tuning_job"), NameVerb::Other);
        assert_eq!(v("create_fine_tuning_job"), NameVerb::Class(Verb::Create));
        assert_eq!(v("calendar_events_insert"), NameVerb::Class(Verb::Create));
        assert_eq!(v("videos_rate"), NameVerb::Other);
        assert_eq!(v("me_create_contacts"), NameVerb::Class(Verb::Create));
        // Plural nouns are not verbs: `logs` and `posts` name what is listed or read.
        assert_eq!(v("logs_list"), NameVerb::Class(Verb::List));
        assert_eq!(v("posts_get"), NameVerb::Class(Verb::Get));
        assert_eq!(v("usage_embeddings"), NameVerb::None);
        // In a name, "open" and "close" are the actions, not nouns.
        assert_eq!(v("conversations_close"), NameVerb::Class(Verb::Update));
        assert_eq!(v("conversations_open"), NameVerb::Class(Verb::Create));
        // "set" and "put" are the action only first in a name.
        assert_eq!(v("set_parent_for_task"), NameVerb::Class(Verb::Update));
        assert_eq!(v("put_bucket_policy"), NameVerb::Class(Verb::Create));
        assert_eq!(v("ip_set"), NameVerb::None);
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
