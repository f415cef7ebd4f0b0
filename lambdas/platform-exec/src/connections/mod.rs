//! The connections service: connect links, the hosted connect flow ([`hosted`]), listing and
//! revoking, and credentials for a run with single-flight OAuth token refresh ([`refresh`]).
//! Types and rules are the domain's (`platform_domain::connections`); this adds the token calls
//! and the sealing.

mod hosted;
mod refresh;

use std::collections::BTreeMap;
use std::sync::Arc;

use platform_domain::StoreError;
use platform_domain::apps::Catalog;
use platform_domain::clock::Clock;
use platform_domain::connections::{
    self, AuthMethod, ConnStatus, ConnectError, Connection, ConnectionStore, CredError,
    Credentials, IntegrationConfig, LINK_TTL_MS, Link, NewLink, Secret, with_defaults,
};
use platform_domain::events::EventStore;
use platform_domain::oauth::Provider;
use platform_domain::secrets::SecretBox;

use crate::outbound::Outbound;

/// Connections of every account: links, hosted connect, listing, refresh.
pub struct Connections {
    store: Arc<dyn ConnectionStore>,
    events: Arc<dyn EventStore>,
    catalog: Arc<dyn Catalog>,
    clock: Arc<dyn Clock>,
    sealer: Arc<dyn SecretBox>,
    outbound: Arc<Outbound>,
    config: IntegrationConfig,
}

/// What the connections service is built from.
pub struct ConnectionsDeps {
    pub store: Arc<dyn ConnectionStore>,
    pub events: Arc<dyn EventStore>,
    pub catalog: Arc<dyn Catalog>,
    pub clock: Arc<dyn Clock>,
    pub sealer: Arc<dyn SecretBox>,
    pub outbound: Arc<Outbound>,
}

impl Connections {
    pub fn new(deps: ConnectionsDeps, config: IntegrationConfig) -> Self {
        Self {
            store: deps.store,
            events: deps.events,
            catalog: deps.catalog,
            clock: deps.clock,
            sealer: deps.sealer,
            outbound: deps.outbound,
            config,
        }
    }

    pub fn config(&self) -> &IntegrationConfig {
        &self.config
    }

