//! What the server's listeners are built from: the per-call layers, accepted
//! connections, reflection, the metrics listener, and what to say of an address that
//! cannot be bound.

use std::time::Duration;

use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;

use crate::config::Limits;
use crate::pb;
use crate::transport::layers::budget::BudgetLayer;
use crate::transport::layers::deadline::DeadlineLayer;
use crate::transport::layers::grpc_only;
use crate::transport::layers::idle::{IdleIo, InFlightLayer};
use crate::transport::layers::read_deadline::ReadDeadlineLayer;
use crate::transport::layers::write_joining::JoinedWrites;
use crate::transport::service::SERVICE_NAME;

/// Reflection that can describe both reflection services: each `build_*` adds only its
/// own version's descriptors, so `describe` of the other one failed.
pub(super) fn reflection_base() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .include_reflection_service(false)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET)
}

/// Reflection lists exactly the services this listener serves: our descriptors also
/// define `CommandHandler`, which handlers implement and this server does not.
pub(super) fn reflection_builder() -> tonic_reflection::server::Builder<'static> {
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
pub(super) fn incoming(
    listener: TcpListener,
    idle: Option<Duration>,
) -> impl tokio_stream::Stream<Item = std::io::Result<IdleIo<JoinedWrites>>> {
    use tokio_stream::StreamExt as _;
    TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .map(move |accepted| accepted.map(|stream| IdleIo::new(JoinedWrites::new(stream), idle)))
}

/// Serves `GET /metrics` (OpenMetrics text) on `listener` until aborted.
pub(super) async fn serve_metrics(listener: TcpListener) {
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
pub(super) type CallLayers = tower_layer::Stack<
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

/// A server builder with the connection limits of `limits`, whose calls share
/// `budget`. This is where the per-call layers are put together.
pub(super) fn server_builder(
    limits: &Limits,
    budget: &BudgetLayer,
) -> tonic::transport::Server<CallLayers> {
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
pub(super) fn bind_hint(error: &std::io::Error) -> &'static str {
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
