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
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::{Buf, Bytes, BytesMut};
use hyper::body::Body as _;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::front::Front;
use crate::http1::{framing, socket};

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

/// The most header lines a head may have (hyper's default).
const MAX_HEADERS: usize = 100;

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
        idle_timer: None,
        draining: Box::pin(draining),
        drained: false,
    };
    loop {
        let request = match conn.read_request().await {
            Next::Request(request) => request,
            Next::Closed => return Ended::Closed,
            Next::HandOver(read) => return Ended::HandOver(Prefixed { read, io: conn.tcp }),
        };
        let mut handling = Box::pin(front.handle(request));
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
    idle_timer: Option<Pin<Box<Sleep>>>,
    draining: Pin<Box<WaitForCancellationFutureOwned>>,
    /// The drain has begun: the next answer is the connection's last.
    drained: bool,
}

/// What the connection's next bytes are.
// Made once a request and taken apart at once: boxing the request would allocate.
#[allow(clippy::large_enum_variant)]
enum Next {
    Request(Request<Body>),
    Closed,
    HandOver(Bytes),
}

/// A head as parsed: the request without its body, and the body's length.
// Made once a request and taken apart at once: boxing the request would allocate.
#[allow(clippy::large_enum_variant)]
enum Head {
    /// The request, its body's length, and the bytes read after its head.
    Plain(Request<()>, usize, Bytes),
    Partial,
    Unusual,
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
                if looks_like_http2(&self.buf) {
                    return Next::HandOver(self.buf.split().freeze());
                }
                match parse_head(&mut self.buf, self.settings.max_body) {
                    Head::Plain(head, length, rest) => break (head, length, rest),
                    Head::Unusual => return Next::HandOver(self.buf.split().freeze()),
                    Head::Partial if self.buf.len() >= self.settings.max_head => {
                        return Next::HandOver(self.buf.split().freeze())
                    }
                    Head::Partial => {
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
        Next::Request(head.map(|()| body))
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
        let Some(idle) = self.settings.idle else {
            return false;
        };
        let timer = self
            .idle_timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(self.idle_since + idle)));
        loop {
            if timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            let deadline = self.idle_since + idle;
            if deadline <= Instant::now() {
                return true;
            }
            timer.as_mut().reset(deadline);
        }
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
    async fn write_answer(&mut self, answer: Response<Body>) -> std::io::Result<bool> {
        let (parts, mut body) = answer.into_parts();
        let shape = answer_framing(&parts, &body);
        let mut out = Vec::with_capacity(256);
        let keep = write_head(&mut out, &parts, shape, self.drained);
        if shape == Framing::None {
            self.tcp.write_all(&out).await?;
            return Ok(keep);
        }
        let chunked = shape == Framing::Chunked;
        // What a length still allows: a body that says otherwise (an agent whose
        // `Content-Length` was wrong) is cut there and the connection closed, so the
        // client never reads one answer's bytes as the next's.
        let mut left = match shape {
            Framing::Length(n) => n,
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
                        socket::put_data(&mut self.tcp, &mut out, allowed, chunked).await?;
                        self.tcp.write_all(&out).await?;
                        return Ok(false);
                    }
                    left -= data.len() as u64;
                    socket::put_data(&mut self.tcp, &mut out, &data, chunked).await?;
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

/// Whether the bytes begin HTTP/2's connection preface (or could, when so few).
fn looks_like_http2(buf: &[u8]) -> bool {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0";
    let n = buf.len().min(PREFACE.len());
    buf[..n] == PREFACE[..n]
}

/// Parses the head at the start of `buf` and, when it is a plain one, takes it out
/// with what follows it (its body, or some of it, and any pipelined bytes).
fn parse_head(buf: &mut BytesMut, max_body: usize) -> Head {
    // Frozen whole first: the path and the header values are slices of it, not copies.
    let all = std::mem::take(buf).freeze();
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_request_with_uninit_headers(
        &mut parsed,
        &all,
        &mut headers,
    ) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return put_back(buf, all, Head::Partial),
        Err(_) => return put_back(buf, all, Head::Unusual),
    };
    let method = match parsed.method {
        _ if parsed.version != Some(1) => return put_back(buf, all, Head::Unusual),
        Some("GET") => Method::GET,
        Some("POST") => Method::POST,
        Some("HEAD" | "CONNECT") | None => return put_back(buf, all, Head::Unusual),
        Some(other) => match Method::from_bytes(other.as_bytes()) {
            Ok(method) => method,
            Err(_) => return put_back(buf, all, Head::Unusual),
        },
    };
    let Ok(uri) = Uri::from_maybe_shared(all.slice_ref(parsed.path.unwrap_or_default().as_bytes()))
    else {
        return put_back(buf, all, Head::Unusual);
    };
    let mut length = None;
    let mut map = HeaderMap::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            match (length, framing::parse_length(h.value)) {
                (None, Some(n)) if n <= max_body => length = Some(n),
                _ => return put_back(buf, all, Head::Unusual),
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding")
            || name.eq_ignore_ascii_case(b"expect")
            || name.eq_ignore_ascii_case(b"upgrade")
            || name.eq_ignore_ascii_case(b"te")
            || (name.eq_ignore_ascii_case(b"connection")
                && !h.value.eq_ignore_ascii_case(b"keep-alive"))
        {
            return put_back(buf, all, Head::Unusual);
        }
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name),
            HeaderValue::from_maybe_shared(all.slice_ref(h.value)),
        ) else {
            return put_back(buf, all, Head::Unusual);
        };
        map.append(name, value);
    }
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_11;
    *request.headers_mut() = map;
    Head::Plain(request, length.unwrap_or(0), all.slice(len..))
}

