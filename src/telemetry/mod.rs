//! OpenTelemetry traces: the settings (OpenTelemetry's own variables, and flags), the
//! tracer each server starts with them, the spans the other layers make through it,
//! and the log format that names the current span. Off unless an OTLP endpoint is
//! configured; off, no span is made and a call pays one `Option` check.
//!
//! Like `metrics`, a bottom layer every other may use: it imports only `metrics`.

mod export;
pub mod logs;
mod queue;
pub mod settings;
pub mod spans;

pub use export::Tracer;
pub use opentelemetry::trace::SpanKind;
pub use opentelemetry::{ContextGuard, KeyValue};
pub use settings::{TraceFlags, TraceSettings};
pub use spans::{CallSpan, CallerContext, W3c};
