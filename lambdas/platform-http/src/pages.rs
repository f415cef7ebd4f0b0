//! The hosted connect pages: `GET|POST /connect/{link id}` and `GET /oauth/callback`.
//!
//! Plain HTML without scripts, every interpolated value escaped. No cookies and no session:
//! the link id in the URL is the single-use secret (so a forged cross-site POST needs the very
//! secret it would steal), the OAuth `state` is a second single-use secret bound server-side to
//! the PKCE verifier. Pages are `no-store`, `no-referrer` and may not be framed.

use std::collections::BTreeMap;

use http::{Method, StatusCode};

use platform_domain::connections::{AuthMethod, Connection, PageError, Secret};
use platform_exec::connections::Connections;

/// Largest form accepted on the hosted page.
const MAX_FORM: usize = 16 * 1024;
/// Longest pasted key, user name or password.
const MAX_SECRET: usize = 4096;

/// An answer of the hosted pages.
#[derive(Debug)]
pub struct Page {
    pub status: StatusCode,
    /// Redirect target, for 302/303.
    pub location: Option<String>,
    pub html: String,
}

/// Headers every hosted page carries.
pub const PAGE_HEADERS: &[(&str, &str)] = &[
    ("cache-control", "no-store"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
    ),
];

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;\
padding:0 1rem;line-height:1.5;color:#1a1a1a}label{display:block;margin-top:1rem;font-weight:600}\
input{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}button{margin-top:1.5rem;\
padding:.6rem 1.2rem;font-size:1rem}.error{color:#a00000}";

/// A whole document; `title` and `body` must already be escaped HTML.
fn document(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}\n\
         </main>\n</body>\n</html>\n"
    )
}

fn page(status: StatusCode, title: &str, body: &str) -> Page {
    Page {
        status,
        location: None,
        html: document(&escape(title), body),
    }
}

fn redirect(status: StatusCode, to: String) -> Page {
    let html = document(
        "Redirecting",
        &format!("<p>Continue to <a href=\"{0}\">{0}</a>.</p>", escape(&to)),
    );
    Page {
        status,
        location: Some(to),
        html,
    }
}

fn error_page(e: &PageError) -> Page {
    let status = match e {
        PageError::LinkUnknown => StatusCode::NOT_FOUND,
        PageError::LinkExpired => StatusCode::GONE,
        PageError::StateUnknown | PageError::Invalid(_) => StatusCode::BAD_REQUEST,
        PageError::Denied(_) => StatusCode::FORBIDDEN,
        PageError::Provider(_) => StatusCode::BAD_GATEWAY,
        PageError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    };
    page(
        status,
        "Connection failed",
        &format!(
            "<h1>Connection failed</h1>\n<p class=\"error\" role=\"alert\">{}</p>\n\
             <p>Nothing was stored. Ask the app that sent you here for a new connect link.</p>",
            escape(&e.to_string())
        ),
    )
}

/// `redirect_url` with `status` and more query parameters appended.
fn back_to(redirect_url: &str, pairs: &[(&str, &str)]) -> Option<String> {
    // Checked again here, not only when the link was made: a stored URL never redirects
    // anywhere the current rule refuses.
    let mut u = platform_domain::connections::check_redirect_url(redirect_url).ok()?;
    {
        let mut q = u.query_pairs_mut();
        for (k, v) in pairs {
            q.append_pair(k, v);
        }
    }
    Some(u.into())
}

fn success(conns: &Connections, c: &Connection, redirect_url: Option<&str>) -> Page {
    if let Some(to) = redirect_url.and_then(|r| {
        back_to(
            r,
            &[("status", "success"), ("connection_id", c.id.as_str())],
        )
    }) {
        return redirect(StatusCode::SEE_OTHER, to);
    }
    let name = conns.app_name(&c.app);
    let who = c
        .identity
        .as_deref()
        .or(c.label.as_deref())
        .map(|i| format!(" as <strong>{}</strong>", escape(i)))
        .unwrap_or_default();
    page(
        StatusCode::OK,
        "Connected",
        &format!(
            "<h1>{} is connected</h1>\n<p role=\"status\">Connected{who}. Connection id: \
             <code>{}</code>.</p>\n<p>You can close this page and go back to your app.</p>",
            escape(&name),
            escape(&c.id)
        ),
    )
}

