//! The front's gRPC edge (see `grpc` for the binding's wire): a call it reads becomes
//! the HTTP+JSON request it amounts to, for the server to dispatch like any other, and
//! the answer is written back in gRPC ([`grpc_answer`]); its forwards speak gRPC to the
//! agent; any other call passes as bytes with its trailers.

use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;
use http_body_util::BodyExt as _;
use hyper::header::{self, HeaderName, HeaderValue};
use serde_json::Value;
use tonic::Code;

use crate::front::a2a;
use crate::front::callers::Verified;
use crate::front::context::Context;
use crate::front::grpc::{
    code_for, frame, is_plain_new_message, only_message, status_in, status_trailers, GrpcCall,
    Method,
};
use crate::front::grpc_agent::{grpc_pass, grpc_upstream, status_answer, AgentStatus};
use crate::front::join::{event_end, frames_body};
use crate::front::json_text;
use crate::http1::head::{Answer, Headers, Request};
use crate::http1::token::same_name;

/// A gRPC call as the front read it.
pub(super) enum GrpcRead {
    /// Answered at the edge (refused, malformed, or passed to the agent as it came).
    Answered(Answer),
    /// The HTTP+JSON request the call amounts to, for the server to dispatch; its
    /// answer goes back through [`grpc_answer`] with `method`.
    Dispatch {
        request: Request,
        path: String,
        http_method: hyper::Method,
        method: Method,
    },
}

/// The front's JSON answer to a gRPC call, written back in gRPC: the agent's status
/// unchanged when it ended in one; the front's own errors as their gRPC codes; a JSON
/// answer as one message; server-sent events as one message each; OK (or the agent's
/// trailers) at the end.
pub(super) async fn grpc_answer(method: Method, answer: Answer) -> Answer {
    let (parts, body) = answer.into_parts();
    let with_parts = |body: Body, extra: Headers| {
        let mut answer = Answer::new(body);
        answer.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        answer.headers_mut().extend(extra);
        if let Some(echo) = parts.headers.get("a2a-extensions") {
            answer
                .headers_mut()
                .insert(HeaderName::from_static("a2a-extensions"), echo.clone());
        }
        *answer.extensions_mut() = parts.extensions.clone();
        answer
    };
    if let Some(AgentStatus(status)) = parts.extensions.get::<AgentStatus>() {
        return with_parts(Body::empty(), status.clone());
    }
    if let Some(status) = status_in(parts.headers.get("grpc-status")) {
        // Already gRPC (the agent could not be reached): as it is.
        let mut trailers = Headers::new();
        trailers.insert(
            HeaderName::from_static("grpc-status"),
            HeaderValue::from(status),
        );
        if let Some(message) = parts.headers.get("grpc-message") {
            trailers.insert(HeaderName::from_static("grpc-message"), message.clone());
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
            status_trailers(code_for(parts.status), message).into(),
        );
    }
    if !streaming {
        let Ok(collected) = body.collect().await else {
            return with_parts(
                Body::empty(),
                status_trailers(Code::Unavailable, "the answer broke off").into(),
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
                    Headers::new(),
                )
            }
            Err(why) => with_parts(
                Body::empty(),
                status_trailers(
                    Code::Internal,
                    &format!("the front could not write its answer: {why}"),
                )
                .into(),
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
    with_parts(frames_body(rx), Headers::new())
}

/// A gRPC call to the front: one it reads goes through the front's JSON logic as
/// the HTTP+JSON request it amounts to, and its answer is written back in gRPC;
/// any other passes to the agent as it came.
pub(super) async fn grpc_call(ctx: &Context, request: Request) -> GrpcRead {
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
        Body::from(json_text::write(&body))
    };
    let mut headers: Headers = parts.headers.clone();
    headers.retain(|name, _| {
        !["content-type", "content-length", "te"]
            .iter()
            .any(|framing| same_name(name, framing.as_bytes()))
    });
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let uri = path.parse().expect("a valid path");
    let mut internal = Request::new(http_method.clone(), uri, headers, body);
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
