//! Where Away Alerts go and when away mode switches itself on: environment first, then the config
//! file.
//!
//! The file is TOML at `SERVICE_CONFIG`, else `<user config dir>/presence-agent/config.toml`
//! (Linux: `~/.config/presence-agent/config.toml`). A missing file at the default location is
//! fine (nothing configured); a missing file named by `SERVICE_CONFIG` is an error, because the
//! user asked for it.
//!
//! ```toml
//! alert_webhook = "https://ntfy.sh/my-secret-topic"
//! alert_ca = "/etc/presence-agent/home-ca.pem"   # optional extra CA (PEM) for self-hosted receivers
//!
//! [[away.schedule]]
//! days = ["mon", "tue", "wed", "thu", "fri"]
//! from = "08:30"
//! to = "17:30"
//! ```

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;

use super::schedule::{AwaySchedule, ScheduleError};
use crate::store::APP_DIR;

/// The alert address (overrides `alert_webhook` in the file).
pub const WEBHOOK_ENV: &str = "SERVICE_ALERT_WEBHOOK";
/// An extra CA certificate file, PEM (overrides `alert_ca` in the file).
pub const CA_ENV: &str = "SERVICE_ALERT_CA";
/// The config file's path.
pub const CONFIG_ENV: &str = "SERVICE_CONFIG";
/// Retry tuning for tests and impatient set-ups; documented in the README's maintainer section.
pub const RETRY_BASE_ENV: &str = "SERVICE_ALERT_RETRY_BASE_MS";
pub const RETRY_CAP_ENV: &str = "SERVICE_ALERT_RETRY_CAP_MS";
pub const RETRY_WINDOW_ENV: &str = "SERVICE_ALERT_RETRY_WINDOW_S";

/// The `source` field of every alert body: the application's name.
pub const SOURCE_NAME: &str = "presence-agent";

/// Largest config file read; a real one is a few hundred bytes.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// Why the alert configuration is unusable. Messages never contain the full address: a ntfy topic
/// or a token in the query is a secret.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {source}")]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path} is larger than {MAX_CONFIG_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("config file {path} is not valid: {message}")]
    ParseFile { path: PathBuf, message: String },
    #[error("the alert address ({origin}) is not valid: {reason}")]
    BadAddress { origin: String, reason: String },
    #[error("the extra CA file {path} ({origin}) cannot be used: {reason}")]
    BadCa {
        path: PathBuf,
        origin: String,
        reason: String,
    },
    #[error("the away schedule in {path} is not valid: {source}")]
    BadSchedule {
        path: PathBuf,
        #[source]
        source: ScheduleError,
    },
    #[error("{name} must be a positive whole number, got {value:?}")]
    BadNumber { name: &'static str, value: String },
    #[error("cannot build the HTTPS client: {0}")]
    Client(String),
}

/// A validated alert address. `Display` and `Debug` show only scheme, host and port, so it can be
/// logged; [`WebhookAddress::url`] gives the full address to the sender only.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookAddress {
    url: Url,
}

impl WebhookAddress {
    /// Accepts `https://host/...`, or `http://` only when the host is loopback (`localhost`,
    /// 127.0.0.0/8, `::1`): alerts carry what happens in someone's home and must not cross a
    /// network in clear text.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err("it is empty".into());
        }
        let url = Url::parse(raw).map_err(|e| format!("not a URL ({e})"))?;
        let host = url.host_str().unwrap_or("");
        if host.is_empty() {
            return Err("it has no host".into());
        }
        match url.scheme() {
            "https" => {}
            "http" if is_loopback_host(&url) => {}
            "http" => {
                return Err(format!(
                    "http:// is allowed only for a loopback host (localhost, 127.0.0.1, ::1); use https://{host}/..."
                ));
            }
            other => return Err(format!("scheme {other}:// is not supported; use https://")),
        }
        if url.fragment().is_some() {
            return Err("it has a #fragment, which is never sent; remove it".into());
        }
        Ok(Self { url })
    }

    /// The full address, credentials and all. Never log it.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// True for `localhost`, 127.0.0.0/8 and `::1`.
    pub fn is_loopback(&self) -> bool {
        is_loopback_host(&self.url)
    }

    /// `scheme://host[:port]`: safe to log.
    pub fn redacted(&self) -> String {
        let host = match self.url.host() {
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
            Some(h) => h.to_string(),
            None => String::new(),
        };
        match self.url.port() {
            Some(p) => format!("{}://{host}:{p}", self.url.scheme()),
            None => format!("{}://{host}", self.url.scheme()),
        }
    }
}

