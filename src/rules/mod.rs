//! The Commands extension's rules: pure functions and validated types, no I/O.
//!
//! Everything the extension and the reference harness decide lives here: what a valid
//! command name and spec are, which messages are commands, the checked task view, the
//! built-ins and their replies, who may run what, the reply event and the card. Nothing
//! here imports the registry, the transport, the handler clients or tokio; a test
//! (`tests/layers.rs`) keeps it so.

pub mod body;
pub mod builtins;
pub mod card;
pub mod complete;
pub mod event;
pub mod execute;
pub mod parse;
pub mod policy;
pub mod prompt;
pub mod reply;
pub mod spec;
pub mod structs;
pub mod task;
pub mod text;
