//! Tool search behaviour on the real catalog: app detection, the app filter, the minimum-match
//! floor and what a hit carries.

mod common;

#[test]
fn an_app_named_loosely_narrows_the_search_to_it() {
    let cat = common::catalog();
    let found = cat.find("add a row to a google sheet", None, 5);
    assert_eq!(found.app.as_deref(), Some("google_sheets"));
    assert!(found.hits.iter().all(|h| h.app == "google_sheets"));
    assert_eq!(
        found.hits[0].tool,
        "google_sheets.sheets_spreadsheets_values_append"
    );
}

/// An app named by more words than it needs ("zoom meetings", "stripe payment"): the extra
/// words say what the request is about and count in full.
#[test]
fn words_beyond_the_apps_own_name_count_as_the_request() {
    let cat = common::catalog();
    let found = cat.find("what zoom meetings do I have coming up", None, 5);
    assert_eq!(found.app.as_deref(), Some("zoom"));
    assert!(
        found.hits.iter().any(|h| h.tool == "zoom.meetings"),
        "{:?}",
        found.hits
    );
    assert!(
        found.hits[0].matched_terms.iter().any(|t| t == "meetings"),
        "{:?}",
        found.hits
    );
}

/// Two `POST`s on the same thing: the one whose name states the action asked for comes first.
#[test]
fn the_operation_named_for_the_action_asked_for_comes_first() {
    let cat = common::catalog();
    for (query, want) in [
        (
            "start a fine-tuning job on openai",
            "openai.create_fine_tuning_job",
        ),
        ("upload a video to youtube", "youtube.youtube_videos_insert"),
        // An action outside create/get/list/update/delete: starring, not listing what is starred.
        (
            "star a github repository",
            "github.activity_star_repo_for_authenticated_user",
        ),
    ] {
        let found = cat.find(query, None, 3);
        assert_eq!(found.hits[0].tool, want, "{query}: {:?}", found.hits);
    }
}

/// Microsoft Graph reaches a message's `reply` from every mail folder too; the direct
/// operation comes before its nested copies. A nested path with a text of its own (a budget
/// month's category) is another operation and keeps its place.
#[test]
fn the_direct_operation_comes_before_its_nested_copies() {
    let cat = common::catalog();
    let found = cat.find("reply to an email in outlook", None, 5);
    assert_eq!(
        found.hits[0].tool, "outlook.me_messages_message_reply",
        "{:?}",
        found.hits
    );
    let found = cat.find(
        "how much is left in my groceries category in YNAB this month",
        None,
        5,
    );
    assert_eq!(
        found.hits[0].tool, "ynab.get_month_category_by_id",
        "{:?}",
        found.hits
    );
}

/// A service the catalog lacks is named: the answer says so instead of offering another app's
/// tools that share the request's words (PayPal's products for Shopify's).
#[test]
fn a_service_the_catalog_lacks_gets_an_answer_that_says_so() {
    let cat = common::catalog();
    let found = cat.find("create a product in shopify", None, 5);
    assert!(found.hits.is_empty(), "{:?}", found.hits);
    let hint = found.hint.expect("hint");
    assert!(
        hint.starts_with("Shopify is not in the catalog: "),
        "{hint}"
    );
    assert!(hint.contains("custom-connectors"), "{hint}");
    // A part the catalog lacks of an app it has: HubSpot without its CRM.
    let found = cat.find("create a contact in hubspot", None, 5);
    assert!(found.hits.is_empty(), "{:?}", found.hits);
    assert!(found.hint.expect("hint").starts_with("HubSpot's CRM"));
    assert!(
        !cat.find("upload a file to hubspot", None, 5)
            .hits
            .is_empty()
    );
    // A day of the week is not monday.com, and an app the catalog has is still searched.
    let found = cat.find("schedule a zoom meeting for Monday", None, 5);
    assert_eq!(found.app.as_deref(), Some("zoom"));
    assert!(!found.hits.is_empty());
}

