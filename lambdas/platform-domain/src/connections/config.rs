//! Settings of the connection features: the platform's public origin, the OAuth clients and
//! development overrides of apps' server URLs. Read from the environment by the bootstrap.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::apps::AppAuth;
use crate::oauth::{self, OAuthApps};

/// Settings of the connection features, read from the environment in production.
#[derive(Debug, Clone)]
pub struct IntegrationConfig {
    /// e.g. `https://platform.example.com`; links are `<this>/connect/cl_…`.
    pub public_base_url: String,
    pub oauth: OAuthApps,
    /// App id → server URL replacing the catalog's.
    pub base_url_overrides: BTreeMap<String, String>,
    /// How long a run waits for another holder's token refresh.
    pub lease_wait: Duration,
}

/// What is wrong with a setting; the bootstrap, which knows where it came from, names it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("the public base URL must be an absolute http(s) URL, not {0:?}")]
    PublicBaseUrl(String),
    #[error("{0}")]
    Overrides(String),
}

impl IntegrationConfig {
    /// Keys the OAuth clients and base-URL overrides by the apps' canonical ids (see
    /// [`OAuthApps::canonicalise`]): operators' settings under former per-document ids keep
    /// applying to the product app.
    pub fn canonicalise_apps(&mut self, catalog: &dyn crate::apps::Catalog) {
        let canonical = |a: &str| crate::apps::canonical_or_same(catalog, a);
        self.oauth.canonicalise(canonical);
        self.base_url_overrides =
            oauth::canonical_keys(std::mem::take(&mut self.base_url_overrides), canonical);
    }

    pub fn new(public_base_url: &str, oauth: OAuthApps) -> Result<Self, ConfigError> {
        let base = public_base_url.trim().trim_end_matches('/');
        match url::Url::parse(base) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
            _ => return Err(ConfigError::PublicBaseUrl(public_base_url.to_owned())),
        }
        Ok(Self {
            public_base_url: base.to_owned(),
            oauth,
            base_url_overrides: BTreeMap::new(),
            lease_wait: Duration::from_secs(10),
        })
    }

    /// Adds the `app=url,…` list of server URL overrides (development: a local fake of an app).
    pub fn with_overrides(mut self, list: &str) -> Result<Self, ConfigError> {
        for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (app, url) = pair
                .split_once('=')
                .ok_or_else(|| ConfigError::Overrides(format!("{pair:?} is not app=url")))?;
            self.base_url_overrides
                .insert(app.trim().to_owned(), url.trim().to_owned());
        }
        Ok(self)
    }

    pub fn callback_url(&self) -> String {
        format!("{}/oauth/callback", self.public_base_url)
    }

    /// The server URL tools of `app` are sent to: an override, else the OAuth client's
    /// `base_url`, else the catalog's, with `{name}` templates filled from `params`.
    pub fn base_url(&self, app: &AppAuth, params: &BTreeMap<String, String>) -> String {
        let raw = self
            .base_url_overrides
            .get(&app.app)
            .or_else(|| self.oauth.get(&app.app).and_then(|c| c.base_url.as_ref()))
            .unwrap_or(&app.base_url);
        oauth::fill_template(raw, params).unwrap_or_else(|_| raw.clone())
    }
}
