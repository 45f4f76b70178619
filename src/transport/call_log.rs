//! The one log line per call: method, status code, latency, command name and, for
//! Execute, the outcome and the caller's trace id. Message text and arguments are never
//! logged, since they may carry secrets.

use std::time::Instant;

use tonic::{Code, Response, Status};

use crate::error::Error;
use crate::transport::status::code;

/// Logs the call's one line: method, status code, latency and command name.
pub(crate) fn log_call<T>(
    method: &'static str,
    started: Instant,
    result: &Result<T, Error>,
    command: &str,
    outcome: &str,
    trace_id: &str,
) {
    let code = result.as_ref().map_or_else(code, |_| Code::Ok);
    tracing::info!(
        method,
        code = ?code,
        latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        command,
        outcome,
        trace_id,
        "call"
    );
}

/// Logs the call's one line and wraps the answer.
pub(crate) fn logged<T>(
    method: &'static str,
    started: Instant,
    command: &str,
    result: Result<T, Error>,
) -> Result<Response<T>, Status> {
    log_call(method, started, &result, command, "", "");
    result.map(Response::new).map_err(Status::from)
}