    pub fn outbound(&self) -> &Arc<Outbound> {
        &self.outbound
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The platform's public origin (`scheme://host[:port]`), which the hosted forms post from.
    pub fn public_origin(&self) -> String {
        url::Url::parse(&self.config.public_base_url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|_| self.config.public_base_url.clone())
    }

    /// The app's display name (its id when the catalog has none).
    pub fn app_name(&self, app: &str) -> String {
        self.catalog
            .app(app)
            .map(|a| a.name)
            .unwrap_or_else(|| app.to_owned())
    }

    /// The provider of an OAuth app, endpoints filled from `params`.
    pub fn provider(
        &self,
        app: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<Provider, ConnectError> {
        connections::provider(self.catalog.as_ref(), &self.config.oauth, app, params)
    }

    /// Holds `redirect_url` to the account's allow list of origins. The first https origin an
    /// account uses is registered (trust on first use: only the key holder creates links);
    /// any other origin needs `api admin allow-redirect`. Loopback URLs need no listing.
    async fn check_redirect_origin(
        &self,
        account_id: &str,
        redirect_url: &str,
    ) -> Result<(), ConnectError> {
        let url = connections::check_redirect_url(redirect_url).map_err(ConnectError::Invalid)?;
        let Some(origin) = connections::redirect_origin(&url) else {
            return Ok(());
        };
        for attempt in 0..2 {
            let allowed = self.store.redirect_origins(account_id).await?;
            if allowed.contains(&origin) {
                return Ok(());
            }
            if !allowed.is_empty() {
                return Err(ConnectError::Invalid(format!(
                    "redirect_url's origin {origin} is not on this account's allow list ({}); \
                     an operator adds one with `api admin allow-redirect`",
                    allowed.join(", ")
                )));
            }
            match self
                .store
                .add_redirect_origin(account_id, &origin, true)
                .await
            {
                Ok(()) => {
                    tracing::info!(account = %account_id, origin = %origin, "first redirect origin registered");
                    return Ok(());
                }
                // Another first link won the race: check against what it registered.
                Err(StoreError::Conflict(_)) if attempt == 0 => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ConnectError::Invalid(format!(
            "redirect_url's origin {origin} is not on this account's allow list"
        )))
    }

    /// `POST /apps/{app}/connect` (and MCP `connect_app`, and a run's connect prompt).
    pub async fn create_link(
        &self,
        account_id: &str,
        app: &str,
        label: Option<String>,
        redirect_url: Option<String>,
        params: BTreeMap<String, String>,
    ) -> Result<NewLink, ConnectError> {
        // A connection belongs to the product app, whichever of its names the caller used.
        let app = platform_domain::apps::canonical_or_same(self.catalog.as_ref(), app);
        let app = app.as_str();
        let auth = connections::connect_method(self.catalog.as_ref(), &self.config.oauth, app)?;
        let rules = self.config.oauth.get(app).map(|c| &c.params);
        connections::check_link_request(label.as_deref(), redirect_url.as_deref(), &params, rules)?;
        if auth == AuthMethod::OAuth2 {
            // Fails now, not on the user's click, if a template value is missing.
            self.provider(app, &params)?;
        }
        if let Some(r) = redirect_url.as_deref() {
            self.check_redirect_origin(account_id, r).await?;
        }
        let now = self.clock.now_ms();
        let id = connections::new_link_id();
        let link = Link {
            account_id: account_id.to_owned(),
            app: app.to_owned(),
            auth,
            label: label.map(|l| l.trim().to_owned()),
            redirect_url,
            params,
            expires_at_ms: now + LINK_TTL_MS,
        };
        self.store.put_link(&id, &link).await?;
        Ok(NewLink {
            url: format!("{}/connect/{id}", self.config.public_base_url),
            id,
            app: app.to_owned(),
            auth,
            expires_at_ms: link.expires_at_ms,
        })
    }

    /// The account's connections, oldest first, with the default of each app marked. Each names
    /// its app as the catalog does now: a connection stored under a former per-document id
    /// (`twilio_api_v2010`) belongs to its product (`twilio`) and serves all its documents, and
    /// the product's default is its oldest connection, whichever id it was stored under.
    pub async fn list(&self, account_id: &str) -> Result<Vec<(Connection, bool)>, StoreError> {
        let mut all = self.store.connections(account_id).await?;
        for c in &mut all {
            self.canonicalise(c);
        }
        Ok(with_defaults(all))
    }

    /// Names the connection's app as the catalog does now (resolved at read time; stored items
    /// are not rewritten).
    fn canonicalise(&self, c: &mut Connection) {
        if let Some(app) = self.catalog.canonical_app(&c.app) {
            c.app = app;
        }
    }

    /// `DELETE /connections/{id}`: status revoked, secrets erased.
    pub async fn revoke(&self, account_id: &str, id: &str) -> Result<(), StoreError> {
        if !id.starts_with("conn_") || id.len() > 64 {
            return Err(StoreError::NotFound("no such connection"));
        }
        match self.store.revoke(account_id, id, self.clock.now_ms()).await {
            Err(StoreError::Conflict(_)) => Err(StoreError::NotFound("no such connection")),
            other => other,
        }
    }

    /// The connection a run of `app` uses: `connection_id`, or the app's default (the oldest
    /// connection not revoked).
    async fn pick(
        &self,
        account_id: &str,
        app: &str,
        connection_id: Option<&str>,
    ) -> Result<Connection, CredError> {
        let app = platform_domain::apps::canonical_or_same(self.catalog.as_ref(), app);
        let app = app.as_str();
        if let Some(id) = connection_id {
            let mut c = self
                .store
                .get_connection(account_id, id)
                .await?
                .filter(|c| c.status != ConnStatus::Revoked)
                .ok_or_else(|| CredError::NotFound(id.to_owned()))?;
            self.canonicalise(&mut c);
            if c.app != app {
                return Err(CredError::WrongApp {
                    connection_id: id.to_owned(),
                    app: app.to_owned(),
                    actual: c.app,
                });
            }
            return Ok(c);
        }
        self.list(account_id)
            .await?
            .into_iter()
            .find(|(c, default)| *default && c.app == app)
            .map(|(c, _)| c)
            .ok_or_else(|| CredError::ConnectionRequired {
                app: app.to_owned(),
            })
    }

    async fn open(&self, c: &Connection) -> Result<Secret, CredError> {
        let sealed = c.sealed.as_deref().ok_or(CredError::Seal)?;
        let plain = self.sealer.open(sealed, &c.context()).await?;
        serde_json::from_slice(&plain).map_err(|_| CredError::Seal)
    }

    fn fresh(&self, c: &Connection) -> bool {
        c.is_fresh(self.clock.now_ms())
    }

    /// Credentials for one run, refreshing an OAuth token that is about to expire (or one
    /// marked `needs_reauth`, once) first.
    pub async fn credentials(
        &self,
        account_id: &str,
        app: &str,
        connection_id: Option<&str>,
    ) -> Result<Credentials, CredError> {
        let c = self.pick(account_id, app, connection_id).await?;
        if c.auth != AuthMethod::OAuth2 || self.fresh(&c) {
            if c.status != ConnStatus::Active {
                return Err(CredError::NeedsReauth {
                    app: app.to_owned(),
                    connection_id: c.id,
                });
            }
            let secret = self.open(&c).await?;
            return Ok(Credentials {
                connection: c,
                secret,
            });
        }
        self.refreshed(c).await
    }
}
