//! ListSpecs answered from bytes encoded once per registry revision.
//!
//! A ListSpecs answer carries every spec plus the card twice as JSON, so building and
//! encoding it costs far more than the call around it. The registry changes rarely and
//! reads are frequent, so the encoded answer to the plain request is kept for the
//! current revision and every call until the next change sends the same bytes; other
//! requests get `convert::list_specs`'s answer, the one rule for both. `routes` sends
//! the ListSpecs path here. Reflection still describes ListSpecs as declared in the
//! proto.

use std::convert::Infallible;
use std::future::ready;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use prost::Message as _;
use tonic::codegen::{http, BoxFuture, Bytes};
use tonic::Status;

use crate::pb;
use crate::registry::{Registry, Snapshot};
use crate::transport::convert::list_specs;
use crate::transport::unary::{frame, serve_decoded, Limits};

/// The method's path.
pub const PATH: &str = "/a2a.commands.v1.CommandService/ListSpecs";

/// ListSpecs over a cache of the latest revision's encoded answer.
#[derive(Clone)]
pub struct CachedListSpecs {
    registry: Arc<Registry>,
    cache: Arc<ListCache>,
}

impl CachedListSpecs {
    /// ListSpecs of `registry`, with an empty cache.
    pub fn new(registry: Arc<Registry>) -> Self {
        Self {
            registry,
            cache: Arc::default(),
        }
    }

    /// Answers one ListSpecs call, accepting requests within `limits`.
    pub fn call(
        &self,
        request: http::Request<tonic::body::Body>,
        limits: Limits,
    ) -> BoxFuture<http::Response<tonic::body::Body>, Infallible> {
        let (registry, cache) = (Arc::clone(&self.registry), Arc::clone(&self.cache));
        Box::pin(async move {
            Ok(
                serve_decoded(request, limits, move |asked: pb::ListSpecsRequest, _| {
                    ready(answer(&registry, &cache, &asked))
                })
                .await,
            )
        })
    }
}

/// The framed answer to `request`: the cached bytes for the plain request.
fn answer(
    registry: &Registry,
    cache: &ListCache,
    request: &pb::ListSpecsRequest,
) -> Result<Bytes, Status> {
    let snapshot = registry.read()?;
    let plain =
        request.known_revision != Some(snapshot.revision()) && !request.include_card_extension;
    if plain {
        cache.answer(&snapshot)
    } else {
        // An unchanged answer is a few bytes, and the card as a message is rarely asked
        // for: both are built each time.
        frame(&list_specs(&snapshot, request).encode_to_vec())
    }
}

/// The framed default ListSpecs answer for one revision.
struct Encoded {
    revision: u64,
    framed: Bytes,
}

/// Keeps the framed answer of the latest revision asked for.
#[derive(Default)]
struct ListCache {
    latest: ArcSwapOption<Encoded>,
}

impl ListCache {
    /// The framed answer for `snapshot`, sent as it is by every call until the next
    /// change.
    fn answer(&self, snapshot: &Snapshot) -> Result<Bytes, Status> {
        if let Some(cached) = self.latest.load().as_ref() {
            if cached.revision == snapshot.revision() {
                return Ok(cached.framed.clone());
            }
        }
        let plain = pb::ListSpecsRequest::default();
        let framed = frame(&list_specs(snapshot, &plain).encode_to_vec())?;
        self.latest.store(Some(Arc::new(Encoded {
            revision: snapshot.revision(),
            framed: framed.clone(),
        })));
        Ok(framed)
    }
}
