//! Command bodies that run elsewhere: the clients that call a command's handler, one
//! file per protocol. What a binding is and what a handler may answer are data of the
//! rules (`crate::rules::body`); this layer only performs the calls.

mod call;
mod grpc;
pub mod handlers;
pub mod json_rpc;

pub use handlers::Handlers;
