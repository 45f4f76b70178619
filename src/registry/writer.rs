//! The one thread that writes to sled, and group commit: it takes every change waiting
//! in its queue, applies them to a copy of the state, writes them as one atomic batch,
//! flushes and syncs once (see `durable`), and only then publishes the new snapshot and
//! answers. Concurrent changes thus share one set of syncs, and nothing is acknowledged
//! before it would survive a power cut.
//!
//! In fleet mode etcd is the acknowledged record instead: a group is acknowledged once
//! its compare-and-swap transaction committed (`fleet::record`), and sled keeps the
//! local copy, written with the same syncs, of every state applied. Changes committed
//! by other sidecars reach this thread from the follower (`Op::Follow`) through the same
//! queue, so one thread orders everything this sidecar applies.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::{mpsc, oneshot, watch, Notify};

use crate::error::Error;
use crate::metrics::metrics;
use crate::registry::fleet::follow::Followed;
use crate::registry::fleet::layout::{self, AppliedMeta, FleetState, MetaAt};
use crate::registry::fleet::record::{self, Outcome, Record};
use crate::registry::fleet::{copy, FleetOptions};
use crate::registry::seal::{Fingerprint, Seal};
use crate::registry::snapshot::Snapshot;
use crate::registry::state::{self, Change, ChangeResult, State, Write, Writes};
use crate::registry::store::{self, Failed, Options, Served};
use crate::telemetry::CallerContext;

/// Most changes one flush covers; bounds the latency a change adds to its group.
const MAX_GROUP: usize = 512;
/// How long a fleet write is made again while other sidecars' changes come first.
const CONFLICT_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// What the writer is asked to do.
pub(super) enum Op {
    /// Apply a change and answer when it is durable; the span current where it was
    /// asked for is carried so that fleet mode's etcd calls are its children.
    Change(Change, oneshot::Sender<ChangeResult>, CallerContext),
    /// Fleet mode: what the follower read from etcd.
    Follow(Followed),
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
    /// disk never got). In fleet mode it stops only the local copy.
    pub(super) stopped: Option<Error>,
    /// Fleet mode's record and what was applied from it; `None` in sled mode.
    pub(super) fleet: Option<Fleet>,
    /// What the writer is asked to do, in order.
    pub(super) inbox: Inbox,
}

/// The writer's queue, and what arrived while an etcd call was in flight (held, in
/// order, for after it).
pub(super) struct Inbox {
    rx: mpsc::Receiver<Op>,
    held: std::collections::VecDeque<Op>,
}

impl Inbox {
    /// The queue `rx` feeds.
    pub(super) fn new(rx: mpsc::Receiver<Op>) -> Self {
        Self {
            rx,
            held: std::collections::VecDeque::new(),
        }
    }

    /// The next op, waiting for one; `None` once every sender is gone.
    fn next(&mut self) -> Option<Op> {
        self.held.pop_front().or_else(|| self.rx.blocking_recv())
    }

    /// The next op if one is waiting.
    fn try_next(&mut self) -> Option<Op> {
        self.held.pop_front().or_else(|| self.rx.try_recv().ok())
    }

    /// Refuses new ops and gives what is still queued.
    fn close(&mut self) -> Vec<Op> {
        self.rx.close();
        let mut rest: Vec<Op> = self.held.drain(..).collect();
        while let Ok(op) = self.rx.try_recv() {
            rest.push(op);
        }
        rest
    }

