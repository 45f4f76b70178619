//! The span processor: an ended span is queued without waiting, and one task sends the
//! queue to the collector in batches. Written here rather than taken from the SDK's
//! batch processor because drops must be counted: the SDK's counts them only for its
//! own log, and a collector that is down or slow is exactly when an operator needs
//! the number (`a2a_commands_trace_spans_dropped_total`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use tokio::sync::{mpsc, oneshot};

use crate::metrics::{metrics, DropLabels};
use crate::telemetry::settings::Batching;

/// What the export task is handed.
// Spans are nearly every item; boxing them would allocate once more per span.
#[allow(clippy::large_enum_variant)]
enum Item {
    Span(SpanData),
    /// Send what is queued now, then answer.
    Flush(oneshot::Sender<()>),
}

/// Whether drops have been logged since the last export that worked, so that an outage
/// is one warning, not one per span.
#[derive(Debug, Default)]
struct Warned {
    queue_full: AtomicBool,
    export_failed: AtomicBool,
}

/// The processor the tracer provider is given; cheap to clone (one queue).
#[derive(Clone, Debug)]
pub(crate) struct Queue {
    sender: mpsc::Sender<Item>,
    warned: Arc<Warned>,
}

impl Queue {
    /// A queue of `batching.max_queue` spans, emptied into `exporter` by a task on the
    /// current tokio runtime.
    pub(crate) fn start<E: SpanExporter + 'static>(exporter: E, batching: Batching) -> Self {
        let (sender, receiver) = mpsc::channel(batching.max_queue);
        let warned = Arc::new(Warned::default());
        tokio::spawn(export(receiver, exporter, batching, Arc::clone(&warned)));
        Self { sender, warned }
    }

    /// Sends every span queued so far; returns once the collector answered, or at
    /// `timeout`.
    pub(crate) async fn flush(&self, timeout: std::time::Duration) {
        let (done, answered) = oneshot::channel();
        let sent = tokio::time::timeout(timeout, async {
            if self.sender.send(Item::Flush(done)).await.is_ok() {
                let _ = answered.await;
            }
        });
        let _ = sent.await;
    }
}

fn dropped(reason: &'static str, count: usize) {
    metrics()
        .traces
        .dropped
        .get_or_create(&DropLabels { reason })
        .inc_by(count as u64);
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        // Never waits: a full queue drops the span, counted.
        if self.sender.try_send(Item::Span(span)).is_err() {
            dropped("queue_full", 1);
            if !self.warned.queue_full.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "trace queue full: spans are dropped until the collector catches up \
                     (counted in a2a_commands_trace_spans_dropped_total)"
                );
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        // Flushing is async here (`Queue::flush`); the SDK's blocking call would stall
        // a runtime thread.
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: std::time::Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// Takes up to a batch of spans (waiting at most `delay` after the first) and exports
/// it, until the queue closes.
async fn export<E: SpanExporter>(
    mut receiver: mpsc::Receiver<Item>,
    exporter: E,
    batching: Batching,
    warned: Arc<Warned>,
) {
    // Room for a usual batch; a huge OTEL_BSP_MAX_EXPORT_BATCH_SIZE grows it as it fills.
    let capacity = batching.max_batch.min(1024);
    let mut batch = Vec::with_capacity(capacity);
    loop {
        let mut flush = None;
        match receiver.recv().await {
            None => return,
            Some(Item::Span(span)) => batch.push(span),
            Some(Item::Flush(done)) => flush = Some(done),
        }
        let deadline = tokio::time::Instant::now() + batching.delay;
        while flush.is_none() && batch.len() < batching.max_batch {
            match tokio::time::timeout_at(deadline, receiver.recv()).await {
                Ok(Some(Item::Span(span))) => batch.push(span),
                Ok(Some(Item::Flush(done))) => flush = Some(done),
                Ok(None) | Err(_) => break,
            }
        }
        if !batch.is_empty() {
            let spans = std::mem::replace(&mut batch, Vec::with_capacity(capacity));
            let count = spans.len();
            let result =
                tokio::time::timeout(batching.export_timeout, exporter.export(spans)).await;
            match result {
                Ok(Ok(())) => {
                    metrics().traces.exported.inc_by(count as u64);
                    warned.queue_full.store(false, Ordering::Relaxed);
                    if warned.export_failed.swap(false, Ordering::Relaxed) {
                        tracing::info!("trace export works again");
                    }
                }
                failed => {
                    dropped("export_failed", count);
                    if !warned.export_failed.swap(true, Ordering::Relaxed) {
                        let error = match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("no answer within {:?}", batching.export_timeout),
                        };
                        tracing::warn!(
                            %error,
                            "trace export failed: spans are dropped until the collector answers \
                             (counted in a2a_commands_trace_spans_dropped_total)"
                        );
                    }
                }
            }
        }
        if let Some(done) = flush {
            let _ = done.send(());
        }
    }
}
