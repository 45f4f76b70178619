//! The front's client of its one upstream: requests forwarded as they came (hop-by-hop
//! headers dropped, the path mapped under the upstream's base), answers streamed back
//! frame by frame, and the few calls the front makes itself (the card, a task).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::front::pool::{Pool, PoolError};
use crate::http1::head::{Answer, Headers, Request};
use crate::http1::token::same_name;
use crate::telemetry::{CallSpan, KeyValue, SpanKind, Tracer};

/// Whether a header (named in any case) belongs to one connection, never forwarded
/// (RFC 9110, section 7.6.1). `Proxy-Connection` is no standard's, but clients still
/// send it and no agent should see it.
fn is_hop_by_hop(name: &[u8]) -> bool {
    // By length first: most names are none of these, and are told so at once.
    let candidates: &[&str] = match name.len() {
        2 => &["te"],
        7 => &["trailer", "upgrade"],
        10 => &["connection", "keep-alive"],
        16 => &["proxy-connection"],
        17 => &["transfer-encoding"],
        18 => &["proxy-authenticate"],
        19 => &["proxy-authorization"],
        _ => &[],
    };
    candidates.iter().any(|c| same_name(name, c.as_bytes()))
}

/// Why an upstream call gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// No answer started within the timeout.
    #[error("the agent at {0} did not answer within {1} ms")]
    Timeout(String, u128),
    /// It could not be reached, or the exchange broke.
    #[error("the agent at {0} could not be reached: {1}")]
    Unreachable(String, String),
    /// It answered, but not in a form the front reads.
    #[error("the agent at {0} answered in a form the front cannot read: {1}")]
    Unreadable(String, String),
}

/// The upstream agent and the client that reaches it.
#[derive(Clone, Debug)]
pub struct Upstream {
    base: url::Url,
    /// The base URL's path, without its last `/`: what every path is put under.
    base_path: String,
    /// The `Host` every HTTP/1.1 request carries: the base URL's host and port.
    host: HeaderValue,
    /// Kept-alive HTTP/1.1 connections to the agent.
    pool: Arc<Pool>,
    /// HTTP/2 only (prior knowledge), for the agent's gRPC interface.
    grpc: Client<HttpConnector, Body>,
    timeout: Duration,
    tracer: Option<Tracer>,
}

