//! The front's listener: its connections get the API listener's limits (the idle
//! timeout, the header list size, HTTP/2's concurrent streams and keep-alive pings), and
//! each request is handed to the front. HTTP/1.1 and HTTP/2 (prior knowledge) both.
//! Each connection lives on one of the front's event loops (one a core), served first
//! by the front's own HTTP/1.1 loop (`http1::serve`), and by hyper's server once that
//! loop hands it over (HTTP/2, and the HTTP/1.1 requests it does not serve).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use crate::config::Limits;
use crate::front::limits::Timed;
use crate::front::records::Records;
use crate::front::{Front, FrontOptions};
use crate::http1::head::Request;
use crate::http1::serve::Handler as _;
use crate::http1::serve::{self as http1_serve, Protocol};
use crate::registry::Registry;
use crate::run::Runner;
use crate::telemetry::Tracer;
use crate::transport::front_loops::Loops;
use crate::transport::layers::idle::{CallEnd, IdleIo};

/// The health service name of the front: SERVING while it has a card to serve.
pub const FRONT_HEALTH_SERVICE: &str = "a2a.commands.v1.Front";

/// What the front is started with, beside its settings: the API's runner and
/// registry, the server's tracer, health and drain.
pub struct Started<'a> {
    /// The registry whose store keeps the front's records.
    pub registry: &'a Registry,
    /// The runner the API runs commands with.
    pub runner: Arc<Runner>,
    /// The server's tracer, if traces are on.
    pub tracer: Option<Tracer>,
    /// Where readiness is reported.
    pub health: HealthReporter,
    /// Cancelled when the server begins to drain.
    pub draining: CancellationToken,
    /// The API listener's connection limits, which the front's connections get too.
    pub limits: Limits,
    /// How long requests in flight are waited for at a drain.
    pub drain: Duration,
}

/// Why the front could not start.
#[derive(Debug)]
pub enum StartFailed {
    /// Its task records could not be opened.
    Records(String),
    /// The verifier of callers' JWTs could not start.
    Callers(String),
    /// The verifier of the agent's card could not start.
    CardKeys(String),
}

/// Starts the front on `listener` (bound at `front_addr`): its records opened, its
/// callers' verifier started, its readiness kept in the health service; the task
/// serves until the drain.
pub async fn start(
    options: &FrontOptions,
    listener: TcpListener,
    front_addr: std::net::SocketAddr,
    started: Started<'_>,
) -> Result<JoinHandle<()>, StartFailed> {
    let Started {
        registry,
        runner,
        tracer,
        health,
        draining,
        limits,
        drain,
    } = started;
    let records = registry
        .open_records(options.records)
        .map_err(StartFailed::Records)?;
    let callers = match &options.jwt {
        Some(jwt) => Some(
            crate::front::callers::Verifier::start(jwt.clone())
                .await
                .map_err(StartFailed::Callers)?,
        ),
        None => None,
    };
    let cards = match &options.card_keys {
        Some((keys, refresh)) => Some(
            crate::front::card_verify::CardVerifier::start(keys.clone(), *refresh)
                .await
                .map_err(StartFailed::CardKeys)?,
        ),
        None => None,
    };
    let front = Arc::new(Front::new(
        options.clone(),
        runner,
        Records::new(records),
        front_addr,
        tracer,
        (callers, cards),
    ));
    // Readiness: the front's health service is SERVING while it has a card to serve
    // (the agent's, fetched now and at each refresh).
    health
        .set_service_status(FRONT_HEALTH_SERVICE, ServingStatus::NotServing)
        .await;
    tokio::spawn(keep_ready(Arc::clone(&front), health, draining.clone()));
    Ok(tokio::spawn(async move {
        let stop = async move { draining.cancelled().await };
        serve(front, listener, &limits, stop, drain).await;
    }))
}

/// Sets the front's health service as it has a card to serve or not, each second,
/// until the drain.
async fn keep_ready(front: Arc<Front>, health: HealthReporter, draining: CancellationToken) {
    let mut last = None;
    while !draining.is_cancelled() {
        let serving = front.has_card().await;
        if last != Some(serving) {
            let status = if serving {
                ServingStatus::Serving
            } else {
                ServingStatus::NotServing
            };
            health
                .set_service_status(FRONT_HEALTH_SERVICE, status)
                .await;
            last = Some(serving);
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = draining.cancelled() => {}
        }
    }
}

