//! Command bodies that run elsewhere: the clients that call a command's handler, one
//! file per protocol (gRPC, JSON-RPC, MCP). What a binding is and what a handler may
//! answer are data of the rules (`crate::rules::body`); this layer only performs the
//! calls.

pub mod call;
mod grpc;
pub mod handlers;
pub mod json_rpc;
mod mcp;
mod spans;

pub use call::Trace;
pub use handlers::Handlers;
