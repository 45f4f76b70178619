//! One HTTP/1.1 client connection: a request written (its head and body in one write
//! when the body is there), the answer's head read in place, and its body read by
//! whoever polls it, on that task. No task of its own and no channel: the proxy hop's
//! request and answer are read and written by the client connection's task. When the
//! answer's body ends and the connection may be used again, it is handed to a
//! [`Keep`] (the front's pool); an answer dropped before its end closes it.

use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use hyper::body::{Body as _, Frame, SizeHint};
use hyper::Method;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::http1::answer::{broken, parse_answer, Parsed, Reading, Reuse};
use crate::http1::framing::Step;
use crate::http1::head::{Answer, AnswerParts, Request};
use crate::http1::request::{request_framing, write_request, write_request_head};
use crate::http1::socket;
use crate::http1::timer::KeptTimer;

/// The largest answer head read (hyper's client reads up to about as much).
const MAX_HEAD: usize = 400 * 1024;

/// Each read's room.
const READ: usize = 4096;

/// Takes back a connection whose answer has ended, for the next request.
pub trait Keep: Send + Sync + 'static {
    /// `conn` may be used again.
    fn keep(&self, conn: Connection);
}

/// An open connection, between requests: the socket, and the timer its answers are
/// awaited with (kept from one request to the next: see [`KeptTimer`]).
#[derive(Debug)]
pub struct Connection {
    tcp: TcpStream,
    timer: KeptTimer,
    /// How long the agent said it keeps the connection open while idle
    /// (`Keep-Alive: timeout=`), once an answer has said so.
    keep_alive: Option<Duration>,
}

/// Whether `error` says the agent closed the connection before any byte of an answer:
/// on a connection it had kept idle, that is its idle timeout, not a failure of the
/// request, which it never read (RFC 9112, 9.3.1).
pub fn closed_unanswered(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::ConnectionAborted
}

fn unanswered() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection closed before an answer began",
    )
}

fn cut_short() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "connection closed before message completed",
    )
}

impl Connection {
    /// Connects to `address` (`host:port`).
    pub async fn connect(address: &str) -> io::Result<Self> {
        let tcp = TcpStream::connect(address).await?;
        // No Nagle: a request written in two segments would wait for the agent's ACK.
        tcp.set_nodelay(true)?;
        Ok(Self {
            tcp,
            timer: KeptTimer::default(),
            keep_alive: None,
        })
    }

    /// Whether the other end has closed it (or sent bytes nobody asked for) while it
    /// waited: such a connection is not used again.
    pub fn is_closed(&self) -> bool {
        socket::closed_while_idle(&self.tcp)
    }

    /// How long the agent said it keeps this connection while idle, if it said.
    pub fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }

    /// Sends `request` (its URI in origin form, its `Host` and framing headers the
    /// caller's) and reads the answer's head, by `deadline` (else a `TimedOut` error);
    /// the body streams after that, and the connection goes to `keep` at its end if it
    /// may be used again.
    pub async fn send(
        mut self,
        request: Request,
        keep: Arc<dyn Keep>,
        deadline: Instant,
    ) -> io::Result<Answer> {
        let mut timer = std::mem::take(&mut self.timer);
        let sent = {
            let exchange = self.exchange(request);
            let mut exchange = std::pin::pin!(exchange);
            poll_fn(|cx| {
                if let Poll::Ready(sent) = exchange.as_mut().poll(cx) {
                    return Poll::Ready(sent);
                }
                timer.poll_passed(deadline, cx).map(|()| {
                    Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no answer by the deadline",
                    ))
                })
            })
            .await
        };
        self.timer = timer;
        let (head, buf, reading, reuse) = sent?;
        if let Reuse::Yes(Some(timeout)) = reuse {
            self.keep_alive = Some(timeout);
        }
        let body = AnswerBody {
            conn: Some(self),
            buf,
            reading,
            reusable: reuse.may(),
            keep,
        };
        Ok(Answer::from_parts(head, Body::new(body)))
    }

    /// Writes `request` and reads its answer's head: the head, what was read after
    /// it, how the body is read, and whether the connection may be used again.
    async fn exchange(
        &mut self,
        request: Request,
    ) -> io::Result<(AnswerParts, BytesMut, Reading, Reuse)> {
        let head_only = request.method() == Method::HEAD;
        let (parts, body) = request.into_parts();
        let framing = request_framing(&parts.headers, &body);
        // Room for the head and a body of known length copied after it (grown later,
        // the head would be copied again).
        let copied = body
            .size_hint()
            .exact()
            .filter(|&n| n <= socket::COPY_AT_MOST as u64)
            .unwrap_or(0);
        let mut out = Vec::with_capacity(512 + copied as usize);
        write_request_head(&mut out, &parts, framing);
        // Not carried across the awaits below.
        drop(parts);
        let mut buf = BytesMut::new();
        let (head, reading, reuse) = {
            let writing = std::pin::pin!(write_request(&self.tcp, out, body, framing));
            let answer = std::pin::pin!(read_head(&self.tcp, &mut buf, head_only));
            written_and_answered(writing, answer).await?
        };
        Ok((head, buf, reading, reuse))
    }
}

