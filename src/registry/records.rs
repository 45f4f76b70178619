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

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::registry::fleet::etcd::Etcd;
use crate::registry::fleet::layout::Keys;

mod etcd;
mod local;
mod stored;

use etcd::Fleet;
use local::Local;
pub use stored::Limits;
use stored::{unix_ms, StoredRef};

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
            Home::Fleet(etcd, keys) => Place::Fleet(Fleet::new(
                Arc::clone(etcd),
                format!("{}records/", keys.prefix()).into_bytes(),
            )),
        };
        Ok(Self { place, limits })
    }

    /// The record under `key`, if it is kept and not expired; its use is noted.
    pub async fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        match &self.place {
            Place::Local(local) => local.get(key, self.limits),
            // Boxed: etcd's calls are large futures, which sled mode's callers would
            // otherwise carry (and copy) at every record read and write.
            Place::Fleet(fleet) => Box::pin(fleet.get(key, self.limits)).await,
        }
    }

    /// Up to `limit` records whose keys begin with `prefix`, the most recently used
    /// first, expired ones left out; reading them is not a use. Sled mode walks the
    /// in-memory index of last uses; fleet mode asks etcd for the most recently written.
    pub async fn newest(&self, prefix: &str, limit: usize) -> Result<Vec<Value>, Error> {
        match &self.place {
            Place::Local(local) => local.newest(prefix, limit, self.limits),
            Place::Fleet(fleet) => Box::pin(fleet.newest(prefix, limit, self.limits)).await,
        }
    }

    /// Keeps `value` under `key`; returns once it is durable (sled mode: flushed and
    /// synced; fleet mode: committed by etcd).
    pub async fn put<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<(), Error> {
        let used = unix_ms();
        let stored = serde_json::to_vec(&StoredRef { used, value }).expect("JSON serializes");
        match &self.place {
            Place::Local(local) => {
                let (local, key, limits) = (Arc::clone(local), key.to_owned(), self.limits);
                // sled's flush and our syncs block: off the runtime's threads.
                tokio::task::spawn_blocking(move || local.put(&key, stored, used, limits))
                    .await
                    .map_err(|e| Error::Storage(format!("the records' writer failed: {e}")))?
            }
            Place::Fleet(fleet) => Box::pin(fleet.put(key, used, stored, self.limits)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::store::RECORDS_DIR as DIR_NAME;
    use serde_json::json;
    use std::time::Duration;

    fn limits(cap: usize, expiry: Duration) -> Limits {
        Limits { cap, expiry }
    }

    /// Keeps `value` under `key` as last used at `used` (Unix ms): ages without waiting.
    fn put_at(records: &Records, key: &str, value: &Value, used: u64) {
        let Place::Local(local) = &records.place else {
            unreachable!("sled mode")
        };
        let stored = serde_json::to_vec(&StoredRef { used, value }).unwrap();
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