fn failure_redirect(redirect_url: Option<&str>, code: &str) -> Option<Page> {
    redirect_url
        .and_then(|r| back_to(r, &[("status", "error"), ("error", code)]))
        .map(|to| redirect(StatusCode::SEE_OTHER, to))
}

fn form_page(conns: &Connections, app: &str, auth: AuthMethod, error: Option<&str>) -> Page {
    let name = escape(&conns.app_name(app));
    let alert = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(e)))
        .unwrap_or_default();
    let fields = match auth {
        AuthMethod::Basic => "<label for=\"username\">User name</label>\n\
             <input id=\"username\" name=\"username\" autocomplete=\"username\" required>\n\
             <label for=\"password\">Password</label>\n\
             <input id=\"password\" name=\"password\" type=\"password\" \
             autocomplete=\"current-password\" required>"
            .to_owned(),
        _ => "<label for=\"api_key\">API key</label>\n\
             <input id=\"api_key\" name=\"api_key\" type=\"password\" autocomplete=\"off\" \
             spellcheck=\"false\" required>"
            .to_owned(),
    };
    // An empty action posts back to this very URL, link id included.
    page(
        if error.is_some() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::OK
        },
        &format!("Connect {}", conns.app_name(app)),
        &format!(
            "<h1>Connect {name}</h1>\n{alert}<p>Your credentials are encrypted and used only to \
             call {name} for you. This link works once.</p>\n\
             <form method=\"post\" action=\"\">\n{fields}\n\
             <button type=\"submit\">Connect {name}</button>\n</form>"
        ),
    )
}

fn form_fields(body: &[u8]) -> BTreeMap<String, String> {
    form_urlencoded::parse(body).into_owned().collect()
}

/// The consent page of an OAuth link: `GET` only shows it, so a link previewer (chat apps,
/// mail scanners) that fetches the URL does not use the link up; the button's `POST` does.
fn consent_page(conns: &Connections, app: &str) -> Page {
    let name = escape(&conns.app_name(app));
    page(
        StatusCode::OK,
        &format!("Connect {}", conns.app_name(app)),
        &format!(
            "<h1>Connect {name}</h1>\n<p>You will sign in to {name} and allow access there. \
             This link works once.</p>\n<form method=\"post\" action=\"\">\n\
             <button type=\"submit\">Continue to {name}</button>\n</form>"
        ),
    )
}

/// What the browser says about where a form submission came from.
#[derive(Debug, Default, Clone, Copy)]
pub struct Provenance<'a> {
    /// The `Origin` header.
    pub origin: Option<&'a str>,
    /// The `Sec-Fetch-Site` header.
    pub fetch_site: Option<&'a str>,
}

impl Provenance<'_> {
    /// A POST from another site. Our own form posts same-origin; under `no-referrer` browsers
    /// send `Origin: null` for it, so `null` passes, and so does a client that sends neither
    /// header (the link id is the secret either way; this refuses pages that hold it and try to
    /// submit it from elsewhere, e.g. after a leak through a previewer).
    fn cross_site(&self, own_origin: &str) -> bool {
        let foreign_origin = self
            .origin
            .is_some_and(|o| o != "null" && !o.eq_ignore_ascii_case(own_origin));
        let foreign_fetch = self
            .fetch_site
            .is_some_and(|s| !matches!(s, "same-origin" | "none"));
        foreign_origin || foreign_fetch
    }
}

/// Answers a hosted route; `None` when the path is not one of them.
pub async fn handle(
    conns: &Connections,
    method: &Method,
    path: &str,
    query: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
    from: Provenance<'_>,
) -> Option<Page> {
    if path == "/oauth/callback" {
        if method != Method::GET {
            return Some(page(
                StatusCode::METHOD_NOT_ALLOWED,
                "Not allowed",
                "<p>This address takes GET only.</p>",
            ));
        }
        return Some(callback(conns, query.unwrap_or("")).await);
    }
    let id = path.strip_prefix("/connect/")?;
    if id.is_empty() || id.contains('/') {
        return Some(error_page(&PageError::LinkUnknown));
    }
    Some(match *method {
        Method::GET => match conns.peek_link(id).await {
            Err(e) => error_page(&e),
            Ok(link) if link.auth == AuthMethod::OAuth2 => consent_page(conns, &link.app),
            Ok(link) => form_page(conns, &link.app, link.auth, None),
        },
        Method::POST if from.cross_site(&conns.public_origin()) => page(
            StatusCode::FORBIDDEN,
            "Not allowed",
            "<h1>Not allowed</h1>\n<p class=\"error\" role=\"alert\">This form can only be \
             submitted from its own page.</p>",
        ),
        Method::POST => submit(conns, id, content_type, body).await,
        _ => page(
            StatusCode::METHOD_NOT_ALLOWED,
            "Not allowed",
            "<p>This address takes GET and POST only.</p>",
        ),
    })
}