/// The answer's head, how its body is read, and whether the connection may be used
/// again after it.
type Head = (AnswerParts, Reading, Reuse);

/// Waits for the request to be written (`writing`) and its answer's head to be read
/// (`answer`), watching for the answer while the request is written: an agent may
/// answer as soon as it has the head (a 413, a 401) and read no more of the body, so a
/// body written to its end would wait for room that never comes. An answer like that,
/// an error or one that closes the connection, ends the writing, as RFC 9112 (section
/// 9.5) asks of a client; any other is taken once the body is all sent. A connection
/// whose request was not all sent is not used again.
async fn written_and_answered(
    mut writing: Pin<&mut impl Future<Output = io::Result<()>>>,
    mut answer: Pin<&mut impl Future<Output = io::Result<Head>>>,
) -> io::Result<Head> {
    // The request first: one of a few KiB is written at the first poll, and the answer
    // is then waited for as it always was.
    let first = poll_fn(|cx| match writing.as_mut().poll(cx) {
        Poll::Ready(written) => Poll::Ready(First::Written(written)),
        Poll::Pending => answer.as_mut().poll(cx).map(First::Answered),
    })
    .await;
    match first {
        First::Written(Ok(())) => answer.await,
        // The request's own body failed (cut at a limit, shorter or longer than its
        // length, its source broken): the agent waits for the rest of it, and no answer
        // is waited for.
        First::Written(Err(e))
            if matches!(e.kind(), io::ErrorKind::Other | io::ErrorKind::InvalidData) =>
        {
            Err(e)
        }
        // The agent closed the connection while the request was written: it may have
        // answered first, and its answer says more than the write's error (as does its
        // closing the connection with no answer at all).
        First::Written(Err(e)) => match answer.await {
            Ok((head, reading, _)) => Ok((head, reading, Reuse::No)),
            Err(closed) if closed_unanswered(&closed) => Err(closed),
            Err(_) => Err(e),
        },
        First::Answered(Ok((head, reading, reuse))) => {
            let refused =
                !reuse.may() || head.status.is_client_error() || head.status.is_server_error();
            if refused {
                return Ok((head, reading, Reuse::No));
            }
            // Answered early but still reading: the rest of the body is sent.
            let written = writing.await.is_ok();
            Ok((head, reading, if written { reuse } else { Reuse::No }))
        }
        First::Answered(Err(e)) => Err(e),
    }
}

/// What ended first while a request was written: the writing, or the answer's head.
enum First {
    Written(io::Result<()>),
    Answered(io::Result<Head>),
}

/// Reads the answer's head into `buf`, skipping interim answers.
async fn read_head(tcp: &TcpStream, buf: &mut BytesMut, head_only: bool) -> io::Result<Head> {
    loop {
        if !buf.is_empty() {
            match parse_answer(buf, head_only)? {
                Some(Parsed::Final(head, reading, reuse)) => return Ok((head, reading, reuse)),
                // An interim answer (100 Continue and the like): the final one follows,
                // perhaps already read.
                Some(Parsed::Interim) => continue,
                None if buf.len() > MAX_HEAD => return Err(broken("answer head too large")),
                None => {}
            }
        }
        buf.reserve(READ);
        match read_more(tcp, buf).await {
            Ok(true) => {}
            // Nothing of an answer came: the agent closed the connection unanswered.
            Ok(false) if buf.is_empty() => return Err(unanswered()),
            Err(e) if buf.is_empty() && e.kind() == io::ErrorKind::ConnectionReset => {
                return Err(unanswered())
            }
            Ok(false) => return Err(cut_short()),
            Err(e) => return Err(e),
        }
    }
}

