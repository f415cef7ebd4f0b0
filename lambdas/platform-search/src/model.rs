//! The vocabulary every part of the catalog shares: HTTP methods and credential schemes. A leaf:
//! the artifact (`catalog`), the text rules (`search::text`) and the OpenAPI reader (`derive`)
//! all use it, and it uses none of them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthScheme {
    /// The key in `components.securitySchemes`.
    pub name: String,
    pub kind: AuthKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AuthKind {
    /// A key sent as header, query parameter or cookie named `param`.
    ApiKey {
        location: String,
        param: String,
    },
    /// HTTP auth: `basic`, `bearer`, …
    Http {
        scheme: String,
    },
    OAuth2 {
        flows: Vec<OAuthFlow>,
    },
    OpenIdConnect {
        url: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthFlow {
    /// `authorizationCode`, `implicit`, `clientCredentials` or `password`.
    pub flow: String,
    pub authorization_url: Option<String>,
    pub token_url: Option<String>,
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
    Head,
    Options,
    Trace,
}

impl Method {
    pub fn parse(s: &str) -> Option<Method> {
        Some(match s {
            "get" => Method::Get,
            "post" => Method::Post,
            "put" => Method::Put,
            "patch" => Method::Patch,
            "delete" => Method::Delete,
            "head" => Method::Head,
            "options" => Method::Options,
            "trace" => Method::Trace,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Head => "HEAD",
            Method::Options => "OPTIONS",
            Method::Trace => "TRACE",
        }
    }
}
