//! What every connection and every request passes before a service sees it: requests
//! that are not gRPC get the HTTP answer the gRPC spec gives (405 for a method other than
//! POST, 415 for another content type); the request bytes held in memory by all calls
//! together are bounded; and a connection with no call in flight for the idle timeout
//! is closed. HTTP/2 limits (streams, windows, header list, keep-alive) are set on the
//! server builder in `server.rs`.
//!
//! The memory budget: before a call runs, its request's first frame is read to learn
//! the message's length (the gRPC 5-byte prefix), and what the request may cost in
//! memory ([`request_cost`]: its bytes twice, as received and decoded, plus what its
//! elements can cost once decoded) is taken from a process-wide budget, all at once,
//! until the call's answer starts (so an Execute waiting for a handler keeps holding
//! it). A call that does not fit is answered RESOURCE_EXHAUSTED at once, unread.
//! Waiting instead would deadlock: the unread data of waiting calls fills the
//! connection's HTTP/2 window, and the calls holding the budget could not finish
//! reading theirs.
//!
//! Idle tracking: each accepted connection is an [`IdleIo`] whose connect info (which
//! tonic puts on every request) is the connection's [`Activity`]. The [`Guard`] layer
//! counts the calls in flight on it, each until its response body ends; when none is
//! left for the timeout, the connection's next read reports the end of the stream and
//! hyper closes it. A connection's first idle period starts when it is accepted, so one
//! that never makes a call (or never finishes its HTTP/2 preface) is closed too.
//!
//! Writes: h2 writes an answer's frames as they are framed; [`IdleIo`] holds writes up
//! to 4 KiB until the next larger write or flush, so a small answer (headers, data,
//! trailers) leaves in one system call instead of two or three.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use http_body::Body as _;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tonic::codegen::{http, BoxFuture, Service};
use tonic::transport::server::{Connected, TcpConnectInfo, TlsConnectInfo};

/// The calls in flight on one connection.
#[derive(Debug)]
pub struct Activity {
    in_flight: AtomicUsize,
    /// When the connection was accepted or its last call ended (an idle period began).
    idle_since: Mutex<Instant>,
    /// The reader to wake when the connection becomes idle, to arm its timer.
    reader: Mutex<Option<Waker>>,
}

impl Activity {
    fn new() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            reader: Mutex::new(None),
        }
    }

    fn begin(self: &Arc<Self>) -> CallEnd {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        CallEnd(Arc::clone(self))
    }
}

/// Ends a call when dropped (with its response body).
struct CallEnd(Arc<Activity>);

impl Drop for CallEnd {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.0.idle_since.lock().expect("not poisoned") = Instant::now();
            if let Some(waker) = self.0.reader.lock().expect("not poisoned").take() {
                waker.wake();
            }
        }
    }
}

/// A connection's connect info: the TCP addresses and its [`Activity`].
#[derive(Clone, Debug)]
pub struct ConnectionInfo {
    /// The TCP addresses.
    pub tcp: TcpConnectInfo,
    activity: Arc<Activity>,
}

/// An accepted TCP connection that ends itself after `idle` with no call in flight, and
/// joins small writes to the next write (see `is_write_vectored`).
pub struct IdleIo {
    inner: TcpStream,
    activity: Arc<Activity>,
    idle: Option<Duration>,
    timer: Option<Pin<Box<Sleep>>>,
    /// Small writes not sent yet: they go out with the next write or flush.
    pending: Vec<u8>,
}

/// Writes up to this size wait for the next write or flush.
const JOIN_UP_TO: usize = 4096;

impl IdleIo {
    /// Wraps `inner`; `idle` of `None` never closes it.
    pub fn new(inner: TcpStream, idle: Option<Duration>) -> Self {
        Self {
            inner,
            activity: Arc::new(Activity::new()),
            idle,
            timer: None,
            pending: Vec::new(),
        }
    }

