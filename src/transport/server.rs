//! Server wiring: opens the registry, prepares it (built-ins, commands file), and
//! serves the API (with health and reflection) and a health-only listener for
//! Kubernetes probes. Shutdown drains in order: health turns NOT_SERVING, the API
//! finishes its calls in flight, then the registry is flushed and closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::TcpIncoming;

use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use crate::bodies::Handlers;
use crate::config::{Limits, Settings};
use crate::error::Error;
use crate::front::records::Records;
use crate::front::Front;
use crate::pb::{self, command_service_server::CommandServiceServer};
use crate::registry::commands_file::{self, FileError};
use crate::registry::{Change, OpenError, Registry};
use crate::telemetry::Tracer;
use crate::transport::auth::AdminAuth;
use crate::transport::front_listener;
use crate::transport::layers::budget::BudgetLayer;
use crate::transport::layers::deadline::DeadlineLayer;
use crate::transport::layers::grpc_only;
use crate::transport::layers::idle::{IdleIo, InFlightLayer};
use crate::transport::layers::observe::{CallLog, Observed};
use crate::transport::layers::read_deadline::ReadDeadlineLayer;
use crate::transport::layers::write_joining::JoinedWrites;
use crate::transport::routes::Routes;
use crate::transport::service::{Api, SERVICE_NAME};
use crate::transport::tls::{tls_config, TlsError};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data directory could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The registry could not be prepared (built-ins).
    #[error("cannot prepare the registry: {0}")]
    Registry(#[from] Error),
    /// The commands file is unusable.
    #[error(transparent)]
    CommandsFile(#[from] FileError),
    /// The admin token or the TLS files are unusable.
    #[error("{0}")]
    Security(String),
    /// A listen address could not be bound.
    #[error("cannot listen on {addr} (--{flag}): {source}{}", bind_hint(source))]
    Bind {
        /// The flag that set it.
        flag: &'static str,
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The OTLP exporter could not be set up.
    #[error("{0}")]
    Traces(String),
    /// The front's task records could not be opened.
    #[error("cannot open the front's task records: {0}")]
    FrontRecords(String),
    /// The verifier of callers' JWTs could not start (its key set file unreadable).
    #[error("cannot start verifying callers' JWTs: {0}")]
    FrontCallers(String),
    /// Reflection could not be built from the descriptors.
    #[error("cannot build server reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

type ServeTask = JoinHandle<Result<(), tonic::transport::Error>>;

/// A server that is running.
pub struct RunningServer {
    addr: SocketAddr,
    health_addr: Option<SocketAddr>,
    health: HealthReporter,
    stop_api: Option<oneshot::Sender<()>>,
    stop_health: Option<oneshot::Sender<()>>,
    api_task: ServeTask,
    health_task: Option<ServeTask>,
    metrics_addr: Option<SocketAddr>,
    metrics_task: Option<JoinHandle<()>>,
    front_addr: Option<SocketAddr>,
    front_task: Option<JoinHandle<()>>,
    watcher: Option<JoinHandle<()>>,
    registry: Arc<Registry>,
    drain_timeout: Duration,
    draining: CancellationToken,
    tracer: Option<Tracer>,
}

impl RunningServer {
    /// The address the API listens on (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The front's address, if the front is on.
    pub fn front_addr(&self) -> Option<SocketAddr> {
        self.front_addr
    }

    /// The metrics listener's address, if there is one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The health-only listener's address, if there is one.
    pub fn health_addr(&self) -> Option<SocketAddr> {
        self.health_addr
    }

    /// Turns health NOT_SERVING (overall and for the API) without stopping anything:
    /// the first step of a drain.
    pub async fn set_not_serving(&self) {
        self.health
            .set_service_status("", ServingStatus::NotServing)
            .await;
        self.health
            .set_service_status(SERVICE_NAME, ServingStatus::NotServing)
            .await;
    }

    /// Drains: health turns NOT_SERVING, new connections are refused, in-flight calls
    /// finish (for at most the drain timeout; connections still open then are cut),
    /// then the registry is flushed and closed.
    pub async fn shutdown(mut self) -> Result<(), tonic::transport::Error> {
        self.set_not_serving().await;
        // WatchSpecs streams end now; other calls in flight finish.
        self.draining.cancel();
        tracing::info!("draining: no new calls, waiting for calls in flight");
        if let Some(watcher) = self.watcher.take() {
            watcher.abort();
        }
        if let Some(stop) = self.stop_api.take() {
            let _ = stop.send(());
        }
        let result = match tokio::time::timeout(self.drain_timeout, &mut self.api_task).await {
            Ok(Ok(result)) => result,
            Ok(Err(join)) => panic!("server task failed: {join}"),
            Err(_) => {
                tracing::warn!(
                    timeout = ?self.drain_timeout,
                    "drain timed out: closing the connections still open"
                );
                self.api_task.abort();
                Ok(())
            }
        };
        // Probes keep getting NOT_SERVING until the API is gone.
        if let (Some(stop), Some(task)) = (self.stop_health.take(), self.health_task.take()) {
            let _ = stop.send(());
            if tokio::time::timeout(Duration::from_secs(1), task)
                .await
                .is_err()
            {
                tracing::debug!("health listener did not stop within 1 s");
            }
        }
        if let Some(task) = self.metrics_task.take() {
            task.abort();
        }
        // The front stopped taking connections when the drain began; its calls in
        // flight had the API's drain to finish.
        if let Some(mut task) = self.front_task.take() {
            if tokio::time::timeout(Duration::from_secs(1), &mut task)
                .await
                .is_err()
            {
                tracing::debug!("the front's listener did not stop within 1 s");
                task.abort();
            }
        }
        self.registry.close().await;
        // The last spans (the drain's calls among them) go out before the process ends.
        if let Some(tracer) = &self.tracer {
            tracer.flush(Duration::from_secs(5)).await;
        }
        result
    }
}

/// Reflection that can describe both reflection services: each `build_*` adds only its
/// own version's descriptors, so `describe` of the other one failed.
fn reflection_base() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .include_reflection_service(false)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET)
}

/// Reflection lists exactly the services this listener serves: our descriptors also
/// define `CommandHandler`, which handlers implement and this server does not.
fn reflection_builder() -> tonic_reflection::server::Builder<'static> {
    reflection_base()
        .with_service_name("grpc.reflection.v1.ServerReflection")
        .with_service_name("grpc.reflection.v1alpha.ServerReflection")
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
        .with_service_name(SERVICE_NAME)
        .with_service_name("grpc.health.v1.Health")
}

