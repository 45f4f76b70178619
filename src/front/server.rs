//! The front's listener: each request through its stages, the way a reverse proxy
//! takes it. The caller verified, a gRPC call read at its edge (`grpc_calls`), then
//! by what it asks: the card (`card::serve`), a listing or a call about a task
//! (`tasks`), a body that may be a command or names a task (`classify`, then
//! `commands` or `tasks`), everything else forwarded (`forward`); what comes back about
//! a task the front joined is rewritten (`join`). Counted and traced here, once.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use bytes::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode};

use crate::front::a2a;
use crate::front::answer::{body_failed, version_not_supported};
use crate::front::answer::{mark, outcome, unauthenticated, with_request_id, Outcome};
use crate::front::callers::{Verified, Verifier};
use crate::front::card_serving::{card_answer, extended_card, has_card};
use crate::front::card_verify::CardVerifier;
use crate::front::classify::{inspect, may_name_a_task};
use crate::front::context::Context;
use crate::front::forward::forward;
use crate::front::grpc::{self, GrpcCall};
use crate::front::grpc_calls::{grpc_answer, grpc_call, GrpcRead};
use crate::front::handled::Handled;
use crate::front::join::{translate, Joiner};
use crate::front::limits::{fault_of, read_to_end};
use crate::front::operations::{
    activates_us, asks_a2a_json, echo_activation, http_json_method, is_http_json, jsonrpc_method,
    known_method, looked_at, speaks, Binding, A2A_JSON,
};
use crate::front::options::FrontOptions;
use crate::front::records::{Records, Scope};
use crate::front::tasks::{list_answer, rest_task_call};
use crate::front::upstream::identity_only;
use crate::http1::framing;
use crate::http1::head::{Answer, Parts, Request};
use crate::http1::rules::Refusal;
use crate::http1::serve::Handler;
use crate::http1::token::same_name;
use crate::metrics::{metrics, FrontLabels};
use crate::run::Runner;
use crate::telemetry::{CallSpan, KeyValue, SpanKind, Tracer, W3c};

/// The front: the sidecar in front of one A2A agent, as its proxy.
pub struct Front {
    ctx: Context,
}

impl Front {
    /// A front for `options`, running commands with `runner`.
    pub fn new(
        options: FrontOptions,
        runner: Arc<Runner>,
        records: Records,
        bound: SocketAddr,
        tracer: Option<Tracer>,
        verifiers: (Option<Arc<Verifier>>, Option<CardVerifier>),
    ) -> Self {
        Self {
            ctx: Context::new(options, runner, records, bound, tracer, verifiers),
        }
    }

    /// The largest request body the front reads.
    pub fn max_body_bytes(&self) -> usize {
        self.ctx.options.max_body_bytes
    }

    /// How long an answer may wait for its client to take any of it.
    pub fn send_timeout(&self) -> std::time::Duration {
        self.ctx.options.send_timeout
    }

    /// Most client connections held open at once.
    pub fn max_connections(&self) -> usize {
        self.ctx.options.max_connections
    }

    /// Where clients reach the front.
    pub fn public_url(&self) -> &url::Url {
        &self.ctx.public
    }

    /// Whether the front has a card to serve (for readiness): fetches the agent's card
    /// when there is none fresh.
    pub async fn has_card(&self) -> bool {
        has_card(&self.ctx).await
    }
}

impl Handler for Front {
    /// One request, counted by binding, method and result (the listener that calls it
    /// is the transport's, with the API listener's connection limits).
    fn handle(&self, request: Request) -> impl std::future::Future<Output = Answer> + Send {
        handle(&self.ctx, request)
    }
}

