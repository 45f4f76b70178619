//! The front's HTTP/1.1 connections to its one agent, kept alive and reused: the most
//! recently used idle connection is taken first, and a connection goes back to the pool
//! the moment its answer's body ends, from the reader of that body. No task per request
//! and no table keyed by host (there is one host): what a general client spends on
//! those, this proxy hop does not (issue 50).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Idle connections kept at most; one more is closed as it comes back.
const MAX_IDLE: usize = 256;
/// How long an idle connection is kept (hyper-util's client keeps one as long). No
/// timer enforces it: an older one is closed when the next connection comes back, so
/// with no traffic at all the last ones stay open (at most [`MAX_IDLE`]) until the
/// agent closes them.
const IDLE_FOR: Duration = Duration::from_secs(90);

/// Connections to one `host:port`.
#[derive(Debug)]
pub struct Pool {
    /// What `TcpStream::connect` is given: the upstream's host and port.
    address: String,
    idle: Mutex<VecDeque<Idle>>,
}

#[derive(Debug)]
struct Idle {
    sender: SendRequest<Body>,
    since: Instant,
}

/// Why a request was not sent, or got no answer.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// No connection could be made.
    #[error("tcp connect error")]
    Connect(#[source] std::io::Error),
    /// The exchange broke.
    #[error(transparent)]
    Http(#[from] hyper::Error),
}

impl Pool {
    /// A pool of connections to `address` (`host:port`), none made yet.
    pub fn new(address: String) -> Self {
        Self {
            address,
            idle: Mutex::new(VecDeque::new()),
        }
    }

    /// Sends `request` (its URI in origin form, its `Host` set) on an idle connection,
    /// or a new one, and waits for the answer's head. A request an idle connection
    /// closed under before it was written is sent again on a new one, as hyper-util's
    /// client does: nothing of it reached the agent.
    pub async fn send(
        self: &Arc<Self>,
        mut request: Request<Body>,
    ) -> Result<Response<Body>, PoolError> {
        loop {
            let (mut sender, reused) = match self.checkout().await {
                Some(sender) => (sender, true),
                // Boxed: a connection's handshake is a large future, made rarely.
                None => (Box::pin(self.connect()).await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(answer) => {
                    return Ok(answer.map(|body| {
                        Body::new(Reused {
                            body,
                            back: Some((sender, Arc::clone(self))),
                        })
                    }))
                }
                Err(mut failed) => match failed.take_message() {
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(PoolError::Http(failed.into_error())),
                },
            }
        }
    }

    /// The most recently used idle connection that is still open, ready for a request.
    async fn checkout(&self) -> Option<SendRequest<Body>> {
        loop {
            let mut idle = self.take()?;
            if idle.sender.is_closed() {
                continue;
            }
            // Back in the pool as its answer ended; ready once its connection has
            // finished reading that answer, which is at once or nearly.
            if idle.sender.ready().await.is_ok() {
                return Some(idle.sender);
            }
        }
    }

    fn take(&self) -> Option<Idle> {
        self.idle.lock().expect("not poisoned").pop_back()
    }

    /// A new connection, its reading and writing driven by a task of its own.
    async fn connect(&self) -> Result<SendRequest<Body>, PoolError> {
        let tcp = TcpStream::connect(self.address.as_str())
            .await
            .map_err(PoolError::Connect)?;
        // No Nagle: a request written in two segments would wait for the agent's ACK.
        let _ = tcp.set_nodelay(true);
        let (sender, connection) = http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "a connection to the agent ended with an error");
            }
        });
        Ok(sender)
    }

    /// A connection whose answer has ended, kept for the next request (the oldest
    /// idle ones closed when there are too many or they have waited too long).
    fn checkin(&self, sender: SendRequest<Body>) {
        if sender.is_closed() {
            return;
        }
        let now = Instant::now();
        let mut idle = self.idle.lock().expect("not poisoned");
        while idle
            .front()
            .is_some_and(|oldest| idle.len() >= MAX_IDLE || now - oldest.since > IDLE_FOR)
        {
            idle.pop_front();
        }
        idle.push_back(Idle { sender, since: now });
    }
}

