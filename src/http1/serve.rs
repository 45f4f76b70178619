//! The server's loop for HTTP/1.1: one task per client connection that reads the head
//! in place, hands the request to a [`Handler`] (the front), and writes its answer's
//! head and body in one write. Between requests a connection holds no buffer at all
//! (nginx frees a keep-alive connection's buffers the same way; hyper's connection keeps
//! 16 KiB for its whole life).
//!
//! Every head is held to [`rules`](crate::http1::rules) first: one that does not parse,
//! frames its body more than one way, or stops arriving is answered here (400, 501,
//! 408) and the connection closed, whichever server would have read the rest.
//! Only the plain shape is served here: HTTP/1.1, a body of known length within the
//! front's limit, and none of `Transfer-Encoding`, `Expect`, `Upgrade`, `TE`, or a
//! `Connection` other than `keep-alive`; any method but HEAD and CONNECT. Anything
//! else is handed over, with the bytes read so far, to hyper's server for the rest of
//! the connection ([`Ended::HandOver`]): HTTP/2 when its preface is the connection's
//! first bytes, HTTP/1.1 otherwise (a preface later on is refused, never a switch).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::{Buf, Bytes, BytesMut};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::http1::body::write_body;
use crate::http1::framing::Framing;
use crate::http1::head::{Answer, Request};
use crate::http1::rules::Refusal;
use crate::http1::server;
use crate::http1::server::Head;
use crate::http1::socket::{self, Prefixed};
use crate::http1::timer::KeptTimer;

/// What answers the requests of a connection (the front).
pub trait Handler {
    /// The answer to `request`.
    fn handle(&self, request: Request) -> impl Future<Output = Answer> + Send;
}

/// How a connection served here may behave.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Closed after this long with no request in flight (`None`: never).
    pub idle: Option<Duration>,
    /// The largest request head read here (larger ones are hyper's to refuse).
    pub max_head: usize,
    /// The largest body read here before the front sees the request (the front's own
    /// limit: a larger one is hyper's to stream, and the front's to refuse).
    pub max_body: usize,
    /// How long a request's head, and then its body, may take to arrive once begun
    /// (`None`: the head hyper's 30 s, the body for ever); past it, 408.
    pub read: Option<Duration>,
    /// How long an answer may wait for the client to take any of it (`None`: for
    /// ever); past it, the connection is closed.
    pub send: Option<Duration>,
}

/// How long a request head may take to arrive once it has begun, when no read timeout
/// is set (hyper's default).
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// The first read's size: a plain request (head and JSON body) fits in it.
const FIRST_READ: usize = 4096;

/// The most room a body read takes at once.
const BODY_READ: usize = 64 * 1024;

/// How a connection served here ended.
pub enum Ended {
    /// Closed: by the client, the idle timeout, the drain, a refusal, or an error.
    Closed,
    /// A request this loop does not serve: the connection and the bytes read from it so
    /// far, for hyper's server, in the protocol it is to speak.
    HandOver(Prefixed, Protocol),
}

/// What hyper's server is to speak on a connection handed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 (and 1.0): a request this loop does not serve.
    Http1,
    /// HTTP/2 with prior knowledge: its preface was the connection's first bytes.
    Http2,
}

