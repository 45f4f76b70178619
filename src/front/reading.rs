//! Reading an answer of the agent's whole, for the front to look into: within the
//! body limit, and `--front-timeout-ms` between its parts.

use axum::body::Body;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::StatusCode;
use serde_json::Value;

use crate::front::answer::upstream_failed;
use crate::front::context::Context;
use crate::front::limits::Timed;
use crate::front::operations::Binding;
use crate::front::upstream::{self as agent, UpstreamError};
use crate::http1::head::{Answer, AnswerParts};

/// A whole 200 answer of the agent's, read (within the body limit) and parsed; any
/// other answer, or one that is not JSON, comes back as it was, to pass on.
pub(super) async fn read_json(
    ctx: &Context,
    answer: Answer,
    binding: Binding,
) -> Result<(AnswerParts, Bytes, Value), Answer> {
    if answer.status() != StatusCode::OK {
        return Err(answer);
    }
    let (parts, body) = answer.into_parts();
    if agent::encoding(&parts.headers).is_some() {
        // Asked for identity, encoded all the same: passed on unread.
        return Err(Answer::from_parts(parts, body));
    }
    let bytes = match read_whole(ctx, body).await {
        Ok(bytes) => bytes,
        Err(error) => return Err(upstream_failed(binding, &Value::Null, &error)),
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(value) => Ok((parts, bytes, value)),
        _ => Err(Answer::from_parts(parts, Body::from(bytes))),
    }
}

/// A whole answer body of the agent's, within the body limit and
/// `--front-timeout-ms` between its parts.
pub(super) async fn read_whole(ctx: &Context, body: Body) -> Result<Bytes, UpstreamError> {
    let timed = Timed::new(body, ctx.options.timeout);
    let limited = http_body_util::Limited::new(timed, ctx.options.max_body_bytes);
    limited.collect().await.map(|c| c.to_bytes()).map_err(|e| {
        UpstreamError::Unreachable(
            ctx.upstream.base().to_string(),
            format!("its answer broke off, stalled, or was over the body limit ({e})"),
        )
    })
}
