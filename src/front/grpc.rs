//! A2A's gRPC binding (`lf.a2a.v1.A2AService`, issue 44, point 1), as an adapter at
//! the front's edges. A call the front reads (a message, a task call, a listing) is
//! decoded into the JSON the HTTP+JSON binding carries, goes through the same logic,
//! and its answer is encoded back: one message for a unary call, one per event for a
//! stream, the status in the trailers. Any other call, or one compressed, passes to the
//! agent's gRPC address as bytes, frame by frame, its status and details unchanged.

use axum::body::Body;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use http_body::Frame;
use http_body_util::BodyExt as _;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use tonic::Code;

use crate::front::a2a;
use crate::front::callers::{Refused, Verified};
use crate::front::card;
use crate::front::server::{
    event_end, own_call_headers, upstream_failed, Binding, Front, FrontAnswered, UpstreamFailed,
};
use crate::pb::a2a_v1 as pb;

/// The gRPC path every A2A method has, before the method's name.
pub const SERVICE_PATH: &str = "/lf.a2a.v1.A2AService/";

/// A gRPC call the front reads, kept on the request while it goes through the front's
/// JSON logic: forwards go to the agent's gRPC address in gRPC, and the answer is
/// written back in gRPC.
#[derive(Clone, Debug)]
pub struct GrpcCall {
    /// The A2A method.
    pub method: Method,
    /// The request as JSON (a task call's id is taken from the path when it is
    /// forwarded: the front may have replaced it by the agent's).
    pub request: Value,
    /// The agent's gRPC origin (`http://host:port`).
    pub agent: String,
}

/// The status an agent's gRPC answer ended with (its `grpc-status`, `grpc-message`
/// and `grpc-status-details-bin`), kept on the JSON answer made of it so that the
/// client gets it unchanged.
#[derive(Clone, Debug)]
struct AgentStatus(HeaderMap);

/// Whether a request is a gRPC call.
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// The methods the front reads, with their request and answer types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `SendMessage`: `SendMessageRequest` → `SendMessageResponse`.
    SendMessage,
    /// `SendStreamingMessage`: `SendMessageRequest` → stream of `StreamResponse`.
    SendStreamingMessage,
    /// `GetTask`: `GetTaskRequest` → `Task`.
    GetTask,
    /// `CancelTask`: `CancelTaskRequest` → `Task`.
    CancelTask,
    /// `SubscribeToTask`: `SubscribeToTaskRequest` → stream of `StreamResponse`.
    SubscribeToTask,
    /// `ListTasks`: `ListTasksRequest` → `ListTasksResponse`.
    ListTasks,
}

