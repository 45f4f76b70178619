//! The front's HTTP/1.1 connections to its one agent, kept alive and reused: the most
//! recently used idle connection is taken first, and a connection goes back to the pool
//! the moment its answer's body ends, from the reader of that body. No task per request
//! and no table keyed by host (there is one host): what a general client spends on
//! those, this proxy hop does not (issue 50).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// A clock read cheaply: a connection's idle time is looked at on every request, and a
// few milliseconds of resolution are plenty for bounds of seconds.
use coarsetime::Instant;

use axum::body::Body;

use crate::http1::client::{closed_unanswered, Connection, Keep};
use crate::http1::head::{Answer, Request};

/// Idle connections kept at most; one more is closed as it comes back.
const MAX_IDLE: usize = 256;
/// A connection idle at least this long may have been closed by the agent's own idle
/// timeout as the request went out; a request sent on it is kept (when small and
/// whole) to be sent again on a new connection if the agent closed it unanswered.
const REPLAY_AFTER: Duration = Duration::from_secs(1);
/// The largest body kept for such a replay.
const REPLAY_AT_MOST: u64 = 64 * 1024;
/// How much sooner than an agent's `Keep-Alive: timeout=` its connection is given up.
const KEEP_ALIVE_MARGIN: Duration = Duration::from_secs(1);
/// How long an idle connection is kept (hyper-util's client keeps one as long). No
/// timer enforces it: an older one is closed when the next connection comes back, so
/// with no traffic at all the last ones stay open (at most [`MAX_IDLE`]) until the
/// agent closes them.
const IDLE_FOR: Duration = Duration::from_secs(90);

/// Connections to one `host:port`, kept per event loop: a connection is registered
/// with the loop that made it, and is only used again from that loop, where its
/// events are read (a connection taken on another loop would be woken across threads).
#[derive(Debug)]
pub struct Pool {
    /// What `TcpStream::connect` is given: the upstream's host and port.
    address: String,
    /// Slot 0 for threads that are no loop of the front's; then one a loop.
    idle: Box<[Slot]>,
    /// How long a connection waits before a request sent on it is kept for a replay
    /// ([`REPLAY_AFTER`]).
    replay_after: Duration,
}

/// One loop's idle connections, on a cache line of its own: loops side by side would
/// otherwise take the same line from each other's core at every request.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot(Mutex<VecDeque<Idle>>);

