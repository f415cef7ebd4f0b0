//! `<data dir>/routine.db`: the routine model's nights, the night in progress, and fall episodes.
//!
//! The model is its nights: the baseline is recomputed from the stored good nights at start, so
//! there is no derived state to get out of step. Every write is one transaction: a finished night
//! replaces the in-progress checkpoint in the same transaction, so a crash at any moment leaves
//! either the old or the new state. The in-progress night is checkpointed every few minutes of
//! live data; SIGKILL loses at most the minutes since the last checkpoint.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use super::{Opened, StoreError};
use crate::sensing::routine::{FinishedNight, NightAccumulator, NightFeatures};

/// File name inside the data directory.
pub const FILE: &str = "routine.db";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS nights (
    night TEXT PRIMARY KEY,
    features TEXT NOT NULL,
    learned INTEGER NOT NULL,
    anomalous INTEGER NOT NULL,
    finished_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS current_night (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    accumulator TEXT NOT NULL,
    saved_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fall_episodes (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    since TEXT NOT NULL,
    detail TEXT NOT NULL,
    cleared_at TEXT
);
";

/// Why a routine store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RoutineStoreError {
    #[error(transparent)]
    Open(#[from] StoreError),
    #[error("routine store {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

/// What was loaded at start.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// Good nights, oldest first.
    pub learned: Vec<NightFeatures>,
    /// When the newest good night was stored.
    pub updated_at: Option<jiff::Timestamp>,
    pub current: Option<NightAccumulator>,
    /// Rows that could not be decoded and were skipped.
    pub skipped: usize,
}

/// A stored fall or no-breathing episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Episode {
    /// The alert id raised for it.
    pub id: String,
    /// `fall` or `no_breathing`.
    pub kind: String,
    /// RFC 3339.
    pub since: String,
    pub cleared_at: Option<String>,
}

/// The open store.
pub struct RoutineStore {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for RoutineStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoutineStore")
            .field("path", &self.path)
            .finish()
    }
}

impl RoutineStore {
    /// Opens (creating) `path`; a corrupt file is moved aside and a fresh one started, with a log
    /// line saying where the old file went.
    pub fn open(path: &Path) -> Result<(Self, Opened), RoutineStoreError> {
        let (conn, opened) = super::open(path)?;
        if let Opened::Recovered { moved_to } = &opened {
            tracing::warn!(
                moved_to = %moved_to.display(),
                "the routine store was damaged; the learned routine restarts empty"
            );
        }
        let me = Self {
            conn,
            path: path.to_path_buf(),
        };
        me.conn.execute_batch(SCHEMA).map_err(|e| me.err(e))?;
        Ok((me, opened))
    }

    /// Opens `<data dir>/routine.db`.
    pub fn open_default() -> Result<(Self, Opened), RoutineStoreError> {
        let dir = super::data_dir()?;
        Self::open(&dir.join(FILE))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, source: rusqlite::Error) -> RoutineStoreError {
        RoutineStoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// The newest `history` good nights (oldest first) and the night in progress.
    pub fn load(&self, history: usize) -> Result<Loaded, RoutineStoreError> {
        let mut out = Loaded::default();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT features, finished_at FROM nights WHERE learned = 1
                 ORDER BY night DESC LIMIT ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![history as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (features, finished_at) = row.map_err(|e| self.err(e))?;
            match serde_json::from_str::<NightFeatures>(&features) {
                Ok(f) => {
                    if out.updated_at.is_none() {
                        out.updated_at = finished_at.parse().ok();
                    }
                    out.learned.push(f);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "skipping a stored night that cannot be read");
                    out.skipped += 1;
                }
            }
        }
        out.learned.reverse();
        let current: Option<String> = self
            .conn
            .query_row(
                "SELECT accumulator FROM current_night WHERE id = 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        if let Some(json) = current {
            match serde_json::from_str::<NightAccumulator>(&json) {
                Ok(acc) if acc.is_well_formed() => out.current = Some(acc),
                _ => {
                    tracing::warn!("discarding an unreadable in-progress night");
                    out.skipped += 1;
                }
            }
        }
        Ok(out)
    }

    /// Stores a finished night and clears the in-progress checkpoint, atomically.
    pub fn save_night(&mut self, night: &FinishedNight) -> Result<(), RoutineStoreError> {
        let features = serde_json::to_string(&night.features).unwrap_or_default();
        let now = jiff::Timestamp::now().to_string();
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction()
            .map_err(|source| RoutineStoreError::Sqlite {
                path: path.clone(),
                source,
            })?;
        let res = tx
            .execute(
                "INSERT OR REPLACE INTO nights (night, features, learned, anomalous, finished_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![night.night, features, night.learned, night.anomalous, now],
            )
            .and_then(|_| tx.execute("DELETE FROM current_night", []))
            .and_then(|_| tx.commit());
        res.map(|_| ())
            .map_err(|source| RoutineStoreError::Sqlite { path, source })
    }

    /// Checkpoints the night in progress.
    pub fn save_current(&self, acc: &NightAccumulator) -> Result<(), RoutineStoreError> {
        let json = serde_json::to_string(acc).unwrap_or_default();
        self.conn
            .execute(
                "INSERT OR REPLACE INTO current_night (id, accumulator, saved_at)
                 VALUES (1, ?1, ?2)",
                params![json, jiff::Timestamp::now().to_string()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Records the start of a fall or no-breathing episode.
    pub fn record_episode(
        &self,
        id: &str,
        kind: &str,
        since: &str,
        detail: &str,
    ) -> Result<(), RoutineStoreError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO fall_episodes (id, kind, since, detail) VALUES (?1, ?2, ?3, ?4)",
                params![id, kind, since, detail],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Marks an episode over.
    pub fn clear_episode(&self, id: &str, at: &str) -> Result<(), RoutineStoreError> {
        self.conn
            .execute(
                "UPDATE fall_episodes SET cleared_at = ?2 WHERE id = ?1 AND cleared_at IS NULL",
                params![id, at],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Episodes stored, newest first.
    pub fn episodes(&self) -> Result<Vec<Episode>, RoutineStoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, kind, since, cleared_at FROM fall_episodes ORDER BY since DESC")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Episode {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    since: r.get(2)?,
                    cleared_at: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Forgets the learned routine (nights and the night in progress); fall episodes stay.
    pub fn reset(&mut self) -> Result<usize, RoutineStoreError> {
        let path = self.path.clone();
        let map = |source| RoutineStoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(map)?;
        let n = tx.execute("DELETE FROM nights", []).map_err(map)?;
        tx.execute("DELETE FROM current_night", []).map_err(map)?;
        tx.commit().map_err(map)?;
        Ok(n)
    }
}