    /// Runs `call` (an etcd call of the writer's) to its end on `runtime`. Ops that
    /// arrive meanwhile are held for after it, in order, except changes while etcd is
    /// known to be unreachable (`reachable` false): those are answered UNAVAILABLE at
    /// once, nothing written, instead of waiting behind a call that may go on for
    /// several fleet timeouts (reading back a lost answer). Held changes are answered
    /// so too as soon as etcd is found unreachable. The changes that are made keep the
    /// queue's order: only refused ones leave it.
    fn during<T>(
        &mut self,
        runtime: &tokio::runtime::Handle,
        mut reachable: watch::Receiver<bool>,
        call: impl std::future::Future<Output = T>,
    ) -> T {
        let refuse = |reply: oneshot::Sender<ChangeResult>| {
            let _ = reply.send(Err(Error::FleetUnavailable(
                "the fleet store (etcd) is unreachable; the change was not made".into(),
            )));
        };
        runtime.block_on(async {
            tokio::pin!(call);
            let mut open = true;
            loop {
                tokio::select! {
                    biased;
                    out = &mut call => return out,
                    op = self.rx.recv(), if open => match op {
                        Some(Op::Change(_, reply, _)) if !*reachable.borrow() => refuse(reply),
                        Some(op) => self.held.push_back(op),
                        None => open = false,
                    },
                    Ok(()) = reachable.changed() => {
                        if !*reachable.borrow_and_update() {
                            let held = std::mem::take(&mut self.held);
                            for op in held {
                                match op {
                                    Op::Change(_, reply, _) => refuse(reply),
                                    other => self.held.push_back(other),
                                }
                            }
                        }
                    }
                }
            }
        })
    }
}

/// The writer's side of fleet mode.
pub(super) struct Fleet {
    pub(super) record: Record,
    pub(super) options: FleetOptions,
    /// Where the etcd calls run (this thread is not one of the runtime's).
    pub(super) runtime: tokio::runtime::Handle,
    /// The write of `meta` the state applied is at; `None` until the first whole read.
    pub(super) meta: Option<MetaAt>,
    /// The name of the history applied (empty: none yet).
    pub(super) incarnation: String,
    /// Why etcd's history is not the one followed, when that was found and the whole
    /// read that takes the new one is still to come.
    pub(super) pending: Option<String>,
    /// Asks the follower for a whole read.
    pub(super) resync: Arc<Notify>,
    /// Set once there is a registry to serve: the copy of this fleet found at open, or
    /// the fleet's, once read.
    pub(super) ready: Arc<AtomicBool>,
    /// The marker names this fleet.
    pub(super) marked: bool,
    /// What was applied, for the member key and the follower's checks.
    pub(super) applied: watch::Sender<AppliedMeta>,
    /// Counts the resets taken (etcd recreated, restored or emptied), so that
    /// configuration is applied again.
    pub(super) resets: watch::Sender<u64>,
}

