//! Traces end to end: a real server exporting over OTLP/gRPC to a real receiver (the
//! collector's TraceService), with real gRPC and JSON-RPC handlers behind it.

mod common;

use std::time::Duration;

use a2a_commands::pb::{self, handler_binding::Endpoint, ParticipantRole as Role};
use a2a_commands::telemetry::settings::{Export, Protocol, Sampler};
use a2a_commands::telemetry::TraceSettings;
use common::handlers::*;
use common::otlp::{attribute, hex, Receiver};
use common::*;
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode, Span};

const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

fn traces_to(receiver: &Receiver) -> TraceSettings {
    let mut traces = TraceSettings {
        export: Some(Export {
            endpoint: receiver.endpoint(),
            protocol: Protocol::Grpc,
            headers: vec![("x-tenant".into(), "team-a".into())],
            timeout: Duration::from_secs(10),
        }),
        off_because: "",
        service_name: "sidecar-under-test".into(),
        ..TraceSettings::default()
    };
    // Spans go out as soon as they end, so the test waits on arrival, not on a clock.
    traces.batching.delay = Duration::from_millis(1);
    traces
}

/// A request carrying `traceparent` (and a `tracestate`).
fn traced<T>(message: T, sampled: bool) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    let flags = if sampled { "01" } else { "00" };
    let parent = format!("00-{PARENT_TRACE}-{PARENT_SPAN}-{flags}");
    request
        .metadata_mut()
        .insert("traceparent", parent.parse().unwrap());
    request
        .metadata_mut()
        .insert("tracestate", "vendor=opaque".parse().unwrap());
    request
}

fn execute_request(text: &str) -> pb::ExecuteRequest {
    pb::ExecuteRequest {
        message: Some(text_message("m-1", text)),
        task: Some(task()),
        sender: Some(pb::Sender {
            id: "u-1".into(),
            role: Role::Assignee.into(),
        }),
        ..Default::default()
    }
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "{name}: {:?}", common::otlp::names(spans));
    found[0]
}

fn assert_server_span(span: &Span, method: &str) {
    assert_eq!(span.kind(), SpanKind::Server);
    assert_eq!(attribute(span, "rpc.system").as_deref(), Some("grpc"));
    assert_eq!(
        attribute(span, "rpc.service").as_deref(),
        Some("a2a.commands.v1.CommandService")
    );
    assert_eq!(attribute(span, "rpc.method").as_deref(), Some(method));
    assert_eq!(
        attribute(span, "rpc.grpc.status_code").as_deref(),
        Some("0")
    );
    assert_ne!(
        span.status.as_ref().map(|s| s.code()),
        Some(StatusCode::Error)
    );
}