impl Method {
    /// The method a gRPC path names, if the front reads it.
    pub fn from_path(path: &str) -> Option<Self> {
        Some(match path.strip_prefix(SERVICE_PATH)? {
            "SendMessage" => Self::SendMessage,
            "SendStreamingMessage" => Self::SendStreamingMessage,
            "GetTask" => Self::GetTask,
            "CancelTask" => Self::CancelTask,
            "SubscribeToTask" => Self::SubscribeToTask,
            "ListTasks" => Self::ListTasks,
            _ => return None,
        })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SendMessage => "SendMessage",
            Self::SendStreamingMessage => "SendStreamingMessage",
            Self::GetTask => "GetTask",
            Self::CancelTask => "CancelTask",
            Self::SubscribeToTask => "SubscribeToTask",
            Self::ListTasks => "ListTasks",
        }
    }

    /// Whether its answer is a stream.
    pub fn streams(self) -> bool {
        matches!(self, Self::SendStreamingMessage | Self::SubscribeToTask)
    }

    /// The request (one message's bytes) as JSON.
    pub fn request_json(self, bytes: &[u8]) -> Result<Value, String> {
        match self {
            Self::SendMessage | Self::SendStreamingMessage => {
                to_json::<pb::SendMessageRequest>(bytes)
            }
            Self::GetTask => to_json::<pb::GetTaskRequest>(bytes),
            Self::CancelTask => to_json::<pb::CancelTaskRequest>(bytes),
            Self::SubscribeToTask => to_json::<pb::SubscribeToTaskRequest>(bytes),
            Self::ListTasks => to_json::<pb::ListTasksRequest>(bytes),
        }
    }

    /// The request from its JSON, encoded.
    pub fn request_bytes(self, json: &Value) -> Result<Bytes, String> {
        match self {
            Self::SendMessage | Self::SendStreamingMessage => {
                from_json::<pb::SendMessageRequest>(json)
            }
            Self::GetTask => from_json::<pb::GetTaskRequest>(json),
            Self::CancelTask => from_json::<pb::CancelTaskRequest>(json),
            Self::SubscribeToTask => from_json::<pb::SubscribeToTaskRequest>(json),
            Self::ListTasks => from_json::<pb::ListTasksRequest>(json),
        }
    }

    /// One answer message (one event of a stream) as JSON.
    pub fn answer_json(self, bytes: &[u8]) -> Result<Value, String> {
        match self {
            Self::SendMessage => to_json::<pb::SendMessageResponse>(bytes),
            Self::SendStreamingMessage | Self::SubscribeToTask => {
                to_json::<pb::StreamResponse>(bytes)
            }
            Self::GetTask | Self::CancelTask => to_json::<pb::Task>(bytes),
            Self::ListTasks => to_json::<pb::ListTasksResponse>(bytes),
        }
    }

    /// One answer message (one event of a stream) from its JSON, encoded.
    pub fn answer_bytes(self, json: &Value) -> Result<Bytes, String> {
        match self {
            Self::SendMessage => from_json::<pb::SendMessageResponse>(json),
            Self::SendStreamingMessage | Self::SubscribeToTask => {
                from_json::<pb::StreamResponse>(json)
            }
            Self::GetTask | Self::CancelTask => from_json::<pb::Task>(json),
            Self::ListTasks => from_json::<pb::ListTasksResponse>(json),
        }
    }

    /// The HTTP+JSON request the front's logic reads for this call: its method, path
    /// and body.
    pub fn as_http_json(self, request: &Value) -> (hyper::Method, String, Value) {
        let id = request
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = crate::front::server::urlencode(id);
        match self {
            Self::SendMessage => (hyper::Method::POST, "/message:send".into(), request.clone()),
            Self::SendStreamingMessage => (
                hyper::Method::POST,
                "/message:stream".into(),
                request.clone(),
            ),
            Self::GetTask => (hyper::Method::GET, format!("/tasks/{id}"), Value::Null),
            Self::CancelTask => (
                hyper::Method::POST,
                format!("/tasks/{id}:cancel"),
                request.clone(),
            ),
            Self::SubscribeToTask => (
                hyper::Method::POST,
                format!("/tasks/{id}:subscribe"),
                Value::Null,
            ),
            Self::ListTasks => {
                let query: String = url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(request.as_object().into_iter().flatten().filter_map(
                        |(key, value)| match value {
                            Value::String(text) => Some((key.clone(), text.clone())),
                            Value::Number(n) => Some((key.clone(), n.to_string())),
                            Value::Bool(b) => Some((key.clone(), b.to_string())),
                            _ => None,
                        },
                    ))
                    .finish();
                let path = if query.is_empty() {
                    "/tasks".to_owned()
                } else {
                    format!("/tasks?{query}")
                };
                (hyper::Method::GET, path, Value::Null)
            }
        }
    }
}

fn to_json<M: prost::Message + Default + serde::Serialize>(bytes: &[u8]) -> Result<Value, String> {
    let message = M::decode(bytes).map_err(|e| format!("not a valid message: {e}"))?;
    serde_json::to_value(&message).map_err(|e| e.to_string())
}

