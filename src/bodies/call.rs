//! What every handler call shares: the failure a call ends in (a short reason for the
//! reply, the detail for the log) and the bound on endpoints kept.

use crate::rules::body::HandlerBinding;

/// Endpoints whose connections and slots are kept; past that, idle ones are dropped so
/// that registering and removing many handler URLs cannot grow memory without bound.
pub(super) const MAX_ENDPOINTS: usize = 256;

/// A failure inside a call: the short reason and the detail for the log.
pub(super) struct Failure {
    /// What the reply says after `/<name> failed: `.
    pub(super) reason: String,
    /// What the log says.
    pub(super) detail: String,
}

impl Failure {
    pub(super) fn new(reason: impl Into<String>, detail: impl ToString) -> Self {
        Self {
            reason: reason.into(),
            detail: detail.to_string(),
        }
    }

    /// An answer that could not be read; the reason quotes the start of the detail.
    pub(super) fn malformed(detail: impl ToString) -> Self {
        let detail = detail.to_string();
        Self {
            reason: format!("malformed answer: {}", shorten(&detail, 120)),
            detail,
        }
    }

    /// The binding's deadline passed.
    pub(super) fn timed_out(binding: &HandlerBinding, detail: impl ToString) -> Self {
        Self::new(format!("timed out after {} ms", binding.timeout_ms), detail)
    }
}

/// `text` cut to at most `max_chars` characters, with an ellipsis when cut.
pub(super) fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max_chars - 1).collect();
    short.push('…');
    short
}
