//! Credentials for a run when an OAuth token is about to expire: single-flight refresh. One
//! caller per connection holds a lease (a conditional write of `lease_until_ms`) and refreshes;
//! the others wait for its result, re-reading the item. A refused grant marks the connection
//! `needs_reauth` and records a `connection.expired` account event, once.

use std::time::Duration;

use platform_domain::StoreError;
use platform_domain::connections::{
    ConnStatus, Connection, CredError, Credentials, LEASE_MS, Secret,
};
use platform_domain::events;
use platform_domain::oauth::{TokenError, TokenSet};
use serde_json::json;

use super::Connections;

/// Tries per refresh when the provider fails transiently.
const REFRESH_ATTEMPTS: u32 = 3;

impl Connections {
    /// Single-flight refresh: one caller per connection holds a lease (a conditional write of
    /// `lease_until_ms`) and refreshes; the others wait for its result, re-reading the item.
    pub(super) async fn refreshed(&self, seen: Connection) -> Result<Credentials, CredError> {
        let deadline = tokio::time::Instant::now() + self.config.lease_wait;
        let (account, id) = (seen.account_id.clone(), seen.id.clone());
        let needs_reauth = |c: &Connection| CredError::NeedsReauth {
            app: c.app.clone(),
            connection_id: c.id.clone(),
        };
        let lease_until = loop {
            let mut current = self
                .store
                .get_connection(&account, &id)
                .await?
                .filter(|c| c.status != ConnStatus::Revoked)
                .ok_or_else(|| CredError::NotFound(id.clone()))?;
            self.canonicalise(&mut current);
            // Someone refreshed since we looked, or found the grant dead.
            if self.fresh(&current) {
                let secret = self.open(&current).await?;
                return Ok(Credentials {
                    connection: current,
                    secret,
                });
            }
            if current.status == ConnStatus::NeedsReauth && seen.status == ConnStatus::Active {
                return Err(needs_reauth(&current));
            }
            let now = self.clock.now_ms();
            let until = now + LEASE_MS;
            match self.store.acquire_lease(&account, &id, now, until).await {
                Ok(()) => break until,
                Err(StoreError::Conflict(_)) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(CredError::LockTimeout(id));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e.into()),
            }
        };
        let result = self.refresh_holding_lease(&account, &id, &seen).await;
        if result.is_err() {
            // On success the token update removed the lease already.
            if let Err(e) = self.store.release_lease(&account, &id, lease_until).await {
                tracing::warn!(error = %e, connection = %id, "lease release failed");
            }
        }
        result
    }

    async fn refresh_holding_lease(
        &self,
        account: &str,
        id: &str,
        seen: &Connection,
    ) -> Result<Credentials, CredError> {
        // Re-read under the lease: the previous holder may have finished just now.
        let mut c = self
            .store
            .get_connection(account, id)
            .await?
            .filter(|c| c.status != ConnStatus::Revoked)
            .ok_or_else(|| CredError::NotFound(id.to_owned()))?;
        // The OAuth client is the product app's.
        self.canonicalise(&mut c);
        if self.fresh(&c) {
            let secret = self.open(&c).await?;
            return Ok(Credentials {
                connection: c,
                secret,
            });
        }
        if c.status == ConnStatus::NeedsReauth && seen.status == ConnStatus::Active {
            return Err(CredError::NeedsReauth {
                app: c.app.clone(),
                connection_id: c.id.clone(),
            });
        }
        let secret = self.open(&c).await?;
        let Some(refresh_token) = secret.refresh_token.clone() else {
            self.mark_expired(&c, "no refresh token").await;
            return Err(CredError::NeedsReauth {
                app: c.app.clone(),
                connection_id: c.id.clone(),
            });
        };
        let tokens = self.fetch_tokens(&c, &refresh_token).await?;
        let now = self.clock.now_ms();
        let new_secret = Secret {
            access_token: Some(tokens.access_token),
            // Providers that do not rotate refresh tokens omit it: keep the old one.
            refresh_token: tokens.refresh_token.or(Some(refresh_token)),
            ..secret
        };
        let plain = serde_json::to_vec(&new_secret).map_err(|_| CredError::Seal)?;
        let sealed = self.sealer.seal(&plain, &c.context()).await?;
        let expires = tokens.expires_in_s.map(|s| now + s * 1000);
        self.store.update_tokens(&c, &sealed, expires).await?;
        tracing::info!(connection = %c.id, app = %c.app, "token refreshed");
        let mut updated = c;
        updated.version += 1;
        updated.status = ConnStatus::Active;
        updated.token_expires_ms = expires;
        updated.sealed = Some(sealed);
        Ok(Credentials {
            connection: updated,
            secret: new_secret,
        })
    }

    /// Uses the refresh token, retrying transient failures; a refused grant marks the connection
    /// expired.
    async fn fetch_tokens(
        &self,
        c: &Connection,
        refresh_token: &str,
    ) -> Result<TokenSet, CredError> {
        let provider = self
            .provider(&c.app, &c.params)
            .map_err(|e| CredError::Provider(e.to_string()))?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match crate::oauth::refresh(&self.outbound, &provider, refresh_token).await {
                Ok(t) => return Ok(t),
                Err(TokenError::InvalidGrant(why)) => {
                    tracing::warn!(connection = %c.id, app = %c.app, "refresh token refused");
                    self.mark_expired(c, &why).await;
                    return Err(CredError::NeedsReauth {
                        app: c.app.clone(),
                        connection_id: c.id.clone(),
                    });
                }
                Err(e) if e.transient() && attempt < REFRESH_ATTEMPTS => {
                    tracing::warn!(connection = %c.id, attempt, error = %e, "refresh failed; retrying");
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
                Err(e) => {
                    tracing::warn!(connection = %c.id, error = %e, "refresh failed");
                    return Err(CredError::Provider(e.to_string()));
                }
            }
        }
    }

    /// `active` → `needs_reauth`, and a `connection.expired` event the first time.
    async fn mark_expired(&self, c: &Connection, why: &str) {
        match self
            .store
            .set_status_from_active(&c.account_id, &c.id, ConnStatus::NeedsReauth)
            .await
        {
            Ok(()) => {
                let data = json!({
                    "connection_id": c.id,
                    "app": c.app,
                    "label": c.label,
                    "reason": if why.is_empty() { "invalid_grant" } else { why },
                });
                if let Err(e) = events::record_event(
                    self.events.as_ref(),
                    &c.account_id,
                    events::CONNECTION_EXPIRED,
                    data,
                    self.clock.now_ms(),
                )
                .await
                {
                    tracing::error!(error = %e, connection = %c.id, "connection.expired event lost");
                }
            }
            Err(StoreError::Conflict(_)) => {}
            Err(e) => tracing::error!(error = %e, connection = %c.id, "cannot mark needs_reauth"),
        }
    }
}
