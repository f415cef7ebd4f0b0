//! A real Mosquitto broker per test (Debian's `mosquitto`, started here on free loopback ports
//! with a password file and a TLS listener whose certificate comes from a test CA made per test),
//! an observer client that records what the broker delivers, and the agent binary.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};

pub const BIN: &str = env!("CARGO_BIN_EXE_local-agent");
pub const USER: &str = "homeassistant";
pub const PASSWORD: &str = "correct-horse-battery-staple";

/// A unique, empty temp directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "mqtt-{name}-{}-{}",
            std::process::id(),
            local_agent::alerts::new_alert_id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Polls `cond` every 25 ms until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn program(name: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!(
        "{name} is not installed: `apt-get install -y mosquitto mosquitto-clients` (the test command \
         .ci/test installs it)"
    );
}

/// A test CA and a server certificate for 127.0.0.1 and localhost, as PEM files.
pub struct Pki {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Pki {
    pub fn new(dir: &Path) -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "presence-agent test CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(params, ca_key);
        let key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let pki = Self {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        };
        std::fs::write(&pki.ca, ca_cert.pem()).unwrap();
        std::fs::write(&pki.cert, server.pem()).unwrap();
        std::fs::write(&pki.key, key.serialize_pem()).unwrap();
        pki
    }
}

/// A Mosquitto broker: a plain listener and a TLS listener on loopback, both requiring the
/// password file's user. No persistence, so a restart loses every retained message.
pub struct Broker {
    pub dir: TempDir,
    pub port: u16,
    pub tls_port: u16,
    pub pki: Pki,
    config: PathBuf,
    child: Option<Child>,
}

impl Broker {
    pub fn start(name: &str) -> Self {
        let dir = TempDir::new(&format!("broker-{name}"));
        let pki = Pki::new(dir.path());
        let passwords = dir.path().join("passwords");
        let status = Command::new(program("mosquitto_passwd"))
            .args(["-b", "-c"])
            .arg(&passwords)
            .args([USER, PASSWORD])
            .status()
            .expect("mosquitto_passwd runs");
        assert!(status.success(), "mosquitto_passwd failed");
        let port = free_port();
        let tls_port = free_port();
        let config = dir.path().join("mosquitto.conf");
        std::fs::write(
            &config,
            format!(
                "per_listener_settings false\n\
                 allow_anonymous false\n\
                 password_file {passwords}\n\
                 user root\n\
                 persistence false\n\
                 log_dest file {log}\n\
                 log_type all\n\
                 listener {port} 127.0.0.1\n\
                 listener {tls_port} 127.0.0.1\n\
                 cafile {ca}\n\
                 certfile {cert}\n\
                 keyfile {key}\n",
                passwords = passwords.display(),
                log = dir.path().join("mosquitto.log").display(),
                ca = pki.ca.display(),
                cert = pki.cert.display(),
                key = pki.key.display(),
            ),
        )
        .unwrap();
        let mut broker = Self {
            dir,
            port,
            tls_port,
            pki,
            config,
            child: None,
        };
        broker.launch();
        broker
    }