impl Writer {
    /// Runs until stopped; call it on a thread of its own.
    pub(super) fn run(mut self) {
        let mut group = Vec::with_capacity(MAX_GROUP);
        let mut stopping = Vec::new();
        while let Some(first) = self.inbox.next() {
            group.push(first);
            while group.len() < MAX_GROUP {
                match self.inbox.try_next() {
                    Some(op) => group.push(op),
                    None => break,
                }
            }
            let mut changes = Vec::with_capacity(group.len());
            // The group's work is traced under its first traced change's caller (a
            // commands-file reconcile beside a Register is not).
            let mut parent: Option<CallerContext> = None;
            for op in group.drain(..) {
                if let Op::Follow(followed) = op {
                    // Changes queued before it are another sidecar's base; commit them
                    // first so both keep the queue's order.
                    let caller = parent.take();
                    let current = caller.as_ref().map(CallerContext::attach);
                    self.commit_group(std::mem::take(&mut changes));
                    drop(current);
                    self.follow(followed);
                    continue;
                }
                match op {
                    Op::Change(change, reply, carried) if stopping.is_empty() => {
                        if carried.is_traced() && parent.is_none() {
                            parent = Some(carried);
                        }
                        changes.push((change, reply))
                    }
                    Op::Change(_, reply, _) => {
                        let _ = reply.send(Err(Error::ShuttingDown));
                    }
                    Op::Stop(reply) => stopping.push(reply),
                    Op::Follow(_) => unreachable!("handled above"),
                }
            }
            let _current = parent.as_ref().map(CallerContext::attach);
            self.commit_group(changes);
            if !stopping.is_empty() {
                break;
            }
        }
        // Anyone still queued learns that the service is stopping.
        for op in self.inbox.close() {
            match op {
                Op::Change(_, reply, _) => {
                    let _ = reply.send(Err(Error::ShuttingDown));
                }
                Op::Stop(reply) => stopping.push(reply),
                Op::Follow(_) => {}
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
        if self.fleet.is_some() {
            return self.commit_fleet(changes);
        }
        if let Some(err) = &self.stopped {
            return fail_all(changes, err);
        }
        if let Err(err) = self.store() {
            return fail_all(changes, &err);
        }
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
            let on_disk = self.state.clone();
            let written = self.persist(&on_disk, &next, &writes);
            match written {
                Ok(flushed) => {
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
        if self.fleet.is_some() {
            tracing::error!(error = %cause, "a sync of the local copy of the fleet's registry failed; the copy is no longer written until the service restarts (changes go on through etcd)");
        } else {
            tracing::error!(error = %cause, "a sync of the registry failed; no more changes are taken until the service restarts");
        }
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
        let Some(state) = self.reopen()? else {
            return Ok(());
        };
        // A group that failed may still have reached the disk; what is there now is
        // the truth. Acknowledged changes are all there, so the revision never goes
        // back.
        if state.revision != self.state.revision {
            self.publish(state);
        }
        Ok(())
    }

    /// Reopens the store if a write failed; returns what it holds when it did.
    fn reopen(&mut self) -> Result<Option<State>, Error> {
        if self.db.is_some() {
            return Ok(None);
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
        self.db = Some(db);
        Ok(Some(state))
    }

    /// Writes `writes` (taking the store from `on_disk` to `next`) under the record:
    /// the record allows both states, sled writes and syncs, then the record allows
    /// `next` alone. Returns how long reaching the disk took.
    fn persist(
        &mut self,
        on_disk: &State,
        next: &State,
        writes: &[Write],
    ) -> Result<std::time::Duration, Failed> {
        let started = std::time::Instant::now();
        let db = self.db.as_mut().expect("the store is open");
        // The record first: once sled may hold the new state, the record allows it.
        self.seal
            .write(Fingerprint::of(on_disk), Fingerprint::of(next))
            .map_err(|e| Failed::Sync(store::io_error(&e)))
            .and_then(|()| db.commit(store::batch(writes, next)))?;
        let flushed = started.elapsed();
        // Now only the new state is acknowledged: a store that later turns out to hold
        // the one before it lost this group, and must be refused. If this write fails
        // the group is still durable (the record allows both states, and a torn slot
        // falls back to the other), so it is acknowledged; but the record is no longer
        // trusted, so no later change is taken.
        let after = Fingerprint::of(next);
        if let Err(err) = self.seal.write(after, after) {
            self.stop_changes(store::io_error(&err));
        }
        Ok(flushed)
    }

    fn publish(&mut self, state: State) {
        // The state served already (a whole read that found nothing new, a copy etcd
        // agrees with) is not published again: WatchSpecs sends a state after a change,
        // never twice for one revision.
        if state.revision == self.state.revision
            && Fingerprint::of(&state) == Fingerprint::of(&self.state)
        {
            self.state = state;
            return;
        }
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

/// Fleet mode.
impl Writer {
    fn fleet(&mut self) -> &mut Fleet {
        self.fleet.as_mut().expect("fleet mode")
    }

    /// The registry applied, as a commit compares against it (after the first read).
    fn applied_fleet(&self) -> Option<FleetState> {
        let fleet = self.fleet.as_ref().expect("fleet mode");
        Some(FleetState {
            state: self.state.clone(),
            meta: fleet.meta.clone()?,
            incarnation: fleet.incarnation.clone(),
        })
    }

    /// Commits a group to etcd, in transactions small enough for it, then applies it.
    /// Once etcd is found unavailable, the rest of the group gets the same answer at
    /// once instead of each chunk waiting out its own timeouts.
    fn commit_fleet(&mut self, mut changes: Vec<(Change, oneshot::Sender<ChangeResult>)>) {
        if self.fleet().meta.is_none() {
            let err = Error::FleetUnavailable(
                "this sidecar has not read the fleet's registry yet; the change was not made"
                    .into(),
            );
            return fail_all(changes, &err);
        };
        let most = (self.fleet().options.max_txn_ops / 2).max(1);
        while !changes.is_empty() {
            let rest = changes.split_off(most.min(changes.len()));
            if let Some(err) = self.commit_fleet_group(std::mem::replace(&mut changes, rest)) {
                return fail_all(changes, &err);
            }
        }
    }

    /// Commits one group; returns the error when etcd was unavailable for it.
    fn commit_fleet_group(
        &mut self,
        changes: Vec<(Change, oneshot::Sender<ChangeResult>)>,
    ) -> Option<Error> {
        let mut conflicts: u32 = 0;
        let since = std::time::Instant::now();
        loop {
            let before = self.applied_fleet().expect("joined");
            let mut next = self.state.clone();
            let mut writes = Writes::new();
            let results: Vec<ChangeResult> = changes
                .iter()
                .map(|(change, _)| {
                    next.apply(change.clone(), self.options.max_commands, &mut writes)
                })
                .collect();
            // The registry's first write names its history (as does the first write of
            // a version that names it).
            let name = if before.incarnation.is_empty() {
                record::new_incarnation()
            } else {
                before.incarnation.clone()
            };
            let fleet = self.fleet.as_mut().expect("fleet mode");
            let reachable = fleet.record.etcd().reachable();
            let started = std::time::Instant::now();
            let committed = if next.revision == self.state.revision {
                // Nothing to write (unchanged, or refused): answered only once etcd
                // confirms the registry these answers were judged on is current.
                let confirmed = fleet.record.confirm(&before.meta);
                match self.inbox.during(&fleet.runtime, reachable, confirmed) {
                    Ok(true) => return answer(changes, results),
                    Ok(false) => Ok(Outcome::Conflict),
                    Err(err) => Err(err),
                }
            } else {
                let commit = fleet.record.commit(&before, &next, &writes, &name);
                self.inbox.during(&fleet.runtime, reachable, commit)
            };
            match committed {
                Ok(Outcome::Committed(meta)) => {
                    metrics()
                        .flush_seconds
                        .observe(started.elapsed().as_secs_f64());
                    metrics().group_size.observe(changes.len() as f64);
                    self.apply_fleet(next, &writes, meta, name);
                    return answer(changes, results);
                }
                Ok(Outcome::Conflict) => {
                    metrics().fleet.write_conflicts.inc();
                    conflicts += 1;
                    let reread = if since.elapsed() > CONFLICT_BUDGET {
                        Err(Error::FleetUnavailable(format!(
                            "other sidecars' changes came first {conflicts} times in {} s; \
                             the change was not made",
                            CONFLICT_BUDGET.as_secs()
                        )))
                    } else {
                        // A random pause, growing with each conflict, so that sidecars
                        // writing at once do not keep colliding.
                        if conflicts > 1 {
                            std::thread::sleep(backoff(conflicts));
                        }
                        let fleet = self.fleet.as_mut().expect("fleet mode");
                        let reachable = fleet.record.etcd().reachable();
                        let read = fleet.record.read_all();
                        self.inbox.during(&fleet.runtime, reachable, read)
                    };
                    let taken = reread.and_then(|(whole, _)| {
                        metrics().fleet.full_reads.inc();
                        self.take_fresh(whole)
                    });
                    if let Err(err) = taken {
                        fail_all(changes, &err);
                        return Some(err);
                    }
                }
                Err(Error::FleetTooLarge(_)) if changes.len() > 1 => {
                    // Each change alone may fit.
                    let mut changes = changes.into_iter();
                    while let Some(change) = changes.next() {
                        if let Some(err) = self.commit_fleet_group(vec![change]) {
                            fail_all(changes.collect(), &err);
                            return Some(err);
                        }
                    }
                    return None;
                }
                Err(err @ Error::FleetTooLarge(_)) => {
                    fail_all(changes, &err);
                    return None;
                }
                Err(err) => {
                    fail_all(changes, &err);
                    return Some(err);
                }
            }
        }
    }

    /// Takes a whole read made after a commit found the registry changed: another
    /// sidecar's change (the usual case), or another history altogether, since the
    /// read is newer than anything this sidecar applied.
    fn take_fresh(&mut self, whole: FleetState) -> Result<(), Error> {
        let applied = self.applied_fleet().expect("joined");
        let older = whole.meta.mod_revision < applied.meta.mod_revision
            || (whole.meta.mod_revision == applied.meta.mod_revision
                && whole.meta.value != applied.meta.value);
        let cause = self.fleet().pending.take().or_else(|| {
            older.then(|| {
                "etcd holds an older registry than this sidecar applied, or none: etcd was \
                 recreated, restored from a snapshot, or its keys deleted"
                    .to_owned()
            })
        });
        match cause.or_else(|| renamed(&whole, &applied)) {
            Some(cause) => self.reset(whole, &cause),
            None => self.take_read(whole),
        }
    }

    /// Applies what the follower read.
    fn follow(&mut self, followed: Followed) {
        let Some(applied) = self.applied_fleet() else {
            if let Followed::Whole { whole, .. } = followed {
                self.join(whole);
            }
            return;
        };
        match followed {
            Followed::Whole {
                whole,
                checked,
                lost,
            } => {
                let resets = *self.fleet().resets.borrow();
                let cause = match (self.fleet().pending.take(), lost) {
                    (Some(cause), _) => Some(cause),
                    (None, _) if checked.resets != resets => {
                        // Read and checked before this sidecar's last reset: about the
                        // history before it. Read again.
                        self.fleet().resync.notify_one();
                        return;
                    }
                    (None, Some(cause)) if checked.meta == applied.meta => Some(cause),
                    (None, Some(_)) => {
                        // This sidecar applied more since the check: check that instead.
                        self.fleet().resync.notify_one();
                        return;
                    }
                    (None, None) if whole.meta.mod_revision < applied.meta.mod_revision => {
                        // Read before this sidecar's own latest commit, in the same
                        // history: nothing new.
                        return;
                    }
                    (None, None) => renamed(&whole, &applied),
                };
                let taken = match cause {
                    Some(cause) => self.reset(whole, &cause),
                    None => self.take_read(whole),
                };
                if let Err(err) = taken {
                    tracing::debug!(error = %err, "the fleet's registry read could not be taken");
                    self.retry_later("the fleet's registry read could not be taken");
                }
            }
            Followed::Events { revision, events } => {
                if revision <= applied.meta.mod_revision || self.fleet().pending.is_some() {
                    // Already applied (this sidecar's own commit, or a whole read), or a
                    // whole read is on its way.
                    return;
                }
                let fleet = self.fleet.as_mut().expect("fleet mode");
                match layout::apply_events(fleet.record.keys(), &applied, &events) {
                    Ok(layout::Applied::Next(next, writes)) => {
                        self.apply_fleet(next.state, &writes, next.meta, next.incarnation);
                    }
                    Ok(layout::Applied::Gap(why)) => {
                        tracing::warn!(etcd_revision = revision, cause = %why, "a fleet change did not follow the registry applied; reading the whole registry");
                        fleet.resync.notify_one();
                    }
                    Ok(layout::Applied::Renamed(name)) => {
                        // Said once the whole read is taken (`reset`).
                        fleet.pending = Some(format!(
                            "another sidecar found etcd's history is not the one followed \
                             (etcd recreated or restored) and named the history anew ({name}, was {})",
                            applied.incarnation
                        ));
                        fleet.resync.notify_one();
                    }
                    Ok(layout::Applied::Deleted) => {
                        fleet.pending = Some(
                            "the registry's keys were deleted from etcd (by hand?), or etcd was \
                             emptied"
                                .into(),
                        );
                        fleet.resync.notify_one();
                    }
                    Err(err) => {
                        tracing::error!(etcd_revision = revision, error = %err, "a fleet change could not be read; reading the whole registry");
                        fleet.resync.notify_one();
                    }
                }
            }
        }
    }

    /// The first whole read: the fleet's registry replaces the local one (whose
    /// differences are logged, never merged), and revisions never go back.
    fn join(&mut self, mut whole: FleetState) {
        if self.fleet().marked {
            // A copy of this fleet: whatever changed since is the fleet's own history.
            tracing::info!(
                copy_revision = self.state.revision,
                fleet_revision = whole.state.revision,
                "read the fleet's registry; this sidecar's copy follows it"
            );
        } else {
            log_differences(&self.state, &whole.state);
        }
        if self.is_behind(&whole.state) {
            // A registry older than (or other than, at the same revision) the one this
            // sidecar served (a sled history, or a fleet recreated empty): its revision
            // moves past ours first, so no reader sees a revision go back or mean two
            // states.
            let mut next = whole.state.clone();
            next.revision = self.state.revision + 1;
            let name = if whole.incarnation.is_empty() {
                record::new_incarnation()
            } else {
                whole.incarnation.clone()
            };
            whole = match self.write_meta(&whole, next, name) {
                Ok(Outcome::Committed(moved)) => {
                    tracing::info!(
                        from = whole.state.revision,
                        to = moved.state.revision,
                        "the fleet's revision moved past this sidecar's, so that no revision goes back"
                    );
                    moved
                }
                Ok(Outcome::Conflict) => return self.fleet().resync.notify_one(),
                Err(err) => {
                    tracing::warn!(error = %err, "cannot move the fleet's revision past this sidecar's yet; trying again");
                    return self.retry_later("the fleet's revision could not be moved on");
                }
            };
        }
        let writes = state::diff(&self.state, &whole.state);
        self.apply_fleet(whole.state, &writes, whole.meta, whole.incarnation);
    }

    /// Whether `fleet` is older than the registry applied: a lower revision, or the same
    /// with other contents (a revision never means two states).
    fn is_behind(&self, fleet: &State) -> bool {
        fleet.revision < self.state.revision
            || (fleet.revision == self.state.revision
                && Fingerprint::of(fleet) != Fingerprint::of(&self.state))
    }

    /// Applies a whole read of the history followed (after a compaction, a gap or a
    /// conflict) unless it is the registry applied already.
    fn take_read(&mut self, whole: FleetState) -> Result<(), Error> {
        if self.is_behind(&whole.state) {
            return self.reset(
                whole,
                "etcd holds a registry older than the one this sidecar applied",
            );
        }
        // A change by a version that does not name the history keeps the name it had.
        let name = if whole.incarnation.is_empty() {
            self.fleet().incarnation.clone()
        } else {
            whole.incarnation
        };
        let writes = state::diff(&self.state, &whole.state);
        self.apply_fleet(whole.state, &writes, whole.meta, name);
        Ok(())
    }

    /// etcd's history is not the one this sidecar followed (`cause`): takes `whole`, read
    /// from it, whatever its revisions, and says so in one line. Its registry revision is
    /// first moved past this sidecar's if it is behind, so that no revision goes back; and
    /// unless another sidecar already named the history anew, it is named anew, so that
    /// every other sidecar finds out too, even one whose view it does not contradict (a
    /// snapshot newer than that sidecar's registry). On an error the reset stays pending:
    /// the next whole read takes it up again.
    fn reset(&mut self, mut whole: FleetState, cause: &str) -> Result<(), Error> {
        let old = self.fleet().incarnation.clone();
        let (applied_revision, read_revision) = (self.state.revision, whole.state.revision);
        let (mut moved, mut renamed) = (false, false);
        let mut attempts = 0;
        loop {
            let rename = whole.incarnation.is_empty() || whole.incarnation == old;
            let behind = self.is_behind(&whole.state);
            if !rename && !behind {
                break;
            }
            attempts += 1;
            let mut next = whole.state.clone();
            if behind {
                next.revision = self.state.revision + 1;
            }
            let name = if rename {
                record::new_incarnation()
            } else {
                whole.incarnation.clone()
            };
            match self.write_meta(&whole, next, name) {
                Ok(Outcome::Committed(written)) => {
                    whole = written;
                    moved |= behind;
                    renamed |= rename;
                    break;
                }
                // Another sidecar changed it first (named it, likely): read it again.
                Ok(Outcome::Conflict) if attempts < 10 => {
                    let fleet = self.fleet.as_mut().expect("fleet mode");
                    let reachable = fleet.record.etcd().reachable();
                    let read = fleet.record.read_all();
                    match self.inbox.during(&fleet.runtime, reachable, read) {
                        Ok((read, _)) => whole = read,
                        Err(err) => return Err(self.reset_pending(cause, err)),
                    }
                }
                Ok(Outcome::Conflict) => {
                    let err = Error::FleetUnavailable(
                        "other sidecars kept changing the fleet's registry while this one \
                         read it again"
                            .into(),
                    );
                    return Err(self.reset_pending(cause, err));
                }
                Err(err) => return Err(self.reset_pending(cause, err)),
            }
        }
        // Counted before the registry is applied, so that what the follower checks
        // from now on carries it.
        metrics().fleet.resets.inc();
        self.fleet().resets.send_modify(|n| *n += 1);
        let writes = state::diff(&self.state, &whole.state);
        let commands = whole.state.commands.len();
        self.apply_fleet(whole.state, &writes, whole.meta, whole.incarnation);
        tracing::warn!(
            cause,
            applied_revision,
            fleet_revision = read_revision,
            revision = self.state.revision,
            commands,
            moved_past = moved,
            named_anew = renamed,
            "etcd's history is not the one this sidecar followed; the whole registry was read again and is served"
        );
        self.fleet().pending = None;
        Ok(())
    }

    /// Keeps a reset that could not be completed for the next whole read; `err`, why.
    fn reset_pending(&mut self, cause: &str, err: Error) -> Error {
        let fleet = self.fleet();
        fleet.pending = Some(cause.to_owned());
        fleet.resync.notify_one();
        err
    }

    /// Rewrites `meta` alone on `whole` (its revision moved on, or its history named
    /// `name`), so that no reader sees a revision go back; the registry after it.
    fn write_meta(
        &mut self,
        whole: &FleetState,
        next: State,
        name: String,
    ) -> Result<Outcome<FleetState>, Error> {
        let fleet = self.fleet.as_mut().expect("fleet mode");
        let reachable = fleet.record.etcd().reachable();
        let commit = fleet.record.commit(whole, &next, &[], &name);
        Ok(
            match self.inbox.during(&fleet.runtime, reachable, commit)? {
                Outcome::Committed(meta) => Outcome::Committed(FleetState {
                    state: next,
                    meta,
                    incarnation: name,
                }),
                Outcome::Conflict => Outcome::Conflict,
            },
        )
    }

    /// Asks the follower for another whole read after a pause, so that a refusal etcd
    /// keeps giving (a user without write rights, say) is not tried in a tight loop.
    fn retry_later(&mut self, why: &str) {
        tracing::debug!(cause = why, "reading the fleet's registry again in 1 s");
        std::thread::sleep(std::time::Duration::from_secs(1));
        self.fleet().resync.notify_one();
    }

    /// Makes `next` (at `meta`'s write, in the history named `incarnation`) the state:
    /// the local copy first, then the snapshot. A copy that cannot be written loses its
    /// marker (so a restart while etcd is down does not serve it) and is written whole at
    /// the next change; reads still get `next`, which etcd holds.
    fn apply_fleet(&mut self, next: State, writes: &[Write], meta: MetaAt, incarnation: String) {
        if self.stopped.is_none() && (next.revision != self.state.revision || !writes.is_empty()) {
            let copied = match self.reopen() {
                Ok(Some(on_disk)) => {
                    let writes = state::diff(&on_disk, &next);
                    self.persist(&on_disk, &next, &writes)
                }
                Ok(None) => {
                    let on_disk = self.state.clone();
                    self.persist(&on_disk, &next, writes)
                }
                Err(err) => Err(Failed::Write(err)),
            };
            match copied {
                Ok(_) => self.mark_copy(),
                Err(Failed::Write(err)) => {
                    tracing::error!(error = %err, "the local copy of the fleet's registry could not be written; it is written whole at the next change");
                    self.db = None;
                    self.unmark_copy();
                }
                Err(Failed::Sync(err)) => {
                    self.stop_changes(err);
                    self.unmark_copy();
                }
            }
        } else if self.stopped.is_none() && self.db.is_some() {
            // Nothing to write: the copy already holds it.
            self.mark_copy();
        }
        let revision = next.revision;
        self.publish(next);
        let fleet = self.fleet();
        metrics().fleet.applied_etcd_revision.set(meta.mod_revision);
        let resets = *fleet.resets.borrow();
        fleet.applied.send_replace(AppliedMeta {
            revision,
            meta: meta.clone(),
            resets,
        });
        fleet.meta = Some(meta);
        fleet.incarnation = incarnation;
        fleet.ready.store(true, Ordering::Release);
    }

    /// Removes the marker: the copy is no longer the registry applied.
    fn unmark_copy(&mut self) {
        let dir = self.options.data_dir.clone();
        if let Err(e) = copy::remove(&dir) {
            tracing::error!(error = %e, "cannot remove the fleet-copy marker of a copy that is no longer current");
        }
        self.fleet().marked = false;
    }

    /// Writes the marker that the data directory holds this fleet's copy, once.
    fn mark_copy(&mut self) {
        if self.fleet().marked {
            return;
        }
        let dir = self.options.data_dir.clone();
        let prefix = self.fleet().record.keys().prefix().to_owned();
        match copy::write(&dir, &prefix) {
            Ok(()) => self.fleet().marked = true,
            Err(e) => {
                tracing::error!(error = %e, "cannot mark the data directory as a copy of the fleet's registry; a restart while etcd is down will not serve it")
            }
        }
    }
}

/// Why `whole` is not the history `applied` is in, by their names: another sidecar
/// found etcd's history is not the one followed, and named it anew.
fn renamed(whole: &FleetState, applied: &FleetState) -> Option<String> {
    let (now, was) = (&whole.incarnation, &applied.incarnation);
    (!now.is_empty() && !was.is_empty() && now != was).then(|| {
        format!(
            "etcd's registry is named {now}, not {was} as followed: another sidecar found \
             etcd recreated or restored and named the history anew"
        )
    })
}

/// A random pause of up to 2^`conflicts` ms (at most 64 ms) before writing again.
fn backoff(conflicts: u32) -> std::time::Duration {
    let mut byte = [0u8; 2];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut byte);
    let most = 1u64 << conflicts.min(6);
    std::time::Duration::from_micros(u64::from(u16::from_be_bytes(byte)) % (most * 1000))
}

fn fail_all(changes: Vec<(Change, oneshot::Sender<ChangeResult>)>, err: &Error) {
    for (_, reply) in changes {
        let _ = reply.send(Err(err.clone()));
    }
}

fn answer(
    changes: Vec<(Change, oneshot::Sender<ChangeResult>)>,
    results: Vec<ChangeResult>,
) -> Option<Error> {
    for ((_, reply), result) in changes.into_iter().zip(results) {
        let _ = reply.send(result);
    }
    None
}

/// Logs how the local registry differs from the fleet's it is replaced by.
fn log_differences(local: &State, fleet: &State) {
    let names = |writes: &[Write], put: bool| -> Vec<String> {
        writes
            .iter()
            .filter_map(|w| match w {
                Write::Put(r) if put => Some(r.spec.name.to_string()),
                Write::Remove(name) if !put => Some(name.to_string()),
                _ => None,
            })
            .collect()
    };
    let writes = state::diff(local, fleet);
    let (only_here, differing) = (names(&writes, false), names(&writes, true));
    if only_here.is_empty() && differing.is_empty() {
        return;
    }
    tracing::warn!(
        local_revision = local.revision,
        fleet_revision = fleet.revision,
        only_here = %only_here.join(","),
        new_or_different_in_fleet = %differing.join(","),
        "this sidecar's local registry differs from the fleet's; the fleet's is served, the local one is not merged (a2a-commands ctl import registers a commands file into the fleet)"
    );
}
