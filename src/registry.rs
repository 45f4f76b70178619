//! The ordered command registry: the service's only state.
//!
//! Reads take an immutable [`Snapshot`] from an `ArcSwap` and never touch sled, so they
//! cost the same whatever the registry's size and never wait for a write. Changes go to
//! one writer thread, which takes every change waiting in its queue, applies them to a
//! copy of the state, writes them to sled as one atomic batch, flushes (fsync) once, and
//! only then publishes the new snapshot and answers. Concurrent changes thus share a
//! flush, and nothing is acknowledged before it is on disk.
//!
//! On disk (one sled tree): `c:<name>` holds a command's JSON record (its place in the
//! order, spec and body); `m:revision` and `m:next_seq` hold big-endian u64s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot, watch};

use crate::builtins::Builtin;
use crate::card::Card;
use crate::error::Error;
use crate::handlers::HandlerBinding;
use crate::spec::{CommandName, CommandSpec};

const COMMAND_PREFIX: &[u8] = b"c:";
const REVISION_KEY: &[u8] = b"m:revision";
const NEXT_SEQ_KEY: &[u8] = b"m:next_seq";
/// Most changes one flush covers; bounds the latency a change adds to its group.
const MAX_GROUP: usize = 512;
/// Changes that may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 4096;

/// What runs a registered command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    /// A built-in command of this service.
    Builtin {
        /// Which one.
        builtin: Builtin,
    },
    /// Nothing runs it: Execute answers "no handler".
    None,
    /// A handler elsewhere.
    Handler {
        /// Where, and how long to wait.
        handler: HandlerBinding,
    },
}

/// Who put a command in the registry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Register, over the API.
    #[default]
    Api,
    /// The built-ins, from configuration.
    Builtins,
    /// The commands file; the API may not change such a command.
    File,
}

/// A command in the registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    /// Its place in the order: commands sort by it.
    seq: u64,
    /// The spec shown on the card.
    pub spec: CommandSpec,
    /// What runs it.
    pub body: Body,
    /// Who put it there.
    #[serde(default)]
    pub source: Source,
}

/// The commands, in order and by name. Both maps are persistent (they share structure),
/// so a copy costs O(1) and a change O(log n): publishing a snapshot after a change does
/// not grow with the registry.
#[derive(Clone, Debug, Default)]
struct Commands {
    by_seq: imbl::OrdMap<u64, Arc<Registered>>,
    by_name: imbl::HashMap<CommandName, Arc<Registered>>,
}

impl Commands {
    fn get(&self, name: &str) -> Option<&Arc<Registered>> {
        self.by_name.get(name)
    }

    fn len(&self) -> usize {
        self.by_name.len()
    }

    fn iter(&self) -> impl ExactSizeIterator<Item = &Arc<Registered>> + '_ {
        self.by_seq.values()
    }

    /// Inserts `record`, replacing the command of the same name (wherever it was).
    fn put(&mut self, record: Registered) -> Arc<Registered> {
        let record = Arc::new(record);
        if let Some(old) = self
            .by_name
            .insert(record.spec.name.clone(), Arc::clone(&record))
        {
            // Moving to another place: free the old one, unless another command has
            // already taken it.
            if old.seq != record.seq
                && self
                    .by_seq
                    .get(&old.seq)
                    .is_some_and(|at| at.spec.name == old.spec.name)
            {
                self.by_seq.remove(&old.seq);
            }
        }
        self.by_seq.insert(record.seq, Arc::clone(&record));
        record
    }

    fn remove(&mut self, name: &str) -> Option<Arc<Registered>> {
        let old = self.by_name.remove(name)?;
        self.by_seq.remove(&old.seq);
        Some(old)
    }
}

/// An immutable view of the registry at one revision.
#[derive(Debug)]
pub struct Snapshot {
    revision: u64,
    commands: Commands,
    /// Rendered on first use, so writes never pay for it.
    card: OnceLock<Card>,
}

