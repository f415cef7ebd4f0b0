//! The checks. Each returns findings with the fix in one sentence.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Check, CheckFuture, Context, Finding, LiveHub};
use crate::alerts::config::{CA_ENV, WEBHOOK_ENV};
use crate::hub::diagnostics::{
    CLOCK_DRIFT_WARN, GAIN_UNLOCKED_DB, GAP_S, MIN_VITALS_HZ, NodeHealthView, RSSI_LOW_DBM,
    RSSI_SATURATED_DBM,
};
use crate::hub::registry::NodeView;
use crate::sensing::pipeline::PipelineConfig;
use crate::sensing::presence::CalibrationHold;

/// Calibration running longer than this (with frames arriving) is stuck.
pub const CALIBRATION_STUCK_S: f64 = 60.0;
/// Tests shorten the wait (documented in the README's maintainer section).
pub const CALIBRATION_STUCK_ENV: &str = "SERVICE_DOCTOR_CALIBRATION_STUCK_S";

/// [`CALIBRATION_STUCK_S`], or the test override.
pub fn calibration_stuck_s() -> f64 {
    static VALUE: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *VALUE.get_or_init(|| {
        std::env::var(CALIBRATION_STUCK_ENV)
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(CALIBRATION_STUCK_S)
    })
}
/// A node whose 95th-percentile arrival interval exceeds this multiple of the median sends in
/// bursts.
pub const BURST_RATIO: f64 = 5.0;

fn boxed<'a>(f: impl std::future::Future<Output = Vec<Finding>> + Send + 'a) -> CheckFuture<'a> {
    Box::pin(f)
}

/// Nodes with their health, joined by id.
fn nodes(hub: &LiveHub) -> Vec<(NodeView, Option<NodeHealthView>)> {
    let health = hub.registry.health();
    hub.registry
        .view()
        .into_iter()
        .map(|n| {
            let h = health.iter().find(|h| h.id == n.id).cloned();
            (n, h)
        })
        .collect()
}

fn live_hub(ctx: &Context) -> Option<&LiveHub> {
    ctx.live.as_ref().and_then(|l| l.hub.as_ref())
}

// ---------------------------------------------------------------------------------------------

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
    if reply
        .headers()
        .contains_key(crate::view::server::VIEW_HEADER)
    {
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

// ---------------------------------------------------------------------------------------------

/// Nodes seen, online, feeding the pipeline, and their packet rates.
pub struct NodesCheck;

impl Check for NodesCheck {
    fn id(&self) -> &'static str {
        "nodes"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        boxed(async move {
            let id = self.id();
            let Some(hub) = live_hub(ctx) else {
                return Vec::new();
            };
            let list = nodes(hub);
            let c = hub.registry.counters.view();
            if list.is_empty() {
                let mut detail = format!(
                    "No node has sent anything to UDP port {} or ws://<this computer>:{}/ingest.",
                    hub.udp_addr.port(),
                    hub.addr.port()
                );
                let mut fix = "Point each node at this computer's LAN address and that port, and check that a firewall lets UDP in.".to_string();
                if c.unknown_sender > 0 {
                    detail.push_str(&format!(
                        " {} datagrams from unknown senders were dropped.",
                        c.unknown_sender
                    ));
                    fix = format!(
                        "Add the nodes' IP addresses to SERVICE_CSI_ALLOW (or --csi-allow), or let them prove the token over WebSocket; {} datagrams were refused.",
                        c.unknown_sender
                    );
                } else if c.malformed > 0 {
                    detail.push_str(&format!(" {} packets could not be decoded.", c.malformed));
                    fix = "Send ADR-018 frames over UDP, or esp-csi / ESP32-CSI-Tool lines over WebSocket (see the README's formats table).".into();
                }
                return vec![Finding::warning(id, detail, fix)];
            }
            let mut out = Vec::new();
            if !hub.feeding {
                out.push(Finding::problem(
                    id,
                    format!(
                        "{} node(s) send to the hub, but the engine runs another source, so nothing from them shows ({} frames not fed).",
                        list.len(),
                        c.not_fed
                    ),
                    "Start the agent with `--source hub`.",
                ));
            }
            for (n, h) in &list {
                out.push(assess_node(id, n, h.as_ref()));
            }
            out
        })
    }
}

