//! The W3C trace context a call arrives with.

use tonic::codegen::http;

use crate::bodies::Trace;

/// The W3C trace context of an incoming call: passed on to handlers as it came with
/// traces off; with traces on, the handler calls' spans are children of the call's
/// server span (current while it runs), and this context serves the log line only.
pub(crate) fn trace_of(metadata: &tonic::metadata::MetadataMap) -> Trace {
    // Names made once, not parsed from a `&str` on every call.
    const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
    const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");
    let headers = metadata.as_ref();
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    Trace::from_headers(header(&TRACEPARENT), header(&TRACESTATE))
}