impl Snapshot {
    /// The revision: bumped by every change, persisted, never going backwards.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The commands in registration order.
    pub fn commands(&self) -> impl ExactSizeIterator<Item = &Arc<Registered>> + '_ {
        self.commands.iter()
    }

    /// How many commands there are.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The command named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Registered>> {
        self.commands.get(name)
    }

    /// The agent card's extension entry for these commands.
    pub fn card(&self) -> &Card {
        self.card
            .get_or_init(|| Card::render(self.commands.iter().map(|c| &c.spec)))
    }

    /// A snapshot of `commands` in the order given, that no store holds: for
    /// benchmarks and tests of the read path.
    pub fn detached(commands: impl IntoIterator<Item = (CommandSpec, Body)>) -> Self {
        let mut all = Commands::default();
        for (seq, (spec, body)) in commands.into_iter().enumerate() {
            all.put(Registered {
                seq: seq as u64,
                spec,
                body,
                source: Source::Api,
            });
        }
        Self {
            revision: 0,
            commands: all,
            card: OnceLock::new(),
        }
    }
}

/// A change to the registry.
#[derive(Clone, Debug)]
pub enum Change {
    /// Add a command, or with `replace` replace one in its place (from the API).
    Register {
        /// The spec.
        spec: CommandSpec,
        /// What runs it.
        body: Body,
        /// Replace an existing command of the same name.
        replace: bool,
    },
    /// Make the commands file's commands exactly `commands`, in that order: add or
    /// update each, remove those the file added before and no longer lists, and give
    /// the file's commands the file's order within the places they hold. All or
    /// nothing.
    Reconcile {
        /// The file's commands, in file order.
        commands: Vec<(CommandSpec, Body)>,
    },
    /// Remove a command.
    Unregister {
        /// Its name.
        name: CommandName,
    },
    /// Make the built-ins exactly `enabled`: add the missing ones at the end, remove
    /// those still running a built-in body that are no longer enabled. A built-in an
    /// operator replaced (`override`) is left alone.
    SetBuiltins {
        /// The built-ins to offer, in order.
        enabled: Vec<Builtin>,
    },
}

/// What a change did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// A new command was added at the end.
    Created,
    /// A command was replaced in its place.
    Replaced,
    /// Nothing needed to change.
    Unchanged,
    /// A command was removed.
    Removed,
    /// Several commands were added, updated or removed ([`Change::SetBuiltins`],
    /// [`Change::Reconcile`]).
    Reconciled,
}

/// The answer to a change: what it did and the revision after it.
pub type ChangeResult = Result<(Applied, u64), Error>;

enum Op {
    Change(Change, oneshot::Sender<ChangeResult>),
    Stop(oneshot::Sender<()>),
}

/// How to open the registry.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sled directory.
    pub data_dir: PathBuf,
    /// sled's page cache, in bytes (sled's own default is 1 GiB).
    pub cache_bytes: u64,
    /// Most commands the registry holds.
    pub max_commands: usize,
}

/// The data directory could not be opened; the service must not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot open data directory {}: {cause}", dir.display())]
pub struct OpenError {
    /// The directory.
    pub dir: PathBuf,
    /// Why, in words.
    pub cause: String,
}

/// The registry: a handle to the current snapshot and to the writer.
pub struct Registry {
    current: Arc<ArcSwap<Snapshot>>,
    watch: watch::Receiver<Arc<Snapshot>>,
    ops: mpsc::Sender<Op>,
}

impl Registry {
    /// Opens (or creates) the registry in `options.data_dir` and starts its writer.
    pub fn open(options: &Options) -> Result<Self, OpenError> {
        let dir = options.data_dir.clone();
        let fail = |cause: String| OpenError {
            dir: dir.clone(),
            cause,
        };
        std::fs::create_dir_all(&dir).map_err(|e| fail(e.to_string()))?;
        let db = open_sled(&dir, options.cache_bytes).map_err(fail)?;
        let state = State::load(&db).map_err(fail)?;

        let snapshot = Arc::new(state.snapshot());
        let current = Arc::new(ArcSwap::new(Arc::clone(&snapshot)));
        let (watch_tx, watch) = watch::channel(snapshot);
        let (ops, rx) = mpsc::channel(QUEUE_DEPTH);
        let writer = Writer {
            db: Some(db),
            state,
            current: Arc::clone(&current),
            watch: watch_tx,
            options: options.clone(),
        };
        std::thread::Builder::new()
            .name("registry-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| fail(format!("cannot start the writer thread: {e}")))?;
        Ok(Self {
            current,
            watch,
            ops,
        })
    }

    /// The current snapshot (cheap: no lock, no copy).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// A receiver that sees every published snapshot (only the latest if it lags).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.watch.clone()
    }

