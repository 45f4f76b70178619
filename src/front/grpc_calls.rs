//! The front's gRPC edge (see `grpc` for the binding's wire): a call it reads becomes
//! the HTTP+JSON request it amounts to, for the server to dispatch like any other, and
//! the answer is written back in gRPC ([`grpc_answer`]); its forwards speak gRPC to the
//! agent; any other call passes as bytes with its trailers.

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body::Frame;
use http_body_util::BodyExt as _;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use tonic::Code;

use crate::front::a2a;
use crate::front::answer::{upstream_failed, FrontAnswered, UpstreamFailed};
use crate::front::callers::Verified;
use crate::front::card;
use crate::front::card_serving::refresh_card;
use crate::front::context::Context;
use crate::front::grpc::{
    code_for, frame, http_for, is_grpc, is_plain_new_message, metadata, only_message, status_in,
    status_trailers, take_frames, task_id_in_path, GrpcCall, Method, SERVICE_PATH,
};
use crate::front::join::{event_end, frames_body};
use crate::front::limits::{Capped, Timed};
use crate::front::operations::Binding;
use crate::front::upstream::own_call_headers;

/// A gRPC call as the front read it.
pub(super) enum GrpcRead {
    /// Answered at the edge (refused, malformed, or passed to the agent as it came).
    Answered(Response<Body>),
    /// The HTTP+JSON request the call amounts to, for the server to dispatch; its
    /// answer goes back through [`grpc_answer`] with `method`.
    Dispatch {
        request: Request<Body>,
        path: String,
        http_method: hyper::Method,
        method: Method,
    },
}

/// The status an agent's gRPC answer ended with (its `grpc-status`, `grpc-message`
/// and `grpc-status-details-bin`), kept on the JSON answer made of it so that the
/// client gets it unchanged.
#[derive(Clone, Debug)]
struct AgentStatus(HeaderMap);