/// The rate and drop verdict on one node.
pub fn assess_node(id: &str, n: &NodeView, h: Option<&NodeHealthView>) -> Finding {
    if !n.online {
        return Finding::warning(
            id,
            format!("{} is offline: nothing since {}.", n.id, n.last_seen),
            format!("Check {}'s power and Wi-Fi connection.", n.id),
        );
    }
    let channel = h
        .and_then(|h| h.channel)
        .map(|c| format!(" on channel {c}"))
        .unwrap_or_default();
    let rssi = n
        .rssi_dbm
        .map(|r| format!(", RSSI {r} dBm"))
        .unwrap_or_default();
    // The EWMA needs a few packets; until then use the 10 s block rate.
    let rate = if n.rate_hz > 0.0 {
        n.rate_hz
    } else {
        h.and_then(|h| h.expected_hz).unwrap_or(0.0)
    };
    if rate > 0.0 && rate < MIN_VITALS_HZ {
        return Finding::problem(
            id,
            format!(
                "{} sends {rate:.1} packets/s{channel}: presence and motion work, but breathing and heart rate need at least {MIN_VITALS_HZ:.0} packets/s.",
                n.id
            ),
            format!(
                "Raise {}'s CSI rate to 50–100 packets/s (its ping or traffic rate in the firmware).",
                n.id
            ),
        );
    }
    if let Some(h) = h {
        if h.drops.queue_full > 0 {
            return Finding::warning(
                id,
                format!(
                    "{} sends {rate:.1} packets/s{channel}{rssi}, but {} of its frames were dropped because the pipeline fell behind.",
                    n.id, h.drops.queue_full
                ),
                "Lower the nodes' packet rates or give the agent more CPU.",
            );
        }
        if h.drops.rate_limited > 0 {
            return Finding::warning(
                id,
                format!(
                    "{} sends above the hub's cap of 500 packets/s: {} packets were dropped.",
                    n.id, h.drops.rate_limited
                ),
                format!("Lower {}'s CSI rate to 100 packets/s or less.", n.id),
            );
        }
        if let Some(exp) = h.expected_hz
            && exp > 0.0
            && ((rate - exp) / exp).abs() > 0.3
        {
            return Finding::warning(
                id,
                format!(
                    "{} sends {rate:.1} packets/s{channel}, off its usual {exp:.1} packets/s.",
                    n.id
                ),
                format!(
                    "Check {}'s Wi-Fi link (distance, interference, power saving).",
                    n.id
                ),
            );
        }
    }
    Finding::ok(
        id,
        format!("{} sends {rate:.1} packets/s{channel}{rssi}.", n.id),
    )
}

// ---------------------------------------------------------------------------------------------

/// Per-node checks over the health view: one finding per node, or one `ok` when none applies.
fn per_node<'a>(
    ctx: &'a Context,
    id: &'static str,
    judge: impl Fn(&NodeView, &NodeHealthView) -> Option<Finding> + Send + 'a,
    ok: &'static str,
) -> CheckFuture<'a> {
    boxed(async move {
        let Some(hub) = live_hub(ctx) else {
            return Vec::new();
        };
        let list = nodes(hub);
        if list.is_empty() {
            return Vec::new();
        }
        let mut out: Vec<Finding> = list
            .iter()
            .filter_map(|(n, h)| h.as_ref().and_then(|h| judge(n, h)))
            .collect();
        if out.is_empty() {
            out.push(Finding::ok(id, ok));
        }
        out
    })
}

/// Bursts and gaps in the arrivals.
pub struct TimingCheck;

impl Check for TimingCheck {
    fn id(&self) -> &'static str {
        "timing"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        per_node(
            ctx,
            self.id(),
            |n, h| timing_verdict(self.id(), n, h),
            "Packets arrive evenly, without gaps.",
        )
    }
}

