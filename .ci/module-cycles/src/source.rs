//! Blanks comments and literals out of Rust source, so the scanners after this one see only code.
//!
//! Every blanked byte becomes a space (newlines stay), so offsets and line numbers of the result
//! are those of the original text, and a `#[path = "…"]` value can still be read from the
//! original at the same place.

/// `src` with comments, string, byte-string, raw-string and char literals replaced by spaces
/// (their quotes kept).
pub fn blank(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = find(b, i, b"\n").unwrap_or(b.len());
                blank_range(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = block_comment_end(b, i);
                blank_range(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let end = quoted_end(b, i + 1, b'"');
                blank_range(&mut out, i + 1, end.saturating_sub(1));
                i = end;
            }
            b'\'' => i = char_or_lifetime(b, &mut out, i),
            c if is_ident_start(c) => {
                let start = i;
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
                let ident = &b[start..i];
                if matches!(ident, b"r" | b"br" | b"cr")
                    && let Some(end) = raw_string_end(b, i)
                {
                    blank_range(&mut out, i, end);
                    i = end;
                } else if ident == b"b" && b.get(i) == Some(&b'\'') {
                    let end = quoted_end(b, i + 1, b'\'');
                    blank_range(&mut out, i + 1, end.saturating_sub(1));
                    i = end;
                }
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were written over whole UTF-8 sequences, so this cannot fail.
    String::from_utf8(out).unwrap_or_default()
}

pub fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

pub fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// Blanks `b[start..end]`, keeping newlines.
fn blank_range(out: &mut [u8], start: usize, end: usize) {
    for c in out.iter_mut().take(end).skip(start) {
        if *c != b'\n' {
            *c = b' ';
        }
    }
}

/// The end (exclusive) of a nested `/* … */` comment starting at `start`.
fn block_comment_end(b: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The index just past the closing `quote` of a literal whose body starts at `i`, honouring
/// backslash escapes.
fn quoted_end(b: &[u8], mut i: usize, quote: u8) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// For `r`, `br` or `cr` just read, with `i` after it: the end of the raw string's body (before
/// its closing quote and hashes) when one starts here.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
    if b.get(i + hashes) != Some(&b'"') {
        return None;
    }
    let body = i + hashes + 1;
    let mut closing = vec![b'"'];
    closing.extend(std::iter::repeat_n(b'#', hashes));
    Some(find(b, body, &closing).map_or(b.len(), |end| end + closing.len()))
}

/// At a `'`: blanks a char literal and returns the index after it, or steps over the quote of a
/// lifetime or label.
fn char_or_lifetime(b: &[u8], out: &mut [u8], i: usize) -> usize {
    if b.get(i + 1) == Some(&b'\\') {
        let end = quoted_end(b, i + 1, b'\'');
        blank_range(out, i + 1, end.saturating_sub(1));
        return end;
    }
    // One character (a UTF-8 sequence) followed by a quote is a char literal.
    let len = match b.get(i + 1) {
        Some(c) if *c < 0x80 => 1,
        Some(c) if *c >= 0xf0 => 4,
        Some(c) if *c >= 0xe0 => 3,
        Some(_) => 2,
        None => return i + 1,
    };
    if b.get(i + 1 + len) == Some(&b'\'') {
        blank_range(out, i + 1, i + 1 + len);
        return i + 2 + len;
    }
    i + 1
}

#[cfg(test)]
mod tests {
    use super::blank;

    #[test]
    fn comments_and_literals_are_blanked_in_place() {
        let src = "use a::b; // use crate::x;\n/* crate::y /* nested */ */ let s = \"crate::z\";";
        let out = blank(src);
        assert_eq!(out.len(), src.len());
        assert!(out.starts_with("use a::b;"));
        assert!(!out.contains("crate"), "{out}");
        assert_eq!(out.matches('\n').count(), 1);
    }

    #[test]
    fn raw_strings_chars_and_lifetimes() {
        let out = blank(
            r####"let a = r#"crate::x "quoted""#; let c = '"'; fn f<'a>(x: &'a str) { br"crate::y"; b'\''; '→'; }"####,
        );
        assert!(!out.contains("crate"), "{out}");
        assert!(out.contains("fn f<'a>(x: &'a str)"), "{out}");
        assert!(out.contains("let c = ' ';"), "{out}");
    }

    #[test]
    fn escaped_quotes_do_not_end_a_string() {
        let out = blank(r#"let s = "a\"crate::x\\"; use crate::y;"#);
        assert!(out.contains("use crate::y;"), "{out}");
        assert!(!out.contains("crate::x"), "{out}");
    }
}
