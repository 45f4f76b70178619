//! The gRPC transport: everything that knows about tonic, HTTP/2 and statuses.
//!
//! `service` implements `CommandService` by translating requests into calls of the
//! rules, the registry and the handler clients; `routes` sits in front of it (clear
//! statuses for undecodable requests; ListSpecs to `list_specs`, which answers from
//! bytes cached per revision; Classify, Execute and Complete to the bytes `answers`
//! writes from the rules' output; these four on `unary`, the server's own unary path, the three on every message in
//! `direct`);
//! `layers` are what every connection and call passes first, one concern each, and the
//! observing layer that logs and counts calls (written out by `call_log`); `server`
//! wires the listeners, health, reflection, TLS and drain (`listen` builds their parts;
//! `front_listener` starts and serves the front, on `front_loops`). `status` is the one place
//! errors become gRPC statuses; `watch_specs` streams the registry, and `trace` reads a
//! call's trace context.

pub mod answers;
pub mod auth;
pub mod call_log;
pub mod convert;
pub mod direct;
pub mod front_listener;
pub mod front_loops;
pub mod layers;
pub mod list_specs;
pub mod listen;
pub mod routes;
pub mod server;
pub mod service;
pub mod status;
pub mod tls;
pub mod trace;
pub mod unary;
pub mod watch_specs;
