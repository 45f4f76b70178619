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
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use prost::Message as _;
use tonic::codegen::{http, BoxFuture, Bytes};
use tonic::server::UnaryService;
use tonic::{Request, Response, Status};

use crate::pb;
use crate::registry::{Registry, Snapshot};
use crate::transport::convert::list_specs;
use crate::transport::encoded::{serve, Limits, ANSWER_BUFFER};

/// The bytes gRPC puts before each message: a compressed flag and a 4-byte length.
const GRPC_PREFIX: usize = 5;

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
        let method = ListSpecs {
            registry: Arc::clone(&self.registry),
            cache: Arc::clone(&self.cache),
        };
        // The plain answer's size, prefix included, as last encoded: it is what most
        // calls send.
        let answer_buffer = self
            .cache
            .latest_len()
            .map_or(ANSWER_BUFFER, |len| (len + GRPC_PREFIX).max(ANSWER_BUFFER));
        Box::pin(async move { Ok(serve(method, request, limits, answer_buffer).await) })
    }
}

/// The encoded default ListSpecs answer for one revision.
struct Encoded {
    revision: u64,
    bytes: Bytes,
}

/// Keeps the encoded answer of the latest revision asked for.
#[derive(Default)]
struct ListCache {
    latest: ArcSwapOption<Encoded>,
}

impl ListCache {
    /// The size of the latest encoded answer, if there is one.
    fn latest_len(&self) -> Option<usize> {
        self.latest.load().as_ref().map(|cached| cached.bytes.len())
    }

    /// The encoded answer for `snapshot`.
    fn answer(&self, snapshot: &Snapshot) -> Bytes {
        if let Some(cached) = self.latest.load().as_ref() {
            if cached.revision == snapshot.revision() {
                return cached.bytes.clone();
            }
        }
        let plain = pb::ListSpecsRequest::default();
        let bytes = Bytes::from(list_specs(snapshot, &plain).encode_to_vec());
        self.latest.store(Some(Arc::new(Encoded {
            revision: snapshot.revision(),
            bytes: bytes.clone(),
        })));
        bytes
    }
}

/// The ListSpecs method over the cache, for one call.
struct ListSpecs {
    registry: Arc<Registry>,
    cache: Arc<ListCache>,
}

impl UnaryService<pb::ListSpecsRequest> for ListSpecs {
    type Response = Bytes;
    type Future = BoxFuture<Response<Bytes>, Status>;

    fn call(&mut self, request: Request<pb::ListSpecsRequest>) -> Self::Future {
        let registry = Arc::clone(&self.registry);
        let cache = Arc::clone(&self.cache);
        Box::pin(async move {
            let request = request.get_ref();
            let snapshot = registry.read()?;
            let plain = request.known_revision != Some(snapshot.revision())
                && !request.include_card_extension;
            let bytes = if plain {
                cache.answer(&snapshot)
            } else {
                // An unchanged answer is a few bytes, and the card as a message is rarely
                // asked for: both are built each time.
                Bytes::from(list_specs(&snapshot, request).encode_to_vec())
            };
            Ok(Response::new(bytes))
        })
    }
}
