//! A call's request message must arrive in time: from the moment the call begins, its
//! first message (the 5-byte prefix and the bytes it announces) has the read timeout to
//! arrive, or the call fails DEADLINE_EXCEEDED and gives back what it held. This bounds
//! how long a slow or stalled client can keep a stream (and a share of the request
//! budget) with a message it never finishes. Later messages of a streaming call are not
//! bounded by it.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tonic::codegen::{http, Bytes, Service};

/// The gRPC message prefix: a compressed flag and a 4-byte length.
pub const PREFIX: usize = 5;

/// Bounds the wait for each call's first message by `timeout` (none: unbounded).
#[derive(Clone, Copy, Debug)]
pub struct ReadDeadlineLayer {
    timeout: Option<Duration>,
}

impl ReadDeadlineLayer {
    /// A layer whose calls have `timeout` to receive their first message.
    pub fn new(timeout: Option<Duration>) -> Self {
        Self { timeout }
    }
}

impl<S> tower_layer::Layer<S> for ReadDeadlineLayer {
    type Service = ReadDeadline<S>;

    fn layer(&self, inner: S) -> ReadDeadline<S> {
        ReadDeadline {
            inner,
            timeout: self.timeout,
        }
    }
}

/// See [`ReadDeadlineLayer`].
#[derive(Clone, Debug)]
pub struct ReadDeadline<S> {
    inner: S,
    timeout: Option<Duration>,
}

/// The body is wrapped, not boxed: the next layer boxes it once.
impl<S, B> Service<http::Request<B>> for ReadDeadline<S>
where
    S: Service<http::Request<Deadline<B>>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> S::Future {
        let read_by = self.timeout.map(|timeout| Instant::now() + timeout);
        self.inner.call(request.map(|body| Deadline {
            body,
            read_by,
            prefix: [0; PREFIX],
            received: 0,
            timer: None,
        }))
    }
}

/// A request body whose first message must arrive by `read_by` (if there is one).
pub struct Deadline<B> {
    body: B,
    /// `None` once the first message is whole (or the body ended).
    read_by: Option<Instant>,
    /// The first message's prefix, as far as it has arrived.
    prefix: [u8; PREFIX],
    /// Bytes received so far.
    received: usize,
    /// Armed only when the body has nothing to give: most requests arrive whole.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> Deadline<B> {
    /// Takes note of `data`; ends the deadline once the first message is whole.
    fn take_note_of(&mut self, data: &Bytes) {
        if self.received < PREFIX {
            let take = (PREFIX - self.received).min(data.len());
            self.prefix[self.received..self.received + take].copy_from_slice(&data[..take]);
        }
        self.received += data.len();
        if self.received >= PREFIX {
            let length = u32::from_be_bytes(self.prefix[1..].try_into().expect("4 bytes"));
            if self.received >= PREFIX + length as usize {
                self.read_by = None;
            }
        }
    }
}

impl<B> http_body::Body for Deadline<B>
where
    B: http_body::Body<Data = Bytes, Error = tonic::Status> + Unpin,
{
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, tonic::Status>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) if self.read_by.is_some() => {
                if let Some(data) = frame.data_ref() {
                    self.take_note_of(data);
                }
                return polled;
            }
            Poll::Ready(None) => {
                self.read_by = None;
                return polled;
            }
            Poll::Ready(_) => return polled,
            Poll::Pending => {}
        }
        let Some(read_by) = self.read_by else {
            return Poll::Pending;
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(read_by)));
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.read_by = None;
        self.timer = None;
        Poll::Ready(Some(Err(tonic::Status::deadline_exceeded(
            "the request's message did not arrive in time (--request-read-timeout-seconds)",
        ))))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;

    fn deadline() -> Deadline<tonic::body::Body> {
        Deadline {
            body: tonic::body::Body::empty(),
            read_by: Some(Instant::now()),
            prefix: [0; PREFIX],
            received: 0,
            timer: None,
        }
    }

    #[test]
    fn the_deadline_ends_when_the_first_message_is_whole_even_if_its_prefix_is_split() {
        let mut body = deadline();
        body.take_note_of(&Bytes::from_static(&[0, 0, 0]));
        body.take_note_of(&Bytes::from_static(&[0, 3, b'a']));
        assert!(body.read_by.is_some(), "two of three bytes are here");
        body.take_note_of(&Bytes::from_static(b"bc"));
        assert!(body.read_by.is_none(), "the message is whole");
    }

    #[test]
    fn an_empty_message_is_whole_with_its_prefix() {
        let mut body = deadline();
        body.take_note_of(&Bytes::from_static(&[0, 0, 0, 0, 0]));
        assert!(body.read_by.is_none());
        assert!(body.is_end_stream(), "the empty body has ended");
    }
}
