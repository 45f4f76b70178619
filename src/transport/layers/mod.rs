//! What every connection and call passes through before a service sees it, one concern
//! per module. `server.rs` composes them, in this order:
//!
//! - per connection: [`write_joining`] (small writes leave in one system call) inside
//!   [`idle`]'s `IdleIo` (a connection with no call in flight for the idle timeout is
//!   closed);
//! - per call, outermost first: [`grpc_only`] (405/415 for what is not gRPC),
//!   [`idle`]'s `InFlightLayer` (the call counts until its answer ends), [`deadline`]
//!   (the caller's `grpc-timeout`: DEADLINE_EXCEEDED once it passes),
//!   [`read_deadline`] (the request's message must arrive in time), [`budget`] (the
//!   request bytes all calls may hold);
//! - around the API alone: [`observe`] (each call's log line and metrics).
//!
//! HTTP/2 limits (streams, windows, header list, keep-alive) are set on the server
//! builder in `server.rs`.

pub mod budget;
pub mod deadline;
pub mod grpc_only;
pub mod idle;
pub mod observe;
pub mod read_deadline;
pub mod write_joining;
