//! Request routing for the public site.

use crate::problem::Problem;
use crate::reply::Reply;

const HOME: &str = "# Presence sensing\n\nWi-Fi presence, motion and breathing sensing that runs on your own computer.\n\nMachine-readable entry points for agents are listed at /agent/site.json.\n";

/// Routes one request by method and path.
pub fn route(method: &str, path: &str) -> Reply {
    match (method, path) {
        ("GET" | "HEAD", "/") => Reply::new(200, "text/markdown; charset=utf-8", HOME),
        (_, "/") => Problem::new(
            405,
            "Method Not Allowed",
            format!("{method} is not supported here; use GET."),
        )
        .into_reply()
        .with_header("allow", "GET, HEAD"),
        _ => Problem::new(404, "Not Found", format!("No page at {path}.")).into_reply(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_is_markdown() {
        let r = route("GET", "/");
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-type"),
            Some("text/markdown; charset=utf-8")
        );
        assert!(String::from_utf8_lossy(&r.body).starts_with("# Presence sensing"));
    }

    #[test]
    fn unknown_path_is_a_problem() {
        let r = route("GET", "/nope");
        assert_eq!(r.status, 404);
        assert_eq!(r.header("content-type"), Some(crate::problem::CONTENT_TYPE));
        let v: serde_json::Value = serde_json::from_slice(&r.body).expect("json body");
        assert_eq!(v["status"], 404);
        assert_eq!(v["title"], "Not Found");
    }

    #[test]
    fn wrong_method_names_the_allowed_ones() {
        let r = route("POST", "/");
        assert_eq!(r.status, 405);
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
    }
}
