//! What a call arrives with that its handler calls carry on: the W3C trace context, and
//! the caller's deadline.

use tonic::codegen::http;

use crate::bodies::Trace;
use crate::transport::layers::deadline::CallDeadline;

/// The W3C trace context of an incoming call (its headers): passed on to handlers as it
/// came with traces off; with traces on, the handler calls' spans are children of the
/// call's server span (current while it runs), and this context serves the log line only.
pub(crate) fn trace_of(headers: &http::HeaderMap) -> Trace {
    CallHeaders::of(headers).trace()
}

// Names made once, not parsed from a `&str` on every call.
const GRPC_ENCODING: http::HeaderName = http::HeaderName::from_static("grpc-encoding");
const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");

/// The headers a call is read by, each the first of its name (as `HeaderMap::get` finds
/// it), found in one walk over them: a call has a few headers, and one walk costs less
/// than a lookup by name for each, which hashes the name.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CallHeaders<'h> {
    /// `grpc-encoding`.
    pub encoding: Option<&'h http::HeaderValue>,
    traceparent: Option<&'h http::HeaderValue>,
    tracestate: Option<&'h http::HeaderValue>,
}

impl<'h> CallHeaders<'h> {
    /// The call's headers among `headers`.
    pub(crate) fn of(headers: &'h http::HeaderMap) -> Self {
        let mut found = Self::default();
        for (name, value) in headers {
            let slot = if *name == GRPC_ENCODING {
                &mut found.encoding
            } else if *name == TRACEPARENT {
                &mut found.traceparent
            } else if *name == TRACESTATE {
                &mut found.tracestate
            } else {
                continue;
            };
            slot.get_or_insert(value);
        }
        found
    }

    /// The call's W3C trace context (see [`trace_of`]).
    pub(crate) fn trace(&self) -> Trace {
        Trace::from_headers(
            self.traceparent.and_then(|v| v.to_str().ok()),
            self.tracestate.and_then(|v| v.to_str().ok()),
        )
    }
}

/// When the caller stops waiting (its `grpc-timeout`, as the deadline layer read it and
/// put it in the request's extensions).
pub(crate) fn deadline_of(extensions: &http::Extensions) -> Option<std::time::Instant> {
    extensions
        .get::<CallDeadline>()
        .map(|deadline| deadline.0.into_std())
}
