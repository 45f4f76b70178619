//! The observing layer: every API call's one log line and its metrics, taken around the
//! call, so that no RPC method times, logs or counts itself.
//!
//! The line says the method, the status code, the latency (from when the call reaches
//! this layer, its first data read by the budget, to its answer: reading the rest and
//! decoding included), the command name, and for Execute the outcome and for Execute
//! and Complete the caller's trace id. The code is read from the answer; the rest only
//! the method knows, so the method [`note`]s it on the call (a task-local slot this
//! layer gives each call, and reads when the answer is ready). Calls refused by the
//! layers outside it (405/415, the budget, no data in time) never reach it. Message
//! text and arguments are never logged, since they may carry secrets.
//!
//! With traces on, the layer also makes each call's server span (OpenTelemetry's RPC
//! conventions; its parent the caller's `traceparent`), current while the call runs,
//! so that handler calls are its children and log lines carry its ids; it ends when
//! the answer starts, with the code and the noted command and outcome, never text.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use tokio::task::futures::TaskLocalFuture;
use tonic::codegen::{http, Service};
use tonic::server::NamedService;
use tonic::Code;

use crate::codes;
use crate::metrics::metrics;
use crate::telemetry::{CallSpan, KeyValue, SpanKind, Tracer, W3c};
use crate::transport::call_log::{self, Inline, MAX_COMMAND};
use crate::transport::layers::deadline::CallDeadline;

tokio::task_local! {
    static NOTE: RefCell<Note>;
}

/// What a method says of its call, for the line.
#[derive(Default)]
struct Note {
    command: Inline<MAX_COMMAND>,
    outcome: &'static str,
    trace_id: Inline<32>,
}

/// Notes on the call being served the command it concerns, how it ended (Execute's
/// `OUTCOME_*` name, or "") and the caller's trace id ("" leaves it unset). Outside an
/// observed call it does nothing.
pub fn note(command: &str, outcome: &'static str, trace_id: &str) {
    let _ = NOTE.try_with(|note| {
        let mut note = note.borrow_mut();
        note.command = Inline::new(command);
        note.outcome = outcome;
        if !trace_id.is_empty() {
            note.trace_id = Inline::new(trace_id);
        }
    });
}

/// How one server logs and counts its calls: built from its settings, so two servers
/// in one process keep their own.
#[derive(Debug)]
pub struct CallLog {
    /// One in how many successful calls is logged (1: every call).
    sample: u64,
    /// Successful calls so far, for sampling.
    successes: AtomicU64,
    /// Whether per-call metrics are recorded (only when they are served).
    metrics: bool,
    /// Where each call's server span goes (traces on only).
    tracer: Option<Tracer>,
}

impl CallLog {
    /// Logs one successful call in `sample` (0 and 1: every call), failures always; with
    /// `metrics`, also counts every call and every Execute outcome.
    pub fn new(sample: u64, metrics: bool) -> Self {
        Self {
            sample: sample.max(1),
            successes: AtomicU64::new(0),
            metrics,
            tracer: None,
        }
    }

    /// The same, with a server span per call sent to `tracer`.
    pub fn traced(self, tracer: Option<Tracer>) -> Self {
        Self { tracer, ..self }
    }

    /// Starts the server span of a call to `method` of `service`, child of the trace
    /// context in `headers`.
    fn server_span(
        &self,
        service: &'static str,
        method: &'static str,
        headers: &http::HeaderMap,
    ) -> Option<CallSpan> {
        let tracer = self.tracer.as_ref()?;
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let parent = W3c {
            traceparent: header("traceparent"),
            tracestate: header("tracestate"),
        };
        Some(tracer.span(
            SpanKind::Server,
            format!("{service}/{method}"),
            parent,
            vec![
                KeyValue::new("rpc.system", "grpc"),
                KeyValue::new("rpc.service", service),
                KeyValue::new("rpc.method", method),
            ],
        ))
    }

