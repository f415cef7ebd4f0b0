//! Plain text from the HTML and Markdown fragments in OpenAPI descriptions
//! (`<p>Create a refund.</p>`, `[ISO code](https://…)`).

pub fn plain_text(s: &str) -> String {
    let once = pass(s);
    // Entity-encoded markup (`&lt;p&gt;`) becomes tags in the first pass.
    if once.contains('<') {
        pass(&once)
    } else {
        once
    }
}

/// One pass over the characters, tags, entities and Markdown links handled as they come. One
/// loop rather than a function per construct: they share the output buffer and the peekable
/// input, and the branches read best side by side.
fn pass(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '<' if chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!')) =>
            {
                // A tag if it looks like one (`<p>`, `</a>`, `<br/>`); a lone "<" stays.
                let mut tag = String::new();
                let mut closed = false;
                for t in chars.by_ref() {
                    if t == '>' {
                        closed = true;
                        break;
                    }
                    tag.push(t);
                    if tag.len() > 200 {
                        break;
                    }
                }
                let looks_like_tag = tag
                    .trim_start_matches('/')
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '!');
                if closed && looks_like_tag {
                    out.push(' ');
                } else {
                    out.push('<');
                    out.push_str(&tag);
                    if closed {
                        out.push('>');
                    }
                }
            }
            '&' => {
                let mut ent = String::new();
                while let Some(&n) = chars.peek() {
                    if n == ';' || ent.len() > 8 || !(n.is_ascii_alphanumeric() || n == '#') {
                        break;
                    }
                    ent.push(n);
                    chars.next();
                }
                match (chars.peek() == Some(&';'))
                    .then(|| decode_entity(&ent))
                    .flatten()
                {
                    Some(d) => {
                        chars.next();
                        out.push(d);
                    }
                    None => {
                        out.push('&');
                        out.push_str(&ent);
                    }
                }
            }
            // Markdown link: keep the text, drop the target.
            ']' if chars.peek() == Some(&'(') => {
                let mut depth = 0;
                for t in chars.by_ref() {
                    match t {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            '[' | '`' | '*' => {}
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn decode_entity(e: &str) -> Option<char> {
    Some(match e {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        _ => {
            let n = e.strip_prefix('#')?;
            let code = match n.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => n.parse().ok()?,
            };
            char::from_u32(code)?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::plain_text;

    #[test]
    fn html_and_markdown_become_plain_text() {
        assert_eq!(plain_text("<p>Create a refund.</p>"), "Create a refund.");
        assert_eq!(
            plain_text("Three-letter [ISO code](https://iso.org/(x)), in &quot;lowercase&quot;"),
            "Three-letter ISO code, in \"lowercase\""
        );
        assert_eq!(plain_text("a < b &amp;&#65; `c`"), "a < b &A c");
        assert_eq!(plain_text("line<br/>break\n\n  x"), "line break x");
    }
}
