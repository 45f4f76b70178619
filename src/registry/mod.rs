//! The ordered command registry: the service's only state, and the declarative commands
//! file that feeds it.
//!
//! Reads take an immutable [`Snapshot`] and never touch sled, so they cost the same
//! whatever the registry's size and never wait for a write. Changes go to one writer
//! thread ([`writer`]) that applies them to the in-memory [`state`], writes them to the
//! [`store`] in one batch and flush, then publishes the new snapshot.
//!
//! In fleet mode ([`fleet`]) the registry is kept in etcd for every replica, and the
//! data directory holds this sidecar's copy of it.
//!
//! The modules below import one another only downwards: `handle` → `writer` → `fleet`,
//! `records` → `store` → `durable`, `seal` → `state` → `snapshot`; `commands_file` sits beside `handle` and uses it;
//! `prompt_files` reads Claude Code's and Gemini CLI's command folders into declared
//! commands. Nothing here imports this file's re-exports.

pub mod commands_file;
mod durable;
pub mod fleet;
pub mod handle;
pub mod prompt_files;
pub mod records;
pub mod seal;
pub mod snapshot;
pub mod state;
pub mod store;
mod writer;

pub use fleet::{EtcdTls, FleetOptions};
pub use handle::Registry;
pub use snapshot::{Registered, Snapshot, Source};
pub use state::{Applied, Change, ChangeResult, Declared};
pub use store::{salvage, OpenError, Options, Salvaged};