    /// Whether the connection has been idle for its timeout; arms the timer otherwise.
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(idle) = self.idle else {
            return false;
        };
        let activity = &self.activity;
        *activity.reader.lock().expect("not poisoned") = Some(cx.waker().clone());
        if activity.in_flight.load(Ordering::Acquire) > 0 {
            self.timer = None;
            return false;
        }
        let since = *activity.idle_since.lock().expect("not poisoned");
        let deadline = since + idle;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        timer.as_mut().poll(cx).is_ready()
    }
}

use std::future::Future as _;

impl AsyncRead for IdleIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(result) => Poll::Ready(result),
            // Nothing to read: an idle connection ends here (an empty read is the end of
            // the stream, and hyper closes the connection).
            Poll::Pending if self.idle_expired(cx) => Poll::Ready(Ok(())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for IdleIo {
    /// A write that fits in the pending bytes joins them and is reported written; a
    /// larger one goes out with them in one vectored write.
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.pending.len() + buf.len() <= JOIN_UP_TO {
            this.pending.extend_from_slice(buf);
            return Poll::Ready(Ok(buf.len()));
        }
        while !this.pending.is_empty() {
            let slices = [
                std::io::IoSlice::new(&this.pending),
                std::io::IoSlice::new(buf),
            ];
            let written = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, &slices))?;
            if written == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            let from_pending = written.min(this.pending.len());
            this.pending.drain(..from_pending);
            if written > from_pending {
                return Poll::Ready(Ok(written - from_pending));
            }
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    /// Reported as not vectored, on purpose: h2 then copies a data frame of up to
    /// 1 KiB into its write buffer (256 bytes when vectored), so an answer's headers,
    /// data and trailers are one write, which `poll_write` joins with the next. Execute,
    /// Classify and Complete answers are under 1 KiB, and a second system call per call
    /// costs Execute a tenth of its throughput (measured in BENCHMARKS.md).
    fn is_write_vectored(&self) -> bool {
        false
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.as_mut().send_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.as_mut().send_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl IdleIo {
    /// Writes the pending bytes.
    fn send_pending(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        while !this.pending.is_empty() {
            let written = ready!(Pin::new(&mut this.inner).poll_write(cx, &this.pending))?;
            if written == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            this.pending.drain(..written);
        }
        Poll::Ready(Ok(()))
    }
}

impl Connected for IdleIo {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        ConnectionInfo {
            tcp: self.inner.connect_info(),
            activity: Arc::clone(&self.activity),
        }
    }
}

/// The layer in front of every service: HTTP answers for what is not gRPC, the request
/// byte budget, and the count of calls in flight per connection.
#[derive(Clone, Debug)]
pub struct GuardLayer {
    budget: Arc<Semaphore>,
    max_message_bytes: usize,
    read_timeout: Option<Duration>,
}

impl GuardLayer {
    /// A layer whose calls share `budget_bytes` of request memory; no message is larger
    /// than `max_message_bytes` (a larger one takes only that much before tonic refuses
    /// it), and the budget always holds at least one largest request. A request whose
    /// message has not arrived `read_timeout` after its call began fails, and gives its
    /// share back.
    pub fn new(
        budget_bytes: usize,
        max_message_bytes: usize,
        read_timeout: Option<Duration>,
    ) -> Self {
        let largest = request_cost(max_message_bytes, crate::wire::max_elements());
        if budget_bytes < largest {
            tracing::warn!(
                requested_mib = budget_bytes >> 20,
                used_mib = largest.div_ceil(1 << 20),
                "--max-request-memory-mib is below what one largest request may hold; \
                 using that instead"
            );
        }
        let budget_bytes = budget_bytes.max(largest).min(Semaphore::MAX_PERMITS);
        Self {
            budget: Arc::new(Semaphore::new(budget_bytes)),
            max_message_bytes,
            read_timeout,
        }
    }
}

impl<S> tower_layer::Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            layer: self.clone(),
        }
    }
}