#[test]
fn an_explicit_app_filter_is_never_widened() {
    let cat = common::catalog();
    let found = cat.find("create an issue", Some("github"), 10);
    assert!(!found.hits.is_empty());
    assert!(
        found.hits.iter().all(|h| h.app == "github"),
        "{:?}",
        found.hits
    );
    let found = cat.find("bake a chocolate cake", Some("github"), 10);
    assert!(found.hits.is_empty());
    assert!(found.hint.is_some());
    let found = cat.find("create an issue", Some("no_such_app"), 10);
    assert!(found.hits.is_empty());
    assert!(found.hint.unwrap().contains("Unknown app"));
}

#[test]
fn weak_matches_give_an_empty_answer_with_a_hint() {
    let cat = common::catalog();
    // Four words the catalog knows, but no tool has two of them (two in common answer). The
    // last names an app (AWS Glacier) whose tools know none of the others, so the search falls
    // through to the whole catalog and its floor rather than answering with Glacier's tools.
    let found = cat.find("payroll thermostat glacier lyrics", None, 5);
    assert!(found.hits.is_empty(), "{:?}", found.hits);
    let hint = found.hint.expect("hint");
    assert!(
        hint.contains("at least 2 of the 4 searchable words"),
        "{hint}"
    );

    // Words the catalog does not know are not answerable, so they cannot sink a query...
    let found = cat.find("create a github issue for the chocolate cake", None, 5);
    assert!(
        found.hits.iter().any(|h| h.tool == "github.issues_create"),
        "{:?}",
        found.hits
    );
    // ...and a query of only such words gets a hint.
    let found = cat.find("chocolate cake", None, 5);
    assert!(found.hits.is_empty(), "{:?}", found.hits);
    assert!(found.hint.is_some());

    let found = cat.find("the of and to", None, 5);
    assert!(found.hits.is_empty());
    assert!(found.hint.is_some());

    // Also when a shorter part of the name names the app ("athena", "sheet").
    for app in ["slack", "amazon athena", "google sheets"] {
        let found = cat.find(app, None, 5);
        assert!(found.hits.is_empty(), "{app}: {:?}", found.hits);
        assert!(found.hint.unwrap().contains("names only an app"), "{app}");
    }
}

#[test]
fn hits_carry_score_app_and_matched_terms_in_score_order() {
    let cat = common::catalog();
    let found = cat.find("send a message to a slack channel", None, 5);
    assert_eq!(found.hits.len(), 5);
    assert!(found.hint.is_none());
    for w in found.hits.windows(2) {
        assert!(w[0].score >= w[1].score);
    }
    let top = &found.hits[0];
    assert_eq!(top.tool, "slack.chat_post_message");
    assert_eq!(top.app, "slack");
    assert!(
        top.matched_terms.iter().any(|t| t == "message"),
        "{:?}",
        top.matched_terms
    );
    assert!(
        top.connection.is_none(),
        "the REST layer fills in connection status"
    );
    let json = serde_json::to_value(top).unwrap();
    assert!(json.get("connection").is_none());
    assert!(json["score"].as_f64().unwrap() > 0.0);
}

#[test]
fn limits_are_clamped_and_hostile_queries_are_answered() {
    let cat = common::catalog();
    assert_eq!(cat.find("list users", None, 0).hits.len(), 1);
    assert!(cat.find("list users", None, 10_000).hits.len() <= catalog_core::search::MAX_LIMIT);
    let long = "list ".repeat(500);
    let found = cat.find(&long, None, 5);
    assert!(found.hits.is_empty() && found.hint.is_some());
    // Control characters, emoji and markup are just non-words: an answer, never a panic.
    let found = cat.find("ünïcödé 🚀 \u{0} <script>", None, 5);
    assert!(found.hits.iter().all(|h| !h.matched_terms.is_empty()));
    assert_eq!(found.hits.is_empty(), found.hint.is_some());
}
