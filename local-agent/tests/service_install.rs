//! `local-agent service install|uninstall|status` against temporary home directories: the
//! systemd unit passes `systemd-analyze verify`, the launchd property list parses as one
//! (Python's plistlib), and the systemctl/launchctl calls are recorded instead of run (no user
//! systemd here, and a test must never install a real service).

mod mqtt_support;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use local_agent::service::units::{self, LAUNCHD_LABEL, UNIT_NAME};
use local_agent::service::{self, CommandOutput, Commands, Platform, ServiceEnv};
use mqtt_support::{BIN, TempDir, free_port};

/// Records every command and answers from a script.
struct Recorder {
    calls: RefCell<Vec<String>>,
    answer: Box<dyn Fn(&str) -> CommandOutput>,
}

impl Recorder {
    fn ok() -> Self {
        Self::with(|line| CommandOutput {
            success: true,
            code: Some(0),
            stdout: if line == "id -u" {
                "501".into()
            } else {
                String::new()
            },
            stderr: String::new(),
        })
    }

    fn with(answer: impl Fn(&str) -> CommandOutput + 'static) -> Self {
        Self {
            calls: RefCell::new(Vec::new()),
            answer: Box::new(answer),
        }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }
}

impl Commands for Recorder {
    fn run(&self, program: &str, args: &[String]) -> std::io::Result<CommandOutput> {
        let line = std::iter::once(program.to_string())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        self.calls.borrow_mut().push(line.clone());
        Ok((self.answer)(&line))
    }
}

fn env_in(home: &Path, platform: Platform) -> ServiceEnv {
    let config_dir = match platform {
        Platform::MacOs => home.join("Library/Application Support/presence-agent"),
        _ => home.join(".config/presence-agent"),
    };
    ServiceEnv {
        platform,
        home: home.to_path_buf(),
        config_dir,
        xdg_config_home: home.join(".config"),
        exe: PathBuf::from(BIN),
        run_args: vec!["--source".into(), "hub".into()],
        seed_env: vec![
            ("SERVICE_ENGINE_PORT".into(), "18799".into()),
            ("SERVICE_SENTINEL_TOKEN".into(), "tok-3f9a-secret".into()),
        ],
    }
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn program(name: &str) -> PathBuf {
    for dir in ["/usr/bin", "/bin", "/usr/local/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!(
        "{name} is not installed: `apt-get install -y systemd` (the test command .ci/test installs it)"
    );
}

/// `systemd-analyze --user verify` on a unit file: its status and what it printed.
fn verify(unit: &Path) -> (bool, String) {
    let runtime = TempDir::new("xdg-runtime");
    let out = Command::new(program("systemd-analyze"))
        .args(["--user", "verify"])
        .arg(unit)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env("SYSTEMD_LOG_COLOR", "0")
        .output()
        .expect("systemd-analyze runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), printed)
}

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let dir = TempDir::new("verify");
    let unit = units::systemd_unit(
        Path::new(BIN),
        &[
            "--source".into(),
            "replay".into(),
            "--file".into(),
            "/srv/csi/night $x 100%.jsonl".into(),
        ],
        &dir.path().join("service.env"),
    );
    let path = dir.path().join(UNIT_NAME);
    std::fs::write(&path, &unit).unwrap();
    let (ok, printed) = verify(&path);
    assert!(
        ok && printed.trim().is_empty(),
        "systemd-analyze: {printed}\n{unit}"
    );

    // The check bites: a misspelt key or a bad value is reported.
    let broken = unit.replace("Restart=on-failure", "Restart=sometimes");
    std::fs::write(&path, broken).unwrap();
    let (_, printed) = verify(&path);
    assert!(printed.contains("sometimes"), "{printed}");
}

#[test]
fn install_and_uninstall_a_systemd_user_unit_in_a_temporary_home() {
    let home = TempDir::new("linux-home");
    let env = env_in(home.path(), Platform::Linux);
    let rec = Recorder::ok();
    let mut out = Vec::new();
    service::install(&env, &rec, &mut out).unwrap();
    let printed = String::from_utf8(out).unwrap();

    let unit_path = home.path().join(".config/systemd/user").join(UNIT_NAME);
    let unit = std::fs::read_to_string(&unit_path).unwrap();
    assert!(unit.contains(&format!("ExecStart=\"{BIN}\" run \"--source\" \"hub\"\n")));
    assert!(unit.contains("Restart=on-failure"));
    let env_file = home.path().join(".config/presence-agent/service.env");
    assert!(unit.contains(&format!("SERVICE_ENV_FILE={}", env_file.display())));
    assert!(
        !unit.contains("tok-3f9a-secret"),
        "the token is in the unit"
    );
    assert_eq!(mode(&env_file), 0o600);
    let vars = service::envfile::load(&env_file).unwrap();
    assert!(vars.contains(&("SERVICE_SENTINEL_TOKEN".into(), "tok-3f9a-secret".into())));
    assert_eq!(
        rec.calls(),
        vec![
            "systemctl --user daemon-reload",
            "systemctl --user enable presence-agent.service",
            "systemctl --user restart presence-agent.service",
            "loginctl enable-linger",
        ]
    );
    assert!(
        printed.contains("journalctl --user -u presence-agent.service"),
        "{printed}"
    );
    assert!(!printed.contains("tok-3f9a-secret"), "{printed}");
    let (ok, verified) = verify(&unit_path);
    assert!(ok && verified.trim().is_empty(), "{verified}");

    // A second install keeps the user's environment file as it is.
    std::fs::write(&env_file, "SERVICE_SENTINEL_TOKEN=edited\n").unwrap();
    service::install(&env, &Recorder::ok(), &mut Vec::new()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        "SERVICE_SENTINEL_TOKEN=edited\n"
    );

    let rec = Recorder::ok();
    let mut out = Vec::new();
    service::uninstall(&env, &rec, &mut out).unwrap();
    assert!(!unit_path.exists());
    assert!(env_file.exists(), "uninstall keeps the secrets file");
    assert_eq!(
        rec.calls(),
        vec![
            "systemctl --user disable --now presence-agent.service",
            "systemctl --user daemon-reload",
        ]
    );
}

#[test]
fn a_failing_systemctl_is_reported_with_what_it_said() {
    let home = TempDir::new("linux-nobus");
    let env = env_in(home.path(), Platform::Linux);
    let rec = Recorder::with(|line| CommandOutput {
        success: !line.starts_with("systemctl"),
        code: Some(1),
        stdout: String::new(),
        stderr: "Failed to connect to bus: No medium found".into(),
    });
    let e = service::install(&env, &rec, &mut Vec::new()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("systemctl --user daemon-reload") && msg.contains("No medium found"),
        "{msg}"
    );
    let mut out = Vec::new();
    let status = service::status(&env, &rec, &mut out).unwrap();
    assert!(status.installed && !status.running);
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("running: no"), "{printed}");
    assert!(printed.contains("No medium found"), "{printed}");
}

