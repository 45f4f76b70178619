//! Writing the call lines that the observing layer (`layers::observe`, which also owns
//! `CallLog`: sampling and call metrics) hands over.
//!
//! A call's line is most of what a cheap call costs if it goes through `tracing` (about
//! 3 µs of formatting, an allocation and a wake-up of the log thread per line). So when
//! the binary has called [`start`], a call only copies its fields into a queue (no
//! allocation, no formatting, no system call); a writer thread wakes at most every
//! [`BATCH_INTERVAL`], formats the queued lines exactly as `tracing`'s text or JSON
//! formatter would, and writes them with one `write` to stderr. Without [`start`] (the
//! library embedded, tests), lines go through `tracing` as every other line does.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, SystemTime};

use tonic::Code;

use crate::codes;

/// How long queued lines may wait before they are written: long enough that a busy
/// server writes many lines per wake-up, short enough for someone tailing the log.
pub const BATCH_INTERVAL: Duration = Duration::from_millis(20);

/// Lines queued at most; beyond that, lines are dropped (and counted) rather than
/// letting a stalled stderr grow memory or slow calls.
const MAX_QUEUED: usize = 1 << 16;

/// The longest command name copied into a line, in bytes: a registered name's longest
/// (64 ASCII characters). A longer one is what a refused Register sent, cut at a
/// character boundary; the cut keeps every call's note small.
pub(crate) const MAX_COMMAND: usize = 64;

/// The call log's output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `tracing-subscriber`'s default text line.
    Text,
    /// `tracing-subscriber`'s JSON line with the event's fields flattened.
    Json,
}

/// Bytes copied inline, so that queuing a line allocates nothing.
#[derive(Clone, Copy)]
pub(crate) struct Inline<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

impl<const N: usize> Default for Inline<N> {
    fn default() -> Self {
        Self {
            len: 0,
            bytes: [0; N],
        }
    }
}