fn from_json<M: prost::Message + serde::de::DeserializeOwned>(
    json: &Value,
) -> Result<Bytes, String> {
    let message: M = serde_json::from_value(json.clone()).map_err(|e| e.to_string())?;
    Ok(Bytes::from(message.encode_to_vec()))
}

/// One gRPC message in its length-prefixed frame (uncompressed).
pub fn frame(message: &[u8]) -> Bytes {
    let mut framed = BytesMut::with_capacity(5 + message.len());
    framed.put_u8(0);
    framed.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    framed.put_slice(message);
    framed.freeze()
}

/// The one message of a unary or server-streaming request's body: `None` when it is
/// compressed, or not exactly one whole frame (the front then reads none of it).
pub fn only_message(body: &[u8]) -> Option<&[u8]> {
    let (&flag, rest) = body.split_first()?;
    if flag != 0 || rest.len() < 4 {
        return None;
    }
    let length = usize::try_from(u32::from_be_bytes(rest[..4].try_into().ok()?)).ok()?;
    let message = &rest[4..];
    (message.len() == length).then_some(message)
}

/// Takes the whole frames off the front of `pending`: each message, and whether it was
/// compressed.
pub fn take_frames(pending: &mut BytesMut) -> Vec<(bool, Bytes)> {
    let mut taken = Vec::new();
    while pending.len() >= 5 {
        let length = u32::from_be_bytes(pending[1..5].try_into().expect("four bytes")) as usize;
        if pending.len() < 5 + length {
            break;
        }
        let compressed = pending[0] != 0;
        pending.advance(5);
        taken.push((compressed, pending.split_to(length).freeze()));
    }
    taken
}

/// Trailers saying `code` (and `message`, percent-encoded as gRPC asks).
pub fn status_trailers(code: tonic::Code, message: &str) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(code as i32));
    if !message.is_empty() {
        let encoded = percent_encode(message);
        if let Ok(value) = HeaderValue::from_str(&encoded) {
            trailers.insert("grpc-message", value);
        }
    }
    trailers
}

/// gRPC's percent-encoding of `grpc-message`: bytes outside printable ASCII, and `%`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if (0x20..0x7f).contains(&byte) && byte != b'%' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The gRPC code for an HTTP status the front answered with (its own errors).
pub fn code_for(status: hyper::StatusCode) -> tonic::Code {
    use hyper::StatusCode as S;
    use tonic::Code as C;
    match status {
        S::BAD_REQUEST => C::InvalidArgument,
        S::UNAUTHORIZED => C::Unauthenticated,
        S::FORBIDDEN => C::PermissionDenied,
        S::NOT_FOUND => C::NotFound,
        S::CONFLICT => C::FailedPrecondition,
        S::PAYLOAD_TOO_LARGE => C::ResourceExhausted,
        S::TOO_MANY_REQUESTS => C::ResourceExhausted,
        S::NOT_IMPLEMENTED => C::Unimplemented,
        S::BAD_GATEWAY | S::SERVICE_UNAVAILABLE => C::Unavailable,
        S::GATEWAY_TIMEOUT => C::DeadlineExceeded,
        status if status.is_success() => C::Ok,
        _ => C::Internal,
    }
}

/// A gRPC answer that is its status alone (trailers-only).
pub fn status_answer(code: Code, message: &str) -> Response<Body> {
    let mut answer = Response::new(Body::empty());
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    answer.headers_mut().extend(status_trailers(code, message));
    answer.extensions_mut().insert(FrontAnswered);
    answer
}

/// A caller refused before anything was forwarded: UNAUTHENTICATED (UNAVAILABLE when
/// no key set could be read yet).
pub fn refused(refused: &Refused) -> Response<Body> {
    let code = match refused {
        Refused::NoKeys(_) => Code::Unavailable,
        _ => Code::Unauthenticated,
    };
    status_answer(code, &refused.to_string())
}

