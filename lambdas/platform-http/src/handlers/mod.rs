//! One handler per use case, by resource. A handler reads its request (query, body), calls the
//! same service MCP calls, and answers JSON or the problem for the service's typed error.

mod catalog;
mod connections;
mod ctx;
mod custom;
mod hooks;
mod hosted;
mod runs;
mod triggers;

use bytes::Bytes;
use http::Request;
use platform_domain::accounts::Principal;

use crate::problem::Problem;
use crate::reply::Reply;
use crate::routes::Route;

pub(crate) use catalog::{app_json, found_json, tool_json};
pub(crate) use ctx::Ctx;

impl Ctx<'_> {
    /// Calls the handler of `route`; `principal` is `None` only for public routes.
    pub(crate) async fn dispatch(
        &self,
        req: &Request<Bytes>,
        route: Route<'_>,
        principal: Option<&Principal>,
    ) -> Result<Reply, Problem> {
        let Some(p) = principal else {
            return match route {
                Route::Health => Ok(catalog::health()),
                Route::OpenApi => Ok(self.openapi_document()),
                Route::Catalog => self.catalog_page(req),
                // Private routes without a principal were answered with 401 before.
                _ => Err(Problem::unauthorized("This endpoint needs an API key.")),
            };
        };
        let account = p.account_id.as_str();
        match route {
            Route::Health => Ok(catalog::health()),
            Route::OpenApi => Ok(self.openapi_document()),
            Route::Catalog => self.catalog_page(req),
            Route::Apps => self.apps(req, account).await,
            Route::App(app) => self.app(req, app, account).await,
            Route::FindTools => self.find_tools(req, account).await,
            Route::Tool(name) => self.tool(name, account).await,
            Route::RunTool(tool) => self.run_tool(req, tool, account).await,
            Route::Runs => self.runs(req, account).await,
            Route::Connect(app) => self.connect(req, app, account).await,
            Route::Connections => self.connections(req, account).await,
            Route::Connection(id) => self.delete_connection(req, id, account).await,
            Route::CustomConnectors => self.custom_connectors(req, account).await,
            Route::CustomConnector(id) => self.custom_connector(req, id, account).await,
            Route::RefreshCustomConnector(id) => self.refresh_connector(req, id, account).await,
            Route::Events => self.events(req, account).await,
            Route::TriggerEvents => self.trigger_events(req),
            Route::Triggers => self.triggers(req, account).await,
            Route::Trigger(id) => self.trigger(req, id, account).await,
            Route::EnableTrigger(id) => self.enable_trigger(req, id, account).await,
            Route::UnknownTrigger => Err(Problem::not_found("not_found", "No such endpoint.")),
        }
    }
}