/// An answer's body that gives its connection back to the pool when it ends. A body
/// dropped before its end takes its connection with it: hyper closes a connection
/// whose answer was not read to the end.
struct Reused {
    body: Incoming,
    back: Option<(SendRequest<Body>, Arc<Pool>)>,
}

impl Reused {
    fn give_back(&mut self) {
        if let Some((sender, pool)) = self.back.take() {
            pool.checkin(sender);
        }
    }
}

impl hyper::body::Body for Reused {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => self.give_back(),
            Poll::Ready(Some(Ok(_))) if self.body.is_end_stream() => self.give_back(),
            Poll::Ready(Some(Err(_))) => self.back = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Reused {
    fn drop(&mut self) {
        // An answer with no body (or one read to its end without a last poll).
        if hyper::body::Body::is_end_stream(&self.body) {
            self.give_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;
    use tokio::sync::mpsc;

    use super::*;

    /// A raw agent: counts the connections it accepts and answers each GET with
    /// `answer`; with `close`, it closes each connection after one answer, without
    /// saying so (as an agent's idle timeout does), and reports it on `closed`.
    async fn agent(
        answer: &'static [u8],
        close: bool,
    ) -> (String, Arc<AtomicUsize>, mpsc::UnboundedReceiver<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&accepted);
        let (closed, closes) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let (mut tcp, _) = listener.accept().await.unwrap();
                counted.fetch_add(1, Ordering::SeqCst);
                let closed = closed.clone();
                tokio::spawn(async move {
                    let mut read = Vec::new();
                    let mut buf = [0u8; 1024];
                    loop {
                        let Ok(n) = tcp.read(&mut buf).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        read.extend_from_slice(&buf[..n]);
                        while let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
                            read.drain(..end + 4);
                            if tcp.write_all(answer).await.is_err() {
                                return;
                            }
                            if close {
                                drop(tcp);
                                let _ = closed.send(());
                                return;
                            }
                        }
                    }
                });
            }
        });
        (address, accepted, closes)
    }

    fn get(address: &str) -> Request<Body> {
        Request::builder()
            .uri("/x")
            .header(hyper::header::HOST, address)
            .body(Body::empty())
            .unwrap()
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

    #[tokio::test]
    async fn a_connection_whose_answer_was_read_is_used_again() {
        let (address, accepted, _) = agent(OK, false).await;
        let pool = Arc::new(Pool::new(address.clone()));
        for _ in 0..3 {
            let answer = pool.send(get(&address)).await.unwrap();
            let body = answer.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], b"ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_the_agent_closed_while_idle_costs_no_request() {
        let (address, accepted, mut closes) = agent(OK, true).await;
        let pool = Arc::new(Pool::new(address.clone()));
        for _ in 0..3 {
            let answer = pool.send(get(&address)).await.unwrap();
            let body = answer.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], b"ok");
            // The connection is back in the pool, and closed by the agent.
            closes.recv().await.unwrap();
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_connection_whose_answer_was_dropped_unread_is_not_used_again() {
        let long: &'static [u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\nok";
        let (address, accepted, _) = agent(long, false).await;
        let pool = Arc::new(Pool::new(address.clone()));
        drop(pool.send(get(&address)).await.unwrap());
        assert!(pool.idle.lock().unwrap().is_empty());
        drop(pool.send(get(&address)).await.unwrap());
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_agent_that_is_not_there_is_a_connect_error() {
        // A port held but never listened on: every connection to it is refused, and no
        // other process can take it while the test runs.
        let held = tokio::net::TcpSocket::new_v4().unwrap();
        held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = held.local_addr().unwrap().to_string();
        let pool = Arc::new(Pool::new(address.clone()));
        let error = pool.send(get(&address)).await.unwrap_err();
        assert!(matches!(error, PoolError::Connect(_)), "{error}");
    }
}
