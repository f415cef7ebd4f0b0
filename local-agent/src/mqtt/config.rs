//! Where the MQTT broker is and who we are on it: the config file, then the environment for the
//! credentials.
//!
//! ```toml
//! mqtt_url = "mqtts://homeassistant.local:8883"   # or mqtt://host[:1883]
//! # mqtt_client_id = "presence-agent-livingroom"  # default presence-agent-<host name>
//! # mqtt_discovery_prefix = "homeassistant"       # Home Assistant's discovery prefix
//! # mqtt_base_topic = "presence-agent/livingroom" # default presence-agent/<client id>
//! # mqtt_ca = "home-ca.pem"                      # extra CA (PEM) for mqtts://; relative to the file
//! ```
//!
//! `SERVICE_MQTT_USERNAME` and `SERVICE_MQTT_PASSWORD` (or `SERVICE_MQTT_PASSWORD_FILE`, a file
//! holding only the password) come from the environment only: a password in the URL or on a
//! command line would be visible to others. MQTT is off unless `mqtt_url` is set.

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::alerts::config::{ConfigError, config_path, read_file};

pub const USERNAME_ENV: &str = "SERVICE_MQTT_USERNAME";
pub const PASSWORD_ENV: &str = "SERVICE_MQTT_PASSWORD";
pub const PASSWORD_FILE_ENV: &str = "SERVICE_MQTT_PASSWORD_FILE";
/// An extra CA file for `mqtts://` (overrides `mqtt_ca` in the file).
pub const CA_ENV: &str = "SERVICE_MQTT_CA";

/// Home Assistant's default discovery prefix.
pub const DEFAULT_DISCOVERY_PREFIX: &str = "homeassistant";
/// First level of the default base topic.
pub const BASE_TOPIC_ROOT: &str = "presence-agent";

/// Largest password file read; a password is a line.
const MAX_PASSWORD_FILE: u64 = 4096;
/// Longest client id accepted (brokers must take 23 characters, Mosquitto takes far more).
const MAX_CLIENT_ID: usize = 64;

/// Why the MQTT settings are unusable. Messages never contain the password.
#[derive(Debug, thiserror::Error)]
pub enum MqttConfigError {
    #[error(transparent)]
    File(#[from] ConfigError),
    #[error("mqtt_url ({origin}) is not valid: {reason}")]
    BadUrl { origin: String, reason: String },
    #[error("{key} ({origin}) is not valid: {reason}")]
    BadValue {
        key: &'static str,
        origin: String,
        reason: String,
    },
    #[error("{0}")]
    Credentials(String),
    #[error("cannot read {PASSWORD_FILE_ENV} file {path}: {reason}")]
    PasswordFile { path: PathBuf, reason: String },
    #[error("the MQTT CA file {path} ({origin}) cannot be used: {reason}")]
    BadCa {
        path: PathBuf,
        origin: String,
        reason: String,
    },
}

/// `mqtt://` or `mqtts://`, host and port. `Display` is safe to log (there is nothing secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerUrl {
    pub tls: bool,
    /// Host name or IP address as written (an IPv6 address without brackets).
    pub host: String,
    pub port: u16,
}

impl BrokerUrl {
    /// Accepts `mqtt://host[:port]` (1883) and `mqtts://host[:port]` (8883), nothing else: no
    /// user or password (those come from the environment), no path, query or fragment.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err("it is empty".into());
        }
        let url = url::Url::parse(raw).map_err(|e| format!("not a URL ({e})"))?;
        let (tls, default_port) = match url.scheme() {
            "mqtt" => (false, 1883),
            "mqtts" => (true, 8883),
            other => {
                return Err(format!(
                    "scheme {other}:// is not supported; use mqtt://host:1883 or mqtts://host:8883"
                ));
            }
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "it holds a user name or password; remove it and set {USERNAME_ENV} and \
                 {PASSWORD_ENV} (or {PASSWORD_FILE_ENV}) in the environment instead"
            ));
        }
        if !(url.path().is_empty() || url.path() == "/") || url.query().is_some() {
            return Err("it has a path or query; give only mqtt[s]://host[:port]".into());
        }
        if url.fragment().is_some() {
            return Err("it has a #fragment; give only mqtt[s]://host[:port]".into());
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() => d.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            _ => return Err("it has no host".into()),
        };
        Ok(Self {
            tls,
            host,
            port: url.port().unwrap_or(default_port),
        })
    }

    /// The host as a socket address needs it (`[::1]` for IPv6).
    pub fn connect_host(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        }
    }

    /// True for `localhost`, 127.0.0.0/8 and `::1`.
    pub fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost")
            || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for BrokerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        write!(f, "{scheme}://{}:{}", self.connect_host(), self.port)
    }
}