/// HTTP/1.1's smallest read buffer hyper takes: its request head must fit in it.
const MIN_HTTP1_BUFFER: usize = 8192;

/// Serves `listener` with `front` until `stop` resolves; then waits (at most `drain`)
/// for the requests in flight. HTTP/1.1 connections are served by the front's own loop
/// (`http1::serve`), which hands what it does not serve to hyper's server, as it does
/// HTTP/2.
pub async fn serve(
    front: Arc<Front>,
    listener: TcpListener,
    limits: &Limits,
    stop: impl Future<Output = ()>,
    drain: Duration,
) {
    // HTTP/2's streams run on the server's runtime, its connection on an event loop:
    // one connection's concurrent calls are spread over the cores.
    let mut builder = auto::Builder::new(OnRuntime(tokio::runtime::Handle::current()));
    let max_head = (limits.max_header_list_bytes as usize).max(MIN_HTTP1_BUFFER);
    builder
        .http1()
        .timer(TokioTimer::new())
        .max_buf_size(max_head)
        // A head that stops arriving closes its connection (hyper says nothing then);
        // the front's own loop answers it 408.
        .header_read_timeout(limits.request_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.max_concurrent_streams)
        .max_header_list_size(limits.max_header_list_bytes)
        .keep_alive_interval(limits.keepalive)
        .keep_alive_timeout(limits.keepalive_timeout);
    // A connection handed over speaks what its first bytes said, and only that: an
    // HTTP/1.1 connection never turns into HTTP/2 on a preface sent later.
    let builders = Arc::new(Builders {
        http1: builder.clone().http1_only(),
        http2: builder.http2_only(),
    });
    let settings = http1_serve::Settings {
        idle: limits.idle_timeout,
        max_head,
        max_body: front.max_body_bytes(),
        read: limits.request_read_timeout,
        send: Some(front.send_timeout()),
    };
    // Every connection's task is tracked, and told of the drain by `draining`.
    let connections = TaskTracker::new();
    let draining = CancellationToken::new();
    let loops = match Loops::start() {
        Ok(loops) => Some(loops),
        Err(e) => {
            tracing::warn!(error = %e, "the front's event loops could not start; its connections share the server's runtime");
            None
        }
    };
    // Connections open now: past the bound a new one is closed unread, as nginx does
    // past `worker_connections`, so that a flood of idle connections cannot take every
    // descriptor the sidecar has.
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let max_connections = front.max_connections();
    let mut stop = std::pin::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of descriptors and the like: the next accept may succeed.
                tracing::warn!(error = %e, "the front could not accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(slot) = Slot::take(&open, max_connections) else {
            crate::metrics::metrics().front.connections_refused.inc();
            tracing::debug!(
                max_connections,
                "a front connection was closed unread: --front-max-connections are open"
            );
            drop(tcp);
            continue;
        };
        // No Nagle: an answer written in more than one segment would otherwise wait for
        // the client's delayed ACK (up to 200 ms on Linux).
        let _ = tcp.set_nodelay(true);
        let tcp = match (&loops, tcp) {
            (None, tcp) => Accepted::Here(tcp),
            (Some(_), tcp) => match tcp.into_std() {
                Ok(tcp) => Accepted::Moved(tcp),
                Err(e) => {
                    tracing::warn!(error = %e, "a front connection could not leave the accepting runtime");
                    continue;
                }
            },
        };
        let served = connection(
            slot,
            tcp,
            Arc::clone(&front),
            Arc::clone(&builders),
            settings,
            draining.clone(),
        );
        match &loops {
            Some(loops) => {
                connections.spawn_on(served, loops.next());
            }
            None => {
                connections.spawn(served);
            }
        }
    }
    drop(listener);
    draining.cancel();
    connections.close();
    if tokio::time::timeout(drain, connections.wait())
        .await
        .is_err()
    {
        tracing::debug!("the front's connections did not all end within the drain");
    }
    drop(loops);
}

/// Spawns what hyper's server runs beside a connection (each HTTP/2 stream's call) on
/// the server's multi-threaded runtime.
#[derive(Clone)]
pub struct OnRuntime(tokio::runtime::Handle);