/// Serves HTTP/1.1 requests on `tcp` with `front` until the connection ends or is
/// handed over. `draining` resolves when the server drains: an idle connection then
/// closes, and a busy one after its answer (which says `connection: close`).
pub async fn serve(
    tcp: TcpStream,
    handler: &impl Handler,
    settings: Settings,
    draining: WaitForCancellationFutureOwned,
) -> Ended {
    let mut conn = Connection {
        tcp,
        buf: BytesMut::new(),
        settings,
        idle_since: Instant::now(),
        idle_timer: KeptTimer::default(),
        draining: Box::pin(draining),
        drained: false,
        served: false,
    };
    loop {
        let request = match conn.read_request().await {
            Next::Request(request) => request,
            Next::Closed => return Ended::Closed,
            Next::Refused(refusal) => {
                // Boxed: an idle connection's task holds only the loop's state.
                Box::pin(conn.refuse(refusal)).await;
                return Ended::Closed;
            }
            Next::HandOver(read, protocol) => {
                return Ended::HandOver(Prefixed::new(read, conn.tcp), protocol)
            }
        };
        conn.served = true;
        // Written into its box where it lies: made on the stack and moved in, the
        // future's whole size (kilobytes, for its largest state) was copied per request.
        let mut handling = Box::into_pin(Box::write(Box::new_uninit(), handler.handle(request)));
        let answer = poll_fn(|cx| {
            if let Poll::Ready(answer) = handling.as_mut().poll(cx) {
                return Poll::Ready(Some(answer));
            }
            conn.poll_gone(cx).map(|()| None)
        })
        .await;
        drop(handling);
        let Some(answer) = answer else {
            // The client went away: its request is dropped, as hyper drops it.
            return Ended::Closed;
        };
        match conn.write_answer(answer).await {
            Ok(true) if !conn.drained => conn.idle_since = Instant::now(),
            _ => return Ended::Closed,
        }
    }
}

/// One client connection served by this loop.
struct Connection {
    tcp: TcpStream,
    /// Bytes read and not yet taken; no allocation while the connection waits.
    buf: BytesMut,
    settings: Settings,
    /// When the last answer was written (or the connection accepted).
    idle_since: Instant,
    /// Armed once and moved only when it fires early (no timer made per request).
    idle_timer: KeptTimer,
    draining: Pin<Box<WaitForCancellationFutureOwned>>,
    /// The drain has begun: the next answer is the connection's last.
    drained: bool,
    /// A request has been taken: an HTTP/2 preface is no longer a connection's first
    /// bytes.
    served: bool,
}

/// How a wait for a request's bytes ended.
enum Wait {
    /// There are bytes to read.
    Readable,
    /// The connection is to close with nothing said.
    Close,
    /// The head did not come in time.
    TooSlow,
}

/// What the connection's next bytes are.
// Made once a request and taken apart at once: boxing the request would allocate.
#[allow(clippy::large_enum_variant)]
enum Next {
    Request(Request),
    Closed,
    Refused(Refusal),
    HandOver(Bytes, Protocol),
}

