//! Every default of `serve`, stated once. The flags show them (`serve --help`, and the
//! README's tables, which a test holds to `--help`); [`Limits::default`] and
//! `Settings::with_defaults` are built from them; the handler defaults are
//! `HandlerPolicy::default`'s and the element limit is the codec's.
//!
//! [`Limits::default`]: crate::config::Limits

use std::time::Duration;

use crate::rules::body::HandlerPolicy;

/// The API's address.
pub const LISTEN: &str = "127.0.0.1:50051";
/// The server `ctl` talks to: the API's default address.
pub const CTL_ADDR: &str = "http://127.0.0.1:50051";
/// The health-only listener's address.
pub const HEALTH_LISTEN: &str = "0.0.0.0:50052";
/// The metrics listener: none.
pub const METRICS_LISTEN: &str = "off";
/// How often the commands file is checked, in milliseconds.
pub const COMMANDS_FILE_POLL_MS: u64 = 1_000;
/// Log one successful call in this many.
pub const CALL_LOG_SAMPLE: u64 = 1;
/// Most commands the registry holds.
pub const MAX_COMMANDS: usize = 10_000;
/// sled's page cache, in MiB.
pub const CACHE_MIB: u64 = 8;
/// Largest request accepted, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;
/// Most repeated elements in one request: the codec's own default.
pub const MAX_REQUEST_ELEMENTS: usize = crate::wire::DEFAULT_MAX_ELEMENTS;
/// Memory all requests in flight may take, in MiB.
pub const MAX_REQUEST_MEMORY_MIB: usize = 32;
/// HTTP/2 streams per connection.
pub const MAX_CONCURRENT_STREAMS: u32 = 128;
/// Largest HTTP/2 header list, in bytes.
pub const MAX_HEADER_LIST_BYTES: u32 = 16 * 1024;
/// HTTP/2 keep-alive ping interval, in seconds.
pub const KEEPALIVE_SECONDS: u64 = 30;
/// How long a ping may go unanswered, in seconds.
pub const KEEPALIVE_TIMEOUT_SECONDS: u64 = 20;
/// How long a connection may idle, in seconds.
pub const IDLE_TIMEOUT_SECONDS: u64 = 300;
/// How long a started request's message may take to arrive, in seconds.
pub const REQUEST_READ_TIMEOUT_SECONDS: u64 = 30;
/// Longest wait for calls in flight at shutdown, in seconds.
pub const DRAIN_SECONDS: u64 = 10;

/// The fleet's key prefix in etcd.
pub const FLEET_PREFIX: &str = "/a2a-commands/";
/// How long one etcd call may take, in milliseconds.
pub const FLEET_TIMEOUT_MS: u64 = 5_000;
/// Most operations in one etcd transaction (etcd's own default `--max-txn-ops`).
pub const FLEET_MAX_TXN_OPS: usize = 128;
/// Largest etcd request, in bytes (etcd's own default `--max-request-bytes`, 1.5 MiB).
pub const FLEET_MAX_REQUEST_BYTES: usize = 1_572_864;

/// The front's listener.
pub const FRONT_LISTEN: &str = "0.0.0.0:8080";
/// A call to the front's agent: its timeout.
pub const FRONT_TIMEOUT: Duration = Duration::from_secs(30);
/// A stream from the front's agent: its longest silence (Envoy's stream idle timeout).
pub const FRONT_STREAM_IDLE: Duration = Duration::from_secs(300);
/// The largest request body the front takes.
pub const FRONT_MAX_BODY_BYTES: usize = 4 << 20;
/// How long the front's answer may wait for its client to take any of it (nginx's
/// `send_timeout`).
pub const FRONT_SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// Most client connections the front holds open at once.
pub const FRONT_MAX_CONNECTIONS: usize = 10_000;
/// How long an agent card without caching headers is kept.
pub const FRONT_CARD_REFRESH: Duration = Duration::from_secs(30);
/// Most task records the front keeps.
pub const FRONT_RECORDS_MAX: usize = 10_000;
/// How long the front keeps a task record after its last use.
pub const FRONT_RECORDS_EXPIRY: Duration = Duration::from_secs(24 * 3600);
/// The id of the key the front signs its card with, when none is given.
pub const FRONT_SIGNING_KEY_ID: &str = "a2a-commands-front";
/// The role of a front's caller that nothing else names.
pub const FRONT_DEFAULT_ROLE: &str = "watcher";
/// The JWT claim that names a front's caller.
pub const FRONT_JWT_SENDER_CLAIM: &str = "sub";
/// The JWT claim that names a front caller's role.
pub const FRONT_JWT_ROLE_CLAIM: &str = "role";
/// How long a fetched JWK set is kept.
pub const FRONT_JWT_REFRESH: Duration = Duration::from_secs(300);

/// The handler defaults (timeouts, answer size, concurrency).
pub fn handlers() -> HandlerPolicy {
    HandlerPolicy::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctl_talks_to_the_default_listener() {
        assert_eq!(CTL_ADDR, format!("http://{LISTEN}"));
    }
}
