//! `ctl check`: a commands file checked offline, as `serve` would.

use std::path::Path;

use crate::ctl::output::say;
use crate::registry::commands_file;
use crate::rules::body::HandlerPolicy;

/// Checks `file` as `serve` would with `policy`.
pub(super) fn check(file: &Path, policy: &HandlerPolicy) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let problems = commands_file::check(&text, policy);
    if problems.is_empty() {
        say!("{}: valid", file.display());
        return Ok(());
    }
    for problem in &problems {
        eprintln!("{}: {problem}", file.display());
    }
    Err(format!(
        "{}: {} problem{}",
        file.display(),
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    ))
}
