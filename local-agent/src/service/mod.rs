//! `local-agent service install|uninstall|status`: the agent as a desktop service.
//!
//! Linux: a systemd user unit (`~/.config/systemd/user/presence-agent.service`), enabled and
//! started with `systemctl --user`, with lingering turned on (`loginctl enable-linger`) so it
//! runs after logout and from boot. Logs go to the journal. macOS: a launchd agent
//! (`~/Library/LaunchAgents/local.presence-agent.plist`) loaded with `launchctl bootstrap`,
//! started at login and restarted on failure; logs go to
//! `~/Library/Logs/presence-agent/agent.log`. Windows: not supported yet.
//!
//! Settings stay in the agent's config file. Secrets go to the environment file
//! (`<config dir>/presence-agent/service.env`, mode 0600) that the service names in
//! `SERVICE_ENV_FILE`; they are never on a command line.
//!
//! Paths come from a [`ServiceEnv`] and commands run through [`Commands`], so tests install into
//! a temporary home and check what would have run.

pub mod envfile;
pub mod units;

use std::io::Write;
use std::path::{Path, PathBuf};

use units::{LAUNCHD_LABEL, UNIT_NAME};

/// Operating systems the service knows about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Linux,
    MacOs,
    Windows,
    Other,
}

impl Platform {
    pub fn current() -> Self {
        if cfg!(target_os = "linux") {
            Platform::Linux
        } else if cfg!(target_os = "macos") {
            Platform::MacOs
        } else if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Other
        }
    }
}

