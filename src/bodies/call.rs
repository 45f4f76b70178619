//! What every handler call shares: the headers it carries (credentials read from files,
//! the caller's trace context), the failure a call ends in (a short reason for the
//! reply, the detail for the log) and the bound on endpoints kept.

use std::path::Path;

use reqwest::header::{HeaderName, HeaderValue};

use crate::rules::body::{HandlerBinding, HandlerHeader};

/// Endpoints whose connections and slots are kept; past that, idle ones are dropped so
/// that registering and removing many handler URLs cannot grow memory without bound.
pub(super) const MAX_ENDPOINTS: usize = 256;

/// The pooled HTTP client of JSON-RPC and MCP handlers: no redirects (a 3xx is a
/// failure), and `ca` (PEM) trusted beside the system's roots.
pub(super) fn http_client(ca: Option<&[u8]>) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .pool_idle_timeout(std::time::Duration::from_secs(90))
        .redirect(reqwest::redirect::Policy::none());
    if let Some(pem) = ca {
        for certificate in reqwest::Certificate::from_pem_bundle(pem).unwrap_or_default() {
            builder = builder.add_root_certificate(certificate);
        }
    }
    builder.build().expect("the HTTP client builds")
}

/// A failure inside a call: the short reason and the detail for the log.
pub(super) struct Failure {
    /// What the reply says after `/<name> failed: `.
    pub(super) reason: String,
    /// What the log says.
    pub(super) detail: String,
    /// The gRPC status a gRPC handler answered with, for its span.
    pub(super) grpc_code: Option<tonic::Code>,
}

impl Failure {
    pub(super) fn new(reason: impl Into<String>, detail: impl ToString) -> Self {
        Self {
            reason: reason.into(),
            detail: detail.to_string(),
            grpc_code: None,
        }
    }

    /// An answer that could not be read; the reason quotes the start of the detail.
    pub(super) fn malformed(detail: impl ToString) -> Self {
        let detail = detail.to_string();
        Self {
            reason: format!("malformed answer: {}", shorten(&detail, 120)),
            detail,
            grpc_code: None,
        }
    }

    /// The binding's deadline passed.
    pub(super) fn timed_out(binding: &HandlerBinding, detail: impl ToString) -> Self {
        Self::new(format!("timed out after {} ms", binding.timeout_ms), detail)
    }
}

/// `text` cut to at most `max_chars` characters, with an ellipsis when cut.
pub(super) fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max_chars - 1).collect();
    short.push('…');
    short
}

/// The W3C trace context of the call that led to a handler call, passed on as is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// `traceparent`, when the caller sent a well-formed one.
    pub traceparent: Option<String>,
    /// `tracestate`, with a `traceparent` only.
    pub tracestate: Option<String>,
}

impl Trace {
    /// The trace context of the incoming call's `traceparent` and `tracestate`; a
    /// malformed `traceparent` (W3C version 00: `00-<32 hex>-<16 hex>-<2 hex>`, not all
    /// zeros) is dropped with its `tracestate`.
    pub fn from_headers(traceparent: Option<&str>, tracestate: Option<&str>) -> Self {
        let Some(parent) = traceparent.filter(|p| well_formed_traceparent(p)) else {
            return Self::default();
        };
        let state =
            tracestate.filter(|s| s.len() <= 512 && s.bytes().all(|b| (0x20..0x7f).contains(&b)));
        Self {
            traceparent: Some(parent.to_owned()),
            tracestate: state.map(str::to_owned),
        }
    }

    /// The trace id (32 hex digits), for the log.
    pub fn trace_id(&self) -> &str {
        self.traceparent.as_deref().map_or("", |p| &p[3..35])
    }
}

fn well_formed_traceparent(p: &str) -> bool {
    let parts: Vec<&str> = p.split('-').collect();
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    parts.len() == 4
        && parts[0] == "00"
        && hex(parts[1], 32)
        && hex(parts[2], 16)
        && hex(parts[3], 2)
        && parts[1].bytes().any(|b| b != b'0')
        && parts[2].bytes().any(|b| b != b'0')
}

/// The headers one handler call carries: the binding's credentials and the trace
/// context. Credential values are marked sensitive (never logged, never indexed by
/// HPACK).
#[derive(Clone, Debug, Default)]
pub struct CallHeaders(Vec<(HeaderName, HeaderValue)>);

impl CallHeaders {
    /// Reads the values of `headers` from files under `secrets_dir`, at each call (so
    /// a rotated Secret applies), and adds `trace`.
    pub(super) fn read(
        secrets_dir: Option<&Path>,
        headers: &[HandlerHeader],
        trace: &Trace,
    ) -> Result<Self, Failure> {
        let mut out = Vec::with_capacity(headers.len() + 2);
        for header in headers {
            let dir = secrets_dir.ok_or_else(|| {
                Failure::new(
                    "handler credentials unavailable",
                    "the binding names headers and --handler-secrets-dir is not set",
                )
            })?;
            let path = dir.join(&header.value_file);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Failure::new(
                    "handler credentials unavailable",
                    format!("{}: {e}", path.display()),
                )
            })?;
            let name = HeaderName::from_bytes(header.name.as_bytes())
                .map_err(|e| Failure::new("handler credentials unavailable", e))?;
            let mut value = HeaderValue::from_str(text.trim()).map_err(|_| {
                Failure::new(
                    "handler credentials unavailable",
                    format!("{}: not a valid header value", path.display()),
                )
            })?;
            value.set_sensitive(true);
            out.push((name, value));
        }
        let trace_headers = [
            ("traceparent", &trace.traceparent),
            ("tracestate", &trace.tracestate),
        ];
        for (name, value) in trace_headers {
            if let Some(value) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
                out.push((HeaderName::from_static(name), value));
            }
        }
        Ok(Self(out))
    }

    /// Each header, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&HeaderName, &HeaderValue)> {
        self.0.iter().map(|(n, v)| (n, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_context_is_passed_on_only_when_well_formed() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let trace = Trace::from_headers(Some(parent), Some("congo=t61rcWkgMzE"));
        assert_eq!(trace.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(trace.tracestate.as_deref(), Some("congo=t61rcWkgMzE"));
        for bad in [
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert_eq!(
                Trace::from_headers(Some(bad), Some("a=b")),
                Trace::default()
            );
        }
    }

    #[test]
    fn credentials_come_from_files_and_are_sensitive() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "Bearer s3cret\n").unwrap();
        let header = HandlerHeader {
            name: "authorization".into(),
            value_file: "token".into(),
        };
        let headers = CallHeaders::read(
            Some(dir.path()),
            std::slice::from_ref(&header),
            &Trace::default(),
        )
        .unwrap_or_else(|f| panic!("{}", f.reason));
        let (name, value) = headers.iter().next().unwrap();
        assert_eq!(
            (name.as_str(), value.to_str().unwrap()),
            ("authorization", "Bearer s3cret")
        );
        assert!(value.is_sensitive());
        assert!(!format!("{headers:?}").contains("s3cret"), "Debug hides it");
        let missing = HandlerHeader {
            value_file: "nope".into(),
            ..header
        };
        let failure =
            CallHeaders::read(Some(dir.path()), &[missing], &Trace::default()).unwrap_err();
        assert_eq!(failure.reason, "handler credentials unavailable");
    }
}