/// One request, counted by binding, method and result (the listener that calls it
/// is the transport's, with the API listener's connection limits).
pub(super) async fn handle(ctx: &Context, request: Request) -> Answer {
    // The URI shares the head's bytes: kept for after the request is handed on, not
    // copied.
    let uri = request.uri().clone();
    let path = uri.path();
    let method = request.method().clone();
    let activated = activates_us(request.headers());
    let http_json = is_http_json(&method, path);
    // Only HTTP+JSON answers take A2A's media type (the JSON-RPC hot path looks at no
    // header for it).
    let a2a_json = http_json && asks_a2a_json(request.headers());
    let span = server_span(ctx, &request);
    // The JSON-RPC method, when the body named one: written by `post`.
    let mut rpc = None;
    let routed = route(ctx, request, path, &method, &mut rpc);
    let mut answer = match &span {
        Some(span) => span.around(routed).await,
        None => routed.await,
    };
    // A gRPC call names its method in its path.
    let grpc_method = path
        .strip_prefix(grpc::SERVICE_PATH)
        .map(|called| known_method(called.as_bytes()));
    let binding = if grpc_method.is_some() {
        "grpc"
    } else if http_json {
        "http_json"
    } else if rpc.is_some() {
        "jsonrpc"
    } else {
        "other"
    };
    let named = grpc_method
        .or(rpc)
        .unwrap_or_else(|| http_json_method(&method, path));
    let result = if outcome(&answer) == Some(Outcome::UpstreamFailed) {
        "upstream_error"
    } else if outcome(&answer) == Some(Outcome::Answered) {
        "answered"
    } else {
        "passed"
    };
    metrics().front.count_request(FrontLabels {
        binding,
        method: named,
        result,
    });
    if let Some(span) = span {
        let status = answer.status();
        span.rename(named);
        span.set(KeyValue::new("a2a.front.binding", binding));
        span.set(KeyValue::new("a2a.front.result", result));
        span.set(KeyValue::new(
            "http.response.status_code",
            i64::from(status.as_u16()),
        ));
        let failed = result == "upstream_error" || status.is_server_error();
        span.end(failed.then_some(result));
    }
    if activated {
        echo_activation(answer.headers_mut());
    }
    if a2a_json && binding == "http_json" && result != "passed" {
        // The front's own HTTP+JSON answer, in the type the client asked in.
        let ours = answer.headers().get(header::CONTENT_TYPE)
            == Some(&HeaderValue::from_static("application/json"));
        if ours {
            answer
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(A2A_JSON));
        }
    }
    answer
}

/// With traces on, the server span of one request: a child of the caller's
/// `traceparent` (a new trace without one), named for the A2A method once known,
/// ended when the answer starts.
pub(super) fn server_span(ctx: &Context, request: &Request) -> Option<CallSpan> {
    let tracer = ctx.tracer.as_ref()?;
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
    let parent = W3c {
        traceparent: header("traceparent"),
        tracestate: header("tracestate"),
    };
    let attributes = vec![
        KeyValue::new("http.request.method", request.method().to_string()),
        KeyValue::new("url.path", request.uri().path().to_owned()),
    ];
    Some(tracer.span(SpanKind::Server, "front", parent, attributes))
}

/// Where a request goes. Every path but the plain forward is boxed: the plain one
/// is the hot one, and its future stays small (it is moved, and boxed by axum, at
/// every request). `rpc` gets the JSON-RPC method a POST's body named.
pub(super) async fn route(
    ctx: &Context,
    request: Request,
    path: &str,
    method: &Method,
    rpc: &mut Option<&'static str>,
) -> Answer {
    if method == Method::CONNECT {
        // The front is the agent's reverse proxy, never a tunnel to anywhere.
        let mut answer = Answer::new(Body::from("the front does not tunnel (CONNECT)"));
        *answer.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        answer.headers_mut().insert(
            header::ALLOW,
            HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE, OPTIONS, HEAD"),
        );
        mark(&mut answer, Outcome::Answered);
        return answer;
    }
    // Refused as nginx refuses them: a request whose authority is missing or said twice,
    // whose target is of no form the front serves, or whose body is framed more than
    // one way (a smuggling primitive) is malformed, and one about the server as a whole
    // (`OPTIONS *`) would reach the agent as a request for a path `/*`. The connection
    // closes after the answer: what follows such a head cannot be trusted.
    let refusal = request.refusal().or_else(|| {
        (path == "*").then_some(Refusal {
            status: StatusCode::BAD_REQUEST,
            why: "the front does not pass on a request for the server as a whole (OPTIONS *)",
        })
    });
    if let Some(refusal) = refusal {
        return refused(refusal);
    }
    let is_card = method == Method::GET
        && (path.ends_with("/.well-known/agent-card.json")
            || path.ends_with("/.well-known/agent.json"));
    let grpc = grpc::is_grpc(request.headers().get(header::CONTENT_TYPE));
    let mut request = request;
    if let (Some(callers), false) = (&ctx.callers, is_card) {
        // The card is public; every other request is the caller's, and a token that
        // does not verify never reaches the agent.
        match Box::pin(callers.verify(request.headers())).await {
            Ok(Some(verified)) => {
                request.extensions_mut().insert(verified);
            }
            Ok(None) => {}
            Err(refused) if grpc => {
                let mut answer = grpc::refused(&refused);
                mark(&mut answer, Outcome::Answered);
                return answer;
            }
            Err(refused) => return unauthenticated(method, path, &refused),
        }
    }
    // A version the front does not serve is refused, not guessed at (the card is any
    // version's).
    if !is_card {
        if let Err(named) = speaks(request.headers(), request.uri().query()) {
            return Box::pin(version_not_supported(ctx, request, grpc, &named)).await;
        }
    }
    if grpc {
        return match Box::pin(grpc_call(ctx, request)).await {
            GrpcRead::Answered(answer) => answer,
            GrpcRead::Dispatch {
                request,
                path,
                http_method,
                method,
            } => {
                let answer =
                    Box::pin(dispatch(ctx, request, &path, &http_method, false, rpc)).await;
                grpc_answer(method, answer).await
            }
        };
    }
    dispatch(ctx, request, path, method, is_card, rpc).await
}

