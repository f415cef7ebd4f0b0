//! `local-agent node-emulator`: plays a recording as if it were an ESP32 node, at the
//! recording's own pace (the engine's [`Pacer`]), over UDP or WebSocket.
//!
//! What goes on the wire:
//! - UDP: always ADR-018 raw CSI frames (magic 0xC5110001), one per datagram. With a token (or
//!   an explicit `--hub`), the emulator does what a remote node must: it opens a session per
//!   node id (`POST /ingest/session`) and sends every frame in a key-tagged envelope
//!   ([`crate::hub::session`]), opening a new session when the hub answers with a rekey notice.
//!   Without either, frames go out plain, which the hub accepts from loopback only.
//! - WebSocket: a file of esp-csi `CSI_DATA` or ESP32-CSI-Tool lines is sent line by line as
//!   text messages, exactly as a serial bridge would forward them; any other recording
//!   (RuView JSONL, ESPectre `.npz`) is sent as ADR-018 binary messages.
//!
//! ADR-018 frames carry a one-byte node id: `--node-id`, else the recording's node id when it
//! is a number (RuView), else 1. Frames from a recording whose buffer does not fit ADR-018
//! are skipped and counted.

use std::collections::HashMap;
use std::io::BufRead;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::engine::source::{Pacer, SourceError, open_recording};
use crate::hub::auth::TOKEN_HEADER;
use crate::hub::session::{self, KEY_LEN};
use crate::sensing::csi::{CsiFrame, Record, WireFormat, parse_text_line};
use crate::sensing::csi::{MAX_SUBCARRIERS, RawCsiPacket};

/// Where to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Udp(String),
    Ws(String),
}

/// Parses `udp://HOST:PORT` or `ws://HOST:PORT/ingest`.
pub fn parse_target(s: &str) -> Result<Target, EmulatorError> {
    if let Some(rest) = s.strip_prefix("udp://") {
        if rest.is_empty() || rest.contains('/') {
            return Err(EmulatorError::BadTarget(s.to_string()));
        }
        Ok(Target::Udp(rest.to_string()))
    } else if s.starts_with("ws://") {
        Ok(Target::Ws(s.to_string()))
    } else {
        Err(EmulatorError::BadTarget(s.to_string()))
    }
}

/// How to emulate.
#[derive(Debug, Clone)]
pub struct EmulatorOptions {
    pub file: PathBuf,
    pub target: Target,
    /// × real time; `None` sends as fast as possible.
    pub speed: Option<f64>,
    pub token: Option<String>,
    pub node_id: Option<u8>,
    /// The hub's HTTP address for UDP sessions (`http://HOST:PORT`); by default the UDP host
    /// on `SERVICE_SENTINEL_PORT` (8790). Setting it (or a token) makes UDP use sessions.
    pub hub: Option<String>,
}

/// What was sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmulatorStats {
    pub sent: u64,
    /// Records that could not be sent as the chosen format.
    pub skipped: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    #[error("--to must be udp://HOST:PORT or ws://HOST:PORT/ingest, got {0:?}")]
    BadTarget(String),
    #[error("cannot resolve {0}")]
    Resolve(String),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("network error: {0}")]
    Io(#[from] std::io::Error),
    #[error("WebSocket error: {0}")]
    WebSocket(String),
    #[error("the token is not a valid header value")]
    BadToken,
    #[error("cannot open a node session at {url}: {reason}")]
    Session { url: String, reason: String },
}

/// Builds the ADR-018 frame for `frame`, or `None` when its buffer does not fit the format.
pub fn to_packet(frame: &CsiFrame, node_id: u8, sequence: u32) -> Option<RawCsiPacket> {
    let n = frame.csi.len();
    if n == 0 || n > MAX_SUBCARRIERS {
        return None;
    }
    let to_i8 = |v: f32| -> i8 {
        // Parsed buffers hold int8 values exactly; anything else is rounded into range.
        let r = v.round().clamp(-128.0, 127.0);
        r as i8
    };
    let mut buffer = Vec::with_capacity(2 * n);
    for c in &frame.csi {
        buffer.push(to_i8(c.im));
        buffer.push(to_i8(c.re));
    }
    let freq_mhz = match frame.channel {
        Some(14) => 2484,
        Some(ch @ 1..=13) => 2407 + 5 * u32::from(ch),
        Some(ch @ 32..=177) => 5000 + 5 * u32::from(ch),
        _ => 2437,
    };
    Some(RawCsiPacket {
        node_id,
        n_antennas: 1,
        n_subcarriers: u16::try_from(n).ok()?,
        freq_mhz,
        sequence,
        // -1 is the firmware's "no reading" sentinel; the hub reports it as null.
        rssi: frame
            .rssi_dbm
            .and_then(|r| i8::try_from(r).ok())
            .unwrap_or(-1),
        noise_floor: -95,
        reserved: [0, 0],
        buffer,
    })
}

