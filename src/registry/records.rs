//! Records a layer above keeps beside the registry (the front's tasks and task data),
//! in the registry's store and with its discipline: in sled mode a sled database of
//! their own in `<data dir>/records/`, each write acknowledged only after sled's flush
//! and the syncs of [`durable`](super::durable); in fleet mode etcd keys under
//! `<prefix>records/`, acknowledged once etcd committed them, so every replica reads
//! what any other wrote.
//!
//! They are bounded: at most [`Limits::cap`] records, each forgotten [`Limits::expiry`]
//! after its last use. A record past either is gone, never answered with other data.
//! Keys are opaque strings of the layer above; values are JSON.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::pb::etcd::{
    compare, range_request, request_op, Compare, DeleteRangeRequest, PutRequest, RangeRequest,
    RequestOp, TxnRequest,
};
use crate::registry::durable::{self, Durable};
use crate::registry::fleet::etcd::{Etcd, EtcdError};
use crate::registry::fleet::layout::{range_end, Keys};
use crate::registry::store::{self, RECORDS_DIR as DIR_NAME};

/// sled's page cache for the records (they are small and read one at a time).
const CACHE_BYTES: u64 = 16 << 20;

/// How long an open waits for the records' lock to be let go.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// How many records one etcd transaction removes (etcd's default `--max-txn-ops`).
const DELETES_PER_TXN: usize = 128;

/// The bounds on what is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most records kept; past it, the least recently used go first.
    pub cap: usize,
    /// How long a record is kept after its last use.
    pub expiry: Duration,
}

impl Limits {
    /// How stale a record's last-use time may grow before a read writes it anew: a
    /// read does not pay a write every time, and a record is kept at least `expiry`
    /// after its last use, at most this much longer.
    fn touch_after(&self) -> Duration {
        (self.expiry / 100).clamp(Duration::from_secs(1), Duration::from_secs(15 * 60))
    }
}

/// One record as stored: its value and when it was last used (Unix milliseconds).
#[derive(Serialize, Deserialize)]
struct Stored {
    used: u64,
    value: Value,
}

/// Where the registry keeps its records: handed out by the registry, opened once.
#[derive(Clone)]
pub enum Home {
    /// Sled mode: beside the registry, in the data directory.
    Local(PathBuf),
    /// Fleet mode: in etcd, beside the fleet's registry.
    Fleet(Arc<Etcd>, Keys),
}

impl std::fmt::Debug for Home {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Home::Local(dir) => f.debug_tuple("Local").field(dir).finish(),
            Home::Fleet(_, keys) => f.debug_tuple("Fleet").field(keys).finish(),
        }
    }
}

/// The records, open.
pub struct Records {
    place: Place,
    limits: Limits,
}

enum Place {
    Local(Arc<Local>),
    Fleet(Fleet),
}

struct Local {
    db: sled::Db,
    /// Our handles to sync what sled's flush leaves unsynced, and how many writes the
    /// last sync covered. Held by one sync at a time: writes that land meanwhile are
    /// covered by the next one, together (a group commit).
    durable: std::sync::Mutex<(Durable, u64)>,
    /// Writes made so far (counted once each is in sled).
    written: AtomicU64,
    /// Every record's last use; held while sled's records change, so that the two agree.
    recency: std::sync::Mutex<Recency>,
}

struct Fleet {
    etcd: Arc<Etcd>,
    prefix: Vec<u8>,
    /// The lease new writes are bound to, and when it was granted: one lease serves
    /// every write of a period, and outlives the last of them by `expiry`.
    lease: tokio::sync::Mutex<Option<(i64, Instant)>>,
    /// Puts by this sidecar, so that the count is checked every few.
    puts: AtomicU64,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match &self.place {
            Place::Local(_) => "sled",
            Place::Fleet(_) => "etcd",
        };
        f.debug_struct("Records")
            .field("place", &place)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Records {
    /// Opens the records at `home`. In sled mode a records database that sled cannot
    /// open (damaged) is moved whole to `damaged-records-<unix seconds>/` beside it, never
    /// deleted, and an empty one is started: the records are the front's memory of its
    /// tasks, and a task it forgot is answered by the agent, never as another.
    pub fn open(home: &Home, limits: Limits) -> Result<Self, String> {
        let place = match home {
            Home::Local(data_dir) => Place::Local(Arc::new(Local::open(data_dir, limits)?)),
            Home::Fleet(etcd, keys) => Place::Fleet(Fleet {
                etcd: Arc::clone(etcd),
                prefix: format!("{}records/", keys.prefix()).into_bytes(),
                lease: tokio::sync::Mutex::new(None),
                puts: AtomicU64::new(0),
            }),
        };
        Ok(Self { place, limits })
    }

    /// The record under `key`, if it is kept and not expired; its use is noted.
    pub async fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        match &self.place {
            Place::Local(local) => local.get(key, self.limits),
            Place::Fleet(fleet) => fleet.get(key, self.limits).await,
        }
    }

