//! The client span of each handler call (traces on only): named and described as
//! OpenTelemetry's RPC and MCP conventions say, a child of the call that led to it,
//! and the trace context the handler is sent names it, so the handler's own spans
//! nest under it. Attributes are the protocol, the operation, the handler's host and
//! the registered command: never arguments or text.

use crate::bodies::call::{Failure, Trace};
use crate::bodies::json_rpc;
use crate::bodies::mcp::TOOL;
use crate::rules::body::{HandlerBinding, HandlerKind};
use crate::telemetry::{CallSpan, ContextGuard, KeyValue, SpanKind, Tracer, W3c};

/// What a handler is asked.
#[derive(Clone, Copy, Debug)]
pub(super) enum Operation<'a> {
    /// Run the command.
    Invoke,
    /// Suggest values for an argument.
    Complete,
    /// Get the MCP prompt of a prompt command.
    Prompt(&'a str),
    /// Suggest values for an MCP prompt's argument.
    CompletePrompt,
}

/// The gRPC service handlers implement.
const HANDLER_SERVICE: &str = "a2a.commands.v1.CommandHandler";

/// Starts the span of a call to `binding` for `command` under `trace`, and returns it
/// with the trace context to send (naming it). Without a tracer: no span, and `trace`
/// is passed on as it came.
pub(super) fn start(
    tracer: Option<&Tracer>,
    binding: &HandlerBinding,
    operation: Operation<'_>,
    command: &str,
    trace: &Trace,
) -> (Option<CallSpan>, Trace) {
    let Some(tracer) = tracer else {
        return (None, trace.clone());
    };
    let (name, mut attributes) = describe(binding.kind, operation);
    if let Ok(url) = url::Url::parse(&binding.url) {
        if let Some(host) = url.host_str() {
            attributes.push(KeyValue::new("server.address", host.to_owned()));
        }
        if let Some(port) = url.port_or_known_default() {
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
    }
    attributes.push(KeyValue::new("a2a.command.name", command.to_owned()));
    let parent = W3c {
        traceparent: trace.traceparent.as_deref(),
        tracestate: trace.tracestate.as_deref(),
    };
    let span = tracer.span(SpanKind::Client, name, parent, attributes);
    let (traceparent, tracestate) = span.w3c();
    let sent = Trace::from_headers(Some(&traceparent), tracestate.as_deref());
    (Some(span), sent)
}

/// The span's name and the attributes that say what was called.
fn describe(kind: HandlerKind, operation: Operation<'_>) -> (String, Vec<KeyValue>) {
    match (kind, operation) {
        (HandlerKind::Grpc, operation) => {
            let method = match operation {
                Operation::Complete => "Complete",
                _ => "Handle",
            };
            (
                format!("{HANDLER_SERVICE}/{method}"),
                vec![
                    KeyValue::new("rpc.system", "grpc"),
                    KeyValue::new("rpc.service", HANDLER_SERVICE),
                    KeyValue::new("rpc.method", method),
                ],
            )
        }
        (HandlerKind::JsonRpc, operation) => {
            let method = match operation {
                Operation::Complete => json_rpc::COMPLETION_METHOD,
                _ => json_rpc::METHOD,
            };
            (
                method.to_owned(),
                vec![
                    KeyValue::new("rpc.system", "jsonrpc"),
                    KeyValue::new("rpc.method", method),
                    KeyValue::new("rpc.jsonrpc.version", "2.0"),
                ],
            )
        }
        (HandlerKind::Mcp, Operation::Prompt(prompt)) => (
            format!("prompts/get {prompt}"),
            vec![
                KeyValue::new("mcp.method.name", "prompts/get"),
                KeyValue::new("gen_ai.prompt.name", prompt.to_owned()),
            ],
        ),
        (HandlerKind::Mcp, Operation::CompletePrompt | Operation::Complete) => (
            "completion/complete".to_owned(),
            vec![KeyValue::new("mcp.method.name", "completion/complete")],
        ),
        (HandlerKind::Mcp, Operation::Invoke) => (
            format!("tools/call {TOOL}"),
            vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", TOOL),
            ],
        ),
    }
}

/// Ends `span` with the call's `result` (the metrics' word for it) and, when it
/// failed, an error whose `error.type` is a fixed word for the failure (the reason's
/// text may quote the handler, so it is not copied). The span stays current until the
/// guard drops, so the failure's log line names it.
pub(super) fn end(
    span: Option<CallSpan>,
    result: &'static str,
    failure: Option<&Failure>,
) -> Option<ContextGuard> {
    let span = span?;
    let current = span.attach();
    span.set(KeyValue::new("a2a.handler.result", result));
    let error = failure.map(|f| error_type(&f.reason));
    span.end(error.or((result == "failed").then_some("failed")));
    Some(current)
}

/// [`end`] for a completion call: `completions`, or `failed` with its failure.
pub(super) fn end_completion<T>(
    span: Option<CallSpan>,
    result: &Result<T, Failure>,
) -> Option<ContextGuard> {
    let word = if result.is_ok() {
        "completions"
    } else {
        "failed"
    };
    end(span, word, result.as_ref().err())
}

/// A fixed word for a failure's reason.
fn error_type(reason: &str) -> &'static str {
    if reason.starts_with("timed out") {
        "timeout"
    } else if reason.starts_with("malformed answer") {
        "malformed_answer"
    } else if reason == "handler busy" {
        "busy"
    } else if reason == "handler host not allowed" {
        "host_not_allowed"
    } else if reason == "handler credentials unavailable" {
        "credentials_unavailable"
    } else {
        "failed"
    }
}
