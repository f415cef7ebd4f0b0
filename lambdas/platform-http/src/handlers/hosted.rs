//! The hosted connect pages (`/connect/{link id}`, `/oauth/callback`): HTML, no API key (the
//! link id is the secret), rate-limited per client address like anonymous API calls.

use bytes::Bytes;
use http::Request;
use http::header::{self, HeaderMap, HeaderValue};

use super::ctx::Ctx;
use crate::guard::{Meta, address_subject};
use crate::pages;
use crate::problem::Problem;
use crate::reply::Reply;

impl Ctx<'_> {
    pub(crate) async fn hosted(
        &self,
        req: &Request<Bytes>,
        meta: &mut Meta,
    ) -> Result<Reply, Problem> {
        self.guard.rate_limit(&address_subject(req), meta).await?;
        let integrations = self.services.integrations()?;
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let Some(page) = pages::handle(
            &integrations.connections,
            req.method(),
            req.uri().path(),
            req.uri().query(),
            content_type,
            req.body(),
            pages::Provenance {
                origin: header_str(req, header::ORIGIN.as_str()),
                fetch_site: header_str(req, "sec-fetch-site"),
            },
        )
        .await
        else {
            return Err(Problem::not_found("not_found", "No such page."));
        };
        let mut extra = HeaderMap::new();
        for (k, v) in pages::PAGE_HEADERS {
            extra.insert(*k, HeaderValue::from_static(v));
        }
        if let Some(to) = page.location.as_deref()
            && let Ok(v) = HeaderValue::from_str(to)
        {
            extra.insert(header::LOCATION, v);
        }
        Ok(Reply {
            status: page.status,
            content_type: HeaderValue::from_static("text/html; charset=utf-8"),
            extra,
            body: Bytes::from(page.html),
        })
    }
}

fn header_str<'r>(req: &'r Request<Bytes>, name: &str) -> Option<&'r str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}
