//! etcd as the acknowledged record: the writer reads the whole registry, commits each
//! group as one compare-and-swap transaction, and, when a transaction's answer is lost,
//! reads back whether it committed before answering anyone.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::pb::etcd::{RangeRequest, TxnRequest};
use crate::registry::fleet::etcd::{Etcd, EtcdError};
use crate::registry::fleet::layout::{self, FleetState, Keys, MetaAt};
use crate::registry::fleet::options::FleetOptions;
use crate::registry::state::{State, Write};

/// Keys read per page of a whole read.
const PAGE: i64 = 1000;

/// How a commit ended, when it did not fail: by default with `meta`'s new write.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome<T = MetaAt> {
    /// The transaction committed; `meta` as it wrote it (or what follows from it).
    Committed(T),
    /// Another sidecar changed the registry first: nothing was written.
    Conflict,
}

/// The fleet's registry in etcd.
pub struct Record {
    etcd: Arc<Etcd>,
    keys: Keys,
    max_txn_ops: usize,
    max_request_bytes: usize,
    /// Where transaction ids start: unique to this process.
    id_base: String,
    next_id: u64,
}

impl Record {
    /// The record of the fleet `options` names, through `etcd`.
    pub fn new(etcd: Arc<Etcd>, options: &FleetOptions) -> Self {
        let mut bytes = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
            .expect("the system's random source works");
        Self {
            etcd,
            keys: Keys::new(&options.prefix),
            max_txn_ops: options.max_txn_ops,
            max_request_bytes: options.max_request_bytes,
            id_base: format!("{}-{:016x}", options.member_name, u64::from_be_bytes(bytes)),
            next_id: 0,
        }
    }

    /// The fleet's keys.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The client.
    pub fn etcd(&self) -> &Arc<Etcd> {
        &self.etcd
    }

    /// Reads the whole registry at one revision; returns it and that revision.
    pub async fn read_all(&self) -> Result<(FleetState, i64), Error> {
        read_all(&self.etcd, &self.keys).await
    }

    /// Commits `writes` (taking `before` to `next`, in the history named `incarnation`)
    /// if the registry is still `before`.
    pub async fn commit(
        &mut self,
        before: &FleetState,
        next: &State,
        writes: &[Write],
        incarnation: &str,
    ) -> Result<Outcome, Error> {
        self.next_id += 1;
        let id = format!("{}-{}", self.id_base, self.next_id);
        let (request, size, value) =
            layout::txn(&self.keys, before, next, writes, &id, incarnation);
        if size.ops > self.max_txn_ops {
            return Err(Error::FleetTooLarge(format!(
                "it needs {} operations and etcd takes at most {} per transaction (etcd's \
                 --max-txn-ops; raise it and --fleet-max-txn-ops together); nothing was written",
                size.ops, self.max_txn_ops
            )));
        }
        if size.bytes > self.max_request_bytes {
            return Err(Error::FleetTooLarge(format!(
                "it is {} bytes and etcd takes at most {} per request (etcd's \
                 --max-request-bytes; raise it and --fleet-max-request-bytes together); \
                 nothing was written",
                size.bytes, self.max_request_bytes
            )));
        }
        let written = |at: i64| MetaAt {
            mod_revision: at,
            value: value.clone(),
        };
        match self.etcd.txn(request.clone()).await {
            Ok(answer) if answer.succeeded => Ok(Outcome::Committed(written(
                answer.header.map_or(0, |h| h.revision),
            ))),
            Ok(_) => Ok(Outcome::Conflict),
            Err(EtcdError::TooLarge(message)) => Err(Error::FleetTooLarge(format!(
                "etcd refused it ({message}); nothing was written"
            ))),
            Err(EtcdError::Rejected(message)) => Err(Error::FleetUnavailable(format!(
                "etcd refused the change ({message}); it was not made"
            ))),
            Err(EtcdError::NotSent(message)) => Err(Error::FleetUnavailable(format!(
                "no etcd member could be reached ({message}); the change was not made"
            ))),
            Err(EtcdError::Unreachable(_) | EtcdError::Compacted(_)) => Ok(
                match self.resolve(before.meta.mod_revision, &id, request).await? {
                    Outcome::Committed(at) => Outcome::Committed(written(at)),
                    Outcome::Conflict => Outcome::Conflict,
                },
            ),
        }
    }

    /// Checks that the registry is still at `meta` (a transaction that compares and
    /// writes nothing): a change that changes nothing is answered only once etcd
    /// confirms the registry it was judged on is current.
    pub async fn confirm(&self, meta: &MetaAt) -> Result<bool, Error> {
        let request = TxnRequest {
            compare: layout::meta_unchanged(&self.keys, meta),
            ..Default::default()
        };
        match self.etcd.txn(request).await {
            Ok(answer) => Ok(answer.succeeded),
            Err(e) => Err(Error::FleetUnavailable(format!(
                "etcd could not confirm the registry is current ({e}); nothing was changed"
            ))),
        }
    }

