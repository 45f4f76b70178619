//! Prompt commands: a command whose body is text for the model, not a reply.
//!
//! A prompt command expands the typed arguments into a prompt, from a template of its
//! own (Claude Code's and Gemini CLI's custom-command syntax) or from an MCP server's
//! prompt; Execute answers the expansion and the gateway sends it to the model in place
//! of the message's text. This goes beyond the extension, as roles and completion do:
//! the card lists a prompt command like any other. Every rule here is pinned by
//! `docs/vectors/prompts.json`, which the Rust tests and every kit run.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::rules::spec::{is_hidden_format, refuse_hidden_format};
use crate::rules::text::{is_py_whitespace, trim_py_whitespace};

/// Largest template, in bytes of UTF-8.
pub const MAX_TEMPLATE_BYTES: usize = 16 * 1024;
/// Most placeholders one template may hold (each may expand to the whole arguments).
pub const MAX_PLACEHOLDERS: usize = 64;
/// Largest expansion, in bytes of UTF-8, from a template or an MCP server.
pub const MAX_EXPANSION_BYTES: usize = 64 * 1024;

/// A validated template: at most [`MAX_TEMPLATE_BYTES`], at most [`MAX_PLACEHOLDERS`]
/// placeholders, no control characters but tab, line feed and carriage return, and no invisible or
/// text-direction formatting characters (the model reads it: the card text's rule).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PromptTemplate(String);

/// One piece of a template.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    /// Text copied as it is.
    Text(&'a str),
    /// `$$`: a literal `$`.
    Dollar,
    /// `$ARGUMENTS` or `{{args}}`: the whole argument text.
    All,
    /// `$1`…`$9`: the n-th argument (1-based), empty when there is none.
    Positional(usize),
}

/// The pieces of `template`, in order. A `$` that starts no placeholder is text.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    let bytes = template.as_bytes();
    // Bytes, not `&str` slices: `i` steps through multi-byte characters, and every
    // placeholder starts with an ASCII byte, so a match is always at a character boundary.
    while i < bytes.len() {
        let rest = &bytes[i..];
        let (piece, len) = if rest.starts_with(b"$$") {
            (Piece::Dollar, 2)
        } else if rest.starts_with(b"$ARGUMENTS") {
            (Piece::All, "$ARGUMENTS".len())
        } else if rest.starts_with(b"{{args}}") {
            (Piece::All, "{{args}}".len())
        } else if bytes[i] == b'$' && matches!(bytes.get(i + 1), Some(b'1'..=b'9')) {
            (Piece::Positional(usize::from(bytes[i + 1] - b'0')), 2)
        } else {
            i += 1;
            continue;
        };
        if text_start < i {
            out.push(Piece::Text(&template[text_start..i]));
        }
        out.push(piece);
        i += len;
        text_start = i;
    }
    if text_start < template.len() {
        out.push(Piece::Text(&template[text_start..]));
    }
    out
}

fn is_placeholder(piece: &Piece<'_>) -> bool {
    matches!(piece, Piece::All | Piece::Positional(_))
}

impl PromptTemplate {
    /// Checks `text` as a template; `field` names it in errors.
    pub fn parse(field: &str, text: &str) -> Result<Self, Error> {
        if trim_py_whitespace(text).is_empty() {
            return Err(Error::invalid(field, "must not be empty"));
        }
        if text.len() > MAX_TEMPLATE_BYTES {
            return Err(Error::invalid(
                field,
                format!(
                    "must be at most {MAX_TEMPLATE_BYTES} bytes (got {})",
                    text.len()
                ),
            ));
        }
        if let Some(c) = text
            .chars()
            .find(|&c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        {
            return Err(Error::invalid(
                field,
                format!(
                    "must not contain control characters other than tab, line feed and carriage return (found U+{:04X})",
                    c as u32
                ),
            ));
        }
        refuse_hidden_format(field, text)?;
        let placeholders = pieces(text).iter().filter(|p| is_placeholder(p)).count();
        if placeholders > MAX_PLACEHOLDERS {
            return Err(Error::invalid(
                field,
                format!("must have at most {MAX_PLACEHOLDERS} placeholders (got {placeholders})"),
            ));
        }
        Ok(Self(text.to_owned()))
    }

    /// The template's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The template with `arguments` (the text typed after the command's name) in its
    /// placeholders. A template with no placeholder gets non-empty arguments after a
    /// blank line, as Gemini CLI does. Fails when the expansion is longer than
    /// [`MAX_EXPANSION_BYTES`].
    pub fn expand(&self, arguments: &str) -> Result<String, ExpansionError> {
        let pieces = pieces(&self.0);
        let mut out = String::with_capacity(self.0.len() + arguments.len());
        let words = if pieces.iter().any(|p| matches!(p, Piece::Positional(_))) {
            split_arguments(arguments)
        } else {
            Vec::new()
        };
        for piece in &pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Dollar => out.push('$'),
                Piece::All => out.push_str(arguments),
                Piece::Positional(n) => {
                    out.push_str(words.get(n - 1).map(String::as_str).unwrap_or(""))
                }
            }
            if out.len() > MAX_EXPANSION_BYTES {
                return Err(ExpansionError::TooLong);
            }
        }
        if !pieces.iter().any(is_placeholder) && !trim_py_whitespace(arguments).is_empty() {
            out.push_str("\n\n");
            out.push_str(arguments);
        }
        check_expansion(&out)?;
        Ok(out)
    }
}

