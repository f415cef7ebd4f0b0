//! Tool search through the artifact's `find`: alias narrowing, verbs, synonyms and the
//! minimum-match floor, over a small hand-built catalog.

use platform_search::catalog::{App, Catalog, Method, Source, Tool};
use platform_search::search::text::Verb;
use platform_search::search::{AppText, DocText, Index};

/// (app id, title, provider, [(operationId, method, path, summary)])
type Spec = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, Method, &'static str, &'static str)],
);

fn catalog(specs: &[Spec]) -> Catalog {
    let mut apps = Vec::new();
    let mut tools = Vec::new();
    for (i, (id, title, provider, ops)) in specs.iter().enumerate() {
        let start = tools.len() as u32;
        for (op, method, path, _) in *ops {
            tools.push(Tool {
                name: format!("{id}.{op}"),
                app: i as u32,
                method: *method,
                path: path.to_string(),
                operation_id: Some(op.to_string()),
                description: String::new(),
                security: Vec::new(),
                deprecated: false,
            });
        }
        apps.push(App {
            id: id.to_string(),
            title: title.to_string(),
            provider: provider.to_string(),
            service: None,
            description: String::new(),
            categories: Vec::new(),
            logo_url: None,
            base_url: format!("https://{provider}"),
            version: "1".into(),
            license: None,
            auth: Vec::new(),
            tools: (start, tools.len() as u32),
        });
    }
    let app_texts: Vec<AppText> = apps
        .iter()
        .map(|a| AppText {
            id: &a.id,
            title: &a.title,
            provider: &a.provider,
            service: None,
            family: &[],
            extra: &[],
        })
        .collect();
    let summaries: Vec<&str> = specs.iter().flat_map(|s| s.3.iter().map(|o| o.3)).collect();
    let docs: Vec<DocText> = tools
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
        })
        .collect();
    let index = Index::build(&app_texts, &docs);
    Catalog {
        source: Source {
            package: "test".into(),
            input_key: String::new(),
        },
        apps,
        tools,
        index,
        schemas: Vec::new(),
    }
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
fn the_floor_refuses_queries_matching_under_half_their_words() {
    let cat = small();
    // Six answerable words; appendValues matches three of them.
    let found = cat.find("delete message spreadsheet note values append", None, 5);
    assert_eq!(found.hits[0].tool, "zeta_sheets.appendValues", "{found:?}");
    // Four answerable words, no tool matches two.
    let found = cat.find("delete spreadsheet note list", None, 5);
    assert!(found.hits.is_empty(), "{found:?}");
    assert!(found.hint.unwrap().contains("at least 2 of the 4"));
    // Words missing from the catalog do not count: two known words, one matches.
    let found = cat.find("delete zebra giraffe yellow purple", None, 5);
    assert_eq!(found.hits[0].tool, "acme_mail.deleteMessage");
}
