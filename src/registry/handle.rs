//! [`Registry`]: the handle the rest of the service holds. Reads load the published
//! snapshot; changes go to the writer thread and return once they are durable (in fleet
//! mode, once etcd committed them).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::sync::{mpsc, oneshot, watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::registry::fleet::etcd::Etcd;
use crate::registry::fleet::layout::{AppliedMeta, Keys};
use crate::registry::fleet::members::{self, Member};
use crate::registry::fleet::record::{self, Record};
use crate::registry::fleet::{copy, follow, FleetOptions};
use crate::registry::records::{self, Limits, Records};
use crate::registry::snapshot::Snapshot;
use crate::registry::state::{Change, ChangeResult};
use crate::registry::store::{self, OpenError, Options};
use crate::registry::writer::{Fleet, Inbox, Op, Writer};
use crate::telemetry::{CallerContext, Tracer};

/// Changes that may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 4096;

/// The registry: a handle to the current snapshot and to the writer.
pub struct Registry {
    current: Arc<ArcSwap<Snapshot>>,
    watch: watch::Receiver<Arc<Snapshot>>,
    ops: mpsc::Sender<Op>,
    /// Whether there is a registry to serve: always in sled mode; in fleet mode once
    /// the fleet's was read, or at once when the data directory holds a copy of it.
    ready: Arc<AtomicBool>,
    /// Counts the fleet's resets (etcd recreated or restored); never changes in sled mode.
    resets: watch::Receiver<u64>,
    /// Keeps `resets` open in sled mode (fleet mode's writer holds a clone).
    _resets: watch::Sender<u64>,
    /// Where records kept beside the registry live: the data directory, or etcd.
    records: records::Home,
    /// Fleet mode's follower and member key: stopped at close, the member key's task
    /// awaited (it revokes its lease).
    fleet_tasks: Option<(
        CancellationToken,
        std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    )>,
}

impl Registry {
    /// Opens (or creates) the registry in `options.data_dir` and starts its writer (sled
    /// mode).
    pub fn open(options: &Options) -> Result<Self, OpenError> {
        Self::open_with(options, None, None)
    }

    /// Opens the registry; with `fleet`, in fleet mode: the registry is kept in etcd, and
    /// the data directory holds this sidecar's copy of it.
    pub fn open_with(
        options: &Options,
        fleet: Option<&FleetOptions>,
        tracer: Option<&Tracer>,
    ) -> Result<Self, OpenError> {
        let dir = options.data_dir.clone();
        let fail = |cause: String| OpenError {
            dir: dir.clone(),
            cause,
        };
        let (db, state, seal) = match store::open_verified(&dir, options.cache_bytes) {
            Ok(opened) => opened,
            Err(refused) => match fleet {
                // In fleet mode the local store is a copy of what etcd holds: a damaged
                // one is set aside and the registry read from etcd again, if etcd can
                // give it now (else the start is refused, and nothing is moved).
                Some(fleet) if refused.damaged => {
                    replace_damaged_copy(&dir, fleet, &refused.cause).map_err(fail)?;
                    store::open_verified(&dir, options.cache_bytes)
                        .map_err(|refused| fail(refused.cause))?
                }
                _ => return Err(fail(refused.cause)),
            },
        };
        let marker = copy::read(&dir).map_err(fail)?;
        let copy_of_this_fleet = match (fleet, &marker) {
            (Some(fleet), Some(prefix)) => Keys::new(&fleet.prefix).prefix() == prefix,
            (None, Some(_)) => {
                // Sled mode takes the directory over: it is no longer the fleet's copy.
                copy::remove(&dir)
                    .map_err(|e| fail(format!("cannot remove the fleet marker: {e}")))?;
                false
            }
            _ => false,
        };
        let ready = Arc::new(AtomicBool::new(fleet.is_none() || copy_of_this_fleet));

        let snapshot = Arc::new(state.snapshot());
        let m = crate::metrics::metrics();
        m.registry_commands
            .set(i64::try_from(snapshot.len()).unwrap_or(i64::MAX));
        m.registry_revision
            .set(i64::try_from(snapshot.revision()).unwrap_or(i64::MAX));
        let current = Arc::new(ArcSwap::new(Arc::clone(&snapshot)));
        let (watch_tx, watch) = watch::channel(snapshot);
        let (ops, rx) = mpsc::channel(QUEUE_DEPTH);
        let (resets_tx, resets) = watch::channel(0);
        let mut records_home = records::Home::Local(dir.clone());
        let (fleet, fleet_tasks) = match fleet {
            Some(fleet) => {
                let started = start_fleet(
                    fleet,
                    tracer,
                    &ops,
                    &ready,
                    copy_of_this_fleet,
                    state.revision,
                    resets_tx.clone(),
                )
                .map_err(fail)?;
                let (stop, member_key) = started.1;
                records_home = records::Home::Fleet(
                    Arc::clone(started.0.record.etcd()),
                    started.0.record.keys().clone(),
                );
                (
                    Some(started.0),
                    Some((stop, std::sync::Mutex::new(Some(member_key)))),
                )
            }
            None => (None, None),
        };
        let writer = Writer {
            db: Some(db),
            seal,
            state,
            current: Arc::clone(&current),
            watch: watch_tx,
            options: options.clone(),
            stopped: None,
            fleet,
            inbox: Inbox::new(rx),
        };
        std::thread::Builder::new()
            .name("registry-writer".into())
            .spawn(move || writer.run())
            .map_err(|e| fail(format!("cannot start the writer thread: {e}")))?;
        Ok(Self {
            current,
            watch,
            ops,
            ready,
            resets,
            _resets: resets_tx,
            records: records_home,
            fleet_tasks,
        })
    }

