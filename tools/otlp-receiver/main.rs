//! A test OTLP receiver: the collector's TraceService over gRPC (the generated server of
//! `opentelemetry-proto`), printing each span it is sent as one JSON line on stdout. The
//! first line is `{"listening": "<addr>"}`. The kits' and the Python tests start it next
//! to the `a2a-commands` binary, so that every language checks one trace the same way.
//!
//! ```sh
//! cargo run --bin a2a-commands-otlp-receiver -- --listen 127.0.0.1:4317
//! ```

use std::io::Write as _;
use std::net::SocketAddr;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value::Value, AnyValue, KeyValue};
use serde_json::{json, Map};

struct Printer;

fn text(value: Option<&AnyValue>) -> serde_json::Value {
    match value.and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => json!(s),
        Some(Value::IntValue(i)) => json!(i),
        Some(Value::BoolValue(b)) => json!(b),
        Some(Value::DoubleValue(d)) => json!(d),
        other => json!(format!("{other:?}")),
    }
}

fn attributes(list: &[KeyValue]) -> Map<String, serde_json::Value> {
    list.iter()
        .map(|a| (a.key.clone(), text(a.value.as_ref())))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tonic::async_trait]
impl TraceService for Printer {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut out = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let resource = resource_spans
                .resource
                .map(|r| attributes(&r.attributes))
                .unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                let line = json!({
                    "service": resource.get("service.name"),
                    "traceId": hex(&span.trace_id),
                    "spanId": hex(&span.span_id),
                    "parentSpanId": hex(&span.parent_span_id),
                    "traceState": span.trace_state,
                    "name": span.name,
                    "kind": span.kind,
                    "status": span.status.map_or(0, |s| s.code),
                    "attributes": attributes(&span.attributes),
                });
                writeln!(out, "{line}").expect("writing to memory");
            }
        }
        let mut stdout = std::io::stdout().lock();
        // A reader that went away ends the receiver's usefulness, not the call.
        let _ = stdout.write_all(&out).and_then(|()| stdout.flush());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mut listen: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--listen", Some(addr)) => match addr.parse() {
                Ok(addr) => listen = addr,
                Err(e) => {
                    eprintln!("a2a-commands-otlp-receiver: --listen {addr}: {e}");
                    return std::process::ExitCode::FAILURE;
                }
            },
            _ => {
                eprintln!("usage: a2a-commands-otlp-receiver [--listen ADDR]");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .unwrap_or_else(|e| panic!("cannot listen on {listen}: {e}"));
        let addr = listener.local_addr().expect("bound");
        println!("{}", json!({ "listening": addr.to_string() }));
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Printer))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .expect("serving");
    });
    std::process::ExitCode::SUCCESS
}
