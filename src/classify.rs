//! Which messages are commands: the reference harness's rule, exactly.
//!
//! A message is a command when it has exactly one part, that part is text, the text is
//! `/<name>` followed by the end or by whitespace and arguments
//! (`^/([a-z][a-z0-9-]*)(?:\s+(.*))?$`, dot matching newline), and the name is
//! registered. "Whitespace" is Python's `str.isspace()`, which the reference's `\s`
//! uses: Unicode's White_Space plus the information separators U+001C..U+001F.
//!
//! The scan is one pass over the text and one hash lookup, so its cost does not grow
//! with the registry and grows linearly with the text only up to the name's end.

use crate::pb::{self, part::Content, OrdinaryReason};
use crate::registry::{Registered, Snapshot};
use std::sync::Arc;

/// What a message is.
#[derive(Clone, Debug)]
pub enum Classification<'m> {
    /// A registered command.
    Command {
        /// The name as typed (equal to the registered command's).
        name: &'m str,
        /// The registered command (spec and body).
        command: Arc<Registered>,
        /// Everything after the name and its following whitespace, unchanged.
        arguments: &'m str,
    },
    /// An ordinary message, for the model.
    Ordinary {
        /// Why it is not a command.
        reason: OrdinaryReason,
        /// For `NotRegistered`, the name that was typed.
        name: Option<&'m str>,
    },
}

/// Whether `c` is whitespace to Python's `str.isspace()`.
pub fn is_py_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c)
}

/// `s` without leading or trailing Python whitespace.
pub fn trim_py_whitespace(s: &str) -> &str {
    s.trim_matches(is_py_whitespace)
}

/// Splits command text into name and arguments by the reference's syntax, ignoring the
/// registry. `None` when the text is not command syntax.
pub fn parse_command_text(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    let bytes = rest.as_bytes();
    if !matches!(bytes.first(), Some(b'a'..=b'z')) {
        return None;
    }
    let name_len = 1 + bytes[1..]
        .iter()
        .take_while(|&&b| crate::spec::is_name_byte(b))
        .count();
    let (name, after) = rest.split_at(name_len);
    match after.chars().next() {
        None => Some((name, "")),
        Some(c) if is_py_whitespace(c) => Some((name, after.trim_start_matches(is_py_whitespace))),
        Some(_) => None,
    }
}

/// The text of a message that has exactly one part, which is text.
pub fn single_text(message: &pb::Message) -> Option<&str> {
    match message.parts.as_slice() {
        [pb::Part {
            content: Some(Content::Text(text)),
            ..
        }] => Some(text),
        _ => None,
    }
}

/// Classifies `message` against the registry `snapshot`.
pub fn classify<'m>(message: &'m pb::Message, snapshot: &Snapshot) -> Classification<'m> {
    let Some(text) = single_text(message) else {
        return Classification::Ordinary {
            reason: OrdinaryReason::NotSingleTextPart,
            name: None,
        };
    };
    let Some((name, arguments)) = parse_command_text(text) else {
        return Classification::Ordinary {
            reason: OrdinaryReason::NotCommandSyntax,
            name: None,
        };
    };
    match snapshot.get(name) {
        Some(command) => Classification::Command {
            name,
            command: Arc::clone(command),
            arguments,
        },
        None => Classification::Ordinary {
            reason: OrdinaryReason::NotRegistered,
            name: Some(name),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_table() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("/model", Some(("model", ""))),
            ("/model gpt-x", Some(("model", "gpt-x"))),
            ("/model   gpt-x  ", Some(("model", "gpt-x  "))),
            (
                "/sub-task line one\nline two",
                Some(("sub-task", "line one\nline two")),
            ),
            ("/model\tgpt-x", Some(("model", "gpt-x"))),
            ("/model\n", Some(("model", ""))),
            ("/model\u{1F}x", Some(("model", "x"))),
            ("/model\u{3000}x", Some(("model", "x"))),
            (" /model", None),
            ("/Model", None),
            ("/MODEL", None),
            ("/model!", None),
            ("/model:x", None),
            ("/", None),
            ("/ model", None),
            ("//model", None),
            ("/9lives", None),
            ("model", None),
            ("/model\u{200B}x", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_command_text(text), *want, "{text:?}");
        }
    }

    #[test]
    fn whitespace_is_pythons_isspace() {
        // Every character for which CPython 3.11's str.isspace() is true.
        let mut python: Vec<u32> = vec![0x9, 0xA, 0xB, 0xC, 0xD, 0x1C, 0x1D, 0x1E, 0x1F, 0x20];
        python.extend([0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]);
        python.extend(0x2000..=0x200A);
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(
                is_py_whitespace(c),
                python.contains(&(c as u32)),
                "U+{:04X}",
                c as u32
            );
        }
    }
}