thread_local! {
    /// Which of the pool's slots this thread uses (see [`set_loop`]).
    static SLOT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The most event loops the pool keeps connections apart for; more share slots.
const MAX_LOOPS: usize = 64;

/// Says that this thread is the front's event loop `index` (from 0): its connections
/// to the agent are kept apart from other threads'.
pub fn set_loop(index: usize) {
    SLOT.with(|slot| slot.set(1 + index % MAX_LOOPS));
}

#[derive(Debug)]
struct Idle {
    conn: Connection,
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
    Http(std::io::Error),
    /// No answer (or no connection) by the deadline.
    #[error("no answer by the deadline")]
    TimedOut,
}

impl Pool {
    /// A pool of connections to `address` (`host:port`), none made yet.
    pub fn new(address: String) -> Self {
        Self {
            address,
            idle: (0..=MAX_LOOPS).map(|_| Slot::default()).collect(),
            replay_after: REPLAY_AFTER,
        }
    }

    /// Sends `request` (its URI in origin form, its `Host` set) on the most recently
    /// used idle connection the agent has not closed, or a new one, and waits for the
    /// answer's head until `deadline`. The connection comes back when the answer's body
    /// ends.
    pub async fn send(
        self: &Arc<Self>,
        request: Request,
        deadline: tokio::time::Instant,
    ) -> Result<Answer, PoolError> {
        let Some((conn, idle_for)) = self.checkout() else {
            let conn = self.connect(deadline).await?;
            return self.send_on(conn, request, deadline).await;
        };
        if idle_for < self.replay_after {
            return self.send_on(conn, request, deadline).await;
        }
        let (request, again) = replayable(request).await?;
        match (self.send_on(conn, request, deadline).await, again) {
            // The agent's idle timeout closed the connection as the request went out:
            // it never read it, so it goes again on a new connection (RFC 9112, 9.3.1).
            (Err(PoolError::Http(e)), Some(again)) if closed_unanswered(&e) => {
                let conn = self.connect(deadline).await?;
                self.send_on(conn, again, deadline).await
            }
            (sent, _) => sent,
        }
    }

    /// A new connection, made by `deadline`.
    async fn connect(&self, deadline: tokio::time::Instant) -> Result<Connection, PoolError> {
        // A timer of its own: connections are made seldom.
        match tokio::time::timeout_at(deadline, Connection::connect(&self.address)).await {
            Ok(made) => made.map_err(PoolError::Connect),
            Err(_) => Err(PoolError::TimedOut),
        }
    }

    /// Sends `request` on `conn`.
    async fn send_on(
        self: &Arc<Self>,
        conn: Connection,
        request: Request,
        deadline: tokio::time::Instant,
    ) -> Result<Answer, PoolError> {
        let keep: Arc<dyn Keep> = Arc::clone(self) as Arc<dyn Keep>;
        conn.send(request, keep, deadline)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut => PoolError::TimedOut,
                _ => PoolError::Http(e),
            })
    }

    /// The most recently used idle connection that is still open, and how long it
    /// waited.
    fn checkout(&self) -> Option<(Connection, Duration)> {
        loop {
            let idle = self.slot().lock().expect("not poisoned").pop_back()?;
            let idle_for = Duration::from(idle.since.elapsed());
            // Closed by the agent while it waited (its idle timeout), or about to be by
            // what its `Keep-Alive` said: nothing of the request has gone, and it goes
            // on another.
            let expiring = idle
                .conn
                .keep_alive()
                .is_some_and(|timeout| idle_for + KEEP_ALIVE_MARGIN >= timeout);
            if !expiring && !idle.conn.is_closed() {
                return Some((idle.conn, idle_for));
            }
        }
    }

    /// A connection whose answer has ended, kept for the next request (the oldest
    /// idle ones closed when there are too many or they have waited too long).
    fn checkin(&self, conn: Connection) {
        let now = Instant::now();
        let mut idle = self.slot().lock().expect("not poisoned");
        while idle.front().is_some_and(|oldest| {
            idle.len() >= MAX_IDLE || Duration::from(now.duration_since(oldest.since)) > IDLE_FOR
        }) {
            idle.pop_front();
        }
        idle.push_back(Idle { conn, since: now });
    }
}

/// `request`, and a copy of it to send again when its body is small and whole; a body
/// that fails as it is read fails the request (its fault said by the body's bound).
async fn replayable(request: Request) -> Result<(Request, Option<Request>), PoolError> {
    use http_body_util::BodyExt as _;
    let small = http_body::Body::size_hint(request.body())
        .exact()
        .is_some_and(|n| n <= REPLAY_AT_MOST);
    if !small {
        return Ok((request, None));
    }
    let (parts, body) = request.into_parts();
    let bytes = body
        .collect()
        .await
        .map_err(|e| PoolError::Http(std::io::Error::other(e)))?
        .to_bytes();
    let again = Request::from_parts(parts.clone(), Body::from(bytes.clone()));
    Ok((Request::from_parts(parts, Body::from(bytes)), Some(again)))
}

impl Pool {
    /// This thread's idle connections.
    fn slot(&self) -> &Mutex<VecDeque<Idle>> {
        &self.idle[SLOT.with(std::cell::Cell::get)].0
    }
}