impl Connection {
    /// Reads the next request, head and body, waiting (with no buffer held) for it to
    /// begin. Once begun, its head must come whole within the read timeout, and then
    /// its body with no gap as long; else it is answered 408.
    async fn read_request(&mut self) -> Next {
        let mut deadline: Option<Pin<Box<Sleep>>> = None;
        let (head, length, rest) = loop {
            if self.buf.is_empty() {
                // Idle: nothing held but the socket until the client writes.
                self.buf = BytesMut::new();
                match poll_fn(|cx| self.poll_waiting(cx, None)).await {
                    Wait::Readable => {}
                    Wait::Close | Wait::TooSlow => return Next::Closed,
                }
            } else {
                // Empty lines before a request (a client's stray CRLF after a body) are
                // dropped, as hyper drops them: with nothing else, the connection is idle.
                let blank = self
                    .buf
                    .iter()
                    .take_while(|&&b| b == b'\r' || b == b'\n')
                    .count();
                if blank > 0 {
                    self.buf.advance(blank);
                    continue;
                }
                let parsed = match server::preface(&self.buf) {
                    // Prior knowledge is the connection's first bytes, or nothing: later
                    // it would turn an HTTP/1.1 connection into HTTP/2 (h2c smuggling).
                    server::Preface::Whole if self.served => Head::Refused(Refusal::LATE_PREFACE),
                    server::Preface::Whole => {
                        return Next::HandOver(self.buf.split().freeze(), Protocol::Http2)
                    }
                    server::Preface::Begun if !self.served => Head::Partial,
                    _ => server::parse_head(&mut self.buf, self.settings.max_body),
                };
                match parsed {
                    Head::Plain(head, length, rest) => break (head, length, rest),
                    Head::Refused(refusal) => return Next::Refused(refusal),
                    Head::Unusual => {
                        return Next::HandOver(self.buf.split().freeze(), Protocol::Http1)
                    }
                    Head::Partial if self.buf.len() >= self.settings.max_head => {
                        return Next::HandOver(self.buf.split().freeze(), Protocol::Http1)
                    }
                    Head::Partial => {
                        let within = self.settings.read.unwrap_or(HEAD_TIMEOUT);
                        let deadline =
                            deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(within)));
                        match poll_fn(|cx| self.poll_waiting(cx, Some(deadline.as_mut()))).await {
                            Wait::Readable => {}
                            Wait::Close => return Next::Closed,
                            Wait::TooSlow => return Next::Refused(Refusal::TOO_SLOW),
                        }
                    }
                }
            }
            match self.read_some(FIRST_READ) {
                Ok(true) => {}
                Ok(false) => return Next::Closed,
                Err(()) => {}
            }
        };
        let body = if rest.len() >= length {
            // The whole body came with the head (the usual case): nothing is copied.
            if rest.len() > length {
                self.buf.extend_from_slice(&rest[length..]);
            }
            rest.slice(..length)
        } else {
            self.buf.reserve(length.min(BODY_READ));
            self.buf.extend_from_slice(&rest);
            while self.buf.len() < length {
                // Room as the bytes come, not the whole length a head claims.
                let wanted = (length - self.buf.len()).min(BODY_READ);
                if let Some(read) = self.settings.read {
                    // A gap between reads: put off as each read brings bytes.
                    let until = Instant::now() + read;
                    match deadline.as_mut() {
                        Some(deadline) => deadline.as_mut().reset(until),
                        None => deadline = Some(Box::pin(tokio::time::sleep_until(until))),
                    }
                }
                // With no read timeout the head's deadline (if any) does not bound the body.
                let mut gap = self.settings.read.and(deadline.as_mut());
                let waited = poll_fn(|cx| match self.tcp.poll_read_ready(cx) {
                    Poll::Ready(Ok(())) => Poll::Ready(Wait::Readable),
                    Poll::Ready(Err(_)) => Poll::Ready(Wait::Close),
                    Poll::Pending => match gap.as_mut() {
                        Some(deadline) => deadline.as_mut().poll(cx).map(|()| Wait::TooSlow),
                        None => Poll::Pending,
                    },
                })
                .await;
                match waited {
                    Wait::Readable => {}
                    Wait::Close => return Next::Closed,
                    Wait::TooSlow => return Next::Refused(Refusal::TOO_SLOW),
                }
                if let Ok(false) = self.read_some(wanted) {
                    return Next::Closed;
                }
            }
            self.buf.split_to(length).freeze()
        };
        let body = if body.is_empty() {
            Body::empty()
        } else {
            Body::from(body)
        };
        Next::Request(Request::from_parts(head, body))
    }

    /// Answers a refused request and closes the connection: the rest of what it sent
    /// cannot be trusted to be framed as it says.
    async fn refuse(&mut self, refusal: Refusal) {
        let mut out = Vec::with_capacity(256);
        server::write_refusal(&mut out, refusal);
        if socket::write_all_within(&self.tcp, &out, self.settings.send)
            .await
            .is_ok()
        {
            socket::linger(&mut self.tcp).await;
        }
    }

    /// Reads what the socket has, up to `wanted` more bytes of room (see
    /// [`read_from`]).
    fn read_some(&mut self, wanted: usize) -> Result<bool, ()> {
        read_from(&self.tcp, &mut self.buf, wanted)
    }

    /// Waits for bytes to read, or for the connection to be closed (the idle timeout,
    /// or the drain before a whole head has come), or for the head's deadline.
    fn poll_waiting(&mut self, cx: &mut Context<'_>, head: Option<Pin<&mut Sleep>>) -> Poll<Wait> {
        if self.tcp.poll_read_ready(cx).is_ready() {
            return Poll::Ready(Wait::Readable);
        }
        if head.is_some_and(|deadline| deadline.poll(cx).is_ready()) {
            return Poll::Ready(Wait::TooSlow);
        }
        // A head begun but not finished is no request yet: the drain closes it, as
        // hyper closes a connection that has not begun a message.
        if self.draining.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Wait::Close);
        }
        if self.idle_expired(cx) {
            return Poll::Ready(Wait::Close);
        }
        Poll::Pending
    }

    /// Whether the connection has waited for its idle timeout since its last answer;
    /// keeps the timer armed otherwise.
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.settings.idle.is_some_and(|idle| {
            self.idle_timer
                .poll_passed(self.idle_since + idle, cx)
                .is_ready()
        })
    }

    /// Ready when the client has gone while its request is answered (see
    /// [`client_gone`]).
    fn poll_gone(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        client_gone(
            &self.tcp,
            &mut self.buf,
            &mut self.draining,
            &mut self.drained,
            cx,
        )
    }

    /// Writes `answer`: `Ok(true)` when the connection may take another request.
    async fn write_answer(&mut self, answer: Answer) -> std::io::Result<bool> {
        let (parts, mut body) = answer.into_parts();
        let shape = server::answer_framing(&parts, &body);
        // Room for the head and, when it will be copied after it, a body of known
        // length: grown later, the head would be copied again.
        let copied = match shape {
            Framing::Length(n) if n <= socket::COPY_AT_MOST as u64 => n as usize,
            _ => 0,
        };
        let mut out = Vec::with_capacity(256 + copied);
        let keep = server::write_head(&mut out, &parts, shape, self.drained);
        // A body that fails part way, or says otherwise than its length (an agent whose
        // `Content-Length` was wrong), is cut there and the connection closed: the
        // client sees it end early, and never reads one answer's bytes as the next's.
        let send = self.settings.send;
        let (tcp, buf) = (&self.tcp, &mut self.buf);
        let (draining, drained) = (&mut self.draining, &mut self.drained);
        let written = write_body(tcp, out, &mut body, shape, send, |cx| {
            client_gone(tcp, buf, draining, drained, cx)
        })
        .await?;
        Ok(keep && written.is_whole())
    }
}

