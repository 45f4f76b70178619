//! The one log line per call: method, status code, latency, command name and, for
//! Execute, the outcome and the caller's trace id. Message text and arguments are never
//! logged, since they may carry secrets.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tonic::{Code, Response, Status};

use crate::error::Error;
use crate::metrics::metrics;
use crate::transport::status::code;

/// One in how many successful calls is logged (1: every call); set at start.
static SAMPLE: AtomicU64 = AtomicU64::new(1);
/// Successful calls so far, for sampling.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Logs one successful call in `every` (0 and 1: every call); failures always.
pub fn set_sample(every: u64) {
    SAMPLE.store(every.max(1), Ordering::Relaxed);
}

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
    let elapsed = started.elapsed();
    metrics().call(method, code_name(code), elapsed);
    // Successful calls may be sampled (--call-log-sample); a failure always has its line.
    let sample = SAMPLE.load(Ordering::Relaxed);
    if code == Code::Ok
        && sample > 1
        && !CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(sample)
    {
        return;
    }
    tracing::info!(
        method,
        code = ?code,
        latency_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        command,
        outcome,
        trace_id,
        "call"
    );
}

/// The canonical name of a gRPC code, as metrics label it.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
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
