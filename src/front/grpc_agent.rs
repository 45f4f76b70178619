//! The front's gRPC calls to the agent: a call it read forwarded as gRPC (its answer
//! turned into the JSON the front reasons in, the agent's status kept), a call it does
//! not read passed as bytes, the agent's task read, and the agent's gRPC address.

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body::Frame;
use http_body_util::BodyExt as _;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::StatusCode;
use serde_json::{json, Value};
use tonic::Code;

use crate::front::a2a;
use crate::front::answer::{mark, rest_error, upstream_failed, Outcome};
use crate::front::card;
use crate::front::card_serving::refresh_card;
use crate::front::context::Context;
use crate::front::grpc::{
    frame, http_for, is_grpc, metadata, only_message, status_in, status_trailers, take_frames,
    task_id_in_path, GrpcCall, Method, SERVICE_PATH,
};
use crate::front::join::frames_body;
use crate::front::json_text;
use crate::front::limits::{Capped, Fault, FaultCell, Timed};
use crate::front::operations::Binding;
use crate::front::upstream::own_call_headers;
use crate::http1::head::{Answer, Headers, Request};

/// The status an agent's gRPC answer ended with (its `grpc-status`, `grpc-message`
/// and `grpc-status-details-bin`), kept on the JSON answer made of it so that the
/// client gets it unchanged.
#[derive(Clone, Debug)]
pub(super) struct AgentStatus(pub(super) Headers);

/// A gRPC status answer of the front's own.
pub(super) fn status_answer(code: Code, message: &str) -> Answer {
    let mut answer = crate::front::grpc::status_answer(code, message);
    mark(&mut answer, Outcome::Answered);
    answer
}

/// An agent's gRPC error as the JSON logic sees one (an HTTP error with an AIP-193
/// body), its status kept for the client.
pub(super) fn agent_error(status: &Headers) -> Answer {
    let code = Code::from(status_in(status.get("grpc-status")).unwrap_or(Code::Unknown as i32));
    let message = status
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut kept = Headers::new();
    for name in ["grpc-status", "grpc-message", "grpc-status-details-bin"] {
        if let Some(value) = status.get(name) {
            kept.insert(HeaderName::from_static(name), value.clone());
        }
    }
    let mut answer = rest_error(http_for(code), &message);
    answer.extensions_mut().insert(AgentStatus(kept));
    answer
}

/// The agent could not be reached: UNAVAILABLE (DEADLINE_EXCEEDED past the timeout).
pub(super) fn grpc_failed(message: &str, error: &crate::front::upstream::UpstreamError) -> Answer {
    let code = match error {
        crate::front::upstream::UpstreamError::Timeout(..) => Code::DeadlineExceeded,
        crate::front::upstream::UpstreamError::Unreachable(..)
        | crate::front::upstream::UpstreamError::Unreadable(..) => Code::Unavailable,
    };
    let mut answer = status_answer(code, message);
    mark(&mut answer, Outcome::UpstreamFailed);
    answer
}

