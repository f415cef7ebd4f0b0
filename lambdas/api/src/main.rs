//! The platform's API binary: a Lambda function serving the REST router (default), the same
//! router on a loopback socket (`--local ADDR`), and the operator's admin commands.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use bytes::Bytes;
use clap::{Parser, Subcommand};
use lambda_http::request::RequestContext;
use lambda_http::{Body, RequestExt, service_fn};
use platform::bootstrap::{self, Platform};
use platform::domain::accounts::{self, AccountError, AccountStore, IssuedKey};
use platform::domain::clock::{Clock, SystemClock, rfc3339};
use platform::domain::connections::ConnectionStore;
use platform::env::TABLE_VAR;
use platform::http::{App, ClientAddr};
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "api",
    about = "Companion platform API: runs as a Lambda function by default.",
    after_help = "Environment: TABLE_NAME (required), DDB_ENDPOINT (DynamoDB Local), CATALOG_PATH, \
                  the usual AWS_* variables, RUST_LOG."
)]
struct Cli {
    /// Serve the API with hyper on this loopback address (e.g. 127.0.0.1:8080; port 0 picks one)
    /// instead of running as a Lambda function.
    #[arg(long, value_name = "ADDR")]
    local: Option<SocketAddr>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Operator commands against the table named by TABLE_NAME.
    Admin {
        #[command(subcommand)]
        command: Admin,
    },
}

#[derive(Subcommand)]
enum Admin {
    /// Creates the table from the platform's table definition (development only; production
    /// tables come from Terraform).
    CreateTable,
    /// Creates an account and prints its API key (shown once).
    CreateAccount {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: Option<String>,
    },
    /// Replaces the account's key with a new one (printed once); the old key stops working.
    RotateKey {
        #[arg(long)]
        account: String,
    },
    /// Revokes the account's key; the account has no key until the next rotate-key.
    RevokeKey {
        #[arg(long)]
        account: String,
    },
    /// Lists the account's keys (prefixes and dates only).
    ListKeys {
        #[arg(long)]
        account: String,
    },
    /// Adds an origin (`https://app.example.com`) that the account's connect links may redirect
    /// to; the first one an account uses is registered on its own.
    AllowRedirect {
        #[arg(long)]
        account: String,
        #[arg(long)]
        origin: String,
    },
}

/// The app over the environment's store, catalog and (when configured) integrations and
/// triggers: the same wiring as the jobs function (`platform::bootstrap`).
async fn build_app() -> Result<Arc<App>, String> {
    let platform = Platform::from_env().await.map_err(|e| e.to_string())?;
    Ok(Arc::new(platform.api_app().map_err(|e| e.to_string())?))
}

/// Converts one API Gateway (HTTP API) request to the router's types and back.
async fn lambda_adapter(app: &App, req: lambda_http::Request) -> http::Response<Body> {
    let source_ip = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.http.source_ip.clone(),
        _ => None,
    };
    let (mut parts, body) = req.into_parts();
    let bytes = match body {
        Body::Text(s) => Bytes::from(s),
        Body::Binary(b) => Bytes::from(b),
        _ => Bytes::new(),
    };
    if let Some(ip) = source_ip {
        parts.extensions.insert(ClientAddr(ip));
    }
    let resp = app.handle(http::Request::from_parts(parts, bytes)).await;
    // Our bodies are JSON text; API Gateway would base64 a binary body.
    resp.map(|b| match String::from_utf8(b.to_vec()) {
        Ok(s) => Body::Text(s),
        Err(e) => Body::Binary(e.into_bytes()),
    })
}

async fn run_lambda() -> Result<(), String> {
    let app = build_app().await?;
    lambda_http::run(service_fn(move |req: lambda_http::Request| {
        let app = app.clone();
        async move { Ok::<_, lambda_http::Error>(lambda_adapter(&app, req).await) }
    }))
    .await
    .map_err(|e| e.to_string())
}

