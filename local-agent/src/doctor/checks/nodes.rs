//! The sensor nodes: rates, timing, channel, RSSI, gain and clocks.

use super::common::{boxed, live_hub, nodes};
use crate::doctor::{Check, CheckFuture, Context, Finding};
use crate::hub::diagnostics::{
    CLOCK_DRIFT_WARN, GAIN_UNLOCKED_DB, GAP_S, MIN_VITALS_HZ, NodeHealthView, RSSI_LOW_DBM,
    RSSI_SATURATED_DBM,
};
use crate::hub::registry::NodeView;

/// bursts.
pub const BURST_RATIO: f64 = 5.0;

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
                        "Plain UDP is only accepted from this computer: give each node a session (POST /ingest/session with the token, then tagged datagrams; see the README's \"Node sessions\"), or send over WebSocket with the token; {} datagrams were refused.",
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
