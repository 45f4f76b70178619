//! The unary methods this server answers on its own path, not tonic's generic one:
//! ListSpecs (bytes cached per revision, `list_specs`) and Classify, Execute and
//! Complete (bytes written by `answers`), the calls made on every message and keystroke.
//!
//! tonic's unary path reads a request through a general stream decoder, builds a
//! `tonic::Request` of it (the headers copied into its metadata), and frames the answer
//! through a general stream encoder into a buffer of 8 KiB. Here the request's one
//! message is taken where it lies in the body's bytes (under this server's size and
//! element limits) and read there: Classify's, Execute's and Complete's as borrowed
//! views (`views`), ListSpecs' decoded by prost. The answer, written after room for gRPC's
//! prefix, is framed where it lies. What a caller sees is
//! what tonic's path gave it, with the statuses `routes` gives the generated service's
//! methods for the client's mistakes; `tests/wire_errors.rs` and the answers' byte pins
//! hold both paths to it. `routes` sends these paths here; everything else goes to the
//! generated service, which answers the same for anyone serving `Api` directly.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{BufMut as _, Bytes, BytesMut};
use http_body::Frame;
use http_body_util::BodyExt as _;
use tonic::body::Body;
use tonic::codegen::http;
use tonic::{Code, Status};

use crate::bodies::Trace;
use crate::error::Error;
use crate::transport::trace::{deadline_of, CallHeaders};
use crate::wire::{decode_bounded, Answer, Scanned, GRPC_PREFIX};

/// What this server accepts of a request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The most bytes (`--max-message-bytes`).
    pub max_bytes: usize,
    /// The most repeated elements (`--max-request-elements`).
    pub max_elements: usize,
}

/// The bytes gRPC puts before each message: a compressed flag and a 4-byte length.
pub const PREFIX: usize = GRPC_PREFIX;

// A header name made once, not parsed from a `&str` on every call.
const GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// Serves one unary call of a method whose request is a `U`: the request's one message,
/// as its bytes, goes to `call` with what the call came with ([`Called`]), and `call`
/// reads it (with [`decode_bounded`] or [`read_bounded`] under `limits`); its answer is a
/// framed message ([`frame`]). A status, from reading or from `call`, is answered
/// trailers-only.
pub async fn serve<U, F, A>(
    request: http::Request<Body>,
    limits: Limits,
    call: F,
) -> http::Response<Body>
where
    U: prost::Message + Default + Scanned,
    F: FnOnce(Bytes, Called) -> A,
    A: Future<Output = Result<Bytes, Status>>,
{
    let (head, body) = request.into_parts();
    let headers = CallHeaders::of(&head.headers);
    if let Err(status) = refuse_compression(headers.encoding) {
        return status.into_http();
    }
    let called = Called {
        trace: headers.trace(),
        deadline: deadline_of(&head.extensions),
    };
    let message = match read_one::<U>(body, limits).await {
        Ok(message) => message,
        Err(status) => return status.into_http(),
    };
    match call(message, called).await {
        Ok(framed) => answered(framed),
        Err(status) => status.into_http(),
    }
}

/// What a call came with, besides its message.
pub struct Called {
    /// The caller's W3C trace context.
    pub trace: Trace,
    /// When the caller stops waiting (its `grpc-timeout`).
    pub deadline: Option<Instant>,
}

/// As [`serve`], for a method that takes its request decoded by prost.
pub async fn serve_decoded<U, F, A>(
    request: http::Request<Body>,
    limits: Limits,
    call: F,
) -> http::Response<Body>
where
    U: prost::Message + Default + Scanned,
    F: FnOnce(U, Called) -> A,
    A: Future<Output = Result<Bytes, Status>>,
{
    serve::<U, _, _>(request, limits, |bytes, called| async move {
        call(decode_bounded(&bytes, limits.max_elements)?, called).await
    })
    .await
}

