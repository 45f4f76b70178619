//! The answers the front makes itself, in each binding's shape: JSON and event
//! streams, and every refusal (an error of the front's, an agent that failed, a caller
//! not authenticated) written the binding's way, here and nowhere else.

use axum::body::Body;
use http_body_util::BodyExt as _;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use crate::error::Error;
use crate::front::a2a;
use crate::front::callers::Refused;
use crate::front::context::Context;
use crate::front::json_text;
use crate::front::limits::Fault;
use crate::front::operations::{is_http_json, Binding};
use crate::front::upstream::UpstreamError;
use crate::front::v03;
use crate::http1::head::{Answer, Request};

/// The answer when the front's records cannot be read or written: nothing was done.
pub(super) fn records_failed(binding: Binding, id: &Value, error: &Error) -> Answer {
    error_answer(
        binding,
        id,
        StatusCode::SERVICE_UNAVAILABLE,
        a2a::INTERNAL_ERROR,
        &format!("the front's task records are unavailable right now: {error}"),
    )
}

/// A JSON-RPC error answer of the front's, with the id of the request it answers
/// (`request`, read only now that it failed).
pub(super) async fn with_request_id(answer: Answer, request: &[u8]) -> Answer {
    let Some(id) = serde_json::from_slice::<Value>(request)
        .ok()
        .and_then(|body| body.get("id").cloned())
    else {
        return answer;
    };
    let (mut parts, body) = answer.into_parts();
    let Ok(collected) = body.collect().await else {
        return Answer::from_parts(parts, Body::empty());
    };
    let bytes = collected.to_bytes();
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut value) if value.get("error").is_some() => {
            value["id"] = id;
            parts.headers.remove(header::CONTENT_LENGTH);
            Answer::from_parts(parts, Body::from(json_text::write(&value)))
        }
        _ => Answer::from_parts(parts, Body::from(bytes)),
    }
}

/// Whose an answer is, for the metrics and the span: the one mark an answer carries
/// (none: the agent's, passed on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The front made it.
    Answered,
    /// The agent could not take the request.
    UpstreamFailed,
}

/// Marks `answer` as `outcome`'s.
pub(super) fn mark(answer: &mut Answer, outcome: Outcome) {
    answer.extensions_mut().insert(outcome);
}

/// What `answer` was marked, if anything.
pub(super) fn outcome(answer: &Answer) -> Option<Outcome> {
    answer.extensions().get::<Outcome>().copied()
}

/// A JSON answer the front made.
pub(super) fn json_answer(status: StatusCode, body: &Value) -> Answer {
    json_text_answer(status, json_text::write(body))
}

/// An answer of the front's own whose JSON is already written.
pub(super) fn json_text_answer(status: StatusCode, json: Vec<u8>) -> Answer {
    let mut answer = typed(status, "application/json", Body::from(json));
    mark(&mut answer, Outcome::Answered);
    answer
}

/// A stream of `events` as server-sent events, each JSON-RPC-wrapped on that binding.
pub(super) fn stream_answer(binding: Binding, id: &Value, events: &[Value]) -> Answer {
    let mut text = String::new();
    for event in events {
        let data = match binding {
            Binding::JsonRpc => a2a::rpc_result(id, event.clone()),
            Binding::JsonRpc03 => a2a::rpc_result(id, v03::result_v03(event)),
            Binding::HttpJson | Binding::Grpc => event.clone(),
        };
        text.push_str(&a2a::sse_event(&data));
    }
    let mut answer = typed(StatusCode::OK, "text/event-stream", Body::from(text));
    answer
        .headers_mut()
        .append(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    mark(&mut answer, Outcome::Answered);
    answer
}

/// The binding's error: JSON-RPC's error object (HTTP 200), or an HTTP status with an
/// AIP-193 error body.
pub(super) fn error_answer(
    binding: Binding,
    id: &Value,
    status: StatusCode,
    code: i64,
    message: &str,
) -> Answer {
    match binding {
        Binding::JsonRpc | Binding::JsonRpc03 => {
            json_answer(StatusCode::OK, &a2a::rpc_error(id, code, message))
        }
        Binding::HttpJson | Binding::Grpc => {
            let mut answer = rest_error(status, message);
            mark(&mut answer, Outcome::Answered);
            answer
        }
    }
}

/// A2A's VersionNotSupportedError for a request that named version `named` (one the
/// front serves neither as 0.3 nor as 1.x), in its binding's shape: JSON-RPC's error
/// -32009 under the call's id; gRPC's `FAILED_PRECONDITION`; otherwise HTTP+JSON's 400
/// with reason `VERSION_NOT_SUPPORTED`, as the SDKs map it.
pub(super) async fn version_not_supported(
    ctx: &Context,
    request: Request,
    grpc: bool,
    named: &str,
) -> Answer {
    let message =
        format!("A2A version {named:?} is not supported here: the front serves 0.3 and 1.x");
    let mut answer = if grpc {
        crate::front::grpc::status_answer(tonic::Code::FailedPrecondition, &message)
    } else if request.method() == Method::POST
        && !is_http_json(request.method(), request.uri().path())
    {
        let limited =
            http_body_util::Limited::new(request.into_parts().1, ctx.options.max_body_bytes);
        let body = limited
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let id = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|call| call.get("id").cloned())
            .unwrap_or(Value::Null);
        json_answer(
            StatusCode::OK,
            &a2a::rpc_error(&id, a2a::VERSION_NOT_SUPPORTED, &message),
        )
    } else {
        let body = json!({"error": {"code": 400, "status": "FAILED_PRECONDITION", "message": message,
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                         "reason": "VERSION_NOT_SUPPORTED", "domain": "a2a-protocol.org"}]}});
        typed(
            StatusCode::BAD_REQUEST,
            "application/json",
            Body::from(json_text::write(&body)),
        )
    };
    mark(&mut answer, Outcome::Answered);
    answer
}

