//! Bounds on the bodies that pass through the front, as a reverse proxy keeps them: a
//! request body never reaches the agent past the front's limit, whatever its method,
//! and an answer that stops arriving ends instead of holding its client.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use hyper::header;
use tokio::time::Instant;

use crate::http1::head::Headers;
use crate::http1::timer::KeptTimer;

/// A body's own error, whatever its type.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The error a bounded body ends with.
#[derive(Debug, thiserror::Error)]
pub enum Bound {
    /// The request body went past the limit.
    #[error("the request body is over the front's limit of {0} bytes")]
    TooLarge(usize),
    /// No part of the body arrived for this long.
    #[error("nothing more arrived for {} ms", .0.as_millis())]
    Stalled(Duration),
    /// The body itself failed (its error kept, so that [`fault_of`] can read it).
    #[error("{0}")]
    Broken(#[source] BoxError),
}

/// What went wrong with a request body as it was read: each is answered with its own
/// status, never as if the agent had failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Over the front's limit (413).
    TooLarge = 1,
    /// Its chunked framing is broken (400).
    Malformed = 2,
    /// It ended before its length, or its stream was reset (400).
    Cut = 3,
    /// It stopped arriving (408).
    TooSlow = 4,
}

/// What a request body's error was, read down its chain of sources: the front's own
/// bounds, `http_body_util`'s limit, and hyper's decoder (its errors are `io::Error`s:
/// `UnexpectedEof` for a body cut short, `InvalidInput`/`InvalidData` for bad chunks).
pub fn fault_of(error: &(dyn std::error::Error + 'static)) -> Fault {
    let mut at = Some(error);
    while let Some(error) = at {
        if error.is::<http_body_util::LengthLimitError>() {
            return Fault::TooLarge;
        }
        match error.downcast_ref::<Bound>() {
            Some(Bound::TooLarge(_)) => return Fault::TooLarge,
            Some(Bound::Stalled(_)) => return Fault::TooSlow,
            _ => {}
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => {
                    return Fault::Malformed
                }
                std::io::ErrorKind::TimedOut => return Fault::TooSlow,
                _ => {}
            }
        }
        at = error.source();
    }
    Fault::Cut
}

/// Where a forwarded body says what went wrong with it, for the answer to say.
#[derive(Debug, Default)]
pub struct FaultCell(std::sync::atomic::AtomicU8);

impl FaultCell {
    fn set(&self, fault: Fault) {
        self.0.store(fault as u8, Ordering::Relaxed);
    }

    /// The fault, once one has happened.
    pub fn get(&self) -> Option<Fault> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(Fault::TooLarge),
            2 => Some(Fault::Malformed),
            3 => Some(Fault::Cut),
            4 => Some(Fault::TooSlow),
            _ => None,
        }
    }
}

/// Whether a request's declared length (`Content-Length`) is over `max` already.
pub fn declared_over(headers: &Headers, max: usize) -> bool {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > max as u64)
}

/// A body read to its end, as one `Bytes`. A body of one frame (a request, a small
/// answer read with its head) is that frame: no list of frames kept, nothing copied.
pub async fn read_to_end<B>(mut body: B) -> Result<Bytes, B::Error>
where
    B: Body<Data = Bytes> + Unpin,
{
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    while !body.is_end_stream() {
        let Some(frame) = body.frame().await else {
            break;
        };
        let Ok(data) = frame?.into_data() else {
            continue; // Trailers: not part of the bytes.
        };
        match (&mut joined, first.take()) {
            (Some(joined), _) => joined.extend_from_slice(&data),
            (None, Some(before)) => {
                let mut both = BytesMut::with_capacity(before.len() + data.len());
                both.extend_from_slice(&before);
                both.extend_from_slice(&data);
                joined = Some(both);
            }
            (None, None) => first = Some(data),
        }
    }
    Ok(match (joined, first) {
        (Some(joined), _) => joined.freeze(),
        (None, first) => first.unwrap_or_default(),
    })
}

/// A request body cut at `max` bytes: past it, the body fails (so the agent never gets
/// a whole request over the limit); `fault` says why it failed, when it does.
pub struct Capped<B> {
    inner: B,
    left: usize,
    max: usize,
    fault: Arc<FaultCell>,
}

impl<B> Capped<B> {
    /// `inner`, cut at `max` bytes; `fault` is set when it fails.
    pub fn new(inner: B, max: usize, fault: Arc<FaultCell>) -> Self {
        Self {
            inner,
            left: max,
            max,
            fault,
        }
    }
}

