//! This computer: the agent's ports and the UDP ingest path.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::common::{boxed, live_hub};
use crate::doctor::{Check, CheckFuture, Context, Finding};

/// Engine, hub, UDP and view ports: free, or held by this agent.
pub struct PortsCheck;

/// What holds a TCP port, as far as a loopback HTTP probe can tell.
async fn identify(port: u16) -> Option<&'static str> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .ok()?;
    let reply = client
        .get(format!("http://127.0.0.1:{port}/health"))
        .send()
        .await
        .ok()?;
    if reply.headers().contains_key(crate::runtime::VIEW_HEADER) {
        return Some("a local-agent live view");
    }
    let bytes = reply.bytes().await.ok()?;
    let body: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    if body["model"]
        .as_str()
        .is_some_and(|m| m.starts_with("csi-dsp-pipeline"))
    {
        Some("a local-agent engine")
    } else if body.get("token_configured").is_some() {
        Some("a local-agent hub")
    } else {
        None
    }
}

async fn tcp_port(check: &str, what: &str, ip: Ipv4Addr, port: u16, hint: &str) -> Finding {
    match TcpListener::bind((ip, port)) {
        Ok(_) => Finding::ok(check, format!("{what} port {port} is free.")),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => match identify(port).await {
            Some(who) => Finding::warning(
                check,
                format!(
                    "{what} port {port} is held by {who} whose live view could not be reached."
                ),
                "Stop that agent, or run `local-agent doctor` with the same SERVICE_DATA_DIR so it finds the running agent's view.",
            ),
            None => Finding::problem(
                check,
                format!(
                    "{what} port {port} is held by another program, so the agent cannot start its {what}."
                ),
                format!("Stop the other program, or choose another port with {hint}."),
            ),
        },
        Err(e) => Finding::problem(
            check,
            format!("{what} port {port} cannot be opened: {e}."),
            format!("Choose another port with {hint}."),
        ),
    }
}

impl Check for PortsCheck {
    fn id(&self) -> &'static str {
        "ports"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        boxed(async move {
            let id = self.id();
            let p = ctx.ports;
            if let Some(live) = &ctx.live {
                let mut out = vec![Finding::ok(
                    id,
                    format!("Engine listens on {} (this agent).", live.engine_addr),
                )];
                out.push(match &live.hub {
                    Some(h) => Finding::ok(
                        id,
                        format!(
                            "Hub listens on {} with UDP ingest on {} (this agent).",
                            h.addr, h.udp_addr
                        ),
                    ),
                    None => {
                        let tcp_taken = TcpListener::bind((Ipv4Addr::UNSPECIFIED, p.hub)).is_err();
                        let which = if tcp_taken {
                            format!("hub port {}", p.hub)
                        } else {
                            format!("UDP ingest port {}", p.csi)
                        };
                        Finding::problem(
                            id,
                            format!("The hub is not running: {which} is held by another program, so nodes cannot send to this agent."),
                            "Stop the other program (another agent, or RuView's server), or start with --hub-port / --csi-port.",
                        )
                    }
                });
                if let Some(v) = live.view_addr {
                    out.push(Finding::ok(
                        id,
                        format!("Live view listens on {v} (this agent)."),
                    ));
                }
                return out;
            }
            let lo = Ipv4Addr::LOCALHOST;
            let any = Ipv4Addr::UNSPECIFIED;
            let mut out = vec![
                tcp_port(id, "engine", lo, p.engine, "--port or SERVICE_ENGINE_PORT").await,
                tcp_port(id, "hub", any, p.hub, "--hub-port or SERVICE_SENTINEL_PORT").await,
                tcp_port(
                    id,
                    "live view",
                    lo,
                    p.view,
                    "--view-port or SERVICE_VIEW_PORT",
                )
                .await,
            ];
            out.push(match UdpSocket::bind((any, p.csi)) {
                Ok(_) => Finding::ok(id, format!("UDP ingest port {} is free.", p.csi)),
                Err(e) => Finding::problem(
                    id,
                    format!("UDP ingest port {} cannot be opened ({e}): another program holds it, so nodes' packets would not reach the agent.", p.csi),
                    "Stop the other program (another agent, or RuView's server), or choose another port with --csi-port or SERVICE_CSI_PORT.",
                ),
            });
            out
        })
    }
}

// ---------------------------------------------------------------------------------------------

/// A datagram from this computer reaches the hub's UDP socket.
pub struct UdpIngestCheck;

/// An ADR-018 magic nobody uses: the hub counts it as `ignored` and nothing else happens.
pub const PROBE_DATAGRAM: [u8; 8] = [0xD0, 0xC7, 0x0D, 0xC5, 0, 0, 0, 0];

impl Check for UdpIngestCheck {
    fn id(&self) -> &'static str {
        "udp_ingest"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        boxed(async move {
            let id = self.id();
            let Some(hub) = live_hub(ctx) else {
                return Vec::new();
            };
            let target = SocketAddr::from((Ipv4Addr::LOCALHOST, hub.udp_addr.port()));
            let counter = &hub.registry.counters.ignored;
            let before = counter.load(Ordering::Relaxed);
            let sent = match tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await {
                Ok(s) => s.send_to(&PROBE_DATAGRAM, target).await.map(|_| ()),
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                return vec![Finding::problem(
                    id,
                    format!("A test datagram to {target} could not be sent: {e}."),
                    "Check that nothing on this computer blocks loopback UDP.",
                )];
            }
            let deadline = Instant::now() + Duration::from_secs(2);
            while counter.load(Ordering::Relaxed) == before && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let mut out = Vec::new();
            if counter.load(Ordering::Relaxed) > before {
                out.push(Finding::ok(
                    id,
                    format!(
                        "A test datagram sent from this computer to UDP port {} reached the hub.",
                        target.port()
                    ),
                ));
            } else {
                out.push(Finding::problem(
                    id,
                    format!(
                        "A test datagram sent to UDP port {} did not reach the hub within 2 s.",
                        target.port()
                    ),
                    "Restart the agent; if it persists, another program may be sharing the port.",
                ));
            }
            if hub.udp_addr.ip().is_loopback() {
                out.push(Finding::warning(
                    id,
                    format!(
                        "UDP ingest listens on {} only, so nodes on the network cannot reach it.",
                        hub.udp_addr
                    ),
                    "Run the agent with its default hub address (all interfaces).",
                ));
            }
            out
        })
    }
}
