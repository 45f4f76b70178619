//! The front's HTTP/1.1 connections, served by a loop of our own: one task per client
//! connection that reads the head in place, hands the request to the front, and writes
//! its answer's head and body in one write. Between requests a connection holds no
//! buffer at all (nginx frees a keep-alive connection's buffers the same way; hyper's
//! connection keeps 16 KiB for its whole life).
//!
//! Only the plain shape is served here: HTTP/1.1, a body of known length within the
//! front's limit, and none of `Transfer-Encoding`, `Expect`, `Upgrade`, `TE`, or a
//! `Connection` other than `keep-alive`; any method but HEAD and CONNECT. Anything
//! else (HTTP/2's preface, HTTP/1.0, a head that does not parse or is too large) is
//! handed over, with the bytes read so far, to hyper's server for the rest of the
//! connection ([`Ended::HandOver`]), so that every unusual request still gets hyper's
//! answer, error or not.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::{Buf, Bytes, BytesMut};
use hyper::body::Body as _;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::front::Front;
use crate::http1::head::{Answer, Request};
use crate::http1::socket::{self, Prefixed};
use crate::http1::timer::KeptTimer;
use crate::http1::{framing, server};

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
}

/// How long a request head may take to arrive once it has begun (hyper's default).
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// The first read's size: a plain request (head and JSON body) fits in it.
const FIRST_READ: usize = 4096;

/// The most room a body read takes at once.
const BODY_READ: usize = 64 * 1024;

/// How a connection served here ended.
pub enum Ended {
    /// Closed: by the client, the idle timeout, the drain, or an error.
    Closed,
    /// A request this loop does not serve: the connection and the bytes read from it so
    /// far, for hyper's server.
    HandOver(Prefixed),
}

/// Serves HTTP/1.1 requests on `tcp` with `front` until the connection ends or is
/// handed over. `draining` resolves when the server drains: an idle connection then
/// closes, and a busy one after its answer (which says `connection: close`).
pub async fn serve(
    tcp: TcpStream,
    front: &Front,
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
    };
    loop {
        let request = match conn.read_request().await {
            Next::Request(request) => request,
            Next::Closed => return Ended::Closed,
            Next::HandOver(read) => return Ended::HandOver(Prefixed::new(read, conn.tcp)),
        };
        // Written into its box where it lies: made on the stack and moved in, the
        // future's whole size (kilobytes, for its largest state) was copied per request.
        let mut handling = Box::into_pin(Box::write(Box::new_uninit(), front.handle(request)));
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
}

/// What the connection's next bytes are.
// Made once a request and taken apart at once: boxing the request would allocate.
#[allow(clippy::large_enum_variant)]
enum Next {
    Request(Request),
    Closed,
    HandOver(Bytes),
}

