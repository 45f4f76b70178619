//! Log lines written while a span is current carry its ids: `trace_id` and `span_id`,
//! as fields of the JSON line (or at the end of a text line), so that a log search
//! and a trace meet.

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::telemetry::spans::current_ids;

/// A line format (`F`, tracing-subscriber's JSON or text) that adds the current span's
/// ids. With no span current, the line is `F`'s, untouched.
#[derive(Debug)]
pub struct WithSpanIds<F>(pub F);

impl<S, N, F> FormatEvent<S, N> for WithSpanIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let Some((trace_id, span_id)) = current_ids() else {
            return self.0.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        // A line that names an id itself keeps it (a key must not repeat).
        let fields = event.metadata().fields();
        let trace_id = (fields.field("trace_id").is_none()).then_some(trace_id.as_str());
        let span_id = (fields.field("span_id").is_none()).then_some(span_id.as_str());
        writer.write_str(&with_ids(&line, trace_id, span_id))
    }
}

/// `line` with the ids given added: inside a JSON object's closing brace, else before
/// the line break.
fn with_ids(line: &str, trace_id: Option<&str>, span_id: Option<&str>) -> String {
    let body = line.trim_end_matches('\n');
    let ids = [("trace_id", trace_id), ("span_id", span_id)];
    let ids = ids.iter().filter_map(|(k, v)| v.map(|v| (k, v)));
    let mut out = String::with_capacity(line.len() + 64);
    if let Some(object) = body.strip_suffix('}').filter(|_| body.starts_with('{')) {
        out.push_str(object);
        for (key, value) in ids {
            out.push_str(&format!(",\"{key}\":\"{value}\""));
        }
        out.push('}');
    } else {
        out.push_str(body);
        for (key, value) in ids {
            out.push_str(&format!(" {key}={value}"));
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::with_ids;

    #[test]
    fn ids_go_inside_the_json_object_or_at_the_end_of_the_text() {
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        let json = with_ids(
            "{\"message\":\"x\"}\n",
            Some(trace),
            Some("00f067aa0ba902b7"),
        );
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["trace_id"], trace);
        assert_eq!(value["span_id"], "00f067aa0ba902b7");
        let kept = with_ids("{\"trace_id\":\"a\"}\n", None, Some("00f067aa0ba902b7"));
        let value: serde_json::Value = serde_json::from_str(&kept).unwrap();
        assert_eq!(value["trace_id"], "a");
        let text = with_ids("INFO x: hello\n", Some(trace), Some("00f067aa0ba902b7"));
        assert_eq!(
            text,
            format!("INFO x: hello trace_id={trace} span_id=00f067aa0ba902b7\n")
        );
    }
}
