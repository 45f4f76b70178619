//! The front's listener: A2A clients' requests, answered by the front when they are
//! commands (or ask for the card, or for a task the front made), passed to the agent
//! as they came otherwise.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;
use http_body_util::BodyExt as _;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::bodies::Trace;
use crate::error::Error;
use crate::front::a2a;
use crate::front::answer::{
    error_answer, json_answer, records_failed, stream_answer, unauthenticated, upstream_failed,
    with_request_id, FrontAnswered, UpstreamFailed,
};
use crate::front::callers::{parse_role, Verified, Verifier};
use crate::front::card::{self, CardCache};
use crate::front::grpc::{self, GrpcCall};
use crate::front::join::{
    data_of, event_end, follow_up_body, frames_body, join, prompt_body, set_data, task_context,
    Joiner,
};
use crate::front::limits::{self, Capped, Timed};
use crate::front::operations::{
    activates_us, asks_a2a_json, echo_activation, http_json_method, is_http_json, jsonrpc_method,
    speaks_1_0, Binding, RpcMethod, TaskCall, A2A_JSON, LOOKED_AT, METHODS,
};
use crate::front::options::FrontOptions;
use crate::front::records::{Kept, Own, Records, Scope};
use crate::front::upstream::{self as agent, Upstream, UpstreamError};
use crate::front::v03;
use crate::metrics::{metrics, FrontLabels};
use crate::pb::{self, ParticipantRole, SubState, TaskState};
use crate::rules::event::JsonForm;
use crate::rules::execute::reply_event;
use crate::rules::task::Task;
use crate::run::{now, Asked, CompleteAsked, Ran, Runner};
use crate::telemetry::{CallSpan, KeyValue, SpanKind, Tracer, W3c};

/// The front: its settings, the agent behind it, and what it keeps.
pub struct Front {
    pub(super) options: FrontOptions,
    runner: Arc<Runner>,
    pub(super) upstream: Upstream,
    /// Where clients reach the front.
    pub(super) public: url::Url,
    pub(super) card: Mutex<CardCache>,
    records: Arc<Records>,
    /// The merged card last served (its ETag) and when it changed to that.
    card_served: std::sync::Mutex<Option<(String, std::time::SystemTime)>>,
    /// Logged once: a signed upstream card is served unsigned.
    signature_logged: AtomicBool,
    /// Draws the ids of the tasks the front makes.
    random: ring::rand::SystemRandom,
    /// With traces on: a server span per request, a client span per upstream call.
    tracer: Option<Tracer>,
    /// With a JWT key set configured: verifies callers' tokens.
    callers: Option<Arc<Verifier>>,
}

/// What every id of a task the front makes begins with, whichever replica made it:
/// a body without it (and without `GetTask`) names no task the front knows.
const TASK_ID_PREFIX: &str = "front-";

/// A request the front answers itself, or hands on.
enum Handled {
    /// The answer.
    Answer(Response<Body>),
    /// Forward the request with this body (the same bytes, or a prompt command's
    /// expansion).
    Forward(Bytes),
    /// Forward this body (a request for the extended card); the card in the answer is
    /// merged.
    ForwardCard(Bytes),
    /// Forward this body (`ListTasks`); the tasks in the answer are the front's, and
    /// the first page lists the tasks only the front holds too.
    ForwardList(Bytes, a2a::ListAsked),
    /// Forward this body, about the front's task `front`: the agent's id for it
    /// (`upstream`, or the one its answer gives) is written back as `front` in the
    /// answer, and the agent's context as the front's, so the client goes on seeing
    /// one task in one context.
    ForwardJoined { body: Bytes, joiner: Joiner },
}

impl Front {
    /// A front for `options`, running commands with `runner`.
    pub fn new(
        options: FrontOptions,
        runner: Arc<Runner>,
        records: Records,
        bound: SocketAddr,
        tracer: Option<Tracer>,
        callers: Option<Arc<Verifier>>,
    ) -> Self {
        let public = options.public_url.clone().unwrap_or_else(|| {
            let host = if bound.ip().is_unspecified() {
                "127.0.0.1".to_owned()
            } else {
                bound.ip().to_string()
            };
            url::Url::parse(&format!("http://{host}:{}/", bound.port())).expect("a URL")
        });
        let upstream =
            Upstream::new(options.upstream.clone(), options.timeout).traced(tracer.clone());
        Self {
            options,
            runner,
            upstream,
            public,
            card: Mutex::new(CardCache::default()),
            records: Arc::new(records),
            card_served: std::sync::Mutex::new(None),
            signature_logged: AtomicBool::new(false),
            random: ring::rand::SystemRandom::new(),
            tracer,
            callers,
        }
    }

    /// Where clients reach the front.
    pub fn public_url(&self) -> &url::Url {
        &self.public
    }

    /// Whether the front has a card to serve (for readiness): fetches the agent's card
    /// when there is none fresh.
    pub async fn has_card(&self) -> bool {
        let mut cache = self.card.lock().await;
        if cache.fresh().is_none() {
            self.refresh_card(&mut cache, &HeaderMap::new()).await;
        }
        cache.last().is_some()
    }

