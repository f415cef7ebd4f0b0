//! The hosted connect flow behind the HTML pages: a link is peeked, then used up exactly once;
//! an OAuth link becomes a state (with the PKCE verifier sealed) and a redirect to the provider,
//! whose callback exchanges the code; a key or password link takes the form's secret.

use platform_domain::StoreError;
use platform_domain::connections::{
    AuthMethod, ConnStatus, Connection, Link, OAuthState, PageError, STATE_TTL_MS, Secret,
    link_id_ok, new_connection_id,
};
use platform_domain::oauth::{TokenError, random_token};

use super::Connections;

impl Connections {
    pub(super) fn page_store_error(e: StoreError) -> PageError {
        tracing::error!(error = %e, "store failure on a hosted page");
        PageError::Internal
    }

    /// Reads a link without using it (the key form shows before it is submitted).
    pub async fn peek_link(&self, id: &str) -> Result<Link, PageError> {
        if !link_id_ok(id) {
            return Err(PageError::LinkUnknown);
        }
        let link = self
            .store
            .get_link(id)
            .await
            .map_err(Self::page_store_error)?
            .ok_or(PageError::LinkUnknown)?;
        if link.expires_at_ms <= self.clock.now_ms() {
            return Err(PageError::LinkExpired);
        }
        Ok(link)
    }

    /// Uses a link up: exactly one caller gets it.
    pub async fn consume_link(&self, id: &str) -> Result<Link, PageError> {
        let peeked = self.peek_link(id).await?;
        match self.store.consume_link(id, self.clock.now_ms()).await {
            Ok(link) => Ok(link),
            Err(StoreError::Conflict(_)) => Err(if peeked.expires_at_ms <= self.clock.now_ms() {
                PageError::LinkExpired
            } else {
                PageError::LinkUnknown
            }),
            Err(e) => Err(Self::page_store_error(e)),
        }
    }

    /// `GET /connect/{id}` of an OAuth link: uses it and returns the provider's URL.
    pub async fn start_oauth(&self, id: &str) -> Result<String, PageError> {
        let link = self.consume_link(id).await?;
        let provider = self
            .provider(&link.app, &link.params)
            .map_err(|e| PageError::Invalid(e.to_string()))?;
        let state = random_token();
        let verifier = random_token();
        let verifier_sealed = self
            .sealer
            .seal(verifier.as_bytes(), "oauth#state")
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "cannot seal a PKCE verifier");
                PageError::Internal
            })?;
        let st = OAuthState {
            account_id: link.account_id,
            app: link.app,
            label: link.label,
            redirect_url: link.redirect_url,
            params: link.params,
            verifier_sealed,
            expires_at_ms: self.clock.now_ms() + STATE_TTL_MS,
        };
        self.store
            .put_state(&state, &st)
            .await
            .map_err(Self::page_store_error)?;
        provider
            .authorize(&self.config.callback_url(), &state, &verifier)
            .map_err(PageError::Invalid)
    }

    /// Uses up an OAuth state (any callback with it, success or not, ends the attempt).
    pub async fn take_state(&self, state: &str) -> Result<OAuthState, PageError> {
        if state.is_empty() || state.len() > 200 {
            return Err(PageError::StateUnknown);
        }
        match self.store.consume_state(state, self.clock.now_ms()).await {
            Ok(st) => Ok(st),
            Err(StoreError::Conflict(_)) => Err(PageError::StateUnknown),
            Err(e) => Err(Self::page_store_error(e)),
        }
    }

    /// `GET /oauth/callback` with a code: exchanges it and stores the connection.
    pub async fn finish_oauth(&self, st: &OAuthState, code: &str) -> Result<Connection, PageError> {
        let provider = self
            .provider(&st.app, &st.params)
            .map_err(|e| PageError::Invalid(e.to_string()))?;
        let verifier = self
            .sealer
            .open(&st.verifier_sealed, "oauth#state")
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "cannot open a PKCE verifier");
                PageError::Internal
            })?;
        let verifier = String::from_utf8(verifier).map_err(|_| PageError::Internal)?;
        let tokens = crate::oauth::exchange_code(
            &self.outbound,
            &provider,
            code,
            &self.config.callback_url(),
            &verifier,
        )
        .await
        .map_err(|e| {
            tracing::warn!(app = %st.app, error = %e, "authorization code exchange failed");
            match e {
                TokenError::InvalidGrant(_) => {
                    PageError::Provider("the sign-in code was refused; start again".into())
                }
                other => PageError::Provider(other.to_string()),
            }
        })?;
        let now = self.clock.now_ms();
        let secret = Secret {
            access_token: Some(tokens.access_token.clone()),
            refresh_token: tokens.refresh_token.clone(),
            ..Secret::default()
        };
        let conn = Connection {
            id: new_connection_id(now),
            account_id: st.account_id.clone(),
            app: st.app.clone(),
            label: st.label.clone(),
            identity: tokens.identity.clone(),
            status: ConnStatus::Active,
            auth: AuthMethod::OAuth2,
            created_at_ms: now,
            token_expires_ms: tokens.expires_in_s.map(|s| now + s * 1000),
            version: 0,
            sealed: None,
            params: st.params.clone(),
        };
        self.store_new(conn, &secret).await
    }

    /// `POST /connect/{id}` of a key or password link.
    pub async fn finish_form(&self, id: &str, secret: Secret) -> Result<Connection, PageError> {
        let link = self.consume_link(id).await?;
        let now = self.clock.now_ms();
        let conn = Connection {
            id: new_connection_id(now),
            account_id: link.account_id,
            app: link.app,
            label: link.label.clone(),
            identity: match link.auth {
                AuthMethod::Basic => secret.username.clone(),
                _ => None,
            }
            .or(link.label),
            status: ConnStatus::Active,
            auth: link.auth,
            created_at_ms: now,
            token_expires_ms: None,
            version: 0,
            sealed: None,
            params: link.params,
        };
        self.store_new(conn, &secret).await
    }

    async fn store_new(
        &self,
        mut conn: Connection,
        secret: &Secret,
    ) -> Result<Connection, PageError> {
        let plain = serde_json::to_vec(secret).map_err(|_| PageError::Internal)?;
        conn.sealed = Some(
            self.sealer
                .seal(&plain, &conn.context())
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "cannot seal connection secrets");
                    PageError::Internal
                })?,
        );
        self.store
            .put_connection(&conn)
            .await
            .map_err(Self::page_store_error)?;
        tracing::info!(account = %conn.account_id, app = %conn.app, connection = %conn.id,
                       auth = conn.auth.as_str(), "connection created");
        Ok(conn)
    }
}