/// The answer to a request refused on its head: its status, a sentence, and the
/// connection closed after it.
fn refused(refusal: Refusal) -> Answer {
    let mut answer = Answer::new(Body::from(refusal.why));
    *answer.status_mut() = refusal.status;
    answer
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    mark(&mut answer, Outcome::Answered);
    answer
}

/// Where an HTTP request goes (a gRPC call the front reads comes here too, as the
/// HTTP+JSON request it amounts to).
pub(super) async fn dispatch(
    ctx: &Context,
    request: Request,
    path: &str,
    method: &Method,
    is_card: bool,
    rpc: &mut Option<&'static str>,
) -> Answer {
    let answer = if is_card {
        Box::pin(card_answer(ctx, request.headers())).await
    } else if method == Method::GET && path.ends_with("/extendedAgentCard") {
        read_whole(ctx, request, Binding::HttpJson, Read::Card).await
    } else if method == Method::GET && path.ends_with("/tasks") {
        let asked = a2a::ListAsked::from_query(request.uri().query());
        let tenant = ctx.tenant(false, path, b"");
        let verified = request.extensions().get::<Verified>();
        let scope = ctx.scope(request.headers(), verified, tenant);
        let read = Read::List(&asked, &scope);
        read_whole(ctx, request, Binding::HttpJson, read).await
    } else if path.contains("/tasks/")
        && (method == Method::GET
            || (method == Method::POST
                && (path.ends_with(":cancel") || path.ends_with(":subscribe"))))
    {
        Box::pin(rest_task_call(ctx, request)).await
    } else if method == Method::POST {
        post(ctx, request, rpc).await
    } else {
        Box::pin(forward(ctx, request, None)).await
    };
    answer
}

/// What the front does with an answer it reads: a listing's, an extended card's, or
/// one about a task it joined.
pub(super) enum Read<'a> {
    /// A listing: the front's tasks added, in the caller's scope.
    List(&'a a2a::ListAsked, &'a Scope),
    /// The extended card, merged.
    Card,
    /// About a task the front joined: rewritten to the front's ids.
    Joined(Joiner, &'a Scope),
}

/// [`forward_and_read`], boxed: the plain forward's future stays small without its
/// states.
fn read_whole<'a>(
    ctx: &'a Context,
    request: Request,
    binding: Binding,
    read: Read<'a>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + 'a>> {
    Box::pin(forward_and_read(ctx, request, binding, read))
}