/// A password: never printed, not even by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The password itself, for the MQTT CONNECT packet only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password([redacted])")
    }
}

/// Everything the publisher needs.
#[derive(Debug, Clone)]
pub struct MqttConfig {
    pub broker: BrokerUrl,
    pub username: Option<String>,
    pub password: Option<Password>,
    /// The MQTT client id.
    pub client_id: String,
    /// The client id reduced to `[A-Za-z0-9_-]`: the discovery `node_id` and the prefix of every
    /// `unique_id`, so Home Assistant keeps the same entities across restarts.
    pub agent_id: String,
    pub discovery_prefix: String,
    /// Where states, attributes, availability and the away command live.
    pub base_topic: String,
    /// Extra CA certificates (PEM) trusted for `mqtts://`, besides the bundled Mozilla roots.
    pub extra_ca: Option<PathBuf>,
}

impl MqttConfig {
    /// Reads the config file and the environment. `Ok(None)`: MQTT is not configured.
    pub fn load() -> Result<Option<Self>, MqttConfigError> {
        Self::load_with(
            |name| std::env::var(name).ok(),
            config_path(),
            default_client_id,
        )
    }

    /// `env` looks up a variable; `file` is the config path and whether it must exist;
    /// `default_id` makes the client id when the file names none.
    pub fn load_with(
        env: impl Fn(&str) -> Option<String>,
        file: Option<(PathBuf, bool)>,
        default_id: impl FnOnce() -> String,
    ) -> Result<Option<Self>, MqttConfigError> {
        let env = |name: &str| env(name).filter(|v| !v.is_empty());
        let (keys, file_path) = match file {
            Some((path, required)) => (read_file(&path, required)?, Some(path)),
            None => (Default::default(), None),
        };
        let origin = |key: &str| match &file_path {
            Some(p) => format!("{key} in {}", p.display()),
            None => key.to_string(),
        };
        let Some(raw_url) = keys.mqtt_url.as_deref() else {
            if env(USERNAME_ENV).is_some()
                || env(PASSWORD_ENV).is_some()
                || env(PASSWORD_FILE_ENV).is_some()
            {
                tracing::warn!(
                    "{USERNAME_ENV}/{PASSWORD_ENV} are set but no mqtt_url is configured, so MQTT is off"
                );
            }
            return Ok(None);
        };
        let broker = BrokerUrl::parse(raw_url).map_err(|reason| MqttConfigError::BadUrl {
            origin: origin("mqtt_url"),
            reason,
        })?;

        let username = env(USERNAME_ENV);
        let password = match (env(PASSWORD_ENV), env(PASSWORD_FILE_ENV)) {
            (Some(_), Some(_)) => {
                return Err(MqttConfigError::Credentials(format!(
                    "set either {PASSWORD_ENV} or {PASSWORD_FILE_ENV}, not both"
                )));
            }
            (Some(p), None) => Some(Password(p)),
            (None, Some(path)) => Some(read_password_file(Path::new(&path))?),
            (None, None) => None,
        };
        if password.is_some() && username.is_none() {
            // MQTT 3.1.1 (3.1.2.9): a password needs a user name.
            return Err(MqttConfigError::Credentials(format!(
                "an MQTT password is set but {USERNAME_ENV} is not; MQTT needs a user name with a password"
            )));
        }

        let client_id = match keys.mqtt_client_id.as_deref() {
            Some(id) => {
                validate_client_id(id).map_err(|reason| MqttConfigError::BadValue {
                    key: "mqtt_client_id",
                    origin: origin("mqtt_client_id"),
                    reason,
                })?;
                id.to_string()
            }
            None => default_id(),
        };
        let agent_id = object_id(&client_id);
        let discovery_prefix = match keys.mqtt_discovery_prefix.as_deref() {
            Some(p) => topic_prefix(p).map_err(|reason| MqttConfigError::BadValue {
                key: "mqtt_discovery_prefix",
                origin: origin("mqtt_discovery_prefix"),
                reason,
            })?,
            None => DEFAULT_DISCOVERY_PREFIX.to_string(),
        };
        let base_topic = match keys.mqtt_base_topic.as_deref() {
            Some(p) => topic_prefix(p).map_err(|reason| MqttConfigError::BadValue {
                key: "mqtt_base_topic",
                origin: origin("mqtt_base_topic"),
                reason,
            })?,
            None => format!("{BASE_TOPIC_ROOT}/{agent_id}"),
        };
        if base_topic == discovery_prefix || base_topic.starts_with(&format!("{discovery_prefix}/"))
        {
            return Err(MqttConfigError::BadValue {
                key: "mqtt_base_topic",
                origin: origin("mqtt_base_topic"),
                reason: format!(
                    "it lies under the discovery prefix {discovery_prefix:?}; Home Assistant would read states as discovery messages"
                ),
            });
        }

        let extra_ca = match env(CA_ENV) {
            Some(p) => Some((PathBuf::from(p), CA_ENV.to_string())),
            None => keys.mqtt_ca.clone().map(|p| {
                let p = match file_path.as_deref().and_then(Path::parent) {
                    Some(dir) if p.is_relative() => dir.join(p),
                    _ => p,
                };
                (p, origin("mqtt_ca"))
            }),
        };
        if let Some((path, ca_origin)) = &extra_ca {
            if !broker.tls {
                return Err(MqttConfigError::BadCa {
                    path: path.clone(),
                    origin: ca_origin.clone(),
                    reason: "a CA is used only with mqtts://; change mqtt_url or remove the CA"
                        .into(),
                });
            }
            load_ca(path).map_err(|reason| MqttConfigError::BadCa {
                path: path.clone(),
                origin: ca_origin.clone(),
                reason,
            })?;
        }

        Ok(Some(Self {
            broker,
            username,
            password,
            client_id,
            agent_id,
            discovery_prefix,
            base_topic,
            extra_ca: extra_ca.map(|(p, _)| p),
        }))
    }

