//! Sled mode's records: a sled database of their own in the data directory, each write
//! flushed and synced before it is acknowledged, their last uses indexed in memory.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::error::Error;
use crate::registry::durable::{self, Durable};
use crate::registry::records::stored::{unix_ms, Limits, Stored};
use crate::registry::store::{self, RECORDS_DIR as DIR_NAME};

/// sled's page cache for the records (they are small and read one at a time).
pub(super) const CACHE_BYTES: u64 = 16 << 20;

/// How long an open waits for the records' lock to be let go.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(5);

pub(super) struct Local {
    pub(super) db: sled::Db,
    /// Our handles to sync what sled's flush leaves unsynced, and how many writes the
    /// last sync covered. Held by one sync at a time: writes that land meanwhile are
    /// covered by the next one, together (a group commit).
    pub(super) durable: std::sync::Mutex<(Durable, u64)>,
    /// Writes made so far (counted once each is in sled).
    pub(super) written: AtomicU64,
    /// Every record's last use; held while sled's records change, so that the two agree.
    pub(super) recency: std::sync::Mutex<Recency>,
}

impl Local {
    pub(super) fn open(data_dir: &Path, limits: Limits) -> Result<Self, String> {
        let dir = data_dir.join(DIR_NAME);
        durable::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        // A store whose lock is held is in use, not damaged: never set aside. sled may
        // hold it a moment after its last handle is dropped (a restart in process).
        if !store::wait_unlocked(&dir, LOCK_WAIT) {
            return Err(format!(
                "{} is in use by another running instance (its lock is held)",
                dir.display()
            ));
        }
        let db = match store::open(&dir, CACHE_BYTES) {
            Ok(db) => db,
            Err(cause) => {
                let aside = set_aside(data_dir, &dir)?;
                tracing::error!(records = %dir.display(), moved_to = %aside.display(), cause = %cause,
                    "the front's records could not be opened; they were set aside and the front starts with none");
                durable::create_dir_all(&dir)
                    .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
                store::open(&dir, CACHE_BYTES)?
            }
        };
        let durable = Durable::after_open(&dir)
            .map_err(|e| format!("cannot sync what the records' store wrote at open: {e}"))?;
        let local = Self {
            db,
            durable: std::sync::Mutex::new((durable, 0)),
            written: AtomicU64::new(0),
            recency: std::sync::Mutex::default(),
        };
        local
            .index(limits)
            .map_err(|cause| format!("cannot read the front's records: {cause}"))?;
        Ok(local)
    }

    /// Writes one record, forgets what the cap and the expiry say to, then syncs: the
    /// record is durable when this returns.
    pub(super) fn put(
        &self,
        key: &str,
        stored: Vec<u8>,
        used: u64,
        limits: Limits,
    ) -> Result<(), Error> {
        {
            // Under the lock: a record forgotten here is never one written meanwhile.
            let mut recency = self.recency.lock().expect("records recency lock");
            self.db
                .insert(key.as_bytes(), stored)
                .map_err(store::error)?;
            recency.note(key, used);
            for gone in recency.evict(limits, used) {
                let _ = self.db.remove(gone.as_bytes());
            }
        }
        let mine = self.written.fetch_add(1, Ordering::SeqCst) + 1;
        let mut durable = self.durable.lock().expect("records sync lock");
        // A sync that began after this write was in sled covered it.
        if durable.1 < mine {
            let upto = self.written.load(Ordering::SeqCst);
            self.db.flush().map_err(store::error)?;
            durable.0.after_flush().map_err(|e| store::io_error(&e))?;
            durable.1 = upto;
        }
        Ok(())
    }

    pub(super) fn get(&self, key: &str, limits: Limits) -> Result<Option<Value>, Error> {
        let read = store::guarded(|| self.db.get(key.as_bytes()).map_err(|e| e.to_string()))
            .map_err(Error::Storage)?;
        let Some(bytes) = read else {
            return Ok(None);
        };
        let now = unix_ms();
        let stored = serde_json::from_slice::<Stored>(&bytes)
            .ok()
            .filter(|stored| {
                Duration::from_millis(now.saturating_sub(stored.used)) <= limits.expiry
            });
        let mut recency = self.recency.lock().expect("records recency lock");
        let Some(stored) = stored else {
            // Unreadable or expired: forgotten, never guessed at.
            if self
                .db
                .compare_and_swap(key.as_bytes(), Some(bytes), None::<&[u8]>)
                .is_ok()
            {
                recency.forget(key);
            }
            return Ok(None);
        };
        if Duration::from_millis(now.saturating_sub(stored.used)) > limits.touch_after() {
            // The last use, written only if the record is unchanged since it was read.
            // Not flushed: a last use lost in a crash only shortens the record's life.
            let touched = serde_json::to_vec(&Stored {
                used: now,
                value: stored.value.clone(),
            })
            .expect("JSON serializes");
            if let Ok(Ok(())) = self
                .db
                .compare_and_swap(key.as_bytes(), Some(bytes), Some(touched))
            {
                recency.note(key, now);
            }
        }
        Ok(Some(stored.value))
    }