impl Keep for Pool {
    fn keep(&self, conn: Connection) {
        self.checkin(conn);
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

    fn get(address: &str) -> Request {
        let request = hyper::Request::builder()
            .uri("/x")
            .header(hyper::header::HOST, address)
            .body(axum::body::Body::empty())
            .unwrap();
        Request::from(request)
    }

    /// A deadline no test here reaches.
    fn soon() -> tokio::time::Instant {
        tokio::time::Instant::now() + Duration::from_secs(30)
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

    #[tokio::test]
    async fn a_connection_whose_answer_was_read_is_used_again() {
        let (address, accepted, _) = agent(OK, false).await;
        let pool = Arc::new(Pool::new(address.clone()));
        for _ in 0..3 {
            let answer = pool.send(get(&address), soon()).await.unwrap();
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
            let answer = pool.send(get(&address), soon()).await.unwrap();
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
        drop(pool.send(get(&address), soon()).await.unwrap());
        assert!(pool.slot().lock().unwrap().is_empty());
        drop(pool.send(get(&address), soon()).await.unwrap());
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn each_request_is_timed_from_its_own_start_on_a_kept_connection() {
        // The agent answers the first request and never the second, on one connection.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = tcp.read(&mut buf).await.unwrap();
            tcp.write_all(OK).await.unwrap();
            let _ = tcp.read(&mut buf).await.unwrap();
            std::future::pending::<()>().await;
        });
        let pool = Arc::new(Pool::new(address.clone()));
        // The first request's deadline falls while the second one waits: the second
        // is given a longer timeout, so its deadline is the later one whenever it is
        // sent.
        let first = pool
            .send(
                get(&address),
                tokio::time::Instant::now() + Duration::from_secs(3),
            )
            .await
            .unwrap();
        first.into_body().collect().await.unwrap();
        let second = tokio::time::Instant::now();
        let timeout = Duration::from_secs(4);
        let error = pool
            .send(get(&address), second + timeout)
            .await
            .unwrap_err();
        assert!(matches!(error, PoolError::TimedOut), "{error}");
        assert!(tokio::time::Instant::now() >= second + timeout);
    }

    #[tokio::test]
    async fn a_request_the_agent_closed_its_idle_connection_on_goes_again_unread() {
        // The agent answers one request, then closes that connection as the next
        // arrives, unread (its idle timeout firing as the request went out); a new
        // connection is answered.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let (seen, mut heads) = mpsc::unbounded_channel::<usize>();
        tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = tcp.read(&mut buf).await.unwrap();
            tcp.write_all(OK).await.unwrap();
            let n = tcp.read(&mut buf).await.unwrap();
            seen.send(n).unwrap();
            drop(tcp);
            let (mut tcp, _) = listener.accept().await.unwrap();
            let n = tcp.read(&mut buf).await.unwrap();
            seen.send(n).unwrap();
            tcp.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nagain")
                .await
                .unwrap();
            std::future::pending::<()>().await;
        });
        let mut pool = Pool::new(address.clone());
        // Every kept connection counts as one the agent may have timed out.
        pool.replay_after = Duration::ZERO;
        let pool = Arc::new(pool);
        let first = pool.send(get(&address), soon()).await.unwrap();
        first.into_body().collect().await.unwrap();
        let post = hyper::Request::post("/y")
            .header(hyper::header::HOST, &address)
            .header(hyper::header::CONTENT_LENGTH, "4")
            .body(axum::body::Body::from("body"))
            .unwrap();
        let answer = pool.send(Request::from(post), soon()).await.unwrap();
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"again");
        let (closed_on, answered_on) = (heads.recv().await.unwrap(), heads.recv().await.unwrap());
        assert!(
            closed_on > 0 && closed_on == answered_on,
            "the same request, sent again whole"
        );
    }

    #[tokio::test]
    async fn a_connection_is_given_up_before_the_agent_s_keep_alive_timeout() {
        // An agent that says it keeps idle connections one second: the front's margin is
        // a second, so each request goes on a new connection.
        const SAID: &[u8] =
            b"HTTP/1.1 200 OK\r\nkeep-alive: timeout=1\r\ncontent-length: 2\r\n\r\nok";
        let (address, accepted, _) = agent(SAID, false).await;
        let pool = Arc::new(Pool::new(address.clone()));
        for _ in 0..2 {
            let answer = pool.send(get(&address), soon()).await.unwrap();
            answer.into_body().collect().await.unwrap();
        }
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
        let error = pool.send(get(&address), soon()).await.unwrap_err();
        assert!(matches!(error, PoolError::Connect(_)), "{error}");
    }
}