impl<F> hyper::rt::Executor<F> for OnRuntime
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        self.0.spawn(future);
    }
}

/// One open client connection's place under `--front-max-connections`, given back
/// when the connection's task ends.
struct Slot(Arc<std::sync::atomic::AtomicUsize>);

impl Slot {
    /// A place, if fewer than `max` are taken.
    fn take(open: &Arc<std::sync::atomic::AtomicUsize>, max: usize) -> Option<Self> {
        use std::sync::atomic::Ordering::Relaxed;
        open.fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1))
            .ok()?;
        crate::metrics::metrics().front.connections.inc();
        Some(Self(Arc::clone(open)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        crate::metrics::metrics().front.connections.dec();
    }
}

/// hyper's servers for the connections the front's own loop hands over, one for each
/// protocol.
struct Builders {
    http1: auto::Builder<OnRuntime>,
    http2: auto::Builder<OnRuntime>,
}

/// An accepted connection: still on the accepting runtime, or taken off it to be
/// registered with the event loop it is given to.
enum Accepted {
    Here(TcpStream),
    Moved(std::net::TcpStream),
}

/// One client connection, on the loop it was given: the front's own HTTP/1.1 loop,
/// then hyper's server if it is handed over.
async fn connection(
    _slot: Slot,
    tcp: Accepted,
    front: Arc<Front>,
    builders: Arc<Builders>,
    settings: http1_serve::Settings,
    draining: CancellationToken,
) {
    let tcp = match tcp {
        Accepted::Here(tcp) => tcp,
        Accepted::Moved(tcp) => match TcpStream::from_std(tcp) {
            Ok(tcp) => tcp,
            Err(e) => {
                tracing::warn!(error = %e, "a front connection could not join its event loop");
                return;
            }
        },
    };
    let drained = draining.clone().cancelled_owned();
    match http1_serve::serve(tcp, &*front, settings, drained).await {
        http1_serve::Ended::Closed => {}
        http1_serve::Ended::HandOver(io, protocol) => {
            let builder = match protocol {
                Protocol::Http1 => &builders.http1,
                Protocol::Http2 => &builders.http2,
            };
            // Boxed: an idle connection's task holds only the loop's state.
            let (idle, read) = (settings.idle, settings.read);
            Box::pin(serve_with_hyper(io, front, builder, (idle, read), draining)).await;
        }
    }
}

/// Serves the rest of a connection with hyper's server (HTTP/2, and the HTTP/1.1
/// requests the front's own loop hands over), ending it gracefully at the drain.
async fn serve_with_hyper(
    io: crate::http1::socket::Prefixed,
    front: Arc<Front>,
    builder: &auto::Builder<OnRuntime>,
    (idle, read): (Option<Duration>, Option<Duration>),
    draining: CancellationToken,
) {
    let io = IdleIo::new(io, idle);
    let activity = io.activity();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let end = activity.begin();
        let front = Arc::clone(&front);
        // Boxed for the request's life only: hyper keeps the slot of a connection's
        // service future while the connection lives, and the front's future is
        // kilobytes that an idle connection would otherwise hold.
        Box::pin(async move {
            // A body that stops arriving fails (and is answered 408) rather than hold
            // its request, and the agent's connection, open.
            let request = match read {
                Some(gap) => request.map(|body| Body::new(Timed::new(body, gap))),
                None => request.map(Body::new),
            };
            let answer = front.handle(Request::from(request)).await;
            Ok::<_, Infallible>(answer.into_http().map(|body| Counted { body, _end: end }))
        }) as Pin<Box<dyn Future<Output = Result<_, Infallible>> + Send>>
    });
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    // The connection first: bytes handed over at a drain are read and answered before
    // the graceful shutdown, which would otherwise end a connection not yet read.
    let ended = tokio::select! {
        biased;
        ended = connection.as_mut() => ended,
        () = draining.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = ended {
        tracing::debug!(error = %e, "a front connection ended with an error");
    }
}

/// A response body that ends its call (for the idle timeout) when it is dropped.
struct Counted {
    body: Body,
    _end: CallEnd,
}

impl hyper::body::Body for Counted {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