/// A request forwarded whose answer the front reads and rewrites (so it asks for the
/// answer unencoded).
async fn forward_and_read(
    ctx: &Context,
    mut request: Request,
    binding: Binding,
    read: Read<'_>,
) -> Answer {
    identity_only(request.headers_mut());
    let answer = forward(ctx, request, Some(binding)).await;
    match read {
        Read::List(asked, scope) => list_answer(ctx, answer, binding, asked, scope).await,
        Read::Card => extended_card(ctx, answer, binding).await,
        Read::Joined(joiner, scope) => translate(ctx, answer, joiner, scope).await,
    }
}

/// A POST: read (within the limit), looked at only if it may be a command or a
/// call about a task the front made, and otherwise forwarded as it came. `rpc` gets
/// the JSON-RPC method its body names (for the metrics).
pub(super) async fn post(
    ctx: &Context,
    request: Request,
    rpc: &mut Option<&'static str>,
) -> Answer {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    let binding = if parts.extensions.get::<GrpcCall>().is_some() {
        Binding::Grpc
    } else if path.ends_with("/message:send") || path.ends_with("/message:stream") {
        Binding::HttpJson
    } else {
        Binding::JsonRpc
    };
    let limited = http_body_util::Limited::new(body, ctx.options.max_body_bytes);
    let bytes = match read_to_end(limited).await {
        Ok(bytes) => bytes,
        Err(error) => return body_failed(ctx, binding, fault_of(&*error), false),
    };
    // The JSON-RPC method, read once: it says what is looked at, and labels metrics.
    let rpc_method = (binding == Binding::JsonRpc).then(|| jsonrpc_method(&bytes));
    *rpc = rpc_method;
    // Looked at (small bodies only): what may be a command, what names a task the
    // front made (their ids share a prefix) or a message on any task (whose data
    // the front may keep), and the calls whose answers the front writes into.
    let look = a2a::may_hold_command(&bytes, a2a::PRECHECK_MAX_BYTES)
        || (bytes.len() <= a2a::PRECHECK_MAX_BYTES
            && (rpc_method.is_some_and(looked_at) || may_name_a_task(&bytes)));
    // Kept to name the request's JSON-RPC id in an error, should the agent fail.
    let sent = bytes.clone();
    let (handled, scope) = if look {
        let verified = parts.extensions.get::<Verified>();
        let tenant = ctx.tenant(binding.is_rpc(), path, &bytes);
        let scope = ctx.scope(&parts.headers, verified, tenant);
        let handled = Box::pin(inspect(
            ctx,
            binding,
            &parts.uri,
            &parts.headers,
            verified,
            &scope,
            &bytes,
        ))
        .await;
        (handled, scope)
    } else {
        (Handled::Forward(bytes), Scope::SHARED)
    };
    // The body was read whole (and may be rewritten): it goes with its length, which
    // it mostly came with already.
    let with_length = |mut parts: Parts, body: Bytes| {
        // One pass over the length lines and any coding. One length line only: HTTP/2
        // (h2) lets through repeated lines that agree, which some agents refuse.
        let (mut lengths, mut declared, mut coded) = (0, None, false);
        for (name, value) in parts.headers.iter() {
            if same_name(name, b"content-length") {
                lengths += 1;
                declared = framing::parse_length(value.as_bytes());
            } else if same_name(name, b"transfer-encoding") {
                coded = true;
            }
        }
        if lengths != 1 || declared != Some(body.len()) || coded {
            parts.headers.remove(header::TRANSFER_ENCODING);
            parts
                .headers
                .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
        }
        Request::from_parts(parts, Body::from(body))
    };
    let mut answer = match handled {
        Handled::Answer(answer) => answer,
        Handled::Forward(body) => {
            let request = with_length(parts, body);
            forward(ctx, request, Some(binding)).await
        }
        Handled::ForwardList(body, asked) => {
            let read = Read::List(&asked, &scope);
            read_whole(ctx, with_length(parts, body), binding, read).await
        }
        Handled::ForwardCard(body) => {
            read_whole(ctx, with_length(parts, body), binding, Read::Card).await
        }
        Handled::ForwardJoined { body, joiner } => {
            let read = Read::Joined(joiner, &scope);
            read_whole(ctx, with_length(parts, body), binding, read).await
        }
    };
    if rpc_method.is_some() && outcome(&answer) == Some(Outcome::UpstreamFailed) {
        answer = Box::pin(with_request_id(answer, &sent)).await;
    }
    answer
}
