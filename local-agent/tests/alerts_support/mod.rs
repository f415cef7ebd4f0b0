//! A real alert receiver for the Away Alerts tests: hyper over tokio-rustls on loopback, with a
//! certificate from a test CA made per test (rcgen), answering a scripted sequence of statuses and
//! recording every request it got.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A unique, empty temp directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "alerts-{name}-{}-{}",
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

/// A test certificate authority.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// Writes the CA certificate (PEM) into `dir` and returns its path.
    pub fn write_pem(&self, dir: &Path) -> PathBuf {
        let path = dir.join(format!("ca-{}.pem", local_agent::alerts::new_alert_id()));
        std::fs::write(&path, &self.pem).unwrap();
        path
    }

    /// A server config with a certificate for `localhost` and `127.0.0.1` issued by this CA.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Arc::new(
            ServerConfig::builder()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap(),
        )
    }
}

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    /// The status it was answered with.
    pub answered: u16,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn key(&self) -> String {
        self.header("idempotency-key").unwrap_or("").to_string()
    }
}

#[derive(Default)]
struct Script {
    queue: VecDeque<u16>,
    default: u16,
}

#[derive(Default)]
struct Shared {
    script: Mutex<Script>,
    received: Mutex<Vec<Received>>,
}

/// A running receiver on 127.0.0.1; stops when dropped.
pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    /// HTTPS with `tls`. Answers `first` in order, then `then` for every later request.
    pub fn https(tls: Arc<ServerConfig>, first: &[u16], then: u16) -> Self {
        Self::start(Some(TlsAcceptor::from(tls)), first, then)
    }

    /// Plain HTTP (for the loopback `http://` case).
    pub fn http(first: &[u16], then: u16) -> Self {
        Self::start(None, first, then)
    }

    fn start(tls: Option<TlsAcceptor>, first: &[u16], then: u16) -> Self {
        let shared = Arc::new(Shared {
            script: Mutex::new(Script {
                queue: first.iter().copied().collect(),
                default: then,
            }),
            received: Mutex::default(),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread_shared = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let (stream, _) = tokio::select! {
                        accepted = listener.accept() => match accepted {
                            Ok(a) => a,
                            Err(_) => continue,
                        },
                        _ = &mut stop_rx => break,
                    };
                    let shared = thread_shared.clone();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |req| handle(shared.clone(), req));
                        let http = hyper::server::conn::http1::Builder::new();
                        match tls {
                            Some(acceptor) => {
                                // A client that rejects our certificate ends the handshake here.
                                if let Ok(tls_stream) = acceptor.accept(stream).await {
                                    let _ = http
                                        .serve_connection(TokioIo::new(tls_stream), service)
                                        .await;
                                }
                            }
                            None => {
                                let _ = http.serve_connection(TokioIo::new(stream), service).await;
                            }
                        }
                    });
                }
            });
        });
        Self {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Every later request (after the scripted ones) is answered with `status`.
    pub fn answer_from_now_on(&self, status: u16) {
        let mut s = self.shared.script.lock().unwrap();
        s.queue.clear();
        s.default = status;
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    pub fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://{}{path}", self.addr)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let status = {
        let mut s = shared.script.lock().unwrap();
        let d = s.default;
        s.queue.pop_front().unwrap_or(d)
    };
    shared.received.lock().unwrap().push(Received {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        headers: parts.headers,
        body,
        answered: status,
    });
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap())
}

/// Polls `cond` every 20 ms until it holds or `limit` passes; returns whether it held.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Async twin of [`wait_until`].
pub async fn wait_until_async(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A loopback port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Stand-in for the hub's loopback control route (`POST /control/away {"on": bool}`, `GET
/// /control/away`, both answering `{"away": bool}`), which lives on the hub's branch: it follows
/// that contract so the CLI is tested against the shape the hub serves.
pub struct ControlRoute {
    pub port: u16,
    pub away: local_agent::alerts::AwayMode,
    pub requests: Arc<Mutex<Vec<(String, String)>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ControlRoute {
    pub fn start() -> Self {
        let away = local_agent::alerts::AwayMode::default();
        let requests: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (t_away, t_requests) = (away.clone(), requests.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let (stream, _) = tokio::select! {
                        Ok(a) = listener.accept() => a,
                        _ = &mut stop_rx => break,
                    };
                    let (away, requests) = (t_away.clone(), t_requests.clone());
                    tokio::spawn(async move {
                        let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                            let (away, requests) = (away.clone(), requests.clone());
                            async move {
                                let method = req.method().to_string();
                                let path = req.uri().path().to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                requests.lock().unwrap().push((
                                    format!("{method} {path}"),
                                    String::from_utf8_lossy(&body).into_owned(),
                                ));
                                let status = match (method.as_str(), path.as_str()) {
                                    ("POST", "/control/away") => {
                                        match serde_json::from_slice::<serde_json::Value>(&body)
                                            .ok()
                                            .and_then(|v| v["on"].as_bool())
                                        {
                                            Some(on) => {
                                                away.set(on);
                                                200
                                            }
                                            None => 400,
                                        }
                                    }
                                    ("GET", "/control/away") => 200,
                                    _ => 404,
                                };
                                let reply = if status == 200 {
                                    format!("{{\"away\":{}}}", away.is_on())
                                } else {
                                    "{\"error\":\"bad_request\",\"detail\":\"x\"}".to_string()
                                };
                                Ok::<_, hyper::Error>(
                                    Response::builder()
                                        .status(status)
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(reply)))
                                        .unwrap(),
                                )
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
        });
        Self {
            port,
            away,
            requests,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for ControlRoute {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
