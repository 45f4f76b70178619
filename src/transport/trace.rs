//! What a call arrives with that its handler calls carry on: the W3C trace context, and
//! the caller's deadline.

use tonic::codegen::http;

use crate::bodies::Trace;
use crate::transport::layers::deadline::CallDeadline;

/// The W3C trace context of an incoming call (its headers): passed on to handlers as it
/// came with traces off; with traces on, the handler calls' spans are children of the
/// call's server span (current while it runs), and this context serves the log line only.
pub(crate) fn trace_of(headers: &http::HeaderMap) -> Trace {
    // Names made once, not parsed from a `&str` on every call.
    const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
    const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    Trace::from_headers(header(&TRACEPARENT), header(&TRACESTATE))
}

/// When the caller stops waiting (its `grpc-timeout`, as the deadline layer read it and
/// put it in the request's extensions).
pub(crate) fn deadline_of(extensions: &http::Extensions) -> Option<std::time::Instant> {
    extensions
        .get::<CallDeadline>()
        .map(|deadline| deadline.0.into_std())
}
