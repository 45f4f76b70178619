//! Fleet mode's records: etcd keys under `<prefix>records/`, bound to leases that
//! outlive their last use by the expiry, trimmed to the cap.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::Error;
use crate::pb::etcd::{
    compare, range_request, request_op, Compare, DeleteRangeRequest, PutRequest, RangeRequest,
    RequestOp, TxnRequest,
};
use crate::registry::fleet::etcd::{Etcd, EtcdError};
use crate::registry::fleet::layout::range_end;
use crate::registry::records::stored::{unix_ms, Limits, Stored};

/// How many records one etcd transaction removes (etcd's default `--max-txn-ops`).
pub(super) const DELETES_PER_TXN: usize = 128;

/// The records in etcd, and this sidecar's copy of those it wrote or read.
pub(super) struct Fleet {
    pub(super) etcd: Arc<Etcd>,
    pub(super) prefix: Vec<u8>,
    /// Every record this sidecar wrote or read, as etcd last gave it: what it answers
    /// from while etcd is unreachable, so that an outage never stops the agent's
    /// traffic. Bounded by the cap; each read from etcd puts it right again.
    pub(super) copy: std::sync::Mutex<LocalCopy>,
    /// The lease new writes are bound to, and when it was granted: one lease serves
    /// every write of a period, and outlives the last of them by `expiry`.
    pub(super) lease: tokio::sync::Mutex<Option<(i64, Instant)>>,
    /// Puts by this sidecar, so that the count is checked every few.
    pub(super) puts: AtomicU64,
}

/// This sidecar's copy of the fleet's records: key → the record as stored. Kept as the
/// bytes etcd holds, with their last use: a write or a read keeps them without a parse
/// or a copy of the value, and only an answer from the copy (etcd unreachable) parses.
#[derive(Default)]
pub(super) struct LocalCopy {
    kept: HashMap<String, Kept>,
}

/// One record of the copy: when it was last used (Unix ms) and its bytes, a [`Stored`].
struct Kept {
    used: u64,
    stored: Vec<u8>,
}

impl Kept {
    /// The record's value; `None` if its bytes are not a record (never written so).
    fn value(&self) -> Option<Value> {
        serde_json::from_slice::<Stored>(&self.stored)
            .ok()
            .map(|stored| stored.value)
    }
}

impl LocalCopy {
    /// Keeps `stored`, last used at `used`, under `key`; past `cap`, the least recently
    /// used eighth goes.
    fn keep(&mut self, key: &str, used: u64, stored: Vec<u8>, cap: usize) {
        self.kept.insert(key.to_owned(), Kept { used, stored });
        if self.kept.len() > cap {
            let mut uses: Vec<(u64, String)> =
                self.kept.iter().map(|(k, s)| (s.used, k.clone())).collect();
            uses.sort_unstable();
            for (_, key) in uses.into_iter().take(cap / 8 + 1) {
                self.kept.remove(&key);
            }
        }
    }

    /// The record under `key`, unless expired.
    fn get(&self, key: &str, limits: Limits) -> Option<Value> {
        let kept = self.kept.get(key)?;
        let age = Duration::from_millis(unix_ms().saturating_sub(kept.used));
        if age > limits.expiry {
            return None;
        }
        kept.value()
    }

    /// Up to `limit` records under `prefix`, the most recently used first.
    fn newest(&self, prefix: &str, limit: usize, limits: Limits) -> Vec<Value> {
        let now = unix_ms();
        let mut found: Vec<&Kept> = self
            .kept
            .iter()
            .filter(|(key, _)| key.starts_with(prefix))
            .map(|(_, kept)| kept)
            .filter(|k| Duration::from_millis(now.saturating_sub(k.used)) <= limits.expiry)
            .collect();
        found.sort_by_key(|kept| std::cmp::Reverse(kept.used));
        found
            .into_iter()
            .filter_map(Kept::value)
            .take(limit)
            .collect()
    }
}

impl Fleet {
    /// The records under `prefix` in `etcd`, with an empty copy.
    pub(super) fn new(etcd: Arc<Etcd>, prefix: Vec<u8>) -> Self {
        Self {
            etcd,
            prefix,
            copy: std::sync::Mutex::new(LocalCopy::default()),
            lease: tokio::sync::Mutex::new(None),
            puts: AtomicU64::new(0),
        }
    }

    fn copy(&self) -> std::sync::MutexGuard<'_, LocalCopy> {
        self.copy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The record under `key`: etcd's, kept in the copy; while etcd is unreachable, the
    /// copy's (an error only for a record this sidecar never wrote or read).
    pub(super) async fn get(&self, key: &str, limits: Limits) -> Result<Option<Value>, Error> {
        match self.get_from_etcd(key, limits).await {
            Ok(found) => Ok(found),
            Err(error) => match self.copy().get(key, limits) {
                Some(value) => Ok(Some(value)),
                None => Err(error),
            },
        }
    }

