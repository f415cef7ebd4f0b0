//! Start-up wiring, the same for both functions (`lambdas/api`, `lambdas/jobs`): logging, the
//! environment read once ([`crate::env`]), and the store, catalog, sealer, outbound client and
//! services built from it.
//!
//! The only module of the platform that reads the environment. Each piece is also callable alone
//! (tests and the admin commands need a store without the rest).

use std::path::Path;
use std::sync::Arc;

use platform_domain::apps::{self, Catalog};
use platform_domain::clock::{Clock, SystemClock};
use platform_domain::connections::{ConfigError, IntegrationConfig};
use platform_domain::oauth::{self, OAuthApps};
use platform_domain::ratelimit::RateLimitPolicy;
use platform_exec::Integrations;
use platform_exec::outbound::{Outbound, OutboundError, OutboundPolicy};
use platform_exec::triggers::Triggers;
use platform_http::App;
use platform_store::{DynamoStore, Sealer, aws};
use tracing_subscriber::EnvFilter;

use crate::env::{
    BASE_URL_OVERRIDES_VAR, CATALOG_VAR, CREDENTIALS_KEY_VAR, CREDENTIALS_LOCAL_KEY_VAR,
    ENDPOINT_VAR, LOG_VAR, OAUTH_APPS_VAR, OUTBOUND_ALLOW_VAR, PUBLIC_BASE_URL_VAR, RATE_LIMIT_VAR,
    TABLE_VAR,
};