    /// True when a password would cross the network in clear text.
    pub fn sends_password_in_clear(&self) -> bool {
        self.password.is_some() && !self.broker.tls && !self.broker.is_loopback()
    }
}

fn read_password_file(path: &Path) -> Result<Password, MqttConfigError> {
    use std::io::Read as _;
    let err = |reason: String| MqttConfigError::PasswordFile {
        path: path.to_path_buf(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_PASSWORD_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| err(e.to_string()))?;
    if text.len() as u64 > MAX_PASSWORD_FILE {
        return Err(err(format!(
            "it is larger than {MAX_PASSWORD_FILE} bytes; it must hold only the password"
        )));
    }
    // Editors and `echo` add a final newline; it is never part of the password.
    let password = text.strip_suffix('\n').unwrap_or(&text);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        return Err(err("it is empty".into()));
    }
    if password.contains('\n') {
        return Err(err(
            "it holds more than one line; it must hold only the password".into(),
        ));
    }
    Ok(Password(password.to_string()))
}

fn validate_client_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_CLIENT_ID {
        return Err(format!("it must be 1 to {MAX_CLIENT_ID} characters long"));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err("use only letters, digits, '-', '_' and '.'".into());
    }
    Ok(())
}

/// A topic prefix: no wildcards, no `$` start, no empty levels; a trailing `/` is dropped.
fn topic_prefix(raw: &str) -> Result<String, String> {
    let p = raw.trim().trim_end_matches('/');
    if p.is_empty() {
        return Err("it is empty".into());
    }
    if p.contains(['+', '#', '\0']) {
        return Err("it must not contain the wildcards + or #".into());
    }
    if p.starts_with('$') {
        return Err("topics starting with $ belong to the broker".into());
    }
    if p.split('/').any(str::is_empty) {
        return Err("it has an empty level (// or a leading /)".into());
    }
    if p.len() > 512 {
        return Err("it is longer than 512 bytes".into());
    }
    Ok(p.to_string())
}

/// Reduces `s` to `[A-Za-z0-9_-]` (what Home Assistant accepts as a discovery node or object
/// id). When characters had to be replaced, a short hash of the original is appended, so two ids
/// that differ only in those characters stay apart.
pub fn object_id(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out != s {
        out.push_str(&format!("_{:08x}", crc32fast::hash(s.as_bytes())));
    }
    if out.is_empty() {
        out.push_str("agent");
    }
    out
}

/// `presence-agent-<host name>`, the host name reduced to what a client id may hold.
pub fn default_client_id() -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let host: String = host
        .split('.')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(MAX_CLIENT_ID - BASE_TOPIC_ROOT.len() - 1)
        .collect();
    if host.is_empty() {
        BASE_TOPIC_ROOT.to_string()
    } else {
        format!("{BASE_TOPIC_ROOT}-{}", host.to_ascii_lowercase())
    }
}

