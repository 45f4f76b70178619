//! [`Registry`]: the handle the rest of the service holds. Reads load the published
//! snapshot; changes go to the writer thread and return once they are durable.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::Error;
use crate::registry::snapshot::Snapshot;
use crate::registry::state::{Change, ChangeResult};
use crate::registry::store::{self, OpenError, Options};
use crate::registry::writer::{Op, Writer};

/// Changes that may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 4096;

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
        let (db, state, seal) = store::open_verified(&dir, options.cache_bytes).map_err(fail)?;

        let snapshot = Arc::new(state.snapshot());
        let m = crate::metrics::metrics();
        m.registry_commands
            .set(i64::try_from(snapshot.len()).unwrap_or(i64::MAX));
        m.registry_revision
            .set(i64::try_from(snapshot.revision()).unwrap_or(i64::MAX));
        let current = Arc::new(ArcSwap::new(Arc::clone(&snapshot)));
        let (watch_tx, watch) = watch::channel(snapshot);
        let (ops, rx) = mpsc::channel(QUEUE_DEPTH);
        let writer = Writer {
            db: Some(db),
            seal,
            state,
            current: Arc::clone(&current),
            watch: watch_tx,
            options: options.clone(),
            stopped: None,
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