impl Connection {
    /// Reads the next request, head and body, waiting (with no buffer held) for it to
    /// begin.
    async fn read_request(&mut self) -> Next {
        let mut head_deadline: Option<Pin<Box<Sleep>>> = None;
        let (head, length, rest) = loop {
            if self.buf.is_empty() {
                // Idle: nothing held but the socket until the client writes.
                self.buf = BytesMut::new();
                if !poll_fn(|cx| self.poll_waiting(cx, None)).await {
                    return Next::Closed;
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
                if server::looks_like_http2(&self.buf) {
                    return Next::HandOver(self.buf.split().freeze());
                }
                match server::parse_head(&mut self.buf, self.settings.max_body) {
                    server::Head::Plain(head, length, rest) => break (head, length, rest),
                    server::Head::Unusual => return Next::HandOver(self.buf.split().freeze()),
                    server::Head::Partial if self.buf.len() >= self.settings.max_head => {
                        return Next::HandOver(self.buf.split().freeze())
                    }
                    server::Head::Partial => {
                        let deadline = head_deadline
                            .get_or_insert_with(|| Box::pin(tokio::time::sleep(HEAD_TIMEOUT)));
                        if !poll_fn(|cx| self.poll_waiting(cx, Some(deadline.as_mut()))).await {
                            return Next::Closed;
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
                if poll_fn(|cx| self.tcp.poll_read_ready(cx)).await.is_err() {
                    return Next::Closed;
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

    /// Reads what the socket has, up to `wanted` more bytes of room: `Ok(false)` at
    /// its end or on an error, `Err(())` when nothing was there after all.
    fn read_some(&mut self, wanted: usize) -> Result<bool, ()> {
        self.buf.reserve(wanted);
        match socket::read_into(&self.tcp, &mut self.buf) {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if self.buf.is_empty() {
                    self.buf = BytesMut::new();
                }
                Err(())
            }
            Err(_) => Ok(false),
        }
    }

    /// Waits for bytes to read: `true` when there are some, `false` when the
    /// connection should close (the idle timeout, the head's deadline, or the drain
    /// before a whole head has come).
    fn poll_waiting(&mut self, cx: &mut Context<'_>, head: Option<Pin<&mut Sleep>>) -> Poll<bool> {
        if self.tcp.poll_read_ready(cx).is_ready() {
            return Poll::Ready(true);
        }
        if head.is_some_and(|deadline| deadline.poll(cx).is_ready()) {
            return Poll::Ready(false);
        }
        // A head begun but not finished is no request yet: the drain closes it, as
        // hyper closes a connection that has not begun a message.
        if self.draining.as_mut().poll(cx).is_ready() {
            return Poll::Ready(false);
        }
        if self.idle_expired(cx) {
            return Poll::Ready(false);
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

    /// Ready when the client has gone (its end of the stream, or an error) while its
    /// request is answered. Bytes it sends meanwhile (a pipelined request) are kept,
    /// and reading stops there until they are answered.
    fn poll_gone(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.drained && self.draining.as_mut().poll(cx).is_ready() {
            self.drained = true;
        }
        loop {
            // Bytes are waiting (a pipelined request): the client's end is not looked
            // for until they are answered, as hyper does, so a client that pipelines
            // and then closes its side still gets every answer.
            if !self.buf.is_empty() {
                return Poll::Pending;
            }
            if std::task::ready!(self.tcp.poll_read_ready(cx)).is_err() {
                return Poll::Ready(());
            }
            match self.read_some(1024) {
                Ok(true) | Err(()) => {}
                Ok(false) => return Poll::Ready(()),
            }
        }
    }

    /// Writes `answer`: `Ok(true)` when the connection may take another request.
    async fn write_answer(&mut self, answer: Answer) -> std::io::Result<bool> {
        let (parts, mut body) = answer.into_parts();
        let shape = server::answer_framing(&parts, &body);
        // Room for the head and, when it will be copied after it, a body of known
        // length: grown later, the head would be copied again.
        let copied = match shape {
            server::Framing::Length(n) if n <= socket::COPY_AT_MOST as u64 => n as usize,
            _ => 0,
        };
        let mut out = Vec::with_capacity(256 + copied);
        let keep = server::write_head(&mut out, &parts, shape, self.drained);
        if shape == server::Framing::None {
            self.tcp.write_all(&out).await?;
            return Ok(keep);
        }
        let chunked = shape == server::Framing::Chunked;
        // What a length still allows: a body that says otherwise (an agent whose
        // `Content-Length` was wrong) is cut there and the connection closed, so the
        // client never reads one answer's bytes as the next's.
        let mut left = match shape {
            server::Framing::Length(n) => n,
            _ => u64::MAX,
        };
        loop {
            let frame = match poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx))).await {
                Poll::Ready(frame) => frame,
                Poll::Pending => {
                    // Not there yet: what is ready goes now, and the client is watched
                    // while the rest comes.
                    if !out.is_empty() {
                        self.tcp.write_all(&out).await?;
                        out.clear();
                    }
                    let next = poll_fn(|cx| {
                        if let Poll::Ready(frame) = Pin::new(&mut body).poll_frame(cx) {
                            return Poll::Ready(Some(frame));
                        }
                        self.poll_gone(cx).map(|()| None)
                    })
                    .await;
                    match next {
                        Some(frame) => frame,
                        None => return Ok(false),
                    }
                }
            };
            match frame {
                None => break,
                // An answer that fails part way is cut short after what came before
                // the failure: the client sees it end early, as hyper ends it.
                Some(Err(_)) => {
                    if !out.is_empty() {
                        self.tcp.write_all(&out).await?;
                    }
                    return Ok(false);
                }
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        // Trailers: HTTP/1.1 answers here carry none (a request that
                        // asks for them goes to hyper).
                        continue;
                    };
                    if data.is_empty() {
                        continue;
                    }
                    if data.len() as u64 > left {
                        let allowed = &data[..usize::try_from(left).unwrap_or(data.len())];
                        socket::put_data(&self.tcp, &mut out, allowed, chunked).await?;
                        self.tcp.write_all(&out).await?;
                        return Ok(false);
                    }
                    left -= data.len() as u64;
                    socket::put_data(&self.tcp, &mut out, &data, chunked).await?;
                    if body.is_end_stream() {
                        break;
                    }
                }
            }
        }
        if chunked {
            out.extend_from_slice(framing::LAST_CHUNK);
        }
        if !out.is_empty() {
            self.tcp.write_all(&out).await?;
        }
        if !chunked && left > 0 {
            // Shorter than its length: the client sees it cut, by the close.
            return Ok(false);
        }
        Ok(keep)
    }
}