/// Classify, Execute of a built-in, Execute of a gRPC and of a JSON-RPC handler: each
/// server span is the caller's child, each handler call a client span under it, and
/// each handler was sent a `traceparent` naming its client span. No span holds the
/// message's text or arguments.
#[tokio::test]
async fn spans_follow_the_call_from_the_caller_to_the_handler() {
    let receiver = Receiver::start().await;
    let traces = traces_to(&receiver);
    let server = TestServer::start_with(|s| s.traces = traces).await;
    let mut client = server.client().await;
    let (addr, grpc_handler) = start_grpc_handler().await;
    let (url, json_seen) = start_json_rpc_handler().await;
    let grpc = binding(Endpoint::Grpc(format!("http://{addr}")), 5_000);
    register_with(&mut client, "deploy", grpc, false)
        .await
        .unwrap();
    register_with(
        &mut client,
        "review",
        binding(Endpoint::JsonRpc(url), 5_000),
        false,
    )
    .await
    .unwrap();

    let classify = pb::ClassifyRequest {
        message: Some(text_message("m-1", "/deploy secret-argument")),
    };
    client.classify(traced(classify, true)).await.unwrap();
    client
        .execute(traced(execute_request("/model gpt-x-mini"), true))
        .await
        .unwrap();
    client
        .execute(traced(execute_request("/deploy reply"), true))
        .await
        .unwrap();
    client
        .execute(traced(execute_request("/review reply"), true))
        .await
        .unwrap();

    let spans = receiver
        .wait_for("the calls' spans", |spans| {
            named(spans, "a2a.commands.v1.CommandService/Execute").len() == 3
                && named(spans, "command.invoked.in").len() == 1
                && named(spans, "a2a.commands.v1.CommandHandler/Handle").len() == 1
                && named(spans, "a2a.commands.v1.CommandService/Classify").len() == 1
        })
        .await;
    let of_the_trace: Vec<Span> = spans
        .iter()
        .filter(|s| hex(&s.trace_id) == PARENT_TRACE)
        .cloned()
        .collect();
    assert_eq!(
        of_the_trace.len(),
        6,
        "{:?}",
        common::otlp::names(&of_the_trace)
    );
    assert!(receiver
        .services()
        .iter()
        .all(|s| s == "sidecar-under-test"));
    assert!(receiver
        .tenants()
        .iter()
        .all(|t| t.as_deref() == Some("team-a")));

    let classify = one(&of_the_trace, "a2a.commands.v1.CommandService/Classify");
    assert_server_span(classify, "Classify");
    assert_eq!(hex(&classify.parent_span_id), PARENT_SPAN);
    assert_eq!(classify.trace_state, "vendor=opaque");
    assert_eq!(
        attribute(classify, "a2a.command.name").as_deref(),
        Some("deploy")
    );

    let executes = named(&of_the_trace, "a2a.commands.v1.CommandService/Execute");
    let by_command = |name: &str| {
        *executes
            .iter()
            .find(|s| attribute(s, "a2a.command.name").as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no Execute span for {name}"))
    };
    let builtin = by_command("model");
    assert_server_span(builtin, "Execute");
    assert_eq!(hex(&builtin.parent_span_id), PARENT_SPAN);
    assert_eq!(
        attribute(builtin, "a2a.command.outcome").as_deref(),
        Some("ok")
    );

    // gRPC: server span → client span → the handler's traceparent.
    let deploy = by_command("deploy");
    assert_server_span(deploy, "Execute");
    let handle = one(&of_the_trace, "a2a.commands.v1.CommandHandler/Handle");
    assert_eq!(handle.kind(), SpanKind::Client);
    assert_eq!(handle.parent_span_id, deploy.span_id);
    assert_eq!(attribute(handle, "rpc.system").as_deref(), Some("grpc"));
    assert_eq!(attribute(handle, "rpc.method").as_deref(), Some("Handle"));
    assert_eq!(
        attribute(handle, "rpc.grpc.status_code").as_deref(),
        Some("0")
    );
    assert_eq!(
        attribute(handle, "server.address").as_deref(),
        Some("127.0.0.1")
    );
    assert_eq!(
        attribute(handle, "a2a.command.name").as_deref(),
        Some("deploy")
    );
    assert_eq!(
        attribute(handle, "a2a.handler.result").as_deref(),
        Some("reply")
    );
    let sent = grpc_handler.metadata.lock().unwrap()[0].1.clone().unwrap();
    assert_eq!(
        sent,
        format!("00-{PARENT_TRACE}-{}-01", hex(&handle.span_id))
    );

    // JSON-RPC: the same.
    let review = by_command("review");
    let invoked = one(&of_the_trace, "command.invoked.in");
    assert_eq!(invoked.kind(), SpanKind::Client);
    assert_eq!(invoked.parent_span_id, review.span_id);
    assert_eq!(attribute(invoked, "rpc.system").as_deref(), Some("jsonrpc"));
    let sent = json_seen.lock().unwrap()[0]["headers"]["traceparent"].clone();
    assert_eq!(
        sent,
        format!("00-{PARENT_TRACE}-{}-01", hex(&invoked.span_id))
    );

    // The privacy rule of the metrics: no text, no arguments, anywhere in a span.
    let everything = format!("{spans:?}");
    assert!(!everything.contains("secret-argument"));
    assert!(!everything.contains("gpt-x-mini"));
}

/// A failed handler call is an error span with a fixed error type; a call without
/// `traceparent` starts a trace of its own.
#[tokio::test]
async fn a_failed_handler_call_is_an_error_span_and_an_untraced_call_a_new_trace() {
    let receiver = Receiver::start().await;
    let traces = traces_to(&receiver);
    let server = TestServer::start_with(|s| s.traces = traces).await;
    let mut client = server.client().await;
    let (addr, _handler) = start_grpc_handler().await;
    let grpc = binding(Endpoint::Grpc(format!("http://{addr}")), 5_000);
    register_with(&mut client, "deploy", grpc, false)
        .await
        .unwrap();
    let out = execute(&mut client, "/deploy error", Role::Assignee).await;
    assert_eq!(
        out.reply,
        "/deploy failed: handler answered FAILED_PRECONDITION"
    );
    let spans = receiver
        .wait_for("the failed call", |spans| {
            !named(spans, "a2a.commands.v1.CommandHandler/Handle").is_empty()
        })
        .await;
    let handle = one(&spans, "a2a.commands.v1.CommandHandler/Handle");
    assert_eq!(handle.status.as_ref().unwrap().code(), StatusCode::Error);
    assert_eq!(
        attribute(handle, "error.type").as_deref(),
        Some("error_answer")
    );
    // FAILED_PRECONDITION, as the handler answered.
    assert_eq!(
        attribute(handle, "rpc.grpc.status_code").as_deref(),
        Some("9")
    );
    assert_eq!(
        attribute(handle, "a2a.handler.result").as_deref(),
        Some("failed")
    );
    let spans = receiver
        .wait_for("the Execute span", |spans| {
            spans.iter().any(|s| s.span_id == handle.parent_span_id)
        })
        .await;
    let execute = spans
        .iter()
        .find(|s| s.span_id == handle.parent_span_id)
        .unwrap();
    assert!(execute.parent_span_id.is_empty(), "a root span");
    assert_eq!(
        attribute(execute, "a2a.command.outcome").as_deref(),
        Some("failed")
    );
    assert_ne!(hex(&execute.trace_id), PARENT_TRACE);
}

/// Sampling off: calls work and nothing is exported, not even at the drain's flush.
#[tokio::test]
async fn sampling_off_exports_nothing() {
    let mut receiver = Receiver::start().await;
    let mut traces = traces_to(&receiver);
    traces.sampler = Sampler::AlwaysOff;
    let server = TestServer::start_with(|s| s.traces = traces).await;
    let mut client = server.client().await;
    client
        .execute(traced(execute_request("/model gpt-x-mini"), true))
        .await
        .unwrap();
    server.stop().await;
    receiver.stop().await;
    assert_eq!(receiver.spans().len(), 0);
}

/// The collector goes away: every call still answers, and the spans that could not be
/// sent are counted as dropped.
#[tokio::test]
async fn a_collector_that_is_gone_costs_no_call_and_drops_are_counted() {
    let mut receiver = Receiver::start().await;
    let traces = traces_to(&receiver);
    let server = TestServer::start_with(|s| s.traces = traces).await;
    // The process's metrics, read in it: the listener would stop with the server.
    let dropped_now = || {
        let text = a2a_commands::metrics::metrics().encode();
        let scrape = metrics::Scrape {
            head: String::new(),
            body: text,
        };
        scrape.count("a2a_commands_trace_spans_dropped_total{reason=\"export_failed\"}")
    };
    let mut client = server.client().await;
    client
        .execute(traced(execute_request("/model gpt-x-mini"), true))
        .await
        .unwrap();
    receiver
        .wait_for("the first span", |spans| !spans.is_empty())
        .await;
    receiver.stop().await;
    let before = dropped_now();
    for _ in 0..20 {
        let out = client
            .execute(traced(execute_request("/model gpt-x"), true))
            .await
            .unwrap();
        assert!(matches!(
            out.into_inner().result,
            Some(pb::execute_response::Result::Command(_))
        ));
    }
    // The drain flushes what is queued: by then every span was tried and refused.
    server.stop().await;
    let after = dropped_now();
    assert!(after - before >= 20.0, "dropped {before} → {after}");
}

/// The binary, traces on by the standard variable: the call line names its server span,
/// a handler's failure line names the handler span (JSON logs), and `--print-config`
/// shows the trace settings without a header's value.
#[tokio::test]
async fn log_lines_carry_the_current_span_s_ids() {
    use common::process::{serve_command, ServeProcess};
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().unwrap();

    let printed = serve_command(dir.path(), &["--print-config"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret")
        .env("OTEL_TRACES_SAMPLER", "always_on")
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let config: serde_json::Value = serde_json::from_slice(&printed.stdout).unwrap();
    let traces = &config["traces"];
    assert_eq!(traces["export"]["endpoint"], receiver.endpoint());
    assert_eq!(traces["export"]["protocol"], "grpc");
    assert_eq!(traces["export"]["headers"][0], "x-api-key: <redacted>");
    assert_eq!(traces["sampler"], "always_on");
    assert!(!String::from_utf8_lossy(&printed.stdout).contains("s3cret"));

    let endpoint = receiver.endpoint();
    let process = ServeProcess::start(
        dir.path(),
        &[
            "--otlp-traces-endpoint",
            &endpoint,
            "--trace-sampler",
            "always_on",
        ],
    );
    let mut client = Client::connect(process.url()).await.unwrap();
    let (addr, _handler) = start_grpc_handler().await;
    let grpc = binding(Endpoint::Grpc(format!("http://{addr}")), 5_000);
    register_with(&mut client, "deploy", grpc, false)
        .await
        .unwrap();
    let out = execute(&mut client, "/deploy error", Role::Assignee).await;
    assert_eq!(out.outcome(), pb::Outcome::Failed);
    drop(client);
    process.signal("TERM");
    // Off the runtime: the receiver on it takes the drain's last export meanwhile.
    let (status, lines) = tokio::task::spawn_blocking(move || process.wait())
        .await
        .unwrap();
    assert!(status.success());
    let events: Vec<serde_json::Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let spans = receiver
        .wait_for("the Execute and its handler call", |spans| {
            !named(spans, "a2a.commands.v1.CommandHandler/Handle").is_empty()
                && !named(spans, "a2a.commands.v1.CommandService/Execute").is_empty()
        })
        .await;
    let handle = one(&spans, "a2a.commands.v1.CommandHandler/Handle");
    let execute_span = one(&spans, "a2a.commands.v1.CommandService/Execute");
    let failed = events
        .iter()
        .find(|e| e["message"] == "handler failed")
        .unwrap_or_else(|| panic!("no handler failure line in {lines:#?}"));
    assert_eq!(failed["trace_id"], hex(&handle.trace_id));
    assert_eq!(failed["span_id"], hex(&handle.span_id));
    let call = events
        .iter()
        .find(|e| e["message"] == "call" && e["method"] == "Execute")
        .unwrap_or_else(|| panic!("no Execute call line in {lines:#?}"));
    assert_eq!(call["trace_id"], hex(&execute_span.trace_id));
    assert_eq!(call["span_id"], hex(&execute_span.span_id));
}

/// `http/protobuf`: spans are POSTed to the traces path as an OTLP protobuf body.
#[tokio::test]
async fn spans_go_over_http_protobuf_too() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;
    use std::sync::{Arc, Mutex};
    let received: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let arrived = Arc::new(tokio::sync::Notify::new());
    let (kept, woken) = (Arc::clone(&received), Arc::clone(&arrived));
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let content_type = headers
                    .get("content-type")
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default();
                let request = ExportTraceServiceRequest::decode(body).unwrap();
                for span in request
                    .resource_spans
                    .into_iter()
                    .flat_map(|r| r.scope_spans)
                    .flat_map(|s| s.spans)
                {
                    kept.lock().unwrap().push((content_type.clone(), span.name));
                }
                woken.notify_waiters();
                async { "" }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let vars = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{addr}")),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "1".to_owned()),
    ];
    let traces = TraceSettings::resolve(&Default::default(), |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    })
    .unwrap();
    assert_eq!(
        traces.export.as_ref().unwrap().endpoint,
        format!("http://{addr}/v1/traces")
    );
    let server = TestServer::start_with(|s| s.traces = traces).await;
    let mut client = server.client().await;
    client
        .execute(traced(execute_request("/model gpt-x-mini"), true))
        .await
        .unwrap();
    let waiting = async {
        loop {
            let notified = arrived.notified();
            if !received.lock().unwrap().is_empty() {
                return;
            }
            notified.await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("a POST to /v1/traces");
    let received = received.lock().unwrap().clone();
    assert_eq!(
        received,
        [(
            "application/x-protobuf".to_owned(),
            "a2a.commands.v1.CommandService/Execute".to_owned()
        )]
    );
}

/// A collector that accepts connections and never answers: the queue fills, every call
/// still answers at once, and the spans that did not fit are counted as dropped.
#[tokio::test]
async fn a_collector_that_never_answers_fills_the_queue_and_drops_are_counted() {
    // It accepts and then says nothing, so the export waits out its timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let accepted = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let mut traces = TraceSettings {
        export: Some(Export {
            endpoint: format!("http://{addr}"),
            protocol: Protocol::Grpc,
            headers: Vec::new(),
            timeout: Duration::from_secs(10),
        }),
        off_because: "",
        ..TraceSettings::default()
    };
    // One span per export, four queued: the first export hangs, four wait, the rest drop.
    traces.batching.max_batch = 1;
    traces.batching.max_queue = 4;
    traces.batching.delay = Duration::from_millis(1);
    let server = TestServer::start_with(|s| s.traces = traces).await;
    let queue_full = || {
        let scrape = metrics::Scrape {
            head: String::new(),
            body: a2a_commands::metrics::metrics().encode(),
        };
        scrape.count("a2a_commands_trace_spans_dropped_total{reason=\"queue_full\"}")
    };
    let before = queue_full();
    let mut client = server.client().await;
    for _ in 0..20 {
        client
            .execute(traced(execute_request("/model gpt-x"), true))
            .await
            .unwrap();
    }
    let dropped = queue_full() - before;
    assert!(dropped >= 15.0, "dropped {dropped}");
    accepted.abort();
}

/// A caller that gives up mid-call (it drops the call while the handler works, with no
/// deadline sent): the server span still ends, as CANCELLED, and the handler span as
/// cancelled.
#[tokio::test]
async fn a_call_its_caller_cancels_still_ends_its_spans() {
    let receiver = Receiver::start().await;
    let traces = traces_to(&receiver);
    let server = TestServer::start_with(|s| s.traces = traces).await;
    let mut client = server.client().await;
    let (addr, handler) = start_grpc_handler().await;
    let grpc = binding(Endpoint::Grpc(format!("http://{addr}")), 30_000);
    register_with(&mut client, "deploy", grpc, false)
        .await
        .unwrap();
    let request = traced(execute_request("/deploy slow"), true);
    let call = tokio::spawn(async move { client.execute(request).await });
    // The caller gives up once the handler has the call (it then works for 60 s).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while handler.metadata.lock().unwrap().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the handler was never called"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    call.abort();
    let gave_up = call.await;
    assert!(
        gave_up.is_err_and(|e| e.is_cancelled()),
        "the handler takes 60 s"
    );
    let spans = receiver
        .wait_for("the cancelled call's spans", |spans| {
            !named(spans, "a2a.commands.v1.CommandHandler/Handle").is_empty()
                && !named(spans, "a2a.commands.v1.CommandService/Execute").is_empty()
        })
        .await;
    let execute = one(&spans, "a2a.commands.v1.CommandService/Execute");
    assert_eq!(
        attribute(execute, "rpc.grpc.status_code").as_deref(),
        Some("1")
    );
    let handle = one(&spans, "a2a.commands.v1.CommandHandler/Handle");
    assert_eq!(handle.parent_span_id, execute.span_id);
    assert_eq!(
        attribute(handle, "error.type").as_deref(),
        Some("cancelled")
    );
}

/// A plain A2A agent for the front: answers every JSON-RPC call with a message, and
/// keeps the `traceparent` each POST brought (not the front's own card fetches).
async fn start_recording_agent() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = std::sync::Arc::clone(&seen);
    let app = axum::Router::new().fallback(
        move |method: axum::http::Method, headers: axum::http::HeaderMap| {
            let kept = std::sync::Arc::clone(&kept);
            async move {
                let parent = headers
                    .get("traceparent")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                if method == axum::http::Method::POST {
                    kept.lock().unwrap().push(parent);
                }
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"message": {
                "messageId": "a-1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}});
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    answer.to_string(),
                )
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// A JSON-RPC `SendMessage` of `text` to the front, as a traced caller.
async fn send_to_front(front: std::net::SocketAddr, text: &str) -> serde_json::Value {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}}});
    let answer = reqwest::Client::new()
        .post(format!("http://{front}/"))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .header("traceparent", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01"))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap()
}

#[tokio::test]
async fn a_front_request_is_a_server_span_and_its_agent_call_a_client_span_the_agent_sees() {
    let receiver = Receiver::start().await;
    let (upstream, seen) = start_recording_agent().await;
    let server = TestServer::start_with(|s| {
        s.traces = traces_to(&receiver);
        s.front = Some(a2a_commands::front::FrontOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: url::Url::parse(&upstream).unwrap(),
            public_url: None,
            timeout: Duration::from_secs(10),
            stream_idle: Duration::from_secs(60),
            max_body_bytes: 1 << 20,
            send_timeout: Duration::from_secs(60),
            max_connections: 100,
            card_refresh: Duration::from_secs(30),
            records: a2a_commands::registry::records::Limits {
                cap: 100,
                expiry: Duration::from_secs(3600),
            },
            signing: None,
            default_role: Role::Assignee,
            role_header: None,
            sender_header: None,
            upstream_grpc: None,
            upstream_versions: None,
            jwt: None,
            card_keys: None,
        });
    })
    .await;
    let front = server.server.as_ref().unwrap().front_addr().unwrap();
    let passed = send_to_front(front, "hello").await;
    assert_eq!(
        passed["result"]["message"]["parts"][0]["text"], "hi",
        "{passed}"
    );
    let answered = send_to_front(front, "/status").await;
    assert!(answered["result"]["task"].is_object(), "{answered}");

    let spans = receiver
        .wait_for("the front's spans", |spans| {
            named(spans, "SendMessage").len() == 2 && !named(spans, "POST").is_empty()
        })
        .await;
    let servers = named(&spans, "SendMessage");
    for span in &servers {
        assert_eq!(span.kind(), SpanKind::Server);
        assert_eq!(hex(&span.trace_id), PARENT_TRACE);
        assert_eq!(hex(&span.parent_span_id), PARENT_SPAN);
        assert_eq!(
            attribute(span, "a2a.front.binding").as_deref(),
            Some("jsonrpc")
        );
    }
    let by_result = |result: &str| {
        *servers
            .iter()
            .find(|s| attribute(s, "a2a.front.result").as_deref() == Some(result))
            .unwrap_or_else(|| panic!("no {result} span: {servers:?}"))
    };
    let (passed, _answered) = (by_result("passed"), by_result("answered"));
    // One agent call, for the plain message; the command never reached the agent.
    let client = one(&spans, "POST");
    assert_eq!(client.kind(), SpanKind::Client);
    assert_eq!(hex(&client.trace_id), PARENT_TRACE);
    assert_eq!(hex(&client.parent_span_id), hex(&passed.span_id));
    assert_eq!(
        attribute(client, "http.response.status_code").as_deref(),
        Some("200")
    );
    // The agent saw the client span as its parent, not the caller's span.
    let got = seen.lock().unwrap().clone();
    assert_eq!(
        got,
        [format!("00-{PARENT_TRACE}-{}-01", hex(&client.span_id))]
    );
}
