//! The commerce protocols' discovery documents: the UCP business profile (`/.well-known/ucp`)
//! and the ACP manifest (`/.well-known/acp.json`).

use crate::meta::{ACP_BASE, ACP_VERSIONS, UCP_BASE, UCP_VERSION};
use serde_json::{Value, json};

/// `/.well-known/ucp`: the UCP 2026-04-08 business profile (REST transport only; our MCP tools
/// are not UCP's, so the `mcp` transport is not advertised). Payment happens on Stripe's hosted
/// page, so there are no payment handlers.
pub fn ucp_profile(base: &str) -> Value {
    let v = UCP_VERSION;
    json!({"ucp": {
        "version": v,
        "payment_handlers": {},
        "services": {"dev.ucp.shopping": [{
            "version": v,
            "transport": "rest",
            "endpoint": format!("{base}{}", UCP_BASE),
            "spec": format!("https://ucp.dev/{v}/specification/overview"),
            "schema": format!("https://ucp.dev/{v}/services/shopping/rest.openapi.json"),
        }]},
        "capabilities": {"dev.ucp.shopping.checkout": [{
            "version": v,
            "spec": format!("https://ucp.dev/{v}/specification/checkout"),
            "schema": format!("https://ucp.dev/{v}/schemas/shopping/checkout.json"),
        }]},
    }})
}

/// `/.well-known/acp.json`: versions oldest first, REST only (our MCP tools are not ACP's
/// `*_checkout_session` tools), no payment configuration.
pub fn acp_manifest(base: &str) -> Value {
    let versions = ACP_VERSIONS;
    json!({
        "protocol": {
            "name": "acp",
            "version": versions.last().copied().unwrap_or_default(),
            "supported_versions": versions,
        },
        "api_base_url": format!("{base}{}", ACP_BASE),
        "transports": ["rest"],
        "capabilities": {"services": ["checkout"]},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commerce_documents_follow_the_notes() {
        let ucp = ucp_profile("https://x.test");
        assert_eq!(ucp["ucp"]["version"], "2026-04-08");
        assert_eq!(ucp["ucp"]["payment_handlers"], json!({}));
        assert_eq!(
            ucp["ucp"]["services"]["dev.ucp.shopping"][0]["endpoint"],
            "https://x.test/agent/commerce/ucp"
        );
        let acp = acp_manifest("https://x.test");
        assert_eq!(acp["protocol"]["supported_versions"][0], "2025-09-29");
        assert_eq!(acp["protocol"]["version"], "2026-04-17");
        assert_eq!(acp["capabilities"]["services"], json!(["checkout"]));
    }
}
