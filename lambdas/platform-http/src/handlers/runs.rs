//! Runs: `GET /runs` (the 25 latest) and `POST /tools/{tool}/run` for catalog tools and the
//! account's custom tools.

use bytes::Bytes;
use http::Request;
use platform_domain::custom::is_custom;
use platform_domain::runs::{Arguments, LATEST};
use platform_exec::executor::{RunOrigin, RunRequest};
use serde_json::{Value, json};

use super::ctx::Ctx;
use crate::errors;
use crate::extract::{self, Query};
use crate::problem::Problem;
use crate::reply::Reply;

impl Ctx<'_> {
    /// `GET /runs`.
    pub(super) async fn runs(&self, req: &Request<Bytes>, account: &str) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let runs = self.services.store.latest_runs(account, LATEST).await?;
        // Runs recorded before apps were grouped into products name the per-document app and
        // the tool's former name; the list names both as the catalog does now.
        let catalog = self.services.toolbox.catalog.as_ref();
        let runs: Vec<Value> = runs
            .into_iter()
            .map(|mut r| {
                r.app = platform_domain::apps::canonical_or_same(catalog, &r.app);
                if let Some(t) = catalog.canonical_tool(&r.tool) {
                    r.tool = t;
                }
                r.to_json()
            })
            .collect();
        Ok(Reply::json(&json!({"runs": runs, "next_cursor": null})))
    }

    /// `POST /tools/{tool}/run`.
    pub(super) async fn run_tool(
        &self,
        req: &Request<Bytes>,
        tool: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        if is_custom(tool) {
            return self.run_custom(req, tool, account).await;
        }
        Query::of(req, &[])?;
        let integrations = self.services.integrations()?;
        let body = extract::json(req, &self.openapi.run_tool_request)?;
        let empty = json!({});
        let run = RunRequest {
            tool,
            arguments: body.get("arguments").unwrap_or(&empty),
            connection_id: body.get("connection_id").and_then(Value::as_str),
            origin: RunOrigin::Api,
            keep_arguments: Arguments::Redacted,
        };
        match integrations.executor.execute(account, run).await {
            Ok(out) => Ok(Reply::json(&out.to_json())),
            Err(e) => Err(errors::run(&e)),
        }
    }

    /// `POST /tools/custom.<connector>.<tool>/run`.
    async fn run_custom(
        &self,
        req: &Request<Bytes>,
        name: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let body = extract::json(req, &self.openapi.run_tool_request)?;
        let custom = self.services.custom()?;
        let args = body.get("arguments").unwrap_or(&Value::Null);
        match custom.run(account, name, args).await {
            Ok(out) => Ok(Reply::json(&out.to_json())),
            Err((e, run_id)) => Err(errors::custom_run(&e, run_id.as_deref())),
        }
    }
}
