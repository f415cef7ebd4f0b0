//! Tool detail from a built catalog artifact (format 3, written by `catalog-core` exactly as the
//! catalog builder writes it, and loaded the way `CATALOG_PATH` loads it): REST
//! `GET /tools/{name}` and MCP `get_tool` show what a run will do (method, path template,
//! server, auth kinds and scopes) with the input schema and an example input; names an earlier
//! catalog issued answer with the tool under its current name in detail and in runs; no secret
//! appears in the detail.

mod common;
mod conn_common;

use std::path::PathBuf;
use std::sync::Arc;

use catalog_core as core;
use common::{Resp, assert_documented, get, post_json, send, send_with_headers};
use conn_common::{ConnServer, Setup, browse, conn_server_with, html, post_form, spawn_peer};
use serde_json::{Value, json};

const GH_CLIENT_SECRET: &str = "gh-client-secret-7f3a";
const KEYED_KEY: &str = "keyed-key-5b1c";

/// The artifact file, removed when the test ends.
struct Artifact(PathBuf);

impl Drop for Artifact {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn issue_schema() -> Value {
    json!({"type": "object", "required": ["path", "body"], "additionalProperties": false,
           "properties": {
               "path": {"type": "object", "required": ["owner", "repo"], "additionalProperties": false,
                        "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}}},
               "body": {"type": "object", "required": ["title"],
                        "properties": {"title": {"type": "string", "minLength": 1, "example": "Found a bug"},
                                       "body": {"type": "string"}}}}})
}

fn echo_schema() -> Value {
    json!({"type": "object", "properties": {"query": {"type": "object",
                                                     "properties": {"q": {"type": "string"}}}}})
}

fn doc(id: &str, server: &str, auth: Vec<core::AuthScheme>) -> core::Doc {
    core::Doc {
        id: id.into(),
        title: id.into(),
        version: "1".into(),
        license: None,
        origin: "test".into(),
        servers: vec![core::Server {
            url: server.into(),
            variables: Vec::new(),
        }],
        auth,
    }
}

fn app(slug: &str, title: &str, doc: u32, tools: (u32, u32)) -> core::App {
    core::App {
        slug: slug.into(),
        title: title.into(),
        description: format!("{title} for tests."),
        aliases: Vec::new(),
        former_ids: Vec::new(),
        categories: vec!["developer_tools".into()],
        logo_url: None,
        docs: vec![doc],
        tools,
        prior: 0.5,
    }
}

fn tool(
    name: &str,
    app: u32,
    method: core::Method,
    path: &str,
    security: Vec<Vec<core::SchemeUse>>,
) -> core::Tool {
    core::Tool {
        name: name.into(),
        app,
        doc: app,
        server: 0,
        method,
        path: path.into(),
        operation_id: None,
        description: format!("{name} for tests."),
        security,
        deprecated: false,
    }
}

/// GitHub (OAuth 2.0 with scopes, or a personal token) and an API-key app, each with one tool
/// that an earlier catalog named differently.
fn write_artifact() -> Artifact {
    let github_auth = vec![
        core::AuthScheme {
            name: "oauth_app".into(),
            kind: core::AuthKind::OAuth2 {
                flows: vec![core::OAuthFlow {
                    flow: "authorizationCode".into(),
                    authorization_url: Some("https://github.com/login/oauth/authorize".into()),
                    token_url: Some("https://github.com/login/oauth/access_token".into()),
                    scopes: vec!["repo".into(), "read:user".into()],
                }],
            },
        },
        core::AuthScheme {
            name: "pat".into(),
            kind: core::AuthKind::Http {
                scheme: "bearer".into(),
            },
        },
    ];
    let keyed_auth = vec![core::AuthScheme {
        name: "key".into(),
        kind: core::AuthKind::ApiKey {
            location: "header".into(),
            param: "X-Api-Key".into(),
            prefix: None,
        },
    }];
    let uses = |scheme: u16, scopes: &[&str]| core::SchemeUse {
        scheme,
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
    };
    // Built as the catalog builder builds them: the example comes from the schema.
    let inputs: Vec<core::ToolInput> = [issue_schema(), echo_schema()]
        .into_iter()
        .map(|schema| core::ToolInput {
            example: core::example::example(&schema),
            schema,
        })
        .collect();
    let (schema_offsets, schema_blob) = core::Catalog::schema_chunks(&inputs, 3).unwrap();
    let catalog = core::Catalog {
        source: core::Source {
            packages: vec!["test@1".into()],
            input_key: "tool-detail".into(),
        },
        apps: vec![
            app("github", "GitHub", 0, (0, 1)),
            app("keyed", "Keyed", 1, (1, 2)),
        ],
        docs: vec![
            doc("github.com", "https://api.github.com", github_auth),
            doc("keyed.example", "https://api.keyed.example", keyed_auth),
        ],
        tools: vec![
            tool(
                "github.issues_create",
                0,
                core::Method::Post,
                "/repos/{owner}/{repo}/issues",
                vec![vec![uses(0, &["repo"])], vec![uses(1, &[])]],
            ),
            tool(
                "keyed.echo",
                1,
                core::Method::Get,
                "/echo",
                vec![vec![uses(0, &[])]],
            ),
        ],
        index: Default::default(),
        app_index: Default::default(),
        former_app_ids: Vec::new(),
        renamed_tools: vec![("github_create_issue".into(), 0), ("keyed_echo".into(), 1)],
        embedding: Default::default(),
        tool_vectors: Vec::new(),
        schema_offsets,
        schema_blob,
        in_memory: false,
    };
    let path = std::env::temp_dir().join(format!(
        "tool-detail-{}-{}.bin.zst",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::write(&path, catalog.to_artifact(3).unwrap()).unwrap();
    Artifact(path)
}

async fn server(artifact: &Artifact, peer_api: &str) -> ConnServer {
    let catalog = platform::domain::apps::load(Some(&artifact.0)).expect("artifact loads");
    let setup = Setup {
        oauth_apps: json!({"github": {
            "client_id": "gh-client",
            "client_secret": GH_CLIENT_SECRET,
            "authorize_url": "https://github.com/login/oauth/authorize",
            "token_url": "https://github.com/login/oauth/access_token",
            "scopes": ["repo"],
        }}),
        overrides: vec![("keyed".into(), peer_api.to_owned())],
        ..Setup::default()
    };
    conn_server_with(setup, Arc::clone(&catalog)).await
}

async fn mcp_call(srv: &ConnServer, key: &str, name: &str, args: Value) -> Value {
    srv.clock.advance(1);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": args}});
    let r = send_with_headers(
        &srv.base,
        post_json("/mcp", Some(key), &body),
        &[
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2025-06-18"),
        ],
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.raw));
    r.body["result"].clone()
}

async fn detail(srv: &ConnServer, key: &str, name: &str) -> Resp {
    let path = format!("/api/v1/tools/{name}");
    let r = send(&srv.base, get(&path, Some(key))).await;
    assert_eq!(r.status, 200, "{name}: {}", r.body);
    assert_documented(&r, "get", "/tools/{name}");
    r
}

fn assert_valid_example(tool: &Value) {
    let errors = platform::domain::validation::check(&tool["input_schema"], &tool["example_input"])
        .expect("input schema compiles");
    assert!(
        errors.is_empty(),
        "example does not validate: {errors:?}\n{tool}"
    );
}

#[tokio::test]
async fn detail_shows_what_a_run_does_with_a_valid_example_and_no_secret() {
    let artifact = write_artifact();
    let peer = spawn_peer();
    let srv = server(&artifact, &format!("{}/api", peer.url)).await;
    let a = srv.account("detail@example.com").await;
    let k = a.key.expose();

    let r = detail(&srv, k, "github.issues_create").await;
    let t = &r.body;
    assert_eq!(t["name"], "github.issues_create");
    assert_eq!(t["app"], "github");
    assert_eq!(t["method"], "POST");
    assert_eq!(t["path"], "/repos/{owner}/{repo}/issues");
    assert_eq!(t["server_url"], "https://api.github.com");
    assert_eq!(
        t["auth"],
        json!([{"kind": "oauth2", "scopes": ["repo"], "schemes": ["oauth_app"]},
               {"kind": "bearer", "scopes": [], "schemes": ["pat"]}])
    );
    assert_eq!(t["connection_status"], "not_connected");
    assert_eq!(t["input_schema"], issue_schema());
    // The example the artifact stores (the schema's own example value), not an empty object.
    assert_eq!(
        t["example_input"],
        json!({"path": {"owner": "<owner>", "repo": "<repo>"}, "body": {"title": "Found a bug"}})
    );
    assert_valid_example(t);
    assert!(!String::from_utf8_lossy(&r.raw).contains(GH_CLIENT_SECRET));

    // MCP get_tool answers the same tool, field for field.
    let m = mcp_call(&srv, k, "get_tool", json!({"name": "github.issues_create"})).await;
    assert_eq!(m["isError"], false, "{m}");
    assert_eq!(m["structuredContent"], r.body);

    // A connected API-key app: its detail names the kind, never the key.
    let link = srv.link(k, "keyed", json!({})).await;
    assert_eq!(link.status, 201, "{}", link.body);
    let url = link.body["url"].as_str().unwrap().to_owned();
    assert_eq!(browse(&url).await.status, 200);
    let done = post_form(&url, &[("api_key", KEYED_KEY)]).await;
    assert!(html(&done).contains("is connected"), "{}", html(&done));
    let r = detail(&srv, k, "keyed.echo").await;
    assert_eq!(r.body["method"], "GET");
    assert_eq!(
        r.body["auth"],
        json!([{"kind": "api_key", "scopes": [], "schemes": ["key"]}])
    );
    assert_eq!(r.body["connection_status"], "connected");
    assert_valid_example(&r.body);
    let m = mcp_call(&srv, k, "get_tool", json!({"name": "keyed.echo"})).await;
    for raw in [String::from_utf8_lossy(&r.raw).into_owned(), m.to_string()] {
        assert!(!raw.contains(KEYED_KEY), "{raw}");
        assert!(!raw.contains("X-Api-Key"), "{raw}");
    }
}

#[tokio::test]
async fn names_an_earlier_catalog_issued_answer_with_the_tool_under_its_new_name() {
    let artifact = write_artifact();
    let peer = spawn_peer();
    let srv = server(&artifact, &format!("{}/api", peer.url)).await;
    let a = srv.account("renamed@example.com").await;
    let k = a.key.expose();

    // Detail, REST and MCP.
    let old = detail(&srv, k, "github_create_issue").await;
    let new = detail(&srv, k, "github.issues_create").await;
    assert_eq!(old.body["name"], "github.issues_create");
    assert_eq!(old.body, new.body);
    let m = mcp_call(&srv, k, "get_tool", json!({"name": "github_create_issue"})).await;
    assert_eq!(m["isError"], false, "{m}");
    assert_eq!(m["structuredContent"]["name"], "github.issues_create");
    assert_eq!(m["structuredContent"]["method"], "POST");

    // Runs, REST and MCP: the old name runs the tool and the run names the new one.
    let link = srv.link(k, "keyed", json!({})).await;
    let url = link.body["url"].as_str().unwrap().to_owned();
    assert_eq!(browse(&url).await.status, 200);
    post_form(&url, &[("api_key", KEYED_KEY)]).await;
    let r = srv
        .run(
            k,
            "keyed_echo",
            json!({"arguments": {"query": {"q": "old"}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "post", "/tools/{name}/run");
    assert_eq!(r.body["tool"], "keyed.echo");
    assert_eq!(r.body["data"]["x_api_key"], KEYED_KEY);
    assert_eq!(r.body["data"]["query"], "q=old");
    let m = mcp_call(
        &srv,
        k,
        "run_tool",
        json!({"tool": "keyed_echo", "arguments": {"query": {"q": "mcp"}}}),
    )
    .await;
    assert_eq!(m["isError"], false, "{m}");
    assert_eq!(m["structuredContent"]["tool"], "keyed.echo");
    assert_eq!(m["structuredContent"]["status"], "succeeded");
    // Without a connection the old name still resolves: the refusal names the app to connect.
    let r = srv
        .run(
            k,
            "github_create_issue",
            json!({"arguments": {
        "path": {"owner": "o", "repo": "r"}, "body": {"title": "t"}}}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "connection_required"),
        "{}",
        r.body
    );
    assert_eq!(r.body["app"], "github");
    let runs = srv.runs(k).await;
    let tools: Vec<&str> = runs.iter().filter_map(|r| r["tool"].as_str()).collect();
    assert_eq!(
        tools,
        ["github.issues_create", "keyed.echo", "keyed.echo"],
        "{runs:?}"
    );

    // A name no catalog issued is still unknown.
    let r = send(
        &srv.base,
        get("/api/v1/tools/github_create_issues", Some(k)),
    )
    .await;
    assert_eq!((r.status, r.code()), (404, "tool_not_found"), "{}", r.body);
}

/// The real catalog (built from the pinned packages when missing or stale, as the catalog's own
/// tests build it): GitHub's "create an issue" is a POST to api.github.com with its path
/// template and an example that satisfies its schema, Stripe's refund names its auth kinds, and
/// an old name resolves.
#[tokio::test]
async fn the_built_catalog_shows_github_issue_creation_in_full() {
    let path = platform_catalog::artifact_path();
    platform_catalog::ensure(&platform_catalog::package_dir(), &path)
        .unwrap_or_else(|e| panic!("cannot build the catalog artifact: {e}"));
    let catalog = platform::domain::apps::load(Some(&path)).expect("artifact loads");
    let srv = conn_server_with(Setup::default(), catalog).await;
    let a = srv.account("real-detail@example.com").await;
    let k = a.key.expose();

    let r = detail(&srv, k, "github.issues_create").await;
    let t = &r.body;
    assert_eq!(t["app"], "github");
    assert_eq!(t["method"], "POST");
    assert_eq!(t["path"], "/repos/{owner}/{repo}/issues");
    assert_eq!(t["server_url"], "https://api.github.com");
    // GitHub's published document declares no security scheme; the detail says what the
    // document says rather than guessing (how it connects is the deployment's OAuth client).
    assert_eq!(t["auth"], json!([]), "{t}");
    assert!(t["example_input"]["path"]["owner"].is_string(), "{t}");
    assert!(t["example_input"]["body"]["title"].is_string(), "{t}");
    assert_valid_example(t);

    // Stripe's document does declare its schemes: a refund takes a secret key, as basic auth or
    // as a bearer token, and the detail names those kinds, never a key.
    let r = detail(&srv, k, "stripe.create_refunds").await;
    let t = &r.body;
    assert_eq!(t["method"], "POST");
    assert_eq!(t["path"], "/v1/refunds");
    assert!(
        t["server_url"]
            .as_str()
            .is_some_and(|u| u.starts_with("https://")),
        "{t}"
    );
    let kinds: Vec<&str> = t["auth"]
        .as_array()
        .expect("auth list")
        .iter()
        .filter_map(|a| a["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"basic") || kinds.contains(&"bearer"),
        "{kinds:?}\n{t}"
    );
    assert_valid_example(t);

    // Every name the first catalog issued for a tool resolves to it under its current name.
    let core = core::Catalog::load(&path).expect("artifact loads");
    let (old, idx) = core
        .renamed_tools
        .iter()
        .find(|(_, i)| core.tools[*i as usize].name == "github.issues_create")
        .or_else(|| core.renamed_tools.first())
        .expect("the catalog keeps names earlier catalogs issued");
    let current = &core.tools[*idx as usize].name;
    let r = detail(&srv, k, old).await;
    assert_eq!(&r.body["name"], current.as_str(), "{old}");
    let m = mcp_call(&srv, k, "get_tool", json!({"name": old})).await;
    assert_eq!(&m["structuredContent"]["name"], current.as_str(), "{m}");
}
