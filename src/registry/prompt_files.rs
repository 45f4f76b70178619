//! The command files people already keep, read as prompt commands: Claude Code's
//! `.claude/commands/*.md` (Markdown with a front matter) and Gemini CLI's
//! `.gemini/commands/*.toml`. `a2a-commands ctl import-prompts` registers what this reads
//! or writes it as a commands file.
//!
//! Nothing in a file is ever run: a file that asks its tool to run a shell command
//! (`!{...}`, `` !`...` ``) or to read a file (`@{...}`, `@path`) is refused, with a line
//! naming the file and the construct. Symbolic links are refused, never followed (a
//! cloned project's link could point at a secret, which would reach the card), and so is
//! a file larger than a template can be. A sub-folder becomes a prefix of the name, as both
//! tools namespace commands (`git/commit.toml` is `/git-commit`, `:` being `-` here); a
//! name that cannot be a command name is reported and skipped.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::registry::state::Declared;
use crate::rules::body::{Body, PromptBody};
use crate::rules::policy::Access;
use crate::rules::prompt::{PromptTemplate, MAX_TEMPLATE_BYTES};
use crate::rules::spec::{is_command_name, CommandSpec, MAX_DESCRIPTION_CHARS};
use crate::rules::text::first_py_line;

/// What a folder held: the commands read, in name order, and one line per file refused.
#[derive(Debug, Default)]
pub struct Imported {
    /// The prompt commands.
    pub commands: Vec<Declared>,
    /// Each file refused, and why.
    pub refused: Vec<String>,
}

/// The most a command file may hold: a template's limit, and room for a front matter.
const MAX_FILE_BYTES: u64 = MAX_TEMPLATE_BYTES as u64 + 4096;

/// Reads the prompt commands under `path`: its `.claude/commands` and `.gemini/commands`,
/// or `path` itself when it is such a folder (named `commands`). Anything else is the
/// error, so that a project's other Markdown never becomes commands. An unreadable folder
/// is the error too; a bad file is one line of [`Imported::refused`].
pub fn import(path: &Path) -> Result<Imported, String> {
    let mut roots: Vec<PathBuf> = [".claude/commands", ".gemini/commands"]
        .iter()
        .map(|sub| path.join(sub))
        .filter(|p| p.is_dir())
        .collect();
    if roots.is_empty() && path.file_name().is_some_and(|n| n == "commands") {
        roots.push(path.to_owned());
    }
    if roots.is_empty() {
        return Err(format!(
            "{}: no .claude/commands or .gemini/commands folder there (give the project, or the commands folder itself)",
            path.display()
        ));
    }
    let mut imported = Imported::default();
    let mut seen = std::collections::HashMap::new();
    for root in roots {
        let mut files = Vec::new();
        walk(&root, &mut files, &mut imported.refused)?;
        files.sort();
        for file in files {
            let shown = file.display().to_string();
            let result = read_bounded(&file).and_then(|text| read_file(&root, &file, &text));
            match result {
                Ok(Some(command)) => {
                    let name = command.0.name.to_string();
                    if let Some(first) = seen.get(&name) {
                        imported.refused.push(format!(
                            "{shown}: skipped: /{name} is already read from {first}"
                        ));
                        continue;
                    }
                    seen.insert(name, shown);
                    imported.commands.push(command);
                }
                Ok(None) => {}
                Err(reason) => imported.refused.push(format!("{shown}: {reason}")),
            }
        }
    }
    imported
        .commands
        .sort_by(|a, b| a.0.name.as_str().cmp(b.0.name.as_str()));
    Ok(imported)
}

/// A file's text, refused when it is larger than a command file can be.
fn read_bounded(file: &Path) -> Result<String, String> {
    let size = std::fs::metadata(file)
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "refused: {size} bytes, more than a command file can hold ({MAX_FILE_BYTES})"
        ));
    }
    std::fs::read_to_string(file).map_err(|e| format!("cannot read it: {e}"))
}

/// Every `.md` and `.toml` file under `dir`, not following links (each link found is
/// refused) and leaving out hidden folders.
fn walk(dir: &Path, files: &mut Vec<PathBuf>, refused: &mut Vec<String>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if kind.is_symlink() {
            refused.push(format!(
                "{}: refused: a symbolic link (never followed)",
                path.display()
            ));
        } else if kind.is_dir() {
            if !entry.file_name().to_string_lossy().starts_with('.') {
                walk(&path, files, refused)?;
            }
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("md" | "toml")
        ) {
            files.push(path);
        }
    }
    Ok(())
}