    pub(super) fn newest(
        &self,
        prefix: &str,
        limit: usize,
        limits: Limits,
    ) -> Result<Vec<Value>, Error> {
        let keys: Vec<String> = {
            let recency = self.recency.lock().expect("records recency lock");
            recency
                .by_use
                .iter()
                .rev()
                .filter(|(_, key)| key.starts_with(prefix))
                .take(limit)
                .map(|(_, key)| key.clone())
                .collect()
        };
        let now = unix_ms();
        let mut found = Vec::with_capacity(keys.len());
        for key in keys {
            let read = store::guarded(|| self.db.get(key.as_bytes()).map_err(|e| e.to_string()))
                .map_err(Error::Storage)?;
            if let Some(stored) =
                read.and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok())
            {
                if Duration::from_millis(now.saturating_sub(stored.used)) <= limits.expiry {
                    found.push(stored.value);
                }
            }
        }
        Ok(found)
    }

    /// Reads every record's last use into the index, once, at open; forgets what is
    /// unreadable, expired or over the cap.
    pub(super) fn index(&self, limits: Limits) -> Result<(), String> {
        let now = unix_ms();
        let expiry = u64::try_from(limits.expiry.as_millis()).unwrap_or(u64::MAX);
        let mut recency = self.recency.lock().expect("records recency lock");
        store::guarded(|| {
            for item in self.db.iter() {
                let (key, value) = item.map_err(|e| e.to_string())?;
                let key_text = String::from_utf8_lossy(&key).into_owned();
                match serde_json::from_slice::<Stored>(&value) {
                    Ok(stored) if now.saturating_sub(stored.used) <= expiry => {
                        recency.note(&key_text, stored.used);
                    }
                    _ => {
                        let _ = self.db.remove(&key);
                    }
                }
            }
            Ok(())
        })?;
        for gone in recency.evict(limits, now) {
            let _ = self.db.remove(gone.as_bytes());
        }
        Ok(())
    }
}

/// The records' last uses, in memory: which to forget first, without reading them.
#[derive(Debug, Default)]
pub(super) struct Recency {
    by_key: HashMap<String, u64>,
    by_use: BTreeSet<(u64, String)>,
}

impl Recency {
    /// Notes `key`'s last use.
    pub(super) fn note(&mut self, key: &str, used: u64) {
        if let Some(before) = self.by_key.insert(key.to_owned(), used) {
            self.by_use.remove(&(before, key.to_owned()));
        }
        self.by_use.insert((used, key.to_owned()));
    }

    pub(super) fn forget(&mut self, key: &str) {
        if let Some(used) = self.by_key.remove(key) {
            self.by_use.remove(&(used, key.to_owned()));
        }
    }

    /// The keys to forget at `now`: the expired, then the least recently used over the
    /// cap; they leave the index.
    pub(super) fn evict(&mut self, limits: Limits, now: u64) -> Vec<String> {
        let expiry = u64::try_from(limits.expiry.as_millis()).unwrap_or(u64::MAX);
        let mut gone = Vec::new();
        while let Some((used, _)) = self.by_use.first() {
            let expired = now.saturating_sub(*used) > expiry;
            if !expired && self.by_key.len() <= limits.cap {
                break;
            }
            let (_, key) = self.by_use.pop_first().expect("a first entry");
            self.by_key.remove(&key);
            gone.push(key);
        }
        gone
    }
}

/// Moves a damaged records database into `damaged-records-<unix seconds>/` in the data
/// directory (a name the registry's store passes over) and syncs both folders.
pub(super) fn set_aside(data_dir: &Path, dir: &Path) -> Result<PathBuf, String> {
    let aside = store::aside_path(data_dir, "records-");
    std::fs::rename(dir, &aside)
        .and_then(|()| std::fs::File::open(data_dir))
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("cannot move {} aside: {e}", dir.display()))?;
    Ok(aside)
}