/// Why a prompt could not be expanded: the command's failure reply says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpansionError {
    /// Longer than [`MAX_EXPANSION_BYTES`].
    TooLong,
    /// Text from an MCP server holds an invisible or text-direction character.
    Hidden(char),
}

impl std::fmt::Display for ExpansionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLong => write!(f, "the prompt is longer than {MAX_EXPANSION_BYTES} bytes"),
            Self::Hidden(c) => write!(
                f,
                "the prompt contains the invisible or text-direction character U+{:04X}",
                *c as u32
            ),
        }
    }
}

/// Checks an expansion's size.
fn check_expansion(text: &str) -> Result<(), ExpansionError> {
    if text.len() > MAX_EXPANSION_BYTES {
        return Err(ExpansionError::TooLong);
    }
    Ok(())
}

fn find_hidden(text: &str) -> Option<char> {
    text.chars().find(|&c| is_hidden_format(c))
}

/// The arguments split on whitespace (Python's `str.isspace()`), the way Claude Code
/// splits them for `$1`…`$9`: a double quote starts a group that runs to the next
/// double quote, whitespace included; the quotes themselves are dropped; a group left
/// open runs to the end.
pub fn split_arguments(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in text.chars() {
        if c == '"' {
            quoted = !quoted;
            in_word = true;
        } else if !quoted && is_py_whitespace(c) {
            if in_word {
                words.push(std::mem::take(&mut word));
                in_word = false;
            }
        } else {
            word.push(c);
            in_word = true;
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// An argument an MCP prompt declares (`prompts/list`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Whether `prompts/get` needs it.
    #[serde(default)]
    pub required: bool,
}

/// A prompt an MCP server lists (`prompts/list`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedPrompt {
    /// Its name on the server.
    pub name: String,
    /// What it does, if the server says.
    pub description: Option<String>,
    /// Its declared arguments.
    pub arguments: Vec<PromptArgument>,
}

/// The argument hint of a prompt command: its declared arguments as the usage shows
/// them (`<required> [<optional>]`).
pub fn argument_hint(declared: &[PromptArgument]) -> String {
    usage("", declared)
        .trim_start_matches('/')
        .trim()
        .to_owned()
}

/// The usage line of a prompt command: `/<name> <required> [<optional>]`.
pub fn usage(command: &str, declared: &[PromptArgument]) -> String {
    let mut line = format!("/{command}");
    for argument in declared {
        if argument.required {
            line.push_str(&format!(" <{}>", argument.name));
        } else {
            line.push_str(&format!(" [<{}>]", argument.name));
        }
    }
    line
}

/// The arguments for `prompts/get`, from the typed text: one declared argument takes
/// the whole text; several take the words in order (split as for `$1`…`$9`), the last
/// taking every word left, joined by one space. An argument with no text is left out.
/// A required argument left out is a refusal: `Err` holds the usage line.
pub fn map_arguments(
    command: &str,
    declared: &[PromptArgument],
    text: &str,
) -> Result<Vec<(String, String)>, String> {
    let text = trim_py_whitespace(text);
    let values: Vec<String> = match declared.len() {
        0 => Vec::new(),
        1 => vec![text.to_owned()],
        n => {
            let mut words = split_arguments(text);
            if words.len() > n {
                let rest = words.split_off(n - 1).join(" ");
                words.push(rest);
            }
            words
        }
    };
    let mut mapped = Vec::new();
    for (i, argument) in declared.iter().enumerate() {
        match values.get(i).filter(|v| !v.is_empty()) {
            Some(value) => mapped.push((argument.name.clone(), value.clone())),
            None if argument.required => return Err(usage(command, declared)),
            None => {}
        }
    }
    Ok(mapped)
}

/// What getting an MCP prompt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptAnswer {
    /// The expansion.
    Expanded(String),
    /// A required argument was missing: the usage line.
    Usage(String),
    /// The server failed or answered what a prompt command cannot send: why.
    Failed(String),
}

