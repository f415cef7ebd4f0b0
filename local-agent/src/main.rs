//! `local-agent`: the presence-sensing service that runs on the user's computer.
//!
//! With no arguments it runs the engine on the simulator's `demo` scene, so a fresh install shows
//! something useful without hardware. Exit codes: 0 after a clean shutdown, 1 when the engine or
//! a report cannot run, `alert test` gets no 2xx or `away` cannot reach the agent (the message says
//! why), 2 for bad command-line usage.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use local_agent::alerts::cli::{self as alerts_cli, AwayCommand, TestResult};
use local_agent::alerts::{Alerts, AlertsError, AwayMode};
use local_agent::engine::history;
use local_agent::engine::report;
use local_agent::engine::source::{self, FrameFeed, ReplayFeed, SimulatorFeed};
use local_agent::engine::{DEFAULT_PORT, Engine, EngineConfig, PORT_ENV, SharedSink};
use local_agent::hub::auth::{TokenRule, refuse_allow_list};
use local_agent::hub::emulator::{self, EmulatorOptions};
use local_agent::hub::registry::{Registry, RegistryConfig};
use local_agent::hub::{self, Hub, HubConfig, HubDeps};
use local_agent::mqtt::{self, Mqtt, PublisherDeps};
use local_agent::runtime;
use local_agent::sensing::fall::FallConfig;
use local_agent::sensing::pipeline::PipelineConfig;
use local_agent::service;
use local_agent::store::routine::RoutineStore;
use local_agent::view::{self, View, ViewDeps};
use local_agent::{doctor, store};

#[derive(Debug, Parser)]
#[command(
    name = "local-agent",
    version,
    about = "Presence-sensing local agent: Wi-Fi CSI in, presence, motion and vitals estimates out on a loopback-only API."
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `local-agent [OPTIONS]` with no command is `local-agent run [OPTIONS]`.
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the engine API (the default when no command is given).
    Run(RunArgs),
    /// Process a recording offline, as fast as possible, and print per-window estimates.
    Replay(ReplayArgs),
    /// Play a recording as if it were an ESP32 node sending to a hub (for set-up and tests).
    NodeEmulator(NodeEmulatorArgs),
    /// Evaluate an estimator on labelled recordings, next to a peer's published method.
    Eval {
        #[command(subcommand)]
        what: EvalCommand,
    },
    /// Away Alerts: `alert test` sends a test alert to the configured address now.
    Alert {
        #[command(subcommand)]
        command: AlertCommand,
    },
    /// Switch away mode of the running agent on or off, or show it.
    Away(AwayArgs),
    /// Manage the learned routine (stop the agent first).
    Baseline {
        #[command(subcommand)]
        action: BaselineAction,
    },
    /// Open the running agent's live view in the default browser.
    Open(OpenArgs),
    /// Check the set-up (ports, nodes, signal, calibration, alerts, storage) and say what to fix.
    Doctor(DoctorArgs),
    /// Home Assistant over MQTT: `mqtt purge` removes our retained topics from the broker.
    Mqtt {
        #[command(subcommand)]
        command: MqttCommand,
    },
    /// Run the agent as a desktop service (systemd user unit on Linux, launchd agent on macOS).
    Service {
        #[command(subcommand)]
        command: ServiceCommand,
    },
}