#[test]
fn install_on_macos_writes_a_launchd_agent_that_parses() {
    let home = TempDir::new("mac-home");
    let env = env_in(home.path(), Platform::MacOs);
    let rec = Recorder::ok();
    service::install(&env, &rec, &mut Vec::new()).unwrap();
    let plist_path = home
        .path()
        .join("Library/LaunchAgents")
        .join(format!("{LAUNCHD_LABEL}.plist"));
    let log = home.path().join("Library/Logs/presence-agent/agent.log");
    let env_file = home
        .path()
        .join("Library/Application Support/presence-agent/service.env");
    assert!(log.parent().unwrap().is_dir());
    assert_eq!(mode(&env_file), 0o600);
    let text = std::fs::read_to_string(&plist_path).unwrap();
    assert!(
        !text.contains("tok-3f9a-secret"),
        "the token is in the plist"
    );

    // Python's plistlib is an independent reader of Apple's property list format.
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, plistlib, sys; print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))",
        ])
        .arg(&plist_path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["Label"], LAUNCHD_LABEL);
    assert_eq!(
        d["ProgramArguments"],
        serde_json::json!([BIN, "run", "--source", "hub"])
    );
    assert_eq!(d["RunAtLoad"], true);
    assert_eq!(
        d["KeepAlive"]["SuccessfulExit"], false,
        "restart on failure"
    );
    assert_eq!(d["StandardOutPath"], log.to_str().unwrap());
    assert_eq!(d["StandardErrorPath"], log.to_str().unwrap());
    assert_eq!(
        d["EnvironmentVariables"]["SERVICE_ENV_FILE"],
        env_file.to_str().unwrap()
    );
    assert_eq!(
        rec.calls(),
        vec![
            "id -u".to_string(),
            format!("launchctl bootout gui/501/{LAUNCHD_LABEL}"),
            format!("launchctl enable gui/501/{LAUNCHD_LABEL}"),
            format!("launchctl bootstrap gui/501 {}", plist_path.display()),
        ]
    );

    let running = Recorder::with(|line| CommandOutput {
        success: true,
        code: Some(0),
        stdout: if line == "id -u" {
            "501".into()
        } else {
            "gui/501/local.presence-agent = {\n\tstate = running\n\tpid = 4242\n}".into()
        },
        stderr: String::new(),
    });
    let mut out = Vec::new();
    let status = service::status(&env, &running, &mut out).unwrap();
    assert!(status.running && status.installed);
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains(log.to_str().unwrap())
    );

    let rec = Recorder::ok();
    service::uninstall(&env, &rec, &mut Vec::new()).unwrap();
    assert!(!plist_path.exists());
    assert_eq!(
        rec.calls(),
        vec![
            "id -u".to_string(),
            format!("launchctl bootout gui/501/{LAUNCHD_LABEL}"),
        ]
    );
}

