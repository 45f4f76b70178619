//! Forwarding: a request handed to the agent within the body limit, its answer passed
//! back as it streams (a small one read whole, so that its head and body leave in one
//! write), never held open by an agent that stops sending.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use hyper::header::{self};
use serde_json::Value;

use crate::front::answer::body_failed;
use crate::front::answer::upstream_failed;
use crate::front::context::Context;
use crate::front::grpc::GrpcCall;
use crate::front::grpc_agent::forward_grpc;
use crate::front::limits::{self, read_to_end, Bound, Capped, Fault, FaultCell, Timed};
use crate::front::operations::Binding;
use crate::front::upstream::UpstreamError;
use crate::http1::framing;
use crate::http1::head::{Answer, Request};
use crate::metrics::metrics;

/// The largest answer of the agent's read whole before it is passed on (see
/// [`whole_if_small`]).
pub(super) const WHOLE_ANSWER_MAX_BYTES: usize = 16 << 10;

/// Hands `request` to the agent and streams its answer back.
pub(super) async fn forward(ctx: &Context, request: Request, binding: Option<Binding>) -> Answer {
    if request.extensions().get::<GrpcCall>().is_some() {
        return Box::pin(forward_grpc(ctx, request)).await;
    }
    let max = ctx.options.max_body_bytes;
    // A body read whole is within the limit already; any other is refused when its
    // declared length is over it, and cut at it otherwise.
    let within = http_body::Body::size_hint(request.body())
        .exact()
        .is_some_and(|n| n <= max as u64);
    let binding_or_rest = binding.unwrap_or(Binding::HttpJson);
    if !within && limits::declared_over(request.headers(), max) {
        return body_failed(ctx, binding_or_rest, Fault::TooLarge, false);
    }
    let (mut parts, body) = request.into_parts();
    parts.uri = ctx
        .upstream
        .map_uri(std::mem::take(&mut parts.uri), ctx.public.path());
    let mut fault = None;
    let body = if within {
        body
    } else {
        let cell = Arc::new(FaultCell::default());
        fault = Some(Arc::clone(&cell));
        Body::new(Capped::new(body, max, cell))
    };
    let started = Instant::now();
    match ctx.upstream.send(Request::from_parts(parts, body)).await {
        Ok(answer) => {
            metrics()
                .front
                .upstream_seconds
                .observe(started.elapsed().as_secs_f64());
            Box::pin(whole_if_small(ctx, answer, binding)).await
        }
        // The client's body failed, not the agent: said as what it is.
        Err(error) => match fault.and_then(|cell| cell.get()) {
            Some(fault) => body_failed(ctx, binding_or_rest, fault, true),
            None => upstream_failed(binding_or_rest, &Value::Null, &error),
        },
    }
}

/// A small answer of known length (not a stream) read whole, so that the client is
/// sent its head and body in one write: one packet and one wakeup where a head and
/// a body sent as they come would be two. Anything else passes as it arrives.
pub(super) async fn whole_if_small(
    ctx: &Context,
    answer: Answer,
    binding: Option<Binding>,
) -> Answer {
    let length = answer
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| framing::parse_length(v.as_bytes()));
    let streaming = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let (parts, body) = answer.into_parts();
    if streaming || length.is_none_or(|n| n > WHOLE_ANSWER_MAX_BYTES) {
        // Passed as it arrives, but never held open by an agent that stops sending.
        let gap = if streaming {
            ctx.options.stream_idle
        } else {
            ctx.options.timeout
        };
        return Answer::from_parts(parts, Body::new(Timed::new(body, gap)));
    }
    // Whole within the timeout (a timer only if it is not all there already).
    let timeout = ctx.options.timeout;
    match read_to_end(Timed::whole(body, timeout)).await {
        Ok(bytes) => Answer::from_parts(parts, Body::from(bytes)),
        Err(Bound::Stalled(_)) => upstream_failed(
            binding.unwrap_or(Binding::HttpJson),
            &Value::Null,
            &UpstreamError::Timeout(ctx.upstream.base().to_string(), timeout.as_millis()),
        ),
        Err(error) => upstream_failed(
            binding.unwrap_or(Binding::HttpJson),
            &Value::Null,
            &UpstreamError::Unreachable(ctx.upstream.base().to_string(), error.to_string()),
        ),
    }
}