impl Upstream {
    /// The agent at `base`, each call's answer awaited at most `timeout`.
    pub fn new(base: url::Url, timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(timeout));
        // `host_str` keeps an IPv6 address in brackets, as both uses want it.
        let host = base.host_str().unwrap_or("localhost");
        let port = base.port_or_known_default().unwrap_or(80);
        let with_port = match base.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Self {
            base_path: base.path().trim_end_matches('/').to_owned(),
            host: HeaderValue::from_str(&with_port)
                .unwrap_or_else(|_| HeaderValue::from_static("localhost")),
            pool: Arc::new(Pool::new(format!("{host}:{port}"))),
            base,
            grpc: Client::builder(TokioExecutor::new())
                .http2_only(true)
                .build(connector),
            timeout,
            tracer: None,
        }
    }

    /// The same upstream, each call a client span sent to `tracer` (a child of the
    /// span current where the call is made), whose `traceparent` the agent receives.
    pub fn traced(self, tracer: Option<Tracer>) -> Self {
        Self { tracer, ..self }
    }

    /// The agent's base URL.
    pub fn base(&self) -> &url::Url {
        &self.base
    }

    /// The upstream's URI (in origin form: a path and query) for a path under the
    /// front's base `front_base` (the public URL's path): that base replaced by the
    /// upstream's. Never another host: a request names a path, and the front's
    /// connections only ever reach its one upstream.
    pub fn uri_for(&self, path_and_query: &str, front_base: &str) -> Uri {
        let front_base = front_base.trim_end_matches('/');
        let rest = path_and_query
            .strip_prefix(front_base)
            .filter(|r| r.is_empty() || r.starts_with('/') || r.starts_with('?'))
            .unwrap_or(path_and_query);
        let rest = if rest.is_empty() { "/" } else { rest };
        let mut path = String::with_capacity(self.base_path.len() + rest.len() + 1);
        path.push_str(&self.base_path);
        if path.is_empty() && !rest.starts_with('/') {
            path.push('/');
        }
        path.push_str(rest);
        Uri::try_from(path).unwrap_or_else(|_| Uri::from_static("/"))
    }

    /// A request's `uri` mapped as [`Upstream::uri_for`] maps its path and query: the
    /// same URI, with no string made or parsed again, when the mapping leaves it as it
    /// is (the usual sidecar: no base path on either side, and the URI in origin form).
    pub fn map_uri(&self, uri: Uri, front_base: &str) -> Uri {
        let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
        let unchanged = self.base_path.is_empty()
            && front_base.trim_end_matches('/').is_empty()
            && uri.scheme().is_none()
            && uri.authority().is_none()
            && path_and_query.starts_with('/');
        if unchanged {
            return uri;
        }
        self.uri_for(path_and_query, front_base)
    }

    /// Sends `request` (its URI already the upstream's) and waits for the answer's
    /// head; its body streams after that.
    pub async fn send(&self, request: Request) -> Result<Answer, UpstreamError> {
        self.send_with(request, false).await
    }

    /// As [`Upstream::send`], to the agent's gRPC interface (its URI already that
    /// interface's): HTTP/2, the answer's trailers (its gRPC status) kept.
    pub async fn send_grpc(&self, request: Request) -> Result<Answer, UpstreamError> {
        self.send_with(request, true).await
    }

    async fn send_with(&self, mut request: Request, grpc: bool) -> Result<Answer, UpstreamError> {
        strip_hop_by_hop(request.headers_mut());
        let host = if grpc {
            // The one `TE` gRPC has (and some servers require): it will read trailers.
            request
                .headers_mut()
                .insert(header::TE, HeaderValue::from_static("trailers"));
            request
                .uri()
                .authority()
                .and_then(|authority| HeaderValue::from_str(authority.as_str()).ok())
        } else {
            Some(self.host.clone())
        };
        if let Some(host) = host {
            request.headers_mut().insert(header::HOST, host);
        }
        let span = self.span(&mut request);
        let deadline = tokio::time::Instant::now() + self.timeout;
        let timed_out = || UpstreamError::Timeout(self.base.to_string(), self.timeout.as_millis());
        let unreachable = |e: &dyn std::error::Error| {
            UpstreamError::Unreachable(self.base.to_string(), error_chain(e))
        };
        let answer = if grpc {
            let request = request.into_http();
            match tokio::time::timeout_at(deadline, self.grpc.request(request)).await {
                Ok(Ok(answer)) => Ok(Answer::from(answer.map(Body::new))),
                Ok(Err(error)) => Err(unreachable(&error)),
                Err(_) => Err(timed_out()),
            }
        } else {
            // The pool's connections keep their timers (no timer made per request).
            match self.pool.send(request, deadline).await {
                Ok(answer) => Ok(answer),
                Err(PoolError::TimedOut) => Err(timed_out()),
                Err(error) => Err(unreachable(&error)),
            }
        };
        if let Some(span) = span {
            match &answer {
                Ok(answer) => {
                    let status = answer.status();
                    span.set(KeyValue::new(
                        "http.response.status_code",
                        i64::from(status.as_u16()),
                    ));
                    span.end(status.is_server_error().then_some("http_status"));
                }
                Err(UpstreamError::Timeout(..)) => span.end(Some("timeout")),
                Err(UpstreamError::Unreachable(..) | UpstreamError::Unreadable(..)) => {
                    span.end(Some("unreachable"))
                }
            }
        }
        let mut answer = answer?;
        strip_hop_by_hop(answer.headers_mut());
        Ok(answer)
    }

    /// With traces on, the client span of one call (until its answer starts), and the
    /// request's trace context replaced by one naming it.
    fn span(&self, request: &mut Request) -> Option<CallSpan> {
        let tracer = self.tracer.as_ref()?;
        let mut attributes = vec![
            KeyValue::new("http.request.method", request.method().to_string()),
            KeyValue::new("url.path", request.uri().path().to_owned()),
        ];
        if let Some(host) = self.base.host_str() {
            attributes.push(KeyValue::new("server.address", host.to_owned()));
        }
        if let Some(port) = self.base.port_or_known_default() {
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
        let span =
            tracer.span_under_current(SpanKind::Client, request.method().to_string(), attributes);
        let (traceparent, tracestate) = span.w3c();
        let headers = request.headers_mut();
        headers.remove("tracestate");
        if let Ok(value) = HeaderValue::from_str(&traceparent) {
            headers.insert(HeaderName::from_static("traceparent"), value);
        }
        if let Some(value) = tracestate.and_then(|s| HeaderValue::from_str(&s).ok()) {
            headers.insert(HeaderName::from_static("tracestate"), value);
        }
        Some(span)
    }

    /// A whole answer to a call the front makes itself: `method` on `uri` (one of
    /// [`Upstream::uri_for`]) with `headers` and `body`, read to its end (at most `max`
    /// bytes).
    pub async fn call(
        &self,
        method: Method,
        uri: Uri,
        headers: Headers,
        body: Bytes,
        max: usize,
    ) -> Result<(StatusCode, Headers, Bytes), UpstreamError> {
        let mut request = Request::new(method, uri, headers, Body::from(body));
        // The front reads this answer: it asks for it uncompressed (without the header,
        // any coding would be acceptable, RFC 9110 section 12.5.3).
        request.headers_mut().insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        let answer = self.send(request).await?;
        let (parts, body) = answer.into_parts();
        let where_ = self.base.to_string();
        if let Some(coding) = encoding(&parts.headers) {
            return Err(UpstreamError::Unreadable(
                where_,
                format!("its answer is encoded ({coding}) although the front asked for identity"),
            ));
        }
        let limited = http_body_util::Limited::new(body, max);
        let bytes = tokio::time::timeout(self.timeout, limited.collect())
            .await
            .map_err(|_| UpstreamError::Timeout(where_.clone(), self.timeout.as_millis()))?
            .map_err(|e| UpstreamError::Unreachable(where_, e.to_string()))?
            .to_bytes();
        Ok((parts.status, parts.headers, bytes))
    }
}