/// Accepted connections with Nagle's algorithm off (a gRPC answer is written in pieces,
/// and waiting to coalesce them costs tens of milliseconds against delayed ACKs), their
/// small writes joined, each closed after `idle` with no call in flight.
fn incoming(
    listener: TcpListener,
    idle: Option<Duration>,
) -> impl tokio_stream::Stream<Item = std::io::Result<IdleIo<JoinedWrites>>> {
    use tokio_stream::StreamExt as _;
    TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .map(move |accepted| accepted.map(|stream| IdleIo::new(JoinedWrites::new(stream), idle)))
}

/// Serves `GET /metrics` (OpenMetrics text) on `listener` until aborted.
async fn serve_metrics(listener: TcpListener) {
    use axum::http::header::CONTENT_TYPE;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(|| async {
            (
                [(
                    CONTENT_TYPE,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )],
                crate::metrics::metrics().encode(),
            )
        }),
    );
    if let Err(e) = axum::serve(listener, app).await {
        tracing::error!(error = %e, "the metrics listener stopped");
    }
}

/// The layers every call of a listener passes (see `layers`). The type nests them
/// innermost first; `server_builder` adds them outermost first. The API alone is also
/// wrapped in the observing layer, in `start`.
type CallLayers = tower_layer::Stack<
    BudgetLayer,
    tower_layer::Stack<
        ReadDeadlineLayer,
        tower_layer::Stack<
            DeadlineLayer,
            tower_layer::Stack<
                InFlightLayer,
                tower_layer::Stack<
                    tower_http::validate_request::ValidateRequestHeaderLayer<grpc_only::GrpcOnly>,
                    tower_layer::Identity,
                >,
            >,
        >,
    >,
