//! The caller's deadline (`grpc-timeout`): a call still unanswered when it passes is
//! answered DEADLINE_EXCEEDED, and a streamed answer still open then ends with that
//! status, as gRPC's status codes say. tonic has its own timer for the header, but
//! answers CANCELLED ("Timeout expired") and never ends a stream; this layer sits inside
//! it and its timer is set first, so it always answers before tonic's would.
//!
//! The deadline is also put on the request ([`CallDeadline`]), so that a method can
//! shorten what it waits for (Execute's handler calls) to what is left.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tonic::codegen::{http, Service};

/// When the caller stops waiting for this call (from its `grpc-timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallDeadline(pub Instant);

impl CallDeadline {
    /// The deadline of a call with these headers, if its caller set one.
    pub fn of(headers: &http::HeaderMap) -> Option<Self> {
        let timeout = parse_grpc_timeout(headers.get("grpc-timeout")?.as_bytes())?;
        Some(Self(Instant::now().checked_add(timeout)?))
    }

    /// What is left of it now.
    pub fn left(&self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }
}

/// `grpc-timeout`'s value (at most 8 digits and a unit: H, M, S, m, u, n); `None` when
/// it is malformed, which gRPC says to treat as no deadline.
pub fn parse_grpc_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The status of a call whose deadline passed in the server.
fn expired() -> tonic::Status {
    tonic::Status::deadline_exceeded(
        "the call's deadline (grpc-timeout) passed before the server finished it",
    )
}

/// Answers DEADLINE_EXCEEDED for calls whose deadline passes (see the module).
#[derive(Clone, Copy, Debug, Default)]
pub struct DeadlineLayer;

impl<S> tower_layer::Layer<S> for DeadlineLayer {
    type Service = Deadlines<S>;

    fn layer(&self, inner: S) -> Deadlines<S> {
        Deadlines { inner }
    }
}

/// See [`DeadlineLayer`].
#[derive(Clone, Debug)]
pub struct Deadlines<S> {
    inner: S,
}

impl<S, B> Service<http::Request<B>> for Deadlines<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Expiring<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        // Most calls carry no deadline and pay for nothing here.
        let timer = CallDeadline::of(request.headers()).map(|deadline| {
            request.extensions_mut().insert(deadline);
            Box::pin(tokio::time::sleep_until(deadline.0))
        });
        Expiring {
            inner: self.inner.call(request),
            timer,
        }
    }
}

pin_project_lite::pin_project! {
    /// A call's answer, raced against its deadline.
    pub struct Expiring<F> {
        #[pin]
        inner: F,
        timer: Option<Pin<Box<Sleep>>>,
    }
}

impl<F, E> Future for Expiring<F>
where
    F: Future<Output = Result<http::Response<tonic::body::Body>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if let Poll::Ready(answer) = this.inner.poll(cx) {
            return Poll::Ready(answer.map(|answer| match this.timer.take() {
                // The answer started in time; a stream must still end by the deadline.
                Some(timer) => answer.map(|body| {
                    tonic::body::Body::new(ExpiringBody {
                        body,
                        timer: Some(timer),
                    })
                }),
                None => answer,
            }));
        }
        let Some(timer) = this.timer.as_mut() else {
            return Poll::Pending;
        };
        ready!(timer.as_mut().poll(cx));
        // Dropping the call (with this future) stops its work.
        this.timer.take();
        Poll::Ready(Ok(expired().into_http()))
    }
}

/// An answer's body that ends with DEADLINE_EXCEEDED if it is still open at the deadline.
struct ExpiringBody {
    body: tonic::body::Body,
    /// `None` once the deadline passed (the trailers were given) or the body ended.
    timer: Option<Pin<Box<Sleep>>>,
}

impl http_body::Body for ExpiringBody {
    type Data = tonic::codegen::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.timer.is_none() {
            // Ended, or the deadline's trailers were given: nothing more is sent.
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.body).poll_frame(cx) {
            Poll::Ready(None) => {
                self.timer = None;
                return Poll::Ready(None);
            }
            Poll::Ready(frame) => return Poll::Ready(frame),
            Poll::Pending => {}
        }
        let timer = self.timer.as_mut().expect("checked above");
        ready!(timer.as_mut().poll(cx));
        self.timer = None;
        let mut trailers = http::HeaderMap::new();
        let status = expired();
        if status.add_header(&mut trailers).is_err() {
            return Poll::Ready(Some(Err(status)));
        }
        Poll::Ready(Some(Ok(http_body::Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.timer.is_none() || self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_values_parse_as_the_spec_writes_them() {
        assert_eq!(parse_grpc_timeout(b"1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout(b"2M"), Some(Duration::from_secs(120)));
        assert_eq!(parse_grpc_timeout(b"10S"), Some(Duration::from_secs(10)));
        assert_eq!(
            parse_grpc_timeout(b"250m"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_grpc_timeout(b"99999999u"),
            Some(Duration::from_micros(99_999_999))
        );
        assert_eq!(parse_grpc_timeout(b"5n"), Some(Duration::from_nanos(5)));
        for bad in [
            &b""[..],
            b"S",
            b"123456789S",
            b"10s",
            b"-1S",
            b"1.5S",
            b" 1S",
        ] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
    }
}
