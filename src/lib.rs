//! a2a-commands: the A2A Commands extension v1 behind one gRPC API.
//!
//! See `ARCHITECTURE.md` for the map of modules and the invariants they keep.
#![warn(missing_docs)]

pub mod api;
pub mod auth;
pub mod builtins;
pub mod card;
pub mod classify;
pub mod commands_file;
pub mod config;
pub mod error;
pub mod event;
pub mod execute;
pub mod handlers;
pub mod json;
pub mod list_route;
pub mod registry;
pub mod server;
pub mod spec;

/// The generated protobuf and gRPC code for `a2a.commands.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("a2a.commands.v1");

    /// The encoded descriptors of our protos (and the well-known types they import),
    /// served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("a2a_commands_descriptor");
}