pub fn timing_verdict(id: &str, n: &NodeView, h: &NodeHealthView) -> Option<Finding> {
    if h.gaps_recent > 0 {
        return Some(Finding::warning(
            id,
            format!(
                "{} had {} gap(s) longer than {GAP_S:.0} s in the last 10 minutes (longest {:.1} s); each restarts the breathing window.",
                n.id,
                h.gaps_recent,
                h.longest_gap_s.unwrap_or(0.0)
            ),
            format!(
                "Move {} closer to the access point, turn off Wi-Fi power saving in its firmware, and check its power supply.",
                n.id
            ),
        ));
    }
    match (h.interval_p50_ms, h.interval_p95_ms, h.burstiness) {
        (Some(p50), Some(p95), Some(b)) if b > BURST_RATIO => Some(Finding::warning(
            id,
            format!(
                "{} sends in bursts: half its packets come {p50:.1} ms apart, 5% wait {p95:.0} ms or more.",
                n.id
            ),
            format!(
                "Turn off Wi-Fi power saving on {} and make sure nothing buffers its packets (a serial bridge, a VPN).",
                n.id
            ),
        )),
        _ => None,
    }
}

/// Channel changes: the access point moved, so the calibration is stale.
pub struct ChannelCheck;

impl Check for ChannelCheck {
    fn id(&self) -> &'static str {
        "channel"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        per_node(
            ctx,
            self.id(),
            |n, h| {
                (h.channel_changes > 0).then(|| {
                    let last = h
                        .events
                        .iter()
                        .find(|e| e.kind == crate::hub::diagnostics::EventKind::Channel)
                        .map(|e| format!(" (last at {}: {})", e.at, e.detail))
                        .unwrap_or_default();
                    Finding::warning(
                        self.id(),
                        format!(
                            "{}'s Wi-Fi channel changed {} time(s){last}; the empty-room calibration was learned on the old channel.",
                            n.id, h.channel_changes
                        ),
                        "Fix the access point's channel in its settings (no automatic channel), then restart the agent to calibrate again.",
                    )
                })
            },
            "No node changed its Wi-Fi channel.",
        )
    }
}

/// RSSI too low or saturating.
pub struct RssiCheck;

impl Check for RssiCheck {
    fn id(&self) -> &'static str {
        "rssi"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        per_node(
            ctx,
            self.id(),
            |n, h| {
                let mean = h.rssi_mean_dbm?;
                if mean < RSSI_LOW_DBM {
                    Some(Finding::warning(
                        self.id(),
                        format!(
                            "{}'s signal is weak (RSSI {mean:.0} dBm on average, below {RSSI_LOW_DBM:.0}): the CSI is noisy and breathing will rarely pass its gates.",
                            n.id
                        ),
                        format!(
                            "Move {} or the access point closer together (3–8 m with the person between them works best).",
                            n.id
                        ),
                    ))
                } else if h
                    .rssi_max_dbm
                    .is_some_and(|m| f64::from(m) > RSSI_SATURATED_DBM)
                {
                    Some(Finding::warning(
                        self.id(),
                        format!(
                            "{}'s signal is saturating the receiver (RSSI up to {} dBm, above {RSSI_SATURATED_DBM:.0}): amplitudes clip and small movements vanish.",
                            n.id,
                            h.rssi_max_dbm.unwrap_or_default()
                        ),
                        format!(
                            "Move {} further from the access point (at least 1–2 m), or lower the access point's transmit power.",
                            n.id
                        ),
                    ))
                } else {
                    None
                }
            },
            "Signal strength is within -80 to -30 dBm for every node that reports it.",
        )
    }
}

/// Automatic gain still on.
pub struct GainCheck;

impl Check for GainCheck {
    fn id(&self) -> &'static str {
        "gain"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        per_node(
            ctx,
            self.id(),
            |n, h| {
                let reported = h.reported_gain.is_some() && h.gain_changes > 0;
                let jitter = h.gain_jitter_db.filter(|j| *j > GAIN_UNLOCKED_DB);
                (reported || jitter.is_some()).then(|| {
                    let why = match jitter {
                        Some(j) => format!("the CSI amplitude jumps {j:.1} dB from packet to packet (locked gain stays under {GAIN_UNLOCKED_DB} dB)"),
                        None => format!("the node reported {} gain changes", h.gain_changes),
                    };
                    Finding::warning(
                        self.id(),
                        format!("{}'s receive gain is not locked: {why}, which hides small motion and breathing.", n.id),
                        format!("Lock the gain in {}'s firmware (ESPectre and esp-csi have a gain-lock option) and restart it.", n.id),
                    )
                })
            },
            "Receive gain looks locked on every node (or not enough packets yet to judge).",
        )
    }
}

