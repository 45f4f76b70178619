//! Validated command names and specs: the only place the registry's rules live.
//!
//! Everything past this module holds a [`CommandName`] or a [`CommandSpec`], so no other
//! code re-checks a name or a description.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::rules::text::is_py_whitespace;

/// Longest command name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest argument hint, in characters.
pub const MAX_ARGUMENT_HINT_CHARS: usize = 256;

/// The rule a name must follow, as the error messages state it.
pub const NAME_RULE: &str = "[a-z][a-z0-9-]*";

/// A command name that matches `[a-z][a-z0-9-]*` and is at most 64 characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct CommandName(String);

impl CommandName {
    /// Checks `name` against the naming rule; `field` names it in the error.
    pub fn parse(field: &str, name: &str) -> Result<Self, Error> {
        if name.is_empty() {
            return Err(Error::invalid(field, "must not be empty"));
        }
        let len = name.chars().count();
        if len > MAX_NAME_CHARS {
            return Err(Error::invalid(
                field,
                format!("must be at most {MAX_NAME_CHARS} characters (got {len})"),
            ));
        }
        if !is_command_name(name) {
            return Err(Error::invalid(
                field,
                format!(
                    "must match {NAME_RULE}: a lower-case ASCII letter, then lower-case \
                     letters, digits or '-' (got {name:?})"
                ),
            ));
        }
        Ok(Self(name.to_owned()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `s` matches `[a-z][a-z0-9-]*` (no length limit: classification uses it too).
pub fn is_command_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    matches!(bytes.first(), Some(b'a'..=b'z')) && bytes[1..].iter().all(|&b| is_name_byte(b))
}

/// Whether `b` may follow the first character of a name.
pub(crate) fn is_name_byte(b: u8) -> bool {
    matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-')
}

impl<'de> Deserialize<'de> for CommandName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse("name", &s).map_err(serde::de::Error::custom)
    }
}

impl Borrow<str> for CommandName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CommandName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for CommandName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// A validated command spec: exactly the card schema's `CommandSpec`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSpec {
    /// The name typed after `/`.
    pub name: CommandName,
    /// One line saying what the command does.
    pub description: String,
    /// How to write the arguments; may be empty.
    #[serde(default)]
    pub argument_hint: String,
}

impl CommandSpec {
    /// Validates the three fields; `prefix` (for example `spec`) qualifies the field
    /// names in errors, so a client reads `spec.description: ...`.
    pub fn new(
        prefix: &str,
        name: &str,
        description: &str,
        argument_hint: &str,
    ) -> Result<Self, Error> {
        let field = |f: &str| {
            if prefix.is_empty() {
                f.to_owned()
            } else {
                format!("{prefix}.{f}")
            }
        };
        let name = CommandName::parse(&field("name"), name)?;
        if description.is_empty() {
            return Err(Error::invalid(field("description"), "must not be empty"));
        }
        check_line(&field("description"), description, MAX_DESCRIPTION_CHARS)?;
        check_line(
            &field("argument_hint"),
            argument_hint,
            MAX_ARGUMENT_HINT_CHARS,
        )?;
        Ok(Self {
            name,
            description: description.to_owned(),
            argument_hint: argument_hint.to_owned(),
        })
    }
}

/// One line of at most `max` characters with no control or invisible formatting
/// characters, and not whitespace alone: card text must show what it holds.
fn check_line(field: &str, value: &str, max: usize) -> Result<(), Error> {
    let len = value.chars().count();
    if len > max {
        return Err(Error::invalid(
            field,
            format!("must be at most {max} characters (got {len})"),
        ));
    }
    if let Some(c) = value.chars().find(|&c| is_line_break(c)) {
        return Err(Error::invalid(
            field,
            format!("must be one line (found line break U+{:04X})", c as u32),
        ));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(Error::invalid(
            field,
            format!(
                "must not contain control characters (found U+{:04X})",
                c as u32
            ),
        ));
    }
    refuse_hidden_format(field, value)?;
    if !value.is_empty() && value.chars().all(is_py_whitespace) {
        return Err(Error::invalid(field, "must not be whitespace only"));
    }
    Ok(())
}

/// Refuses text that holds an invisible or text-direction formatting character (see
/// [`is_hidden_format`]), naming `field` and the character: card text and prompt
/// templates must show what they hold.
pub(crate) fn refuse_hidden_format(field: &str, value: &str) -> Result<(), Error> {
    match value.chars().find(|&c| is_hidden_format(c)) {
        Some(c) => Err(Error::invalid(
            field,
            format!(
                "must not contain invisible or text-direction formatting characters \
                 (found U+{:04X})",
                c as u32
            ),
        )),
        None => Ok(()),
    }
}

/// Characters that change how text displays without showing themselves: bidi embeddings,
/// overrides, isolates and marks (which can make a card read differently from what it
/// holds), zero-width space, word joiner and the byte-order mark.
pub(crate) fn is_hidden_format(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{200B}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// Characters that end a line: the ASCII ones and Unicode's own separators.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(r: Result<CommandSpec, Error>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn names() {
        for ok in ["a", "model", "sub-task", "a9-", &"a".repeat(64)] {
            assert!(CommandName::parse("name", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Model",
            "9lives",
            "-a",
            "a b",
            "modèl",
            "a_b",
            &"a".repeat(65),
        ] {
            assert!(CommandName::parse("name", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_name_the_field_and_rule() {
        assert!(
            msg(CommandSpec::new("spec", "Model", "d", "")).starts_with("spec.name: must match")
        );
        assert!(msg(CommandSpec::new("spec", "m", "a\nb", ""))
            .contains("spec.description: must be one line"));
        assert!(msg(CommandSpec::new("spec", "m", "a\u{7}", "")).contains("control characters"));
        assert!(msg(CommandSpec::new("spec", "m", "d", &"h".repeat(257)))
            .contains("spec.argument_hint: must be at most 256"));
        assert!(msg(CommandSpec::new("spec", "m", &"d".repeat(1025), "")).contains("at most 1024"));
        assert!(CommandSpec::new("spec", "m", &"é".repeat(1024), &"h".repeat(256)).is_ok());
    }

    #[test]
    fn card_text_shows_what_it_holds() {
        for c in [
            '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200B}', '\u{FEFF}', '\u{200E}', '\u{200F}', '\u{061C}',
        ] {
            let text = format!("Deploy{c} now");
            let e = msg(CommandSpec::new("spec", "m", &text, ""));
            assert!(
                e.starts_with("spec.description: must not contain invisible"),
                "{e}"
            );
            assert!(e.contains(&format!("U+{:04X}", c as u32)), "{e}");
            let e = msg(CommandSpec::new("spec", "m", "d", &text));
            assert!(e.starts_with("spec.argument_hint:"), "{e}");
        }
        assert!(msg(CommandSpec::new("spec", "m", "   ", ""))
            .contains("spec.description: must not be whitespace only"));
        assert!(msg(CommandSpec::new("spec", "m", "d", "\u{3000}"))
            .contains("spec.argument_hint: must not be whitespace only"));
        // Joiners that scripts and emoji need stay allowed.
        assert!(CommandSpec::new("spec", "m", "Family 👨\u{200D}👩 ok", "").is_ok());
    }
}
