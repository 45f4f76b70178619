//! Running commands, for every transport: what Execute does between a request and its
//! answer (the snapshot, the rules, a handler or MCP prompt call, the reply and its
//! changes), in one place. The gRPC service and the A2A front both call it and each
//! writes the answer in its own shape; neither copies a rule.

pub mod complete;
pub mod execute;

pub use complete::CompleteAsked;
pub use execute::{now, Asked, Ran, Runner, Whole};