    /// Up to `limit` records whose keys begin with `prefix`, the most recently used
    /// first, expired ones left out; reading them is not a use. Sled mode walks the
    /// in-memory index of last uses; fleet mode asks etcd for the most recently written.
    pub async fn newest(&self, prefix: &str, limit: usize) -> Result<Vec<Value>, Error> {
        match &self.place {
            Place::Local(local) => local.newest(prefix, limit, self.limits),
            Place::Fleet(fleet) => fleet.newest(prefix, limit, self.limits).await,
        }
    }

    /// Keeps `value` under `key`; returns once it is durable (sled mode: flushed and
    /// synced; fleet mode: committed by etcd).
    pub async fn put(&self, key: &str, value: &Value) -> Result<(), Error> {
        let used = unix_ms();
        let stored = serde_json::to_vec(&Stored {
            used,
            value: value.clone(),
        })
        .expect("JSON serializes");
        match &self.place {
            Place::Local(local) => {
                let (local, key, limits) = (Arc::clone(local), key.to_owned(), self.limits);
                // sled's flush and our syncs block: off the runtime's threads.
                tokio::task::spawn_blocking(move || local.put(&key, stored, used, limits))
                    .await
                    .map_err(|e| Error::Storage(format!("the records' writer failed: {e}")))?
            }
            Place::Fleet(fleet) => fleet.put(key, stored, self.limits).await,
        }
    }
}

