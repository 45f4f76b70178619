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

use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use crate::bodies::Handlers;
use crate::config::Settings;
use crate::error::Error;
use crate::pb::command_service_server::CommandServiceServer;
use crate::registry::commands_file::{self, FileError};
use crate::registry::{Change, OpenError, Registry};
use crate::telemetry::Tracer;
use crate::transport::auth::AdminAuth;
use crate::transport::front_listener;
use crate::transport::layers::budget::BudgetLayer;
use crate::transport::layers::observe::{CallLog, Observed};
use crate::transport::listen::{
    bind_hint, incoming, reflection_base, reflection_builder, serve_metrics, server_builder,
};
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
    /// The verifier of the agent's card could not start (its key set file unreadable).
    #[error("cannot start verifying the agent's card: {0}")]
    FrontCardKeys(String),
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

/// The health service name of the front: SERVING while it has a card to serve.
pub use crate::transport::front_listener::FRONT_HEALTH_SERVICE;
/// The HTTP/2 flow-control window of a connection (and of each stream), in bytes.
pub use crate::transport::listen::CONNECTION_WINDOW;

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
            let started = front_listener::Started {
                registry: &registry,
                runner: Arc::clone(api.runner()),
                tracer: tracer.clone(),
                health: health.clone(),
                draining: draining.clone(),
                limits: settings.limits.clone(),
                drain: settings.drain_timeout,
            };
            let task = front_listener::start(options, listener, front_addr, started)
                .await
                .map_err(|e| match e {
                    front_listener::StartFailed::Records(why) => StartError::FrontRecords(why),
                    front_listener::StartFailed::Callers(why) => StartError::FrontCallers(why),
                    front_listener::StartFailed::CardKeys(why) => StartError::FrontCardKeys(why),
                })?;
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
