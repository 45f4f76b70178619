//! The client span of each handler call (traces on only): named and described as
//! OpenTelemetry's RPC and MCP conventions say, a child of the call that led to it,
//! and the trace context the handler is sent names it, so the handler's own spans
//! nest under it. Attributes are the protocol, the operation, the handler's host and
//! the registered command: never arguments or text.

use crate::bodies::call::{Failure, Trace};
use crate::bodies::json_rpc;
use crate::bodies::mcp::TOOL;
use crate::rules::body::{HandlerBinding, HandlerKind};
use crate::telemetry::{CallSpan, ContextGuard, KeyValue, SpanKind, Tracer};

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

/// Starts the span of a call to `binding` for `command`, a child of the span current
/// here (the call's server span, which the observing layer keeps current while the call
/// runs), and returns it with the trace context to send (naming it). Without a tracer:
/// no span, and `trace` (the caller's) is passed on as it came.
pub(super) fn start(
    tracer: Option<&Tracer>,
    binding: &HandlerBinding,
    operation: Operation<'_>,
    command: &str,
    trace: &Trace,
) -> (HandlerSpan, Trace) {
    let grpc = binding.kind == HandlerKind::Grpc;
    let Some(tracer) = tracer else {
        return (HandlerSpan { span: None, grpc }, trace.clone());
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
    let span = tracer.span_under_current(SpanKind::Client, name, attributes);
    let (traceparent, tracestate) = span.w3c();
    let sent = Trace::from_headers(Some(&traceparent), tracestate.as_deref());
    let span = HandlerSpan {
        span: Some(span),
        grpc,
    };
    (span, sent)
}

/// A handler call's span while the call runs (none with traces off).
pub(super) struct HandlerSpan {
    span: Option<CallSpan>,
    /// A gRPC call, whose span carries its status code.
    grpc: bool,
}

impl Drop for HandlerSpan {
    // A call dropped unfinished (Execute or Complete cancelled by its caller) still ends
    // its span, as cancelled.
    fn drop(&mut self) {
        if let Some(span) = self.span.take() {
            span.set(KeyValue::new("a2a.handler.result", "cancelled"));
            span.end(Some("cancelled"));
        }
    }
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
    mut span: HandlerSpan,
    result: &'static str,
    failure: Option<&Failure>,
) -> Option<ContextGuard> {
    let grpc = span.grpc;
    let span = span.span.take()?;
    let current = span.attach();
    span.set(KeyValue::new("a2a.handler.result", result));
    let error = failure.map(|f| error_type(&f.reason));
    let error = error.or((result == "failed").then_some("failed"));
    // A gRPC call's status: OK, or the one the handler answered with when it did.
    let code = match failure {
        None if error.is_none() => Some(0),
        failure => failure.and_then(|f| f.grpc_code).map(|c| c as i64),
    };
    if let Some(code) = code.filter(|_| grpc) {
        span.set(KeyValue::new("rpc.grpc.status_code", code));
    }
    span.end(error);
    Some(current)
}

/// [`end`] for a completion call: `completions`, or `failed` with its failure.
pub(super) fn end_completion<T>(
    span: HandlerSpan,
    result: &Result<T, Failure>,
) -> Option<ContextGuard> {
    let word = if result.is_ok() {
        "completions"
    } else {
        "failed"
    };
    end(span, word, result.as_ref().err())
}

/// A fixed word for a failure, from the start of its reason (the reasons `Failure`s
/// are made with in this layer; anything else is `failed`).
fn error_type(reason: &str) -> &'static str {
    const KINDS: [(&str, &str); 10] = [
        ("timed out", "timeout"),
        ("malformed answer", "malformed_answer"),
        ("handler busy", "busy"),
        ("handler host not allowed", "host_not_allowed"),
        ("handler credentials unavailable", "credentials_unavailable"),
        ("bad handler", "bad_binding"),
        ("handler unreachable", "unreachable"),
        ("handler answered", "error_answer"),
        ("handler error", "error_answer"),
        ("answer larger than", "answer_too_large"),
    ];
    KINDS
        .iter()
        .find(|(start, _)| reason.starts_with(start))
        .map_or("failed", |(_, kind)| kind)
}

#[cfg(test)]
mod tests {
    use super::error_type;

    #[test]
    fn failures_are_fixed_words_never_their_text() {
        for (reason, kind) in [
            ("timed out after 300 ms", "timeout"),
            ("handler answered FAILED_PRECONDITION", "error_answer"),
            ("handler answered HTTP 500", "error_answer"),
            ("handler unreachable", "unreachable"),
            ("bad handler endpoint", "bad_binding"),
            ("malformed answer: {\"jsonrpc\"", "malformed_answer"),
            ("something new", "failed"),
        ] {
            assert_eq!(error_type(reason), kind, "{reason}");
        }
    }
}