/// Node clocks against arrival time.
pub struct ClockCheck;

impl Check for ClockCheck {
    fn id(&self) -> &'static str {
        "clock"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        per_node(
            ctx,
            self.id(),
            |n, h| {
                if h.clock_jumps > 0 {
                    return Some(Finding::warning(
                        self.id(),
                        format!(
                            "{}'s timestamps jumped {} time(s) against arrival time (a reboot or clock reset); each restarts the estimates.",
                            n.id, h.clock_jumps
                        ),
                        format!(
                            "Check {}'s power supply and firmware logs for resets.",
                            n.id
                        ),
                    ));
                }
                let d = h.clock_drift?;
                (d.abs() > CLOCK_DRIFT_WARN).then(|| {
                    Finding::warning(
                        self.id(),
                        format!(
                            "{}'s timestamps run {:.1}% {} than this computer's clock, so rates computed from them are off by as much.",
                            n.id,
                            d.abs() * 100.0,
                            if d > 0.0 { "faster" } else { "slower" }
                        ),
                        format!("Check that {} stamps packets in microseconds since boot and that nothing replays or buffers them.", n.id),
                    )
                })
            },
            "Node timestamps keep pace with arrival time (nodes sending ADR-018 carry none).",
        )
    }
}

// ---------------------------------------------------------------------------------------------

/// Calibration that never finishes, and why.
pub struct CalibrationCheck;

pub fn hold_sentence(hold: Option<CalibrationHold>) -> &'static str {
    match hold {
        Some(CalibrationHold::Breathing) => {
            "someone is in view and breathing, and a person is never learned as the empty room"
        }
        Some(CalibrationHold::Motion) => "motion keeps interrupting it",
        Some(CalibrationHold::Unsteady) => {
            "the signal is not steady enough (interference, a fan, or an unstable node)"
        }
        None => "it is still collecting quiet data",
    }
}

fn hold_fix(hold: Option<CalibrationHold>) -> &'static str {
    match hold {
        Some(CalibrationHold::Breathing) | Some(CalibrationHold::Motion) => {
            "Leave the room empty and still for half a minute (pets, fans and curtains move too); presence works on a default threshold meanwhile."
        }
        _ => {
            "Check the nodes' timing, gain and RSSI findings above, and keep moving things (fans, curtains) out of the link."
        }
    }
}

