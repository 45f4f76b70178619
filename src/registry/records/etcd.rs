//! Fleet mode's records: etcd keys under `<prefix>records/`, bound to leases that
//! outlive their last use by the expiry, trimmed to the cap.

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

pub(super) struct Fleet {
    pub(super) etcd: Arc<Etcd>,
    pub(super) prefix: Vec<u8>,
    /// The lease new writes are bound to, and when it was granted: one lease serves
    /// every write of a period, and outlives the last of them by `expiry`.
    pub(super) lease: tokio::sync::Mutex<Option<(i64, Instant)>>,
    /// Puts by this sidecar, so that the count is checked every few.
    pub(super) puts: AtomicU64,
}

impl Fleet {
    pub(super) fn key(&self, key: &str) -> Vec<u8> {
        let mut full = self.prefix.clone();
        full.extend_from_slice(key.as_bytes());
        full
    }

    pub(super) async fn get(&self, key: &str, limits: Limits) -> Result<Option<Value>, Error> {
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

    pub(super) async fn newest(
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

    pub(super) async fn put(
        &self,
        key: &str,
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
