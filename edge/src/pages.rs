//! The site's pages: Markdown files under `edge/site/`, compiled into the Worker so a page read
//! never needs storage or I/O, with their front matter (`title`, `description`) parsed once.

use std::sync::OnceLock;

/// One site page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// URL path, e.g. `/pricing`; the home page is `/`.
    pub path: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The Markdown body without its front matter.
    pub markdown: &'static str,
}

/// (URL path, file contents). Keep in step with `edge/site/`: a test fails when a file is missing
/// from this list.
const SOURCES: &[(&str, &str)] = &[
    ("/", include_str!("../site/index.md")),
    ("/product", include_str!("../site/product.md")),
    ("/how-it-works", include_str!("../site/how-it-works.md")),
    (
        "/docs/local-engine-api",
        include_str!("../site/docs/local-engine-api.md"),
    ),
    (
        "/docs/sensor-hub",
        include_str!("../site/docs/sensor-hub.md"),
    ),
    (
        "/docs/away-alerts-setup",
        include_str!("../site/docs/away-alerts-setup.md"),
    ),
    (
        "/docs/companion-platform",
        include_str!("../site/docs/companion-platform.md"),
    ),
    ("/pricing", include_str!("../site/pricing.md")),
    ("/privacy", include_str!("../site/privacy.md")),
    ("/support", include_str!("../site/support.md")),
    ("/safety", include_str!("../site/safety.md")),
];

/// Every page, in site order.
pub fn all() -> &'static [Page] {
    static PAGES: OnceLock<Vec<Page>> = OnceLock::new();
    PAGES.get_or_init(|| {
        SOURCES
            .iter()
            .map(|(path, text)| parse(path, text))
            .collect()
    })
}

/// The page at `path`, accepting a trailing slash (`/pricing/`) as the same page.
pub fn find(path: &str) -> Option<&'static Page> {
    let trimmed = match path.trim_end_matches('/') {
        "" => "/",
        p => p,
    };
    all().iter().find(|p| p.path == trimmed)
}

/// Splits `---` front matter from the body. A file without front matter gets its first `# `
/// heading as title, so a missing header degrades instead of failing the build.
fn parse(path: &'static str, text: &'static str) -> Page {
    let mut title = "";
    let mut description = "";
    let mut markdown = text;
    if let Some(rest) = text.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---\n")
    {
        for line in rest[..end].lines() {
            if let Some((key, value)) = line.split_once(':') {
                match key.trim() {
                    "title" => title = value.trim(),
                    "description" => description = value.trim(),
                    _ => {}
                }
            }
        }
        markdown = &rest[end + "\n---\n".len()..];
    }
    if title.is_empty() {
        title = markdown
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .unwrap_or(path);
    }
    Page {
        path,
        title,
        description,
        markdown,
    }
}

/// The page as a small standalone HTML document, for browsers and crawlers that do not ask for
/// Markdown. The Markdown stays the source; the HTML is derived from it on each request.
pub fn to_html(page: &Page) -> String {
    let mut body = String::with_capacity(page.markdown.len() * 2);
    let parser =
        pulldown_cmark::Parser::new_ext(page.markdown, pulldown_cmark::Options::ENABLE_TABLES);
    pulldown_cmark::html::push_html(&mut body, parser);
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<meta name=\"description\" content=\"{description}\">\n\
         <link rel=\"alternate\" type=\"text/markdown\" href=\"{path}\">\n\
         </head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        title = escape(page.title),
        description = escape(page.description),
        path = escape(page.path),
    )
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_title_description_and_body() {
        for p in all() {
            assert!(!p.title.is_empty(), "{} has no title", p.path);
            assert!(!p.description.is_empty(), "{} has no description", p.path);
            assert!(p.markdown.trim_start().starts_with("# "), "{} body", p.path);
        }
    }

    #[test]
    fn every_site_file_is_compiled_in() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).expect("site dir") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "md") {
                    out.push(path.display().to_string());
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
        let mut files = Vec::new();
        walk(&root, &mut files);
        assert_eq!(
            files.len(),
            SOURCES.len(),
            "site files vs SOURCES: {files:?}"
        );
    }

    #[test]
    fn find_accepts_trailing_slash() {
        assert_eq!(find("/pricing/").map(|p| p.path), Some("/pricing"));
        assert_eq!(find("/").map(|p| p.path), Some("/"));
        assert!(find("/nope").is_none());
    }

    #[test]
    fn html_escapes_front_matter_and_renders_tables() {
        let page = Page {
            path: "/x",
            title: "A <b> & \"c\"",
            description: "d",
            markdown: "# H\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        };
        let html = to_html(&page);
        assert!(html.contains("<title>A &lt;b&gt; &amp; &quot;c&quot;</title>"));
        assert!(html.contains("<table>"));
    }
}