impl Check for CalibrationCheck {
    fn id(&self) -> &'static str {
        "calibration"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        boxed(async move {
            let id = self.id();
            let Some(live) = &ctx.live else {
                return Vec::new();
            };
            let snap = live.snapshots.borrow().clone();
            if !snap.is_fresh(Instant::now()) {
                return vec![Finding::warning(
                    id,
                    "No frames reach the engine, so nothing can be calibrated or estimated.",
                    if snap.source.is_live() {
                        "Get a node online (see the nodes findings)."
                    } else {
                        "The source has stopped (a replay that ended); restart the agent."
                    },
                )];
            }
            let e = &snap.estimates;
            let need = PipelineConfig::default().calibration_s;
            if !e.calibrating {
                return vec![Finding::ok(id, "The empty-room calibration is done.")];
            }
            let for_s = live.history.calibrating_for().map(|d| d.as_secs_f64());
            let pct = (e.calibration_progress * 100.0).round();
            match for_s {
                Some(s) if s > calibration_stuck_s() => vec![Finding::warning(
                    id,
                    format!(
                        "Calibration has not finished after {s:.0} s (it needs {need:.0} s of quiet, {pct:.0}% collected): {}.",
                        hold_sentence(e.calibration_hold)
                    ),
                    hold_fix(e.calibration_hold),
                )],
                _ => vec![Finding::ok(
                    id,
                    format!(
                        "Calibrating the empty room: {pct:.0}% of {need:.0} s of quiet collected."
                    ),
                )],
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------

/// The alert address: configured, and reachable by a TLS handshake (nothing is sent).
pub struct AlertsCheck;

impl Check for AlertsCheck {
    fn id(&self) -> &'static str {
        "alerts"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        boxed(async move {
            let id = self.id();
            let config = match &ctx.alert {
                Ok(c) => c,
                Err(e) => {
                    return vec![Finding::problem(
                        id,
                        format!("The alert settings cannot be used: {e}."),
                        format!(
                            "Fix {WEBHOOK_ENV} / {CA_ENV} or the config file as the message says."
                        ),
                    )];
                }
            };
            let Some(address) = &config.webhook else {
                return vec![Finding::warning(
                    id,
                    "No alert address is configured: alerts are only kept in the local alert log.",
                    format!(
                        "Set {WEBHOOK_ENV} (or alert_webhook in the config file) to your ntfy topic or webhook, then run `local-agent alert test`."
                    ),
                )];
            };
            match super::tls::probe(address, config.extra_ca.as_deref()).await {
                Ok(how) => vec![Finding::ok(
                    id,
                    format!("{address} is reachable: {how} (no alert was sent)."),
                )],
                Err(e) => vec![Finding::problem(
                    id,
                    format!("{address} cannot be reached: {e}."),
                    "Check the address, that the receiver is up, and its certificate (a private CA goes in SERVICE_ALERT_CA); alerts queue and retry meanwhile.",
                )],
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------

/// The data directory can be written.
pub struct DataDirCheck;

pub fn write_probe(dir: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!(".doctor-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&path)?;
        f.write_all(b"doctor write test\n")?;
        f.sync_all()
    })();
    let _ = std::fs::remove_file(&path);
    result
}

impl Check for DataDirCheck {
    fn id(&self) -> &'static str {
        "data_dir"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        boxed(async move {
            let id = self.id();
            let dir = match &ctx.data_dir {
                Ok(d) => d.clone(),
                Err(e) => {
                    return vec![Finding::problem(
                        id,
                        format!("There is no data directory: {e}."),
                        "Set SERVICE_DATA_DIR to a directory the agent may write.",
                    )];
                }
            };
            let probe_dir = dir.clone();
            let result = tokio::task::spawn_blocking(move || write_probe(&probe_dir)).await;
            match result {
                Ok(Ok(())) => vec![Finding::ok(id, format!("{} is writable.", dir.display()))],
                Ok(Err(e)) => vec![Finding::problem(
                    id,
                    format!(
                        "{} cannot be written ({e}): alerts and the learned routine cannot be saved.",
                        dir.display()
                    ),
                    "Give the agent's user write access to it, or set SERVICE_DATA_DIR to a directory it can write.",
                )],
                Err(e) => vec![Finding::problem(
                    id,
                    format!("The write test failed: {e}."),
                    "Run the doctor again.",
                )],
            }
        })
    }
}

/// The SQLite stores open and pass `PRAGMA quick_check` (read-only: the doctor never moves a
/// damaged file; the agent does that at start).
pub struct StoresCheck;

pub fn store_health(path: &Path) -> Result<Option<String>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| e.to_string())?;
    conn.busy_timeout(Duration::from_secs(2))
        .map_err(|e| e.to_string())?;
    let verdict: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if verdict == "ok" {
        let pages: i64 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        Ok(Some(format!("{pages} pages")))
    } else {
        Err(verdict)
    }
}

impl Check for StoresCheck {
    fn id(&self) -> &'static str {
        "stores"
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        boxed(async move {
            let id = self.id();
            let Ok(dir) = ctx.data_dir.clone() else {
                return Vec::new();
            };
            let files = [
                (crate::alerts::outbox::FILE_NAME, "the alert outbox"),
                (crate::store::routine::FILE, "the learned routine"),
            ];
            let mut out = Vec::new();
            for (file, what) in files {
                let path = dir.join(file);
                let p = path.clone();
                let verdict = tokio::task::spawn_blocking(move || store_health(&p))
                    .await
                    .unwrap_or_else(|e| Err(e.to_string()));
                out.push(match verdict {
                    Ok(None) => Finding::ok(id, format!("{} ({what}) does not exist yet; it is created on first use.", path.display())),
                    Ok(Some(size)) => Finding::ok(id, format!("{} ({what}) is healthy ({size}).", path.display())),
                    Err(e) => Finding::problem(
                        id,
                        format!("{} ({what}) is damaged: {e}.", path.display()),
                        "Stop the agent and move the file aside (the agent also does so itself at its next start and begins a new one).",
                    ),
                });
            }
            out
        })
    }
}
