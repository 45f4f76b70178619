//! Which messages are commands: the reference harness's rule, exactly.
//!
//! A message is a command when it has exactly one part, that part is text, the text is
//! `/<name>` followed by the end or by whitespace and arguments
//! (`^/([a-z][a-z0-9-]*)(?:\s+(.*))?$`, dot matching newline), and the name is
//! registered. "Whitespace" is Python's `str.isspace()`, which the reference's `\s`
//! uses (see [`crate::rules::text`]).
//!
//! The scan is one pass over the text and one lookup, so its cost does not grow with
//! the registry and grows linearly with the text only up to the name's end.

use crate::pb::{self, part::Content, OrdinaryReason};
use crate::rules::body::Body;
use crate::rules::policy::Access;
use crate::rules::spec::is_name_byte;
use crate::rules::text::is_py_whitespace;

/// Where classification looks names up: the registry's snapshot implements it. Kept as
/// a trait so that these rules know nothing of how the registry is stored.
pub trait Lookup {
    /// The command registered as `name`, if there is one: what runs it and who may, in
    /// one lookup.
    fn find(&self, name: &str) -> Option<Found<'_>>;
}

impl<T: Lookup + ?Sized> Lookup for std::sync::Arc<T> {
    fn find(&self, name: &str) -> Option<Found<'_>> {
        (**self).find(name)
    }
}

/// A registered command, as a [`Lookup`] finds it.
#[derive(Clone, Copy, Debug)]
pub struct Found<'s> {
    /// What runs it.
    pub body: &'s Body,
    /// Who may run it (every role, if not said).
    pub access: Option<&'s Access>,
}

/// What a message is.
#[derive(Clone, Debug)]
pub enum Classification<'m, 's> {
    /// A registered command.
    Command {
        /// The name as typed (equal to the registered command's).
        name: &'m str,
        /// What runs the registered command.
        body: &'s Body,
        /// Who may run it (every role, if not said).
        access: Option<&'s Access>,
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

/// Splits command text into name and arguments by the reference's syntax, ignoring the
/// registry. `None` when the text is not command syntax.
pub fn parse_command_text(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    let bytes = rest.as_bytes();
    if !matches!(bytes.first(), Some(b'a'..=b'z')) {
        return None;
    }
    let name_len = 1 + bytes[1..].iter().take_while(|&&b| is_name_byte(b)).count();
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

/// Classifies `message` against the registered commands.
pub fn classify<'m, 's>(
    message: &'m pb::Message,
    commands: &'s impl Lookup,
) -> Classification<'m, 's> {
    classify_text(single_text(message), commands)
}

/// Classifies a message by the text of its one part ([`single_text`]: `None` when it
/// has any other shape) against the registered commands.
pub fn classify_text<'m, 's>(
    text: Option<&'m str>,
    commands: &'s impl Lookup,
) -> Classification<'m, 's> {
    let Some(text) = text else {
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
    match commands.find(name) {
        Some(Found { body, access }) => Classification::Command {
            name,
            body,
            access,
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
}