impl<B> Body for Capped<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = Bound;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Bound>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if data.len() > this.left {
                        this.fault.set(Fault::TooLarge);
                        return Poll::Ready(Some(Err(Bound::TooLarge(this.max))));
                    }
                    this.left -= data.len();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => {
                let error = error.into();
                this.fault.set(fault_of(&*error));
                Poll::Ready(Some(Err(Bound::Broken(error))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An answer's body that fails when it stops arriving: a stalled agent ends the answer
/// (the client sees it broken off) rather than holding it open. The timer is made only
/// when the body is not ready, so a body that is already there (a small answer, in the
/// packet with its head) costs none; a stream's events each put its deadline off, and
/// the one timer follows (see [`KeptTimer`]: none made or moved per event).
pub struct Timed<B> {
    inner: B,
    gap: Duration,
    /// Whether a frame puts the deadline off again (a gap between parts), or the first
    /// wait sets a deadline for the whole body.
    per_frame: bool,
    /// Set by the first wait (after the last frame, per frame).
    deadline: Option<Instant>,
    timer: KeptTimer,
}

impl<B> Timed<B> {
    /// `inner`, each frame awaited at most `gap` after the last.
    pub fn new(inner: B, gap: Duration) -> Self {
        Self {
            inner,
            gap,
            per_frame: true,
            deadline: None,
            timer: KeptTimer::default(),
        }
    }

    /// `inner`, whole within `limit` of the first time it kept the reader waiting.
    pub fn whole(inner: B, limit: Duration) -> Self {
        Self {
            per_frame: false,
            ..Self::new(inner, limit)
        }
    }
}

impl<B> Body for Timed<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = Bound;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Bound>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if this.per_frame {
                    this.deadline = None;
                }
                Poll::Ready(frame.map(|f| f.map_err(|e| Bound::Broken(e.into()))))
            }
            Poll::Pending => {
                let gap = this.gap;
                let deadline = *this.deadline.get_or_insert_with(|| Instant::now() + gap);
                match this.timer.poll_passed(deadline, cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Bound::Stalled(gap)))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_past_the_limit_fails_and_says_so() {
        let fault = Arc::new(FaultCell::default());
        let body = Capped::new(
            http_body_util::Full::new(Bytes::from(vec![0u8; 11])),
            10,
            fault.clone(),
        );
        assert!(matches!(body.collect().await, Err(Bound::TooLarge(10))));
        assert_eq!(fault.get(), Some(Fault::TooLarge));
        let fault = Arc::new(FaultCell::default());
        let body = Capped::new(
            http_body_util::Full::new(Bytes::from(vec![0u8; 10])),
            10,
            fault.clone(),
        );
        assert_eq!(body.collect().await.unwrap().to_bytes().len(), 10);
        assert_eq!(fault.get(), None);
    }

    #[tokio::test]
    async fn a_body_s_fault_is_read_down_its_chain() {
        use std::io::{Error, ErrorKind};
        let boxed = |e: Error| -> BoxError { Box::new(e) };
        let over = http_body_util::Limited::new(http_body_util::Full::new(Bytes::from("ab")), 1)
            .collect()
            .await
            .unwrap_err();
        for (error, fault) in [
            (
                boxed(Error::new(ErrorKind::InvalidData, "bad chunk")),
                Fault::Malformed,
            ),
            (
                boxed(Error::new(ErrorKind::InvalidInput, "bad size")),
                Fault::Malformed,
            ),
            (
                boxed(Error::new(ErrorKind::UnexpectedEof, "cut")),
                Fault::Cut,
            ),
            (
                Box::new(Bound::Stalled(Duration::from_secs(1))) as BoxError,
                Fault::TooSlow,
            ),
            (over, Fault::TooLarge),
        ] {
            assert_eq!(fault_of(&*error), fault, "{error}");
            // Wrapped, as axum's body and the bounds wrap it: still found.
            let wrapped = Bound::Broken(Box::new(axum::Error::new(error)));
            assert_eq!(fault_of(&wrapped), fault);
        }
    }

    #[tokio::test]
    async fn a_body_is_read_to_its_end_in_one_piece() {
        let one = http_body_util::Full::new(Bytes::from_static(b"whole"));
        assert_eq!(&read_to_end(one).await.unwrap()[..], b"whole");
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, String>>(8);
        for part in ["a", "", "bc", "def"] {
            tx.send(Ok(Frame::data(Bytes::from(part)))).await.unwrap();
        }
        let mut trailers = hyper::HeaderMap::new();
        trailers.insert("x-t", "1".parse().unwrap());
        tx.send(Ok(Frame::trailers(trailers))).await.unwrap();
        drop(tx);
        let parts =
            http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
        assert_eq!(&read_to_end(parts).await.unwrap()[..], b"abcdef");
        let empty = http_body_util::Empty::<Bytes>::new();
        assert!(read_to_end(empty).await.unwrap().is_empty());
        let failing = http_body_util::StreamBody::new(tokio_stream::iter([
            Ok(Frame::data(Bytes::from_static(b"a"))),
            Err("broken".to_owned()),
        ]));
        assert_eq!(read_to_end(failing).await.unwrap_err(), "broken");
    }

    #[tokio::test]
    async fn a_body_that_stops_arriving_ends() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, String>>(1);
        let stream =
            http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
        tx.send(Ok(Frame::data(Bytes::from_static(b"a"))))
            .await
            .unwrap();
        let mut body = Timed::new(stream, Duration::from_millis(50));
        assert!(body.frame().await.unwrap().is_ok());
        // Nothing more, though the sender is still there: the gap passes.
        assert!(matches!(body.frame().await, Some(Err(Bound::Stalled(_)))));
        drop(tx);
    }
}
