//! Unary methods whose answers are bytes already encoded: ListSpecs (cached per
//! revision, `list_specs`) and Classify, Execute and Complete (written by `answers`).
//!
//! tonic's `Grpc` still reads the request, decodes it under this server's limits (the
//! element bound given to the decoder itself, not set around the call) and frames the
//! answer; only the encoding is ours. `routes` sends these paths here; everything else
//! goes to the generated service, which answers the same for anyone serving `Api`
//! directly.

use std::convert::Infallible;
use std::future::{ready, Future, Ready};
use std::marker::PhantomData;
use std::sync::Arc;

use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic::codegen::{http, BoxFuture};
use tonic::server::{Grpc, UnaryService};
use tonic::{Request, Response, Status};

use crate::pb;
use crate::transport::service::{answer, Api, SERVICE_NAME};
use crate::transport::trace::{deadline_of, trace_of};
use crate::wire::{BoundedDecoder, Scanned};

/// What this server accepts of a request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The most bytes (`--max-message-bytes`).
    pub max_bytes: usize,
    /// The most repeated elements (`--max-request-elements`).
    pub max_elements: usize,
}

/// tonic's own first size of an answer's buffer.
pub const ANSWER_BUFFER: usize = 8 * 1024;
/// tonic's own size at which a growing answer's buffer is sent before more is written.
const YIELD_THRESHOLD: usize = 32 * 1024;

/// Serves one unary call of `method`, whose answers are encoded bytes (`A`: a cached
/// `Bytes`, or a `Vec` written for this call), framed in a buffer of `answer_buffer`
/// bytes at first: an answer known to be larger gets its size, so that the buffer is
/// not grown (and what it holds copied) as the answer is written into it.
pub fn serve<U, A, S>(
    method: S,
    request: http::Request<tonic::body::Body>,
    limits: Limits,
    answer_buffer: usize,
) -> impl Future<Output = http::Response<tonic::body::Body>>
where
    U: prost::Message + Default + Scanned + Send + 'static,
    A: AsRef<[u8]> + Send + 'static,
    S: UnaryService<U, Response = A>,
{
    let codec = EncodedCodec::<U, A> {
        max_elements: limits.max_elements,
        answer_buffer,
        types: PhantomData,
    };
    let mut grpc =
        Grpc::new(codec).apply_max_message_size_config(Some(limits.max_bytes), Some(usize::MAX));
    async move { grpc.unary(method, request).await }
}

/// Decodes requests of type `U` (with the element bound); sends answers `A` that are
/// already bytes.
struct EncodedCodec<U, A> {
    max_elements: usize,
    answer_buffer: usize,
    types: PhantomData<fn(A) -> U>,
}

/// Writes an encoded answer as it is, into a buffer of `answer_buffer` bytes at first.
struct PassThrough<A> {
    answer_buffer: usize,
    writes: PhantomData<fn(A)>,
}

impl<A: AsRef<[u8]>> Encoder for PassThrough<A> {
    type Item = A;
    type Error = Status;

    fn encode(&mut self, item: A, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use bytes::BufMut as _;
        dst.put_slice(item.as_ref());
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::new(self.answer_buffer, YIELD_THRESHOLD)
    }
}

impl<U, A> Codec for EncodedCodec<U, A>
where
    U: prost::Message + Default + Scanned + Send + 'static,
    A: AsRef<[u8]> + Send + 'static,
{
    type Encode = A;
    type Decode = U;
    type Encoder = PassThrough<A>;
    type Decoder = BoundedDecoder<U>;

    fn encoder(&mut self) -> PassThrough<A> {
        PassThrough {
            answer_buffer: self.answer_buffer,
            writes: PhantomData,
        }
    }

    fn decoder(&mut self) -> BoundedDecoder<U> {
        BoundedDecoder::with_max(self.max_elements)
    }
}

/// Classify, Execute and Complete, the methods on every message and keystroke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direct {
    /// `Classify`.
    Classify,
    /// `Execute`.
    Execute,
    /// `Complete`.
    Complete,
}

impl Direct {
    /// The method `path` calls, if it is one of these.
    pub fn of(path: &str) -> Option<Self> {
        let method = path
            .strip_prefix('/')?
            .strip_prefix(SERVICE_NAME)?
            .strip_prefix('/')?;
        match method {
            "Classify" => Some(Self::Classify),
            "Execute" => Some(Self::Execute),
            "Complete" => Some(Self::Complete),
            _ => None,
        }
    }

    /// Answers one call of this method on `api`.
    pub fn call(
        self,
        api: &Arc<Api>,
        request: http::Request<tonic::body::Body>,
        limits: Limits,
    ) -> BoxFuture<http::Response<tonic::body::Body>, Infallible> {
        let method = Method(Arc::clone(api));
        match self {
            Self::Classify => Box::pin(async move {
                Ok(
                    serve::<pb::ClassifyRequest, _, _>(method, request, limits, ANSWER_BUFFER)
                        .await,
                )
            }),
            Self::Execute => Box::pin(async move {
                Ok(serve::<pb::ExecuteRequest, _, _>(method, request, limits, ANSWER_BUFFER).await)
            }),
            Self::Complete => Box::pin(async move {
                Ok(
                    serve::<pb::CompleteRequest, _, _>(method, request, limits, ANSWER_BUFFER)
                        .await,
                )
            }),
        }
    }
}

/// One call of a direct method on the API.
struct Method(Arc<Api>);

impl UnaryService<pb::ClassifyRequest> for Method {
    type Response = Vec<u8>;
    type Future = Ready<Result<Response<Vec<u8>>, Status>>;

    fn call(&mut self, request: Request<pb::ClassifyRequest>) -> Self::Future {
        ready(answer(self.0.classify(request.get_ref())))
    }
}

impl UnaryService<pb::ExecuteRequest> for Method {
    type Response = Vec<u8>;
    type Future = BoxFuture<Response<Vec<u8>>, Status>;

    fn call(&mut self, request: Request<pb::ExecuteRequest>) -> Self::Future {
        let api = Arc::clone(&self.0);
        Box::pin(async move {
            let trace = trace_of(request.metadata());
            let deadline = deadline_of(&request);
            answer(api.execute(request.get_ref(), &trace, deadline).await)
        })
    }
}

impl UnaryService<pb::CompleteRequest> for Method {
    type Response = Vec<u8>;
    type Future = BoxFuture<Response<Vec<u8>>, Status>;

    fn call(&mut self, request: Request<pb::CompleteRequest>) -> Self::Future {
        let api = Arc::clone(&self.0);
        Box::pin(async move {
            let trace = trace_of(request.metadata());
            answer(api.complete(request.get_ref(), &trace).await)
        })
    }
}
