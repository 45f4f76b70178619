//! A2A's gRPC binding (`lf.a2a.v1.A2AService`, issue 44, point 1), as an adapter at
//! the front's edges; this module is its wire (methods, frames, statuses), pure, and
//! `grpc_calls` is the front's handling of a call. A call the front reads (a message, a task call, a listing) is
//! decoded into the JSON the HTTP+JSON binding carries, goes through the same logic,
//! and its answer is encoded back: one message for a unary call, one per event for a
//! stream, the status in the trailers. Any other call, or one compressed, passes to the
//! agent's gRPC address as bytes, frame by frame, its status and details unchanged.

use axum::body::Body;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::StatusCode;
use serde_json::Value;
use tonic::Code;

use crate::front::a2a;
use crate::front::callers::Refused;
use crate::http1::head::{Answer, Headers};
use crate::http1::token::same_name;
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

/// Whether a message of this `Content-Type` is gRPC's.
pub fn is_grpc(content_type: Option<&HeaderValue>) -> bool {
    content_type
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
    /// (under `/{tenant}` when the request names a tenant, as HTTP+JSON's paths carry
    /// it) and body.
    pub fn as_http_json(self, request: &Value) -> (hyper::Method, String, Value) {
        let (method, path, body) = self.as_http_json_untenanted(request);
        match request.get("tenant").and_then(Value::as_str) {
            Some(tenant) if !tenant.is_empty() => (
                method,
                format!(
                    "/{}{path}",
                    percent_encoding::utf8_percent_encode(
                        tenant,
                        percent_encoding::NON_ALPHANUMERIC
                    )
                ),
                body,
            ),
            _ => (method, path, body),
        }
    }

    fn as_http_json_untenanted(self, request: &Value) -> (hyper::Method, String, Value) {
        let id = request
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = a2a::urlencode(id);
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
                            _ if key == "tenant" => None,
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

/// Why a request's body is not a sequence of whole gRPC frames (a length prefix cut
/// short, or a message shorter than its prefix says), if it is not: such a call is
/// answered at once, never left for an agent that would wait for the rest.
pub fn malformed(body: &[u8]) -> Option<String> {
    let mut rest = body;
    while !rest.is_empty() {
        if rest.len() < 5 {
            return Some(format!(
                "malformed gRPC frame: {} bytes where a 5-byte length prefix was due",
                rest.len()
            ));
        }
        let length = u32::from_be_bytes(rest[1..5].try_into().expect("four bytes")) as usize;
        if rest.len() - 5 < length {
            return Some(format!(
                "malformed gRPC frame: its prefix says {length} bytes, {} came",
                rest.len() - 5
            ));
        }
        rest = &rest[5 + length..];
    }
    None
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
pub fn status_answer(code: Code, message: &str) -> Answer {
    let mut answer = Answer::new(Body::empty());
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    answer.headers_mut().extend(status_trailers(code, message));
    answer
}

/// A caller refused before anything was forwarded: UNAUTHENTICATED (UNAVAILABLE when
/// no key set could be read yet).
pub fn refused(refused: &Refused) -> Answer {
    let code = match refused {
        Refused::NoKeys(_) => Code::Unavailable,
        _ => Code::Unauthenticated,
    };
    status_answer(code, &refused.to_string())
}

/// The gRPC metadata an agent is sent: the client's, without what the framing owns.
pub(super) fn metadata(from: &Headers) -> Headers {
    let mut headers = from.clone();
    headers.retain(|name, _| {
        !["content-type", "content-length", "accept", "host", "te"]
            .iter()
            .any(|framing| same_name(name, framing.as_bytes()))
    });
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers
}

/// The HTTP status the front's JSON logic sees for an agent's gRPC code.
pub(super) fn http_for(code: Code) -> StatusCode {
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
pub(super) fn status_in(grpc_status: Option<&HeaderValue>) -> Option<i32> {
    grpc_status?.to_str().ok()?.trim().parse().ok()
}

/// Whether a `SendMessageRequest` holds a message that is not a command candidate (one
/// text part starting with `/` and a lower-case letter) and names no task.
pub(super) fn is_plain_new_message(request: &[u8]) -> bool {
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
pub(super) fn task_id_in_path(path: &str) -> Option<String> {
    let last = path.rsplit_once("/tasks/")?.1;
    let id = last.split(':').next().unwrap_or(last);
    Some(
        url::form_urlencoded::parse(format!("id={id}").as_bytes())
            .next()?
            .1
            .into_owned(),
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
    fn a_frame_cut_short_is_named() {
        let whole = frame(b"hello");
        assert_eq!(malformed(&whole), None);
        assert_eq!(malformed(b""), None);
        assert!(malformed(&whole[..3]).unwrap().contains("length prefix"));
        assert!(malformed(&whole[..7])
            .unwrap()
            .contains("says 5 bytes, 2 came"));
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