    /// Applies `change`; returns once it is on disk and visible to reads.
    pub async fn apply(&self, change: Change) -> ChangeResult {
        let (tx, rx) = oneshot::channel();
        self.ops
            .send(Op::Change(change, tx))
            .await
            .map_err(|_| Error::ShuttingDown)?;
        rx.await.map_err(|_| Error::ShuttingDown)?
    }

    /// Flushes and stops the writer; later changes fail with `ShuttingDown`.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.ops.send(Op::Stop(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }
}

fn open_sled(dir: &Path, cache_bytes: u64) -> Result<sled::Db, String> {
    let config = sled::Config::new().path(dir).cache_capacity(cache_bytes);
    // sled panics on some kinds of damage instead of returning an error; either way the
    // operator must get one clear line, and the data must be left as it is.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| config.open())) {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(sled::Error::Io(e))) if e.to_string().contains("could not acquire lock") => {
            Err("it is in use by another running instance (its lock is held)".into())
        }
        Ok(Err(sled::Error::Io(e))) => Err(e.to_string()),
        Ok(Err(sled::Error::Corruption { .. })) => {
            Err("the store is corrupt; it was left untouched".into())
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the store could not be read (sled panicked); it was left untouched".into()),
    }
}

/// The writer's copy of the registry.
#[derive(Clone)]
struct State {
    revision: u64,
    next_seq: u64,
    commands: Commands,
}