/// Why a start-up step failed, in the operator's terms (which variable to set or fix).
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("DynamoDB request failed: {TABLE_VAR} is not set")]
    NoTable,
    #[error("{CATALOG_VAR}: {0}")]
    Catalog(String),
    #[error("{PUBLIC_BASE_URL_VAR} must be an absolute http(s) URL, not {0:?}")]
    PublicBaseUrl(String),
    #[error("{BASE_URL_OVERRIDES_VAR}: {0}")]
    Overrides(String),
    #[error("cannot read {OAUTH_APPS_VAR} file {path}: {source}")]
    OAuthFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{OAUTH_APPS_VAR} file is {0}")]
    OAuthJson(String),
    #[error("{OAUTH_APPS_VAR}: {0}")]
    OAuthInvalid(String),
    #[error(
        "credentials key: no credentials key: set {CREDENTIALS_KEY_VAR} (AWS) or {CREDENTIALS_LOCAL_KEY_VAR} (local)"
    )]
    NoCredentialsKey,
    #[error("credentials key: {CREDENTIALS_LOCAL_KEY_VAR} must be base64 of exactly 32 bytes")]
    BadLocalKey,
    #[error("outbound HTTP client: {0}")]
    Outbound(#[from] OutboundError),
    #[error("{0}")]
    App(#[from] platform_http::StartError),
}

/// Logs as JSON lines on stderr, so stdout carries only command output (admin JSON, the listen
/// address, a jobs round's report); filtered by [`LOG_VAR`], `info` when unset.
pub fn init_logs() {
    tracing_subscriber::fmt()
        .json()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_env(LOG_VAR).unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
}

/// A DynamoDB client from the standard AWS environment, at [`ENDPOINT_VAR`] when it is set
/// (DynamoDB Local).
pub async fn dynamodb_client() -> aws_sdk_dynamodb::Client {
    aws::dynamodb_client(std::env::var(ENDPOINT_VAR).ok().as_deref()).await
}

/// The store over the table named by [`TABLE_VAR`].
pub async fn store() -> Result<DynamoStore, BootError> {
    let table = std::env::var(TABLE_VAR).map_err(|_| BootError::NoTable)?;
    Ok(DynamoStore::new(dynamodb_client().await, table))
}

/// The catalog named by [`CATALOG_VAR`]; unset, the catalog is empty (with a warning).
pub fn catalog() -> Result<Arc<dyn Catalog>, BootError> {
    let path = std::env::var_os(CATALOG_VAR);
    if path.is_none() {
        tracing::warn!("{CATALOG_VAR} is not set: the catalog is empty");
    }
    apps::load(path.as_deref().map(Path::new)).map_err(BootError::Catalog)
}

/// KMS when [`CREDENTIALS_KEY_VAR`] is set, else the local key of
/// [`CREDENTIALS_LOCAL_KEY_VAR`].
pub async fn sealer() -> Result<Sealer, BootError> {
    if let Ok(key_id) = std::env::var(CREDENTIALS_KEY_VAR)
        && !key_id.is_empty()
    {
        let config = aws::sdk_config().await;
        return Ok(Sealer::kms(aws_sdk_kms::Client::new(&config), key_id));
    }
    let raw = std::env::var(CREDENTIALS_LOCAL_KEY_VAR).map_err(|_| BootError::NoCredentialsKey)?;
    Sealer::local_from_base64(&raw).map_err(|_| BootError::BadLocalKey)
}

/// The production outbound policy plus the allow list of [`OUTBOUND_ALLOW_VAR`].
pub fn outbound_policy() -> Result<OutboundPolicy, OutboundError> {
    let raw = std::env::var(OUTBOUND_ALLOW_VAR).unwrap_or_default();
    OutboundPolicy::default().with_allow_list(&raw)
}

/// The OAuth clients of the file named by [`OAUTH_APPS_VAR`]; none when it is unset.
pub fn oauth_apps() -> Result<OAuthApps, BootError> {
    let Some(path) = std::env::var_os(OAUTH_APPS_VAR) else {
        return Ok(OAuthApps::default());
    };
    let path = Path::new(&path);
    let raw = std::fs::read(path).map_err(|source| BootError::OAuthFile {
        path: path.display().to_string(),
        source,
    })?;
    OAuthApps::from_json(&raw).map_err(|e| match e {
        oauth::ConfigError::Json(e) => BootError::OAuthJson(format!("not valid: {e}")),
        invalid @ oauth::ConfigError::Invalid { .. } => {
            BootError::OAuthInvalid(invalid.to_string())
        }
    })
}

/// [`PUBLIC_BASE_URL_VAR`], [`OAUTH_APPS_VAR`], [`BASE_URL_OVERRIDES_VAR`].
pub fn integration_config() -> Result<IntegrationConfig, BootError> {
    let base = std::env::var(PUBLIC_BASE_URL_VAR).unwrap_or_default();
    let named = |e: ConfigError| match e {
        ConfigError::PublicBaseUrl(v) => BootError::PublicBaseUrl(v),
        ConfigError::Overrides(why) => BootError::Overrides(why),
    };
    let config = IntegrationConfig::new(&base, oauth_apps()?).map_err(named)?;
    match std::env::var(BASE_URL_OVERRIDES_VAR) {
        Ok(raw) => config.with_overrides(&raw).map_err(named),
        Err(_) => Ok(config),
    }
}

/// What both functions start from: the store, the catalog, the clock, and the services that need
/// the credentials key and the public URL (absent, with the reason, when those are missing).
pub struct Platform {
    pub store: DynamoStore,
    pub catalog: Arc<dyn Catalog>,
    pub clock: Arc<dyn Clock>,
    pub integrations: Result<Arc<Integrations>, BootError>,
}

impl Platform {
    /// Everything from the environment. Only the store and the catalog are required.
    pub async fn from_env() -> Result<Self, BootError> {
        let store = store().await?;
        let catalog = catalog()?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let integrations = integrations(&store, &catalog, &clock).await.map(Arc::new);
        Ok(Self {
            store,
            catalog,
            clock,
            integrations,
        })
    }

    /// The triggers service over `integrations`' client and sealer.
    pub fn triggers(&self, integrations: &Integrations) -> Triggers {
        Triggers::new(
            self.store.clone(),
            self.catalog.clone(),
            self.clock.clone(),
            integrations.outbound.clone(),
            integrations.sealer.clone(),
            std::env::var(PUBLIC_BASE_URL_VAR).ok(),
        )
    }

    /// The `api` function's app. Connections, runs, custom connectors and triggers need the
    /// credentials key and the public URL; without them the catalog, search and runs history
    /// still serve, and those endpoints answer 503 with the reason, rather than the whole
    /// function failing to start.
    pub fn api_app(&self) -> Result<App, BootError> {
        let mut policy = RateLimitPolicy::default();
        if let Some(limit) = std::env::var(RATE_LIMIT_VAR)
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|n| *n > 0)
        {
            tracing::warn!(
                limit,
                "{RATE_LIMIT_VAR} replaces the rate limit (local runs only)"
            );
            policy.limit = limit;
        }
        let app = App::new(
            self.store.clone(),
            self.catalog.clone(),
            self.clock.clone(),
            policy,
        )?;
        let integrations = match &self.integrations {
            Ok(i) => i.clone(),
            Err(e) => {
                tracing::warn!(error = %e, "integrations are off: connections, tool runs, custom connectors and triggers answer 503");
                return Ok(app);
            }
        };
        let triggers = Arc::new(self.triggers(&integrations));
        Ok(app.with_integrations(integrations)?.with_triggers(triggers))
    }

    /// The `jobs` function's triggers service and the executor its polls run through; jobs
    /// cannot work without integrations, so their absence is an error here.
    pub fn jobs(&self) -> Result<(Triggers, Arc<Integrations>), &BootError> {
        let integrations = self.integrations.as_ref()?.clone();
        Ok((self.triggers(&integrations), integrations))
    }
}

/// The services that need credentials: the sealer, the outbound client and their config.
async fn integrations(
    store: &DynamoStore,
    catalog: &Arc<dyn Catalog>,
    clock: &Arc<dyn Clock>,
) -> Result<Integrations, BootError> {
    let config = integration_config()?;
    let sealer = Arc::new(sealer().await?);
    let outbound = Arc::new(Outbound::new(outbound_policy()?)?);
    Ok(Integrations::new(
        store.clone(),
        catalog.clone(),
        clock.clone(),
        sealer,
        outbound,
        config,
    ))
}