/// `message` as one gRPC message: the compressed flag (0, never compressed) and its
/// length before its bytes.
pub fn frame(message: &[u8]) -> Result<Bytes, Status> {
    let length = u32::try_from(message.len()).map_err(|_| too_long(message.len()))?;
    let mut framed = BytesMut::with_capacity(PREFIX + message.len());
    framed.put_u8(0);
    framed.put_u32(length);
    framed.put_slice(message);
    Ok(framed.freeze())
}

/// An answer longer than a gRPC message can say.
fn too_long(length: usize) -> Status {
    Status::resource_exhausted(format!(
        "the answer is {length} bytes, more than a gRPC message can hold"
    ))
}

/// A method's encoded answer, framed where it was written; an error as its status.
pub(crate) fn framed(result: Result<Answer, Error>) -> Result<Bytes, Status> {
    let answer = result.map_err(Status::from)?;
    let length = answer.message().len();
    answer.framed().ok_or_else(|| too_long(length))
}

/// The answer to a call that succeeded: `framed` in one data frame, then the trailers
/// with `grpc-status: 0`; the headers are tonic's (`content-type: application/grpc`).
fn answered(framed: Bytes) -> http::Response<Body> {
    let mut response = http::Response::new(Body::new(OneMessage {
        message: Some(framed),
        ended: false,
    }));
    *response.version_mut() = http::Version::HTTP_2;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    response
}

/// A unary answer's body: one message, then the OK status.
struct OneMessage {
    message: Option<Bytes>,
    ended: bool,
}

impl http_body::Body for OneMessage {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if let Some(message) = this.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        if this.ended {
            return Poll::Ready(None);
        }
        this.ended = true;
        let mut trailers = http::HeaderMap::with_capacity(1);
        trailers.insert(GRPC_STATUS, http::HeaderValue::from_static("0"));
        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.ended
    }
}

/// Reads a unary request's body to its end: its first message's bytes, left for the
/// method to read. As tonic's unary path, messages after the first are decoded too (their
/// errors are the call's, after the first's) and dropped; the body's trailers are not
/// read by any method, and are dropped.
async fn read_one<U>(mut body: Body, limits: Limits) -> Result<Bytes, Status>
where
    U: prost::Message + Default + Scanned,
{
    let mut reading = Reading::<U> {
        limits,
        first: None,
        first_checked: false,
        rest: BytesMut::new(),
        decodes: PhantomData,
    };
    loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    reading.push(data)?;
                }
            }
            // A request its caller cancelled has ended, as tonic reads it.
            Some(Err(status)) if status.code() == Code::Cancelled => break,
            Some(Err(status)) => {
                // tonic would have decoded a whole first message before this frame.
                reading.check_first()?;
                return Err(status);
            }
            None => break,
        }
    }
    reading.end()
}

/// tonic's answer to a compressed request (`grpc-encoding` other than identity) on a
/// server that accepts none (this one).
fn refuse_compression(encoding: Option<&http::HeaderValue>) -> Result<(), Status> {
    let Some(encoding) = encoding else {
        return Ok(());
    };
    if encoding.as_bytes() == b"identity" {
        return Ok(());
    }
    let named = String::from_utf8_lossy(encoding.as_bytes());
    let mut status = Status::unimplemented(format!(
        "Content is compressed with `{named}` which isn't supported"
    ));
    status.metadata_mut().insert(
        "grpc-accept-encoding",
        tonic::metadata::MetadataValue::from_static("identity"),
    );
    Err(status)
}

/// A request body being read: the first message's bytes, whether they were decoded yet,
/// and the bytes of a message not yet whole.
struct Reading<U> {
    limits: Limits,
    first: Option<Bytes>,
    /// Whether `first` was decoded here: only when a later message (or an error) needs
    /// its error said first. Otherwise the method reads it, once.
    first_checked: bool,
    rest: BytesMut,
    decodes: PhantomData<U>,
}

