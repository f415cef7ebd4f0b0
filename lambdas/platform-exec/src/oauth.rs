//! The OAuth token endpoint calls: exchanging an authorization code (with the PKCE verifier) and
//! refreshing a token, through the SSRF-guarded client, and asking an OpenID Connect userinfo
//! endpoint who the account is. Reading the answers is the domain's (`platform_domain::oauth`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use platform_domain::oauth::{
    Provider, TokenAuth, TokenError, TokenSet, identity_from_claims, parse_tokens,
};
use serde_json::Value;

use crate::outbound::{Outbound, OutboundError};

fn form_encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// One call to the token endpoint with the client's authentication.
async fn token_call(
    outbound: &Outbound,
    provider: &Provider,
    mut form: Vec<(&str, String)>,
) -> Result<TokenSet, TokenError> {
    let config = &provider.config;
    let mut req = outbound
        .client()
        .post(&provider.token_url)
        .header(http::header::ACCEPT, "application/json");
    match (config.token_auth, &config.client_secret) {
        (TokenAuth::ClientSecretBasic, Some(secret)) => {
            let pair = format!("{}:{}", form_encode(&config.client_id), form_encode(secret));
            req = req.header(
                http::header::AUTHORIZATION,
                format!("Basic {}", STANDARD.encode(pair)),
            );
        }
        (TokenAuth::ClientSecretPost, Some(secret)) => {
            form.push(("client_id", config.client_id.clone()));
            form.push(("client_secret", secret.clone()));
        }
        // A public client identifies itself in the body.
        (_, None) => form.push(("client_id", config.client_id.clone())),
    }
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let req = req
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body);
    let resp = outbound.send(req).await.map_err(|e| match e {
        OutboundError::Refused { reason, .. } => TokenError::Refused(reason),
        OutboundError::InvalidUrl(u) => TokenError::Refused(u),
        OutboundError::Timeout => TokenError::Transient("timeout".into()),
        OutboundError::TooLarge { limit } => {
            TokenError::Malformed(format!("response larger than {limit} bytes"))
        }
        OutboundError::Network(e) => TokenError::Transient(e),
    })?;
    let parsed: Option<Value> = serde_json::from_slice(&resp.body).ok().or_else(|| {
        // A few providers answer form-encoded whatever the Accept header says.
        let pairs: serde_json::Map<String, Value> = form_urlencoded::parse(&resp.body)
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect();
        (!pairs.is_empty()).then_some(Value::Object(pairs))
    });
    if resp.status >= 500 || resp.status == 429 {
        return Err(TokenError::Transient(format!("HTTP {}", resp.status)));
    }
    let body = parsed.unwrap_or(Value::Null);
    // Errors come as 400/401 with `error`; some providers (Slack) answer 200 with `error`.
    if let Some(err) = body.get("error").and_then(Value::as_str) {
        if err == "invalid_grant" {
            let why = body
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            return Err(TokenError::InvalidGrant(why));
        }
        return Err(TokenError::Rejected {
            status: resp.status,
            error: err.chars().take(100).collect(),
        });
    }
    if !(200..300).contains(&resp.status) {
        return Err(TokenError::Rejected {
            status: resp.status,
            error: "no error code".into(),
        });
    }
    parse_tokens(config, &body)
}

/// Exchanges an authorization code (with the PKCE verifier when PKCE is on).
pub async fn exchange_code(
    outbound: &Outbound,
    provider: &Provider,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<TokenSet, TokenError> {
    let mut form = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code.to_owned()),
        ("redirect_uri", redirect_uri.to_owned()),
    ];
    if provider.config.pkce {
        form.push(("code_verifier", verifier.to_owned()));
    }
    let mut tokens = token_call(outbound, provider, form).await?;
    if tokens.identity.is_none()
        && let Some(url) = &provider.config.userinfo_url
    {
        tokens.identity = userinfo(outbound, url, &tokens.access_token).await;
    }
    Ok(tokens)
}

/// Uses a refresh token. A provider that rotates refresh tokens returns a new one.
pub async fn refresh(
    outbound: &Outbound,
    provider: &Provider,
    refresh_token: &str,
) -> Result<TokenSet, TokenError> {
    token_call(
        outbound,
        provider,
        vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.to_owned()),
        ],
    )
    .await
}

/// The account's display name from an OIDC userinfo endpoint; `None` on any failure (the label
/// stands in then).
async fn userinfo(outbound: &Outbound, url: &str, access_token: &str) -> Option<String> {
    let req = outbound
        .client()
        .get(url)
        .bearer_auth(access_token)
        .header(http::header::ACCEPT, "application/json");
    match outbound.send(req).await {
        Ok(r) if (200..300).contains(&r.status) => serde_json::from_slice::<Value>(&r.body)
            .ok()
            .and_then(|v| identity_from_claims(&v)),
        Ok(r) => {
            tracing::warn!(status = r.status, "userinfo endpoint refused");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "userinfo endpoint unreachable");
            None
        }
    }
}