impl State {
    fn load(db: &sled::Db) -> Result<Self, String> {
        let read_u64 = |key: &[u8]| -> Result<u64, String> {
            match db.get(key).map_err(|e| e.to_string())? {
                None => Ok(0),
                Some(v) => v
                    .as_ref()
                    .try_into()
                    .map(u64::from_be_bytes)
                    .map_err(|_| format!("the store is corrupt: {} is not a u64", show(key))),
            }
        };
        let revision = read_u64(REVISION_KEY)?;
        let next_seq = read_u64(NEXT_SEQ_KEY)?;
        let mut commands = Commands::default();
        for item in db.scan_prefix(COMMAND_PREFIX) {
            let (key, value) = item.map_err(|e| e.to_string())?;
            let record: Registered = serde_json::from_slice(&value).map_err(|e| {
                format!(
                    "the store is corrupt: record {} is unreadable: {e}",
                    show(&key)
                )
            })?;
            if record.seq >= next_seq {
                return Err(format!(
                    "the store is corrupt: record {} has place {} beyond the next ({next_seq})",
                    show(&key),
                    record.seq
                ));
            }
            commands.put(record);
        }
        Ok(Self {
            revision,
            next_seq,
            commands,
        })
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            revision: self.revision,
            commands: self.commands.clone(),
            card: OnceLock::new(),
        }
    }

    /// Writes `record` to the state and to `batch`.
    fn put(&mut self, record: Registered, batch: &mut sled::Batch) {
        batch.insert(command_key(&record.spec.name), encode(&record));
        self.commands.put(record);
    }

    fn remove(&mut self, name: &CommandName, batch: &mut sled::Batch) {
        batch.remove(command_key(name));
        self.commands.remove(name.as_str());
    }

    fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Applies one change in memory and records its writes in `batch`. A change that
    /// fails leaves both untouched.
    fn apply(&mut self, change: Change, max: usize, batch: &mut sled::Batch) -> ChangeResult {
        let applied = match change {
            Change::Register {
                spec,
                body,
                replace,
            } => self.register(spec, body, replace, Source::Api, Some(max), batch)?,
            Change::Unregister { name } => {
                let old = self
                    .commands
                    .get(name.as_str())
                    .ok_or_else(|| Error::NotFound(name.to_string()))?;
                if old.source == Source::File {
                    return Err(Error::ManagedByFile(name.to_string()));
                }
                self.remove(&name, batch);
                Applied::Removed
            }
            Change::SetBuiltins { enabled } => self.set_builtins(&enabled, batch),
            Change::Reconcile { commands } => self.reconcile(commands, max, batch)?,
        };
        if applied != Applied::Unchanged {
            self.revision += 1;
            batch.insert(REVISION_KEY, &self.revision.to_be_bytes());
            batch.insert(NEXT_SEQ_KEY, &self.next_seq.to_be_bytes());
        }
        Ok((applied, self.revision))
    }

    #[allow(clippy::too_many_arguments)]
    fn register(
        &mut self,
        spec: CommandSpec,
        body: Body,
        replace: bool,
        source: Source,
        max: Option<usize>,
        batch: &mut sled::Batch,
    ) -> Result<Applied, Error> {
        let (seq, applied) = match self.commands.get(spec.name.as_str()) {
            Some(old) => {
                // Re-registering a spec with no body, without override, is what a gateway
                // does on every start: it leaves the existing body alone.
                let keeps_body = !replace && body == Body::None;
                if old.spec == spec && (old.body == body || keeps_body) {
                    return Ok(Applied::Unchanged);
                }
                if old.source == Source::File && source != Source::File {
                    return Err(Error::ManagedByFile(spec.name.to_string()));
                }
                if !replace {
                    return Err(Error::AlreadyExists(spec.name.to_string()));
                }
                (old.seq, Applied::Replaced)
            }
            None => {
                if let Some(max) = max.filter(|&max| self.commands.len() >= max) {
                    return Err(Error::RegistryFull(max));
                }
                (self.take_seq(), Applied::Created)
            }
        };
        let record = Registered {
            seq,
            spec,
            body,
            source,
        };
        self.put(record, batch);
        Ok(applied)
    }

    fn set_builtins(&mut self, enabled: &[Builtin], batch: &mut sled::Batch) -> Applied {
        let stale: Vec<CommandName> = self
            .commands
            .iter()
            .filter(|c| matches!(c.body, Body::Builtin { builtin } if !enabled.contains(&builtin)))
            .map(|c| c.spec.name.clone())
            .collect();
        let mut changed = !stale.is_empty();
        for name in &stale {
            self.remove(name, batch);
        }
        for &builtin in enabled {
            if self.commands.get(builtin.name()).is_none() {
                let body = Body::Builtin { builtin };
                // Built-ins are configuration: they do not count against the capacity.
                let _ = self.register(builtin.spec(), body, false, Source::Builtins, None, batch);
                changed = true;
            }
        }
        if changed {
            Applied::Reconciled
        } else {
            Applied::Unchanged
        }
    }

    fn reconcile(
        &mut self,
        commands: Vec<(CommandSpec, Body)>,
        max: usize,
        batch: &mut sled::Batch,
    ) -> Result<Applied, Error> {
        let listed: HashMap<CommandName, usize> = commands
            .iter()
            .enumerate()
            .map(|(i, (spec, _))| (spec.name.clone(), i))
            .collect();
        // The file put it there and no longer lists it.
        let stale: Vec<CommandName> = self
            .commands
            .iter()
            .filter(|c| c.source == Source::File && !listed.contains_key(&c.spec.name))
            .map(|c| c.spec.name.clone())
            .collect();
        // Check capacity before changing anything: a change is all or nothing.
        let added = commands
            .iter()
            .filter(|(spec, _)| self.commands.get(spec.name.as_str()).is_none())
            .count();
        if self.commands.len() - stale.len() + added > max {
            return Err(Error::RegistryFull(max));
        }

        let before = self.commands.clone();
        for name in &stale {
            self.remove(name, batch);
        }
        // The file's commands keep the places they hold (new ones get places at the
        // end), and take those places in the file's order.
        let mut places: Vec<u64> = commands
            .iter()
            .map(|(spec, _)| match self.commands.get(spec.name.as_str()) {
                Some(existing) => existing.seq,
                None => self.take_seq(),
            })
            .collect();
        places.sort_unstable();
        let changed_records: Vec<Registered> = commands
            .into_iter()
            .zip(places)
            .map(|((spec, body), seq)| Registered {
                seq,
                spec,
                body,
                source: Source::File,
            })
            .filter(|record| before.get(record.spec.name.as_str()).map(|b| &**b) != Some(record))
            .collect();
        // Take them all out first, so that no move lands on a place another still holds.
        for record in &changed_records {
            self.commands.remove(record.spec.name.as_str());
        }
        for record in changed_records {
            self.put(record, batch);
        }
        let changed = !stale.is_empty() || self.commands.by_seq != before.by_seq;
        Ok(if changed {
            Applied::Reconciled
        } else {
            Applied::Unchanged
        })
    }
}

