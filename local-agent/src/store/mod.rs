//! The agent's durable state: one SQLite file per concern in the data directory.
//!
//! Every store opens through [`open`], which turns on WAL (readers never block the writer, and a
//! crash loses at most the transaction in flight), checks the file's integrity, and moves a
//! corrupt or unreadable file aside instead of refusing to start: a home agent that cannot start
//! because of a bad file protects nobody. The caller then builds its schema on a fresh file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub mod routine;

/// Environment variable naming the data directory.
pub const DATA_DIR_ENV: &str = "SERVICE_DATA_DIR";

/// Sub-directory of the platform's user data directory used when `SERVICE_DATA_DIR` is unset.
pub const APP_DIR: &str = "presence-agent";

/// Why a store could not be opened even after moving a bad file aside.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no data directory: set {DATA_DIR_ENV} (the platform has no user data directory here)")]
    NoDataDir,
    #[error("cannot create the data directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot move the damaged store {path} aside: {source}")]
    MoveAside {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("store {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

/// The data directory: `SERVICE_DATA_DIR`, else `<user data dir>/presence-agent`.
pub fn data_dir() -> Result<PathBuf, StoreError> {
    match std::env::var_os(DATA_DIR_ENV) {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => dirs::data_dir()
            .map(|d| d.join(APP_DIR))
            .ok_or(StoreError::NoDataDir),
    }
}

/// What [`open`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// The file was readable and intact (or did not exist yet).
    Intact,
    /// The file was damaged and now lives at this path; the returned connection is a new file.
    Recovered { moved_to: PathBuf },
}

/// How long a writer waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens (creating if needed) the SQLite file at `path` with WAL and `synchronous=NORMAL`.
///
/// A file that is not a database or fails `PRAGMA quick_check` is renamed to
/// `<name>.corrupt-<unix seconds>` (with its `-wal`/`-shm` companions) and a fresh file is opened;
/// the caller learns this from [`Opened::Recovered`] and should log it.
pub fn open(path: &Path) -> Result<(Connection, Opened), StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    match try_open(path) {
        Ok(conn) => Ok((conn, Opened::Intact)),
        Err(first) => {
            let moved_to = move_aside(path)?;
            tracing::warn!(
                store = %path.display(),
                moved_to = %moved_to.display(),
                error = %first,
                "store was unreadable or corrupt; moved it aside and starting empty"
            );
            let conn = try_open(path).map_err(|source| StoreError::Sqlite {
                path: path.to_path_buf(),
                source,
            })?;
            Ok((conn, Opened::Recovered { moved_to }))
        }
    }
}

fn try_open(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Reading the schema is the first thing that fails on a file that is not a database.
    let check: String = conn.query_row("PRAGMA quick_check", [], |row| row.get(0))?;
    if check != "ok" {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some(check),
        ));
    }
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // NORMAL in WAL mode: a power cut may lose the last transactions, never corrupt the file.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

fn move_aside(path: &Path) -> Result<PathBuf, StoreError> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut target = path.as_os_str().to_owned();
    target.push(format!(".corrupt-{stamp}"));
    let target = PathBuf::from(target);
    for suffix in ["", "-wal", "-shm"] {
        let mut from = path.as_os_str().to_owned();
        from.push(suffix);
        let from = PathBuf::from(from);
        if !from.exists() {
            continue;
        }
        let mut to = target.as_os_str().to_owned();
        to.push(suffix);
        std::fs::rename(&from, PathBuf::from(to)).map_err(|source| StoreError::MoveAside {
            path: from.clone(),
            source,
        })?;
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "store-test-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_new_store_is_created_in_wal_mode_and_keeps_its_rows() {
        let dir = temp_dir("new");
        let path = dir.join("sub").join("state.db");
        let (conn, opened) = open(&path).unwrap();
        assert_eq!(opened, Opened::Intact);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        conn.execute_batch("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (7);")
            .unwrap();
        drop(conn);
        let (conn, opened) = open(&path).unwrap();
        assert_eq!(opened, Opened::Intact);
        let v: i64 = conn.query_row("SELECT v FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(v, 7);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_that_is_not_a_database_is_moved_aside_and_replaced() {
        let dir = temp_dir("garbage");
        let path = dir.join("state.db");
        std::fs::write(
            &path,
            b"this is not an SQLite file, it is a note".repeat(200),
        )
        .unwrap();
        let (conn, opened) = open(&path).unwrap();
        let Opened::Recovered { moved_to } = opened else {
            panic!("expected recovery, got {opened:?}");
        };
        assert!(moved_to.exists(), "the damaged file is kept for inspection");
        assert!(
            std::fs::read(&moved_to)
                .unwrap()
                .starts_with(b"this is not")
        );
        conn.execute_batch("CREATE TABLE t (v INTEGER);").unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_database_with_damaged_pages_is_recovered_from() {
        let dir = temp_dir("pages");
        let path = dir.join("state.db");
        {
            let (conn, _) = open(&path).unwrap();
            conn.execute_batch(
                "PRAGMA journal_mode=DELETE; CREATE TABLE t (v BLOB);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 200)
                 INSERT INTO t SELECT randomblob(500) FROM n;",
            )
            .unwrap();
        }
        let mut bytes = std::fs::read(&path).unwrap();
        // Keep the header (first page) so SQLite recognises the file, but wreck the B-tree pages.
        for b in bytes.iter_mut().skip(4096).step_by(7) {
            *b = 0xA5;
        }
        std::fs::write(&path, bytes).unwrap();
        let (_conn, opened) = open(&path).unwrap();
        assert!(matches!(opened, Opened::Recovered { .. }), "{opened:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
