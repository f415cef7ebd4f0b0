//! Lambda binary serving the platform REST and MCP router (or locally with `--local ADDR`).

use lambda_http::{Body, Error, Request, Response, service_fn};

async fn handle(req: Request) -> Result<Response<Body>, Error> {
    let (status, body) = match req.uri().path() {
        "/api/v1/health" => (200, r#"{"ok":true}"#.to_string()),
        path => (
            404,
            format!(
                r#"{{"type":"about:blank","title":"Not Found","status":404,"code":"not_found","detail":"No route for {}."}}"#,
                path.escape_default()
            ),
        ),
    };
    let content_type = if status == 200 {
        "application/json"
    } else {
        "application/problem+json"
    };
    Ok(Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from(body))?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt().json().without_time().init();
    lambda_http::run(service_fn(handle)).await
}