    /// Opens the records kept beside this registry, in its store (see [`records`]).
    pub fn open_records(&self, limits: Limits) -> Result<Records, String> {
        Records::open(&self.records, limits)
    }

    /// The current snapshot (cheap: no lock, no copy), even before fleet mode has a
    /// registry to serve (see [`Registry::read`]).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// The current snapshot, for answering a request: [`Error::NotReady`] in fleet mode
    /// until there is a registry this sidecar applied.
    pub fn read(&self) -> Result<Arc<Snapshot>, Error> {
        if self.ready.load(Ordering::Acquire) {
            Ok(self.current.load_full())
        } else {
            Err(Error::NotReady)
        }
    }

    /// A receiver that changes each time fleet mode takes a reset (etcd recreated or
    /// restored from a backup): configuration is then applied again.
    pub fn resets(&self) -> watch::Receiver<u64> {
        self.resets.clone()
    }

    /// Whether there is a registry to serve (see [`Registry::read`]).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Returns once there is a registry to serve.
    pub async fn wait_ready(&self) {
        while !self.is_ready() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A receiver that sees every published snapshot (only the latest if it lags).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.watch.clone()
    }

    /// Applies `change`; returns once it is on disk and visible to reads.
    pub async fn apply(&self, change: Change) -> ChangeResult {
        let (tx, rx) = oneshot::channel();
        self.ops
            .send(Op::Change(change, tx, CallerContext::current()))
            .await
            .map_err(|_| Error::ShuttingDown)?;
        rx.await.map_err(|_| Error::ShuttingDown)?
    }

    /// Flushes and stops the writer; later changes fail with `ShuttingDown`. In fleet
    /// mode the follower stops first and the member key is revoked.
    pub async fn close(&self) {
        if let Some((stop, member_key)) = &self.fleet_tasks {
            stop.cancel();
            let task = member_key.lock().expect("task lock").take();
            if let Some(task) = task {
                let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
            }
        }
        let (tx, rx) = oneshot::channel();
        if self.ops.send(Op::Stop(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }
}

/// Sets the damaged local copy in `dir` aside (see `store::set_aside`) once one whole
/// read shows that etcd holds the fleet's registry; the start then serves only what it
/// reads from etcd. `cause` is why the copy was refused.
fn replace_damaged_copy(dir: &Path, fleet: &FleetOptions, cause: &str) -> Result<(), String> {
    let options = fleet.clone();
    // Its own thread and runtime: opening is synchronous, and may run on the service's.
    let readable = std::thread::spawn(move || -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let etcd = Etcd::new(&options)?;
            record::read_all(&etcd, &Keys::new(&options.prefix))
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    })
    .join()
    .unwrap_or_else(|_| Err("the read of the fleet store failed".into()));
    if let Err(unreadable) = readable {
        return Err(format!(
            "{cause}; the fleet store cannot give the registry instead ({unreadable}), so \
             the copy was kept as it is"
        ));
    }
    let aside = store::set_aside(dir)?;
    tracing::warn!(
        cause,
        moved_to = %aside.display(),
        "the local copy of the fleet's registry failed its check; it was moved aside (nothing deleted) and the registry is read from the fleet store"
    );
    Ok(())
}

/// Starts fleet mode's follower and member key, and builds the writer's side of it.
fn start_fleet(
    options: &FleetOptions,
    tracer: Option<&Tracer>,
    ops: &mpsc::Sender<Op>,
    ready: &Arc<AtomicBool>,
    copy_of_this_fleet: bool,
    revision: u64,
    resets: watch::Sender<u64>,
) -> Result<(Fleet, (CancellationToken, tokio::task::JoinHandle<()>)), String> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "fleet mode needs the service's runtime".to_owned())?;
    let etcd = Arc::new(Etcd::new(options)?.traced(tracer.cloned()));
    let keys = Keys::new(&options.prefix);
    let resync = Arc::new(Notify::new());
    let stop = CancellationToken::new();
    let (applied, applied_rx) = watch::channel(AppliedMeta {
        revision,
        ..Default::default()
    });

    let (followed, mut from_follower) = mpsc::channel(1024);
    let follower = follow::run(
        Arc::clone(&etcd),
        keys.clone(),
        followed,
        Arc::clone(&resync),
        applied_rx.clone(),
    );
    let forward = {
        let ops = ops.clone();
        async move {
            while let Some(f) = from_follower.recv().await {
                if ops.send(Op::Follow(f)).await.is_err() {
                    break;
                }
            }
        }
    };
    let member = Member {
        name: options.member_name.clone(),
        addr: options.member_addr.clone(),
        revision,
        etcd_revision: 0,
    };
    let member_key = members::run(Arc::clone(&etcd), keys, member, applied_rx, stop.clone());
    let stopped = stop.clone();
    runtime.spawn(async move {
        let following = async {
            tokio::join!(follower, forward);
        };
        tokio::select! {
            () = stopped.cancelled() => {}
            () = following => {}
        }
    });
    let member_key = runtime.spawn(member_key);
    let fleet = Fleet {
        record: Record::new(etcd, options),
        options: options.clone(),
        runtime,
        meta: None,
        incarnation: String::new(),
        pending: None,
        resync,
        ready: Arc::clone(ready),
        marked: copy_of_this_fleet,
        applied,
        resets,
    };
    Ok((fleet, (stop, member_key)))
}