impl<const N: usize> Inline<N> {
    /// `text`, cut to at most `N` bytes at a character boundary.
    pub(crate) fn new(text: &str) -> Self {
        let mut len = text.len().min(N);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0; N];
        bytes[..len].copy_from_slice(&text.as_bytes()[..len]);
        Self {
            len: u8::try_from(len).expect("N fits in a u8"),
            bytes,
        }
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        let bytes = &self.bytes[..usize::from(self.len)];
        // Checked in debug builds only: the writer thread reads three of these a line.
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: `new` is the only way to set `bytes` and `len`, and it copies a `&str`
        // cut at a character boundary (`default` is empty), so `bytes` is UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

/// One call's line, as queued.
struct Line {
    at: SystemTime,
    method: &'static str,
    code: Code,
    latency_us: u64,
    command: Inline<MAX_COMMAND>,
    outcome: &'static str,
    trace_id: Inline<32>,
    span_id: Inline<16>,
}

/// The queue and the writer thread that empties it.
struct Writer {
    format: Format,
    queue: Mutex<Vec<Line>>,
    /// Set by the writer before it parks; the call that finds it set wakes the writer.
    idle: AtomicBool,
    stopping: AtomicBool,
    dropped: AtomicU64,
    thread: Thread,
    handle: Mutex<Option<JoinHandle<()>>>,
}

static WRITER: OnceLock<Writer> = OnceLock::new();

/// Starts the writer thread: from now on, call lines are queued and written in batches
/// in `format`. Call it once the `tracing` subscriber is installed: lines are written
/// only if it enables `info` for this module. Later calls change nothing.
pub fn start(format: Format) {
    if !tracing::enabled!(tracing::Level::INFO) {
        return;
    }
    // The thread waits until the writer it runs is in place.
    let handle = std::thread::Builder::new()
        .name("call-log".to_owned())
        .spawn(|| loop {
            if let Some(writer) = WRITER.get() {
                return writer.run();
            }
            std::thread::park();
        })
        .expect("spawn the call-log thread");
    let thread = handle.thread().clone();
    let writer = Writer {
        format,
        queue: Mutex::new(Vec::with_capacity(1024)),
        idle: AtomicBool::new(false),
        stopping: AtomicBool::new(false),
        dropped: AtomicU64::new(0),
        thread: thread.clone(),
        handle: Mutex::new(Some(handle)),
    };
    let _ = WRITER.set(writer);
    thread.unpark();
}

/// Writes every queued line and stops the writer thread; later lines go through
/// `tracing`. Call it before the process exits.
pub fn stop() {
    let Some(writer) = WRITER.get() else {
        return;
    };
    writer.stopping.store(true, Ordering::SeqCst);
    writer.thread.unpark();
    let handle = writer.handle.lock().expect("not poisoned").take();
    if let Some(handle) = handle {
        let _ = handle.join();
    }
}

impl Writer {
    fn push(&self, line: Line) {
        {
            let mut queue = self.queue.lock().expect("not poisoned");
            if queue.len() >= MAX_QUEUED {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            queue.push(line);
        }
        if self.idle.swap(false, Ordering::SeqCst) {
            self.thread.unpark();
        }
    }

    fn run(&self) {
        let mut batch = Vec::with_capacity(1024);
        let mut out = Vec::with_capacity(64 * 1024);
        let mut clock = Clock::default();
        loop {
            std::mem::swap(&mut batch, &mut *self.queue.lock().expect("not poisoned"));
            if batch.is_empty() {
                if self.stopping.load(Ordering::SeqCst) {
                    return;
                }
                self.idle.store(true, Ordering::SeqCst);
                // A line queued before `idle` was set would not wake us: look again.
                if self.queue.lock().expect("not poisoned").is_empty() {
                    std::thread::park();
                }
                self.idle.store(false, Ordering::SeqCst);
                if !self.stopping.load(Ordering::SeqCst) {
                    std::thread::sleep(BATCH_INTERVAL);
                }
                continue;
            }
            out.clear();
            for line in batch.drain(..) {
                format_line(&mut out, self.format, &line, &mut clock);
            }
            let dropped = self.dropped.swap(0, Ordering::Relaxed);
            if dropped > 0 {
                format_dropped(&mut out, self.format, dropped);
            }
            // One write for the batch; a failing stderr loses the lines, not the calls.
            let _ = std::io::stderr().lock().write_all(&out);
            if !self.stopping.load(Ordering::SeqCst) {
                std::thread::sleep(BATCH_INTERVAL);
            }
        }
    }
}

/// Queues the line for the writer thread (or, before it starts, through `tracing`).
/// The command and trace id come already cut to size, as the observing layer keeps them.
pub(crate) fn write_line(
    method: &'static str,
    code: Code,
    elapsed: Duration,
    command: &Inline<MAX_COMMAND>,
    outcome: &'static str,
    trace_id: &Inline<32>,
    span_id: &Inline<16>,
) {
    let latency_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    match WRITER.get() {
        Some(writer) if !writer.stopping.load(Ordering::Relaxed) => writer.push(Line {
            at: SystemTime::now(),
            method,
            code,
            latency_us,
            command: *command,
            outcome,
            trace_id: *trace_id,
            span_id: *span_id,
        }),
        _ => tracing::info!(
            method,
            code = ?code,
            latency_us,
            command = command.as_str(),
            outcome,
            trace_id = trace_id.as_str(),
            span_id = span_id.as_str(),
            "call"
        ),
    }
}

/// This module's path: the `target` of its lines.
const TARGET: &str = module_path!();

/// Appends `line` as `tracing-subscriber` formats an `info` event of this module with
/// the same fields, so that a log reader sees one format. Written byte by byte rather
/// than through `fmt`: the writer thread shares the cores with the calls, and this is
/// most of its work.
fn format_line(out: &mut Vec<u8>, format: Format, line: &Line, clock: &mut Clock) {
    let (command, trace_id) = (line.command.as_str(), line.trace_id.as_str());
    match format {
        Format::Json => {
            out.extend_from_slice(b"{\"timestamp\":\"");
            clock.push(out, line.at);
            out.extend_from_slice(b"\",\"level\":\"INFO\",\"message\":\"call\",\"method\":\"");
            out.extend_from_slice(line.method.as_bytes());
            out.extend_from_slice(b"\",\"code\":\"");
            out.extend_from_slice(codes::debug_name(line.code).as_bytes());
            out.extend_from_slice(b"\",\"latency_us\":");
            out.extend_from_slice(itoa::Buffer::new().format(line.latency_us).as_bytes());
            out.extend_from_slice(b",\"command\":");
            push_quoted(out, command, Quoting::Json);
            out.extend_from_slice(b",\"outcome\":\"");
            out.extend_from_slice(line.outcome.as_bytes());
            out.extend_from_slice(b"\",\"trace_id\":");
            push_quoted(out, trace_id, Quoting::Json);
            out.extend_from_slice(b",\"span_id\":");
            push_quoted(out, line.span_id.as_str(), Quoting::Json);
            out.extend_from_slice(b",\"target\":\"");
            out.extend_from_slice(TARGET.as_bytes());
            out.extend_from_slice(b"\"}\n");
        }
        Format::Text => {
            clock.push(out, line.at);
            out.extend_from_slice(b"  INFO ");
            out.extend_from_slice(TARGET.as_bytes());
            out.extend_from_slice(b": call method=");
            push_quoted(out, line.method, Quoting::Debug);
            out.extend_from_slice(b" code=");
            out.extend_from_slice(codes::debug_name(line.code).as_bytes());
            out.extend_from_slice(b" latency_us=");
            out.extend_from_slice(itoa::Buffer::new().format(line.latency_us).as_bytes());
            out.extend_from_slice(b" command=");
            push_quoted(out, command, Quoting::Debug);
            out.extend_from_slice(b" outcome=");
            push_quoted(out, line.outcome, Quoting::Debug);
            out.extend_from_slice(b" trace_id=");
            push_quoted(out, trace_id, Quoting::Debug);
            out.extend_from_slice(b" span_id=");
            push_quoted(out, line.span_id.as_str(), Quoting::Debug);
            out.push(b'\n');
        }
    }
}

/// Appends the line that says how many call lines were dropped.
fn format_dropped(out: &mut Vec<u8>, format: Format, dropped: u64) {
    let timestamp = Rfc3339(SystemTime::now());
    let _ = match format {
        Format::Json => writeln!(
            out,
            "{{\"timestamp\":\"{timestamp}\",\"level\":\"WARN\",\"message\":\"call log lines dropped\",\
             \"dropped\":{dropped},\"target\":\"{TARGET}\"}}"
        ),
        Format::Text => writeln!(
            out,
            "{timestamp}  WARN {TARGET}: call log lines dropped dropped={dropped}"
        ),
    };
}

/// How a string is quoted: as a JSON string, or as Rust's `Debug` shows it (which is
/// how `tracing`'s text format shows a `&str` field).
#[derive(Clone, Copy)]
enum Quoting {
    Json,
    Debug,
}

/// Appends `text` quoted. Printable ASCII without quotes or backslashes reads the same
/// in both forms, and is nearly every name; anything else goes through the full
/// escaper.
fn push_quoted(out: &mut Vec<u8>, text: &str, quoting: Quoting) {
    let plain = text
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if plain {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        return;
    }
    // Writing into a Vec cannot fail.
    let _ = match quoting {
        Quoting::Json => serde_json::to_writer(&mut *out, text).map_err(|_| ()),
        Quoting::Debug => write!(out, "{text:?}").map_err(|_| ()),
    };
}

/// Writes RFC 3339 timestamps, keeping the date and time of the last second seen: a
/// batch's lines share their second, so only the microseconds change.
#[derive(Default)]
struct Clock {
    second: Option<u64>,
    /// `YYYY-MM-DDTHH:MM:SS` of `second`.
    prefix: Vec<u8>,
}

impl Clock {
    /// Appends `at` as RFC 3339 UTC with microseconds.
    fn push(&mut self, out: &mut Vec<u8>, at: SystemTime) {
        let since = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let second = since.as_secs();
        if self.second != Some(second) {
            self.prefix.clear();
            let _ = write!(self.prefix, "{}", Rfc3339(at));
            self.prefix.truncate("YYYY-MM-DDTHH:MM:SS".len());
            self.second = Some(second);
        }
        out.extend_from_slice(&self.prefix);
        // `.` and six digits of microseconds, then `Z`: one copy, not eight pushes.
        let mut tail = *b".000000Z";
        let mut micros = since.subsec_micros();
        for digit in tail[1..7].iter_mut().rev() {
            // Below 10, so the cast cannot truncate.
            *digit = b'0' + (micros % 10) as u8;
            micros /= 10;
        }
        out.extend_from_slice(&tail);
    }
}

/// A time as RFC 3339 UTC with microseconds, as `tracing-subscriber` writes it.
struct Rfc3339(SystemTime);

impl std::fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = chrono::DateTime::<chrono::Utc>::from(self.0);
        f.write_str(&at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_tracing_writes_them() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_micros(1_796_281_323_004_005);
        assert_eq!(Rfc3339(at).to_string(), "2026-12-03T07:02:03.004005Z");
    }