async fn submit(conns: &Connections, id: &str, content_type: Option<&str>, body: &[u8]) -> Page {
    let link = match conns.peek_link(id).await {
        Ok(l) => l,
        Err(e) => return error_page(&e),
    };
    if link.auth == AuthMethod::OAuth2 {
        // The consent page's button: the link is used up here, not by the GET.
        return match conns.start_oauth(id).await {
            Ok(to) => redirect(StatusCode::SEE_OTHER, to),
            Err(e) => error_page(&e),
        };
    }
    let essence = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase());
    if essence.as_deref() != Some("application/x-www-form-urlencoded") || body.len() > MAX_FORM {
        return form_page(
            conns,
            &link.app,
            link.auth,
            Some("The form could not be read; submit it again."),
        );
    }
    let fields = form_fields(body);
    let get = |k: &str| {
        fields
            .get(k)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let secret = match link.auth {
        AuthMethod::Basic => match (get("username"), fields.get("password")) {
            (Some(u), Some(p)) if !p.is_empty() => Secret {
                username: Some(u),
                password: Some(p.clone()),
                ..Secret::default()
            },
            _ => {
                return form_page(
                    conns,
                    &link.app,
                    link.auth,
                    Some("Enter both the user name and the password."),
                );
            }
        },
        _ => match get("api_key") {
            Some(k) => Secret {
                api_key: Some(k),
                ..Secret::default()
            },
            None => return form_page(conns, &link.app, link.auth, Some("Enter the API key.")),
        },
    };
    if [&secret.api_key, &secret.username, &secret.password]
        .iter()
        .any(|v| {
            v.as_ref()
                .is_some_and(|v| v.len() > MAX_SECRET || v.contains(['\r', '\n']))
        })
    {
        return form_page(
            conns,
            &link.app,
            link.auth,
            Some("That value is too long or has line breaks; paste it again."),
        );
    }
    match conns.finish_form(id, secret).await {
        Ok(c) => success(conns, &c, link.redirect_url.as_deref()),
        Err(e) => error_page(&e),
    }
}

async fn callback(conns: &Connections, query: &str) -> Page {
    let q: BTreeMap<String, String> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let Some(state) = q.get("state") else {
        return error_page(&PageError::StateUnknown);
    };
    // Whatever the outcome, the state is used up here: a replayed callback finds nothing.
    let st = match conns.take_state(state).await {
        Ok(st) => st,
        Err(e) => return error_page(&e),
    };
    if let Some(err) = q.get("error") {
        let code: String = err
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        tracing::info!(app = %st.app, error = %code, "provider denied the connection");
        if let Some(p) = failure_redirect(st.redirect_url.as_deref(), &code) {
            return p;
        }
        let why = if code == "access_denied" {
            "access was not granted".to_owned()
        } else {
            code
        };
        return error_page(&PageError::Denied(why));
    }
    let Some(code) = q.get("code").filter(|c| !c.is_empty() && c.len() <= 2048) else {
        return error_page(&PageError::Invalid(
            "The app sent no authorization code.".into(),
        ));
    };
    match conns.finish_oauth(&st, code).await {
        Ok(c) => success(conns, &c, st.redirect_url.as_deref()),
        Err(e) => failure_redirect(st.redirect_url.as_deref(), "connection_failed")
            .unwrap_or_else(|| error_page(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    #[test]
    fn redirects_keep_existing_query_parameters() {
        assert_eq!(
            back_to(
                "https://app.example.com/done?x=1",
                &[("status", "success"), ("connection_id", "conn_1")]
            )
            .unwrap(),
            "https://app.example.com/done?x=1&status=success&connection_id=conn_1"
        );
    }
}