fn command_key(name: &CommandName) -> Vec<u8> {
    [COMMAND_PREFIX, name.as_str().as_bytes()].concat()
}

fn encode(record: &Registered) -> Vec<u8> {
    serde_json::to_vec(record).expect("records always serialize")
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// The one thread that writes to sled.
struct Writer {
    /// `None` after a write failed: sled stays failed once an I/O error hits it, so
    /// the next change reopens the store first.
    db: Option<sled::Db>,
    state: State,
    current: Arc<ArcSwap<Snapshot>>,
    watch: watch::Sender<Arc<Snapshot>>,
    options: Options,
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Op>) {
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
        if let Some(Err(e)) = self.db.as_ref().map(|db| db.flush()) {
            tracing::error!(error = %e, "final flush of the registry failed");
        }
        // Closing sled releases the directory's lock; only then is the stop answered, so
        // a new instance can open the directory as soon as `close` returns.
        drop(self);
        for reply in stopping {
            let _ = reply.send(());
        }
    }

    fn commit_group(&mut self, changes: Vec<(Change, oneshot::Sender<ChangeResult>)>) {
        if changes.is_empty() {
            return;
        }
        let db = match self.store() {
            Ok(db) => db,
            Err(err) => {
                for (_, reply) in changes {
                    let _ = reply.send(Err(err.clone()));
                }
                return;
            }
        };
        let mut next = self.state.clone();
        let mut batch = sled::Batch::default();
        let mut results = Vec::with_capacity(changes.len());
        let mut replies = Vec::with_capacity(changes.len());
        for (change, reply) in changes {
            results.push(next.apply(change, self.options.max_commands, &mut batch));
            replies.push(reply);
        }
        if next.revision != self.state.revision {
            let started = std::time::Instant::now();
            let written = db.apply_batch(batch).and_then(|()| db.flush());
            let flushed = started.elapsed();
            match written {
                Ok(_) => {
                    self.publish(next);
                    tracing::debug!(
                        changes = replies.len(),
                        write_us = flushed.as_micros() as u64,
                        publish_us = (started.elapsed() - flushed).as_micros() as u64,
                        "group committed"
                    );
                }
                Err(e) => {
                    let err = Error::from_store(e);
                    tracing::error!(error = %err, changes = replies.len(), "registry write failed; the store will be reopened");
                    // Nothing in this group is acknowledged, and reads keep the last
                    // acknowledged state. sled is unusable after an I/O error, so it is
                    // closed now and reopened (and re-read) before the next change.
                    self.db = None;
                    results = replies.iter().map(|_| Err(err.clone())).collect();
                }
            }
        }
        for (reply, result) in replies.into_iter().zip(results) {
            let _ = reply.send(result);
        }
    }

    /// The open store, reopening it (and re-reading the registry from it) after a
    /// failed write.
    fn store(&mut self) -> Result<sled::Db, Error> {
        if let Some(db) = &self.db {
            return Ok(db.clone());
        }
        let db = open_sled(&self.options.data_dir, self.options.cache_bytes)
            .map_err(|cause| Error::Storage(format!("reopening the store failed: {cause}")))?;
        let state = State::load(&db).map_err(Error::Storage)?;
        tracing::info!(revision = state.revision, "registry store reopened");
        // A group that failed may still have reached the disk; what is there now is
        // the truth. Acknowledged changes are all there, so the revision never goes
        // back.
        if state.revision != self.state.revision {
            self.publish(state);
        }
        self.db = Some(db.clone());
        Ok(db)
    }

    fn publish(&mut self, state: State) {
        let snapshot = Arc::new(state.snapshot());
        self.state = state;
        self.current.store(Arc::clone(&snapshot));
        self.watch.send_replace(snapshot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str) -> CommandSpec {
        CommandSpec::new("spec", name, description, "").unwrap()
    }

    /// Registers over the API into a registry of capacity 3.
    fn register(state: &mut State, s: CommandSpec, replace: bool) -> ChangeResult {
        let change = Change::Register {
            spec: s,
            body: Body::None,
            replace,
        };
        state.apply(change, 3, &mut sled::Batch::default())
    }

    fn reconcile(state: &mut State, names: &[&str]) -> ChangeResult {
        let commands = names
            .iter()
            .map(|n| (spec(n, "from file"), Body::None))
            .collect();
        state.apply(
            Change::Reconcile { commands },
            10,
            &mut sled::Batch::default(),
        )
    }

    #[test]
    fn reconcile_adds_updates_reorders_and_removes_only_its_own() {
        let mut s = State {
            revision: 0,
            next_seq: 0,
            commands: Commands::default(),
        };
        register(&mut s, spec("api", "1"), false).unwrap();
        assert_eq!(
            reconcile(&mut s, &["a", "b"]).unwrap().0,
            Applied::Reconciled
        );
        let late = Change::Register {
            spec: spec("late", "1"),
            body: Body::None,
            replace: false,
        };
        s.apply(late, 10, &mut sled::Batch::default()).unwrap();
        assert_eq!(names(&s), ["api", "a", "b", "late"]);
        assert_eq!(
            reconcile(&mut s, &["a", "b"]).unwrap(),
            (Applied::Unchanged, 3)
        );
        reconcile(&mut s, &["c", "b", "a"]).unwrap();
        assert_eq!(names(&s), ["api", "c", "b", "late", "a"]);
        reconcile(&mut s, &["a"]).unwrap();
        assert_eq!(names(&s), ["api", "late", "a"]);
        assert!(matches!(
            register(&mut s, spec("a", "2"), true),
            Err(Error::ManagedByFile(_))
        ));
        let unregister = Change::Unregister {
            name: CommandName::parse("name", "a").unwrap(),
        };
        let err = s.apply(unregister, 10, &mut sled::Batch::default());
        assert!(matches!(err, Err(Error::ManagedByFile(_))));
        // Seqs stay ordered like the list, so a reload sorts the same way.
        // Both maps agree: every place holds the command its name points to.
        assert_eq!(s.commands.by_seq.len(), s.commands.by_name.len());
        for command in s.commands.iter() {
            assert_eq!(s.commands.get(command.spec.name.as_str()), Some(command));
        }
    }

    fn names(state: &State) -> Vec<&str> {
        state
            .commands
            .iter()
            .map(|c| c.spec.name.as_str())
            .collect()
    }

    #[test]
    fn order_override_and_capacity() {
        let mut s = State {
            revision: 0,
            next_seq: 0,
            commands: Commands::default(),
        };
        assert_eq!(
            register(&mut s, spec("a", "1"), false).unwrap(),
            (Applied::Created, 1)
        );
        assert_eq!(
            register(&mut s, spec("b", "1"), false).unwrap(),
            (Applied::Created, 2)
        );
        assert_eq!(
            register(&mut s, spec("a", "1"), false).unwrap(),
            (Applied::Unchanged, 2)
        );
        assert!(matches!(
            register(&mut s, spec("a", "2"), false),
            Err(Error::AlreadyExists(_))
        ));
        assert_eq!(
            register(&mut s, spec("a", "2"), true).unwrap(),
            (Applied::Replaced, 3)
        );
        assert_eq!(names(&s), ["a", "b"]);
        register(&mut s, spec("c", "1"), false).unwrap();
        assert!(matches!(
            register(&mut s, spec("d", "1"), false),
            Err(Error::RegistryFull(3))
        ));
    }
}