/// Reads what the socket has into `buf` (waiting for some): `false` at its end.
async fn read_more(tcp: &TcpStream, buf: &mut BytesMut) -> io::Result<bool> {
    loop {
        poll_fn(|cx| tcp.poll_read_ready(cx)).await?;
        match socket::read_into(tcp, buf) {
            Ok(n) => return Ok(n > 0),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// An answer's body, read from its connection by whoever polls it.
struct AnswerBody {
    conn: Option<Connection>,
    /// What was read after the head and not yet given out.
    buf: BytesMut,
    reading: Reading,
    reusable: bool,
    keep: Arc<dyn Keep>,
}

impl AnswerBody {
    /// The body has ended: the connection goes back if nothing else came on it.
    fn ended(&mut self) {
        if let Some(conn) = self.conn.take() {
            if self.reusable && self.buf.is_empty() {
                self.keep.keep(conn);
            }
        }
    }

    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        let Some(conn) = &self.conn else {
            return Poll::Ready(Ok(false));
        };
        loop {
            std::task::ready!(conn.tcp.poll_read_ready(cx))?;
            self.buf.reserve(READ);
            match socket::read_into(&conn.tcp, &mut self.buf) {
                Ok(n) => return Poll::Ready(Ok(n > 0)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl hyper::body::Body for AnswerBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        let this = &mut *self;
        loop {
            match &mut this.reading {
                Reading::Length(0) => {
                    this.ended();
                    return Poll::Ready(None);
                }
                Reading::Length(left) => {
                    if !this.buf.is_empty() {
                        let n = usize::try_from(*left)
                            .map_or(this.buf.len(), |left| left.min(this.buf.len()));
                        *left -= n as u64;
                        let data = this.buf.split_to(n).freeze();
                        if *left == 0 {
                            this.ended();
                        }
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                }
                Reading::Chunked(state) => match state.step(&mut this.buf) {
                    Ok(Step::Data(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                    Ok(Step::Done) => {
                        this.ended();
                        return Poll::Ready(None);
                    }
                    Ok(Step::More) => {}
                    Err(e) => {
                        this.conn = None;
                        return Poll::Ready(Some(Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            e,
                        ))));
                    }
                },
                Reading::ToClose => {
                    if !this.buf.is_empty() {
                        let data = this.buf.split().freeze();
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                }
            }
            match std::task::ready!(this.poll_read(cx)) {
                Ok(true) => {}
                Ok(false) if this.reading == Reading::ToClose => {
                    this.conn = None;
                    this.reading = Reading::Length(0);
                    return Poll::Ready(None);
                }
                Ok(false) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(cut_short())));
                }
                Err(e) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.reading == Reading::Length(0)
            || matches!(self.reading, Reading::Chunked(state) if state.is_done())
    }

    fn size_hint(&self) -> SizeHint {
        match self.reading {
            Reading::Length(n) => SizeHint::with_exact(n),
            _ => SizeHint::default(),
        }
    }
}

impl Drop for AnswerBody {
    fn drop(&mut self) {
        // An answer with no body, or read to its end without a last poll: the
        // connection goes back. Any other is dropped with its connection.
        if self.is_end_stream() {
            self.ended();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::http1::head::Headers;
    use hyper::StatusCode;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A body larger than loopback's socket buffers can hold unread.
    const LARGE: usize = 16 << 20;

    struct Dropped;

    impl Keep for Dropped {
        fn keep(&self, _conn: Connection) {}
    }

    /// An agent that reads one request's head, writes `answer` at once, then reads the
    /// body to its end when `reads_body` (returning how many bytes of it came), or
    /// holds the connection and reads nothing.
    async fn agent(
        answer: &'static [u8],
        reads_body: bool,
    ) -> (String, tokio::task::JoinHandle<usize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let task = tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            let mut chunk = vec![0u8; 64 * 1024];
            let head_end = loop {
                let n = tcp.read(&mut chunk).await.unwrap();
                got.extend_from_slice(&chunk[..n]);
                if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at + 4;
                }
            };
            tcp.write_all(answer).await.unwrap();
            if !reads_body {
                std::future::pending::<()>().await;
            }
            let mut body = got.len() - head_end;
            while body < LARGE {
                match tcp.read(&mut chunk).await.unwrap() {
                    0 => break,
                    n => body += n,
                }
            }
            body
        });
        (address, task)
    }

    async fn send_large(address: &str) -> io::Result<Answer> {
        let request = Request::new(
            Method::POST,
            "/upload".parse().unwrap(),
            Headers::new(),
            Body::from(vec![b'x'; LARGE]),
        );
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        let conn = Connection::connect(address).await?;
        conn.send(request, Arc::new(Dropped), deadline).await
    }

    #[tokio::test]
    async fn an_answer_refusing_the_body_ends_its_writing() {
        let (address, agent) = agent(
            b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\n\r\ntoo large",
            false,
        )
        .await;
        let answer = send_large(&address).await.expect("the agent's answer");
        assert_eq!(answer.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let body = axum::body::to_bytes(answer.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(&body[..], b"too large");
        agent.abort();
    }

    #[tokio::test]
    async fn an_early_success_still_gets_the_whole_body() {
        let (address, agent) = agent(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true).await;
        let answer = send_large(&address).await.expect("the agent's answer");
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(agent.await.unwrap(), LARGE, "the body was sent whole");
    }
}