#[test]
fn windows_is_not_supported_yet() {
    let home = TempDir::new("win-home");
    let env = env_in(home.path(), Platform::Windows);
    let rec = Recorder::ok();
    for result in [
        service::install(&env, &rec, &mut Vec::new()).map(|_| ()),
        service::uninstall(&env, &rec, &mut Vec::new()),
        service::status(&env, &rec, &mut Vec::new()).map(|_| ()),
    ] {
        let msg = result.unwrap_err().to_string();
        assert!(msg.contains("not supported on Windows yet"), "{msg}");
    }
    assert!(rec.calls().is_empty());
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
}

/// A directory of stand-ins for `systemctl` and `loginctl` that log their arguments; `status`
/// is what `systemctl --user is-active` answers.
fn fake_tools(dir: &Path, active: bool) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("calls.log");
    for tool in ["systemctl", "loginctl"] {
        let script = format!(
            "#!/bin/sh\necho \"{tool} $*\" >> '{log}'\n\
             case \"$*\" in *is-active*) {active};; *is-enabled*) echo enabled;; esac\nexit 0\n",
            log = log.display(),
            active = if active {
                "echo active"
            } else {
                "echo inactive; exit 3"
            }
        );
        let path = bin.join(tool);
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

fn cli(home: &Path, bin: &Path, args: &[&str]) -> std::process::Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(BIN)
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("PATH", path)
        .env("SERVICE_SENTINEL_TOKEN", "tok-cli-77c1")
        .env_remove("SERVICE_ENV_FILE")
        .env_remove("SERVICE_CONFIG")
        .output()
        .unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn the_cli_installs_checks_and_removes_the_service_and_never_passes_the_token() {
    let dir = TempDir::new("cli");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let bin = fake_tools(dir.path(), true);

    let out = cli(&home, &bin, &["service", "install", "--", "--bogus"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid `run` options"));
    assert!(
        !home.join(".config").exists(),
        "nothing written for bad options"
    );

    let out = cli(
        &home,
        &bin,
        &["service", "install", "--", "--source", "hub"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        vec![
            "systemctl --user daemon-reload",
            "systemctl --user enable presence-agent.service",
            "systemctl --user restart presence-agent.service",
            "loginctl enable-linger",
        ]
    );
    let unit = std::fs::read_to_string(home.join(".config/systemd/user").join(UNIT_NAME)).unwrap();
    for text in [&calls, &unit, &stdout.to_string()] {
        assert!(!text.contains("tok-cli-77c1"), "the token leaked: {text}");
    }
    let env_file = home.join(".config/presence-agent/service.env");
    assert!(
        std::fs::read_to_string(&env_file)
            .unwrap()
            .contains("tok-cli-77c1")
    );
    assert_eq!(mode(&env_file), 0o600);

    let out = cli(&home, &bin, &["service", "status"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("running: yes") && stdout.contains("journalctl"),
        "{stdout}"
    );

    let stopped = fake_tools(&dir.path().join("stopped"), false);
    let out = cli(&home, &stopped, &["service", "status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("running: no"));

    let out = cli(&home, &bin, &["service", "uninstall"]);
    assert!(out.status.success());
    assert!(!home.join(".config/systemd/user").join(UNIT_NAME).exists());
}

#[test]
fn the_environment_file_feeds_the_agent_its_settings_and_secrets() {
    let dir = TempDir::new("envfile");
    let port = free_port();
    let env_file = dir.path().join("service.env");
    std::fs::write(
        &env_file,
        format!("# the service's environment\nSERVICE_ENGINE_PORT={port}\nSERVICE_SENTINEL_PORT=0\nSERVICE_CSI_PORT=0\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let mut child = Command::new(BIN)
        .args(["run", "--scene", "empty"])
        .env("SERVICE_ENV_FILE", &env_file)
        .env("SERVICE_CONFIG", dir.path().join("config.toml"))
        .env("SERVICE_DATA_DIR", dir.path().join("data"))
        .env_remove("SERVICE_ENGINE_PORT")
        .env_remove("SERVICE_SENTINEL_PORT")
        .env_remove("SERVICE_CSI_PORT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let answered = (0..400).any(|_| {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
        false
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        answered,
        "the engine did not take its port from the environment file"
    );

    std::fs::write(&env_file, "SERVICE_SENTINEL_TOKEN=\"unterminated-secret\n").unwrap();
    let out = Command::new(BIN)
        .args(["run"])
        .env("SERVICE_ENV_FILE", &env_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 1"), "{stderr}");
    assert!(!stderr.contains("unterminated-secret"), "{stderr}");
}