/// See [`GuardLayer`].
#[derive(Clone, Debug)]
pub struct Guard<S> {
    inner: S,
    layer: GuardLayer,
}

/// An answer that is not gRPC: `status` with an empty body.
fn plain(
    status: http::StatusCode,
    header: (&'static str, &'static str),
) -> http::Response<tonic::body::Body> {
    let mut answer = http::Response::new(tonic::body::Body::empty());
    *answer.status_mut() = status;
    answer
        .headers_mut()
        .insert(header.0, http::HeaderValue::from_static(header.1));
    answer
}

/// The answer to a call that does not fit in the request memory budget.
fn over_budget() -> tonic::Status {
    tonic::Status::resource_exhausted(
        "the server is at its memory budget for requests in flight \
         (--max-request-memory-mib); retry shortly",
    )
}

impl GuardLayer {
    /// What a message whose first frame is `data` takes: the cost of its length (from
    /// the prefix), capped at the largest message accepted (tonic refuses larger ones).
    fn need(&self, data: &[u8]) -> u32 {
        let length = match data.get(1..PREFIX) {
            Some(len) => u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize,
            None => self.max_message_bytes,
        };
        let cost = request_cost(
            length.min(self.max_message_bytes),
            crate::wire::max_elements(),
        );
        u32::try_from(cost).unwrap_or(u32::MAX)
    }
}

impl<S> Service<http::Request<tonic::body::Body>> for Guard<S>
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<tonic::body::Body>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        if request.method() != http::Method::POST {
            return Box::pin(async {
                Ok(plain(
                    http::StatusCode::METHOD_NOT_ALLOWED,
                    ("allow", "POST"),
                ))
            });
        }
        let grpc = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/grpc"));
        if !grpc {
            return Box::pin(async {
                Ok(plain(
                    http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    ("accept", "application/grpc"),
                ))
            });
        }
        let extensions = request.extensions();
        let end = extensions
            .get::<ConnectionInfo>()
            .or_else(|| {
                extensions
                    .get::<TlsConnectInfo<ConnectionInfo>>()
                    .map(TlsConnectInfo::get_ref)
            })
            .map(|info| info.activity.begin());
        let layer = self.layer.clone();
        let read_by = layer.read_timeout.map(|t| Instant::now() + t);
        // The service that is ready now serves this call; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let (parts, mut body) = request.into_parts();
            let first = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
            let first = match first {
                Some(Ok(frame)) => Some(frame),
                Some(Err(status)) => return Ok(status.into_http()),
                None => None,
            };
            let need = first
                .as_ref()
                .and_then(|frame| frame.data_ref())
                .map_or(0, |data| layer.need(data));
            let held = match Arc::clone(&layer.budget).try_acquire_many_owned(need) {
                Ok(permit) => permit,
                Err(_) => return Ok(over_budget().into_http()),
            };
            // Bytes of the first message still to come; the deadline ends with them
            // (later messages of a streaming call are not bounded by it).
            let unread = first
                .as_ref()
                .and_then(|frame| frame.data_ref())
                .map_or(PREFIX, |data| message_end(data).saturating_sub(data.len()));
            let body = tonic::body::Body::new(Replay {
                first,
                rest: body,
                read_by: read_by.filter(|_| unread > 0),
                unread,
                timer: None,
            });
            let answer = inner.call(http::Request::from_parts(parts, body)).await;
            // The answer starts: what the request took goes back to the budget.
            drop(held);
            let answer = answer?;
            Ok(match end {
                Some(end) => answer.map(|body| tonic::body::Body::new(Counted { body, _end: end })),
                None => answer,
            })
        })
    }
}

/// A response body that ends its call when it is dropped.
struct Counted {
    body: tonic::body::Body,
    _end: CallEnd,
}

