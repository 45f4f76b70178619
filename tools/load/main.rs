//! The load tool: measures each RPC against the cheapest call the server answers (the
//! floor, `grpc.health.v1.Health/Check`), on the same server, connections and
//! concurrency, in one run.
//!
//! ```sh
//! cargo run --release --bin a2a-commands-load -- --seconds 5
//! ```
//!
//! By default it starts the real `a2a-commands` binary (next to this one) on a
//! temporary directory; `--addr` targets a running server instead. Every call is
//! bounded in count and time, every response's status is checked, and the tool exits
//! non-zero if any call failed.

mod cli;
mod fleet;
mod measure;
mod report;
mod run;
mod server;
mod startup;
mod workload;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if let (Some(fleet), Some(sled)) = (&args.fleet, args.sled) {
        return runtime.block_on(fleet::run(fleet, sled, args.registrations));
    }
    runtime.block_on(run::run(args))
}
