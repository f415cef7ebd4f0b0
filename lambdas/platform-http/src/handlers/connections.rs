//! Connections: `POST /apps/{app}/connect` (a connect link), `GET /connections`,
//! `DELETE /connections/{id}`.

use bytes::Bytes;
use http::Request;
use platform_domain::StoreError;
use platform_domain::apps::decode_cursor;
use serde_json::{Value, json};

use super::ctx::Ctx;
use crate::errors;
use crate::extract::{self, Query};
use crate::problem::Problem;
use crate::reply::Reply;

impl Ctx<'_> {
    /// `POST /apps/{app}/connect`.
    pub(super) async fn connect(
        &self,
        req: &Request<Bytes>,
        app: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let integrations = self.services.integrations()?;
        let body = if req.body().is_empty() {
            json!({})
        } else {
            extract::json(req, &self.openapi.connect_request)?
        };
        let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
        let params = body
            .get("params")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let link = integrations
            .connections
            .create_link(account, app, text("label"), text("redirect_url"), params)
            .await?;
        Ok(Reply::created(&link.to_json()))
    }

    /// `GET /connections`: the account's connections, oldest first, one app's with `app`.
    pub(super) async fn connections(
        &self,
        req: &Request<Bytes>,
        account: &str,
    ) -> Result<Reply, Problem> {
        let q = Query::of(req, &["app", "cursor", "limit"])?;
        let limit = q.page_limit()?;
        let integrations = self.services.integrations()?;
        let all = integrations.connections.list(account).await?;
        // Listed connections name the product app; so may the filter, by any of its ids.
        let catalog = self.services.toolbox.catalog.as_ref();
        let app = q
            .get("app")
            .map(|a| platform_domain::apps::canonical_or_same(catalog, a));
        let matching: Vec<Value> = all
            .iter()
            .filter(|(c, _)| app.as_deref().is_none_or(|a| c.app == a))
            .map(|(c, default)| c.to_json(*default))
            .collect();
        let start = match q.get("cursor") {
            Some(c) => decode_cursor(c)
                .ok()
                .filter(|s| *s <= matching.len())
                .ok_or_else(errors::invalid_cursor)?,
            None => 0,
        };
        let end = (start + limit).min(matching.len());
        let next = (end < matching.len()).then(|| platform_domain::apps::encode_cursor(end));
        Ok(Reply::json(
            &json!({"connections": matching[start..end], "next_cursor": next}),
        ))
    }

    /// `DELETE /connections/{id}`: revoked, secrets erased.
    pub(super) async fn delete_connection(
        &self,
        req: &Request<Bytes>,
        id: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let integrations = self.services.integrations()?;
        match integrations.connections.revoke(account, id).await {
            Ok(()) => Ok(Reply::no_content()),
            Err(StoreError::NotFound(_)) => Err(Problem::not_found(
                "connection_not_found",
                format!(
                    "No connection {id:?} (or it is already revoked); GET /connections lists them."
                ),
            )),
            Err(e) => Err(errors::store(&e)),
        }
    }
}
