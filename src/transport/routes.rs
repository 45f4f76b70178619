//! The route in front of the generated `CommandServiceServer`: each call decoded under
//! this server's limits and undecodable requests given statuses that blame the
//! client. ListSpecs goes to its cached answer (`list_specs`); Classify, Execute and
//! Complete to the API with their answers encoded as they are; both on the server's own
//! unary path (`unary`), the rest to the generated service.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::ready;

use tokio::task::futures::TaskLocalFuture;
use tonic::codegen::{http, BoxFuture, Context, Poll, Service};
use tonic::server::NamedService;
use tonic::Status;

use crate::pb::command_service_server::CommandServiceServer;
use crate::transport::direct::Direct;
use crate::transport::list_specs::{self, CachedListSpecs};
use crate::transport::service::{Api, SERVICE_NAME};
use crate::transport::unary::{self, Limits};
use crate::wire;

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
            unary::too_large(max_bytes)
        }
        tonic::Code::Internal if status.message().starts_with("failed to decode") => {
            Status::invalid_argument(format!(
                "the request is not a valid protobuf message: {}",
                status.message()
            ))
        }
        // Framing mistakes are the client's, not the server's.
        tonic::Code::Internal if status.message().starts_with("Missing request message") => {
            unary::no_message()
        }
        tonic::Code::Internal if status.message().starts_with("Unexpected EOF decoding") => {
            unary::cut_short()
        }
        tonic::Code::Internal if status.message().contains("invalid compression flag") => {
            unary::bad_flag()
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

/// `CommandService`, with ListSpecs served from its cache and the per-message methods
/// from their encoded answers.
#[derive(Clone)]
pub struct Routes {
    api: Arc<Api>,
    list_specs: CachedListSpecs,
    generated: CommandServiceServer<Api>,
    limits: Limits,
}

impl Routes {
    /// Routes for `api`, accepting requests up to `max_decoding_message_size` bytes
    /// and `max_elements` repeated elements.
    pub fn new(api: Arc<Api>, max_decoding_message_size: usize, max_elements: usize) -> Self {
        let generated = CommandServiceServer::from_arc(Arc::clone(&api))
            .max_decoding_message_size(max_decoding_message_size)
            .max_encoding_message_size(usize::MAX);
        Self {
            list_specs: CachedListSpecs::new(Arc::clone(api.registry())),
            api,
            generated,
            limits: Limits {
                max_bytes: max_decoding_message_size,
                max_elements,
            },
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
        let path = request.uri().path();
        let inner = if path == list_specs::PATH {
            self.list_specs.call(request, self.limits)
        } else if let Some(method) = Direct::of(path) {
            method.call(&self.api, request, self.limits)
        } else {
            // The codec reads this server's element limit while it decodes.
            let inner =
                wire::with_max_elements(self.limits.max_elements, self.generated.call(request));
            return Clarified {
                answer: Routed::Scoped {
                    inner,
                    max: self.limits.max_bytes,
                },
            };
        };
        Clarified {
            answer: Routed::Plain { inner },
        }
    }
}

/// A routed call's answer.
type Answer = BoxFuture<http::Response<tonic::body::Body>, Infallible>;

pin_project_lite::pin_project! {
    /// A routed call's answer: a generated method's runs under this server's element
    /// limit, its decode errors clarified (see [`clarify_decode_errors`]). Not boxed
    /// again: the generated service's future already is.
    pub struct Clarified {
        #[pin]
        answer: Routed,
    }
}

pin_project_lite::pin_project! {
    #[project = RoutedProjection]
    enum Routed {
        /// A method of the generated service, under the element limit.
        Scoped {
            #[pin]
            inner: TaskLocalFuture<usize, Answer>,
            // The size limit its decode errors are clarified against.
            max: usize,
        },
        /// A method on the server's own unary path (`unary`), which carries the limit.
        Plain { inner: Answer },
    }
}

impl Future for Clarified {
    type Output = Result<http::Response<tonic::body::Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.answer.project() {
            RoutedProjection::Scoped { inner, max } => {
                let answer = ready!(inner.poll(cx))?;
                Poll::Ready(Ok(clarify_decode_errors(answer, *max)))
            }
            // The unary path gives these statuses itself: nothing to look for.
            RoutedProjection::Plain { inner } => inner.as_mut().poll(cx),
        }
    }
}
