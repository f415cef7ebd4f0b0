//! The agent's own set-up: calibration, the alert address, the data directory and its stores.

use std::path::Path;
use std::time::{Duration, Instant};

use super::common::boxed;
use crate::alerts::config::{CA_ENV, WEBHOOK_ENV};
use crate::doctor::{Check, CheckFuture, Context, Finding};
use crate::sensing::calibration::WaitReason;
use crate::sensing::pipeline::PipelineConfig;

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

/// Calibration that never finishes, and why.
pub struct CalibrationCheck;

/// Why calibration is not finishing, as the end of a sentence.
pub fn hold_sentence(reason: Option<WaitReason>) -> &'static str {
    match reason {
        Some(WaitReason::Motion) => {
            "someone is moving in view, and motion is never learned as the empty room (it keeps starting over)"
        }
        Some(WaitReason::Unsteady) => {
            "the signal is not steady enough (interference, a fan, or an unstable node)"
        }
        Some(WaitReason::WarmingUp) => {
            "the link started moments ago and its first seconds are skipped"
        }
        Some(WaitReason::NoSignal) => "no frames with usable subcarriers arrive",
        None => "it is still collecting quiet data",
    }
}

fn hold_fix(reason: Option<WaitReason>) -> &'static str {
    match reason {
        Some(WaitReason::Motion) => {
            "Leave the room empty and still for half a minute (pets, fans and curtains move too); presence works on a default threshold meanwhile. If the room already is empty and still, the link's own noise is above the level assumed before calibration: move the node away from other transmitters and metal, or nearer the access point, so it reads quiet."
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
            let pct = (e.calibration.progress * 100.0).round();
            match for_s {
                Some(s) if s > calibration_stuck_s() => vec![Finding::warning(
                    id,
                    format!(
                        "Calibration has not finished after {s:.0} s (it needs {need:.0} s of quiet, {pct:.0}% collected): {}.",
                        hold_sentence(e.calibration.reason)
                    ),
                    hold_fix(e.calibration.reason),
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
            match crate::doctor::tls::probe(address, config.extra_ca.as_deref()).await {
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