impl fmt::Display for WebhookAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for WebhookAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WebhookAddress({})", self.redacted())
    }
}

fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// Retry schedule: exponential from `base`, capped at `cap`, for `window` after creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub base: Duration,
    pub cap: Duration,
    pub window: Duration,
}

impl Default for RetryPolicy {
    /// The contract's 1 s … 1 h, 24 h in total.
    fn default() -> Self {
        Self {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(3600),
            window: Duration::from_secs(24 * 3600),
        }
    }
}

/// Everything the outbox, sender and away rules need.
#[derive(Debug, Clone)]
pub struct AlertConfig {
    /// `None`: alerts are only logged and stored as `disabled`.
    pub webhook: Option<WebhookAddress>,
    /// Extra trusted CA certificates (PEM file) on top of the bundled Mozilla roots.
    pub extra_ca: Option<PathBuf>,
    pub schedule: AwaySchedule,
    pub retry: RetryPolicy,
    /// Per-request limit; a receiver that takes longer counts as a failed attempt.
    pub request_timeout: Duration,
    /// How often the sender looks for rows written by another process (the CLI). Alerts raised
    /// in this process wake it at once.
    pub db_poll: Duration,
}

impl Default for AlertConfig {
    fn default() -> Self {
        Self {
            webhook: None,
            extra_ca: None,
            schedule: AwaySchedule::default(),
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(10),
            db_poll: Duration::from_secs(2),
        }
    }
}

/// The whole config file. Unknown keys are refused (serde cannot combine that with `flatten`),
/// so every part's keys are listed here; the `mqtt_*` keys are read by `crate::mqtt::config`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    alert_webhook: Option<String>,
    alert_ca: Option<PathBuf>,
    #[serde(default)]
    away: AwaySection,
    pub(crate) mqtt_url: Option<String>,
    pub(crate) mqtt_client_id: Option<String>,
    pub(crate) mqtt_discovery_prefix: Option<String>,
    pub(crate) mqtt_base_topic: Option<String>,
    pub(crate) mqtt_ca: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AwaySection {
    #[serde(default)]
    schedule: Vec<ScheduleEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleEntry {
    days: Vec<String>,
    from: String,
    to: String,
}

/// The config file in use: `SERVICE_CONFIG`, else the platform default (may not exist).
pub fn config_path() -> Option<(PathBuf, bool)> {
    match std::env::var_os(CONFIG_ENV) {
        Some(p) if !p.is_empty() => Some((PathBuf::from(p), true)),
        _ => dirs::config_dir().map(|d| (d.join(APP_DIR).join("config.toml"), false)),
    }
}

impl AlertConfig {
    /// Reads the process environment and the config file.
    pub fn load() -> Result<Self, ConfigError> {
        Self::load_with(|name| std::env::var(name).ok(), config_path())
    }

    /// `env` looks up a variable; `file` is the config path and whether it must exist.
    pub fn load_with(
        env: impl Fn(&str) -> Option<String>,
        file: Option<(PathBuf, bool)>,
    ) -> Result<Self, ConfigError> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let (file_config, file_path) = match file {
            Some((path, required)) => (read_file(&path, required)?, Some(path)),
            None => (FileConfig::default(), None),
        };
        let file_label = file_path
            .as_ref()
            .map(|p| format!("alert_webhook in {}", p.display()))
            .unwrap_or_else(|| "alert_webhook".into());

        let webhook = match env(WEBHOOK_ENV) {
            Some(raw) => Some((raw, WEBHOOK_ENV.to_string())),
            None => file_config.alert_webhook.map(|raw| (raw, file_label)),
        };
        let webhook = match webhook {
            Some((raw, origin)) => Some(
                WebhookAddress::parse(&raw)
                    .map_err(|reason| ConfigError::BadAddress { origin, reason })?,
            ),
            None => None,
        };

        let extra_ca = match env(CA_ENV) {
            Some(p) => Some((PathBuf::from(p), CA_ENV.to_string())),
            None => file_config.alert_ca.map(|p| {
                // A relative path in the file is relative to the file, not to wherever the
                // agent happens to start.
                let p = match file_path.as_deref().and_then(Path::parent) {
                    Some(dir) if p.is_relative() => dir.join(p),
                    _ => p,
                };
                (p, "alert_ca".to_string())
            }),
        };
        if let Some((path, origin)) = &extra_ca {
            load_ca(path).map_err(|reason| ConfigError::BadCa {
                path: path.clone(),
                origin: origin.clone(),
                reason,
            })?;
        }

        let schedule = AwaySchedule::parse(
            file_config
                .away
                .schedule
                .iter()
                .map(|e| (e.days.as_slice(), e.from.as_str(), e.to.as_str())),
        )
        .map_err(|source| ConfigError::BadSchedule {
            path: file_path.clone().unwrap_or_default(),
            source,
        })?;

        let mut retry = RetryPolicy::default();
        if let Some(v) = env(RETRY_BASE_ENV) {
            retry.base = Duration::from_millis(positive(RETRY_BASE_ENV, &v)?);
        }
        if let Some(v) = env(RETRY_CAP_ENV) {
            retry.cap = Duration::from_millis(positive(RETRY_CAP_ENV, &v)?);
        }
        if let Some(v) = env(RETRY_WINDOW_ENV) {
            retry.window = Duration::from_secs(positive(RETRY_WINDOW_ENV, &v)?);
        }
        retry.cap = retry.cap.max(retry.base);

        Ok(Self {
            webhook,
            extra_ca: extra_ca.map(|(p, _)| p),
            schedule,
            retry,
            ..Self::default()
        })
    }
}