    /// Counts the call, writes its line (unless sampled out) and ends its span.
    fn record(
        &self,
        method: &'static str,
        code: Code,
        elapsed: Duration,
        note: &Note,
        span: Option<CallSpan>,
    ) {
        let command = note.command.as_str();
        let mut span_id = Inline::<16>::default();
        let mut trace_id = note.trace_id;
        if let Some(span) = span {
            let (trace, id) = span.ids();
            (trace_id, span_id) = (Inline::new(&trace), Inline::new(&id));
            end_server_span(span, method, code, note);
        }
        if self.metrics {
            metrics().call(method, codes::name(code), elapsed);
            // Only commands: their names are registered, so the label set is bounded.
            if method == "Execute" && !command.is_empty() {
                metrics().outcome(command, outcome_word(note.outcome));
            }
        }
        // Successful calls may be sampled (--call-log-sample); a failure always has its
        // line.
        if code == Code::Ok
            && self.sample > 1
            && !self
                .successes
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(self.sample)
        {
            return;
        }
        call_log::write_line(
            method,
            code,
            elapsed,
            &note.command,
            note.outcome,
            &trace_id,
            &span_id,
        );
    }
}

/// Execute's outcome as metrics and spans name it.
fn outcome_word(outcome: &str) -> &'static str {
    match outcome {
        "OUTCOME_OK" => "ok",
        "OUTCOME_REFUSED" => "refused",
        "OUTCOME_FAILED" => "failed",
        "PROMPT" => "prompt",
        _ => "no_handler",
    }
}

/// Ends a call's server span: the gRPC code (an error status for the codes
/// OpenTelemetry counts as a server's fault), and the command and its outcome when the
/// method noted them. Only names that are registered, or that an authorized Register
/// or Unregister validated, become attributes: never text a caller chose.
fn end_server_span(span: CallSpan, method: &str, code: Code, note: &Note) {
    span.set(KeyValue::new("rpc.grpc.status_code", code as i64));
    let command = note.command.as_str();
    let validated = code == Code::Ok || !matches!(method, "Register" | "Unregister");
    if !command.is_empty() && validated {
        span.set(KeyValue::new("a2a.command.name", command.to_owned()));
        if !note.outcome.is_empty() {
            span.set(KeyValue::new(
                "a2a.command.outcome",
                outcome_word(note.outcome),
            ));
        }
    }
    let server_fault = matches!(
        code,
        Code::Unknown
            | Code::DeadlineExceeded
            | Code::Unimplemented
            | Code::Internal
            | Code::Unavailable
            | Code::DataLoss
    );
    span.end(server_fault.then(|| codes::name(code)));
}

/// The method a request path calls, if it is one of `service`'s (a `&'static str`, so
/// that metrics' labels stay bounded).
fn method_of(path: &str, service: &str) -> Option<&'static str> {
    let name = path
        .strip_prefix('/')?
        .strip_prefix(service)?
        .strip_prefix('/')?;
    const METHODS: [&str; 7] = [
        "Register",
        "Unregister",
        "ListSpecs",
        "WatchSpecs",
        "Classify",
        "Execute",
        "Complete",
    ];
    METHODS.into_iter().find(|m| *m == name)
}

/// The gRPC code of an answer as it starts: a failure is "trailers-only", with its
/// status in the headers; an answer that starts without one has succeeded so far.
fn code_of<B>(answer: &http::Response<B>) -> Code {
    // A `HeaderName`, not a `&str`: the name is then not parsed again on every call.
    const GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");
    answer
        .headers()
        .get(GRPC_STATUS)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .map_or(Code::Ok, Code::from_i32)
}

/// Wraps a service: its calls are logged and counted by `calls`.
#[derive(Clone, Debug)]
pub struct Observed<S> {
    inner: S,
    calls: Arc<CallLog>,
}

impl<S> Observed<S> {
    /// `inner`, observed by `calls`.
    pub fn new(inner: S, calls: Arc<CallLog>) -> Self {
        Self { inner, calls }
    }
}

impl<S: NamedService> NamedService for Observed<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B, R> Service<http::Request<B>> for Observed<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + NamedService,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = Observing<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = method_of(request.uri().path(), S::NAME);
        let span = method.and_then(|m| self.calls.server_span(S::NAME, m, request.headers()));
        let deadline = request.extensions().get::<CallDeadline>().copied();
        Observing {
            inner: NOTE.scope(RefCell::default(), self.inner.call(request)),
            started: Instant::now(),
            method,
            calls: Arc::clone(&self.calls),
            span,
            deadline,
        }
    }
}