/// HTTP+JSON's error answer: `status` with an AIP-193 body saying `message` (also what
/// the front's gRPC conversion makes of an agent's gRPC error); the one place its body
/// is written.
pub(super) fn rest_error(status: StatusCode, message: &str) -> Answer {
    let body = json!({"error": {"code": status.as_u16(), "status": status.canonical_reason(),
                                "message": message}});
    typed(
        status,
        "application/json",
        Body::from(json_text::write(&body)),
    )
}

/// An answer of `status` whose body is of `content_type`.
pub(super) fn typed(status: StatusCode, content_type: &'static str, body: Body) -> Answer {
    let mut answer = Answer::new(body);
    *answer.status_mut() = status;
    answer
        .headers_mut()
        .append(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    answer
}

/// The answer to a request whose caller is not authenticated: 401 on either binding,
/// with RFC 6750's challenge; nothing was forwarded.
pub(super) fn unauthenticated(method: &Method, path: &str, refused: &Refused) -> Answer {
    let binding = if is_http_json(method, path) {
        Binding::HttpJson
    } else {
        Binding::JsonRpc
    };
    let (status, challenge) = match refused {
        Refused::NoKeys(_) => (StatusCode::SERVICE_UNAVAILABLE, None),
        Refused::Missing => (StatusCode::UNAUTHORIZED, Some("Bearer")),
        Refused::Invalid(_) => (
            StatusCode::UNAUTHORIZED,
            Some("Bearer error=\"invalid_token\""),
        ),
    };
    let mut answer = error_answer(
        binding,
        &Value::Null,
        status,
        a2a::INVALID_REQUEST,
        &refused.to_string(),
    );
    *answer.status_mut() = status;
    if let Some(challenge) = challenge {
        answer.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
    }
    mark(&mut answer, Outcome::Answered);
    answer
}

/// The answer when the agent could not be reached in time: 504 for a timeout, 502
/// otherwise (JSON-RPC: an error naming the agent).
pub(super) fn upstream_failed(binding: Binding, id: &Value, error: &UpstreamError) -> Answer {
    let status = match error {
        UpstreamError::Timeout(..) => StatusCode::GATEWAY_TIMEOUT,
        UpstreamError::Unreachable(..) | UpstreamError::Unreadable(..) => StatusCode::BAD_GATEWAY,
    };
    // JSON-RPC's error object, here with the HTTP status too: the agent failed.
    let mut answer = error_answer(binding, id, status, a2a::INTERNAL_ERROR, &error.to_string());
    *answer.status_mut() = status;
    mark(&mut answer, Outcome::UpstreamFailed);
    answer
}

/// The answer to a request whose body could not be read or passed on whole: the
/// status its fault deserves (413, 400, 408), in the binding's error shape, and the
/// connection closed after it, since the rest of what it sent cannot be trusted to be
/// framed as it says. `forwarded`: whether part of the body reached the agent before
/// it failed (a body of unknown length is passed on as it comes, and cut there).
pub(super) fn body_failed(
    ctx: &Context,
    binding: Binding,
    fault: Fault,
    forwarded: bool,
) -> Answer {
    let limit = ctx.options.max_body_bytes;
    let (status, message) = match fault {
        Fault::TooLarge if forwarded => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over the front's limit of {limit} bytes; the agent received it cut short at the limit"),
        ),
        Fault::TooLarge => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over the front's limit of {limit} bytes; nothing was forwarded"),
        ),
        Fault::Malformed => (
            StatusCode::BAD_REQUEST,
            "the request body's chunked framing is malformed".to_owned(),
        ),
        Fault::Cut => (
            StatusCode::BAD_REQUEST,
            "the request body ended before it was whole".to_owned(),
        ),
        Fault::TooSlow => (
            StatusCode::REQUEST_TIMEOUT,
            "the request body stopped arriving (--request-read-timeout-seconds)".to_owned(),
        ),
    };
    // A transport's failure, so its HTTP status even on JSON-RPC (as an agent's is).
    let mut answer = error_answer(
        binding,
        &Value::Null,
        status,
        a2a::INVALID_REQUEST,
        &message,
    );
    *answer.status_mut() = status;
    answer
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    mark(&mut answer, Outcome::Answered);
    answer
}

/// The answer when the command could not be run at all (no registry yet).
pub(super) fn run_failed(_ctx: &Context, binding: Binding, id: &Value, error: &Error) -> Answer {
    error_answer(
        binding,
        id,
        StatusCode::SERVICE_UNAVAILABLE,
        a2a::INTERNAL_ERROR,
        &format!("commands are unavailable right now: {error}"),
    )
}