/// True when the file's first CSI record is an esp-csi or ESP32-CSI-Tool line.
fn is_line_file(path: &Path) -> Result<bool, EmulatorError> {
    let file = std::fs::File::open(path).map_err(|source| SourceError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = std::io::BufReader::new(file);
    for line in reader.split(b'\n').take(1000) {
        let Ok(line) = line else {
            // Binary content (an .npz): not a line file.
            return Ok(false);
        };
        let Ok(text) = std::str::from_utf8(&line) else {
            return Ok(false);
        };
        if let Ok(Record::Frame(p)) = parse_text_line(text) {
            return Ok(matches!(
                p.frame.format,
                WireFormat::EspCsi | WireFormat::Esp32CsiTool
            ));
        }
    }
    Ok(false)
}

/// One thing to send, with its recording time.
enum Item {
    Line(String, f64),
    Packet(Vec<u8>, f64),
}

/// Reads the recording into the items to send, in order.
fn load(options: &EmulatorOptions, text: bool) -> Result<(Vec<Item>, u64), EmulatorError> {
    let mut skipped = 0;
    let mut items = Vec::new();
    if text {
        let content = std::fs::read(&options.file).map_err(|source| SourceError::Unreadable {
            path: options.file.clone(),
            source,
        })?;
        for raw in content.split(|&b| b == b'\n') {
            let Ok(line) = std::str::from_utf8(raw) else {
                skipped += 1;
                continue;
            };
            let line = line.trim_end_matches('\r');
            match parse_text_line(line) {
                Ok(Record::Frame(p)) => items.push(Item::Line(line.to_string(), p.frame.t_s)),
                _ if line.trim().is_empty() => {}
                _ => skipped += 1,
            }
        }
    } else {
        let mut source = open_recording(&options.file)?;
        let mut seq: HashMap<u8, u32> = HashMap::new();
        while let Some(frame) = source.next_frame() {
            let node = options
                .node_id
                .or_else(|| frame.node_id.parse::<u8>().ok())
                .unwrap_or(1);
            let s = seq.entry(node).or_insert(0);
            match to_packet(&frame, node, *s) {
                Some(p) => {
                    *s = s.wrapping_add(1);
                    items.push(Item::Packet(p.to_bytes(), frame.t_s));
                }
                None => skipped += 1,
            }
        }
    }
    Ok((items, skipped))
}

/// Plays the recording to the target until it ends or `stop` is set. Blocks; runs its own
/// single-threaded runtime for the WebSocket client.
pub fn run(options: &EmulatorOptions, stop: &AtomicBool) -> Result<EmulatorStats, EmulatorError> {
    let text = matches!(options.target, Target::Ws(_)) && is_line_file(&options.file)?;
    let (items, skipped) = load(options, text)?;
    let mut pacer = Pacer::new(options.speed)?;
    let mut stats = EmulatorStats { sent: 0, skipped };
    match &options.target {
        Target::Udp(hostport) => {
            let addr: SocketAddr = hostport
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| EmulatorError::Resolve(hostport.clone()))?;
            let local: SocketAddr = if addr.is_ipv4() {
                "0.0.0.0:0"
                    .parse()
                    .map_err(|_| EmulatorError::Resolve(hostport.clone()))?
            } else {
                "[::]:0"
                    .parse()
                    .map_err(|_| EmulatorError::Resolve(hostport.clone()))?
            };
            let socket = UdpSocket::bind(local)?;
            socket.connect(addr)?;
            let mut sessions = (options.token.is_some() || options.hub.is_some())
                .then(|| NodeSessions::new(options, hostport))
                .transpose()?;
            if sessions.is_some() {
                socket.set_nonblocking(true)?;
            }
            for item in items {
                let (bytes, t) = match &item {
                    Item::Packet(b, t) => (b.as_slice(), *t),
                    Item::Line(l, t) => (l.as_bytes(), *t),
                };
                if !sleep_until(pacer.due(t), stop) {
                    break;
                }
                let sealed;
                let bytes = match sessions.as_mut() {
                    Some(s) => {
                        s.read_notices(&socket)?;
                        sealed = s.seal(bytes)?;
                        sealed.as_slice()
                    }
                    None => bytes,
                };
                // A refused datagram (nothing listening yet) is not fatal for an emulator.
                if socket.send(bytes).is_ok() {
                    stats.sent += 1;
                }
            }
        }
        Target::Ws(url) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let mut request = url
                    .as_str()
                    .into_client_request()
                    .map_err(|e| EmulatorError::WebSocket(e.to_string()))?;
                if let Some(token) = &options.token {
                    let value =
                        http::HeaderValue::from_str(token).map_err(|_| EmulatorError::BadToken)?;
                    request.headers_mut().insert(TOKEN_HEADER, value);
                }
                let (mut ws, _) = tokio_tungstenite::connect_async(request)
                    .await
                    .map_err(|e| EmulatorError::WebSocket(e.to_string()))?;
                for item in items {
                    let (message, t) = match item {
                        Item::Line(l, t) => (Message::Text(l.into()), t),
                        Item::Packet(b, t) => (Message::Binary(b.into()), t),
                    };
                    if let Some(due) = pacer.due(t) {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        // Sleep in slices so a stop request is noticed.
                        while Instant::now() < due {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            let left = due.saturating_duration_since(Instant::now());
                            tokio::time::sleep(left.min(Duration::from_millis(50))).await;
                        }
                    }
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    ws.send(message)
                        .await
                        .map_err(|e| EmulatorError::WebSocket(e.to_string()))?;
                    stats.sent += 1;
                }
                let _ = ws.close(None).await;
                Ok::<(), EmulatorError>(())
            })?;
        }
    }
    Ok(stats)
}