    /// Up to `limit` records under `prefix`: etcd's, or while it is unreachable, the
    /// copy's.
    pub(super) async fn newest(
        &self,
        prefix: &str,
        limit: usize,
        limits: Limits,
    ) -> Result<Vec<Value>, Error> {
        match self.newest_in_etcd(prefix, limit, limits).await {
            Err(Error::FleetUnavailable(_)) => Ok(self.copy().newest(prefix, limit, limits)),
            answered => answered,
        }
    }

    pub(super) fn key(&self, key: &str) -> Vec<u8> {
        let mut full = self.prefix.clone();
        full.extend_from_slice(key.as_bytes());
        full
    }

    async fn get_from_etcd(&self, key: &str, limits: Limits) -> Result<Option<Value>, Error> {
        let full = self.key(key);
        let answer = self
            .etcd
            .range(RangeRequest {
                key: full.clone(),
                ..Default::default()
            })
            .await
            .map_err(unavailable)?;
        let read = answer
            .kvs
            .into_iter()
            .next()
            .and_then(|kv| Some((serde_json::from_slice::<Stored>(&kv.value).ok()?, kv)));
        let Some((stored, mut kv)) = read else {
            // Gone from etcd (expired, trimmed, another history): gone from the copy.
            self.copy().kept.remove(key);
            return Ok(None);
        };
        let now = unix_ms();
        let age = Duration::from_millis(now.saturating_sub(stored.used));
        if age > limits.expiry {
            self.copy().kept.remove(key);
            return Ok(None);
        }
        self.copy()
            .keep(key, stored.used, std::mem::take(&mut kv.value), limits.cap);
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

    async fn newest_in_etcd(
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
        let mut found: Vec<Stored> = Vec::new();
        let mut copy = self.copy();
        for kv in answer.kvs {
            let Ok(stored) = serde_json::from_slice::<Stored>(&kv.value) else {
                continue;
            };
            if Duration::from_millis(now.saturating_sub(stored.used)) > limits.expiry {
                continue;
            }
            let key = String::from_utf8_lossy(&kv.key[self.prefix.len().min(kv.key.len())..]);
            copy.keep(&key, stored.used, kv.value, limits.cap);
            found.push(stored);
        }
        drop(copy);
        found.sort_by_key(|stored| std::cmp::Reverse(stored.used));
        Ok(found.into_iter().map(|stored| stored.value).collect())
    }

    /// Writes `stored`, a record last used at `used`, under `key`; once etcd committed
    /// it, the copy keeps the same bytes.
    pub(super) async fn put(
        &self,
        key: &str,
        used: u64,
        stored: Vec<u8>,
        limits: Limits,
    ) -> Result<(), Error> {
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
                Ok(_) => {
                    self.copy().keep(key, used, stored, limits.cap);
                    break;
                }
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
    pub(super) async fn lease(&self, limits: Limits) -> Result<i64, EtcdError> {
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
    pub(super) async fn trim(&self, limits: Limits) -> Result<(), EtcdError> {
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

pub(super) fn put_op(key: Vec<u8>, value: Vec<u8>, lease: i64) -> RequestOp {
    RequestOp {
        request: Some(request_op::Request::RequestPut(PutRequest {
            key,
            value,
            lease,
        })),
    }
}

pub(super) fn unavailable(e: EtcdError) -> Error {
    Error::FleetUnavailable(format!("the front's records in etcd: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_copy_answers_what_it_holds_bounded_and_newest_first() {
        let limits = Limits {
            cap: 8,
            expiry: Duration::from_secs(3600),
        };
        let mut copy = LocalCopy::default();
        let now = unix_ms();
        let record = |used: u64, value: Value| {
            serde_json::to_vec(&Stored { used, value }).expect("JSON serializes")
        };
        for i in 0..8u64 {
            let used = now - 100 + i;
            copy.keep(
                &format!("front-{i}"),
                used,
                record(used, json!(i)),
                limits.cap,
            );
        }
        assert_eq!(copy.get("front-3", limits), Some(json!(3)));
        assert_eq!(copy.newest("front-", 2, limits), vec![json!(7), json!(6)]);
        // One more: the least recently used go.
        copy.keep("other", now, record(now, json!("x")), limits.cap);
        assert!(copy.kept.len() <= limits.cap);
        assert_eq!(copy.get("front-0", limits), None);
        assert_eq!(copy.get("other", limits), Some(json!("x")));
        // An expired record is not answered.
        let old = now - 7_200_000;
        copy.keep("old", old, record(old, json!("old")), limits.cap);
        assert_eq!(copy.get("old", limits), None);
    }
}
