//! The load tool's flags.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// Drives every RPC of a2a-commands and compares it with the gRPC floor.
#[derive(Parser, Debug)]
#[command(name = "a2a-commands-load")]
pub(crate) struct Args {
    /// Target a running server instead of starting one (it must allow Register).
    #[arg(long)]
    pub(crate) addr: Option<SocketAddr>,
    /// The server binary to start [default: a2a-commands next to this tool].
    #[arg(long)]
    pub(crate) server: Option<PathBuf>,
    /// Commands to register before measuring (the registry size for Classify and
    /// Execute; ListSpecs lists them all).
    #[arg(long, default_value_t = 100)]
    pub(crate) commands: usize,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 16)]
    pub(crate) concurrency: usize,
    /// HTTP/2 connections the calls share.
    #[arg(long, default_value_t = 4)]
    pub(crate) connections: usize,
    /// Seconds each measurement runs.
    #[arg(long, default_value_t = 5.0)]
    pub(crate) seconds: f64,
    /// Seconds of warm-up before each measurement.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) warmup: f64,
    /// Most calls one measurement makes, whatever the time.
    #[arg(long, default_value_t = 2_000_000)]
    pub(crate) max_calls: usize,
    /// The started server's log filter (its per-call lines are at info).
    #[arg(long, default_value = "info")]
    pub(crate) server_log: String,
    /// A flag for the started server's `serve`, e.g. `--server-arg=--metrics-listen=127.0.0.1:0`
    /// (repeat for more).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    pub(crate) server_args: Vec<String>,
    /// Also measure start-up time and memory with 10,000 commands (starts the server
    /// several times).
    #[arg(long)]
    pub(crate) startup: bool,
    /// Measure only the RPCs whose row name contains this text (the floor always runs).
    #[arg(long)]
    pub(crate) only: Option<String>,
    /// Rounds per RPC, each right after its own floor measurement; the round with the
    /// median ratio is reported (the machine's speed drifts between rounds).
    #[arg(long, default_value_t = 3)]
    pub(crate) rounds: usize,
    /// A quick run that checks every call works (CI): short measurements, no judging.
    #[arg(long)]
    pub(crate) smoke: bool,
    /// Write each measured RPC's request as a framed gRPC body (`<row>.bin`, with
    /// `bodies.tsv` naming each one's path) into this directory after registering,
    /// then exit: for an outside client such as h2load (`scripts/h2load.sh`).
    #[arg(long)]
    pub(crate) write_bodies: Option<PathBuf>,
    /// Fleet mode's figures instead (`scripts/bench-fleet.sh`): three running sidecars of
    /// one fleet, comma-separated, for propagation and the Register rate (with --sled).
    #[arg(long, value_delimiter = ',', requires = "sled")]
    pub(crate) fleet: Option<Vec<SocketAddr>>,
    /// A running sled-mode server, measured beside the fleet in the same run.
    #[arg(long)]
    pub(crate) sled: Option<SocketAddr>,
    /// Registrations measured for propagation (half as many per writer for the rate).
    #[arg(long, default_value_t = 1000)]
    pub(crate) registrations: usize,
}