    /// Finds out whether transaction `id` (`request`, comparing `meta` with `before`)
    /// committed: its answer was lost. A read can show that it did, never that it did
    /// not (a member may still hold it), so while `meta` has not moved the same
    /// transaction is sent again: of the two, at most one can pass the compare. Answers
    /// with `meta`'s mod revision when it committed.
    async fn resolve(
        &self,
        before: i64,
        id: &str,
        request: TxnRequest,
    ) -> Result<Outcome<i64>, Error> {
        let deadline = Instant::now() + self.etcd.timeout() * 3;
        let pause = || tokio::time::sleep(Duration::from_millis(200));
        loop {
            let read = self
                .etcd
                .range(RangeRequest {
                    key: self.keys.meta(),
                    ..Default::default()
                })
                .await;
            let kv = match read {
                Ok(answer) => answer.kvs.into_iter().next(),
                Err(EtcdError::Unreachable(e) | EtcdError::NotSent(e))
                    if Instant::now() < deadline =>
                {
                    tracing::debug!(error = %e, "reading back a fleet change's outcome");
                    pause().await;
                    continue;
                }
                Err(e) => return Err(unknown(&e.to_string())),
            };
            match kv.filter(|kv| kv.mod_revision != before) {
                Some(kv) => {
                    if layout::decode_meta(&kv)?.txn == id {
                        return Ok(Outcome::Committed(kv.mod_revision));
                    }
                    // Someone changed the registry since: the first change after `before`
                    // is either ours or the one that made ours fail its compare.
                    return match self.first_change_after(before).await {
                        Ok((txn, at)) if txn == id => Ok(Outcome::Committed(at)),
                        Ok(_) => Ok(Outcome::Conflict),
                        Err(e) => Err(unknown(&e.to_string())),
                    };
                }
                None => match self.etcd.txn(request.clone()).await {
                    Ok(answer) if answer.succeeded => {
                        return Ok(Outcome::Committed(answer.header.map_or(0, |h| h.revision)))
                    }
                    // `meta` moved in between: read again to see whose change it was.
                    Ok(_) => continue,
                    Err(EtcdError::Unreachable(_) | EtcdError::NotSent(_))
                        if Instant::now() < deadline =>
                    {
                        pause().await;
                    }
                    Err(e) => return Err(unknown(&e.to_string())),
                },
            }
        }
    }

    /// `meta`'s first change after etcd revision `after`: its transaction id and revision.
    async fn first_change_after(&self, after: i64) -> Result<(String, i64), EtcdError> {
        let (mut stream, _) = self
            .etcd
            .watch(self.keys.meta(), Vec::new(), after + 1)
            .await?;
        let first = tokio::time::timeout(self.etcd.timeout(), async {
            loop {
                match stream.message().await {
                    Ok(Some(answer)) => {
                        if answer.compact_revision > 0 {
                            return Err(EtcdError::Compacted(answer.compact_revision));
                        }
                        if let Some(kv) = answer.events.into_iter().find_map(|e| e.kv) {
                            return Ok(kv);
                        }
                    }
                    Ok(None) => return Err(EtcdError::Unreachable("the watch ended".into())),
                    Err(status) => return Err(EtcdError::Unreachable(status.to_string())),
                }
            }
        })
        .await
        .map_err(|_| EtcdError::Unreachable("no answer in time".into()))??;
        let meta = layout::decode_meta(&first).map_err(|e| EtcdError::Rejected(e.to_string()))?;
        Ok((meta.txn, first.mod_revision))
    }
}

/// A new name for the fleet's history: random, so no two histories share one.
pub fn new_incarnation() -> String {
    let mut bytes = [0u8; 8];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .expect("the system's random source works");
    format!("{:016x}", u64::from_be_bytes(bytes))
}

fn unknown(cause: &str) -> Error {
    Error::FleetUnavailable(format!(
        "etcd may or may not have committed the change, and it cannot be read back now \
         ({cause}); list the registry to see whether it was made before trying again"
    ))
}

/// Reads the whole registry of the fleet under `keys` at one revision, a page at a time;
/// returns it and that revision.
pub async fn read_all(etcd: &Etcd, keys: &Keys) -> Result<(FleetState, i64), Error> {
    let unavailable = |e: EtcdError| Error::FleetUnavailable(format!("reading the registry: {e}"));
    'again: loop {
        let mut kvs = Vec::new();
        let mut from = keys.registry();
        let mut revision = 0;
        loop {
            let answer = match etcd.range(layout::page(keys, from, revision, PAGE)).await {
                Ok(answer) => answer,
                // Compacted between two pages: start again at the newest.
                Err(EtcdError::Compacted(_)) if revision != 0 => continue 'again,
                Err(e) => return Err(unavailable(e)),
            };
            if revision == 0 {
                revision = answer.header.as_ref().map_or(0, |h| h.revision);
            }
            let Some(last) = answer.kvs.last() else { break };
            from = [last.key.as_slice(), &[0]].concat();
            let more = answer.more;
            kvs.extend(answer.kvs);
            if !more {
                break;
            }
        }
        return Ok((layout::decode_all(keys, &kvs)?, revision));
    }
}