/// Reads what `tcp` has into `buf`, up to `wanted` more bytes of room: `Ok(false)` at
/// its end or on an error, `Err(())` when nothing was there after all.
fn read_from(tcp: &TcpStream, buf: &mut BytesMut, wanted: usize) -> Result<bool, ()> {
    buf.reserve(wanted);
    match socket::read_into(tcp, buf) {
        Ok(0) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
            if buf.is_empty() {
                *buf = BytesMut::new();
            }
            Err(())
        }
        Err(_) => Ok(false),
    }
}

/// Ready when the client has gone (its end of the stream, or an error) while its
/// request is answered; notes the drain in `drained`. Bytes it sends meanwhile (a
/// pipelined request) are kept in `buf`, and reading stops there until they are
/// answered.
fn client_gone(
    tcp: &TcpStream,
    buf: &mut BytesMut,
    draining: &mut Pin<Box<WaitForCancellationFutureOwned>>,
    drained: &mut bool,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if !*drained && draining.as_mut().poll(cx).is_ready() {
        *drained = true;
    }
    loop {
        // Bytes are waiting (a pipelined request): the client's end is not looked for
        // until they are answered, as hyper does, so a client that pipelines and then
        // closes its side still gets every answer.
        if !buf.is_empty() {
            return Poll::Pending;
        }
        if std::task::ready!(tcp.poll_read_ready(cx)).is_err() {
            return Poll::Ready(());
        }
        match read_from(tcp, buf, 1024) {
            Ok(true) | Err(()) => {}
            Ok(false) => return Poll::Ready(()),
        }
    }
}