>;

/// The health service name of the front: SERVING while it has a card to serve.
pub const FRONT_HEALTH_SERVICE: &str = "a2a.commands.v1.Front";

/// A server builder with the connection limits of `limits`, whose calls share
/// `budget`. This is where the per-call layers are put together.
fn server_builder(limits: &Limits, budget: &BudgetLayer) -> tonic::transport::Server<CallLayers> {
    tonic::transport::Server::builder()
        .max_concurrent_streams(limits.max_concurrent_streams)
        .http2_max_header_list_size(limits.max_header_list_bytes)
        .http2_keepalive_interval(Some(limits.keepalive))
        .http2_keepalive_timeout(Some(limits.keepalive_timeout))
        // Unread request bytes per connection and per stream (hyper's defaults, said
        // here because SECURITY.md's worst case is computed from them).
        .initial_connection_window_size(CONNECTION_WINDOW)
        .initial_stream_window_size(CONNECTION_WINDOW)
        .layer(grpc_only::layer())
        .layer(InFlightLayer)
        .layer(DeadlineLayer)
        .layer(ReadDeadlineLayer::new(limits.request_read_timeout))
        .layer(budget.clone())
}

/// The HTTP/2 flow-control window of a connection (and of each stream), in bytes.
pub const CONNECTION_WINDOW: u32 = 1 << 20;

/// What to do about a listen address that cannot be bound.
fn bind_hint(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::AddrInUse => {
            "; another process (another instance?) holds it: stop it or give this flag \
             another port (0 picks a free one)"
        }
        std::io::ErrorKind::PermissionDenied => {
            "; ports below 1024 need privileges: use a higher port"
        }
        std::io::ErrorKind::AddrNotAvailable => "; no interface of this machine has that address",
        _ => "",
    }
}

async fn bind(
    flag: &'static str,
    addr: SocketAddr,
) -> Result<(TcpListener, SocketAddr), StartError> {
    let fail = |source| StartError::Bind { flag, addr, source };
    let listener = TcpListener::bind(addr).await.map_err(fail)?;
    let local = listener.local_addr().map_err(fail)?;
    Ok((listener, local))
}