/// One file as a command; `None` for a file of neither kind.
fn read_file(root: &Path, file: &Path, text: &str) -> Result<Option<Declared>, String> {
    let relative = file.strip_prefix(root).unwrap_or(file).with_extension("");
    let name = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().replace(':', "-"))
        .collect::<Vec<_>>()
        .join("-");
    let (description, hint, template) = match file.extension().and_then(|e| e.to_str()) {
        Some("md") => claude_command(text)?,
        Some("toml") => gemini_command(text)?,
        _ => return Ok(None),
    };
    if let Some(construct) = injection(&template) {
        return Err(format!(
            "refused: it uses {construct}, which would run a shell command or read a file"
        ));
    }
    if !is_command_name(&name) {
        return Err(format!(
            "skipped: {name:?} cannot be a command name ([a-z][a-z0-9-]*, at most 64 characters)"
        ));
    }
    let description = description
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| first_py_line(template.trim()).to_owned());
    let description: String = description.chars().take(MAX_DESCRIPTION_CHARS).collect();
    let spec = CommandSpec::new("", &name, description.trim(), &hint).map_err(|e| e.to_string())?;
    let template = PromptTemplate::parse("prompt", template.trim()).map_err(|e| e.to_string())?;
    let body = Body::Prompt {
        prompt: PromptBody::Template { template },
    };
    Ok(Some((spec, body, Access::default())))
}

/// A Claude Code command: its front matter's `description` and `argument-hint`, and the
/// Markdown after it as the template.
fn claude_command(text: &str) -> Result<(Option<String>, String, String), String> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((None, String::new(), text.to_owned()));
    };
    // The closing `---` line; an empty front matter closes at once.
    let (front, after) = match rest.strip_prefix("---") {
        Some(after) => ("", after),
        None => {
            let end = rest
                .find("\n---")
                .ok_or("its front matter has no closing ---")?;
            (&rest[..end], &rest[end + 4..])
        }
    };
    let body = after.split_once('\n').map_or("", |(_, b)| b);
    let mut description = None;
    let mut hint = String::new();
    for line in front.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim() {
            "description" => description = Some(value),
            "argument-hint" => hint = value,
            _ => {}
        }
    }
    Ok((description, hint, body.to_owned()))
}

/// A YAML scalar's text: surrounding quotes dropped.
fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return value[1..value.len() - 1].to_owned();
        }
    }
    value.to_owned()
}

/// A Gemini CLI command: `prompt` (required) and `description`.
fn gemini_command(text: &str) -> Result<(Option<String>, String, String), String> {
    #[derive(Deserialize)]
    struct Gemini {
        prompt: String,
        description: Option<String>,
    }
    let parsed: Gemini = toml::from_str(text).map_err(|e| {
        let message = e.message().to_owned();
        format!("not a Gemini CLI command: {message}")
    })?;
    Ok((parsed.description, String::new(), parsed.prompt))
}

/// The first construct in `template` that would make its tool run a shell command or
/// read a file, as written.
fn injection(template: &str) -> Option<String> {
    for (open, close) in [("!{", '}'), ("!`", '`'), ("@{", '}')] {
        if let Some(at) = template.find(open) {
            let rest = &template[at + open.len()..];
            let end = rest
                .find(close)
                .map_or(rest.len(), |i| i + close.len_utf8());
            let shown: String = format!("{open}{}", &rest[..end]).chars().take(48).collect();
            return Some(format!("{shown:?}"));
        }
    }
    // Claude Code's file reference: `@` at the start of a word, then a path.
    let bytes = template.as_bytes();
    for (i, _) in template.match_indices('@') {
        let at_word_start = i == 0 || bytes[i - 1].is_ascii_whitespace();
        let next = template[i + 1..].chars().next();
        if at_word_start && next.is_some_and(|c| !c.is_whitespace()) {
            let shown: String = template[i..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .take(48)
                .collect();
            return Some(format!("the file reference {shown:?}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_read_and_dropped() {
        let (description, hint, body) = claude_command(
            "---\ndescription: \"Review code\"\nargument-hint: [file] [focus]\nallowed-tools: Bash\n---\nReview $1.\n",
        )
        .unwrap();
        assert_eq!(description.as_deref(), Some("Review code"));
        assert_eq!(hint, "[file] [focus]");
        assert_eq!(body, "Review $1.\n");
        let (description, _, body) = claude_command("Just text $ARGUMENTS").unwrap();
        assert_eq!((description, body.as_str()), (None, "Just text $ARGUMENTS"));
        let (description, _, body) = claude_command("---\n---\nEmpty front matter.").unwrap();
        assert_eq!((description, body.as_str()), (None, "Empty front matter."));
    }

    #[test]
    fn injections_are_found_and_emails_are_not() {
        assert!(injection("Run !`git status` now").is_some());
        assert!(injection("Status: !{git status}").is_some());
        assert!(injection("Read @{src/main.rs}").is_some());
        assert!(injection("Look at @src/main.rs please").is_some());
        assert!(injection("@README.md").is_some());
        assert_eq!(injection("Mail me at me@example.com; cost $5!"), None);
        assert_eq!(injection("An @ alone"), None);
    }
}
