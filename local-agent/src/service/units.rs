//! The files `service install` writes: a systemd user unit (Linux) and a launchd agent property
//! list (macOS). Pure text, so tests check them with `systemd-analyze verify` and a plist parser.

use std::path::Path;

/// The systemd unit name and the launchd label.
pub const UNIT_NAME: &str = "presence-agent.service";
pub const LAUNCHD_LABEL: &str = "local.presence-agent";

/// Quotes one word for a systemd `ExecStart=` or `Environment=` line: double quotes, with `\`
/// and `"` escaped, `%` doubled (specifiers) and `$` doubled (variable expansion).
pub fn systemd_quote(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('"');
    for c in word.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The systemd user unit: restart on failure, logs to the journal, secrets from the environment
/// file (never on the command line).
pub fn systemd_unit(exe: &Path, run_args: &[String], env_file: &Path) -> String {
    let mut exec = systemd_quote(&exe.to_string_lossy());
    exec.push_str(" run");
    for a in run_args {
        exec.push(' ');
        exec.push_str(&systemd_quote(a));
    }
    let env = systemd_quote(&format!(
        "{}={}",
        super::envfile::ENV_FILE_ENV,
        env_file.to_string_lossy()
    ));
    format!(
        "# Written by `local-agent service install`; `local-agent service uninstall` removes it.\n\
         # Settings live in the agent's config file, secrets in the environment file named below.\n\
         [Unit]\n\
         Description=Presence-sensing local agent (Wi-Fi CSI)\n\
         # Give up after 5 failed starts in 5 minutes (a broken config); `systemctl --user restart` retries.\n\
         StartLimitIntervalSec=300\n\
         StartLimitBurst=5\n\
         \n\
         [Service]\n\
         Type=exec\n\
         ExecStart={exec}\n\
         Environment={env}\n\
         Restart=on-failure\n\
         RestartSec=5s\n\
         # Exit status 2 is a command-line error: restarting cannot fix it.\n\
         RestartPreventExitStatus=2\n\
         TimeoutStopSec=20s\n\
         StandardOutput=journal\n\
         StandardError=journal\n\
         SyslogIdentifier=presence-agent\n\
         NoNewPrivileges=yes\n\
         UMask=0077\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n"
    )
}

/// The launchd agent: started at login, restarted when it exits with a failure, stdout and
/// stderr appended to `log`.
pub fn launchd_plist(
    exe: &Path,
    run_args: &[String],
    env_file: &Path,
    log: &Path,
) -> Result<String, plist::Error> {
    let mut args = vec![
        plist::Value::String(exe.to_string_lossy().into_owned()),
        plist::Value::String("run".into()),
    ];
    args.extend(run_args.iter().cloned().map(plist::Value::String));
    let mut env = plist::Dictionary::new();
    env.insert(
        super::envfile::ENV_FILE_ENV.into(),
        plist::Value::String(env_file.to_string_lossy().into_owned()),
    );
    let mut keep_alive = plist::Dictionary::new();
    keep_alive.insert("SuccessfulExit".into(), plist::Value::Boolean(false));
    let log = plist::Value::String(log.to_string_lossy().into_owned());
    let mut d = plist::Dictionary::new();
    d.insert("Label".into(), plist::Value::String(LAUNCHD_LABEL.into()));
    d.insert("ProgramArguments".into(), plist::Value::Array(args));
    d.insert("EnvironmentVariables".into(), plist::Value::Dictionary(env));
    d.insert("RunAtLoad".into(), plist::Value::Boolean(true));
    d.insert("KeepAlive".into(), plist::Value::Dictionary(keep_alive));
    d.insert("ThrottleInterval".into(), plist::Value::Integer(10.into()));
    d.insert("StandardOutPath".into(), log.clone());
    d.insert("StandardErrorPath".into(), log);
    d.insert(
        "ProcessType".into(),
        plist::Value::String("Background".into()),
    );
    let mut out = Vec::new();
    plist::Value::Dictionary(d).to_writer_xml(&mut out)?;
    out.push(b'\n');
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_systemd_would_expand() {
        assert_eq!(systemd_quote("/opt/a b/x"), "\"/opt/a b/x\"");
        assert_eq!(systemd_quote("100%"), "\"100%%\"");
        assert_eq!(systemd_quote("$HOME"), "\"$$HOME\"");
        assert_eq!(systemd_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }

    #[test]
    fn the_unit_runs_the_agent_with_its_arguments_and_no_secret() {
        let unit = systemd_unit(
            Path::new("/home/u/bin/local-agent"),
            &["--source".into(), "hub".into()],
            Path::new("/home/u/.config/presence-agent/service.env"),
        );
        assert!(unit.contains("ExecStart=\"/home/u/bin/local-agent\" run \"--source\" \"hub\"\n"));
        assert!(unit.contains(
            "Environment=\"SERVICE_ENV_FILE=/home/u/.config/presence-agent/service.env\"\n"
        ));
        assert!(unit.contains("Restart=on-failure\n"));
        assert!(unit.contains("WantedBy=default.target\n"));
    }
}