/// One open session of the emulator.
struct Open {
    session_id: u64,
    key: [u8; KEY_LEN],
    counter: u64,
}

/// The emulator's sessions, one per node id, opened on first use.
struct NodeSessions {
    url: String,
    token: Option<String>,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    open: HashMap<u8, Open>,
}

/// The hub URL for a UDP `HOST:PORT` target: the same host on `SERVICE_SENTINEL_PORT` (8790).
fn default_hub(hostport: &str) -> String {
    let host = hostport.rsplit_once(':').map_or(hostport, |(h, _)| h);
    let port = std::env::var(crate::hub::PORT_ENV)
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(crate::hub::DEFAULT_PORT);
    format!("http://{host}:{port}")
}

impl NodeSessions {
    fn new(options: &EmulatorOptions, hostport: &str) -> Result<Self, EmulatorError> {
        let base = options.hub.clone().unwrap_or_else(|| default_hub(hostport));
        let url = format!("{}/ingest/session", base.trim_end_matches('/'));
        let fail = |reason: String| EmulatorError::Session {
            url: url.clone(),
            reason,
        };
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Self {
            url,
            token: options.token.clone(),
            runtime,
            client,
            open: HashMap::new(),
        })
    }

    fn handshake(&self, node_id: u8) -> Result<Open, EmulatorError> {
        let fail = |reason: String| EmulatorError::Session {
            url: self.url.clone(),
            reason,
        };
        let mut request = self
            .client
            .post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::json!({ "node_id": node_id }).to_string());
        if let Some(token) = &self.token {
            request = request.header(TOKEN_HEADER, token);
        }
        let body: serde_json::Value = self.runtime.block_on(async {
            let response = request.send().await.map_err(|e| fail(e.to_string()))?;
            let status = response.status();
            let bytes = response.bytes().await.map_err(|e| fail(e.to_string()))?;
            let body: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|e| fail(format!("the answer is not JSON: {e}")))?;
            if status != reqwest::StatusCode::CREATED {
                return Err(fail(format!("HTTP {status}: {}", body["detail"])));
            }
            Ok(body)
        })?;
        let session_id = body["session_id"]
            .as_str()
            .and_then(session::from_hex::<8>)
            .map(u64::from_be_bytes)
            .ok_or_else(|| fail("no session_id in the answer".into()))?;
        let key = body["key"]
            .as_str()
            .and_then(session::from_hex::<KEY_LEN>)
            .ok_or_else(|| fail("no key in the answer".into()))?;
        Ok(Open {
            session_id,
            key,
            counter: 0,
        })
    }

    /// Wraps one ADR-018 packet under its node's session.
    fn seal(&mut self, packet: &[u8]) -> Result<Vec<u8>, EmulatorError> {
        // Byte 4 of every ADR-018 packet the emulator sends is the node id.
        let node_id = packet.get(4).copied().unwrap_or(0);
        if !self.open.contains_key(&node_id) {
            let open = self.handshake(node_id)?;
            self.open.insert(node_id, open);
        }
        let Some(open) = self.open.get_mut(&node_id) else {
            return Err(EmulatorError::Session {
                url: self.url.clone(),
                reason: "session vanished".into(),
            });
        };
        open.counter += 1;
        Ok(session::seal(
            &open.key,
            open.session_id,
            open.counter,
            packet,
        ))
    }

    /// Reads pending rekey notices; a node whose session the hub forgot opens a new one.
    fn read_notices(&mut self, socket: &UdpSocket) -> Result<(), EmulatorError> {
        let mut buf = [0u8; 64];
        loop {
            match socket.recv(&mut buf) {
                Ok(n) => {
                    if let Some(forgotten) = session::parse_rekey(&buf[..n]) {
                        self.open.retain(|_, o| o.session_id != forgotten);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                // ICMP "port unreachable" for an earlier datagram: nothing listens yet.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Sleeps until `due` in slices; false when `stop` was set.
fn sleep_until(due: Option<Instant>, stop: &AtomicBool) -> bool {
    if let Some(due) = due {
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now >= due {
                break;
            }
            std::thread::sleep((due - now).min(Duration::from_millis(50)));
        }
    }
    !stop.load(Ordering::Relaxed)
}

/// Runs [`run`] on its own thread; set the flag to stop it.
pub fn spawn(
    options: EmulatorOptions,
) -> (
    Arc<AtomicBool>,
    std::thread::JoinHandle<Result<EmulatorStats, EmulatorError>>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handle = std::thread::spawn(move || run(&options, &flag));
    (stop, handle)
}
