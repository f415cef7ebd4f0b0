//! Custom connectors: `GET|POST /custom-connectors`, `GET|DELETE /custom-connectors/{id}`,
//! `POST /custom-connectors/{id}/refresh`. Listing, reading and deleting need only the store;
//! creating and refreshing contact the connector's server.

use bytes::Bytes;
use http::{Method, Request};
use platform_domain::custom::{self, Connector};
use serde_json::{Value, json};

use super::ctx::Ctx;
use crate::extract::{self, Query};
use crate::problem::Problem;
use crate::reply::Reply;

impl Ctx<'_> {
    /// `GET /custom-connectors` (list) and `POST /custom-connectors` (create).
    pub(super) async fn custom_connectors(
        &self,
        req: &Request<Bytes>,
        account: &str,
    ) -> Result<Reply, Problem> {
        if req.method() == Method::GET {
            let q = Query::of(req, &["cursor", "limit"])?;
            let limit = q.page_limit()?;
            let page = custom::list(
                self.services.store.as_ref(),
                account,
                q.get("cursor"),
                Some(limit),
            )
            .await?;
            let items: Vec<Value> = page.items.iter().map(Connector::to_json).collect();
            return Ok(Reply::json(&json!({
                "custom_connectors": items,
                "next_cursor": page.next_cursor,
            })));
        }
        Query::of(req, &[])?;
        let body = extract::json(req, &self.openapi.create_custom_connector_request)?;
        let c = self.services.custom()?.create(account, &body).await?;
        Ok(Reply::created(&c.to_json()))
    }

    /// `GET /custom-connectors/{id}` and `DELETE /custom-connectors/{id}`.
    pub(super) async fn custom_connector(
        &self,
        req: &Request<Bytes>,
        id: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let store = self.services.store.as_ref();
        if req.method() == Method::DELETE {
            custom::delete(store, account, id).await?;
            return Ok(Reply::no_content());
        }
        let c = custom::get(store, account, id).await?;
        Ok(Reply::json(&c.to_json()))
    }

    /// `POST /custom-connectors/{id}/refresh`.
    pub(super) async fn refresh_connector(
        &self,
        req: &Request<Bytes>,
        id: &str,
        account: &str,
    ) -> Result<Reply, Problem> {
        Query::of(req, &[])?;
        let c = self.services.custom()?.refresh(account, id).await?;
        Ok(Reply::json(&c.to_json()))
    }
}
