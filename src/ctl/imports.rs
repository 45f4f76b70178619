//! Prompt commands from elsewhere: every prompt an MCP server lists, and the refusals of
//! an import.

use crate::bodies::Handlers;
use crate::pb;
use crate::registry::prompt_files;
use crate::rules::body::{Body, HandlerBinding, HandlerKind, HandlerPolicy, PromptBody};
use crate::rules::policy::Access;
use crate::rules::prompt::argument_hint;
use crate::rules::spec::CommandSpec;

/// Each file or prompt an import refused, on stderr; an error if there was any.
pub(super) fn refusals(refused: &[String]) -> Result<(), String> {
    for line in refused {
        eprintln!("{line}");
    }
    match refused.len() {
        0 => Ok(()),
        n => Err(format!("{n} not imported (see above)")),
    }
}

/// Every prompt the MCP server at `url` lists, as prompt commands of the same name.
/// `headers` (`NAME=FILE`) go with the listing, their values read below `secrets_dir`,
/// and are bound to every command imported, as a commands file binds them.
pub(super) async fn mcp_prompts(
    url: &str,
    headers: &[String],
    secrets_dir: &std::path::Path,
) -> Result<prompt_files::Imported, String> {
    let headers = headers
        .iter()
        .map(|h| {
            let (name, file) = h
                .split_once('=')
                .ok_or_else(|| format!("--header {h}: give NAME=FILE"))?;
            // HTTP header names are case-insensitive; the binding takes them lower-case.
            Ok(pb::HandlerHeader {
                name: name.trim().to_ascii_lowercase(),
                value_file: file.trim().to_owned(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let policy = HandlerPolicy {
        secrets_dir: Some(secrets_dir.to_owned()),
        ..client_policy()
    };
    let server = HandlerBinding::parse_parts(
        "header",
        HandlerKind::Mcp,
        url,
        "url".to_owned(),
        0,
        &headers,
        &policy,
    )
    .map_err(|e| e.to_string())?;
    let handlers = Handlers::new(policy.clone()).map_err(|e| e.to_string())?;
    let listed = handlers.list_prompts(&server).await?;
    let mut imported = prompt_files::Imported::default();
    for prompt in listed {
        let description = prompt
            .description
            .as_deref()
            .map(|d| crate::rules::text::first_py_line(d.trim()).to_owned())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| format!("The MCP prompt {}", prompt.name));
        let description: String = description
            .chars()
            .take(crate::rules::spec::MAX_DESCRIPTION_CHARS)
            .collect();
        let hint = argument_hint(&prompt.arguments);
        let name = prompt.name.replace('_', "-");
        let spec = match CommandSpec::new("", &name, &description, &hint) {
            Ok(spec) => spec,
            Err(e) => {
                imported
                    .refused
                    .push(format!("prompt {:?}: skipped: {e}", prompt.name));
                continue;
            }
        };
        // The server's own default timeout, not the listing's.
        let server = HandlerBinding {
            timeout_ms: 0,
            ..server.clone()
        };
        let body = Body::Prompt {
            prompt: PromptBody::Mcp {
                server,
                prompt: prompt.name,
            },
        };
        imported.commands.push((spec, body, Access::default()));
    }
    Ok(imported)
}

/// The policy a client checks files with: the server's rules of shape; the server
/// applies its own limits (hosts, timeouts, secrets) when the commands arrive.
pub(super) fn client_policy() -> HandlerPolicy {
    HandlerPolicy {
        max_timeout_ms: u32::MAX,
        secrets_dir: Some(".".into()),
        ..HandlerPolicy::default()
    }
}