/// The headers of a call the front makes itself about the caller's task: the caller's
/// credentials, version, extensions and trace context, and `content_type`.
pub fn own_call_headers(headers: &Headers, content_type: &'static str) -> Headers {
    let mut sent = Headers::with_capacity(6);
    for name in [
        header::AUTHORIZATION,
        HeaderName::from_static("a2a-version"),
        HeaderName::from_static("a2a-extensions"),
        HeaderName::from_static("traceparent"),
        HeaderName::from_static("tracestate"),
    ] {
        if let Some(value) = headers.get(&name) {
            sent.insert(name, value.clone());
        }
    }
    sent.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    sent
}

/// Asks for an uncompressed answer, which the front reads (it decodes none).
pub fn identity_only(headers: &mut Headers) {
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
}

/// The content coding of a body, when it has one (anything but identity).
pub fn encoding(headers: &Headers) -> Option<&str> {
    headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .filter(|e| !e.trim().eq_ignore_ascii_case("identity"))
}

/// Removes hop-by-hop headers, and those the `Connection` header names.
pub fn strip_hop_by_hop(headers: &mut Headers) {
    if !headers.iter().any(|(name, _)| is_hop_by_hop(name)) {
        return;
    }
    let named: Vec<Vec<u8>> = headers
        .get_all("connection")
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(|name| name.trim_ascii().to_vec())
        .filter(|name| !name.is_empty())
        .collect();
    headers.retain(|name, _| !is_hop_by_hop(name) && !named.iter().any(|n| same_name(n, name)));
}

/// An error and its causes, in one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_under_the_upstream_s_base_and_never_elsewhere() {
        let upstream = Upstream::new(
            url::Url::parse("http://127.0.0.1:9000/agent/").unwrap(),
            Duration::from_secs(1),
        );
        assert_eq!(
            upstream.uri_for("/message:send", "/"),
            "/agent/message:send"
        );
        assert_eq!(
            upstream.uri_for("/front/tasks/t-1?historyLength=2", "/front"),
            "/agent/tasks/t-1?historyLength=2"
        );
        assert_eq!(upstream.uri_for("/", "/"), "/agent/");
        // A request naming another host is still a path here.
        assert_eq!(
            upstream.uri_for("//evil.example/x", "/"),
            "/agent//evil.example/x"
        );
        let at_root = Upstream::new(
            url::Url::parse("http://127.0.0.1:9000").unwrap(),
            Duration::from_secs(1),
        );
        assert_eq!(at_root.uri_for("/", "/"), "/");
        // A request's own URI, mapped the same way, whether or not it is kept as it is.
        for (target, front_base) in [
            ("/message:send?a=1", "/"),
            ("//evil.example/x", ""),
            ("/front/tasks/t-1", "/front"),
            ("http://elsewhere.example/x?y", "/"),
            ("*", "/"),
        ] {
            let uri: Uri = target.parse().unwrap();
            let whole = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
            for up in [&upstream, &at_root] {
                assert_eq!(
                    up.map_uri(uri.clone(), front_base),
                    up.uri_for(&whole, front_base),
                    "{target}"
                );
            }
        }
        assert_eq!(at_root.uri_for("?a=1", "/"), "/?a=1");
        let named = at_root.uri_for("//evil.example/x", "/");
        assert_eq!((named.host(), named.path()), (None, "//evil.example/x"));
    }

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_are_dropped() {
        let mut headers = Headers::new();
        for (name, value) in [
            ("Connection", "close, X-Private"),
            ("x-private", "1"),
            ("Transfer-Encoding", "chunked"),
            ("Authorization", "Bearer t"),
            ("Proxy-Connection", "keep-alive"),
            ("TE", "trailers"),
            ("Keep-Alive", "5"),
        ] {
            headers.push_read(
                Bytes::copy_from_slice(name.as_bytes()),
                HeaderValue::from_static(value),
            );
        }
        strip_hop_by_hop(&mut headers);
        let names: Vec<_> = headers.iter().map(|(n, _)| n).collect();
        assert_eq!(names, [&b"Authorization"[..]]);
        for name in [
            "upgrade",
            "Trailer",
            "PROXY-AUTHENTICATE",
            "proxy-authorization",
        ] {
            assert!(is_hop_by_hop(name.as_bytes()), "{name}");
        }
        for name in ["host", "tee", "connections", "content-length"] {
            assert!(!is_hop_by_hop(name.as_bytes()), "{name}");
        }
    }
}