pin_project_lite::pin_project! {
    /// An observed call's answer.
    pub struct Observing<F> {
        #[pin]
        inner: TaskLocalFuture<RefCell<Note>, F>,
        started: Instant,
        method: Option<&'static str>,
        calls: Arc<CallLog>,
        span: Option<CallSpan>,
        // The caller's deadline, if it set one.
        deadline: Option<CallDeadline>,
    }

    impl<F> PinnedDrop for Observing<F> {
        // A call dropped before its answer still ends its span: as DEADLINE_EXCEEDED
        // when its deadline passed (the deadline layer answered it, so it has its line
        // and is counted), as CANCELLED otherwise (the caller cancelled, or the
        // connection broke).
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let expired = this.deadline.is_some_and(|d| d.left().is_zero());
            match (*this.method, expired) {
                (Some(method), true) => {
                    let note = this.inner.take_value().map(RefCell::into_inner);
                    this.calls.record(
                        method,
                        Code::DeadlineExceeded,
                        this.started.elapsed(),
                        &note.unwrap_or_default(),
                        this.span.take(),
                    );
                }
                _ => {
                    if let Some(span) = this.span.take() {
                        span.set(KeyValue::new("rpc.grpc.status_code", Code::Cancelled as i64));
                        span.end(None);
                    }
                }
            }
        }
    }
}

impl<F, R, E> Future for Observing<F>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        let answer = {
            // The span is current only while the call runs on this thread.
            let _current = this.span.as_ref().map(CallSpan::attach);
            ready!(this.inner.as_mut().poll(cx))
        };
        if let (Some(method), Ok(response)) = (*this.method, &answer) {
            let note = this.inner.take_value().map(RefCell::into_inner);
            let note = note.unwrap_or_default();
            this.calls.record(
                method,
                code_of(response),
                this.started.elapsed(),
                &note,
                this.span.take(),
            );
            // Recorded: its drop records nothing more.
            *this.method = None;
        }
        Poll::Ready(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::command_service_server::SERVICE_NAME;

    #[test]
    fn methods_are_known_by_their_path() {
        let service = "a2a.commands.v1.CommandService";
        assert_eq!(
            method_of("/a2a.commands.v1.CommandService/Execute", service),
            Some("Execute")
        );
        assert_eq!(
            method_of("/a2a.commands.v1.CommandService/Nope", service),
            None
        );
        assert_eq!(method_of("/grpc.health.v1.Health/Check", service), None);
        assert_eq!(
            method_of("/a2a.commands.v1.CommandServiceX/Execute", service),
            None
        );
    }

    /// A method missing from `METHODS` would go unlogged and uncounted.
    #[test]
    fn every_method_of_the_service_is_known() {
        use prost::Message as _;
        let set = prost_types::FileDescriptorSet::decode(crate::pb::FILE_DESCRIPTOR_SET)
            .expect("the generated descriptor set");
        let service = set
            .file
            .iter()
            .flat_map(|file| {
                let package = file.package().to_owned();
                file.service.iter().map(move |s| (package.clone(), s))
            })
            .find(|(package, s)| format!("{package}.{}", s.name()) == SERVICE_NAME)
            .expect("CommandService in the descriptors")
            .1;
        assert!(!service.method.is_empty());
        for method in &service.method {
            let path = format!("/{SERVICE_NAME}/{}", method.name());
            assert_eq!(
                method_of(&path, SERVICE_NAME),
                Some(method.name()),
                "{path}"
            );
        }
    }

    #[test]
    fn the_code_is_the_answer_s_status_header_or_ok() {
        let ok = http::Response::new(());
        assert_eq!(code_of(&ok), Code::Ok);
        let failed = tonic::Status::not_found("gone").into_http::<()>();
        assert_eq!(code_of(&failed), Code::NotFound);
    }

    #[tokio::test]
    async fn a_note_outside_an_observed_call_does_nothing_and_inside_is_read() {
        note("ignored", "", "");
        let seen = NOTE
            .scope(RefCell::default(), async {
                note("deploy", "OUTCOME_OK", "abc");
                NOTE.with(|n| {
                    let n = n.borrow();
                    (n.command.as_str().to_owned(), n.outcome)
                })
            })
            .await;
        assert_eq!(seen, ("deploy".to_owned(), "OUTCOME_OK"));
    }
}