/// Why a service command failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(
        "running the agent as a service is not supported on {0} yet; start `local-agent` from a terminal or your system's task scheduler"
    )]
    Unsupported(&'static str),
    #[error("no home directory: set HOME")]
    NoHome,
    #[error("cannot find this program's path: {0}")]
    Exe(#[source] std::io::Error),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot remove {path}: {source}")]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot build the launchd property list: {0}")]
    Plist(String),
    #[error("`{command}` failed{}{}", .status.map(|s| format!(" with status {s}")).unwrap_or_default(), if .stderr.is_empty() { String::new() } else { format!(": {}", .stderr) })]
    Command {
        command: String,
        status: Option<i32>,
        stderr: String,
    },
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the service is not running")]
    NotRunning,
    #[error("cannot print: {0}")]
    Output(#[source] std::io::Error),
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandOutput {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `systemctl`, `loginctl`, `launchctl` and `id`: the real system, or a recorder in tests.
pub trait Commands {
    fn run(&self, program: &str, args: &[String]) -> std::io::Result<CommandOutput>;
}

/// The real system.
#[derive(Debug, Default, Clone, Copy)]
pub struct System;

impl Commands for System {
    fn run(&self, program: &str, args: &[String]) -> std::io::Result<CommandOutput> {
        let out = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()?;
        Ok(CommandOutput {
            success: out.status.success(),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Where things go and what the service runs.
#[derive(Debug, Clone)]
pub struct ServiceEnv {
    pub platform: Platform,
    pub home: PathBuf,
    /// The agent's config directory (`<user config dir>/presence-agent`).
    pub config_dir: PathBuf,
    /// `$XDG_CONFIG_HOME` or `~/.config` (Linux: where the systemd user unit goes).
    pub xdg_config_home: PathBuf,
    /// The program the service runs.
    pub exe: PathBuf,
    /// Options after `run` (e.g. `--source hub`).
    pub run_args: Vec<String>,
    /// Variables to seed a new environment file with (the `SERVICE_*` of the installing shell).
    pub seed_env: Vec<(String, String)>,
}

impl ServiceEnv {
    /// From this process: its environment, home and executable.
    pub fn from_process(run_args: Vec<String>) -> Result<Self, ServiceError> {
        let home = dirs::home_dir().ok_or(ServiceError::NoHome)?;
        let config_dir = dirs::config_dir()
            .unwrap_or_else(|| home.join(".config"))
            .join(crate::store::APP_DIR);
        let xdg_config_home = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        let exe = std::env::current_exe().map_err(ServiceError::Exe)?;
        let mut seed_env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with("SERVICE_") && k != envfile::ENV_FILE_ENV)
            .collect();
        seed_env.sort();
        Ok(Self {
            platform: Platform::current(),
            home,
            config_dir,
            xdg_config_home,
            exe,
            run_args,
            seed_env,
        })
    }

    pub fn env_file(&self) -> PathBuf {
        self.config_dir.join("service.env")
    }

    /// The unit file (Linux) or property list (macOS).
    pub fn service_file(&self) -> Result<PathBuf, ServiceError> {
        match self.platform {
            Platform::Linux => Ok(self
                .xdg_config_home
                .join("systemd")
                .join("user")
                .join(UNIT_NAME)),
            Platform::MacOs => Ok(self
                .home
                .join("Library")
                .join("LaunchAgents")
                .join(format!("{LAUNCHD_LABEL}.plist"))),
            Platform::Windows => Err(ServiceError::Unsupported("Windows")),
            Platform::Other => Err(ServiceError::Unsupported("this system")),
        }
    }

    /// macOS: the log file launchd appends to.
    pub fn log_file(&self) -> PathBuf {
        self.home
            .join("Library")
            .join("Logs")
            .join(crate::store::APP_DIR)
            .join("agent.log")
    }

    /// Where to read the logs, in words.
    pub fn logs_hint(&self) -> String {
        match self.platform {
            Platform::MacOs => format!("{} (tail -f it)", self.log_file().display()),
            _ => format!("the journal: journalctl --user -u {UNIT_NAME} -f"),
        }
    }
}

fn sv(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn shell_line(program: &str, args: &[String]) -> String {
    std::iter::once(program.to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a command and fails unless it succeeds; prints it first.
fn must(
    cmds: &dyn Commands,
    out: &mut dyn Write,
    program: &str,
    args: &[String],
) -> Result<CommandOutput, ServiceError> {
    let line = shell_line(program, args);
    writeln!(out, "running: {line}").map_err(ServiceError::Output)?;
    let result = cmds
        .run(program, args)
        .map_err(|source| ServiceError::Spawn {
            command: line.clone(),
            source,
        })?;
    if !result.success {
        return Err(ServiceError::Command {
            command: line,
            status: result.code,
            stderr: result.stderr,
        });
    }
    Ok(result)
}

/// Runs a command whose failure is expected sometimes (stopping what is not running).
fn may(cmds: &dyn Commands, out: &mut dyn Write, program: &str, args: &[String]) -> bool {
    let line = shell_line(program, args);
    let _ = writeln!(out, "running: {line}");
    match cmds.run(program, args) {
        Ok(r) if r.success => true,
        Ok(r) => {
            let _ = writeln!(
                out,
                "  (it did not succeed{}; continuing)",
                if r.stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {}", r.stderr)
                }
            );
            false
        }
        Err(e) => {
            let _ = writeln!(out, "  (cannot run it: {e}; continuing)");
            false
        }
    }
}

fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), ServiceError> {
    let err = |source| ServiceError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    // Written beside and renamed: a half-written unit is never loaded.
    let tmp = path.with_extension("tmp");
    {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        #[cfg(not(unix))]
        let _ = mode;
        let mut f = options.open(&tmp).map_err(err)?;
        f.write_all(text.as_bytes()).map_err(err)?;
        f.sync_all().map_err(err)?;
    }
    std::fs::rename(&tmp, path).map_err(err)
}

/// Creates the environment file when it does not exist (0600, seeded with the installing
/// shell's `SERVICE_*` variables); an existing one is kept as it is.
fn ensure_env_file(env: &ServiceEnv, out: &mut dyn Write) -> Result<(), ServiceError> {
    let path = env.env_file();
    let p = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(ServiceError::Output);
    if path.exists() {
        return p(
            out,
            format!(
                "kept the environment file {} (secrets such as SERVICE_SENTINEL_TOKEN go there)",
                path.display()
            ),
        );
    }
    let header = "Environment of the presence-agent service, read at start (SERVICE_ENV_FILE).\n\
                  Put secrets here, never on a command line: SERVICE_SENTINEL_TOKEN,\n\
                  SERVICE_MQTT_USERNAME, SERVICE_MQTT_PASSWORD (or SERVICE_MQTT_PASSWORD_FILE).\n\
                  One KEY=VALUE per line. Restart the service after a change.";
    let (text, skipped) = envfile::render(header, &env.seed_env);
    write_file(&path, &text, 0o600)?;
    let names: Vec<&str> = env
        .seed_env
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !skipped.iter().any(|s| s == k))
        .collect();
    p(
        out,
        format!(
            "wrote the environment file {} (mode 0600){}",
            path.display(),
            if names.is_empty() {
                String::new()
            } else {
                format!(" with this shell's {}", names.join(", "))
            }
        ),
    )?;
    for k in skipped {
        p(
            out,
            format!("  left out {k}: its value has a line break or both kinds of quote"),
        )?;
    }
    Ok(())
}

/// The `launchctl` domain of this user (`gui/<uid>`).
fn launchd_domain(cmds: &dyn Commands, out: &mut dyn Write) -> Result<String, ServiceError> {
    let id = must(cmds, out, "id", &sv(&["-u"]))?;
    Ok(format!("gui/{}", id.stdout.trim()))
}

/// Writes the service file and the environment file, then enables and starts the service.
pub fn install(
    env: &ServiceEnv,
    cmds: &dyn Commands,
    out: &mut dyn Write,
) -> Result<(), ServiceError> {
    let file = env.service_file()?;
    let p = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(ServiceError::Output);
    ensure_env_file(env, out)?;
    match env.platform {
        Platform::Linux => {
            let unit = units::systemd_unit(&env.exe, &env.run_args, &env.env_file());
            write_file(&file, &unit, 0o644)?;
            p(
                out,
                format!("wrote the systemd user unit {}", file.display()),
            )?;
            must(cmds, out, "systemctl", &sv(&["--user", "daemon-reload"]))?;
            must(
                cmds,
                out,
                "systemctl",
                &sv(&["--user", "enable", UNIT_NAME]),
            )?;
            // restart, not start: a second install picks up the new unit.
            must(
                cmds,
                out,
                "systemctl",
                &sv(&["--user", "restart", UNIT_NAME]),
            )?;
            if !may(cmds, out, "loginctl", &sv(&["enable-linger"])) {
                p(
                    out,
                    "note: lingering is off, so the agent stops when you log out and starts at \
                     your next login; `sudo loginctl enable-linger $USER` keeps it running"
                        .into(),
                )?;
            }
            p(
                out,
                format!(
                    "the agent runs as {UNIT_NAME} ({} run{}), restarts on failure and starts at boot; logs: {}",
                    env.exe.display(),
                    env.run_args
                        .iter()
                        .map(|a| format!(" {a}"))
                        .collect::<String>(),
                    env.logs_hint()
                ),
            )?;
        }
        Platform::MacOs => {
            let log = env.log_file();
            if let Some(dir) = log.parent() {
                std::fs::create_dir_all(dir).map_err(|source| ServiceError::Write {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
            let plist = units::launchd_plist(&env.exe, &env.run_args, &env.env_file(), &log)
                .map_err(|e| ServiceError::Plist(e.to_string()))?;
            write_file(&file, &plist, 0o644)?;
            p(out, format!("wrote the launchd agent {}", file.display()))?;
            let domain = launchd_domain(cmds, out)?;
            let target = format!("{domain}/{LAUNCHD_LABEL}");
            // A loaded older version must go first; bootstrap refuses a loaded label.
            may(cmds, out, "launchctl", &sv(&["bootout", &target]));
            must(cmds, out, "launchctl", &sv(&["enable", &target]))?;
            must(
                cmds,
                out,
                "launchctl",
                &sv(&["bootstrap", &domain, &file.to_string_lossy()]),
            )?;
            p(
                out,
                format!(
                    "the agent runs as {LAUNCHD_LABEL}, restarts on failure and starts at login; logs: {}",
                    env.logs_hint()
                ),
            )?;
        }
        Platform::Windows | Platform::Other => unreachable_platform(env)?,
    }
    Ok(())
}

fn unreachable_platform(env: &ServiceEnv) -> Result<(), ServiceError> {
    env.service_file().map(|_| ())
}

/// Stops and disables the service and removes its file. The config and environment files stay.
pub fn uninstall(
    env: &ServiceEnv,
    cmds: &dyn Commands,
    out: &mut dyn Write,
) -> Result<(), ServiceError> {
    let file = env.service_file()?;
    let p = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(ServiceError::Output);
    match env.platform {
        Platform::Linux => {
            may(
                cmds,
                out,
                "systemctl",
                &sv(&["--user", "disable", "--now", UNIT_NAME]),
            );
        }
        Platform::MacOs => {
            let domain = launchd_domain(cmds, out)?;
            may(
                cmds,
                out,
                "launchctl",
                &sv(&["bootout", &format!("{domain}/{LAUNCHD_LABEL}")]),
            );
        }
        Platform::Windows | Platform::Other => unreachable_platform(env)?,
    }
    match std::fs::remove_file(&file) {
        Ok(()) => p(out, format!("removed {}", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            p(out, format!("{} was not there", file.display()))?
        }
        Err(source) => return Err(ServiceError::Remove { path: file, source }),
    }
    if env.platform == Platform::Linux {
        may(cmds, out, "systemctl", &sv(&["--user", "daemon-reload"]));
    }
    p(
        out,
        format!(
            "kept {} and the config file; delete them yourself if you no longer need them",
            env.env_file().display()
        ),
    )
}

/// What `status` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub installed: bool,
    pub enabled: Option<bool>,
    pub running: bool,
    pub detail: String,
}

/// Says whether the service is installed, enabled and running, and where its logs are.
pub fn status(
    env: &ServiceEnv,
    cmds: &dyn Commands,
    out: &mut dyn Write,
) -> Result<Status, ServiceError> {
    let file = env.service_file()?;
    let installed = file.exists();
    let p = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(ServiceError::Output);
    let query = |program: &str, args: &[String]| cmds.run(program, args).ok();
    let (enabled, running, detail) = match env.platform {
        Platform::Linux => {
            let active = query("systemctl", &sv(&["--user", "is-active", UNIT_NAME]));
            let enabled = query("systemctl", &sv(&["--user", "is-enabled", UNIT_NAME]));
            let state = active
                .as_ref()
                .map(|o| {
                    if o.stdout.is_empty() {
                        o.stderr.clone()
                    } else {
                        o.stdout.clone()
                    }
                })
                .unwrap_or_else(|| "systemctl is not available".into());
            (
                enabled.map(|o| o.success),
                active.is_some_and(|o| o.success),
                state,
            )
        }
        Platform::MacOs => {
            let domain = launchd_domain(cmds, out)?;
            let printed = query(
                "launchctl",
                &sv(&["print", &format!("{domain}/{LAUNCHD_LABEL}")]),
            );
            let (running, detail) = match printed {
                Some(o) if o.success => {
                    let state = o
                        .stdout
                        .lines()
                        .find_map(|l| l.trim().strip_prefix("state = "))
                        .unwrap_or("loaded")
                        .to_string();
                    (state == "running", state)
                }
                Some(_) => (false, "not loaded".to_string()),
                None => (false, "launchctl is not available".to_string()),
            };
            (Some(installed), running, detail)
        }
        Platform::Windows | Platform::Other => {
            unreachable_platform(env)?;
            (None, false, String::new())
        }
    };
    p(
        out,
        format!(
            "service file: {} ({})",
            file.display(),
            if installed {
                "installed"
            } else {
                "not installed: run `local-agent service install`"
            }
        ),
    )?;
    if let Some(e) = enabled {
        p(
            out,
            format!("starts automatically: {}", if e { "yes" } else { "no" }),
        )?;
    }
    p(
        out,
        format!("running: {} ({detail})", if running { "yes" } else { "no" }),
    )?;
    p(out, format!("logs: {}", env.logs_hint()))?;
    p(
        out,
        format!("environment file: {}", env.env_file().display()),
    )?;
    Ok(Status {
        installed,
        enabled,
        running,
        detail,
    })
}
