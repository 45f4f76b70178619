//! WatchSpecs: the registry's state, then the state after every change, until the
//! client goes or the server drains.

use std::pin::Pin;

use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use crate::error::Error;
use crate::metrics::metrics;
use crate::pb;
use crate::registry::Registry;
use crate::transport::convert::list_response;

/// The stream WatchSpecs answers with.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::ListSpecsResponse, Status>> + Send>>;

/// The stream of `registry`'s states (the card's `Struct` too when `with_struct`), ending
/// when `draining` is cancelled.
pub(crate) fn watch_specs(
    registry: &Registry,
    draining: &CancellationToken,
    with_struct: bool,
) -> Result<WatchStream, Error> {
    // Fleet mode: nothing to stream before this sidecar has a registry it applied.
    registry.read()?;
    // A watch channel holds only the latest snapshot: a slow reader skips ahead and the
    // writer never waits for it.
    let updates = tokio_stream::wrappers::WatchStream::new(registry.subscribe())
        .map(move |snapshot| Ok(list_response(&snapshot, with_struct)));
    metrics().watch_subscribers.inc();
    let updates = UntilDrained {
        updates: Box::pin(updates),
        drained: Box::pin(draining.clone().cancelled_owned()),
    };
    Ok(Box::pin(updates))
}

/// A WatchSpecs stream that ends (OK) when the server starts draining; the client's
/// watch loop reconnects to a replica that is serving.
struct UntilDrained {
    updates: WatchStream,
    drained: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl Drop for UntilDrained {
    fn drop(&mut self) {
        metrics().watch_subscribers.dec();
    }
}

impl Stream for UntilDrained {
    type Item = Result<pb::ListSpecsResponse, Status>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::future::Future as _;
        if self.drained.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(None);
        }
        self.updates.as_mut().poll_next(cx)
    }
}