/// Puts the bytes a head was parsed from back, for more to be read or for hyper.
fn put_back(buf: &mut BytesMut, all: Bytes, head: Head) -> Head {
    *buf = all
        .try_into_mut()
        .unwrap_or_else(|all| BytesMut::from(&all[..]));
    head
}

/// How an answer's body is delimited on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// No body (204, 304, or an empty body).
    None,
    /// `Content-Length`.
    Length(u64),
    /// `Transfer-Encoding: chunked`: a body whose length is not known.
    Chunked,
}

/// The answer's framing, as hyper's server chooses it: the body's own exact length
/// first, then a `Content-Length` the answer carries, then chunks.
fn answer_framing(parts: &hyper::http::response::Parts, body: &Body) -> Framing {
    if parts.status.is_informational() {
        // Answered as an empty 500 (below).
        return Framing::Length(0);
    }
    if matches!(
        parts.status,
        StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
    ) {
        return Framing::None;
    }
    if body.is_end_stream() {
        return Framing::Length(0);
    }
    if let Some(n) = body.size_hint().exact() {
        return Framing::Length(n);
    }
    match parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| framing::parse_length(v.as_bytes()))
    {
        Some(n) => Framing::Length(n as u64),
        None => Framing::Chunked,
    }
}

/// Writes the answer's status line and headers; says whether the connection may stay
/// open after it.
fn write_head(
    out: &mut Vec<u8>,
    parts: &hyper::http::response::Parts,
    shape: Framing,
    drained: bool,
) -> bool {
    // hyper answers a 1xx from a service as a failure; so does this loop.
    let status = if parts.status.is_informational() {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        parts.status
    };
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    match parts.extensions.get::<hyper::ext::ReasonPhrase>() {
        Some(reason) if status == parts.status => out.extend_from_slice(reason.as_bytes()),
        _ => out.extend_from_slice(status.canonical_reason().unwrap_or("<none>").as_bytes()),
    }
    out.extend_from_slice(b"\r\n");
    let mut keep = !drained && status == parts.status;
    let mut dated = false;
    let mut closes = false;
    // hyper's failure for a 1xx carries no header of the service's; nor does this one.
    let headers = (status == parts.status).then_some(&parts.headers);
    for (name, value) in headers.into_iter().flatten() {
        match *name {
            // Framed below, from the body.
            header::CONTENT_LENGTH | header::TRANSFER_ENCODING => continue,
            header::DATE => dated = true,
            header::CONNECTION if framing::has_token(value.as_bytes(), b"close") => {
                closes = true;
                keep = false;
            }
            _ => {}
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if drained && !closes {
        out.extend_from_slice(b"connection: close\r\n");
    }
    match shape {
        Framing::Length(n) => {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        Framing::None => {}
    }
    if !dated {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(&framing::http_date());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    keep
}

/// A connection with the bytes already read from it put back in front, for hyper.
pub struct Prefixed {
    read: Bytes,
    io: TcpStream,
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.read.is_empty() {
            let n = self.read.len().min(buf.remaining());
            buf.put_slice(&self.read[..n]);
            self.read.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Head {
        let mut buf = BytesMut::from(text.as_bytes());
        parse_head(&mut buf, 1024)
    }

    #[test]
    fn a_plain_post_is_taken_with_its_headers_and_length() {
        let Head::Plain(request, length, rest) = parsed(
            "POST /a?b=c HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-A: 1\r\nx-a: 2\r\n\r\nhello",
        ) else {
            panic!("not plain");
        };
        assert_eq!(length, 5);
        assert_eq!(&rest[..], b"hello");
        assert_eq!(request.method(), Method::POST);
        assert_eq!(request.uri().path(), "/a");
        assert_eq!(request.uri().query(), Some("b=c"));
        assert_eq!(request.headers().get_all("x-a").iter().count(), 2);
        assert_eq!(request.headers()["host"], "x");
    }

    #[test]
    fn unusual_heads_go_to_hyper() {
        for head in [
            "GET / HTTP/1.0\r\n\r\n",
            "HEAD / HTTP/1.1\r\n\r\n",
            "CONNECT a:1 HTTP/1.1\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 2048\r\n\r\n",
            "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
            "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
            "GET / HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
            "GET / HTTP/1.1\r\nTE: trailers\r\n\r\n",
            "GET /\u{1} HTTP/1.1\r\n\r\n",
        ] {
            assert!(matches!(parsed(head), Head::Unusual), "{head:?}");
        }
        let mut partial = BytesMut::from(&b"GET / HTTP/1.1\r\nHost"[..]);
        assert!(matches!(parse_head(&mut partial, 1024), Head::Partial));
        assert_eq!(&partial[..], b"GET / HTTP/1.1\r\nHost", "put back whole");
        assert!(looks_like_http2(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
        assert!(looks_like_http2(b"PR"));
        assert!(!looks_like_http2(b"POST / HTTP/1.1"));
    }
}
