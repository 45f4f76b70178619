//! a2a-commands: the A2A Commands extension v1 behind one gRPC API.
//!
//! The modules are layers, and every import points down (`tests/layers.rs` checks it):
//!
//! 1. [`pb`] (the generated protobuf types), [`wire`] (their codec), [`error`],
//!    [`codes`] (gRPC code names) and [`metrics`]: shared by all.
//! 2. [`rules`]: the extension's rules, pure, no I/O.
//! 3. [`registry`] (the ordered, durable state) and [`bodies`] (handler clients).
//! 4. [`run`]: running commands (Execute's work) for every transport, over the registry
//!    and the handlers; [`config`]: flags, environment and files resolved into settings.
//! 5. [`front`]: the A2A proxy in front of an agent (commands answered with `run`);
//!    [`transport`]: the gRPC service, routes, auth, TLS and server wiring.
//! 6. [`ctl`]: the admin CLI (a client of the API), beside the server binary.
//!
//! See `ARCHITECTURE.md` for the map and the invariants.
#![warn(missing_docs)]

pub mod bodies;
pub mod codes;
pub mod config;
pub mod ctl;
pub mod error;
pub mod front;
pub mod http1;
pub mod metrics;
pub mod registry;
pub mod rules;
pub mod run;
pub mod telemetry;
pub mod transport;
pub mod views;
pub mod wire;

/// The generated protobuf and gRPC code for `a2a.commands.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("a2a.commands.v1");

    /// The encoded descriptors of our protos (and the well-known types they import),
    /// served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("a2a_commands_descriptor");

    /// A2A 1.0's messages as the front's gRPC binding uses them (`proto/lf/a2a/v1`),
    /// with serde in protobuf's canonical JSON.
    pub mod a2a_v1 {
        include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
        include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
    }

    /// etcd's v3 API as the fleet store uses it (`proto/etcd/etcd.proto`): a client only.
    pub mod etcd {
        tonic::include_proto!("etcdserverpb");
    }
}
