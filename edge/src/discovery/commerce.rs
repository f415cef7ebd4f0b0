//! The commerce protocols' discovery documents: the UCP business profile (`/.well-known/ucp`)
//! and the ACP manifest (`/.well-known/acp.json`).

use crate::meta::{
    ACP_BASE, ACP_VERSIONS, UCP_BASE, UCP_PREVIOUS, UCP_PREVIOUS_PROFILE, UCP_VERSION,
};
use serde_json::{Value, json};

/// The UCP business profile for `version`: `/.well-known/ucp` for the current version (with
/// `supported_versions` naming the previous version's profile, UCP 2026-04-08 overview,
/// "Protocol Version"), and the previous version's leaf profile, which must not have
/// `supported_versions`. REST transport only (our MCP tools are not UCP's, so the `mcp`
/// transport is not advertised). Payment happens on Stripe's hosted page, so there are no
/// payment handlers.
pub fn ucp_profile(base: &str, version: &str) -> Value {
    let v = version;
    // The REST binding's OpenAPI document was renamed in 2026-04-08.
    let openapi = if v < UCP_VERSION {
        "openapi"
    } else {
        "rest.openapi"
    };
    let mut doc = json!({"ucp": {
        "version": v,
        "payment_handlers": {},
        "services": {"dev.ucp.shopping": [{
            "version": v,
            "transport": "rest",
            "endpoint": format!("{base}{}", UCP_BASE),
            "spec": format!("https://ucp.dev/{v}/specification/overview"),
            "schema": format!("https://ucp.dev/{v}/services/shopping/{openapi}.json"),
        }]},
        "capabilities": {"dev.ucp.shopping.checkout": [{
            "version": v,
            "spec": format!("https://ucp.dev/{v}/specification/checkout"),
            "schema": format!("https://ucp.dev/{v}/schemas/shopping/checkout.json"),
        }]},
    }});
    if v == UCP_VERSION {
        doc["ucp"]["supported_versions"] =
            json!({UCP_PREVIOUS: format!("{base}{UCP_PREVIOUS_PROFILE}")});
    }
    doc
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
        let ucp = ucp_profile("https://x.test", UCP_VERSION);
        assert_eq!(ucp["ucp"]["version"], "2026-04-08");
        assert_eq!(
            ucp["ucp"]["supported_versions"],
            json!({"2026-01-23": "https://x.test/.well-known/ucp/2026-01-23"})
        );
        assert_eq!(
            ucp["ucp"]["services"]["dev.ucp.shopping"][0]["schema"],
            "https://ucp.dev/2026-04-08/services/shopping/rest.openapi.json"
        );
        // The previous version's profile is a leaf: its own version everywhere, its own
        // OpenAPI document's name, and no supported_versions.
        let old = ucp_profile("https://x.test", UCP_PREVIOUS);
        assert_eq!(old["ucp"]["version"], "2026-01-23");
        assert!(old["ucp"].get("supported_versions").is_none());
        assert_eq!(
            old["ucp"]["services"]["dev.ucp.shopping"][0]["schema"],
            "https://ucp.dev/2026-01-23/services/shopping/openapi.json"
        );
        assert_eq!(
            old["ucp"]["capabilities"]["dev.ucp.shopping.checkout"][0]["version"],
            "2026-01-23"
        );
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
