//! How the front is set up: its listener, the agent behind it, and who is asking.

use std::net::SocketAddr;
use std::time::Duration;

use crate::front::sign::Signer;
use crate::pb::ParticipantRole;
use crate::registry::records::Limits;

/// The front's settings (flags, `A2A_COMMANDS_FRONT_*` variables, the config file's
/// `front` object).
#[derive(Clone, Debug)]
pub struct FrontOptions {
    /// Where A2A clients connect.
    pub listen: SocketAddr,
    /// The agent's base URL: its card is at `<upstream>/.well-known/agent-card.json`,
    /// and every request goes there, to the same path.
    pub upstream: url::Url,
    /// Where clients reach the front (what the card's interfaces say); `None`: the
    /// listener's address.
    pub public_url: Option<url::Url>,
    /// How long an upstream call may take before the client is answered with an error
    /// (for a stream: until its answer starts).
    pub timeout: Duration,
    /// How long a stream from the agent may send nothing before the front ends it.
    pub stream_idle: Duration,
    /// Largest request body read, in bytes; larger ones are refused, nothing forwarded.
    pub max_body_bytes: usize,
    /// How long an answer may wait for its client to take any of it.
    pub send_timeout: Duration,
    /// Most client connections held open at once.
    pub max_connections: usize,
    /// How long the upstream's card is kept when its answer says nothing of caching.
    pub card_refresh: Duration,
    /// How many task records the front keeps, and for how long after their last use.
    pub records: Limits,
    /// The key the merged card is signed with; none: served without signatures.
    pub signing: Option<Signing>,
    /// The sender's role when nothing configured says otherwise.
    pub default_role: ParticipantRole,
    /// A request header, set by an authenticating proxy in front, that names the
    /// sender's role (`assignee`, `reporter`, `watcher`, `admin`, `none`); read only
    /// when configured.
    pub role_header: Option<String>,
    /// A request header, set by an authenticating proxy, that names the sender.
    pub sender_header: Option<String>,
    /// The agent's gRPC address (`host:port`), when configured; `None`: its card's gRPC
    /// interface, if that is on the agent's own host.
    pub upstream_grpc: Option<String>,
    /// Which A2A versions the agent serves, when configured; `None`: as its card says.
    pub upstream_versions: Option<crate::front::card::Versions>,
    /// Callers' JWTs, verified: their claims name the sender and role.
    pub jwt: Option<crate::front::callers::JwtOptions>,
    /// The key set the agent's card must be signed by, and how long a fetched one is
    /// kept: a card that does not verify is not served.
    pub card_keys: Option<(crate::front::jwks::KeySource, std::time::Duration)>,
}

/// The card's signing key, as configured, and loaded.
#[derive(Clone, Debug)]
pub struct Signing {
    /// The PKCS#8 PEM file.
    pub key_file: std::path::PathBuf,
    /// The key's id (`kid`) in the signature's header.
    pub key_id: String,
    /// Where the public key set is (`jku`), if said.
    pub jku: Option<String>,
    /// The key, loaded.
    pub signer: std::sync::Arc<Signer>,
}
