//! What every stage of the front's handling of a request reads: its settings, the
//! agent behind it, the runner, the records, the card; and who is asking.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tokio::sync::Mutex;

use crate::front::callers::{parse_role, Verified, Verifier};
use crate::front::card::{CardCache, Served};
use crate::front::card_verify::CardVerifier;
use crate::front::operations;
use crate::front::options::FrontOptions;
use crate::front::records::{Caller, Records, Scope};
use crate::front::upstream::Upstream;
use crate::http1::head::Headers;
use crate::pb::{self, ParticipantRole};
use crate::run::Runner;
use crate::telemetry::Tracer;

/// What every id of a task the front makes begins with, whichever replica made it:
/// a body without it (and without `GetTask`) names no task the front knows.
pub(super) const TASK_ID_PREFIX: &str = "front-";

/// What every stage of a request reads: the settings, the agent, the runner, the
/// records and the card; one per front, shared by its requests.
pub struct Context {
    pub(super) options: FrontOptions,
    pub(super) runner: Arc<Runner>,
    pub(super) upstream: Upstream,
    /// Where clients reach the front.
    pub(super) public: url::Url,
    pub(super) card: Mutex<CardCache>,
    pub(super) records: Arc<Records>,
    /// The merged card last served, made once per change of the agent's card or the
    /// registry.
    pub(super) card_served: std::sync::Mutex<Option<Served>>,
    /// Logged once: a signed upstream card is served unsigned.
    pub(super) signature_logged: AtomicBool,
    /// Draws the ids of the tasks the front makes.
    pub(super) random: ring::rand::SystemRandom,
    /// With traces on: a server span per request, a client span per upstream call.
    pub(super) tracer: Option<Tracer>,
    /// With a JWT key set configured: verifies callers' tokens.
    pub(super) callers: Option<Arc<Verifier>>,
    /// With a card key set configured: verifies the agent's card before it is taken.
    pub(super) cards: Option<CardVerifier>,
    /// The front's paths of the agent's HTTP+JSON interfaces, from its last card: a
    /// tenant's segment follows one of them (`card::rest_bases`).
    pub(super) rest_bases: std::sync::RwLock<Arc<[String]>>,
}

impl Context {
    /// A front for `options`, running commands with `runner`.
    pub(super) fn new(
        options: FrontOptions,
        runner: Arc<Runner>,
        records: Records,
        bound: SocketAddr,
        tracer: Option<Tracer>,
        (callers, cards): (Option<Arc<Verifier>>, Option<CardVerifier>),
    ) -> Self {
        let public = options.public_url.clone().unwrap_or_else(|| {
            let host = if bound.ip().is_unspecified() {
                "127.0.0.1".to_owned()
            } else {
                bound.ip().to_string()
            };
            url::Url::parse(&format!("http://{host}:{}/", bound.port())).expect("a URL")
        });
        let upstream =
            Upstream::new(options.upstream.clone(), options.timeout).traced(tracer.clone());
        Self {
            options,
            runner,
            upstream,
            public,
            card: Mutex::new(CardCache::default()),
            records: Arc::new(records),
            card_served: std::sync::Mutex::new(None),
            signature_logged: AtomicBool::new(false),
            random: ring::rand::SystemRandom::new(),
            tracer,
            callers,
            cards,
            rest_bases: std::sync::RwLock::new(Arc::from([])),
        }
    }

    /// The tenant a request names (`operations::tenant`), its HTTP+JSON path read under the
    /// agent's HTTP+JSON interfaces.
    pub(super) fn tenant(&self, rpc: bool, path: &str, body: &[u8]) -> Option<String> {
        let bases = Arc::clone(&self.rest_bases.read().expect("not poisoned"));
        operations::tenant(rpc, path, &bases, body)
    }

    /// The sender and role for the role rules: a verified token's claims, else a
    /// configured header's, else the default role.
    pub(super) fn sender(
        &self,
        headers: &Headers,
        verified: Option<&Verified>,
    ) -> (pb::Sender, ParticipantRole) {
        if let Some(verified) = verified {
            let role = verified.role.unwrap_or(self.options.default_role);
            let sender = pb::Sender {
                id: verified.sender.clone(),
                role: role.into(),
            };
            return (sender, role);
        }
        let header = |name: &Option<String>| {
            name.as_ref()
                .and_then(|n| headers.get(n.as_str()))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let role = header(&self.options.role_header)
            .and_then(|r| parse_role(&r))
            .unwrap_or(self.options.default_role);
        let id = header(&self.options.sender_header).unwrap_or_default();
        (
            pb::Sender {
                id,
                role: role.into(),
            },
            role,
        )
    }

    /// Whose records a request may touch, within its `tenant`: with a caller identity
    /// configured (a JWT key set, or a sender header), only the caller's own; otherwise
    /// every caller's.
    pub(super) fn scope(
        &self,
        headers: &Headers,
        verified: Option<&Verified>,
        tenant: Option<String>,
    ) -> Scope {
        let caller = if self.callers.is_none() && self.options.sender_header.is_none() {
            Caller::Shared
        } else {
            Caller::Sender(self.sender(headers, verified).0.id)
        };
        Scope::new(caller, tenant)
    }

    /// A new task's id: [`TASK_ID_PREFIX`] and 96 random bits, so that no client can
    /// guess the id of another's task from its own.
    pub(super) fn new_id(&self) -> String {
        let mut bits = [0u8; 12];
        ring::rand::SecureRandom::fill(&self.random, &mut bits).expect("the system's random");
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut id = String::with_capacity(TASK_ID_PREFIX.len() + 2 * bits.len());
        id.push_str(TASK_ID_PREFIX);
        for b in bits {
            id.push(char::from(HEX[usize::from(b >> 4)]));
            id.push(char::from(HEX[usize::from(b & 15)]));
        }
        id
    }
}
