//! The route in front of the generated `CommandServiceServer`: each call decoded under
//! this server's limits, undecodable requests given statuses that blame the client,
//! and ListSpecs answered from bytes encoded once per registry revision.
//!
//! A ListSpecs answer carries every spec plus the card twice as JSON, so building and
//! encoding it costs far more than the call around it. The registry changes rarely and
//! reads are frequent, so the encoded answer to the plain request is kept for the
//! current revision and every call until the next change sends the same bytes; other
//! requests get `convert::list_specs`'s answer, the one rule for both. Reflection still
//! describes ListSpecs as declared in the proto.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::ready;

use arc_swap::ArcSwapOption;
use prost::Message as _;
use tokio::task::futures::TaskLocalFuture;
use tonic::codec::{Codec, EncodeBuf, Encoder};
use tonic::codegen::{http, BoxFuture, Bytes, Context, Poll, Service};
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};

use crate::pb::{self, command_service_server::CommandServiceServer};
use crate::registry::{Registry, Snapshot};
use crate::transport::convert::list_specs;
use crate::transport::service::{Api, SERVICE_NAME};
use crate::wire;

const LIST_SPECS_PATH: &str = "/a2a.commands.v1.CommandService/ListSpecs";

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

/// Decodes ListSpecs requests; encodes answers that are already bytes.
#[derive(Clone, Copy, Default)]
struct EncodedCodec;

struct PassThrough;

impl Encoder for PassThrough {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use bytes::BufMut as _;
        dst.put_slice(&item);
        Ok(())
    }
}

impl Codec for EncodedCodec {
    type Encode = Bytes;
    type Decode = pb::ListSpecsRequest;
    type Encoder = PassThrough;
    type Decoder = tonic_prost::ProstDecoder<pb::ListSpecsRequest>;

    fn encoder(&mut self) -> PassThrough {
        PassThrough
    }

    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstDecoder::default()
    }
}

/// The ListSpecs method over the cache.
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
            let snapshot = registry.snapshot();
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

/// Rewrites the statuses tonic gives requests it cannot decode, which blame the server:
/// a request over the size limit is OUT_OF_RANGE there and RESOURCE_EXHAUSTED here;
/// bytes that are not a valid message, a body with no message, and a cut-off length
/// prefix are INTERNAL there and INVALID_ARGUMENT here. (A compressed flag without a
/// `grpc-encoding` stays INTERNAL: the gRPC spec says so.)
/// Such errors come back "trailers-only", with the status in the headers.
fn clarify_decode_errors(
    mut answer: http::Response<tonic::body::Body>,
    max_bytes: usize,
) -> http::Response<tonic::body::Body> {
    let Some(status) = Status::from_header_map(answer.headers()) else {
        return answer;
    };
    let rewritten = match status.code() {
        tonic::Code::OutOfRange if status.message().contains("message length too large") => {
            Status::resource_exhausted(format!(
                "the request is larger than the limit of {max_bytes} bytes (--max-message-bytes)"
            ))
        }
        tonic::Code::Internal if status.message().starts_with("failed to decode") => {
            Status::invalid_argument(format!(
                "the request is not a valid protobuf message: {}",
                status.message()
            ))
        }
        // Framing mistakes are the client's, not the server's.
        tonic::Code::Internal if status.message().starts_with("Missing request message") => {
            Status::invalid_argument(
                "the request has no message: a unary call sends exactly one \
                 (length-prefixed) message, and the body was empty",
            )
        }
        tonic::Code::Internal if status.message().starts_with("Unexpected EOF decoding") => {
            Status::invalid_argument(
                "the request ends inside a message: its 5-byte length prefix or its \
                 bytes are cut short",
            )
        }
        tonic::Code::Internal if status.message().contains("invalid compression flag") => {
            Status::invalid_argument(
                "the request's message prefix has an invalid compressed flag (0 or 1)",
            )
        }
        _ => return answer,
    };
    let headers = answer.headers_mut();
    headers.remove("grpc-message");
    if let Err(e) = rewritten.add_header(headers) {
        tracing::debug!(error = %e, "could not rewrite a status");
    }
    answer
}

/// `CommandService` with ListSpecs served from the cache.
#[derive(Clone)]
pub struct Routes {
    registry: Arc<Registry>,
    cache: Arc<ListCache>,
    generated: CommandServiceServer<Api>,
    max_decoding_message_size: usize,
    max_elements: usize,
}

impl Routes {
    /// Routes for `api`, accepting requests up to `max_decoding_message_size` bytes
    /// and `max_elements` repeated elements.
    pub fn new(api: Arc<Api>, max_decoding_message_size: usize, max_elements: usize) -> Self {
        let generated = CommandServiceServer::from_arc(Arc::clone(&api))
            .max_decoding_message_size(max_decoding_message_size)
            .max_encoding_message_size(usize::MAX);
        Self {
            registry: Arc::clone(api.registry()),
            cache: Arc::default(),
            generated,
            max_decoding_message_size,
            max_elements,
        }
    }
}

impl NamedService for Routes {
    const NAME: &'static str = SERVICE_NAME;
}

impl Service<http::Request<tonic::body::Body>> for Routes {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Clarified;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Clarified {
        let max = self.max_decoding_message_size;
        if request.uri().path() != LIST_SPECS_PATH {
            // The codec reads this server's element limit while it decodes.
            let inner = wire::with_max_elements(self.max_elements, self.generated.call(request));
            return Clarified {
                answer: Routed::Scoped { inner },
                max,
            };
        }
        let method = ListSpecs {
            registry: Arc::clone(&self.registry),
            cache: Arc::clone(&self.cache),
        };
        let inner = Box::pin(async move {
            let mut grpc =
                Grpc::new(EncodedCodec).apply_max_message_size_config(Some(max), Some(usize::MAX));
            Ok(grpc.unary(method, request).await)
        });
        Clarified {
            answer: Routed::Plain { inner },
            max,
        }
    }
}

/// A routed call's answer.
type Answer = BoxFuture<http::Response<tonic::body::Body>, Infallible>;

pin_project_lite::pin_project! {
    /// A routed call's answer, its decode errors clarified (see
    /// [`clarify_decode_errors`]); a generated method's runs under this server's
    /// element limit. Not boxed again: the generated service's future already is.
    pub struct Clarified {
        #[pin]
        answer: Routed,
        max: usize,
    }
}

pin_project_lite::pin_project! {
    #[project = RoutedProjection]
    enum Routed {
        /// A method of the generated service, under the element limit.
        Scoped {
            #[pin]
            inner: TaskLocalFuture<usize, Answer>,
        },
        /// ListSpecs, which decodes nothing the limit bounds.
        Plain { inner: Answer },
    }
}

impl Future for Clarified {
    type Output = Result<http::Response<tonic::body::Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = match this.answer.project() {
            RoutedProjection::Scoped { inner } => ready!(inner.poll(cx))?,
            RoutedProjection::Plain { inner } => ready!(inner.as_mut().poll(cx))?,
        };
        Poll::Ready(Ok(clarify_decode_errors(answer, *this.max)))
    }
}
