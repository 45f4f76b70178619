//! The request memory budget: the request bytes all calls together may hold in memory.
//!
//! Before a call runs, its request's first frame is read to learn the message's length
//! (the gRPC 5-byte prefix), and what the request may cost in memory ([`request_cost`]:
//! its bytes twice, as received and decoded, plus what its elements can cost once
//! decoded) is taken from the budget, all at once, until the call's answer starts (so an
//! Execute waiting for a handler keeps holding it). A call that does not fit is answered
//! RESOURCE_EXHAUSTED at once, unread. Waiting instead would deadlock: the unread data of
//! waiting calls fills the connection's HTTP/2 window, and the calls holding the budget
//! could not finish reading theirs.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::codegen::{http, Bytes, Service};

use crate::transport::layers::read_deadline::PREFIX;

/// What one decoded element (an empty `Part`, a metadata entry, ...) costs in memory at
/// most, measured: two million empty parts took about 240 MiB.
const ELEMENT_BYTES: usize = 128;

/// The most memory a request of `length` bytes can take: its bytes as received, again
/// once decoded, and its elements (at most one per two bytes, and at most the element
/// limit).
pub fn request_cost(length: usize, max_elements: usize) -> usize {
    2 * (length + PREFIX) + (length / 2).min(max_elements) * ELEMENT_BYTES
}

/// A budget shared by every call of the listeners it is given to.
#[derive(Clone, Debug)]
pub struct BudgetLayer {
    budget: Arc<Semaphore>,
    max_message_bytes: usize,
    max_elements: usize,
}

impl BudgetLayer {
    /// A budget of `budget_bytes` for requests of at most `max_message_bytes` and
    /// `max_elements` elements (a larger message takes only that much before tonic
    /// refuses it). It always holds at least one largest request.
    pub fn new(budget_bytes: usize, max_message_bytes: usize, max_elements: usize) -> Self {
        let largest = request_cost(max_message_bytes, max_elements);
        if budget_bytes < largest {
            tracing::warn!(
                requested_mib = budget_bytes >> 20,
                used_mib = largest.div_ceil(1 << 20),
                "--max-request-memory-mib is below what one largest request may hold; \
                 using that instead"
            );
        }
        let budget_bytes = budget_bytes.max(largest).min(Semaphore::MAX_PERMITS);
        Self {
            budget: Arc::new(Semaphore::new(budget_bytes)),
            max_message_bytes,
            max_elements,
        }
    }

    /// What a message whose first frame is `data` takes: the cost of its length (from
    /// the prefix), capped at the largest message accepted (tonic refuses larger ones).
    fn need(&self, data: &[u8]) -> u32 {
        let length = match data.get(1..PREFIX) {
            Some(len) => u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize,
            None => self.max_message_bytes,
        };
        let cost = request_cost(length.min(self.max_message_bytes), self.max_elements);
        u32::try_from(cost).unwrap_or(u32::MAX)
    }
}

impl<S> tower_layer::Layer<S> for BudgetLayer {
    type Service = Budget<S>;

    fn layer(&self, inner: S) -> Budget<S> {
        Budget {
            inner,
            layer: self.clone(),
        }
    }
}

/// See [`BudgetLayer`].
#[derive(Clone, Debug)]
pub struct Budget<S> {
    inner: S,
    layer: BudgetLayer,
}

/// The answer to a call that does not fit in the budget.
fn over_budget() -> tonic::Status {
    tonic::Status::resource_exhausted(
        "the server is at its memory budget for requests in flight \
         (--max-request-memory-mib); retry shortly",
    )
}

impl<S, B> Service<http::Request<B>> for Budget<S>
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<tonic::body::Body>>
        + Clone,
    B: http_body::Body<Data = Bytes, Error = tonic::Status> + Unpin + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Budgeted<S, S::Future, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        // The service that is ready now serves this call; a clone takes its place.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        Budgeted {
            state: State::Reading {
                request: Some(request.into_parts()),
                inner: Some(inner),
                layer: self.layer.clone(),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// A call waiting for its first frame (to learn what it needs from the budget),
    /// then running with its share held until its answer starts.
    pub struct Budgeted<S, F, B> {
        #[pin]
        state: State<S, F, B>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProjection]
    enum State<S, F, B> {
        /// Reading the first frame: the request until it is passed on, the service
        /// that will answer it.
        Reading {
            request: Option<(http::request::Parts, B)>,
            inner: Option<S>,
            layer: BudgetLayer,
        },
        /// Running, with its share held until the answer starts.
        Running {
            #[pin]
            answer: F,
            held: Option<OwnedSemaphorePermit>,
        },
    }
}

impl<S, B> Future for Budgeted<S, S::Future, B>
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<tonic::body::Body>>,
    B: http_body::Body<Data = Bytes, Error = tonic::Status> + Unpin + Send + 'static,
{
    type Output = Result<http::Response<tonic::body::Body>, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            let next = match state.as_mut().project() {
                StateProjection::Running { answer, held } => {
                    let answer = ready!(answer.poll(cx));
                    // The answer starts: what the request took goes back to the budget.
                    held.take();
                    return Poll::Ready(answer);
                }
                StateProjection::Reading {
                    request,
                    inner,
                    layer,
                } => {
                    // Taken only on the way to `Running`: a refusal returns with it here.
                    let (_, body) = request
                        .as_mut()
                        .expect("the request is here until passed on");
                    let first = match ready!(Pin::new(body).poll_frame(cx)) {
                        Some(Ok(frame)) => Some(frame),
                        Some(Err(status)) => return Poll::Ready(Ok(status.into_http())),
                        None => None,
                    };
                    let need = first
                        .as_ref()
                        .and_then(|frame| frame.data_ref())
                        .map_or(0, |data| layer.need(data));
                    let Ok(held) = Arc::clone(&layer.budget).try_acquire_many_owned(need) else {
                        return Poll::Ready(Ok(over_budget().into_http()));
                    };
                    let (parts, rest) = request.take().expect("taken once");
                    let body = tonic::body::Body::new(Replay { first, rest });
                    let mut inner = inner.take().expect("taken once");
                    State::Running {
                        answer: inner.call(http::Request::from_parts(parts, body)),
                        held: Some(held),
                    }
                }
            };
            state.set(next);
        }
    }
}

/// A request body whose first frame was read ahead, and is given back first.
struct Replay<B> {
    first: Option<http_body::Frame<Bytes>>,
    rest: B,
}

impl<B> http_body::Body for Replay<B>
where
    B: http_body::Body<Data = Bytes, Error = tonic::Status> + Unpin,
{
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, tonic::Status>>> {
        if let Some(frame) = self.first.take() {
            return Poll::Ready(Some(Ok(frame)));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.rest.is_end_stream()
    }
}