/// Which declared argument the typed `text` is completing, and where its value starts
/// in `text` (a byte offset): one argument takes the whole text; of several, the word
/// being typed, words split as [`split_arguments`] splits them (double quotes grouping),
/// the last argument taking every word from its own on.
pub fn completing(declared: usize, text: &str) -> (usize, usize) {
    if declared <= 1 {
        return (0, 0);
    }
    let mut starts = Vec::new();
    let mut in_word = false;
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        if !quoted && is_py_whitespace(c) {
            in_word = false;
            continue;
        }
        if !in_word {
            starts.push(i);
            in_word = true;
        }
        if c == '"' {
            quoted = !quoted;
        }
    }
    // The word being typed: the last one, or a new one after trailing whitespace.
    if !in_word {
        starts.push(text.len());
    }
    let index = (starts.len() - 1).min(declared - 1);
    (index, starts[index])
}

/// What one message of an MCP prompt held, as far as a prompt command cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptPart {
    /// A user message's text.
    UserText(String),
    /// Anything else: what it was (`an assistant message`, `an image`, ...).
    Other(String),
}

/// The expansion of an MCP prompt: the texts of its user messages, a blank line apart,
/// then (when the prompt declares no argument) the typed arguments after a blank line,
/// as a template with no placeholder has them. Anything but user text fails, naming
/// what came back; so does an invisible or text-direction character, or a prompt
/// longer than [`MAX_EXPANSION_BYTES`].
pub fn mcp_expansion(
    parts: &[PromptPart],
    declared: &[PromptArgument],
    arguments: &str,
) -> Result<String, String> {
    let mut texts = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            PromptPart::UserText(text) => texts.push(text.as_str()),
            PromptPart::Other(what) => {
                return Err(format!("the prompt returned {what}, not user text"))
            }
        }
    }
    if texts.is_empty() {
        return Err("the prompt returned no messages".to_owned());
    }
    let mut out = texts.join("\n\n");
    if let Some(c) = find_hidden(&out) {
        return Err(ExpansionError::Hidden(c).to_string());
    }
    if declared.is_empty() && !trim_py_whitespace(arguments).is_empty() {
        out.push_str("\n\n");
        out.push_str(arguments);
    }
    check_expansion(&out).map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(text: &str) -> PromptTemplate {
        PromptTemplate::parse("prompt", text).unwrap()
    }

    #[test]
    fn pieces_read_every_placeholder_and_leave_other_dollars() {
        assert_eq!(
            pieces("a $$ $ARGUMENTS {{args}} $1 $0 $x $"),
            vec![
                Piece::Text("a "),
                Piece::Dollar,
                Piece::Text(" "),
                Piece::All,
                Piece::Text(" "),
                Piece::All,
                Piece::Text(" "),
                Piece::Positional(1),
                Piece::Text(" $0 $x $"),
            ]
        );
    }

    #[test]
    fn completion_finds_the_argument_being_typed() {
        assert_eq!(completing(1, "a b"), (0, 0));
        assert_eq!(completing(2, ""), (0, 0));
        assert_eq!(completing(2, "src/ma"), (0, 0));
        assert_eq!(completing(2, "a.rs "), (1, 5));
        assert_eq!(completing(2, "a.rs te"), (1, 5));
        assert_eq!(
            completing(2, "a.rs te st"),
            (1, 5),
            "the last takes the rest"
        );
        assert_eq!(completing(2, "\"my file.rs\" te"), (1, 13), "quotes group");
        assert_eq!(
            completing(3, "\"my fi"),
            (0, 0),
            "an open quote is one word"
        );
    }

    #[test]
    fn templates_of_any_script_expand() {
        assert_eq!(
            template("Résumé de $1 — «$ARGUMENTS» 🙂")
                .expand("café au lait")
                .unwrap(),
            "Résumé de café — «café au lait» 🙂"
        );
    }

    #[test]
    fn a_template_without_placeholders_gets_the_arguments_after_a_blank_line() {
        assert_eq!(template("Review.").expand("x y").unwrap(), "Review.\n\nx y");
        assert_eq!(template("Review.").expand("").unwrap(), "Review.");
        assert_eq!(template("Costs $$5.").expand("").unwrap(), "Costs $5.");
    }

    #[test]
    fn limits_name_themselves() {
        let long = "x".repeat(MAX_TEMPLATE_BYTES + 1);
        let e = PromptTemplate::parse("prompt", &long)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 16384 bytes"), "{e}");
        let many = "$1".repeat(MAX_PLACEHOLDERS + 1);
        let e = PromptTemplate::parse("prompt", &many)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 64 placeholders"), "{e}");
        let big = template(&"$ARGUMENTS".repeat(MAX_PLACEHOLDERS));
        assert_eq!(big.expand(&"y".repeat(2048)), Err(ExpansionError::TooLong));
    }
}