/// A gRPC status answer of the front's own.
fn status_answer(code: Code, message: &str) -> Response<Body> {
    let mut answer = crate::front::grpc::status_answer(code, message);
    answer.extensions_mut().insert(FrontAnswered);
    answer
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

/// The agent could not be reached: UNAVAILABLE (DEADLINE_EXCEEDED past the timeout).
fn grpc_failed(message: &str, error: &crate::front::upstream::UpstreamError) -> Response<Body> {
    let code = match error {
        crate::front::upstream::UpstreamError::Timeout(..) => Code::DeadlineExceeded,
        crate::front::upstream::UpstreamError::Unreachable(..)
        | crate::front::upstream::UpstreamError::Unreadable(..) => Code::Unavailable,
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
    let mut answer = Response::new(frames_body(rx));
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
pub(super) async fn grpc_answer(method: Method, answer: Response<Body>) -> Response<Body> {
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
                let data = a2a::sse_data(&event);
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
    with_parts(frames_body(rx), HeaderMap::new())
}

/// The agent's gRPC origin: `--front-upstream-grpc`, or its card's gRPC interface
/// when that is on the agent's own host (never another: the front forwards to its
/// one upstream only).
pub(super) async fn grpc_upstream(ctx: &Context) -> Option<String> {
    if let Some(configured) = &ctx.options.upstream_grpc {
        return Some(format!("http://{configured}"));
    }
    let mut cache = ctx.card.lock().await;
    if cache.last().is_none() {
        refresh_card(ctx, &mut cache, &HeaderMap::new()).await;
    }
    cache
        .last()
        .and_then(|card| card::grpc_address(card, ctx.upstream.base()))
        .map(|address| format!("http://{address}"))
}

/// A gRPC call to the front: one it reads goes through the front's JSON logic as
/// the HTTP+JSON request it amounts to, and its answer is written back in gRPC;
/// any other passes to the agent as it came.
pub(super) async fn grpc_call(ctx: &Context, request: Request<Body>) -> GrpcRead {
    let Some(agent) = grpc_upstream(ctx).await else {
        return GrpcRead::Answered(status_answer(
            Code::Unimplemented,
            "the agent serves no gRPC interface the front reaches (see --front-upstream-grpc)",
        ));
    };
    let Some(method) = Method::from_path(request.uri().path()) else {
        return GrpcRead::Answered(grpc_pass(ctx, request, &agent).await);
    };
    let (parts, body) = request.into_parts();
    let max = ctx.options.max_body_bytes;
    let bytes = match http_body_util::Limited::new(body, max).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return GrpcRead::Answered(status_answer(
                Code::ResourceExhausted,
                &format!(
                    "the request is over the front's limit of {max} bytes; nothing was forwarded"
                ),
            ))
        }
    };
    if let Some(why) = crate::front::grpc::malformed(&bytes) {
        return GrpcRead::Answered(status_answer(Code::Internal, &why));
    }
    // Compressed, not one message, or a message too large to be a command: the
    // agent reads it, as it came.
    let readable = only_message(&bytes).filter(|message| {
        !matches!(method, Method::SendMessage | Method::SendStreamingMessage)
            || message.len() <= a2a::PRECHECK_MAX_BYTES
    });
    let Some(message) = readable else {
        let request = Request::from_parts(parts, Body::from(bytes));
        return GrpcRead::Answered(grpc_pass(ctx, request, &agent).await);
    };
    // The hot path: a message that cannot be a command and names no task (so no
    // record of the front's can concern it) passes as it came, never converted.
    if matches!(method, Method::SendMessage | Method::SendStreamingMessage)
        && is_plain_new_message(message)
    {
        let request = Request::from_parts(parts, Body::from(bytes));
        return GrpcRead::Answered(grpc_pass(ctx, request, &agent).await);
    }
    let request_json = match method.request_json(message) {
        Ok(json) => json,
        Err(why) => return GrpcRead::Answered(status_answer(Code::InvalidArgument, &why)),
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
    let path = path.split('?').next().unwrap_or_default().to_owned();
    GrpcRead::Dispatch {
        request: internal,
        path,
        http_method,
        method,
    }
}

/// A gRPC call the front does not read: to the agent's gRPC interface as it came,
/// its answer streamed back message by message with its trailers.
pub(super) async fn grpc_pass(
    ctx: &Context,
    request: Request<Body>,
    agent: &str,
) -> Response<Body> {
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = match format!("{agent}{path}").parse() {
        Ok(uri) => uri,
        Err(_) => return status_answer(Code::Internal, "cannot name the agent's gRPC path"),
    };
    // A call the front does not read is still cut at the body limit, and its answer
    // ended when the agent stops sending.
    let max = ctx.options.max_body_bytes;
    let crossed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let body = Body::new(Capped::new(body, max, std::sync::Arc::clone(&crossed)));
    match ctx
        .upstream
        .send_grpc(Request::from_parts(parts, body))
        .await
    {
        Ok(answer) => {
            let (parts, body) = answer.into_parts();
            let body = Body::new(Timed::new(body, ctx.options.stream_idle));
            Response::from_parts(parts, body)
        }
        Err(_) if crossed.load(std::sync::atomic::Ordering::Relaxed) => status_answer(
            Code::ResourceExhausted,
            &format!("the request is over the front's limit of {max} bytes"),
        ),
        Err(error) => grpc_failed(&error.to_string(), &error),
    }
}

/// A forward of a gRPC call the front read (its JSON, perhaps rewritten): to the
/// agent's gRPC interface, and its answer as the JSON logic reads answers.
pub(super) async fn forward_grpc(ctx: &Context, request: Request<Body>) -> Response<Body> {
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
    match ctx.upstream.send_grpc(upstream).await {
        Ok(answer) => json_of_grpc(call.method, answer, ctx.options.max_body_bytes).await,
        Err(error) => upstream_failed(Binding::Grpc, &Value::Null, &error),
    }
}

/// The agent's task `task_id`, asked over gRPC with the caller's credentials; `Err`
/// as [`Front::upstream_task`]'s (the agent's own error, for the client).
pub(super) async fn grpc_task(
    ctx: &Context,
    headers: &HeaderMap,
    task_id: &str,
) -> Result<Value, Option<Response<Body>>> {
    let Some(agent) = grpc_upstream(ctx).await else {
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
    let answer = ctx
        .upstream
        .send_grpc(asked)
        .await
        .map_err(|e| Some(upstream_failed(Binding::Grpc, &Value::Null, &e)))?;
    let answer = json_of_grpc(Method::GetTask, answer, ctx.options.max_body_bytes).await;
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
