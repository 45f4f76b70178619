//! The front: this sidecar in front of an A2A agent, as its proxy. Commands are
//! answered here, with the same rules Execute has (`run`); everything else goes to the
//! agent as it came. A2A's JSON is `a2a`'s; the card merge is `card`'s; the agent is
//! reached through `upstream`; what the front keeps is `records`'; `sign` signs the
//! merged card and `card_verify` checks the agent's (with key sets `jwks` keeps fresh);
//! `v03` reads and writes A2A 0.3's JSON for clients and agents still on it; `callers`
//! says who is asking (the default role, a proxy's header, or a verified JWT); `server`
//! is the listener that puts them together.

pub mod a2a;
pub mod answer;
pub mod callers;
pub mod card;
pub mod card_serving;
pub mod card_verify;
pub mod classify;
pub mod commands;
pub mod context;
pub mod forward;
pub mod grpc;
pub mod grpc_agent;
pub mod grpc_calls;
pub mod handled;
pub mod join;
pub mod json_text;
pub mod jwks;
pub mod limits;
pub mod operations;
pub mod options;
pub mod pool;
pub mod reading;
pub mod records;
pub mod server;
pub mod sign;
pub mod tasks;
pub mod upstream;
pub mod v03;

pub use options::FrontOptions;
pub use server::Front;