impl http_body::Body for Counted {
    type Data = tonic::codegen::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The gRPC message prefix: a compressed flag and a 4-byte length.
const PREFIX: usize = 5;

/// Where the first message of a body starting with `data` ends (its prefix included);
/// a prefix not yet whole counts as the smallest message.
fn message_end(data: &[u8]) -> usize {
    data.get(1..PREFIX).map_or(PREFIX, |len| {
        PREFIX + u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize
    })
}

/// What one decoded element (an empty `Part`, a metadata entry, ...) costs in memory at
/// most, measured: two million empty parts took about 240 MiB.
const ELEMENT_BYTES: usize = 128;

/// The most memory a request of `length` bytes can take: its bytes as received, again
/// once decoded, and its elements (at most one per two bytes, and at most the element
/// limit).
pub fn request_cost(length: usize, max_elements: usize) -> usize {
    2 * (length + PREFIX) + (length / 2).min(max_elements) * ELEMENT_BYTES
}

/// A request body whose first frame was read ahead (to learn the message's length), and
/// is given back first; the rest must arrive by `read_by`.
struct Replay {
    first: Option<http_body::Frame<tonic::codegen::Bytes>>,
    rest: tonic::body::Body,
    read_by: Option<Instant>,
    /// Bytes of the first message not received yet.
    unread: usize,
    /// Armed only when the rest is not there yet: most requests arrive whole.
    timer: Option<Pin<Box<Sleep>>>,
}

impl http_body::Body for Replay {
    type Data = tonic::codegen::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if let Some(frame) = self.first.take() {
            return Poll::Ready(Some(Ok(frame)));
        }
        let pending = Pin::new(&mut self.rest).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &pending {
            if let Some(data) = frame.data_ref() {
                self.unread = self.unread.saturating_sub(data.len());
                if self.unread == 0 {
                    self.read_by = None;
                }
            }
        }
        if pending.is_ready() {
            return pending;
        }
        let Some(read_by) = self.read_by else {
            return Poll::Pending;
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(read_by)));
        if timer.as_mut().poll(cx).is_ready() {
            self.read_by = None;
            return Poll::Ready(Some(Err(tonic::Status::deadline_exceeded(
                "the request's message did not arrive in time \
                 (--request-read-timeout-seconds)",
            ))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.rest.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connected pair: our side wrapped in [`IdleIo`], and the peer.
    async fn pair() -> (IdleIo, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap());
        let (peer, accepted) = tokio::join!(peer, listener.accept());
        (IdleIo::new(accepted.unwrap().0, None), peer.unwrap())
    }

    #[tokio::test]
    async fn small_writes_wait_for_the_next_write_or_flush_and_keep_their_order() {
        let (mut io, mut peer) = pair().await;
        io.write_all(b"head").await.unwrap();
        io.write_all(b"ers").await.unwrap();
        assert_eq!(io.pending, b"headers", "small writes are held, not sent");

        let large = vec![7u8; 3 * JOIN_UP_TO];
        io.write_all(&large).await.unwrap();
        assert!(
            io.pending.is_empty(),
            "a large write takes the held bytes along"
        );

        io.write_all(b"trailers").await.unwrap();
        io.flush().await.unwrap();
        assert!(io.pending.is_empty(), "flush sends what is held");
        io.shutdown().await.unwrap();
        drop(io);

        let mut received = Vec::new();
        peer.read_to_end(&mut received).await.unwrap();
        let mut expected = b"headers".to_vec();
        expected.extend_from_slice(&large);
        expected.extend_from_slice(b"trailers");
        assert_eq!(received, expected);
    }

    #[tokio::test]
    async fn shutdown_sends_held_bytes_first() {
        let (mut io, mut peer) = pair().await;
        io.write_all(b"last words").await.unwrap();
        io.shutdown().await.unwrap();
        let mut received = Vec::new();
        peer.read_to_end(&mut received).await.unwrap();
        assert_eq!(received, b"last words");
    }
}