/// Reads a PEM file of one or more CA certificates.
pub fn load_ca(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| e.to_string())?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
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

    fn load(env: &[(&str, &str)], file: &str) -> Result<Option<MqttConfig>, MqttConfigError> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let dir = std::env::temp_dir().join(format!(
            "mqtt-config-{}-{}",
            std::process::id(),
            crate::alerts::new_alert_id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, file).unwrap();
        let loaded = MqttConfig::load_with(
            |k| env.get(k).cloned(),
            Some((path, true)),
            || "presence-agent-testhost".into(),
        );
        let _ = std::fs::remove_dir_all(&dir);
        loaded
    }

    #[test]
    fn off_unless_a_url_is_configured() {
        assert!(load(&[], "").unwrap().is_none());
        assert!(
            load(&[(USERNAME_ENV, "ha"), (PASSWORD_ENV, "pw")], "")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn defaults_follow_the_client_id() {
        let c = load(&[], "mqtt_url = \"mqtt://broker.lan\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            c.broker,
            BrokerUrl {
                tls: false,
                host: "broker.lan".into(),
                port: 1883
            }
        );
        assert_eq!(c.client_id, "presence-agent-testhost");
        assert_eq!(c.agent_id, "presence-agent-testhost");
        assert_eq!(c.discovery_prefix, "homeassistant");
        assert_eq!(c.base_topic, "presence-agent/presence-agent-testhost");
        let c = load(
            &[],
            "mqtt_url = \"mqtts://10.0.0.2\"\nmqtt_client_id = \"living.room\"\n\
             mqtt_discovery_prefix = \"ha/\"\nmqtt_base_topic = \"home/presence\"\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.broker.port, 8883);
        assert!(c.broker.tls);
        assert_eq!(c.client_id, "living.room");
        assert!(c.agent_id.starts_with("living_room_"), "{}", c.agent_id);
        assert_eq!(c.discovery_prefix, "ha");
        assert_eq!(c.base_topic, "home/presence");
    }

    #[test]
    fn urls_with_secrets_paths_or_other_schemes_are_refused() {
        for (url, needle) in [
            ("mqtt://user:pw@broker", PASSWORD_ENV),
            ("http://broker", "not supported"),
            ("mqtt://broker/topic", "path"),
            ("mqtt://", "host"),
            ("broker:1883", "not supported"),
        ] {
            let e = load(&[], &format!("mqtt_url = \"{url}\"\n")).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(needle), "{url}: {msg}");
            assert!(!msg.contains(":pw@"), "{msg}");
        }
        let v6 = BrokerUrl::parse("mqtt://[::1]:1884").unwrap();
        assert_eq!(v6.connect_host(), "[::1]");
        assert!(v6.is_loopback());
        assert_eq!(v6.to_string(), "mqtt://[::1]:1884");
    }

    #[test]
    fn credentials_come_from_the_environment_and_stay_secret() {
        let dir = std::env::temp_dir().join(format!("mqtt-pw-{}", crate::alerts::new_alert_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pw_file = dir.join("pw");
        std::fs::write(&pw_file, "s3cret-from-file\n").unwrap();
        let url = "mqtt_url = \"mqtt://broker\"\n";
        let c = load(
            &[
                (USERNAME_ENV, "ha"),
                (PASSWORD_FILE_ENV, pw_file.to_str().unwrap()),
            ],
            url,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.password.as_ref().unwrap().expose(), "s3cret-from-file");
        assert!(!format!("{c:?}").contains("s3cret"));
        assert!(c.sends_password_in_clear());

        let e = load(&[(PASSWORD_ENV, "pw")], url).unwrap_err();
        assert!(e.to_string().contains(USERNAME_ENV), "{e}");
        let e = load(
            &[
                (USERNAME_ENV, "ha"),
                (PASSWORD_ENV, "pw"),
                (PASSWORD_FILE_ENV, "/x"),
            ],
            url,
        )
        .unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        std::fs::write(&pw_file, "").unwrap();
        let e = load(
            &[
                (USERNAME_ENV, "ha"),
                (PASSWORD_FILE_ENV, pw_file.to_str().unwrap()),
            ],
            url,
        )
        .unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_ids_and_topics_are_refused() {
        let url = "mqtt_url = \"mqtt://broker\"\n";
        for extra in [
            "mqtt_client_id = \"has space\"",
            "mqtt_client_id = \"\"",
            "mqtt_discovery_prefix = \"home/#\"",
            "mqtt_base_topic = \"$SYS/x\"",
            "mqtt_base_topic = \"a//b\"",
            "mqtt_base_topic = \"homeassistant/presence\"",
            "mqtt_ca = \"ca.pem\"",
            "mqtt_port = 1883",
        ] {
            assert!(load(&[], &format!("{url}{extra}\n")).is_err(), "{extra}");
        }
    }

    #[test]
    fn object_ids_keep_only_safe_characters_and_stay_distinct() {
        assert_eq!(object_id("node-1"), "node-1");
        let a = object_id("node-1@192.168.1.40");
        let b = object_id("node-1_192_168_1_40");
        assert_ne!(a, b);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        );
        let id = default_client_id();
        assert!(validate_client_id(&id).is_ok(), "{id}");
    }
}
