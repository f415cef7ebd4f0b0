//! Hand-made naming data: provider families and aliases that titles do not yield.

/// A provider hosting many services under one brand.
pub struct Family {
    pub provider: &'static str,
    /// Prefix of its app ids.
    pub id: &'static str,
    /// Names people put before a service name ("google sheets", "aws s3").
    pub names: &'static [&'static str],
}

const FAMILIES: &[Family] = &[
    Family {
        provider: "googleapis.com",
        id: "google",
        names: &["google"],
    },
    Family {
        provider: "amazonaws.com",
        id: "aws",
        names: &["aws", "amazon"],
    },
    Family {
        provider: "azure.com",
        id: "azure",
        names: &["azure"],
    },
    Family {
        provider: "microsoft.com",
        id: "microsoft",
        names: &["microsoft"],
    },
];

pub fn family(provider: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.provider == provider)
}

/// Ids chosen by hand where the rule gives a misleading one: `github.com` holds both GitHub's
/// REST API (as service `api.github.com`) and an unrelated top-level spec (Eqivo).
const IDS: &[(&str, Option<&str>, &str)] = &[
    ("github.com", Some("api.github.com"), "github"),
    ("github.com", None, "eqivo"),
];

pub fn id_override(provider: &str, service: Option<&str>) -> Option<&'static str> {
    IDS.iter()
        .find(|(p, s, _)| *p == provider && *s == service)
        .map(|(_, _, id)| *id)
}

/// Shared hosting domains: the app's name is the first label (`cnab-online.herokuapp.com`).
pub const HOSTING_SUFFIXES: &[&str] = &[
    "github.io",
    "herokuapp.com",
    "appspot.com",
    "azurewebsites.net",
    "netlify.app",
    "vercel.app",
    "gitlab.io",
    "apiary.io",
    "readme.io",
    "web.app",
    "firebaseapp.com",
];

/// Everyday names of apps whose titles and service ids do not contain them.
const EXTRA: &[(&str, &[&str])] = &[];

pub fn extra(app_id: &str) -> &'static [&'static str] {
    EXTRA
        .iter()
        .find(|(id, _)| *id == app_id)
        .map(|(_, a)| *a)
        .unwrap_or(&[])
}
