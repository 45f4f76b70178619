//! The one thread that writes to sled, and group commit: it takes every change waiting
//! in its queue, applies them to a copy of the state, writes them as one atomic batch,
//! flushes and syncs once (see `durable`), and only then publishes the new snapshot and
//! answers. Concurrent changes thus share one set of syncs, and nothing is acknowledged
//! before it would survive a power cut.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::Error;
use crate::metrics::metrics;
use crate::registry::seal::{Fingerprint, Seal};
use crate::registry::snapshot::Snapshot;
use crate::registry::state::{Change, ChangeResult, State, Writes};
use crate::registry::store::{self, Failed, Options, Served};

/// Most changes one flush covers; bounds the latency a change adds to its group.
const MAX_GROUP: usize = 512;

/// What the writer is asked to do.
pub(super) enum Op {
    /// Apply a change and answer when it is durable.
    Change(Change, oneshot::Sender<ChangeResult>),
    /// Flush, close the store and answer.
    Stop(oneshot::Sender<()>),
}

/// The one thread that writes to sled.
pub(super) struct Writer {
    /// `None` after a write failed: sled stays failed once an I/O error hits it, so
    /// the next change reopens the store first.
    pub(super) db: Option<Served>,
    /// The acknowledged-state record, written before every group reaches sled.
    pub(super) seal: Seal,
    pub(super) state: State,
    pub(super) current: Arc<ArcSwap<Snapshot>>,
    pub(super) watch: watch::Sender<Arc<Snapshot>>,
    pub(super) options: Options,
    /// Set once a sync failed: every later change gets this error until a restart (a
    /// failed `fsync` is not reported again, so a retry could acknowledge what the
    /// disk never got).
    pub(super) stopped: Option<Error>,
}

impl Writer {
    /// Runs until stopped; call it on a thread of its own.
    pub(super) fn run(mut self, mut rx: mpsc::Receiver<Op>) {
        let mut group = Vec::with_capacity(MAX_GROUP);
        let mut stopping = Vec::new();
        while let Some(first) = rx.blocking_recv() {
            group.push(first);
            while group.len() < MAX_GROUP {
                match rx.try_recv() {
                    Ok(op) => group.push(op),
                    Err(_) => break,
                }
            }
            let mut changes = Vec::with_capacity(group.len());
            for op in group.drain(..) {
                match op {
                    Op::Change(change, reply) if stopping.is_empty() => {
                        changes.push((change, reply))
                    }
                    Op::Change(_, reply) => {
                        let _ = reply.send(Err(Error::ShuttingDown));
                    }
                    Op::Stop(reply) => stopping.push(reply),
                }
            }
            self.commit_group(changes);
            if !stopping.is_empty() {
                break;
            }
        }
        // Anyone still queued learns that the service is stopping.
        rx.close();
        while let Ok(op) = rx.try_recv() {
            match op {
                Op::Change(_, reply) => {
                    let _ = reply.send(Err(Error::ShuttingDown));
                }
                Op::Stop(reply) => stopping.push(reply),
            }
        }
        if let Some(Err(e)) = self.db.as_ref().map(Served::flush) {
            tracing::error!(error = %e, "final flush of the registry failed");
        }
        // Closing sled releases the directory's lock; only then is the stop answered, so
        // a new instance can open the directory as soon as `close` returns.
        let dir = self.options.data_dir.clone();
        drop(self);
        if !store::wait_unlocked(&dir, std::time::Duration::from_secs(5)) {
            tracing::warn!(dir = %dir.display(), "the store's lock is still held 5 s after closing it");
        }
        for reply in stopping {
            let _ = reply.send(());
        }
    }

