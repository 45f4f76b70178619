//! Measuring one RPC: concurrent workers for a fixed time after a warm-up, latency
//! quantiles, the server's CPU per call, and rounds against an adjacent floor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::transport::Channel;

use crate::cli::Args;

/// One measured RPC.
#[derive(Clone)]
pub(crate) struct Measured {
    /// The floor measured right before it: calls/s, p50 and p99.
    pub(crate) floor: (f64, Duration, Duration),
    /// Server CPU time (user + system, all threads) per call, when the tool started
    /// the server.
    pub(crate) server_cpu: Option<Duration>,
    /// Calls over every round (for the totals).
    pub(crate) calls_all_rounds: usize,
    pub(crate) name: String,
    pub(crate) calls: usize,
    pub(crate) failures: usize,
    pub(crate) per_second: f64,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
}

pub(crate) type CallFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), tonic::Status>> + Send>>;

/// Makes call number `i` for worker `w` on `channel`.
pub(crate) type MakeCall = Arc<dyn Fn(Channel, usize, usize) -> CallFuture + Send + Sync>;

pub(crate) async fn measure(
    name: &str,
    channels: &[Channel],
    concurrency: usize,
    args: &Args,
    make: MakeCall,
) -> Measured {
    let skipped = args
        .only
        .as_deref()
        .is_some_and(|only| !name.contains(only) && !name.starts_with("floor"));
    if skipped {
        return Measured {
            floor: (0.0, Duration::ZERO, Duration::ZERO),
            server_cpu: None,
            calls_all_rounds: 0,
            name: name.to_owned(),
            calls: 0,
            failures: 0,
            per_second: 0.0,
            p50: Duration::ZERO,
            p99: Duration::ZERO,
        };
    }
    let warmup = Duration::from_secs_f64(if args.smoke { 0.05 } else { args.warmup });
    let run = Duration::from_secs_f64(if args.smoke { 0.2 } else { args.seconds });
    let per_worker_cap = args.max_calls / concurrency.max(1) + 1;
    // Server CPU over the measured window (after the warm-up), read beside the workers.
    let cpu_window = tokio::spawn(async move {
        let pid = SERVER_PID.get().copied()?;
        tokio::time::sleep(warmup).await;
        let before = cpu_time(pid)?;
        tokio::time::sleep(run).await;
        Some(cpu_time(pid)? - before)
    });
    let mut workers = Vec::new();
    for w in 0..concurrency {
        let channel = channels[w % channels.len()].clone();
        let make = Arc::clone(&make);
        workers.push(tokio::spawn(async move {
            let warm_until = Instant::now() + warmup;
            let mut i = 0;
            while Instant::now() < warm_until && i < per_worker_cap {
                let _ = make(channel.clone(), w, i).await;
                i += 1;
            }
            let mut latencies = Vec::with_capacity(4096);
            let mut failures = 0;
            let started = Instant::now();
            let until = started + run;
            let mut calls = 0;
            while Instant::now() < until && calls < per_worker_cap {
                let t = Instant::now();
                if let Err(status) = make(channel.clone(), w, i).await {
                    if failures == 0 {
                        eprintln!("call failed: {status}");
                    }
                    failures += 1;
                }
                latencies.push(t.elapsed());
                i += 1;
                calls += 1;
            }
            (latencies, failures, started.elapsed())
        }));
    }
    let mut latencies = Vec::new();
    let mut failures = 0;
    let mut elapsed = Duration::ZERO;
    for worker in workers {
        let (l, f, e) = worker.await.expect("worker");
        latencies.extend(l);
        failures += f;
        elapsed = elapsed.max(e);
    }
    latencies.sort_unstable();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    let server_cpu = cpu_window
        .await
        .ok()
        .flatten()
        .map(|cpu| cpu / u32::try_from(latencies.len().max(1)).unwrap_or(u32::MAX));
    let per_second = latencies.len() as f64 / elapsed.as_secs_f64();
    let (p50, p99) = (pick(0.50), pick(0.99));
    Measured {
        floor: (per_second, p50, p99),
        server_cpu,
        calls_all_rounds: latencies.len(),
        name: name.to_owned(),
        calls: latencies.len(),
        failures,
        per_second,
        p50,
        p99,
    }
}

/// Measures `make` in `args.rounds` rounds, each right after a floor measurement at the
/// same concurrency, and reports the round whose ratio to its own floor is the median.
pub(crate) async fn against_floor(
    name: &str,
    channels: &[Channel],
    concurrency: usize,
    args: &Args,
    floor: &MakeCall,
    make: MakeCall,
) -> Measured {
    let mut rounds = Vec::new();
    for _ in 0..args.rounds.max(1) {
        let base = measure("floor", channels, concurrency, args, Arc::clone(floor)).await;
        let mut row = measure(name, channels, concurrency, args, Arc::clone(&make)).await;
        if row.calls == 0 {
            return row;
        }
        row.floor = (base.per_second, base.p50, base.p99);
        rounds.push(row);
    }
    rounds.sort_by(|a, b| (a.per_second / a.floor.0).total_cmp(&(b.per_second / b.floor.0)));
    let median = rounds.len() / 2;
    let failures = rounds.iter().map(|r| r.failures).sum();
    let calls = rounds.iter().map(|r| r.calls).sum::<usize>();
    let mut row = rounds.swap_remove(median);
    row.failures = failures;
    row.calls_all_rounds = calls;
    row
}

/// The started server's pid, for its CPU time and memory.
pub(crate) static SERVER_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// User plus system CPU time of all of `pid`'s threads so far.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // The kernel reports in USER_HZ, 100 per second on Linux.
    Some(Duration::from_millis(ticks * 10))
}
