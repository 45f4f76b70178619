//! Idle connections are closed: a connection with no call in flight for the idle
//! timeout ends. Two halves of one concern: [`IdleIo`] wraps each accepted connection
//! and ends it from its read side, and [`InFlightLayer`] counts the calls in flight on
//! it, each until its response body ends.
//!
//! The connect info tonic puts on every request is the connection's
//! [`ConnectionInfo`], which carries its [`Activity`]; that is how a call finds the
//! connection it runs on. When no call is left for the timeout, the connection's next
//! read reports the end of the stream and hyper closes it. A connection's first idle
//! period starts when it is accepted, so one that never makes a call (or never finishes
//! its HTTP/2 preface) is closed too.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tonic::codegen::{http, Service};
use tonic::transport::server::{Connected, TcpConnectInfo, TlsConnectInfo};

/// The calls in flight on one connection.
#[derive(Debug)]
pub struct Activity {
    in_flight: AtomicUsize,
    /// When the connection was accepted or its last call ended (an idle period began).
    idle_since: Mutex<Instant>,
}

impl Activity {
    fn new() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
        }
    }

    /// A call begins on the connection; it ends when the returned guard drops.
    pub fn begin(self: &Arc<Self>) -> CallEnd {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        CallEnd(Arc::clone(self))
    }
}

/// Ends a call when dropped (with its response body, or its future if it never answers).
/// The reader needs no wake-up: its timer is always armed while it waits, and says
/// when it fires whether the connection has been idle long enough.
#[derive(Debug)]
pub struct CallEnd(Arc<Activity>);

impl Drop for CallEnd {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.0.idle_since.lock().expect("not poisoned") = Instant::now();
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

/// An accepted connection that ends itself after `idle` with no call in flight.
pub struct IdleIo<T> {
    inner: T,
    activity: Arc<Activity>,
    idle: Option<Duration>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<T> IdleIo<T> {
    /// Wraps `inner`; `idle` of `None` never closes it.
    pub fn new(inner: T, idle: Option<Duration>) -> Self {
        Self {
            inner,
            activity: Arc::new(Activity::new()),
            idle,
            timer: None,
        }
    }

    /// The connection's activity, for a server that counts its calls itself (the
    /// front's listener; the API's counts them with [`InFlightLayer`]).
    pub fn activity(&self) -> Arc<Activity> {
        Arc::clone(&self.activity)
    }

    /// Whether the connection has been idle for its timeout; keeps the timer armed
    /// otherwise. The timer is left alone from one request to the next (no timer is
    /// made or moved per request): it fires at the earliest time the connection could
    /// be idle long enough, and is moved on only then, if a call was made since.
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(idle) = self.idle else {
            return false;
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        loop {
            if timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            // Fired: idle for the whole timeout, or it is moved to when it could be.
            let deadline = if self.activity.in_flight.load(Ordering::Acquire) > 0 {
                Instant::now() + idle
            } else {
                let deadline = *self.activity.idle_since.lock().expect("not poisoned") + idle;
                if deadline <= Instant::now() {
                    return true;
                }
                deadline
            };
            timer.as_mut().reset(deadline);
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for IdleIo<T> {
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

/// Writes pass through untouched.
impl<T: AsyncWrite + Unpin> AsyncWrite for IdleIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<T: Connected<ConnectInfo = TcpConnectInfo>> Connected for IdleIo<T> {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        ConnectionInfo {
            tcp: self.inner.connect_info(),
            activity: Arc::clone(&self.activity),
        }
    }
}

/// Counts each call on its connection's [`Activity`] until its response body ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct InFlightLayer;

impl<S> tower_layer::Layer<S> for InFlightLayer {
    type Service = InFlight<S>;

    fn layer(&self, inner: S) -> InFlight<S> {
        InFlight { inner }
    }
}

/// See [`InFlightLayer`].
#[derive(Clone, Debug)]
pub struct InFlight<S> {
    inner: S,
}

impl<S, B> Service<http::Request<B>> for InFlight<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Counting<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let extensions = request.extensions();
        let end = extensions
            .get::<ConnectionInfo>()
            .or_else(|| {
                extensions
                    .get::<TlsConnectInfo<ConnectionInfo>>()
                    .map(TlsConnectInfo::get_ref)
            })
            .map(|info| info.activity.begin());
        Counting {
            inner: self.inner.call(request),
            end,
        }
    }
}

pin_project_lite::pin_project! {
    /// A call's answer, whose body ends the call when it is dropped.
    pub struct Counting<F> {
        #[pin]
        inner: F,
        end: Option<CallEnd>,
    }
}

impl<F, E> Future for Counting<F>
where
    F: Future<Output = Result<http::Response<tonic::body::Body>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let answer = ready!(this.inner.poll(cx))?;
        Poll::Ready(Ok(match this.end.take() {
            Some(end) => answer.map(|body| tonic::body::Body::new(Counted { body, _end: end })),
            None => answer,
        }))
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
