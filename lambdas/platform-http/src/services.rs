//! The services behind both surfaces: what REST handlers and MCP tools call. The optional ones
//! exist only when their configuration does (credentials key, public URL); asking for a missing
//! one is the 503 REST answers with (MCP says the same in an error result).

use std::sync::Arc;

use http::StatusCode;
use platform_domain::Repositories;
use platform_domain::clock::Clock;
use platform_domain::tools::Toolbox;
use platform_exec::Integrations;
use platform_exec::custom::CustomConnectors;
use platform_exec::triggers::Triggers;

use crate::problem::Problem;

/// The use cases REST and MCP both call; the optional ones answer 503 (REST) or an error result
/// (MCP) when their configuration is missing.
#[derive(Clone)]
pub struct Services {
    pub store: Arc<dyn Repositories>,
    pub toolbox: Toolbox,
    pub clock: Arc<dyn Clock>,
    pub integrations: Option<Arc<Integrations>>,
    pub custom: Option<Arc<CustomConnectors>>,
    pub triggers: Option<Arc<Triggers>>,
}

impl Services {
    pub fn integrations(&self) -> Result<&Arc<Integrations>, Problem> {
        self.integrations.as_ref().ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "integrations_unavailable",
                "Connections and tool runs are not configured on this server (credentials key, \
                 PUBLIC_BASE_URL); see the operator's logs.",
            )
        })
    }

    pub fn custom(&self) -> Result<&Arc<CustomConnectors>, Problem> {
        self.custom.as_ref().ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "custom_connectors_unavailable",
                "Custom connectors are not configured on this deployment.",
            )
        })
    }

    pub fn triggers(&self) -> Result<&Arc<Triggers>, Problem> {
        self.triggers.as_ref().ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "triggers_unavailable",
                "Triggers are not configured on this deployment.",
            )
        })
    }
}
