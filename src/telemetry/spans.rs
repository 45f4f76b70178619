//! Spans as the rest of the service uses them: started under a W3C trace context,
//! attached while their work runs (so log lines carry their ids), ended with an
//! outcome. The W3C headers are read and written by OpenTelemetry's propagator.

use std::borrow::Cow;

use opentelemetry::context::{FutureExt as _, WithContext};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, ContextGuard, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;

use crate::telemetry::export::Tracer;

/// A W3C trace context as it travels: `traceparent` and `tracestate`.
#[derive(Clone, Copy, Debug, Default)]
pub struct W3c<'a> {
    /// `traceparent`.
    pub traceparent: Option<&'a str>,
    /// `tracestate`.
    pub tracestate: Option<&'a str>,
}

impl Extractor for W3c<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent,
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The headers the propagator writes.
#[derive(Default)]
struct Written {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl Injector for Written {
    fn set(&mut self, key: &str, value: String) {
        match key {
            "traceparent" => self.traceparent = Some(value),
            "tracestate" => self.tracestate = Some(value),
            _ => {}
        }
    }
}

/// One span in progress and the context it is the current span of.
#[derive(Debug)]
pub struct CallSpan {
    cx: Context,
}

impl Tracer {
    /// Starts a span of `kind` named `name`, a child of `parent` (a new trace when it
    /// holds no valid `traceparent`), with `attributes`.
    pub fn span(
        &self,
        kind: SpanKind,
        name: impl Into<Cow<'static, str>>,
        parent: W3c<'_>,
        attributes: Vec<KeyValue>,
    ) -> CallSpan {
        let parent = TraceContextPropagator::new().extract(&parent);
        self.start_under(parent, kind, name, attributes)
    }

    /// Starts a span of `kind` named `name` under the span current on this thread (a
    /// new trace when none is), with `attributes`.
    pub fn span_under_current(
        &self,
        kind: SpanKind,
        name: impl Into<Cow<'static, str>>,
        attributes: Vec<KeyValue>,
    ) -> CallSpan {
        self.start_under(Context::current(), kind, name, attributes)
    }

    fn start_under(
        &self,
        parent: Context,
        kind: SpanKind,
        name: impl Into<Cow<'static, str>>,
        attributes: Vec<KeyValue>,
    ) -> CallSpan {
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        CallSpan {
            cx: parent.with_span(span),
        }
    }
}

/// The span current where work was asked for, carried to the thread that does it (the
/// registry's writer), so that the work's spans are its children.
#[derive(Clone, Debug, Default)]
pub struct CallerContext(Context);

impl CallerContext {
    /// The context current on this thread.
    pub fn current() -> Self {
        Self(Context::current())
    }

    /// Whether it holds a span (the caller was traced).
    pub fn is_traced(&self) -> bool {
        self.0.has_active_span()
    }

    /// Makes it current on this thread until the guard drops.
    pub fn attach(&self) -> ContextGuard {
        self.0.clone().attach()
    }
}

impl CallSpan {
    /// `traceparent` and `tracestate` naming this span, for the call it makes.
    pub fn w3c(&self) -> (String, Option<String>) {
        w3c_of(&self.cx)
    }

    /// The trace id and span id, as 32 and 16 lower-case hex digits.
    pub fn ids(&self) -> (String, String) {
        let context = self.cx.span().span_context().clone();
        (
            context.trace_id().to_string(),
            context.span_id().to_string(),
        )
    }

    /// Makes this span the current one until the guard drops: log lines written
    /// meanwhile carry its ids.
    pub fn attach(&self) -> ContextGuard {
        self.cx.clone().attach()
    }

    /// Adds `attribute`.
    pub fn set(&self, attribute: KeyValue) {
        self.cx.span().set_attribute(attribute);
    }

    /// Renames the span, once what it is became known.
    pub fn rename(&self, name: impl Into<Cow<'static, str>>) {
        self.cx.span().update_name(name);
    }

    /// `work` with this span current whenever it is polled, on whichever thread: the
    /// spans it starts are this one's children.
    pub fn around<F: std::future::Future>(&self, work: F) -> WithContext<F> {
        work.with_context(self.cx.clone())
    }

    /// Ends the span; with `error`, its status is an error and `error.type` says which
    /// (a fixed word, never text from the call).
    pub fn end(self, error: Option<&'static str>) {
        let span = self.cx.span();
        if let Some(kind) = error {
            span.set_attribute(KeyValue::new("error.type", kind));
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

fn w3c_of(cx: &Context) -> (String, Option<String>) {
    let mut written = Written::default();
    TraceContextPropagator::new().inject_context(cx, &mut written);
    (written.traceparent.unwrap_or_default(), written.tracestate)
}

/// The trace id and span id of the span current on this thread, if one is.
pub fn current_ids() -> Option<(String, String)> {
    Context::map_current(|cx| {
        cx.has_active_span().then(|| {
            let context = cx.span().span_context().clone();
            (
                context.trace_id().to_string(),
                context.span_id().to_string(),
            )
        })
    })
}