impl Local {
    fn open(data_dir: &Path, limits: Limits) -> Result<Self, String> {
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
    fn put(&self, key: &str, stored: Vec<u8>, used: u64, limits: Limits) -> Result<(), Error> {
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

    fn get(&self, key: &str, limits: Limits) -> Result<Option<Value>, Error> {
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

    fn newest(&self, prefix: &str, limit: usize, limits: Limits) -> Result<Vec<Value>, Error> {
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
    fn index(&self, limits: Limits) -> Result<(), String> {
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
struct Recency {
    by_key: HashMap<String, u64>,
    by_use: BTreeSet<(u64, String)>,
}

impl Recency {
    /// Notes `key`'s last use.
    fn note(&mut self, key: &str, used: u64) {
        if let Some(before) = self.by_key.insert(key.to_owned(), used) {
            self.by_use.remove(&(before, key.to_owned()));
        }
        self.by_use.insert((used, key.to_owned()));
    }

    fn forget(&mut self, key: &str) {
        if let Some(used) = self.by_key.remove(key) {
            self.by_use.remove(&(used, key.to_owned()));
        }
    }

    /// The keys to forget at `now`: the expired, then the least recently used over the
    /// cap; they leave the index.
    fn evict(&mut self, limits: Limits, now: u64) -> Vec<String> {
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

impl Fleet {
    fn key(&self, key: &str) -> Vec<u8> {
        let mut full = self.prefix.clone();
        full.extend_from_slice(key.as_bytes());
        full
    }

    async fn get(&self, key: &str, limits: Limits) -> Result<Option<Value>, Error> {
        let full = self.key(key);
        let answer = self
            .etcd
            .range(RangeRequest {
                key: full.clone(),
                ..Default::default()
            })
            .await
            .map_err(unavailable)?;
        let Some(kv) = answer.kvs.into_iter().next() else {
            return Ok(None);
        };
        let Ok(stored) = serde_json::from_slice::<Stored>(&kv.value) else {
            return Ok(None);
        };
        let now = unix_ms();
        let age = Duration::from_millis(now.saturating_sub(stored.used));
        if age > limits.expiry {
            return Ok(None);
        }
        if age > limits.touch_after() {
            // Written anew (a later lease) only if no one wrote it since it was read.
            let touched = serde_json::to_vec(&Stored {
                used: now,
                value: stored.value.clone(),
            })
            .expect("JSON serializes");
            if let Ok(lease) = self.lease(limits).await {
                let _ = self
                    .etcd
                    .txn(TxnRequest {
                        compare: vec![Compare {
                            result: compare::CompareResult::Equal as i32,
                            target: compare::CompareTarget::Mod as i32,
                            key: full.clone(),
                            target_union: Some(compare::TargetUnion::ModRevision(kv.mod_revision)),
                        }],
                        success: vec![put_op(full, touched, lease)],
                        failure: Vec::new(),
                    })
                    .await;
            }
        }
        Ok(Some(stored.value))
    }

    async fn newest(
        &self,
        prefix: &str,
        limit: usize,
        limits: Limits,
    ) -> Result<Vec<Value>, Error> {
        let from = self.key(prefix);
        let answer = self
            .etcd
            .range(RangeRequest {
                range_end: range_end(&from),
                key: from,
                limit: i64::try_from(limit).unwrap_or(i64::MAX),
                sort_order: range_request::SortOrder::Descend as i32,
                sort_target: range_request::SortTarget::Mod as i32,
                ..Default::default()
            })
            .await
            .map_err(unavailable)?;
        let now = unix_ms();
        let mut found: Vec<Stored> = answer
            .kvs
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Stored>(&kv.value).ok())
            .filter(|stored| {
                Duration::from_millis(now.saturating_sub(stored.used)) <= limits.expiry
            })
            .collect();
        found.sort_by_key(|stored| std::cmp::Reverse(stored.used));
        Ok(found.into_iter().map(|stored| stored.value).collect())
    }

    async fn put(&self, key: &str, stored: Vec<u8>, limits: Limits) -> Result<(), Error> {
        let full = self.key(key);
        let mut retried = false;
        loop {
            let lease = self.lease(limits).await.map_err(unavailable)?;
            let put = TxnRequest {
                compare: Vec::new(),
                success: vec![put_op(full.clone(), stored.clone(), lease)],
                failure: Vec::new(),
            };
            match self.etcd.txn(put).await {
                Ok(_) => break,
                // The lease ended before it was used (etcd restored, or revoked): a new one.
                Err(EtcdError::Rejected(why)) if !retried && why.contains("lease") => {
                    retried = true;
                    *self.lease.lock().await = None;
                }
                Err(e) => return Err(unavailable(e)),
            }
        }
        // The count is checked every few puts: over the cap by at most that many.
        if self.puts.fetch_add(1, Ordering::Relaxed).is_multiple_of(16) {
            if let Err(e) = self.trim(limits).await {
                tracing::warn!(error = %e, "the front's records in etcd could not be trimmed to their cap");
            }
        }
        Ok(())
    }

    /// The lease for a write now: the current one while it is younger than the touch
    /// period, else a new one of `expiry` plus that period.
    async fn lease(&self, limits: Limits) -> Result<i64, EtcdError> {
        let period = limits.touch_after();
        let mut lease = self.lease.lock().await;
        if let Some((id, granted)) = *lease {
            if granted.elapsed() < period {
                return Ok(id);
            }
        }
        let id = self.etcd.lease_grant(limits.expiry + period * 2).await?;
        *lease = Some((id, Instant::now()));
        Ok(id)
    }

    /// Over the cap: removes the least recently written down to nine tenths of it.
    async fn trim(&self, limits: Limits) -> Result<(), EtcdError> {
        let end = range_end(&self.prefix);
        let counted = self
            .etcd
            .range(RangeRequest {
                key: self.prefix.clone(),
                range_end: end.clone(),
                count_only: true,
                ..Default::default()
            })
            .await?;
        if usize::try_from(counted.count).unwrap_or(usize::MAX) <= limits.cap {
            return Ok(());
        }
        let listed = self
            .etcd
            .range(RangeRequest {
                key: self.prefix.clone(),
                range_end: end,
                keys_only: true,
                ..Default::default()
            })
            .await?;
        let mut kvs = listed.kvs;
        kvs.sort_by_key(|kv| kv.mod_revision);
        let keep = limits.cap - limits.cap / 10;
        let excess = kvs.len().saturating_sub(keep);
        for chunk in kvs[..excess].chunks(DELETES_PER_TXN) {
            let success = chunk
                .iter()
                .map(|kv| RequestOp {
                    request: Some(request_op::Request::RequestDeleteRange(
                        DeleteRangeRequest {
                            key: kv.key.clone(),
                            range_end: Vec::new(),
                        },
                    )),
                })
                .collect();
            self.etcd
                .txn(TxnRequest {
                    compare: Vec::new(),
                    success,
                    failure: Vec::new(),
                })
                .await?;
        }
        Ok(())
    }
}

fn put_op(key: Vec<u8>, value: Vec<u8>, lease: i64) -> RequestOp {
    RequestOp {
        request: Some(request_op::Request::RequestPut(PutRequest {
            key,
            value,
            lease,
        })),
    }
}

fn unavailable(e: EtcdError) -> Error {
    Error::FleetUnavailable(format!("the front's records in etcd: {e}"))
}

/// Moves a damaged records database into `damaged-records-<unix seconds>/` in the data
/// directory (a name the registry's store passes over) and syncs both folders.
fn set_aside(data_dir: &Path, dir: &Path) -> Result<PathBuf, String> {
    let aside = store::aside_path(data_dir, "records-");
    std::fs::rename(dir, &aside)
        .and_then(|()| std::fs::File::open(data_dir))
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("cannot move {} aside: {e}", dir.display()))?;
    Ok(aside)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(cap: usize, expiry: Duration) -> Limits {
        Limits { cap, expiry }
    }

    /// Keeps `value` under `key` as last used at `used` (Unix ms): ages without waiting.
    fn put_at(records: &Records, key: &str, value: &Value, used: u64) {
        let Place::Local(local) = &records.place else {
            unreachable!("sled mode")
        };
        let stored = serde_json::to_vec(&Stored {
            used,
            value: value.clone(),
        })
        .unwrap();
        local.put(key, stored, used, records.limits).unwrap();
    }

    const HOUR_MS: u64 = 3_600_000;

    #[tokio::test]
    async fn a_record_survives_reopening_and_is_forgotten_past_its_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::Local(dir.path().to_owned());
        {
            let records = Records::open(&home, limits(10, Duration::from_secs(3600))).unwrap();
            records.put("t-1", &json!({"task": 1})).await.unwrap();
            assert_eq!(records.get("t-1").await.unwrap(), Some(json!({"task": 1})));
            assert_eq!(records.get("t-2").await.unwrap(), None);
        }
        let records = Records::open(&home, limits(10, Duration::from_secs(3600))).unwrap();
        assert_eq!(records.get("t-1").await.unwrap(), Some(json!({"task": 1})));
        // Last used two hours ago, with an expiry of one: gone when read, and at open.
        put_at(&records, "t-old", &json!(0), unix_ms() - 2 * HOUR_MS);
        put_at(&records, "t-older", &json!(0), unix_ms() - 3 * HOUR_MS);
        assert_eq!(records.get("t-old").await.unwrap(), None);
        drop(records);
        let records = Records::open(&home, limits(10, Duration::from_secs(3600))).unwrap();
        assert_eq!(records.get("t-older").await.unwrap(), None);
        assert_eq!(records.get("t-1").await.unwrap(), Some(json!({"task": 1})));
        // Reopened at once, while sled may still hold its lock: waited for, never taken
        // for damage and set aside.
        let aside = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("damaged-records-")
            })
            .count();
        assert_eq!(aside, 0);
    }

    #[tokio::test]
    async fn over_the_cap_the_least_recently_used_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::Local(dir.path().to_owned());
        let records = Records::open(&home, limits(10, Duration::from_secs(10 * 3600))).unwrap();
        // Distinct last uses, a second apart, so that "oldest" is well defined; recent
        // enough that reading them does not write them anew (10 h expiry: 6 min).
        let base = unix_ms() - 60_000;
        for n in 0..11 {
            put_at(&records, &format!("t-{n}"), &json!(n), base + n * 1000);
        }
        // Eleven over a cap of ten: the oldest gone.
        assert_eq!(records.get("t-0").await.unwrap(), None);
        for n in 1..11 {
            assert_eq!(
                records.get(&format!("t-{n}")).await.unwrap(),
                Some(json!(n))
            );
        }
        // Opened again, the index is read back: past the cap, the next oldest goes.
        drop(records);
        let records = Records::open(&home, limits(10, Duration::from_secs(10 * 3600))).unwrap();
        records.put("t-11", &json!(11)).await.unwrap();
        assert_eq!(records.get("t-1").await.unwrap(), None);
        assert_eq!(records.get("t-2").await.unwrap(), Some(json!(2)));
    }

    #[tokio::test]
    async fn newest_lists_a_prefix_most_recently_used_first_without_the_expired() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::Local(dir.path().to_owned());
        let records = Records::open(&home, limits(10, Duration::from_secs(3600))).unwrap();
        let now = unix_ms();
        put_at(&records, "a-1", &json!(1), now - 3000);
        put_at(&records, "a-2", &json!(2), now - 1000);
        put_at(&records, "b-1", &json!("b"), now - 500);
        put_at(&records, "a-3", &json!(3), now - 2000);
        put_at(&records, "a-old", &json!(0), now - 2 * HOUR_MS);
        assert_eq!(
            records.newest("a-", 10).await.unwrap(),
            vec![json!(2), json!(3), json!(1)]
        );
        assert_eq!(
            records.newest("a-", 2).await.unwrap(),
            vec![json!(2), json!(3)]
        );
        assert!(records.newest("c-", 10).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_damaged_records_database_is_set_aside_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let records_dir = dir.path().join(DIR_NAME);
        std::fs::create_dir_all(&records_dir).unwrap();
        // Not a sled database at all.
        std::fs::write(records_dir.join("conf"), b"\xff\xfe not sled").unwrap();
        std::fs::write(records_dir.join("db"), vec![0xA5u8; 4096]).unwrap();
        let records = Records::open(
            &Home::Local(dir.path().to_owned()),
            limits(10, Duration::from_secs(60)),
        )
        .unwrap();
        assert_eq!(records.get("t-1").await.unwrap(), None);
        records.put("t-1", &json!(1)).await.unwrap();
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("damaged-records-"))
            .collect();
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert!(dir.path().join(&aside[0]).join("db").exists());
    }
}