    fn launch(&mut self) {
        let child = Command::new(program("mosquitto"))
            .arg("-c")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mosquitto starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        for port in [self.port, self.tls_port] {
            while TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).is_err() {
                if let Some(status) = self
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten())
                {
                    panic!("mosquitto exited ({status}); its log:\n{}", self.log());
                }
                assert!(
                    Instant::now() < deadline,
                    "mosquitto did not listen on {port}:\n{}",
                    self.log()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Stops the broker (SIGKILL: no goodbye to anyone) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops and starts it again on the same ports, with no retained messages.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default()
    }

    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    pub fn tls_url(&self) -> String {
        format!("mqtts://127.0.0.1:{}", self.tls_port)
    }

    /// Publishes one message with Mosquitto's own client.
    pub fn mosquitto_pub(&self, topic: &str, payload: &str, retain: bool) {
        let mut cmd = Command::new(program("mosquitto_pub"));
        cmd.args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args([
                "-u", USER, "-P", PASSWORD, "-q", "1", "-t", topic, "-m", payload,
            ]);
        if retain {
            cmd.arg("-r");
        }
        let out = cmd.output().expect("mosquitto_pub runs");
        assert!(
            out.status.success(),
            "mosquitto_pub failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One message the observer received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub topic: String,
    pub payload: String,
    pub retain: bool,
    pub qos: u8,
    pub at: Instant,
}

#[derive(Default)]
struct Recorded {
    all: Vec<Seen>,
    connects: usize,
}

/// A client subscribed to `#` on the broker's plain listener that records everything; it
/// reconnects by itself after a broker restart.
pub struct Observer {
    client: AsyncClient,
    recorded: Arc<Mutex<Recorded>>,
    task: tokio::task::JoinHandle<()>,
}

impl Observer {
    pub async fn start(broker: &Broker) -> Self {
        let mut options = MqttOptions::new(
            format!("observer-{}", local_agent::alerts::new_alert_id()),
            "127.0.0.1",
            broker.port,
        );
        options
            .set_credentials(USER, PASSWORD)
            .set_keep_alive(Duration::from_secs(5))
            .set_max_packet_size(1 << 20, 1 << 20);
        let (client, mut eventloop) = AsyncClient::new(options, 64);
        let recorded = Arc::new(Mutex::new(Recorded::default()));
        let rec = Arc::clone(&recorded);
        let sub = client.clone();
        let task = tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        rec.lock().unwrap().connects += 1;
                        let _ = sub.subscribe("#", QoS::AtLeastOnce).await;
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let payload = String::from_utf8_lossy(&p.payload).into_owned();
                        let mut r = rec.lock().unwrap();
                        r.all.push(Seen {
                            topic: p.topic,
                            payload,
                            retain: p.retain,
                            qos: p.qos as u8,
                            at: Instant::now(),
                        });
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        });
        let observer = Self {
            client,
            recorded,
            task,
        };
        assert!(
            eventually(Duration::from_secs(10), || observer.connects() > 0).await,
            "the observer could not connect:\n{}",
            broker.log()
        );
        observer
    }

    pub fn connects(&self) -> usize {
        self.recorded.lock().unwrap().connects
    }

    /// The last payload seen on `topic`.
    pub fn last(&self, topic: &str) -> Option<String> {
        let r = self.recorded.lock().unwrap();
        r.all
            .iter()
            .rev()
            .find(|s| s.topic == topic)
            .map(|s| s.payload.clone())
    }

    pub fn all(&self) -> Vec<Seen> {
        self.recorded.lock().unwrap().all.clone()
    }

    /// Everything seen on `topic`.
    pub fn history(&self, topic: &str) -> Vec<Seen> {
        self.recorded
            .lock()
            .unwrap()
            .all
            .iter()
            .filter(|s| s.topic == topic)
            .cloned()
            .collect()
    }

    pub fn forget(&self) {
        self.recorded.lock().unwrap().all.clear();
    }

    pub async fn wait_for(&self, topic: &str, payload: &str, limit: Duration) -> bool {
        eventually(limit, || self.last(topic).as_deref() == Some(payload)).await
    }

    pub async fn publish(&self, topic: &str, payload: &str, retain: bool) {
        self.client
            .publish(topic, QoS::AtLeastOnce, retain, payload.as_bytes().to_vec())
            .await
            .unwrap();
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads every retained message under `filters` with a fresh connection: exactly what a new
/// subscriber (Home Assistant starting up) would get.
pub async fn retained(broker: &Broker, filters: &[&str]) -> Vec<(String, String)> {
    let mut options = MqttOptions::new(
        format!("snapshot-{}", local_agent::alerts::new_alert_id()),
        "127.0.0.1",
        broker.port,
    );
    options
        .set_credentials(USER, PASSWORD)
        .set_max_packet_size(1 << 20, 1 << 20);
    let (client, mut eventloop) = AsyncClient::new(options, 64);
    let marker = format!("snapshot-marker/{}", local_agent::alerts::new_alert_id());
    let mut out = Vec::new();
    let mut subacks = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let event = tokio::time::timeout_at(deadline, eventloop.poll())
            .await
            .expect("the broker answers")
            .expect("the snapshot client stays connected");
        match event {
            Event::Incoming(Packet::ConnAck(_)) => {
                for f in filters.iter().copied().chain([marker.as_str()]) {
                    client.subscribe(f, QoS::AtLeastOnce).await.unwrap();
                }
            }
            Event::Incoming(Packet::SubAck(_)) => {
                subacks += 1;
                if subacks == filters.len() + 1 {
                    client
                        .publish(&marker, QoS::AtMostOnce, false, b"x".to_vec())
                        .await
                        .unwrap();
                }
            }
            Event::Incoming(Packet::Publish(p)) => {
                if p.topic == marker {
                    break;
                }
                if p.retain {
                    out.push((p.topic, String::from_utf8_lossy(&p.payload).into_owned()));
                }
            }
            _ => {}
        }
    }
    let _ = client.disconnect().await;
    out.sort();
    out
}

/// The agent binary with its own data dir and config file.
pub struct Agent {
    pub dir: TempDir,
    pub config: PathBuf,
    pub port: u16,
    pub hub_port: u16,
    pub csi_port: u16,
    pub child: Option<Child>,
}

impl Agent {
    /// Writes `config` (TOML) and prepares a command; start with [`Agent::spawn`].
    pub fn new(name: &str, config: &str) -> Self {
        let dir = TempDir::new(&format!("agent-{name}"));
        let path = dir.path().join("config.toml");
        std::fs::write(&path, config).unwrap();
        Self {
            dir,
            config: path,
            port: free_port(),
            hub_port: free_port(),
            csi_port: free_port(),
            child: None,
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("SERVICE_CONFIG", &self.config)
            .env("SERVICE_DATA_DIR", self.dir.path().join("data"))
            .env("SERVICE_ENGINE_PORT", self.port.to_string())
            .env("SERVICE_SENTINEL_PORT", self.hub_port.to_string())
            .env("SERVICE_CSI_PORT", self.csi_port.to_string())
            // Port 0: the live view on a free port, never the user-facing default (8798).
            .env("SERVICE_VIEW_PORT", "0")
            .env("RUST_LOG", "local_agent=info,rumqttc=warn")
            .env_remove("SERVICE_ALERT_WEBHOOK")
            .env_remove("SERVICE_ALERT_CA")
            .env_remove("SERVICE_MQTT_PASSWORD_FILE")
            .env_remove("SERVICE_MQTT_CA")
            .env_remove("SERVICE_ENV_FILE");
        cmd
    }

    /// Starts `run` with `args` and these MQTT credentials; stderr goes to a log file.
    pub fn spawn(&mut self, args: &[&str], user: Option<&str>, password: Option<&str>) {
        let log = std::fs::File::create(self.dir.path().join("agent.log")).unwrap();
        let mut cmd = self.command(&[&["run"], args].concat());
        match user {
            Some(u) => cmd.env("SERVICE_MQTT_USERNAME", u),
            None => cmd.env_remove("SERVICE_MQTT_USERNAME"),
        };
        match password {
            Some(p) => cmd.env("SERVICE_MQTT_PASSWORD", p),
            None => cmd.env_remove("SERVICE_MQTT_PASSWORD"),
        };
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the agent starts");
        self.child = Some(child);
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// GET `path` on the engine; `None` until it answers.
    pub async fn get(&self, path: &str) -> Option<serde_json::Value> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .ok()?;
        s.write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                self.port
            )
            .as_bytes(),
        )
        .await
        .ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        let text = String::from_utf8_lossy(&buf);
        let body = text.split_once("\r\n\r\n")?.1;
        serde_json::from_str(body).ok()
    }

    /// Waits until the engine's `/health` satisfies `cond`; returns that body.
    pub async fn health_until(
        &mut self,
        limit: Duration,
        cond: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + limit;
        let mut last = None;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("the agent exited ({status}); its log:\n{}", self.log());
            }
            if let Some(h) = self.get("/health").await {
                if cond(&h) {
                    return h;
                }
                last = Some(h);
            }
            assert!(
                Instant::now() < deadline,
                "/health never matched; last: {last:?}; agent log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, then waits.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the agent did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: no goodbye, the broker must publish the last will.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The config file for an agent publishing to `url`.
pub fn mqtt_config(url: &str, client_id: &str, ca: Option<&Path>) -> String {
    let mut s = format!("mqtt_url = \"{url}\"\nmqtt_client_id = \"{client_id}\"\n");
    if let Some(ca) = ca {
        s.push_str(&format!("mqtt_ca = \"{}\"\n", ca.display()));
    }
    s
}