#[derive(Debug, Subcommand)]
enum MqttCommand {
    /// Clear our retained discovery configs and states, so Home Assistant forgets the agent's
    /// devices. Stop the agent first (it would publish them again).
    Purge {
        /// Purge even though an agent answers on the engine port.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ServiceCommand {
    /// Write, enable and start the service; options after `--` are passed to `run`
    /// (`local-agent service install -- --source hub`).
    Install {
        #[arg(last = true, value_name = "RUN OPTIONS")]
        run_args: Vec<String>,
    },
    /// Stop, disable and remove the service (the config and environment files stay).
    Uninstall,
    /// Whether the service is installed and running, and where its logs are.
    Status,
}

#[derive(Debug, clap::Args)]
struct OpenArgs {
    /// Print the address instead of opening a browser (for a computer without a desktop).
    #[arg(long)]
    print: bool,
}

#[derive(Debug, clap::Args)]
struct DoctorArgs {
    /// Machine-readable JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Engine port to check when no agent is running.
    #[arg(long, env = PORT_ENV, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Hub port to check when no agent is running.
    #[arg(long, env = hub::PORT_ENV, default_value_t = hub::DEFAULT_PORT)]
    hub_port: u16,
    /// UDP ingest port to check when no agent is running.
    #[arg(long, env = hub::CSI_PORT_ENV, default_value_t = hub::DEFAULT_CSI_PORT)]
    csi_port: u16,
    /// Live view port to check when no agent is running.
    #[arg(long, env = view::PORT_ENV, default_value_t = view::DEFAULT_PORT)]
    view_port: u16,
}

#[derive(Debug, Subcommand)]
enum EvalCommand {
    /// Motion detection on an ESPectre-style folder (baseline/, movement/, test/ of .npz), ours
    /// and ESPectre's MVS + NBVI side by side, per packet, per 1 s window, held-out calibration
    /// and onset.
    Motion(EvalMotionArgs),
}

#[derive(Debug, clap::Args)]
struct EvalMotionArgs {
    /// The folder (e.g. shared/data/csi/espectre).
    dir: PathBuf,
    /// Chips of the tuning part, comma-separated; the others are reported as held out.
    #[arg(long, value_delimiter = ',', default_values_t = local_agent::eval::motion::TUNE_CHIPS.map(String::from))]
    tune_chips: Vec<String>,
    /// Packet where motion starts in the test/ captures.
    #[arg(long, default_value_t = local_agent::eval::motion::ONSET_PACKET)]
    onset_packet: usize,
    /// Override one of our motion detector's settings for a tuning run, e.g. `--set
    /// threshold=3` or `--set calibration_s=5` (repeatable; see `MotionConfig`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
    /// Machine-readable JSON instead of tables.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum AlertCommand {
    /// Queue a `test` alert and make one delivery attempt now; exit 0 only on a 2xx reply.
    Test,
}

/// The fall monitor's impact rule (`--fall-rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FallRule {
    /// A burst at the end of a motion episode that holds some fast motion (the default).
    Standard,
    /// The burst must hold more fast motion (above ~25 Hz at 100 packets/s).
    FastMotion,
    /// The size of the burst alone (the default until 2026-11-27).
    Burst,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AwayArg {
    On,
    Off,
    Status,
}

#[derive(Debug, clap::Args)]
struct AwayArgs {
    #[arg(value_enum)]
    state: AwayArg,
    /// The running agent's hub port (its control route is loopback-only).
    #[arg(long, env = alerts_cli::CONTROL_PORT_ENV, default_value_t = alerts_cli::DEFAULT_CONTROL_PORT)]
    port: u16,
}

#[derive(Debug, Subcommand)]
enum BaselineAction {
    /// Forget every learned night and the night in progress; learning starts over.
    Reset,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SourceArg {
    /// The embedded simulator playing a scripted scene.
    Simulator,
    /// A recorded CSI file (--file).
    Replay,
    /// Live frames from sensor nodes through the hub (UDP and WebSocket ingest).
    Hub,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Where frames come from.
    #[arg(long, value_enum, default_value_t = SourceArg::Simulator)]
    source: SourceArg,
    /// Recording to play with --source replay.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Simulator scene.
    #[arg(long, default_value = "demo")]
    scene: String,
    /// Playback speed, × real time (simulator and replay).
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Replay as fast as the pipeline takes frames, ignoring the recording's timestamps.
    #[arg(long)]
    fast: bool,
    /// Simulator seed of the first loop; each loop of the scene uses the next seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Port on 127.0.0.1.
    #[arg(long, env = PORT_ENV, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Run the fall monitor on simulated or replayed data (a demonstration: try
    /// `--scene fall --demo-fall`). Without it /fall reports `active: false` for those sources.
    /// Alerts raised in this mode are real alerts; routine learning stays off.
    #[arg(long)]
    demo_fall: bool,
    /// Seconds of stillness after an impact before the fall monitor reports `fallen`.
    #[arg(long, default_value_t = 45.0, value_name = "SECONDS")]
    fall_stillness_s: f64,
    /// The impact rule: `standard` (default: a burst at the end of a motion episode that holds
    /// some motion above ~25 Hz), `fast-motion` (more fast motion: fewer alerts after sitting down
    /// hard, more missed falls) or `burst` (its size alone: the most alerts); see the README's
    /// Accuracy section.
    #[arg(long, value_enum, default_value_t = FallRule::Standard, value_name = "RULE")]
    fall_rule: FallRule,
    /// Seconds without breathing, after a reliably tracked breathing is lost (someone present and
    /// still), before `no_breathing`.
    #[arg(long, default_value_t = 45.0, value_name = "SECONDS")]
    no_breath_s: f64,
    /// Hub port (HTTP API and WebSocket ingest) on all interfaces.
    #[arg(long, env = hub::PORT_ENV, default_value_t = hub::DEFAULT_PORT)]
    hub_port: u16,
    /// UDP ingest port on all interfaces.
    #[arg(long, env = hub::CSI_PORT_ENV, default_value_t = hub::DEFAULT_CSI_PORT)]
    csi_port: u16,
    /// Removed: refused when set (remote nodes authenticate with a session; see the README).
    #[arg(long, env = hub::ALLOW_ENV, default_value = "", hide = true)]
    csi_allow: String,
    /// Live view port on 127.0.0.1 (never another interface).
    #[arg(long, env = view::PORT_ENV, default_value_t = view::DEFAULT_PORT)]
    view_port: u16,
}

#[derive(Debug, clap::Args)]
struct NodeEmulatorArgs {
    /// The recording to play (esp-csi or ESP32-CSI-Tool lines, RuView JSONL, ESPectre .npz).
    #[arg(long, value_name = "REC")]
    file: PathBuf,
    /// udp://HOST:PORT or ws://HOST:PORT/ingest.
    #[arg(long, value_name = "URL")]
    to: String,
    /// Playback speed, × real time.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Token for a remote hub (sent as X-Service-Token on the WebSocket handshake).
    #[arg(long, env = hub::TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
    /// ADR-018 node id to send as (default: the recording's, else 1).
    #[arg(long)]
    node_id: Option<u8>,
    /// The hub's HTTP address for UDP node sessions (default: the UDP host on
    /// SERVICE_SENTINEL_PORT, 8790). UDP uses sessions when this or a token is given.
    #[arg(long, value_name = "URL")]
    hub: Option<String>,
}

#[derive(Debug, clap::Args)]
struct ReplayArgs {
    /// The recording (esp-csi CSI_DATA lines, ESP32-CSI-Tool CSV, RuView JSONL, ESPectre .npz).
    /// Several files play back to back as one stream (`.npz` captures as one node).
    #[arg(required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Print per-window estimates and a summary. This is the only offline mode, so it is also the
    /// default; the flag keeps scripts explicit.
    #[arg(long)]
    report: bool,
    /// Window length in seconds of recording time. Shorter than the frame spacing gives one row
    /// per frame.
    #[arg(long, default_value_t = 10.0)]
    window_s: f64,
    /// Machine-readable JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Why the agent stopped with an error.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error(transparent)]
    Source(#[from] source::SourceError),
    #[error(transparent)]
    Engine(#[from] local_agent::engine::EngineError),
    #[error("--source replay needs --file FILE")]
    MissingFile,
    #[error("--window-s must be a positive number of seconds, got {0}")]
    BadWindow(f64),
    #[error("{0} must be between 5 and 3600 seconds, got {1}")]
    BadDelay(&'static str, f64),
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot write the report: {0}")]
    Output(String),
    #[error(transparent)]
    Alerts(#[from] AlertsError),
    #[error("{0}")]
    AlertNotDelivered(String),
    #[error(transparent)]
    Control(#[from] alerts_cli::ControlError),
    #[error(transparent)]
    Hub(#[from] hub::HubError),
    #[error(transparent)]
    Allow(#[from] hub::auth::AllowListRemoved),
    #[error(transparent)]
    Emulator(#[from] emulator::EmulatorError),
    #[error(transparent)]
    Store(#[from] local_agent::store::routine::RoutineStoreError),
    #[error(transparent)]
    Eval(#[from] local_agent::eval::motion::EvalError),
    #[error("--set: {0}")]
    Setting(String),
    #[error("{0}")]
    NoAgent(String),
    #[error("cannot open a browser ({0}); open this address yourself: {1}")]
    Browser(String, String),
    #[error("the doctor found {0} problem(s)")]
    DoctorProblems(usize),
    #[error(transparent)]
    MqttConfig(#[from] mqtt::MqttConfigError),
    #[error(transparent)]
    MqttStart(#[from] mqtt::MqttStartError),
    #[error(transparent)]
    Purge(#[from] mqtt::purge::PurgeError),
    #[error("{0}")]
    Mqtt(String),
    #[error(transparent)]
    Service(#[from] service::ServiceError),
    #[error("the options after `service install --` are not valid `run` options: {0}")]
    RunArgs(String),
}

fn main() -> ExitCode {
    // First, before any thread exists: the service's secrets come from its environment file.
    if let Err(e) = load_env_file() {
        eprintln!("local-agent: {e}");
        return ExitCode::FAILURE;
    }
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        None => run(cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::Replay(args)) => replay(&args),
        Some(Command::Alert {
            command: AlertCommand::Test,
        }) => alert_test(),
        Some(Command::Away(args)) => away(&args),
        Some(Command::NodeEmulator(args)) => node_emulator(&args),
        Some(Command::Eval {
            what: EvalCommand::Motion(args),
        }) => eval_motion(&args),
        Some(Command::Baseline {
            action: BaselineAction::Reset,
        }) => baseline_reset(),
        Some(Command::Open(args)) => open_view(&args),
        Some(Command::Doctor(args)) => run_doctor(&args),
        Some(Command::Mqtt {
            command: MqttCommand::Purge { force },
        }) => mqtt_purge(force),
        Some(Command::Service { command }) => service_command(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The report already said what is wrong.
        Err(CliError::DoctorProblems(_)) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("local-agent: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr, so `replay --json` output on stdout stays machine-readable.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn run(args: RunArgs) -> Result<(), CliError> {
    let registry = Arc::new(Registry::new(RegistryConfig::default()));
    let mut sink = None;
    for (name, v) in [
        ("--fall-stillness-s", args.fall_stillness_s),
        ("--no-breath-s", args.no_breath_s),
    ] {
        if !(v.is_finite() && (5.0..=3600.0).contains(&v)) {
            return Err(CliError::BadDelay(name, v));
        }
    }
    let feed: Box<dyn FrameFeed> = match args.source {
        SourceArg::Simulator => {
            if args.fast {
                tracing::warn!("--fast applies to --source replay; the simulator runs at --speed");
            }
            Box::new(SimulatorFeed::new(&args.scene, args.seed, args.speed)?)
        }
        SourceArg::Replay => {
            let file = args.file.as_deref().ok_or(CliError::MissingFile)?;
            let speed = (!args.fast).then_some(args.speed);
            Box::new(ReplayFeed::open(file, speed)?)
        }
        SourceArg::Hub => {
            let (frames, feed) = hub::feed::channel(Arc::clone(&registry));
            sink = Some(frames);
            Box::new(feed)
        }
    };
    refuse_allow_list(&args.csi_allow)?;
    // Read from the environment only: a token on the command line is visible to every user.
    let token = std::env::var(hub::TOKEN_ENV).ok();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    // Before binding anything: a bad alert address or CA file is a startup error.
    let alerts = Alerts::from_env()?;
    let mqtt = Mqtt::from_env()?;
    let mqtt_registry = Arc::clone(&registry);
    runtime.block_on(async move {
        let config = EngineConfig {
            port: args.port,
            pipeline: PipelineConfig::default(),
            demo_fall: args.demo_fall,
            fall: FallConfig {
                fallen_after_s: args.fall_stillness_s,
                no_breath_after_s: args.no_breath_s,
                ..match args.fall_rule {
                    FallRule::Standard => FallConfig::default(),
                    FallRule::FastMotion => FallConfig::fast_motion(),
                    FallRule::Burst => FallConfig::burst(),
                }
            },
            // Fall, no-breathing and anomaly alerts go through the same durable outbox.
            alerts: SharedSink(alerts.sink()),
            mqtt: mqtt.link(),
            ..EngineConfig::default()
        };
        // The hub always runs (GET /alerts, the away-mode control route, node set-up); node
        // frames reach the pipeline only with --source hub.
        let hub_config = HubConfig {
            port: args.hub_port,
            csi_port: args.csi_port,
            token: TokenRule::new(token.as_deref()),
            ..HubConfig::default()
        };
        // One away switch for the hub's control route, the live view, the schedule and the
        // alert rule.
        let away = AwayMode::default();
        let alert_log = alerts.log();
        let deps = HubDeps {
            alerts: alerts.log(),
            away: away.clone(),
            sink,
            registry,
        };
        let hub = match Hub::start(hub_config, deps).await {
            Ok(hub) => Some(hub),
            // Without --source hub the hub is an extra; a taken port (another agent, RuView's
            // server on 5005) must not stop the engine from running on the simulator.
            Err(e) if args.source != SourceArg::Hub => {
                tracing::warn!(error = %e, "the sensor hub is not running; the engine runs without it");
                None
            }
            Err(e) => return Err(e.into()),
        };
        let engine = Engine::start(config, feed).await?;
        println!("local-agent engine on http://{}", engine.local_addr());
        let started = std::time::Instant::now();
        let history = Arc::new(history::History::default());
        let (history_stop, history_stop_rx) = tokio::sync::watch::channel(false);
        let recorder = tokio::spawn(history::record(
            Arc::clone(&history),
            engine.snapshots(),
            history_stop_rx,
        ));
        let data_dir = store::data_dir().map_err(|e| e.to_string());
        let doctor_ctx = doctor::Context {
            ports: doctor::Ports {
                engine: engine.local_addr().port(),
                hub: args.hub_port,
                csi: args.csi_port,
                view: args.view_port,
            },
            data_dir: data_dir.clone(),
            alert: Ok(alerts.config().clone()),
            mqtt: Ok(mqtt.link().view().broker),
            live: Some(doctor::Live {
                snapshots: engine.snapshots(),
                engine_addr: engine.local_addr(),
                hub: hub.as_ref().map(|h| doctor::LiveHub {
                    registry: h.registry(),
                    addr: h.local_addr(),
                    udp_addr: h.udp_addr(),
                    feeding: args.source == SourceArg::Hub,
                }),
                view_addr: None,
                history,
                mqtt: mqtt.link(),
            }),
        };
        let view_deps = ViewDeps {
            doctor: doctor_ctx,
            alerts: alert_log,
            away: away.clone(),
            schedule: alerts.config().schedule.clone(),
            started,
            runtime_dir: data_dir.ok(),
        };
        // The view is for people; the engine and hub are what scripts and nodes need, so a taken
        // view port is a warning, not a reason to stop.
        let view = match View::start(args.view_port, view_deps).await {
            Ok(view) => {
                println!("local-agent live view on {}", view.url());
                Some(view)
            }
            Err(e) => {
                tracing::warn!(error = %e, "the live view is not running");
                None
            }
        };
        let mqtt_link = mqtt.link();
        let mqtt_tasks = mqtt.spawn(PublisherDeps {
            snapshots: engine.snapshots(),
            away: away.clone(),
            registry: mqtt_registry,
        })?;
        if mqtt_tasks.is_some() {
            let link = mqtt_link.view();
            println!(
                "local-agent MQTT to {} as {} (Home Assistant discovery)",
                link.broker.unwrap_or_default(),
                link.client_id.unwrap_or_default()
            );
        }
        let alert_tasks = alerts.spawn(engine.snapshots(), away);
        if let Some(hub) = &hub {
            println!(
                "local-agent hub on http://{} (UDP ingest on {}){}",
                hub.local_addr(),
                hub.udp_addr(),
                if args.source == SourceArg::Hub {
                    ""
                } else {
                    "; node frames are not fed to the pipeline (use --source hub)"
                }
            );
        }
        shutdown_signal().await;
        tracing::info!("shutting down");
        if let Some(view) = view {
            view.shutdown().await;
        }
        let _ = history_stop.send(true);
        let _ = recorder.await;
        if let Some(hub) = hub {
            hub.shutdown().await;
        }
        alert_tasks.shutdown().await;
        if let Some(mqtt) = mqtt_tasks {
            mqtt.shutdown().await;
        }
        engine.shutdown().await;
        Ok(())
    })
}

/// Finds the running agent's live view through the runtime file and opens it.
fn open_view(args: &OpenArgs) -> Result<(), CliError> {
    let dir = store::data_dir().map_err(|e| CliError::NoAgent(e.to_string()))?;
    let info = runtime::read(&dir).ok_or_else(|| {
        CliError::NoAgent(format!(
            "no running agent found (no {} in {}); start it with `local-agent run`",
            runtime::FILE,
            dir.display()
        ))
    })?;
    // A file left by an agent that was killed: nothing answers on its port.
    if std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], info.port)),
        std::time::Duration::from_secs(2),
    )
    .is_err()
    {
        return Err(CliError::NoAgent(format!(
            "the agent that wrote {} is not running any more (nothing answers on 127.0.0.1:{}); start it with `local-agent run`",
            runtime::path(&dir).display(),
            info.port
        )));
    }
    if args.print {
        println!("{}", info.url);
        return Ok(());
    }
    open::that_detached(&info.url)
        .map_err(|e| CliError::Browser(e.to_string(), info.url.clone()))?;
    println!(
        "opened the live view of the agent on 127.0.0.1:{}",
        info.port
    );
    Ok(())
}

fn run_doctor(args: &DoctorArgs) -> Result<(), CliError> {
    let ports = doctor::Ports {
        engine: args.port,
        hub: args.hub_port,
        csi: args.csi_port,
        view: args.view_port,
    };
    let report = small_runtime()?.block_on(doctor::cli::doctor(ports));
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(|e| CliError::Output(e.to_string()))?
    } else {
        report.render_text()
    };
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}").map_err(|e| CliError::Output(e.to_string()))?;
    if report.ok {
        Ok(())
    } else {
        Err(CliError::DoctorProblems(report.problems))
    }
}

fn node_emulator(args: &NodeEmulatorArgs) -> Result<(), CliError> {
    let options = EmulatorOptions {
        file: args.file.clone(),
        target: emulator::parse_target(&args.to)?,
        speed: Some(args.speed),
        token: args.token.clone(),
        node_id: args.node_id,
        hub: args.hub.clone(),
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let stats = emulator::run(&options, &stop)?;
    println!(
        "sent {} messages ({} records skipped)",
        stats.sent, stats.skipped
    );
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

fn baseline_reset() -> Result<(), CliError> {
    let (mut store, _) = RoutineStore::open_default()?;
    let nights = store.reset()?;
    println!(
        "forgot {nights} stored nights in {}; the routine is learned again from the next live night",
        store.path().display()
    );
    Ok(())
}

fn replay(args: &ReplayArgs) -> Result<(), CliError> {
    if !(args.window_s.is_finite() && args.window_s > 0.0) {
        return Err(CliError::BadWindow(args.window_s));
    }
    let mut recordings = args
        .files
        .iter()
        .map(|f| source::open_recording(f))
        .collect::<Result<Vec<_>, _>>()?;
    let report =
        report::evaluate_replay_chain(&mut recordings, args.window_s, PipelineConfig::default());
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(|e| CliError::Output(e.to_string()))?
    } else {
        report.render_text()
    };
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}").map_err(|e| CliError::Output(e.to_string()))?;
    Ok(())
}

fn eval_motion(args: &EvalMotionArgs) -> Result<(), CliError> {
    use local_agent::eval::motion;
    let ds = motion::load(&args.dir)?;
    let mut opts = motion::EvalOptions {
        tune_chips: args
            .tune_chips
            .iter()
            .map(|c| c.to_ascii_lowercase())
            .collect(),
        onset_packet: args.onset_packet,
        ..motion::EvalOptions::default()
    };
    for kv in &args.settings {
        opts.pipeline.motion.set(kv).map_err(CliError::Setting)?;
    }
    opts.pipeline.calibration_s = opts.pipeline.motion.calibration_s;
    let report = motion::evaluate(&args.dir.display().to_string(), &ds, &opts)?;
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(|e| CliError::Output(e.to_string()))?
    } else {
        report.render()
    };
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}").map_err(|e| CliError::Output(e.to_string()))?;
    Ok(())
}

fn small_runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
}

fn alert_test() -> Result<(), CliError> {
    match small_runtime()?.block_on(alerts_cli::alert_test())? {
        TestResult::Delivered {
            id,
            address,
            status,
        } => {
            println!("test alert {id} delivered to {address}: receiver answered {status}");
            Ok(())
        }
        TestResult::NotDelivered {
            id,
            address,
            reason,
            outbox,
        } => Err(CliError::AlertNotDelivered(format!(
            "test alert {id} not delivered to {address}: {reason}. It stays queued in {outbox}; a running agent retries it."
        ))),
        TestResult::NoAddress { id, hint } => Err(CliError::AlertNotDelivered(format!(
            "no alert address is configured, so test alert {id} was only kept in the local alert log: {hint}"
        ))),
    }
}

fn away(args: &AwayArgs) -> Result<(), CliError> {
    let command = match args.state {
        AwayArg::On => AwayCommand::On,
        AwayArg::Off => AwayCommand::Off,
        AwayArg::Status => AwayCommand::Status,
    };
    let on = small_runtime()?.block_on(alerts_cli::away(args.port, command))?;
    println!("away mode is {}", if on { "on" } else { "off" });
    Ok(())
}

/// Reads `SERVICE_ENV_FILE` (the desktop service's secrets) into the environment. Variables
/// already set win.
fn load_env_file() -> Result<(), service::envfile::EnvFileError> {
    let Some(path) = std::env::var_os(service::envfile::ENV_FILE_ENV).filter(|p| !p.is_empty())
    else {
        return Ok(());
    };
    for (key, value) in service::envfile::load(std::path::Path::new(&path))? {
        if std::env::var_os(&key).is_none() {
            // SAFETY: called first thing in `main`, before the runtime or any other thread
            // exists, so nothing can read the environment concurrently.
            unsafe { std::env::set_var(key, value) };
        }
    }
    Ok(())
}

fn mqtt_purge(force: bool) -> Result<(), CliError> {
    let Some(config) = mqtt::MqttConfig::load()? else {
        return Err(CliError::Mqtt(
            "MQTT is not configured: set mqtt_url in the config file (the broker to purge)".into(),
        ));
    };
    let runtime = small_runtime()?;
    if !force {
        let port = std::env::var(PORT_ENV)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(DEFAULT_PORT);
        if let Some(state) = runtime.block_on(mqtt::purge::running_agent_link(port)) {
            return Err(CliError::Mqtt(format!(
                "an agent is running on 127.0.0.1:{port} with MQTT {state}; stop it first \
                 (it would publish everything again), or pass --force"
            )));
        }
    }
    let report = runtime.block_on(mqtt::purge::purge(&config))?;
    println!(
        "cleared {} discovery configs and {} state topics on {} (Home Assistant removes the entities)",
        report.discovery.len(),
        report.states.len(),
        config.broker
    );
    for topic in report.discovery.iter().chain(report.states.iter()) {
        println!("  {topic}");
    }
    Ok(())
}

fn service_command(command: ServiceCommand) -> Result<(), CliError> {
    let run_args = match &command {
        ServiceCommand::Install { run_args } => {
            // The service must start; refuse options `run` would reject.
            let argv = ["local-agent", "run"]
                .into_iter()
                .map(String::from)
                .chain(run_args.iter().cloned());
            if let Err(e) = Cli::try_parse_from(argv) {
                return Err(CliError::RunArgs(
                    e.to_string().lines().next().unwrap_or_default().to_string(),
                ));
            }
            run_args.clone()
        }
        _ => Vec::new(),
    };
    let env = service::ServiceEnv::from_process(run_args)?;
    let mut out = std::io::stdout().lock();
    match command {
        ServiceCommand::Install { .. } => service::install(&env, &service::System, &mut out)?,
        ServiceCommand::Uninstall => service::uninstall(&env, &service::System, &mut out)?,
        ServiceCommand::Status => {
            if !service::status(&env, &service::System, &mut out)?.running {
                return Err(service::ServiceError::NotRunning.into());
            }
        }
    }
    Ok(())
}
