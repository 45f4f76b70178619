//! The front's event loops, on which its connections live (as nginx's workers and
//! HAProxy's threads hold theirs).

use tokio_util::sync::CancellationToken;

/// The front's event loops: one thread a core, each a current-thread runtime, and each
/// connection lives on the one it is given, with its connections to the agent (as
/// nginx's workers and HAProxy's threads keep theirs). A request is read, forwarded,
/// answered and its agent's answer read on one thread: nothing is handed between
/// threads, and no sibling is woken to steal work.
pub struct Loops {
    handles: Vec<tokio::runtime::Handle>,
    next: std::sync::atomic::AtomicUsize,
    stop: CancellationToken,
}

impl Loops {
    /// One loop a core (the cores the process may use), each on a thread of its own.
    pub fn start() -> std::io::Result<Self> {
        let count = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stop = CancellationToken::new();
        let mut handles = Vec::with_capacity(count);
        for index in 0..count {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(runtime.handle().clone());
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(format!("front-loop-{index}"))
                .spawn(move || {
                    crate::front::pool::set_loop(index);
                    runtime.block_on(stop.cancelled());
                })?;
        }
        Ok(Self {
            handles,
            next: std::sync::atomic::AtomicUsize::new(0),
            stop,
        })
    }

    /// The loop the next connection goes to: each in turn.
    pub fn next(&self) -> &tokio::runtime::Handle {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        &self.handles[n % self.handles.len()]
    }
}

impl Drop for Loops {
    fn drop(&mut self) {
        // Each loop's runtime ends with its thread; what it still runs is dropped.
        self.stop.cancel();
    }
}
