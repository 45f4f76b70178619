//! `a2a-commands ctl`: manage a running server over its gRPC API from the same binary
//! (so it works with `kubectl exec` in the distroless image), check a commands file
//! offline, and list a fleet's sidecars from etcd. Every failure is one line:
//! `a2a-commands ctl: <what>`. One file per group of verbs; `run` dispatches.

mod check;
mod connect;
mod fleet;
mod imports;
mod listing;
mod output;
mod register;
mod run;

pub use connect::server_url;
pub use output::write_out;
pub use run::run;
