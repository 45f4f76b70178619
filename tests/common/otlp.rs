//! A real OTLP receiver: the collector's TraceService over gRPC on 127.0.0.1:0 (the
//! generated server of `opentelemetry-proto`), keeping every span it is sent.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use tokio::sync::{oneshot, Notify};

/// What the receiver was sent.
#[derive(Default)]
struct Received {
    spans: Mutex<Vec<Span>>,
    /// `service.name` of each export's resources.
    services: Mutex<Vec<String>>,
    /// The `x-tenant` metadata of each export.
    tenants: Mutex<Vec<Option<String>>>,
    arrived: Notify,
}

#[derive(Clone, Default)]
struct Service(Arc<Received>);

#[tonic::async_trait]
impl TraceService for Service {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let tenant = request
            .metadata()
            .get("x-tenant")
            .map(|v| v.to_str().unwrap().to_owned());
        self.0.tenants.lock().unwrap().push(tenant);
        for resource_spans in request.into_inner().resource_spans {
            if let Some(resource) = &resource_spans.resource {
                for attribute in &resource.attributes {
                    if attribute.key == "service.name" {
                        self.0
                            .services
                            .lock()
                            .unwrap()
                            .push(text(attribute.value.as_ref()));
                    }
                }
            }
            for scope in resource_spans.scope_spans {
                self.0.spans.lock().unwrap().extend(scope.spans);
            }
        }
        self.0.arrived.notify_waiters();
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn text(value: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        other => format!("{other:?}"),
    }
}

/// A running receiver.
pub struct Receiver {
    pub addr: SocketAddr,
    received: Arc<Received>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// A socket bound to the same port and never listened on, for the receiver's whole
    /// life: once it stops, the port refuses connections, and no other test's server
    /// binding port 0 can take it (which would receive the spans sent to it).
    _held: tokio::net::TcpSocket,
}

impl Receiver {
    pub async fn start() -> Self {
        let reusable = || {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_reuseport(true).unwrap();
            socket
        };
        let socket = reusable();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = socket.local_addr().unwrap();
        let held = reusable();
        held.bind(addr).unwrap();
        let listener = socket.listen(64).unwrap();
        let service = Service::default();
        let received = Arc::clone(&service.0);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(service))
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    async {
                        let _ = stopped.await;
                    },
                )
                .await
                .unwrap();
        });
        Self {
            addr,
            received,
            stop: Some(stop),
            task: Some(task),
            _held: held,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops serving: the port refuses connections once this returns.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.received.spans.lock().unwrap().clone()
    }

    pub fn services(&self) -> Vec<String> {
        self.received.services.lock().unwrap().clone()
    }

    pub fn tenants(&self) -> Vec<Option<String>> {
        self.received.tenants.lock().unwrap().clone()
    }

    /// Waits until the spans received satisfy `done` (at most 20 s, then fails with
    /// what arrived).
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let waiting = async {
            loop {
                let arrived = self.received.arrived.notified();
                let spans = self.spans();
                if done(&spans) {
                    return spans;
                }
                arrived.await;
            }
        };
        match tokio::time::timeout(Duration::from_secs(20), waiting).await {
            Ok(spans) => spans,
            Err(_) => panic!("{what}: not received; got {:#?}", names(&self.spans())),
        }
    }
}

/// The names of `spans`.
pub fn names(spans: &[Span]) -> Vec<String> {
    spans.iter().map(|s| s.name.clone()).collect()
}

/// The span's attribute `key`, as text.
pub fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .map(|a| text(a.value.as_ref()))
}

/// Lower-case hex, as in `traceparent`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