    /// One request, counted by binding, method and result (the listener that calls it
    /// is the transport's, with the API listener's connection limits).
    pub async fn handle(&self, request: Request<Body>) -> Response<Body> {
        let path = request.uri().path().to_owned();
        let method = request.method().clone();
        let activated = activates_us(request.headers());
        let a2a_json = asks_a2a_json(request.headers());
        let span = self.server_span(&request);
        let routed = self.route(request, &path, &method);
        let mut answer = match &span {
            Some(span) => span.around(routed).await,
            None => routed.await,
        };
        // A gRPC call names its method in its path.
        let grpc_method = path.strip_prefix(grpc::SERVICE_PATH).map(|called| {
            METHODS
                .iter()
                .find(|known| **known == called)
                .copied()
                .unwrap_or("other")
        });
        let binding = if grpc_method.is_some() {
            "grpc"
        } else if is_http_json(&method, &path) {
            "http_json"
        } else if answer.extensions().get::<RpcMethod>().is_some() {
            "jsonrpc"
        } else {
            "other"
        };
        let named = grpc_method
            .or_else(|| answer.extensions().get::<RpcMethod>().map(|m| m.0))
            .unwrap_or_else(|| http_json_method(&method, &path));
        let result = if answer.extensions().get::<UpstreamFailed>().is_some() {
            "upstream_error"
        } else if answer.extensions().get::<FrontAnswered>().is_some() {
            "answered"
        } else {
            "passed"
        };
        metrics()
            .front
            .requests
            .get_or_create(&FrontLabels {
                binding,
                method: named,
                result,
            })
            .inc();
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
    fn server_span(&self, request: &Request<Body>) -> Option<CallSpan> {
        let tracer = self.tracer.as_ref()?;
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
    /// every request).
    async fn route(&self, request: Request<Body>, path: &str, method: &Method) -> Response<Body> {
        let path = path.to_owned();
        let method = method.clone();
        if method == Method::CONNECT {
            // The front is the agent's reverse proxy, never a tunnel to anywhere.
            let mut answer = Response::new(Body::from("the front does not tunnel (CONNECT)"));
            *answer.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            answer.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE, OPTIONS, HEAD"),
            );
            answer.extensions_mut().insert(FrontAnswered);
            return answer;
        }
        let is_card = method == Method::GET
            && (path.ends_with("/.well-known/agent-card.json")
                || path.ends_with("/.well-known/agent.json"));
        let grpc = grpc::is_grpc(request.headers());
        let mut request = request;
        if let (Some(callers), false) = (&self.callers, is_card) {
            // The card is public; every other request is the caller's, and a token that
            // does not verify never reaches the agent.
            match Box::pin(callers.verify(request.headers())).await {
                Ok(Some(verified)) => {
                    request.extensions_mut().insert(verified);
                }
                Ok(None) => {}
                Err(refused) if grpc => {
                    let mut answer = grpc::refused(&refused);
                    answer.extensions_mut().insert(FrontAnswered);
                    return answer;
                }
                Err(refused) => return unauthenticated(&method, &path, &refused),
            }
        }
        if grpc {
            return Box::pin(self.grpc_call(request)).await;
        }
        self.dispatch(request, &path, &method, is_card).await
    }

    /// Where an HTTP request goes (a gRPC call the front reads comes here too, as the
    /// HTTP+JSON request it amounts to).
    pub(super) async fn dispatch(
        &self,
        request: Request<Body>,
        path: &str,
        method: &Method,
        is_card: bool,
    ) -> Response<Body> {
        let path = path.to_owned();
        let method = method.clone();
        let answer = if is_card {
            Box::pin(self.card_answer(request.headers())).await
        } else if method == Method::GET && path.ends_with("/extendedAgentCard") {
            let mut request = request;
            identity_only(request.headers_mut());
            let answer = self.forward(request, Some(Binding::HttpJson)).await;
            Box::pin(self.extended_card(answer, Binding::HttpJson)).await
        } else if method == Method::GET && path.ends_with("/tasks") {
            let asked = a2a::ListAsked::from_query(request.uri().query());
            let scope = self.scope(request.headers(), request.extensions().get::<Verified>());
            let mut request = request;
            identity_only(request.headers_mut());
            let answer = self.forward(request, Some(Binding::HttpJson)).await;
            Box::pin(self.list_answer(answer, Binding::HttpJson, &asked, &scope)).await
        } else if path.contains("/tasks/")
            && (method == Method::GET
                || (method == Method::POST
                    && (path.ends_with(":cancel") || path.ends_with(":subscribe"))))
        {
            Box::pin(self.rest_task_call(request)).await
        } else if method == Method::POST {
            self.post(request).await
        } else {
            self.forward(request, None).await
        };
        answer
    }

    /// A POST: read (within the limit), looked at only if it may be a command or a
    /// call about a task the front made, and otherwise forwarded as it came.
    async fn post(&self, request: Request<Body>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path().to_owned();
        let binding = if parts.extensions.get::<GrpcCall>().is_some() {
            Binding::Grpc
        } else if path.ends_with("/message:send") || path.ends_with("/message:stream") {
            Binding::HttpJson
        } else {
            Binding::JsonRpc
        };
        let limited = http_body_util::Limited::new(body, self.options.max_body_bytes);
        let bytes = match limited.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => return self.too_large(binding),
        };
        // The JSON-RPC method, read once: it says what is looked at, and labels metrics.
        let rpc_method = (binding == Binding::JsonRpc).then(|| jsonrpc_method(&bytes));
        // Looked at (small bodies only): what may be a command, what names a task the
        // front made (their ids share a prefix) or a message on any task (whose data
        // the front may keep), and the calls whose answers the front writes into.
        let look = a2a::may_hold_command(&bytes, a2a::PRECHECK_MAX_BYTES)
            || (bytes.len() <= a2a::PRECHECK_MAX_BYTES
                && (rpc_method.is_some_and(|m| LOOKED_AT.contains(&m))
                    || contains(&bytes, TASK_ID_PREFIX.as_bytes())
                    || contains(&bytes, b"\"taskId\"")));
        // Kept to name the request's JSON-RPC id in an error, should the agent fail.
        let sent = bytes.clone();
        let (handled, scope) = if look {
            let verified = parts.extensions.get::<Verified>();
            let scope = self.scope(&parts.headers, verified);
            let handled = Box::pin(self.inspect(
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
            (Handled::Forward(bytes), Scope::Shared)
        };
        // The body was read whole (and may be rewritten): it goes with its length.
        let with_length = |mut parts: hyper::http::request::Parts, body: Bytes| {
            parts.headers.remove(header::TRANSFER_ENCODING);
            parts
                .headers
                .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
            Request::from_parts(parts, Body::from(body))
        };
        let mut answer = match handled {
            Handled::Answer(answer) => answer,
            Handled::Forward(body) => {
                let request = with_length(parts, body);
                self.forward(request, Some(binding)).await
            }
            Handled::ForwardList(body, asked) => {
                let mut request = with_length(parts, body);
                identity_only(request.headers_mut());
                let answer = self.forward(request, Some(binding)).await;
                Box::pin(self.list_answer(answer, binding, &asked, &scope)).await
            }
            Handled::ForwardCard(body) => {
                let mut request = with_length(parts, body);
                identity_only(request.headers_mut());
                let answer = self.forward(request, Some(binding)).await;
                Box::pin(self.extended_card(answer, binding)).await
            }
            Handled::ForwardJoined { body, joiner } => {
                // The answer is rewritten, so it must come readable.
                let mut request = with_length(parts, body);
                identity_only(request.headers_mut());
                let answer = self.forward(request, Some(binding)).await;
                Box::pin(self.translate(answer, joiner, &scope)).await
            }
        };
        if rpc_method.is_some() && answer.extensions().get::<UpstreamFailed>().is_some() {
            answer = Box::pin(with_request_id(answer, &sent)).await;
        }
        if let Some(method) = rpc_method {
            answer.extensions_mut().insert(RpcMethod(method));
        }
        answer
    }

    /// The agent's answer about the front's task `front` with the agent's id for it
    /// written as `front` (learning that id from the answer when it is not known yet),
    /// and the task data the front keeps in the task. A stream is rewritten event by
    /// event, each passed on as it arrives.
    async fn translate(
        &self,
        answer: Response<Body>,
        mut joiner: Joiner,
        scope: &Scope,
    ) -> Response<Body> {
        let (mut parts, body) = answer.into_parts();
        let streaming = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        parts.headers.remove(header::CONTENT_LENGTH);
        // The task data the front keeps, shown in the task it passes back: a task it
        // made, or the agent's, whose data a command changed.
        joiner.data = match self.records.get(&joiner.front, scope).await {
            Ok(Some(Kept::Task(own))) => Some(data_of(&own.task)),
            Ok(Some(Kept::Data(data))) => Some(data),
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(error = %error, task = %joiner.front, "the front's records could not be read; the answer goes without the task data");
                None
            }
        };
        if let Some(coding) = agent::encoding(&parts.headers) {
            // Asked for identity, the agent encoded its answer all the same: it passes
            // as it came, unread (its ids the agent's).
            tracing::warn!(coding, task = %joiner.front, "the agent encoded an answer the front asked for unencoded; it passes unread");
            return Response::from_parts(parts, body);
        }
        let records = Arc::clone(&self.records);
        let scope = scope.clone();
        if !streaming {
            let bytes = match self.read_whole(body).await {
                Ok(bytes) => bytes,
                Err(error) => return upstream_failed(Binding::HttpJson, &Value::Null, &error),
            };
            let body = match serde_json::from_slice::<Value>(&bytes) {
                Ok(mut value) => {
                    if let Some(found) = joiner.rewrite(&mut value) {
                        join(&records, &joiner.front, &found, &scope).await;
                    }
                    Bytes::from(value.to_string())
                }
                Err(_) => bytes,
            };
            return Response::from_parts(parts, Body::from(body));
        }
        let body = Timed::new(body, self.options.stream_idle);
        let (events, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
        tokio::spawn(async move {
            let mut body = body;
            let mut pending: Vec<u8> = Vec::new();
            while let Some(frame) = body.frame().await {
                let data = match frame.map(Frame::into_data) {
                    Ok(Ok(data)) => data,
                    // Trailers (a gRPC agent's status) end the stream as they came.
                    Ok(Err(trailers)) => {
                        if !pending.is_empty() {
                            let rest = Bytes::from(std::mem::take(&mut pending));
                            let _ = events.send(Ok(Frame::data(rest))).await;
                        }
                        let _ = events.send(Ok(trailers)).await;
                        return;
                    }
                    Err(e) => {
                        let _ = events.send(Err(std::io::Error::other(e.to_string()))).await;
                        return;
                    }
                };
                pending.extend_from_slice(&data);
                while let Some(end) = event_end(&pending) {
                    let event: Vec<u8> = pending.drain(..end).collect();
                    let (rewritten, found) = joiner.rewrite_event(&event);
                    if let Some(found) = found {
                        join(&records, &joiner.front, &found, &scope).await;
                    }
                    if events.send(Ok(Frame::data(rewritten))).await.is_err() {
                        return;
                    }
                }
            }
            if !pending.is_empty() {
                let _ = events.send(Ok(Frame::data(Bytes::from(pending)))).await;
            }
        });
        Response::from_parts(parts, frames_body(rx))
    }

    /// A body that may be a command (or a call about a task the front made): parsed,
    /// and answered if it is one.
    async fn inspect(
        &self,
        binding: Binding,
        uri: &hyper::Uri,
        headers: &HeaderMap,
        verified: Option<&Verified>,
        scope: &Scope,
        bytes: &Bytes,
    ) -> Handled {
        let (path, query) = (uri.path(), uri.query());
        let Ok(body) = serde_json::from_slice::<Value>(bytes) else {
            // The agent answers what it cannot parse, as it would without the front.
            return Handled::Forward(bytes.clone());
        };
        let (id, method, params) = match binding {
            Binding::JsonRpc | Binding::JsonRpc03 => (
                body.get("id").cloned().unwrap_or(Value::Null),
                body.get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                body.get("params").cloned().unwrap_or(Value::Null),
            ),
            Binding::HttpJson | Binding::Grpc => {
                let method = if path.ends_with("/message:stream") {
                    "SendStreamingMessage"
                } else {
                    "SendMessage"
                };
                (Value::Null, method, body.clone())
            }
        };
        // The version the client asked in: 0.3's method names, or 1.0's. The front
        // answers in it only if the agent speaks it too; otherwise the request goes to
        // the agent as it came, which answers it as it would without the front.
        let (binding, method) = match v03::method_v10(method) {
            Some(v10) if binding == Binding::JsonRpc => {
                if !self.agent_speaks().await.v03 {
                    return Handled::Forward(bytes.clone());
                }
                (Binding::JsonRpc03, v10)
            }
            // Completion is the kits' method, in no A2A version.
            _ if method != a2a::COMPLETE_METHOD && !self.agent_speaks().await.v10 => {
                return Handled::Forward(bytes.clone())
            }
            _ => (binding, method),
        };
        match method {
            "SendMessage" | "SendStreamingMessage" => {
                let stream = method == "SendStreamingMessage";
                let Some(message) = params.get("message") else {
                    return Handled::Forward(bytes.clone());
                };
                // The front reads messages in 1.0's JSON.
                let read;
                let message = if binding == Binding::JsonRpc03 {
                    read = v03::message_v10(message);
                    &read
                } else {
                    message
                };
                if a2a::command_candidate(message).is_none() {
                    return self.plain(binding, &id, &body, message, scope, bytes).await;
                }
                // A 1.0 method without `A2A-Version` (which means 0.3) goes to the agent
                // as it came.
                if matches!(binding, Binding::JsonRpc | Binding::HttpJson)
                    && !speaks_1_0(headers, query)
                {
                    return Handled::Forward(bytes.clone());
                }
                let call = CommandCall {
                    binding,
                    path,
                    id: &id,
                    stream,
                    headers,
                    verified,
                    scope,
                };
                self.command(&call, &body, message, bytes).await
            }
            "GetTask" | "CancelTask" | "SubscribeToTask" => {
                let call = match method {
                    "GetTask" => TaskCall::Get,
                    "CancelTask" => TaskCall::Cancel,
                    _ => TaskCall::Subscribe,
                };
                let task_id = params.get("id").and_then(Value::as_str).unwrap_or_default();
                let kept = match self.records.get(task_id, scope).await {
                    Ok(kept) => kept,
                    Err(error) => return Handled::Answer(records_failed(binding, &id, &error)),
                };
                match kept {
                    Some(Kept::Task(Own {
                        task,
                        upstream: None,
                    })) => {
                        Handled::Answer(self.own_task_call(binding, &id, call, task, scope).await)
                    }
                    // Joined: the agent has the task now, under its own id.
                    Some(Kept::Task(
                        own @ Own {
                            upstream: Some(_), ..
                        },
                    )) => {
                        let joiner = Joiner::of_own(task_id, &own);
                        let mut body = body.clone();
                        body["params"]["id"] = json!(joiner.upstream_id());
                        Handled::ForwardJoined {
                            body: Bytes::from(body.to_string()),
                            joiner,
                        }
                    }
                    // The agent's task, whose data a command changed: shown in it.
                    Some(Kept::Data(_)) => Handled::ForwardJoined {
                        body: bytes.clone(),
                        joiner: Joiner::of_agents(task_id),
                    },
                    None => Handled::Forward(bytes.clone()),
                }
            }
            "GetExtendedAgentCard" => Handled::ForwardCard(bytes.clone()),
            a2a::COMPLETE_METHOD if binding == Binding::JsonRpc => Handled::Answer(
                self.complete(path, &id, headers, verified, scope, &params)
                    .await,
            ),
            "ListTasks" => {
                Handled::ForwardList(bytes.clone(), a2a::ListAsked::from_params(&params))
            }
            _ => Handled::Forward(bytes.clone()),
        }
    }

    /// A message that is not a command: as it came, unless it is on a task the front
    /// made, which the agent knows by its own id (or not yet: then the message starts
    /// the agent's task). That message is the one the task waited for: the wait ends.
    async fn plain(
        &self,
        binding: Binding,
        id: &Value,
        body: &Value,
        message: &Value,
        scope: &Scope,
        bytes: &Bytes,
    ) -> Handled {
        let task_id = message
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if task_id.is_empty() {
            return Handled::Forward(bytes.clone());
        }
        let mut own = match self.records.get(task_id, scope).await {
            Ok(Some(Kept::Task(own))) => own,
            // The agent's task, whose data a command changed: the message carries the
            // settings chosen, and the answer shows the data.
            Ok(Some(Kept::Data(data))) => {
                let joiner = Joiner::of_agents(task_id);
                let body = if data.get("settings").is_some() {
                    follow_up_body(binding, body, &joiner, &data)
                } else {
                    bytes.clone()
                };
                return Handled::ForwardJoined { body, joiner };
            }
            Ok(None) => return Handled::Forward(bytes.clone()),
            Err(error) => return Handled::Answer(records_failed(binding, id, &error)),
        };
        let data = data_of(&own.task);
        if let Some(mut ended) = data.as_object().cloned() {
            if ended.remove("subState").is_some() {
                set_data(&mut own.task, Value::Object(ended));
                if let Err(error) = self.records.put_task(&own, scope).await {
                    return Handled::Answer(records_failed(binding, id, &error));
                }
            }
        }
        let joiner = Joiner::of_own(task_id, &own);
        Handled::ForwardJoined {
            body: follow_up_body(binding, body, &joiner, &data),
            joiner,
        }
    }

    /// `GET .../tasks/{id}`, `POST .../tasks/{id}:cancel`, `GET|POST
    /// .../tasks/{id}:subscribe`: about a task the front made, answered here, or, once
    /// the agent holds it, asked of the agent under its id and answered under the
    /// front's; about any other, passed to the agent as it came.
    async fn rest_task_call(&self, request: Request<Body>) -> Response<Body> {
        let path = request.uri().path().to_owned();
        let Some((base, last)) = path.rsplit_once("/tasks/") else {
            return self.forward(request, None).await;
        };
        let (id, call, suffix) = if let Some(id) = last.strip_suffix(":cancel") {
            (id, TaskCall::Cancel, ":cancel")
        } else if let Some(id) = last.strip_suffix(":subscribe") {
            (id, TaskCall::Subscribe, ":subscribe")
        } else {
            (last, TaskCall::Get, "")
        };
        // Push-notification configs and the like go to the agent.
        if id.is_empty() || id.contains('/') {
            return self.forward(request, None).await;
        }
        let scope = self.scope(request.headers(), request.extensions().get::<Verified>());
        let kept = match self.records.get(id, &scope).await {
            Ok(kept) => kept,
            Err(error) => return records_failed(Binding::HttpJson, &Value::Null, &error),
        };
        let mut request = request;
        match kept {
            None => self.forward(request, None).await,
            Some(Kept::Data(_)) => {
                identity_only(request.headers_mut());
                let answer = self.forward(request, Some(Binding::HttpJson)).await;
                self.translate(answer, Joiner::of_agents(id), &scope).await
            }
            Some(Kept::Task(Own {
                task,
                upstream: None,
            })) => {
                self.own_task_call(Binding::HttpJson, &Value::Null, call, task, &scope)
                    .await
            }
            Some(Kept::Task(own)) => {
                let joiner = Joiner::of_own(id, &own);
                identity_only(request.headers_mut());
                let (mut parts, body) = request.into_parts();
                let query = parts
                    .uri
                    .query()
                    .map(|q| format!("?{q}"))
                    .unwrap_or_default();
                let asked = format!(
                    "{base}/tasks/{}{suffix}{query}",
                    a2a::urlencode(joiner.upstream_id())
                );
                parts.uri = asked.parse().unwrap_or(parts.uri);
                let answer = self
                    .forward(Request::from_parts(parts, body), Some(Binding::HttpJson))
                    .await;
                self.translate(answer, joiner, &scope).await
            }
        }
    }

    /// A call about a task the front made that no message has taken to the agent yet:
    /// it waits for its next message, so a subscription sees the task and ends (A2A
    /// ends a stream at an interrupted state), and a cancel ends it here.
    async fn own_task_call(
        &self,
        binding: Binding,
        id: &Value,
        call: TaskCall,
        task: Value,
        scope: &Scope,
    ) -> Response<Body> {
        let mut task = task;
        let answer = |task: Value| match binding {
            Binding::JsonRpc => json_answer(StatusCode::OK, &a2a::rpc_result(id, task)),
            Binding::JsonRpc03 => {
                json_answer(StatusCode::OK, &a2a::rpc_result(id, v03::task_v03(&task)))
            }
            Binding::HttpJson | Binding::Grpc => json_answer(StatusCode::OK, &task),
        };
        match call {
            TaskCall::Get => answer(task),
            TaskCall::Cancel => {
                let at = now().to_string();
                if !a2a::cancel(&mut task, &at) {
                    return error_answer(
                        binding,
                        id,
                        StatusCode::CONFLICT,
                        a2a::TASK_NOT_CANCELABLE,
                        "the task has already ended and cannot be canceled",
                    );
                }
                let own = Own {
                    task,
                    upstream: None,
                };
                if let Err(error) = self.records.put_task(&own, scope).await {
                    return records_failed(binding, id, &error);
                }
                answer(own.task)
            }
            TaskCall::Subscribe if a2a::is_terminal(&task) => error_answer(
                binding,
                id,
                StatusCode::BAD_REQUEST,
                a2a::UNSUPPORTED_OPERATION,
                "the task has ended: there is nothing to subscribe to",
            ),
            TaskCall::Subscribe => stream_answer(binding, id, &[json!({"task": task})]),
        }
    }

    /// A message whose one text part may be a command: run, and answered if it is one.
    async fn command(
        &self,
        call: &CommandCall<'_>,
        body: &Value,
        message_json: &Value,
        bytes: &Bytes,
    ) -> Handled {
        let CommandCall {
            binding,
            path,
            id,
            stream,
            headers,
            verified,
            scope,
        } = *call;
        let message = a2a::message_from_json(message_json);
        // The task: the front's own, the agent's (asked with the caller's credentials),
        // or none yet (the front makes one if this is a command).
        let kept = if message.task_id.is_empty() {
            None
        } else {
            match self.records.get(&message.task_id, scope).await {
                Ok(kept) => kept,
                Err(error) => return Handled::Answer(records_failed(binding, id, &error)),
            }
        };
        let (own, kept_data) = match kept {
            Some(Kept::Task(own)) => (Some(own), None),
            Some(Kept::Data(data)) => (None, Some(data)),
            None => (None, None),
        };
        let joined = own.as_ref().and_then(|own| own.upstream.clone());
        let task_json = if message.task_id.is_empty() {
            None
        } else {
            let looked = self
                .task_as_seen(
                    binding,
                    path,
                    id,
                    headers,
                    &message.task_id,
                    own.clone(),
                    kept_data,
                )
                .await;
            match looked {
                Ok(task) => Some(task),
                // The agent answers for its own tasks (not found, not allowed).
                Err(Some(answer)) => return Handled::Answer(answer),
                Err(None) => {
                    return self.not_run(
                        binding,
                        id,
                        &message,
                        bytes,
                        "the agent's answer about the task could not be read",
                    )
                }
            }
        };
        let snapshot = task_json.as_ref().map(a2a::snapshot_from_task);
        let new_task = snapshot.is_none();
        let new_id = self.new_id();
        let context_id = if message.context_id.is_empty() {
            format!("ctx-{new_id}")
        } else {
            message.context_id.clone()
        };
        let snapshot = snapshot.unwrap_or_else(|| pb::TaskSnapshot {
            id: new_id.clone(),
            context_id: context_id.clone(),
            // The contract's lifecycle: a command as a task's first message parks it,
            // waiting for the next message.
            state: TaskState::InputRequired.into(),
            sub_state: SubState::AwaitingNextMessage.into(),
            settings: Some(pb::TaskSettings::default()),
            ..Default::default()
        });
        let Ok(task) = Task::from_proto(&snapshot) else {
            return self.not_run(
                binding,
                id,
                &message,
                bytes,
                "the agent's task is not one the front can read",
            );
        };
        let (sender, role) = self.sender(headers, verified);
        let trace = Trace::from_headers(
            headers.get("traceparent").and_then(|v| v.to_str().ok()),
            headers.get("tracestate").and_then(|v| v.to_str().ok()),
        );
        let asked = Asked {
            message: &message,
            task: &task,
            task_snapshot: &snapshot,
            sender: Some(&sender),
            role,
            attempt: 1,
            accepts_prompt: true,
            trace: &trace,
            deadline: None,
        };
        let ran = match self.runner.execute(&asked).await {
            Ok(ran) => ran,
            Err(error) => return Handled::Answer(self.run_failed(binding, id, &error)),
        };
        match ran {
            Ran::Ordinary { .. } if own.is_some() => {
                self.plain(binding, id, body, message_json, scope, bytes)
                    .await
            }
            Ran::Ordinary { .. } => Handled::Forward(bytes.clone()),
            Ran::Prompt { name, text, .. } => {
                let expanded = prompt_body(binding, body, name, &text);
                if own.is_none() {
                    return Handled::Forward(expanded);
                }
                let expanded: Value = serde_json::from_slice(&expanded).expect("our JSON");
                let message = match binding {
                    Binding::JsonRpc | Binding::JsonRpc03 => expanded.pointer("/params/message"),
                    Binding::HttpJson | Binding::Grpc => expanded.pointer("/message"),
                };
                let mut message = message.cloned().unwrap_or_default();
                if binding == Binding::JsonRpc03 {
                    message = v03::message_v10(&message);
                }
                self.plain(binding, id, &expanded, &message, scope, bytes)
                    .await
            }
            Ran::Command { name, reply, .. } => {
                let event = reply_event(
                    &task,
                    &message.context_id,
                    &message.message_id,
                    name,
                    &reply,
                    now(),
                    false,
                );
                let event: Value =
                    serde_json::from_str(&event.to_json(JsonForm::A2a10)).expect("our JSON");
                let reply_message = event
                    .pointer("/status/message")
                    .cloned()
                    .unwrap_or_default();
                // A new task's data says what it waits for; an existing one's is its own.
                let data = match &task_json {
                    Some(task) => data_of(task),
                    None => json!({"subState": "awaiting-next-message"}),
                };
                let data = a2a::data_with_changes(&data, &reply.changes).unwrap_or(data);
                if let Some(sub_task) = &reply.changes.sub_task {
                    let sub = a2a::new_task(
                        &sub_task.id,
                        &task_context(&task_json, &context_id),
                        &json!({"messageId": format!("{}:goal", sub_task.id), "role": "ROLE_USER",
                                "parts": [{"text": sub_task.goal}],
                                "referenceTaskIds": [snapshot.id]}),
                        "TASK_STATE_SUBMITTED",
                        None,
                        &json!({"name": sub_task.name, "goal": sub_task.goal, "parentId": snapshot.id}),
                    );
                    let sub = Own {
                        task: sub,
                        upstream: None,
                    };
                    if let Err(error) = self.records.put_task(&sub, scope).await {
                        return Handled::Answer(records_failed(binding, id, &error));
                    }
                }
                let (submitted, answered) = if new_task {
                    let made = |state: &str, status: Option<&Value>| {
                        a2a::new_task(&new_id, &context_id, message_json, state, status, &data)
                    };
                    let answered = Own {
                        task: made("TASK_STATE_INPUT_REQUIRED", Some(&reply_message)),
                        upstream: None,
                    };
                    if let Err(error) = self.records.put_task(&answered, scope).await {
                        return Handled::Answer(records_failed(binding, id, &error));
                    }
                    (made("TASK_STATE_SUBMITTED", None), answered.task)
                } else {
                    let mut task = task_json.unwrap_or_default();
                    set_data(&mut task, data.clone());
                    let kept = if own.is_some() {
                        let own = Own {
                            task: task.clone(),
                            upstream: joined,
                        };
                        self.records.put_task(&own, scope).await
                    } else {
                        self.records.put_data(&snapshot.id, &data, scope).await
                    };
                    if let Err(error) = kept {
                        return Handled::Answer(records_failed(binding, id, &error));
                    }
                    let mut answered = task.clone();
                    if let Some(status) = answered.get_mut("status").and_then(Value::as_object_mut)
                    {
                        status.insert("message".into(), reply_message.clone());
                    }
                    (task, answered)
                };
                let mut event = event;
                if new_task {
                    // The reply moves the new task to input-required.
                    event["taskId"] = json!(new_id);
                    event["contextId"] = json!(context_id);
                    event["status"]["message"]["taskId"] = json!(new_id);
                    event["status"]["message"]["contextId"] = json!(context_id);
                }
                Handled::Answer(if stream {
                    stream_answer(
                        binding,
                        id,
                        &[json!({"task": submitted}), json!({"statusUpdate": event})],
                    )
                } else {
                    let result = json!({"task": answered});
                    match binding {
                        Binding::JsonRpc => {
                            json_answer(StatusCode::OK, &a2a::rpc_result(id, result))
                        }
                        Binding::JsonRpc03 => json_answer(
                            StatusCode::OK,
                            &a2a::rpc_result(id, v03::result_v03(&result)),
                        ),
                        Binding::HttpJson | Binding::Grpc => json_answer(StatusCode::OK, &result),
                    }
                })
            }
        }
    }

    /// Task `task_id` as its client sees it, for the rules: a task the front made (once
    /// joined, the agent's state of it under the front's id), or the agent's, with the
    /// task data the front keeps (`own` and `kept_data`: what the records hold for it).
    /// `Err` as [`Front::upstream_task`]'s.
    #[allow(clippy::too_many_arguments)]
    async fn task_as_seen(
        &self,
        binding: Binding,
        path: &str,
        id: &Value,
        headers: &HeaderMap,
        task_id: &str,
        own: Option<Own>,
        kept_data: Option<Value>,
    ) -> Result<Value, Option<Response<Body>>> {
        if let Some(own) = own {
            let Some(upstream) = &own.upstream else {
                return Ok(own.task);
            };
            return Ok(
                match self
                    .upstream_task(binding, path, id, headers, &upstream.id)
                    .await
                {
                    Ok(mut fresh) => {
                        Joiner::of_own(task_id, &own).rewrite(&mut fresh);
                        set_data(&mut fresh, data_of(&own.task));
                        fresh
                    }
                    Err(_) => own.task,
                },
            );
        }
        let mut task = self
            .upstream_task(binding, path, id, headers, task_id)
            .await?;
        // What the front keeps for the agent's task (settings a command chose) is part
        // of its data.
        if let Some(data) = kept_data {
            set_data(&mut task, data);
        }
        Ok(task)
    }

    /// `commands/complete` (the method the kits add to JSON-RPC): what the user has
    /// typed completed, as `Complete` completes it, in the kits' result shape (MCP's
    /// `completion/complete`: `values`, `total`, `hasMore`, and `command`).
    async fn complete(
        &self,
        path: &str,
        id: &Value,
        headers: &HeaderMap,
        verified: Option<&Verified>,
        scope: &Scope,
        params: &Value,
    ) -> Response<Body> {
        let binding = Binding::JsonRpc;
        let invalid = |what: &str| {
            error_answer(
                binding,
                id,
                StatusCode::BAD_REQUEST,
                a2a::INVALID_PARAMS,
                &format!("Invalid params: {what}"),
            )
        };
        let Some(text) = params.get("text").and_then(Value::as_str) else {
            return invalid("text must be a string");
        };
        let limit = match params.get("limit") {
            None | Some(Value::Null) => 0,
            Some(limit) => match limit.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(limit) => limit,
                None => return invalid("limit must be a non-negative integer"),
            },
        };
        let task = match params.get("taskId") {
            None | Some(Value::Null) => None,
            Some(Value::String(task_id)) => {
                let (own, kept_data) = match self.records.get(task_id, scope).await {
                    Ok(Some(Kept::Task(own))) => (Some(own), None),
                    Ok(Some(Kept::Data(data))) => (None, Some(data)),
                    Ok(None) => (None, None),
                    Err(error) => return records_failed(binding, id, &error),
                };
                match self
                    .task_as_seen(binding, path, id, headers, task_id, own, kept_data)
                    .await
                {
                    Ok(task) => Some(a2a::snapshot_from_task(&task)),
                    Err(Some(answer)) => return answer,
                    Err(None) => {
                        return error_answer(
                            binding,
                            id,
                            StatusCode::NOT_FOUND,
                            a2a::TASK_NOT_FOUND,
                            &format!("Task not found: {task_id}"),
                        )
                    }
                }
            }
            Some(_) => return invalid("taskId must be a string"),
        };
        let (sender, _) = self.sender(headers, verified);
        let trace = Trace::from_headers(
            headers.get("traceparent").and_then(|v| v.to_str().ok()),
            headers.get("tracestate").and_then(|v| v.to_str().ok()),
        );
        let asked = CompleteAsked {
            text,
            sender: Some(&sender),
            task: task.as_ref(),
            limit,
            trace: &trace,
        };
        let completed = self
            .runner
            .complete(&asked, |completions, command, _| {
                let values: Vec<Value> = completions
                    .values
                    .iter()
                    .map(|s| json!({"value": s.value, "text": s.text(), "description": s.description}))
                    .collect();
                json!({"values": values, "total": completions.total,
                       "hasMore": completions.has_more, "command": command})
            })
            .await;
        match completed {
            Ok((result, _)) => json_answer(StatusCode::OK, &a2a::rpc_result(id, result)),
            Err(error @ Error::InvalidArgument { .. }) => invalid(&error.to_string()),
            Err(error) => self.run_failed(binding, id, &error),
        }
    }

    /// The agent's task `task_id`, asked on `binding` with the caller's credentials:
    /// the task's JSON, or the agent's own answer when it gave no task (`None`: an
    /// answer the front cannot read, so the message goes to the agent as it came).
    async fn upstream_task(
        &self,
        binding: Binding,
        path: &str,
        id: &Value,
        headers: &HeaderMap,
        task_id: &str,
    ) -> Result<Value, Option<Response<Body>>> {
        if binding == Binding::Grpc {
            return self.grpc_task(headers, task_id).await;
        }
        // Asked where the client's message went: the same JSON-RPC endpoint, or the
        // HTTP+JSON interface's base.
        let front_base = self.public.path();
        let mut asked = own_call_headers(headers, "application/json");
        asked.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let max = self.options.max_body_bytes;
        let answer = match binding {
            Binding::JsonRpc | Binding::JsonRpc03 => {
                let method = if binding == Binding::JsonRpc03 {
                    "tasks/get"
                } else {
                    "GetTask"
                };
                let call = json!({"jsonrpc": "2.0", "id": "a2a-commands-front",
                                  "method": method, "params": {"id": task_id}});
                let uri = self.upstream.uri_for(path, front_base);
                self.upstream
                    .call(Method::POST, uri, asked, Bytes::from(call.to_string()), max)
                    .await
            }
            Binding::HttpJson | Binding::Grpc => {
                let base = path
                    .strip_suffix("/message:send")
                    .or_else(|| path.strip_suffix("/message:stream"))
                    .unwrap_or_default();
                let tasks = format!("{base}/tasks/{}", a2a::urlencode(task_id));
                let uri = self.upstream.uri_for(&tasks, front_base);
                self.upstream
                    .call(Method::GET, uri, asked, Bytes::new(), max)
                    .await
            }
        };
        let (status, _, bytes) = answer.map_err(|e| Some(upstream_failed(binding, id, &e)))?;
        let parsed: Value = serde_json::from_slice(&bytes).map_err(|_| None)?;
        let task = match binding {
            Binding::JsonRpc03 if parsed.get("result").is_some() => {
                v03::task_v10(&parsed["result"])
            }
            Binding::JsonRpc | Binding::JsonRpc03 => match parsed.get("result") {
                Some(task) => task.clone(),
                None => {
                    let error = parsed.get("error").cloned().unwrap_or(Value::Null);
                    return Err(Some(json_answer(
                        StatusCode::OK,
                        &json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    )));
                }
            },
            Binding::HttpJson | Binding::Grpc if status.is_success() => parsed,
            Binding::HttpJson | Binding::Grpc => return Err(Some(json_answer(status, &parsed))),
        };
        if task.get("id").and_then(Value::as_str).is_some() {
            Ok(task)
        } else {
            Err(None)
        }
    }

    /// The sender and role for the role rules: a verified token's claims, else a
    /// configured header's, else the default role.
    fn sender(
        &self,
        headers: &HeaderMap,
        verified: Option<&Verified>,
    ) -> (pb::Sender, ParticipantRole) {
        if let Some(verified) = verified {
            let role = verified.role.unwrap_or(self.options.default_role);
            let sender = pb::Sender {
                id: verified.sender.clone(),
                role: role.into(),
            };
            return (sender, role);
        }
        let header = |name: &Option<String>| {
            name.as_ref()
                .and_then(|n| headers.get(n.as_str()))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let role = header(&self.options.role_header)
            .and_then(|r| parse_role(&r))
            .unwrap_or(self.options.default_role);
        let id = header(&self.options.sender_header).unwrap_or_default();
        (
            pb::Sender {
                id,
                role: role.into(),
            },
            role,
        )
    }

    /// Whose records a request may touch: with a caller identity configured (a JWT key
    /// set, or a sender header), only the caller's own; otherwise every caller's.
    fn scope(&self, headers: &HeaderMap, verified: Option<&Verified>) -> Scope {
        if self.callers.is_none() && self.options.sender_header.is_none() {
            return Scope::Shared;
        }
        Scope::Sender(self.sender(headers, verified).0.id)
    }

    /// A message that may be a registered command the front cannot run (`why`): the
    /// binding's error saying so, with nothing forwarded, since the agent would take
    /// it for a prompt; a message that is not a registered command goes to the agent
    /// as the ordinary message it is.
    fn not_run(
        &self,
        binding: Binding,
        id: &Value,
        message: &pb::Message,
        bytes: &Bytes,
        why: &str,
    ) -> Handled {
        let name = match self.runner.registry().read() {
            Ok(snapshot) => match crate::rules::parse::classify(message, &snapshot) {
                crate::rules::parse::Classification::Command { name, .. } => name.to_owned(),
                _ => return Handled::Forward(bytes.clone()),
            },
            Err(_) => "the command".to_owned(),
        };
        Handled::Answer(error_answer(
            binding,
            id,
            StatusCode::BAD_GATEWAY,
            a2a::INTERNAL_ERROR,
            &format!("/{name} was not run and nothing was forwarded: {why}"),
        ))
    }

    /// A new task's id: [`TASK_ID_PREFIX`] and 96 random bits, so that no client can
    /// guess the id of another's task from its own.
    fn new_id(&self) -> String {
        let mut bits = [0u8; 12];
        ring::rand::SecureRandom::fill(&self.random, &mut bits).expect("the system's random");
        let hex: String = bits.iter().map(|b| format!("{b:02x}")).collect();
        format!("{TASK_ID_PREFIX}{hex}")
    }

    /// The answer to a body over the limit: nothing was forwarded.
    fn too_large(&self, binding: Binding) -> Response<Body> {
        let limit = self.options.max_body_bytes;
        let message = format!(
            "the request body is over the front's limit of {limit} bytes; nothing was forwarded"
        );
        error_answer(
            binding,
            &Value::Null,
            StatusCode::PAYLOAD_TOO_LARGE,
            a2a::INVALID_REQUEST,
            &message,
        )
    }

    /// The answer when the command could not be run at all (no registry yet).
    fn run_failed(&self, binding: Binding, id: &Value, error: &Error) -> Response<Body> {
        error_answer(
            binding,
            id,
            StatusCode::SERVICE_UNAVAILABLE,
            a2a::INTERNAL_ERROR,
            &format!("commands are unavailable right now: {error}"),
        )
    }

    /// The merged card, or 503 naming the upstream when there has never been one.
    async fn card_answer(&self, headers: &HeaderMap) -> Response<Body> {
        let mut cache = self.card.lock().await;
        if cache.fresh().is_none() {
            self.refresh_card(&mut cache, headers).await;
        }
        let Some(card) = cache.last().cloned() else {
            return json_answer(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"error": format!(
                    "no agent card yet: the agent at {} has not served one",
                    self.upstream.base()
                )}),
            );
        };
        drop(cache);
        self.merged_card(card, headers)
    }