    fn line(command: &str) -> Line {
        Line {
            at: SystemTime::UNIX_EPOCH,
            method: "Execute",
            code: Code::InvalidArgument,
            latency_us: 12,
            command: Inline::new(command),
            outcome: "OUTCOME_OK",
            trace_id: Inline::new("4bf92f3577b34da6a3ce929d0e0e4736"),
            span_id: Inline::new("00f067aa0ba902b7"),
        }
    }

    #[test]
    fn json_lines_have_tracing_s_keys_and_escape_names() {
        let mut out = Vec::new();
        format_line(&mut out, Format::Json, &line("a\"b"), &mut Clock::default());
        let event: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(event["message"], "call");
        assert_eq!(event["level"], "INFO");
        assert_eq!(event["method"], "Execute");
        assert_eq!(event["code"], "InvalidArgument");
        assert_eq!(event["latency_us"], 12);
        assert_eq!(event["command"], "a\"b");
        assert_eq!(event["outcome"], "OUTCOME_OK");
        assert_eq!(event["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(event["span_id"], "00f067aa0ba902b7");
        assert_eq!(event["timestamp"], "1970-01-01T00:00:00.000000Z");
        assert!(out.ends_with(b"}\n"));
    }

    #[test]
    fn text_lines_quote_like_tracing() {
        let mut out = Vec::new();
        format_line(
            &mut out,
            Format::Text,
            &line("deploy"),
            &mut Clock::default(),
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1970-01-01T00:00:00.000000Z  INFO a2a_commands::transport::call_log: call \
             method=\"Execute\" code=InvalidArgument latency_us=12 command=\"deploy\" \
             outcome=\"OUTCOME_OK\" trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\" \
             span_id=\"00f067aa0ba902b7\"\n"
        );
    }

    #[test]
    fn the_clock_writes_what_rfc3339_writes_across_seconds() {
        let mut clock = Clock::default();
        let start = SystemTime::UNIX_EPOCH + Duration::from_micros(1_796_281_323_999_998);
        for step in [0, 1, 2, 3, 1_000_000, 86_400_000_000] {
            let at = start + Duration::from_micros(step);
            let mut out = Vec::new();
            clock.push(&mut out, at);
            assert_eq!(String::from_utf8(out).unwrap(), Rfc3339(at).to_string());
        }
    }

    #[test]
    fn names_that_need_escaping_are_escaped_as_json_and_as_debug() {
        for name in ["plain-name", "é", "a\\b", "tab\there", "quote\"d", "\u{7f}"] {
            let mut json = Vec::new();
            push_quoted(&mut json, name, Quoting::Json);
            assert_eq!(
                String::from_utf8(json).unwrap(),
                serde_json::to_string(name).unwrap()
            );
            let mut debug = Vec::new();
            push_quoted(&mut debug, name, Quoting::Debug);
            assert_eq!(String::from_utf8(debug).unwrap(), format!("{name:?}"));
        }
    }

    #[test]
    fn long_names_are_cut_at_a_character_boundary() {
        let name = "é".repeat(100);
        let cut = Inline::<MAX_COMMAND>::new(&name);
        assert_eq!(cut.as_str(), "é".repeat(32));
    }
}