/// The gRPC metadata an agent is sent: the client's, without what the framing owns.
fn metadata(from: &HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in from {
        if !matches!(
            name.as_str(),
            "content-type" | "content-length" | "accept" | "host" | "te"
        ) {
            headers.append(name.clone(), value.clone());
        }
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers
}

/// The HTTP status the front's JSON logic sees for an agent's gRPC code.
fn http_for(code: Code) -> StatusCode {
    match code {
        Code::InvalidArgument | Code::OutOfRange => StatusCode::BAD_REQUEST,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::FailedPrecondition => StatusCode::BAD_REQUEST,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The `grpc-status` in `headers`, if any (0 is OK).
fn status_in(headers: &HeaderMap) -> Option<i32> {
    headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// An agent's gRPC error as the JSON logic sees one (an HTTP error with an AIP-193
/// body), its status kept for the client.
fn agent_error(status: &HeaderMap) -> Response<Body> {
    let code = Code::from(status_in(status).unwrap_or(Code::Unknown as i32));
    let message = status
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut kept = HeaderMap::new();
    for name in ["grpc-status", "grpc-message", "grpc-status-details-bin"] {
        if let Some(value) = status.get(name) {
            kept.insert(name, value.clone());
        }
    }
    let http = http_for(code);
    let mut answer = Response::new(Body::from(
        json!({"error": {"code": http.as_u16(), "status": http.canonical_reason(), "message": message}})
            .to_string(),
    ));
    *answer.status_mut() = http;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    answer.extensions_mut().insert(AgentStatus(kept));
    answer
}

/// A JSON answer with `status` saying `message` (the front's own failure).
fn json_error(status: StatusCode, message: &str) -> Response<Body> {
    let mut answer = Response::new(Body::from(
        json!({"error": {"code": status.as_u16(), "status": status.canonical_reason(), "message": message}})
            .to_string(),
    ));
    *answer.status_mut() = status;
    answer
}

/// Whether a `SendMessageRequest` holds a message that is not a command candidate (one
/// text part starting with `/` and a lower-case letter) and names no task.
fn is_plain_new_message(request: &[u8]) -> bool {
    use prost::Message as _;
    let Ok(request) = pb::SendMessageRequest::decode(request) else {
        return false;
    };
    let Some(message) = request.message else {
        return true;
    };
    let candidate = match message.parts.as_slice() {
        [part] => match &part.content {
            Some(pb::part::Content::Text(text)) => a2a::may_be_command(text),
            _ => false,
        },
        _ => false,
    };
    !candidate && message.task_id.is_empty()
}

/// The task id a task call's path names (`.../tasks/{id}`, with `:cancel` or
/// `:subscribe`), decoded.
fn task_id_in_path(path: &str) -> Option<String> {
    let last = path.rsplit_once("/tasks/")?.1;
    let id = last.split(':').next().unwrap_or(last);
    Some(
        url::form_urlencoded::parse(format!("id={id}").as_bytes())
            .next()?
            .1
            .into_owned(),
    )
}

impl Front {
    /// The agent's gRPC origin: `--front-upstream-grpc`, or its card's gRPC interface
    /// when that is on the agent's own host (never another: the front forwards to its
    /// one upstream only).
    pub(super) async fn grpc_upstream(&self) -> Option<String> {
        if let Some(configured) = &self.options.upstream_grpc {
            return Some(format!("http://{configured}"));
        }
        let mut cache = self.card.lock().await;
        if cache.last().is_none() {
            self.refresh_card(&mut cache, &HeaderMap::new()).await;
        }
        cache
            .last()
            .and_then(|card| card::grpc_address(card, self.upstream.base()))
            .map(|address| format!("http://{address}"))
    }

    /// A gRPC call to the front: one it reads goes through the front's JSON logic as
    /// the HTTP+JSON request it amounts to, and its answer is written back in gRPC;
    /// any other passes to the agent as it came.
    pub(super) async fn grpc_call(&self, request: Request<Body>) -> Response<Body> {
        let Some(agent) = self.grpc_upstream().await else {
            return status_answer(
                Code::Unimplemented,
                "the agent serves no gRPC interface the front reaches (see --front-upstream-grpc)",
            );
        };
        let Some(method) = Method::from_path(request.uri().path()) else {
            return self.grpc_pass(request, &agent).await;
        };
        let (parts, body) = request.into_parts();
        let max = self.options.max_body_bytes;
        let bytes = match http_body_util::Limited::new(body, max).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return status_answer(
                    Code::ResourceExhausted,
                    &format!(
                    "the request is over the front's limit of {max} bytes; nothing was forwarded"
                ),
                )
            }
        };
        // Compressed, not one message, or a message too large to be a command: the
        // agent reads it, as it came.
        let readable = only_message(&bytes).filter(|message| {
            !matches!(method, Method::SendMessage | Method::SendStreamingMessage)
                || message.len() <= a2a::PRECHECK_MAX_BYTES
        });
        let Some(message) = readable else {
            let request = Request::from_parts(parts, Body::from(bytes));
            return self.grpc_pass(request, &agent).await;
        };
        // The hot path: a message that cannot be a command and names no task (so no
        // record of the front's can concern it) passes as it came, never converted.
        if matches!(method, Method::SendMessage | Method::SendStreamingMessage)
            && is_plain_new_message(message)
        {
            let request = Request::from_parts(parts, Body::from(bytes));
            return self.grpc_pass(request, &agent).await;
        }
        let request_json = match method.request_json(message) {
            Ok(json) => json,
            Err(why) => return status_answer(Code::InvalidArgument, &why),
        };
        let (http_method, path, body) = method.as_http_json(&request_json);
        let body = if body.is_null() {
            Body::empty()
        } else {
            Body::from(body.to_string())
        };
        let mut internal = Request::builder()
            .method(http_method.clone())
            .uri(&path)
            .body(body)
            .expect("a valid request");
        let headers = internal.headers_mut();
        for (name, value) in &parts.headers {
            if !matches!(name.as_str(), "content-type" | "content-length" | "te") {
                headers.append(name.clone(), value.clone());
            }
        }
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(verified) = parts.extensions.get::<Verified>() {
            internal.extensions_mut().insert(verified.clone());
        }
        internal.extensions_mut().insert(GrpcCall {
            method,
            request: request_json,
            agent,
        });
        let path_only = path.split('?').next().unwrap_or_default().to_owned();
        let answer = self
            .dispatch(internal, &path_only, &http_method, false)
            .await;
        grpc_answer(method, answer).await
    }

    /// A gRPC call the front does not read: to the agent's gRPC interface as it came,
    /// its answer streamed back message by message with its trailers.
    async fn grpc_pass(&self, request: Request<Body>, agent: &str) -> Response<Body> {
        let (mut parts, body) = request.into_parts();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.uri = match format!("{agent}{path}").parse() {
            Ok(uri) => uri,
            Err(_) => return status_answer(Code::Internal, "cannot name the agent's gRPC path"),
        };
        match self
            .upstream
            .send_grpc(Request::from_parts(parts, body))
            .await
        {
            Ok(answer) => answer,
            Err(error) => grpc_failed(&error.to_string(), &error),
        }
    }

    /// A forward of a gRPC call the front read (its JSON, perhaps rewritten): to the
    /// agent's gRPC interface, and its answer as the JSON logic reads answers.
    pub(super) async fn forward_grpc(&self, request: Request<Body>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let call = parts
            .extensions
            .get::<GrpcCall>()
            .cloned()
            .expect("a gRPC call");
        let json = match call.method {
            Method::SendMessage | Method::SendStreamingMessage => {
                let read = body.collect().await.map(|c| c.to_bytes());
                match read.ok().and_then(|b| serde_json::from_slice(&b).ok()) {
                    Some(json) => json,
                    None => {
                        return json_error(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "the front lost the request",
                        )
                    }
                }
            }
            _ => {
                let mut request = call.request.clone();
                if let (Some(id), Some(object)) =
                    (task_id_in_path(parts.uri.path()), request.as_object_mut())
                {
                    object.insert("id".into(), json!(id));
                }
                request
            }
        };
        let message = match call.method.request_bytes(&json) {
            Ok(message) => message,
            Err(why) => return json_error(StatusCode::BAD_REQUEST, &why),
        };
        let mut upstream = Request::builder()
            .method(hyper::Method::POST)
            .uri(format!(
                "{}{SERVICE_PATH}{}",
                call.agent,
                call.method.name()
            ))
            .body(Body::from(frame(&message)))
            .expect("a valid request");
        *upstream.headers_mut() = metadata(&parts.headers);
        match self.upstream.send_grpc(upstream).await {
            Ok(answer) => json_of_grpc(call.method, answer, self.options.max_body_bytes).await,
            Err(error) => upstream_failed(Binding::Grpc, &Value::Null, &error),
        }
    }

    /// The agent's task `task_id`, asked over gRPC with the caller's credentials; `Err`
    /// as [`Front::upstream_task`]'s (the agent's own error, for the client).
    pub(super) async fn grpc_task(
        &self,
        headers: &HeaderMap,
        task_id: &str,
    ) -> Result<Value, Option<Response<Body>>> {
        let Some(agent) = self.grpc_upstream().await else {
            return Err(None);
        };
        let message = Method::GetTask
            .request_bytes(&json!({"id": task_id}))
            .map_err(|_| None)?;
        let mut asked = Request::builder()
            .method(hyper::Method::POST)
            .uri(format!("{agent}{SERVICE_PATH}GetTask"))
            .body(Body::from(frame(&message)))
            .expect("a valid request");
        *asked.headers_mut() = own_call_headers(headers, "application/grpc");
        let answer = self
            .upstream
            .send_grpc(asked)
            .await
            .map_err(|e| Some(upstream_failed(Binding::Grpc, &Value::Null, &e)))?;
        let answer = json_of_grpc(Method::GetTask, answer, self.options.max_body_bytes).await;
        if !answer.status().is_success() {
            return Err(Some(answer));
        }
        let bytes = answer
            .into_body()
            .collect()
            .await
            .map_err(|_| None)?
            .to_bytes();
        let task: Value = serde_json::from_slice(&bytes).map_err(|_| None)?;
        if task.get("id").and_then(Value::as_str).is_some() {
            Ok(task)
        } else {
            Err(None)
        }
    }
}

/// The agent could not be reached: UNAVAILABLE (DEADLINE_EXCEEDED past the timeout).
fn grpc_failed(message: &str, error: &crate::front::upstream::UpstreamError) -> Response<Body> {
    let code = match error {
        crate::front::upstream::UpstreamError::Timeout(..) => Code::DeadlineExceeded,
        crate::front::upstream::UpstreamError::Unreachable(..) => Code::Unavailable,
    };
    let mut answer = status_answer(code, message);
    answer.extensions_mut().remove::<FrontAnswered>();
    answer.extensions_mut().insert(UpstreamFailed);
    answer
}

/// An agent's gRPC answer as the front's JSON logic reads answers: a unary one as its
/// JSON (200), a stream as server-sent events of JSON with the agent's trailers at the
/// end, an error as an HTTP error whose gRPC status is kept for the client.
async fn json_of_grpc(method: Method, answer: Response<Body>, max: usize) -> Response<Body> {
    let (parts, body) = answer.into_parts();
    if status_in(&parts.headers).is_some_and(|code| code != 0) {
        return agent_error(&parts.headers);
    }
    if !parts.status.is_success() || !is_grpc(&parts.headers) {
        return json_error(
            StatusCode::BAD_GATEWAY,
            &format!("the agent's gRPC interface answered HTTP {}", parts.status),
        );
    }
    if !method.streams() {
        let Ok(collected) = http_body_util::Limited::new(body, max).collect().await else {
            return json_error(
                StatusCode::BAD_GATEWAY,
                "the agent's answer broke off or was over the body limit",
            );
        };
        let trailers = collected.trailers().cloned().unwrap_or_default();
        if status_in(&trailers).is_some_and(|code| code != 0) {
            return agent_error(&trailers);
        }
        let bytes = collected.to_bytes();
        let json = only_message(&bytes).map(|message| method.answer_json(message));
        return match json {
            Some(Ok(json)) => {
                let mut answer = Response::new(Body::from(json.to_string()));
                answer.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                answer
            }
            _ => json_error(
                StatusCode::BAD_GATEWAY,
                "the agent's gRPC answer could not be read",
            ),
        };
    }
    let (events, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut body = body;
        let mut pending = BytesMut::new();
        while let Some(frame) = body.frame().await {
            let data = match frame.map(Frame::into_data) {
                Ok(Ok(data)) => data,
                Ok(Err(trailers)) => {
                    let _ = events.send(Ok(trailers)).await;
                    return;
                }
                Err(e) => {
                    let _ = events.send(Err(std::io::Error::other(e.to_string()))).await;
                    return;
                }
            };
            pending.extend_from_slice(&data);
            for (compressed, message) in take_frames(&mut pending) {
                let json = if compressed {
                    Err("compressed".to_owned())
                } else {
                    method.answer_json(&message)
                };
                let event = match json {
                    Ok(json) => Bytes::from(a2a::sse_event(&json)),
                    Err(why) => {
                        let trailers = status_trailers(
                            Code::Internal,
                            &format!("the front could not read the agent's event: {why}"),
                        );
                        let _ = events.send(Ok(Frame::trailers(trailers))).await;
                        return;
                    }
                };
                if events.send(Ok(Frame::data(event))).await.is_err() {
                    return;
                }
            }
        }
    });
    let mut answer = Response::new(Body::new(http_body_util::StreamBody::new(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    )));
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    answer
}

/// The front's JSON answer to a gRPC call, written back in gRPC: the agent's status
/// unchanged when it ended in one; the front's own errors as their gRPC codes; a JSON
/// answer as one message; server-sent events as one message each; OK (or the agent's
/// trailers) at the end.
async fn grpc_answer(method: Method, answer: Response<Body>) -> Response<Body> {
    let (parts, body) = answer.into_parts();
    let with_parts = |body: Body, extra: HeaderMap| {
        let mut answer = Response::new(body);
        answer.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        answer.headers_mut().extend(extra);
        if let Some(echo) = parts.headers.get("a2a-extensions") {
            answer.headers_mut().insert("a2a-extensions", echo.clone());
        }
        *answer.extensions_mut() = parts.extensions.clone();
        answer
    };
    if let Some(AgentStatus(status)) = parts.extensions.get::<AgentStatus>() {
        return with_parts(Body::empty(), status.clone());
    }
    if let Some(status) = status_in(&parts.headers) {
        // Already gRPC (the agent could not be reached): as it is.
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from(status));
        if let Some(message) = parts.headers.get("grpc-message") {
            trailers.insert("grpc-message", message.clone());
        }
        return with_parts(Body::empty(), trailers);
    }
    let streaming = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !parts.status.is_success() {
        let bytes = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        let said: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let message = said
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or_else(|| parts.status.canonical_reason().unwrap_or_default());
        return with_parts(
            Body::empty(),
            status_trailers(code_for(parts.status), message),
        );
    }
    if !streaming {
        let Ok(collected) = body.collect().await else {
            return with_parts(
                Body::empty(),
                status_trailers(Code::Unavailable, "the answer broke off"),
            );
        };
        let bytes = collected.to_bytes();
        let encoded = serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|json| method.answer_bytes(&json));
        return match encoded {
            Ok(message) => {
                let frames: [Result<Frame<Bytes>, std::io::Error>; 2] = [
                    Ok(Frame::data(frame(&message))),
                    Ok(Frame::trailers(status_trailers(Code::Ok, ""))),
                ];
                with_parts(
                    Body::new(http_body_util::StreamBody::new(tokio_stream::iter(frames))),
                    HeaderMap::new(),
                )
            }
            Err(why) => with_parts(
                Body::empty(),
                status_trailers(
                    Code::Internal,
                    &format!("the front could not write its answer: {why}"),
                ),
            ),
        };
    }
    let (events, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut body = body;
        let mut pending: Vec<u8> = Vec::new();
        let ended = loop {
            let Some(next) = body.frame().await else {
                break status_trailers(Code::Ok, "");
            };
            let data = match next.map(Frame::into_data) {
                Ok(Ok(data)) => data,
                Ok(Err(trailers)) => match trailers.into_trailers() {
                    Ok(trailers) => break trailers,
                    Err(_) => continue,
                },
                Err(e) => break status_trailers(Code::Unavailable, &e.to_string()),
            };
            pending.extend_from_slice(&data);
            while let Some(end) = event_end(&pending) {
                let event: Vec<u8> = pending.drain(..end).collect();
                let text = String::from_utf8_lossy(&event);
                let data: String = text
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect::<Vec<_>>()
                    .join("\n");
                if data.is_empty() {
                    continue;
                }
                let encoded = serde_json::from_str::<Value>(&data)
                    .map_err(|e| e.to_string())
                    .and_then(|json| method.answer_bytes(&json));
                let message = match encoded {
                    Ok(message) => message,
                    Err(why) => {
                        let trailers = status_trailers(
                            Code::Internal,
                            &format!("the front could not write an event: {why}"),
                        );
                        let _ = events.send(Ok(Frame::trailers(trailers))).await;
                        return;
                    }
                };
                if events.send(Ok(Frame::data(frame(&message)))).await.is_err() {
                    return;
                }
            }
        };
        let _ = events.send(Ok(Frame::trailers(ended))).await;
    });
    with_parts(
        Body::new(http_body_util::StreamBody::new(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )),
        HeaderMap::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_reads_as_the_json_the_other_bindings_carry_and_back() {
        let json = json!({"message": {"messageId": "m-1", "taskId": "t-1", "role": "ROLE_USER",
                                       "parts": [{"text": "/status"}],
                                       "metadata": {"k": [1.0, "two"]}},
                          "configuration": {"historyLength": 3}});
        let bytes = Method::SendMessage.request_bytes(&json).unwrap();
        assert_eq!(Method::SendMessage.request_json(&bytes).unwrap(), json);
        let task = json!({"id": "t-1", "contextId": "c-1",
                          "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-12-05T00:00:00Z"}});
        let event = json!({"task": task});
        let bytes = Method::SubscribeToTask.answer_bytes(&event).unwrap();
        // pbjson writes UTC as `+00:00`, not `Z`: the same instant, so the same bytes.
        let read = Method::SubscribeToTask.answer_json(&bytes).unwrap();
        assert_eq!(read["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(Method::SubscribeToTask.answer_bytes(&read).unwrap(), bytes);
    }

    #[test]
    fn frames_are_length_prefixed_and_taken_whole() {
        let framed = frame(b"abc");
        assert_eq!(&framed[..], b"\0\0\0\0\x03abc");
        assert_eq!(only_message(&framed), Some(&b"abc"[..]));
        assert_eq!(only_message(&framed[..6]), None);
        let mut pending = BytesMut::from(&[framed.clone(), frame(b"de")].concat()[..10]);
        let taken = take_frames(&mut pending);
        assert_eq!(taken, vec![(false, Bytes::from_static(b"abc"))]);
        assert_eq!(pending.len(), 2);
        assert_eq!(
            Method::from_path("/lf.a2a.v1.A2AService/GetTask"),
            Some(Method::GetTask)
        );
        assert_eq!(
            Method::from_path("/lf.a2a.v1.A2AService/GetExtendedAgentCard"),
            None
        );
        assert_eq!(percent_encode("a%b\né"), "a%25b%0A%C3%A9");
    }
}
