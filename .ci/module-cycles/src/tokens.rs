//! A token stream over blanked source (see [`crate::source::blank`]): just enough of Rust's
//! lexical structure to find module declarations, `use` trees and paths.

use crate::source::{is_ident, is_ident_start};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Open,
    Close,
    Semi,
    Comma,
    Star,
    /// Any other punctuation byte.
    Punct(u8),
}

/// A token and the (1-based) line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
    /// Byte offset in the source.
    pub at: usize,
}

pub fn tokenize(blanked: &str) -> Vec<Token> {
    let b = blanked.as_bytes();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let at = i;
        let tok = match c {
            b'\n' => {
                line += 1;
                i += 1;
                continue;
            }
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            c if is_ident_start(c) || c.is_ascii_digit() => {
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Ident(String::from_utf8_lossy(&b[at..i]).into_owned()),
                    line,
                    at,
                });
                continue;
            }
            b':' if b.get(i + 1) == Some(&b':') => {
                i += 1;
                Tok::PathSep
            }
            b'{' => Tok::Open,
            b'}' => Tok::Close,
            b';' => Tok::Semi,
            b',' => Tok::Comma,
            b'*' => Tok::Star,
            other => Tok::Punct(other),
        };
        i += 1;
        out.push(Token { tok, line, at });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_braces_and_lines() {
        let t = tokenize("use crate::{a, b::*};\nmod x;");
        let kinds: Vec<_> = t.iter().map(|t| t.tok.clone()).collect();
        assert_eq!(
            kinds,
            [
                Tok::Ident("use".into()),
                Tok::Ident("crate".into()),
                Tok::PathSep,
                Tok::Open,
                Tok::Ident("a".into()),
                Tok::Comma,
                Tok::Ident("b".into()),
                Tok::PathSep,
                Tok::Star,
                Tok::Close,
                Tok::Semi,
                Tok::Ident("mod".into()),
                Tok::Ident("x".into()),
                Tok::Semi,
            ]
        );
        assert_eq!(t.last().map(|t| t.line), Some(2));
    }
}