/// Opens the registry, makes the built-ins and the commands file as configured, binds
/// the listeners and starts serving in the background. Returns once both listeners
/// accept connections and health is SERVING.
pub async fn start(settings: Settings) -> Result<RunningServer, StartError> {
    let tracer = Tracer::start(&settings.traces).map_err(StartError::Traces)?;
    let registry = Arc::new(Registry::open_with(
        &settings.registry,
        settings.fleet.as_ref(),
        tracer.as_ref(),
    )?);
    let fleet_mode = settings.fleet.is_some();
    // The built-ins and the file are one change, so a replica never serves one
    // without the other; the watcher starts from exactly the bytes applied. In fleet
    // mode etcd may be down at start, so the watcher applies them once it can.
    let applied_file = match &settings.commands_file {
        Some(_) if fleet_mode => None,
        Some(path) => Some(
            commands_file::apply(path, &settings.builtins, &settings.handlers, &registry).await?,
        ),
        None if fleet_mode => None,
        None => {
            let change = Change::Configure {
                builtins: settings.builtins.clone(),
                file: None,
            };
            registry.apply(change).await?;
            None
        }
    };
    let auth = match &settings.admin_token_file {
        Some(path) => AdminAuth::from_file(path.clone()).map_err(StartError::Security)?,
        None => AdminAuth::open(),
    };
    let tls = settings
        .tls
        .as_ref()
        .map(tls_config)
        .transpose()
        .map_err(|TlsError(e)| StartError::Security(e))?;
    let (listener, addr) = bind("listen", settings.listen).await?;
    let health_listener = match settings.health_listen {
        Some(health_addr) => Some(bind("health-listen", health_addr).await?),
        None => None,
    };

    let draining = CancellationToken::new();
    let api = Arc::new(Api::new(
        Arc::clone(&registry),
        settings.catalogue.clone(),
        Handlers::new(settings.handlers.clone())
            .map_err(|e| StartError::Security(e.to_string()))?
            .traced(tracer.clone()),
        auth,
        draining.clone(),
    ));
    let (health, health_service) = tonic_health::server::health_reporter();
    if registry.is_ready() {
        health.set_serving::<CommandServiceServer<Api>>().await;
    } else {
        // Fleet mode with no copy of the fleet's registry: NOT_SERVING, overall (what
        // the kubelet's probe asks) and for the API, until it is read.
        health
            .set_service_status("", ServingStatus::NotServing)
            .await;
        health.set_not_serving::<CommandServiceServer<Api>>().await;
        let (health, registry, draining) =
            (health.clone(), Arc::clone(&registry), draining.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = registry.wait_ready() => {
                    if !draining.is_cancelled() {
                        health.set_service_status("", ServingStatus::Serving).await;
                        health.set_serving::<CommandServiceServer<Api>>().await;
                    }
                }
                () = draining.cancelled() => {}
            }
        });
    }
    // The front, beside the API on a listener of its own, running commands with the
    // API's runner (never through the API itself).
    let (front_addr, front_task) = match &settings.front {
        Some(options) => {
            let (listener, front_addr) = bind("front-listen", options.listen).await?;
            let records = registry
                .open_records(options.records)
                .map_err(StartError::FrontRecords)?;
            let callers = match &options.jwt {
                Some(jwt) => Some(
                    crate::front::callers::Verifier::start(jwt.clone())
                        .await
                        .map_err(StartError::FrontCallers)?,
                ),
                None => None,
            };
            let front = Arc::new(Front::new(
                options.clone(),
                Arc::clone(api.runner()),
                Records::new(records),
                front_addr,
                tracer.clone(),
                callers,
            ));
            // Readiness: the front's health service is SERVING while it has a card to
            // serve (the agent's, fetched now and at each refresh).
            health
                .set_service_status(FRONT_HEALTH_SERVICE, ServingStatus::NotServing)
                .await;
            let ready = {
                let (front, health, draining) =
                    (Arc::clone(&front), health.clone(), draining.clone());
                async move {
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
            };
            tokio::spawn(ready);
            let draining = draining.clone();
            let limits = settings.limits.clone();
            let drain = settings.drain_timeout;
            let task = tokio::spawn(async move {
                let stop = async move { draining.cancelled().await };
                front_listener::serve(front, listener, &limits, stop, drain).await;
            });
            (Some(front_addr), Some(task))
        }
        None => (None, None),
    };
    let max_elements = settings.limits.max_request_elements;
    let calls = CallLog::new(settings.call_log_sample, settings.metrics_listen.is_some())
        .traced(tracer.clone());
    let api = Observed::new(
        Routes::new(api, settings.max_message_bytes, max_elements),
        Arc::new(calls),
    );

    let budget = BudgetLayer::new(
        settings.limits.max_request_memory,
        settings.max_message_bytes,
        max_elements,
    );
    let mut builder = server_builder(&settings.limits, &budget);
    if let Some(tls) = tls {
        builder = builder
            .tls_config(tls)
            .map_err(|e| StartError::Security(format!("TLS: {e}")))?;
    }
    let idle = settings.limits.idle_timeout;
    let (stop_api, api_stopped) = oneshot::channel::<()>();
    let api_task = tokio::spawn(
        builder
            .add_service(health_service.clone())
            .add_service(reflection_builder().build_v1()?)
            .add_service(reflection_builder().build_v1alpha()?)
            .add_service(api)
            .serve_with_incoming_shutdown(incoming(listener, idle), async {
                let _ = api_stopped.await;
            }),
    );

    let (stop_health, health_stopped) = oneshot::channel::<()>();
    let (health_addr, health_task) = match health_listener {
        Some((listener, health_addr)) => {
            // Reflection here describes health only, so grpcurl works on the probe port.
            let reflection = || {
                reflection_base()
                    .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                    .with_service_name("grpc.health.v1.Health")
            };
            let task = tokio::spawn(
                server_builder(&settings.limits, &budget)
                    .add_service(health_service)
                    .add_service(reflection().build_v1()?)
                    .add_service(reflection().build_v1alpha()?)
                    .serve_with_incoming_shutdown(incoming(listener, idle), async {
                        let _ = health_stopped.await;
                    }),
            );
            (Some(health_addr), Some(task))
        }
        None => (None, None),
    };

    let (metrics_addr, metrics_task) = match settings.metrics_listen {
        Some(metrics_addr) => {
            let (listener, metrics_addr) = bind("metrics-listen", metrics_addr).await?;
            (
                Some(metrics_addr),
                Some(tokio::spawn(serve_metrics(listener))),
            )
        }
        None => (None, None),
    };

    let watcher = match (&settings.commands_file, applied_file) {
        (Some(path), applied) if fleet_mode || applied.is_some() => {
            Some(tokio::spawn(commands_file::watch(
                path.clone(),
                settings.commands_file_poll,
                settings.builtins.clone(),
                settings.handlers.clone(),
                Arc::clone(&registry),
                applied,
            )))
        }
        (None, _) if fleet_mode => Some(tokio::spawn(commands_file::configure_builtins(
            settings.builtins.clone(),
            Arc::clone(&registry),
        ))),
        _ => None,
    };

    let snapshot = registry.snapshot();
    tracing::info!(
        addr = %addr,
        health_addr = %health_addr.map_or_else(|| "off".to_owned(), |a| a.to_string()),
        metrics_addr = %metrics_addr.map_or_else(|| "off".to_owned(), |a| a.to_string()),
        front_addr = %front_addr.map_or_else(|| "off".to_owned(), |a| a.to_string()),
        front_upstream = %settings.front.as_ref().map_or_else(|| "off".to_owned(), |f| f.upstream.to_string()),
        tls = settings.tls.is_some(),
        data_dir = %settings.registry.data_dir.display(),
        builtins = %settings.builtins.iter().map(|b| b.name()).collect::<Vec<_>>().join(","),
        models = %settings.catalogue.models.join(","),
        default_model = %settings.catalogue.default_model,
        commands_file = %settings.commands_file.as_ref().map_or_else(|| "none".into(), |p| p.display().to_string()),
        admin_token = settings.admin_token_file.is_some(),
        fleet = %settings.fleet.as_ref().map_or_else(|| "off".into(), |f| f.endpoints.join(",")),
        traces = %settings.traces.export.as_ref().map_or_else(|| "off".into(), |e| e.shown_endpoint()),
        ready = registry.is_ready(),
        revision = snapshot.revision(),
        commands = snapshot.len(),
        "serving"
    );
    Ok(RunningServer {
        addr,
        health_addr,
        health,
        stop_api: Some(stop_api),
        stop_health: Some(stop_health),
        api_task,
        health_task,
        metrics_addr,
        metrics_task,
        front_addr,
        front_task,
        watcher,
        registry,
        drain_timeout: settings.drain_timeout,
        tracer,
        draining,
    })
}