fn positive(name: &'static str, value: &str) -> Result<u64, ConfigError> {
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(ConfigError::BadNumber {
            name,
            value: value.to_string(),
        }),
    }
}

pub(crate) fn read_file(path: &Path, required: bool) -> Result<FileConfig, ConfigError> {
    use std::io::Read as _;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
            return Ok(FileConfig::default());
        }
        Err(source) => {
            return Err(ConfigError::ReadFile {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|source| ConfigError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    toml::from_str(&text).map_err(|e| ConfigError::ParseFile {
        path: path.to_path_buf(),
        message: e.message().to_string(),
    })
}

/// Reads a PEM file of one or more CA certificates.
pub fn load_ca(path: &Path) -> Result<Vec<reqwest::Certificate>, String> {
    let pem = std::fs::read(path).map_err(|e| e.to_string())?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| format!("not a PEM certificate file ({e})"))?;
    if certs.is_empty() {
        return Err("it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into());
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(env: &[(&str, &str)], file: Option<&str>) -> Result<AlertConfig, ConfigError> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let dir = std::env::temp_dir().join(format!(
            "alerts-config-{}-{}",
            std::process::id(),
            super::super::new_alert_id()
        ));
        let path = file.map(|text| {
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join("config.toml");
            std::fs::write(&p, text).unwrap();
            (p, true)
        });
        let loaded = AlertConfig::load_with(|k| env.get(k).cloned(), path);
        let _ = std::fs::remove_dir_all(&dir);
        loaded
    }

    #[test]
    fn https_and_loopback_http_are_accepted_and_others_refused() {
        assert!(WebhookAddress::parse("https://ntfy.sh/topic").is_ok());
        assert!(WebhookAddress::parse("http://127.0.0.1:9000/hook").is_ok());
        assert!(WebhookAddress::parse("http://127.8.0.1/hook").is_ok());
        assert!(WebhookAddress::parse("http://localhost/hook").is_ok());
        assert!(WebhookAddress::parse("http://[::1]:80/hook").is_ok());
        let e = WebhookAddress::parse("http://example.com/hook").unwrap_err();
        assert!(e.contains("loopback"), "{e}");
        assert!(WebhookAddress::parse("http://192.168.1.5/hook").is_err());
        assert!(WebhookAddress::parse("http://localhost.evil.example/hook").is_err());
        assert!(WebhookAddress::parse("ftp://example.com/").is_err());
        assert!(WebhookAddress::parse("ntfy.sh/topic").is_err());
        assert!(WebhookAddress::parse("").is_err());
    }

    #[test]
    fn the_logged_form_hides_the_topic_credentials_and_query() {
        let a = WebhookAddress::parse("https://user:pw@ntfy.sh/secret-topic?auth=tok").unwrap();
        assert_eq!(a.to_string(), "https://ntfy.sh");
        assert_eq!(format!("{a:?}"), "WebhookAddress(https://ntfy.sh)");
        let a = WebhookAddress::parse("http://[::1]:8080/x").unwrap();
        assert_eq!(a.redacted(), "http://[::1]:8080");
    }

    #[test]
    fn env_overrides_the_file_and_errors_do_not_leak_the_address() {
        let file = "alert_webhook = \"https://file.example/topic\"\n";
        let c = load(&[], Some(file)).unwrap();
        assert_eq!(c.webhook.unwrap().redacted(), "https://file.example");
        let c = load(&[(WEBHOOK_ENV, "https://env.example/t")], Some(file)).unwrap();
        assert_eq!(c.webhook.unwrap().redacted(), "https://env.example");

        let e = load(&[(WEBHOOK_ENV, "http://remote.example/secret-topic")], None).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(WEBHOOK_ENV) && msg.contains("loopback"),
            "{msg}"
        );
        assert!(!msg.contains("secret-topic"), "{msg}");
    }

    #[test]
    fn bad_files_and_values_fail_clearly() {
        let e = load(&[], Some("alert_webhok = \"https://x\"")).unwrap_err();
        assert!(e.to_string().contains("alert_webhok"), "{e}");
        let e = load(&[], Some("alert_ca = \"/no/such/ca.pem\"")).unwrap_err();
        assert!(e.to_string().contains("/no/such/ca.pem"), "{e}");
        let e = load(&[(RETRY_BASE_ENV, "0")], None).unwrap_err();
        assert!(e.to_string().contains(RETRY_BASE_ENV), "{e}");
        let missing = AlertConfig::load_with(
            |_| None,
            Some((PathBuf::from("/no/such/config.toml"), true)),
        )
        .unwrap_err();
        assert!(missing.to_string().contains("/no/such/config.toml"));
        let optional = AlertConfig::load_with(
            |_| None,
            Some((PathBuf::from("/no/such/config.toml"), false)),
        )
        .unwrap();
        assert!(optional.webhook.is_none());
    }

    #[test]
    fn hostile_files_are_refused_without_reading_them_whole() {
        let huge = format!("# {}\n", "x".repeat(200_000));
        let e = load(&[], Some(&huge)).unwrap_err();
        assert!(matches!(e, ConfigError::TooLarge { .. }), "{e}");
        let e = load(&[], Some("alert_webhook = [1, 2]")).unwrap_err();
        assert!(matches!(e, ConfigError::ParseFile { .. }), "{e}");
        let e = load(&[], Some("\u{0}\u{1}garbage = = =")).unwrap_err();
        assert!(matches!(e, ConfigError::ParseFile { .. }), "{e}");
    }

    #[test]
    fn the_schedule_is_read_from_the_file() {
        let c = load(
            &[],
            Some(
                "[[away.schedule]]\ndays = [\"mon\", \"fri\"]\nfrom = \"08:30\"\nto = \"17:30\"\n",
            ),
        )
        .unwrap();
        assert_eq!(c.schedule.len(), 1);
        let e = load(
            &[],
            Some("[[away.schedule]]\ndays = [\"moon\"]\nfrom = \"08:30\"\nto = \"17:30\"\n"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("moon"), "{e}");
    }
}
