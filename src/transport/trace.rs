//! The W3C trace context handler calls are made under.

use tonic::codegen::http;

use crate::bodies::Trace;
use crate::telemetry::spans::current_w3c;

/// The trace context handler calls of this call are made under: with traces on, the
/// call's server span (current while it runs); off, the caller's own headers, passed
/// on as they came.
pub(crate) fn trace_of(metadata: &tonic::metadata::MetadataMap) -> Trace {
    if let Some((traceparent, tracestate)) = current_w3c() {
        return Trace::from_headers(Some(&traceparent), tracestate.as_deref());
    }
    // Names made once, not parsed from a `&str` on every call.
    const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
    const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");
    let headers = metadata.as_ref();
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    Trace::from_headers(header(&TRACEPARENT), header(&TRACESTATE))
}