/// An agent's gRPC answer as the front's JSON logic reads answers: a unary one as its
/// JSON (200), a stream as server-sent events of JSON with the agent's trailers at the
/// end, an error as an HTTP error whose gRPC status is kept for the client.
pub(super) async fn json_of_grpc(method: Method, answer: Answer, max: usize) -> Answer {
    let (parts, body) = answer.into_parts();
    if status_in(parts.headers.get("grpc-status")).is_some_and(|code| code != 0) {
        return agent_error(&parts.headers);
    }
    if !parts.status.is_success() || !is_grpc(parts.headers.get(header::CONTENT_TYPE)) {
        return rest_error(
            StatusCode::BAD_GATEWAY,
            &format!("the agent's gRPC interface answered HTTP {}", parts.status),
        );
    }
    if !method.streams() {
        let Ok(collected) = http_body_util::Limited::new(body, max).collect().await else {
            return rest_error(
                StatusCode::BAD_GATEWAY,
                "the agent's answer broke off or was over the body limit",
            );
        };
        let trailers = collected.trailers().cloned().unwrap_or_default();
        if status_in(trailers.get("grpc-status")).is_some_and(|code| code != 0) {
            return agent_error(&Headers::from(trailers));
        }
        let bytes = collected.to_bytes();
        let json = only_message(&bytes).map(|message| method.answer_json(message));
        return match json {
            Some(Ok(json)) => {
                let mut answer = Answer::new(Body::from(json_text::write(&json)));
                answer.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                answer
            }
            _ => rest_error(
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
    let mut answer = Answer::new(frames_body(rx));
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    answer
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
        refresh_card(ctx, &mut cache, &Headers::new()).await;
    }
    cache
        .last()
        .and_then(|card| card::grpc_address(card, ctx.upstream.base()))
        .map(|address| format!("http://{address}"))
}

/// A gRPC call the front does not read: to the agent's gRPC interface as it came,
/// its answer streamed back message by message with its trailers.
pub(super) async fn grpc_pass(ctx: &Context, request: Request, agent: &str) -> Answer {
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = match format!("{agent}{path}").parse() {
        Ok(uri) => uri,
        Err(_) => return status_answer(Code::Internal, "cannot name the agent's gRPC path"),
    };
    // A call the front does not read is still cut at the body limit, and its answer
    // ended when the agent stops sending.
    let max = ctx.options.max_body_bytes;
    let fault = std::sync::Arc::new(FaultCell::default());
    let body = Body::new(Capped::new(body, max, std::sync::Arc::clone(&fault)));
    match ctx
        .upstream
        .send_grpc(Request::from_parts(parts, body))
        .await
    {
        Ok(answer) => {
            let (parts, body) = answer.into_parts();
            let body = Body::new(Timed::new(body, ctx.options.stream_idle));
            Answer::from_parts(parts, body)
        }
        Err(_) if fault.get() == Some(Fault::TooLarge) => status_answer(
            Code::ResourceExhausted,
            &format!("the request is over the front's limit of {max} bytes"),
        ),
        Err(error) => grpc_failed(&error.to_string(), &error),
    }
}

/// A forward of a gRPC call the front read (its JSON, perhaps rewritten): to the
/// agent's gRPC interface, and its answer as the JSON logic reads answers.
pub(super) async fn forward_grpc(ctx: &Context, request: Request) -> Answer {
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
                    return rest_error(
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
        Err(why) => return rest_error(StatusCode::BAD_REQUEST, &why),
    };
    let uri = format!("{}{SERVICE_PATH}{}", call.agent, call.method.name());
    let upstream = Request::new(
        hyper::Method::POST,
        uri.parse().expect("a valid URI"),
        metadata(&parts.headers),
        Body::from(frame(&message)),
    );
    match ctx.upstream.send_grpc(upstream).await {
        Ok(answer) => json_of_grpc(call.method, answer, ctx.options.max_body_bytes).await,
        Err(error) => upstream_failed(Binding::Grpc, &Value::Null, &error),
    }
}

/// The agent's task, asked over gRPC with the caller's credentials (`params`: its id
/// and tenant, as `GetTaskRequest`'s JSON); `Err` as `tasks::upstream_task`'s (the
/// agent's own error, for the client).
pub(super) async fn grpc_task(
    ctx: &Context,
    headers: &Headers,
    params: &Value,
) -> Result<Value, Option<Answer>> {
    let Some(agent) = grpc_upstream(ctx).await else {
        return Err(None);
    };
    let message = Method::GetTask.request_bytes(params).map_err(|_| None)?;
    let asked = Request::new(
        hyper::Method::POST,
        format!("{agent}{SERVICE_PATH}GetTask")
            .parse()
            .expect("a valid URI"),
        own_call_headers(headers, "application/grpc"),
        Body::from(frame(&message)),
    );
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