impl<U: prost::Message + Default + Scanned> Reading<U> {
    /// Takes in one data frame: every message it completes is taken. A frame that starts
    /// on a message's boundary (the usual case: one frame, one message) is taken where it
    /// lies, with no copy; only what is left of it is copied.
    fn push(&mut self, data: Bytes) -> Result<(), Status> {
        if self.rest.is_empty() {
            let used = self.take(&data)?;
            self.rest.extend_from_slice(&data[used..]);
        } else {
            self.rest.extend_from_slice(&data);
            // A message arriving in many frames is only gathered until it is whole (or
            // its prefix is wrong): taking it copies what follows it, at most a frame.
            if !self.takes(&self.rest) {
                return Ok(());
            }
            let rest = std::mem::take(&mut self.rest).freeze();
            let used = self.take(&rest)?;
            self.rest.extend_from_slice(&rest[used..]);
        }
        Ok(())
    }

    /// Whether [`take`](Self::take) has something to do at the start of `bytes`: a whole
    /// message, or a prefix it refuses.
    fn takes(&self, bytes: &[u8]) -> bool {
        let Some(prefix) = bytes.get(..PREFIX) else {
            return false;
        };
        let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        prefix[0] != 0 || length > self.limits.max_bytes || bytes.len() >= PREFIX + length
    }

    /// Takes every whole message at the start of `bytes`; how many bytes they took.
    fn take(&mut self, bytes: &Bytes) -> Result<usize, Status> {
        let mut used = 0;
        while let Some(prefix) = bytes.get(used..used + PREFIX) {
            match prefix[0] {
                0 => {}
                // Any `grpc-encoding` but identity was refused before the body was read.
                1 => {
                    self.check_first()?;
                    return Err(Status::internal(
                        "protocol error: received message with compressed-flag but no \
                         grpc-encoding was specified",
                    ));
                }
                _ => {
                    self.check_first()?;
                    return Err(bad_flag());
                }
            }
            let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
            if length > self.limits.max_bytes {
                self.check_first()?;
                return Err(too_large(self.limits.max_bytes));
            }
            let start = used + PREFIX;
            if bytes.len() < start + length {
                break;
            }
            let message = bytes.slice(start..start + length);
            if self.first.is_none() {
                self.first = Some(message);
            } else {
                self.check_first()?;
                decode_bounded::<U>(&message, self.limits.max_elements)?;
            }
            used = start + length;
        }
        Ok(used)
    }

    /// Decodes the first message, if there is one and it was not yet: tonic's path
    /// decodes each message as it completes, so its error comes before any later one.
    fn check_first(&mut self) -> Result<(), Status> {
        if let (Some(first), false) = (&self.first, self.first_checked) {
            decode_bounded::<U>(first, self.limits.max_elements)?;
            self.first_checked = true;
        }
        Ok(())
    }

    /// The body has ended: its first message, unless it had none or ended inside one.
    fn end(mut self) -> Result<Bytes, Status> {
        if !self.rest.is_empty() {
            self.check_first()?;
            return Err(cut_short());
        }
        self.first.ok_or_else(no_message)
    }
}

/// A request over the size limit (`--max-message-bytes`).
pub(crate) fn too_large(max_bytes: usize) -> Status {
    Status::resource_exhausted(format!(
        "the request is larger than the limit of {max_bytes} bytes (--max-message-bytes)"
    ))
}

/// A unary request whose body held no message.
pub(crate) fn no_message() -> Status {
    Status::invalid_argument(
        "the request has no message: a unary call sends exactly one (length-prefixed) \
         message, and the body was empty",
    )
}

/// A request whose body ended inside a message.
pub(crate) fn cut_short() -> Status {
    Status::invalid_argument(
        "the request ends inside a message: its 5-byte length prefix or its bytes are cut \
         short",
    )
}

/// A message prefix whose compressed flag is neither 0 nor 1.
pub(crate) fn bad_flag() -> Status {
    Status::invalid_argument("the request's message prefix has an invalid compressed flag (0 or 1)")
}