async fn run_local(addr: SocketAddr) -> Result<(), String> {
    if !addr.ip().is_loopback() {
        return Err(format!(
            "--local serves development traffic and binds loopback only; {addr} is not loopback"
        ));
    }
    let app = build_app().await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    // Tests and scripts read this line to find the port.
    println!("listening on http://{bound}");
    tracing::info!(addr = %bound, "local server started");
    platform::http::local::serve(listener, app)
        .await
        .map_err(|e| e.to_string())
}

fn issued(k: &IssuedKey) -> serde_json::Value {
    json!({
        "account_id": k.account_id,
        "api_key": k.key.expose(),
        "key_prefix": k.key.visible_prefix(),
    })
}

async fn run_admin(cmd: Admin) -> Result<serde_json::Value, String> {
    let store = bootstrap::store().await.map_err(|e| e.to_string())?;
    let now = SystemClock.now_ms();
    let err = |e: AccountError| e.to_string();
    match cmd {
        Admin::CreateTable => {
            platform::store::table::create_table(store.client(), store.table())
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({"table": store.table(), "created": true}))
        }
        Admin::CreateAccount { email, name } => {
            let k = accounts::create_account(&store, &email, name.as_deref(), now)
                .await
                .map_err(err)?;
            eprintln!("The API key is shown once; store it now.");
            Ok(issued(&k))
        }
        Admin::RotateKey { account } => {
            let k = accounts::rotate_key(&store, &account, now)
                .await
                .map_err(err)?;
            eprintln!("The API key is shown once; store it now. The previous key no longer works.");
            Ok(issued(&k))
        }
        Admin::RevokeKey { account } => {
            accounts::revoke_key(&store, &account, now)
                .await
                .map_err(err)?;
            Ok(json!({"account_id": account, "revoked": true}))
        }
        Admin::AllowRedirect { account, origin } => {
            let url = platform::domain::connections::check_redirect_url(&origin)?;
            let Some(origin) = platform::domain::connections::redirect_origin(&url) else {
                return Err("loopback redirect URLs need no listing".into());
            };
            store
                .add_redirect_origin(&account, &origin, false)
                .await
                .map_err(|e| e.to_string())?;
            let all = store
                .redirect_origins(&account)
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({"account_id": account, "redirect_origins": all}))
        }
        Admin::ListKeys { account } => {
            let keys = store
                .key_history(&account)
                .await
                .map_err(|e| e.to_string())?;
            let keys: Vec<_> = keys
                .iter()
                .map(|k| {
                    json!({
                        "prefix": k.prefix,
                        "created_at": rfc3339(k.created_at_ms),
                        "revoked_at": k.revoked_at_ms.map(rfc3339),
                    })
                })
                .collect();
            Ok(json!({"account_id": account, "keys": keys}))
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    bootstrap::init_logs();
    let result = match (cli.command, cli.local) {
        (Some(Command::Admin { command }), _) => run_admin(command).await.map(|out| {
            println!("{out}");
        }),
        (None, Some(addr)) => run_local(addr).await,
        (None, None) => run_lambda().await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            if std::env::var_os(TABLE_VAR).is_none() {
                eprintln!("hint: set {TABLE_VAR} (and DDB_ENDPOINT for DynamoDB Local)");
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    //! The Lambda path: real API Gateway v2 event JSON through `lambda_http`'s own decoding and
    //! the adapter, against DynamoDB Local.

    use super::*;
    use platform::domain::apps::StaticCatalog;
    use platform::domain::ratelimit::RateLimitPolicy;
    use platform::store::DynamoStore;

    fn event(
        method: &str,
        path: &str,
        query: &str,
        source_ip: &str,
        headers: serde_json::Value,
        body: Option<(&str, bool)>,
    ) -> lambda_http::Request {
        let mut ev = json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": query,
            "headers": headers,
            "isBase64Encoded": body.is_some_and(|(_, b64)| b64),
            "requestContext": {
                "accountId": "123456789012", "apiId": "api", "domainName": "api.example.com",
                "domainPrefix": "api", "requestId": "r1", "routeKey": "$default",
                "stage": "$default", "time": "22/Nov/2026:10:00:00 +0000", "timeEpoch": 0,
                "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                         "sourceIp": source_ip, "userAgent": "test"}
            }
        });
        if let Some((b, _)) = body {
            ev["body"] = b.into();
        }
        lambda_http::request::from_str(&ev.to_string()).expect("valid API Gateway v2 event")
    }

    fn text(resp: &http::Response<Body>) -> serde_json::Value {
        match resp.body() {
            Body::Text(s) => serde_json::from_str(s).unwrap(),
            other => panic!("expected a text body, got {other:?}"),
        }
    }

    // Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
    // ones left; it reads top to bottom, and split up it would have to pass that state around.
    #[tokio::test]
    async fn api_gateway_events_reach_the_router_with_body_key_and_source_ip() {
        std::env::var(platform::env::ENDPOINT_VAR)
            .expect("DDB_ENDPOINT must point at DynamoDB Local (the test command starts it)");
        let client = bootstrap::dynamodb_client().await;
        let table = format!("lambda-{}-{}", std::process::id(), SystemClock.now_ms());
        platform::store::table::create_table(&client, &table)
            .await
            .unwrap();
        let store = DynamoStore::new(client, table);
        let issued =
            accounts::create_account(&store, "lambda@example.com", None, SystemClock.now_ms())
                .await
                .unwrap();
        let catalog = StaticCatalog::from_path(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../platform/tests/fixtures/catalog.json"),
        )
        .unwrap();
        let app = App::new(
            store,
            Arc::new(catalog),
            Arc::new(SystemClock),
            RateLimitPolicy::default(),
        )
        .unwrap();

        // Anonymous calls are counted per API Gateway sourceIp.
        let first = lambda_adapter(
            &app,
            event(
                "GET",
                "/api/v1/catalog",
                "limit=1",
                "198.51.100.7",
                json!({}),
                None,
            ),
        )
        .await;
        assert_eq!(first.status(), 200);
        assert_eq!(text(&first)["apps"].as_array().unwrap().len(), 1);
        let second = lambda_adapter(
            &app,
            event(
                "GET",
                "/api/v1/catalog",
                "",
                "198.51.100.7",
                json!({}),
                None,
            ),
        )
        .await;
        let other = lambda_adapter(
            &app,
            event("GET", "/api/v1/catalog", "", "203.0.113.9", json!({}), None),
        )
        .await;
        let r =
            |resp: &http::Response<Body>| resp.headers()["ratelimit"].to_str().unwrap().to_owned();
        assert!(
            r(&second).starts_with("\"per-key\";r=118;"),
            "{}",
            r(&second)
        );
        assert!(r(&other).starts_with("\"per-key\";r=119;"), "{}", r(&other));

        let headers = json!({
            "authorization": format!("Bearer {}", issued.key.expose()),
            "content-type": "application/json"
        });
        let plain = lambda_adapter(
            &app,
            event(
                "POST",
                "/api/v1/tools/find",
                "",
                "198.51.100.7",
                headers.clone(),
                Some((r#"{"query":"create a github issue"}"#, false)),
            ),
        )
        .await;
        assert_eq!(plain.status(), 200, "{:?}", plain.body());
        assert_eq!(text(&plain)["tools"][0]["name"], "github_create_issue");
        assert_eq!(plain.headers()["content-type"], "application/json");

        // {"query":"refund a stripe payment"}, base64-encoded by API Gateway.
        let b64 = "eyJxdWVyeSI6InJlZnVuZCBhIHN0cmlwZSBwYXltZW50In0=";
        let encoded = lambda_adapter(
            &app,
            event(
                "POST",
                "/api/v1/tools/find",
                "",
                "198.51.100.7",
                headers,
                Some((b64, true)),
            ),
        )
        .await;
        assert_eq!(encoded.status(), 200, "{:?}", encoded.body());
        assert_eq!(text(&encoded)["tools"][0]["name"], "stripe_create_refund");

        let unauth = lambda_adapter(
            &app,
            event("GET", "/api/v1/runs", "", "198.51.100.7", json!({}), None),
        )
        .await;
        assert_eq!(unauth.status(), 401);
        assert_eq!(unauth.headers()["content-type"], "application/problem+json");
        assert!(unauth.headers().contains_key("x-request-id"));
    }
}
