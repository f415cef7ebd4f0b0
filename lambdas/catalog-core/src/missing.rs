//! Services people ask for by name that the catalog does not have, and why. A request naming
//! one ("create a product in shopify") would otherwise be answered with whatever other app's
//! tools share its words (PayPal's products), which reads as if the catalog had Shopify. The
//! reasons are the ones `lambdas/catalog/eval/README.md` ("How the 50 most-requested services
//! were chosen") gives.

/// One missing service: the words that name it (lowercase, as `text::words` splits them), its
/// name and why it is missing.
pub struct Missing {
    pub words: &'static [&'static str],
    pub name: &'static str,
    pub reason: &'static str,
}

/// Names are distinctive words only: "monday" or "linear" alone are ordinary words of a request
/// ("schedule it for Monday"), so those two need their domain.
pub const MISSING: &[Missing] = &[
    Missing {
        words: &["shopify"],
        name: "Shopify",
        reason: "its Admin API is GraphQL only",
    },
    Missing {
        words: &["zendesk"],
        name: "Zendesk",
        reason: "the vendor's OpenAPI document is not published under a licence",
    },
    Missing {
        words: &["dropbox"],
        name: "Dropbox",
        reason: "its API is described in Stone, not OpenAPI",
    },
    Missing {
        words: &["airtable"],
        name: "Airtable",
        reason: "there is no vendor OpenAPI document",
    },
    Missing {
        words: &["salesforce"],
        name: "Salesforce",
        reason: "its OpenAPI document is generated per organisation",
    },
    Missing {
        words: &["quickbooks"],
        name: "QuickBooks",
        reason: "there is no vendor OpenAPI document",
    },
    Missing {
        words: &["calendly"],
        name: "Calendly",
        reason: "there is no vendor OpenAPI document",
    },
    Missing {
        words: &["typeform"],
        name: "Typeform",
        reason: "only an unlicensed third-party copy of its document exists",
    },
    Missing {
        words: &["linkedin"],
        name: "LinkedIn",
        reason: "there is no vendor OpenAPI document",
    },
    Missing {
        words: &["pagerduty"],
        name: "PagerDuty",
        reason: "the vendor's OpenAPI document has no licence",
    },
    Missing {
        words: &["todoist"],
        name: "Todoist",
        reason: "its API is published only on its documentation site",
    },
    Missing {
        words: &["confluence"],
        name: "Confluence",
        reason: "Atlassian's OpenAPI document declares no licence",
    },
    Missing {
        words: &["clickup"],
        name: "ClickUp",
        reason: "there is no published OpenAPI document",
    },
    Missing {
        words: &["monday", "com"],
        name: "monday.com",
        reason: "its API is GraphQL only",
    },
    Missing {
        words: &["linear", "app"],
        name: "Linear",
        reason: "its API is GraphQL only",
    },
];

/// A part of a service the catalog has only in part: requests about it, in that app, are
/// answered with the reason rather than the app's other tools.
pub struct MissingPart {
    /// The app's slug in the catalog.
    pub app: &'static str,
    /// Words of a request that ask for the missing part.
    pub words: &'static [&'static str],
    /// Words of what the app does have: a request with one of them is searched as usual
    /// ("subscribe a contact to a subscription type", "contacts who attended the event").
    pub except: &'static [&'static str],
    pub what: &'static str,
    pub reason: &'static str,
}

pub const MISSING_PARTS: &[MissingPart] = &[MissingPart {
    app: "hubspot",
    words: &[
        "contact",
        "contacts",
        "deal",
        "deals",
        "company",
        "companies",
    ],
    except: &[
        "subscribe",
        "unsubscribe",
        "subscription",
        "subscriptions",
        "event",
        "events",
        "attendance",
        "attended",
        "attend",
        "card",
        "cards",
        "file",
        "files",
        "folder",
        "folders",
        "webhook",
        "webhooks",
        "workflow",
        "workflows",
        "email",
        "emails",
        "timeline",
    ],
    what: "HubSpot's CRM (contacts, deals, companies)",
    reason: "its OpenAPI documents are proprietary; the catalog has HubSpot's files, marketing \
             events, webhooks and automation",
}];

/// The missing part of `app` a request asks for, if any.
pub fn part_named_in(app: &str, words: &[String]) -> Option<&'static MissingPart> {
    MISSING_PARTS.iter().find(|p| {
        p.app == app
            && words.iter().any(|w| p.words.contains(&w.as_str()))
            && !words.iter().any(|w| p.except.contains(&w.as_str()))
    })
}

/// What a search answers for a missing part.
pub fn part_hint(p: &MissingPart) -> String {
    unavailable(p.what, p.reason)
}

/// The answer for something the catalog lacks, and what to do instead.
fn unavailable(what: &str, reason: &str) -> String {
    format!(
        "{what} is not in the catalog: {reason}. Add it for your account as a custom connector \
         (its MCP server or an OpenAPI document: POST /api/v1/custom-connectors)."
    )
}

/// The missing service a request names, if any (the first in the request).
pub fn named_in(words: &[String]) -> Option<&'static Missing> {
    (0..words.len()).find_map(|i| {
        MISSING.iter().find(|m| {
            words.len() - i >= m.words.len()
                && m.words.iter().zip(&words[i..]).all(|(a, b)| *a == b)
        })
    })
}

/// What a search answers for it.
pub fn hint(m: &Missing) -> String {
    unavailable(m.name, m.reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text;

    #[test]
    fn a_missing_service_is_found_by_its_distinctive_name_only() {
        let named = |q: &str| named_in(&text::words(q)).map(|m| m.name);
        assert_eq!(named("create a product in Shopify"), Some("Shopify"));
        assert_eq!(named("add a board item on monday.com"), Some("monday.com"));
        assert_eq!(named("schedule the call for Monday"), None);
        assert_eq!(named("fit a linear regression"), None);
        assert_eq!(named("send a message on slack"), None);
    }

    #[test]
    fn a_missing_part_is_found_only_in_its_app() {
        let part = |app: &str, q: &str| part_named_in(app, &text::words(q)).map(|p| p.app);
        assert_eq!(
            part("hubspot", "create a contact in hubspot"),
            Some("hubspot")
        );
        assert_eq!(part("hubspot", "upload a file to hubspot"), None);
        assert_eq!(
            part(
                "hubspot",
                "subscribe a contact to a subscription type in hubspot"
            ),
            None
        );
        assert_eq!(part("hubspot", "create a crm card in hubspot"), None);
        assert_eq!(part("intercom", "create a contact in intercom"), None);
    }
}