    fn commit_group(&mut self, changes: Vec<(Change, oneshot::Sender<ChangeResult>)>) {
        if changes.is_empty() {
            return;
        }
        if let Some(err) = &self.stopped {
            for (_, reply) in changes {
                let _ = reply.send(Err(err.clone()));
            }
            return;
        }
        let db = match self.store() {
            Ok(()) => self.db.as_mut().expect("the store is open"),
            Err(err) => {
                for (_, reply) in changes {
                    let _ = reply.send(Err(err.clone()));
                }
                return;
            }
        };
        let mut next = self.state.clone();
        let mut writes = Writes::new();
        let mut results = Vec::with_capacity(changes.len());
        let mut replies = Vec::with_capacity(changes.len());
        for (change, reply) in changes {
            results.push(next.apply(change, self.options.max_commands, &mut writes));
            replies.push(reply);
        }
        if next.revision != self.state.revision {
            let started = std::time::Instant::now();
            // The record first: once sled may hold the new state, the record allows it.
            let written = self
                .seal
                .write(Fingerprint::of(&self.state), Fingerprint::of(&next))
                .map_err(|e| Failed::Sync(store::io_error(&e)))
                .and_then(|()| db.commit(store::batch(&writes, &next)));
            let flushed = started.elapsed();
            if written.is_ok() {
                // Now only the new state is acknowledged: a store that later turns out to
                // hold the one before it lost this group, and must be refused. If this
                // write fails the group is still durable (the record allows both states,
                // and a torn slot falls back to the other), so it is acknowledged; but
                // the record is no longer trusted, so no later change is taken.
                let after = Fingerprint::of(&next);
                if let Err(err) = self.seal.write(after, after) {
                    self.stop_changes(store::io_error(&err));
                }
            }
            match written {
                Ok(_) => {
                    let m = metrics();
                    m.group_size.observe(replies.len() as f64);
                    m.flush_seconds.observe(flushed.as_secs_f64());
                    self.publish(next);
                    tracing::debug!(
                        changes = replies.len(),
                        write_us = flushed.as_micros() as u64,
                        publish_us = (started.elapsed() - flushed).as_micros() as u64,
                        "group committed"
                    );
                }
                Err(Failed::Write(err)) => {
                    tracing::error!(error = %err, changes = replies.len(), "registry write failed; the store will be reopened");
                    // Nothing in this group is acknowledged, and reads keep the last
                    // acknowledged state. sled is unusable after an I/O error, so it is
                    // closed now and reopened (and re-read) before the next change.
                    self.db = None;
                    results = replies.iter().map(|_| Err(err.clone())).collect();
                }
                Err(Failed::Sync(err)) => {
                    // Nothing in this group is acknowledged, and reads keep the last
                    // acknowledged state; no later change is taken (see `stopped`).
                    self.stop_changes(err.clone());
                    results = replies.iter().map(|_| Err(err.clone())).collect();
                }
            }
        }
        for (reply, result) in replies.into_iter().zip(results) {
            let _ = reply.send(result);
        }
    }

    /// Refuses every later change: a sync failed (see `stopped`).
    fn stop_changes(&mut self, cause: Error) {
        tracing::error!(error = %cause, "a sync of the registry failed; no more changes are taken until the service restarts");
        let detail = match &cause {
            Error::DiskFull(detail) | Error::Storage(detail) => detail.clone(),
            other => other.to_string(),
        };
        self.stopped = Some(Error::Storage(format!(
            "a sync of the data directory failed ({detail}), so the registry takes no \
             more changes until the service restarts; reads go on"
        )));
    }

    /// Opens the store again (and re-reads the registry from it) if a write failed.
    fn store(&mut self) -> Result<(), Error> {
        if self.db.is_some() {
            return Ok(());
        }
        let db = Served::open(&self.options.data_dir, self.options.cache_bytes)
            .map_err(|cause| Error::Storage(format!("reopening the store failed: {cause}")))?;
        let state = db.load().map_err(Error::Storage)?;
        // What sled holds now must be a state the record allows, as at start.
        self.seal
            .last()
            .check(Fingerprint::of(&state))
            .map_err(|cause| Error::Storage(format!("after reopening the store: {cause}")))?;
        tracing::info!(revision = state.revision, "registry store reopened");
        // A group that failed may still have reached the disk; what is there now is
        // the truth. Acknowledged changes are all there, so the revision never goes
        // back.
        if state.revision != self.state.revision {
            self.publish(state);
        }
        self.db = Some(db);
        Ok(())
    }

    fn publish(&mut self, state: State) {
        let snapshot = Arc::new(state.snapshot());
        let m = metrics();
        m.registry_commands
            .set(i64::try_from(snapshot.len()).unwrap_or(i64::MAX));
        m.registry_revision
            .set(i64::try_from(snapshot.revision()).unwrap_or(i64::MAX));
        self.state = state;
        self.current.store(Arc::clone(&snapshot));
        self.watch.send_replace(snapshot);
    }
}