    /// Which A2A versions the agent serves: as configured, or as its card says (the
    /// last one fetched; fetched now if there is none).
    async fn agent_speaks(&self) -> card::Versions {
        if let Some(versions) = self.options.upstream_versions {
            return versions;
        }
        let mut cache = self.card.lock().await;
        if cache.last().is_none() {
            self.refresh_card(&mut cache, &HeaderMap::new()).await;
        }
        cache.last().map(card::versions).unwrap_or_default()
    }

    /// The card with this registry's entry, at the next request after any change. It
    /// carries its ETag and when it last changed, and must be revalidated at each use
    /// (`max-age=0`): the commands on it change with the registry. A client's matching
    /// `If-None-Match` gets 304.
    fn merged_card(&self, mut card: Value, asked: &HeaderMap) -> Response<Body> {
        let Some(etag) = self.merge(&mut card) else {
            return json_answer(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"error": "the command registry is not ready yet"}),
            );
        };
        let changed = {
            let mut served = self.card_served.lock().expect("card lock");
            match &*served {
                Some((last, at)) if *last == etag => *at,
                _ => {
                    let now = std::time::SystemTime::now();
                    *served = Some((etag.clone(), now));
                    now
                }
            }
        };
        let matched = asked
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|v| v.trim().trim_start_matches("W/"))
            .any(|v| v == "*" || v == etag.trim_start_matches("W/"));
        let mut answer = if matched {
            let mut answer = Response::new(Body::empty());
            *answer.status_mut() = StatusCode::NOT_MODIFIED;
            answer.extensions_mut().insert(FrontAnswered);
            answer
        } else {
            json_answer(StatusCode::OK, &card)
        };
        let headers = answer.headers_mut();
        if let Ok(value) = HeaderValue::from_str(&etag) {
            headers.insert(header::ETAG, value);
        }
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("max-age=0, must-revalidate"),
        );
        if let Ok(value) = HeaderValue::from_str(&httpdate::fmt_http_date(changed)) {
            headers.insert(header::LAST_MODIFIED, value);
        }
        answer
    }

    /// Merges this registry's entry and the front's URLs into `card`, and returns the
    /// merged card's weak ETag (of its content, before any signature: an ES256 signature
    /// differs at each signing); `None` when there is no registry to take the entry from
    /// yet.
    fn merge(&self, card: &mut Value) -> Option<String> {
        let Ok(snapshot) = self.runner.registry().read() else {
            return None;
        };
        let extension =
            serde_json::from_str::<Value>(&snapshot.card().extension_json).expect("our JSON");
        // The front serves gRPC on its own port for an agent whose gRPC it reaches.
        let grpc = (self.options.upstream_grpc.is_some()
            || card::grpc_address(card, self.upstream.base()).is_some())
        .then(|| {
            let host = self.public.host_str().unwrap_or("127.0.0.1");
            let port = self.public.port_or_known_default().unwrap_or(80);
            format!("{host}:{port}")
        });
        let dropped = card::merge(
            card,
            &extension,
            self.upstream.base(),
            &self.public,
            grpc.as_deref(),
        );
        let digest = ring::digest::digest(&ring::digest::SHA256, card.to_string().as_bytes());
        let hex: String = digest.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if let Some(signing) = &self.options.signing {
            signing.signer.sign(card);
        } else if dropped && !self.signature_logged.swap(true, Ordering::Relaxed) {
            tracing::warn!(upstream = %self.upstream.base(), "the agent's card is signed; the front serves it merged without the signatures, which no longer match (configure a signing key to sign the merged card)");
        }
        Some(format!("W/\"{hex}\""))
    }

    /// A whole 200 answer of the agent's, read (within the body limit) and parsed; any
    /// other answer, or one that is not JSON, comes back as it was, to pass on.
    async fn read_json(
        &self,
        answer: Response<Body>,
        binding: Binding,
    ) -> Result<(hyper::http::response::Parts, Bytes, Value), Response<Body>> {
        if answer.status() != StatusCode::OK {
            return Err(answer);
        }
        let (parts, body) = answer.into_parts();
        if agent::encoding(&parts.headers).is_some() {
            // Asked for identity, encoded all the same: passed on unread.
            return Err(Response::from_parts(parts, body));
        }
        let bytes = match self.read_whole(body).await {
            Ok(bytes) => bytes,
            Err(error) => return Err(upstream_failed(binding, &Value::Null, &error)),
        };
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => Ok((parts, bytes, value)),
            _ => Err(Response::from_parts(parts, Body::from(bytes))),
        }
    }

    /// A whole answer body of the agent's, within the body limit and
    /// `--front-timeout-ms` between its parts.
    async fn read_whole(&self, body: Body) -> Result<Bytes, UpstreamError> {
        let timed = Timed::new(body, self.options.timeout);
        let limited = http_body_util::Limited::new(timed, self.options.max_body_bytes);
        limited.collect().await.map(|c| c.to_bytes()).map_err(|e| {
            UpstreamError::Unreachable(
                self.upstream.base().to_string(),
                format!("its answer broke off, stalled, or was over the body limit ({e})"),
            )
        })
    }

    /// The agent's answer to `ListTasks`: each task the front made (and the agent now
    /// holds) under the front's id, and each with the task data the front keeps. The
    /// first page starts with the tasks the front made that the agent does not hold yet
    /// (no message reached it), newest first, filtered as asked; `totalSize` counts
    /// them. They come on top of the agent's page, so that page may hold more than
    /// `pageSize`, and no page token of the agent's is changed.
    async fn list_answer(
        &self,
        answer: Response<Body>,
        binding: Binding,
        asked: &a2a::ListAsked,
        scope: &Scope,
    ) -> Response<Body> {
        let (mut parts, bytes, mut value) = match self.read_json(answer, binding).await {
            Ok(read) => read,
            Err(answer) => return answer,
        };
        let listing = match binding {
            Binding::JsonRpc | Binding::JsonRpc03 => value.get_mut("result"),
            Binding::HttpJson | Binding::Grpc if parts.status.is_success() => Some(&mut value),
            Binding::HttpJson | Binding::Grpc => None,
        };
        let Some(listing) = listing.and_then(Value::as_object_mut) else {
            return Response::from_parts(parts, Body::from(bytes));
        };
        // proto3's JSON leaves an empty list out.
        let Some(tasks) = listing
            .entry("tasks")
            .or_insert_with(|| json!([]))
            .as_array_mut()
        else {
            return Response::from_parts(parts, Body::from(bytes));
        };
        for task in tasks.iter_mut() {
            let Some(id) = task.get("id").and_then(Value::as_str).map(str::to_owned) else {
                continue;
            };
            let (front, kept) = match self.records.joined_to(&id).await {
                Ok(Some(front)) => match self.records.get(&front, scope).await {
                    // Another caller's task: listed (by the agent) as the agent's.
                    Ok(None) => (None, Ok(None)),
                    kept => (Some(front), kept),
                },
                Ok(None) => (None, self.records.get(&id, scope).await),
                Err(error) => (None, Err(error)),
            };
            let joiner = match (&front, &kept) {
                (Some(front), Ok(Some(Kept::Task(own)))) => Some(Joiner::of_own(front, own)),
                _ => None,
            };
            let data = match kept {
                Ok(Some(Kept::Task(own))) => Some(data_of(&own.task)),
                Ok(Some(Kept::Data(data))) => Some(data),
                Ok(None) => None,
                Err(error) => {
                    tracing::warn!(error = %error, task = %id, "the front's records could not be read; the task is listed as the agent gave it");
                    None
                }
            };
            if let Some(mut joiner) = joiner {
                joiner.rewrite(task);
            }
            if let Some(data) = data {
                set_data(task, data);
            }
        }
        if asked.first_page {
            let own = match self
                .records
                .unjoined(TASK_ID_PREFIX, asked.limit(), scope)
                .await
            {
                Ok(own) => own,
                Err(error) => {
                    tracing::warn!(error = %error, "the front's records could not be read; the tasks only the front holds are not listed");
                    Vec::new()
                }
            };
            let own: Vec<Value> = own
                .into_iter()
                .filter_map(|task| asked.shown(task))
                .collect();
            if !own.is_empty() {
                let added = own.len();
                tasks.splice(0..0, own);
                let total = listing
                    .get("totalSize")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                listing.insert("totalSize".into(), json!(total + added as u64));
            }
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        Response::from_parts(parts, Body::from(value.to_string()))
    }

    /// The agent's answer to an extended-card request (`GetExtendedAgentCard`, `GET
    /// .../extendedAgentCard`), with the card in it merged as the public one is. It is
    /// the caller's (the agent may answer each caller differently), so never cached;
    /// an error, or an answer that holds no card, passes as it came.
    async fn extended_card(&self, answer: Response<Body>, binding: Binding) -> Response<Body> {
        let (mut parts, bytes, mut value) = match self.read_json(answer, binding).await {
            Ok(read) => read,
            Err(answer) => return answer,
        };
        let card = match binding {
            Binding::JsonRpc | Binding::JsonRpc03 => value.get_mut("result"),
            Binding::HttpJson | Binding::Grpc => Some(&mut value),
        };
        let merged = match card {
            Some(card) if card.is_object() => self.merge(card).is_some(),
            _ => false,
        };
        if !merged {
            return Response::from_parts(parts, Body::from(bytes));
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        Response::from_parts(parts, Body::from(value.to_string()))
    }

    /// Fetches the upstream's card into `cache` (conditionally, with its ETag); keeps
    /// the last good one when the upstream fails or answers something that is not a
    /// card.
    pub(super) async fn refresh_card(&self, cache: &mut CardCache, headers: &HeaderMap) {
        let mut asked = HeaderMap::new();
        asked.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        identity_only(&mut asked);
        if let Some(version) = headers.get("a2a-version") {
            asked.insert("a2a-version", version.clone());
        }
        if let (Some(etag), Some(_)) = (&cache.etag, cache.last()) {
            if let Ok(value) = HeaderValue::from_str(etag) {
                asked.insert(header::IF_NONE_MATCH, value);
            }
        }
        let started = Instant::now();
        let answer = self
            .upstream
            .call(
                Method::GET,
                self.upstream.uri_for("/.well-known/agent-card.json", ""),
                asked,
                Bytes::new(),
                self.options.max_body_bytes,
            )
            .await;
        let refresh = self.options.card_refresh;
        match answer {
            Ok((StatusCode::NOT_MODIFIED, headers, _)) if cache.last().is_some() => {
                let fresh = card::freshness(cache_control(&headers), refresh);
                if let Some((_, until)) = cache.card.as_mut() {
                    *until = started + fresh;
                }
            }
            Ok((status, headers, bytes)) => {
                let card = serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .filter(|c| c.is_object() && status == StatusCode::OK);
                match card {
                    Some(card) => {
                        let fresh = card::freshness(cache_control(&headers), refresh);
                        cache.etag = headers
                            .get(header::ETAG)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        cache.card = Some((card, started + fresh));
                    }
                    None => {
                        tracing::warn!(upstream = %self.upstream.base(), status = status.as_u16(), "the agent's card answer is not a card (not 200, compressed, or not a JSON object); the last good card is served");
                        backoff(cache, refresh);
                    }
                }
            }
            Err(error) => {
                tracing::warn!(error = %error, "cannot fetch the agent's card; the last good card is served");
                backoff(cache, refresh);
            }
        }
    }

    /// Hands `request` to the agent and streams its answer back.
    async fn forward(&self, request: Request<Body>, binding: Option<Binding>) -> Response<Body> {
        if request.extensions().get::<GrpcCall>().is_some() {
            return Box::pin(self.forward_grpc(request)).await;
        }
        let max = self.options.max_body_bytes;
        if limits::declared_over(request.headers(), max) {
            return self.too_large(binding.unwrap_or(Binding::HttpJson));
        }
        let (mut parts, body) = request.into_parts();
        let path_and_query = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        parts.uri = self.upstream.uri_for(&path_and_query, self.public.path());
        // A body read whole is within the limit already; any other is cut at it.
        let crossed = Arc::new(AtomicBool::new(false));
        let body = if http_body::Body::size_hint(&body)
            .exact()
            .is_some_and(|n| n <= max as u64)
        {
            body
        } else {
            Body::new(Capped::new(body, max, Arc::clone(&crossed)))
        };
        let started = Instant::now();
        match self.upstream.send(Request::from_parts(parts, body)).await {
            Ok(answer) => {
                metrics()
                    .front
                    .upstream_seconds
                    .observe(started.elapsed().as_secs_f64());
                Box::pin(self.whole_if_small(answer, binding)).await
            }
            Err(_) if crossed.load(Ordering::Relaxed) => {
                self.too_large(binding.unwrap_or(Binding::HttpJson))
            }
            Err(error) => {
                upstream_failed(binding.unwrap_or(Binding::HttpJson), &Value::Null, &error)
            }
        }
    }

    /// A small answer of known length (not a stream) read whole, so that the client is
    /// sent its head and body in one write: one packet and one wakeup where a head and
    /// a body sent as they come would be two. Anything else passes as it arrives.
    async fn whole_if_small(
        &self,
        answer: Response<Body>,
        binding: Option<Binding>,
    ) -> Response<Body> {
        let length = answer
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let streaming = answer
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let (parts, body) = answer.into_parts();
        if streaming || length.is_none_or(|n| n > WHOLE_ANSWER_MAX_BYTES) {
            // Passed as it arrives, but never held open by an agent that stops sending.
            let gap = if streaming {
                self.options.stream_idle
            } else {
                self.options.timeout
            };
            return Response::from_parts(parts, Body::new(Timed::new(body, gap)));
        }
        let timeout = self.options.timeout;
        match tokio::time::timeout(timeout, body.collect()).await {
            Ok(Ok(collected)) => Response::from_parts(parts, Body::from(collected.to_bytes())),
            Ok(Err(error)) => upstream_failed(
                binding.unwrap_or(Binding::HttpJson),
                &Value::Null,
                &UpstreamError::Unreachable(self.upstream.base().to_string(), error.to_string()),
            ),
            Err(_) => upstream_failed(
                binding.unwrap_or(Binding::HttpJson),
                &Value::Null,
                &UpstreamError::Timeout(self.upstream.base().to_string(), timeout.as_millis()),
            ),
        }
    }
}

/// The largest answer of the agent's read whole before it is passed on (see
/// [`Front::whole_if_small`]).
const WHOLE_ANSWER_MAX_BYTES: usize = 16 << 10;

/// The headers of a call the front makes itself about the caller's task: the caller's
/// credentials, version, extensions and trace context, and `content_type`.
pub(super) fn own_call_headers(headers: &HeaderMap, content_type: &'static str) -> HeaderMap {
    let mut sent = HeaderMap::new();
    for name in [
        "authorization",
        "a2a-version",
        "a2a-extensions",
        "traceparent",
        "tracestate",
    ] {
        if let Some(value) = headers.get(name) {
            sent.insert(name, value.clone());
        }
    }
    sent.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    sent
}

/// Asks for an uncompressed answer, which the front reads (it decodes none).
fn identity_only(headers: &mut HeaderMap) {
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(haystack, needle).is_some()
}

/// A message that may be a command, as the front runs it: where it came, and who sent
/// it.
#[derive(Clone, Copy)]
struct CommandCall<'a> {
    binding: Binding,
    path: &'a str,
    id: &'a Value,
    stream: bool,
    headers: &'a HeaderMap,
    verified: Option<&'a Verified>,
    scope: &'a Scope,
}

fn cache_control(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
}

/// After a failed refresh the last card is kept a while before the next try.
fn backoff(cache: &mut CardCache, refresh: std::time::Duration) {
    let wait = refresh.min(std::time::Duration::from_secs(5));
    if let Some((_, until)) = cache.card.as_mut() {
        *until = Instant::now() + wait;
    }
}
