//! Everything that needs credentials, built once: the connections service and the tool
//! executor, with the guarded client and the sealer they share (custom connectors and triggers
//! use the same two).

use std::sync::Arc;

use platform_domain::Repositories;
use platform_domain::apps::Catalog;
use platform_domain::clock::Clock;
use platform_domain::connections::IntegrationConfig;
use platform_domain::secrets::SecretBox;

use crate::connections::{Connections, ConnectionsDeps};
use crate::executor::Executor;
use crate::outbound::Outbound;

pub struct Integrations {
    pub connections: Arc<Connections>,
    pub executor: Arc<Executor>,
    /// The same guarded client and sealer, for custom connectors and triggers.
    pub outbound: Arc<Outbound>,
    pub sealer: Arc<dyn SecretBox>,
}

impl Integrations {
    pub fn new(
        store: impl Repositories + 'static,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
        sealer: Arc<dyn SecretBox>,
        outbound: Arc<Outbound>,
        config: IntegrationConfig,
    ) -> Self {
        Self::with_store(Arc::new(store), catalog, clock, sealer, outbound, config)
    }

    /// [`Integrations::new`] over a store already shared.
    pub fn with_store(
        store: Arc<dyn Repositories>,
        catalog: Arc<dyn Catalog>,
        clock: Arc<dyn Clock>,
        sealer: Arc<dyn SecretBox>,
        outbound: Arc<Outbound>,
        mut config: IntegrationConfig,
    ) -> Self {
        config.canonicalise_apps(catalog.as_ref());
        let deps = ConnectionsDeps {
            store: store.clone(),
            events: store.clone(),
            catalog: catalog.clone(),
            clock,
            sealer: sealer.clone(),
            outbound: outbound.clone(),
        };
        let connections = Arc::new(Connections::new(deps, config));
        Self {
            executor: Arc::new(Executor::new(catalog, connections.clone(), store)),
            connections,
            outbound,
            sealer,
        }
    }
}
