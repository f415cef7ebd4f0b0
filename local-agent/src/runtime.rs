//! The runtime file: where `local-agent open` and `local-agent doctor` find the running agent's
//! live view and its token. `<data dir>/view.json`, readable by the user only, written at start
//! and removed at a clean stop (like a notebook server's runtime file).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const FILE: &str = "view.json";

/// Every answer of the live view carries this header, so `doctor` can tell the view's port from
/// another program's.
pub const VIEW_HEADER: &str = "x-presence-view";

/// What the file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// The address with the token, as printed at start.
    pub url: String,
    pub port: u16,
    pub token: String,
    pub pid: u32,
}

pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Writes the file atomically with mode 0600 (the token is a password for the view).
pub fn write(dir: &Path, info: &RuntimeInfo) -> std::io::Result<()> {
    use std::io::Write as _;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{FILE}.{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut f = options.open(&tmp)?;
    f.write_all(&serde_json::to_vec_pretty(info).map_err(std::io::Error::other)?)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path(dir))
}

/// The file's content, if it exists and parses.
pub fn read(dir: &Path) -> Option<RuntimeInfo> {
    let text = std::fs::read(path(dir)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Removes the file if it is still this process's.
pub fn remove_own(dir: &Path) {
    if read(dir).is_some_and(|i| i.pid == std::process::id()) {
        let _ = std::fs::remove_file(path(dir));
    }
}
