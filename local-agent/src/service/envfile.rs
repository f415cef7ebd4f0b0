//! The service's environment file (`SERVICE_ENV_FILE`): where secrets such as
//! `SERVICE_SENTINEL_TOKEN` and `SERVICE_MQTT_PASSWORD` live for the desktop service, so they are
//! never on a command line, in the unit file or in the launchd property list.
//!
//! Format: one `KEY=VALUE` per line; blank lines and `#` comments are skipped; an optional
//! `export ` prefix is allowed; a value wrapped in matching single or double quotes loses them.
//! Nothing is expanded. Variables already set in the process environment win.

use std::path::{Path, PathBuf};

/// Names the environment file the agent reads at startup.
pub const ENV_FILE_ENV: &str = "SERVICE_ENV_FILE";

const MAX_BYTES: u64 = 64 * 1024;

/// Why the environment file cannot be used. Never contains a value.
#[derive(Debug, thiserror::Error)]
pub enum EnvFileError {
    #[error("cannot read the environment file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the environment file {path} is larger than {MAX_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("the environment file {path}, line {line}: {reason}")]
    Syntax {
        path: PathBuf,
        line: usize,
        reason: &'static str,
    },
}

/// Parses the file's text; `path` only labels errors.
pub fn parse(path: &Path, text: &str) -> Result<Vec<(String, String)>, EnvFileError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let err = |reason| EnvFileError::Syntax {
            path: path.to_path_buf(),
            line: i + 1,
            reason,
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| err("expected KEY=VALUE"))?;
        let key = key.trim_end();
        let mut chars = key.chars();
        let valid_start = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !valid_start || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(
                "the name must be letters, digits and _ (not starting with a digit)",
            ));
        }
        let value = value.trim_start();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) => value
                .strip_prefix(q)
                .and_then(|v| v.strip_suffix(q))
                .ok_or_else(|| err("a quoted value must end with the same quote"))?,
            _ => value.trim_end(),
        };
        out.push((key.to_string(), value.to_string()));
    }
    Ok(out)
}

/// Reads and parses the file.
pub fn load(path: &Path) -> Result<Vec<(String, String)>, EnvFileError> {
    use std::io::Read as _;
    let read_err = |source| EnvFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut text = String::new();
    file.take(MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(read_err)?;
    if text.len() as u64 > MAX_BYTES {
        return Err(EnvFileError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    parse(path, &text)
}

/// Renders variables in the format [`parse`] reads. A value with a line break cannot be written
/// and is left out (its name is returned).
pub fn render(header: &str, vars: &[(String, String)]) -> (String, Vec<String>) {
    let mut text = String::new();
    for line in header.lines() {
        text.push_str("# ");
        text.push_str(line);
        text.push('\n');
    }
    let mut skipped = Vec::new();
    for (k, v) in vars {
        if v.contains(['\n', '\r']) {
            skipped.push(k.clone());
            continue;
        }
        let quote = if v.contains('"') { '\'' } else { '"' };
        if v.contains('"') && v.contains('\'') {
            skipped.push(k.clone());
            continue;
        }
        text.push_str(&format!("{k}={quote}{v}{quote}\n"));
    }
    (text, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_assignments_comments_quotes_and_export() {
        let text = "# secrets\n\nSERVICE_SENTINEL_TOKEN=abc def  \nexport SERVICE_MQTT_USERNAME = ha\n\
                    SERVICE_MQTT_PASSWORD=\"p=w #1 \"\nRUST_LOG='local_agent=debug'\nEMPTY=\n";
        let vars = parse(Path::new("x"), text).unwrap();
        assert_eq!(
            vars,
            vec![
                ("SERVICE_SENTINEL_TOKEN".into(), "abc def".into()),
                ("SERVICE_MQTT_USERNAME".into(), "ha".into()),
                ("SERVICE_MQTT_PASSWORD".into(), "p=w #1 ".into()),
                ("RUST_LOG".into(), "local_agent=debug".into()),
                ("EMPTY".into(), String::new()),
            ]
        );
    }

    #[test]
    fn bad_lines_name_the_line_but_not_the_value() {
        for (text, line) in [
            ("A=1\nnot an assignment\n", 2),
            ("1A=x\n", 1),
            ("A=\"unterminated secret\n", 1),
            ("A B=x\n", 1),
        ] {
            let e = parse(Path::new("/e"), text).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(&format!("line {line}")), "{msg}");
            assert!(!msg.contains("secret"), "{msg}");
        }
    }

    #[test]
    fn rendered_files_read_back_the_same() {
        let vars = vec![
            ("SERVICE_SENTINEL_TOKEN".to_string(), "t0k\"en".to_string()),
            ("SERVICE_ENGINE_PORT".to_string(), "18799".to_string()),
            ("BAD".to_string(), "two\nlines".to_string()),
        ];
        let (text, skipped) = render("written by a test\nsecond line", &vars);
        assert_eq!(skipped, vec!["BAD".to_string()]);
        assert_eq!(parse(Path::new("x"), &text).unwrap(), vars[..2].to_vec());
        assert!(text.starts_with("# written by a test\n# second line\n"));
    }
}
