//! Changing the registry: `register` from flags or a file, `import`, and the requests
//! they send.

use std::path::Path;

use crate::config::{CtlArgs, RegisterArgs};
use crate::ctl::connect::{authorized, status_line, Client};
use crate::ctl::imports::client_policy;
use crate::ctl::output::say;
use crate::pb;
use crate::registry::commands_file;
use crate::registry::Declared;
use crate::rules::body::{Body, HandlerBinding, PromptBody};
use crate::rules::policy::{Access, Role};
use crate::rules::spec::CommandSpec;

pub(super) async fn register(
    client: &mut Client,
    args: &CtlArgs,
    flags: &RegisterArgs,
) -> Result<(), String> {
    let (declared, replace_access) = match &flags.file {
        // A file states each command's whole access.
        Some(file) => (read_file(file)?, true),
        None => (vec![declared_of_flags(flags)?], flags.replace_access),
    };
    register_all(client, args, declared, flags.replace, replace_access).await
}

/// Registers every command, going on past failures (each named on stderr), and fails at
/// the end if any did.
pub(super) async fn register_all(
    client: &mut Client,
    args: &CtlArgs,
    declared: Vec<Declared>,
    replace: bool,
    replace_access: bool,
) -> Result<(), String> {
    let total = declared.len();
    let mut failed = 0;
    for (spec, body, access) in declared {
        let name = spec.name.to_string();
        let sent = Registration {
            spec: &spec,
            body: &body,
            access: &access,
            replace,
            replace_access,
        };
        match send_register(client, args, sent).await {
            Ok(outcome) => say!("/{name}: {outcome}"),
            // One command: its error is the one line.
            Err(line) if total == 1 => return Err(line),
            Err(line) => {
                eprintln!("{line}");
                failed += 1;
            }
        }
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(format!(
            "{failed} of {total} commands were not registered (see above)"
        ))
    }
}

pub(super) fn declared_of_flags(flags: &RegisterArgs) -> Result<Declared, String> {
    use pb::handler_binding::Endpoint as E;
    let name = flags.name.as_deref().unwrap_or_default();
    let description = flags.description.as_deref().unwrap_or_default();
    let spec = CommandSpec::new("--", name, description, &flags.hint).map_err(|e| e.to_string())?;
    let endpoint = match (&flags.grpc, &flags.json_rpc, &flags.mcp) {
        (Some(url), _, _) => Some(E::Grpc(url.clone())),
        (_, Some(url), _) => Some(E::JsonRpc(url.clone())),
        (_, _, Some(url)) => Some(E::Mcp(url.clone())),
        _ => None,
    };
    let template = match (&flags.prompt, &flags.prompt_file) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(file)) => Some(
            std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?,
        ),
        (None, None) => None,
    };
    let prompt = match (template, &flags.mcp_prompt, &endpoint) {
        (Some(template), _, _) => Some(pb::prompt_binding::Source::Template(template)),
        (None, Some(name), Some(E::Mcp(url))) => {
            Some(pb::prompt_binding::Source::Mcp(pb::McpPrompt {
                url: url.clone(),
                name: name.clone(),
                timeout_ms: flags.timeout_ms,
                headers: Vec::new(),
            }))
        }
        _ => None,
    };
    if let Some(source) = prompt {
        let binding = pb::PromptBinding {
            source: Some(source),
        };
        let prompt =
            PromptBody::parse("--prompt", &binding, &client_policy()).map_err(|e| e.to_string())?;
        let access = access_of_flags(flags)?;
        return Ok((spec, Body::Prompt { prompt }, access));
    }
    let body = match endpoint {
        Some(endpoint) => Body::Handler {
            handler: HandlerBinding::parse(
                "--handler",
                &pb::HandlerBinding {
                    endpoint: Some(endpoint),
                    timeout_ms: flags.timeout_ms,
                    headers: Vec::new(),
                },
                &client_policy(),
            )
            .map_err(|e| e.to_string())?,
        },
        None => Body::None,
    };
    Ok((spec, body, access_of_flags(flags)?))
}

/// The access `--role` and `--hidden` give.
pub(super) fn access_of_flags(flags: &RegisterArgs) -> Result<Access, String> {
    let roles = flags
        .roles
        .iter()
        .map(|r| {
            Role::from_name(&r.to_lowercase())
                .ok_or_else(|| format!("--role: {r:?} is not assignee, reporter, watcher or admin"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Access {
        roles: (!roles.is_empty()).then_some(roles),
        hidden: flags.hidden,
    })
}

/// One Register call's content.
pub(super) struct Registration<'a> {
    spec: &'a CommandSpec,
    body: &'a Body,
    access: &'a Access,
    replace: bool,
    replace_access: bool,
}

pub(super) async fn send_register(
    client: &mut Client,
    args: &CtlArgs,
    sent: Registration<'_>,
) -> Result<&'static str, String> {
    let Registration {
        spec,
        body,
        access,
        replace,
        replace_access,
    } = sent;
    let request = pb::RegisterRequest {
        spec: Some(pb::CommandSpec {
            name: spec.name.to_string(),
            description: spec.description.clone(),
            argument_hint: spec.argument_hint.clone(),
        }),
        r#override: replace,
        handler: match body {
            Body::Handler { handler } => Some(handler.to_proto()),
            _ => None,
        },
        allowed_roles: access
            .roles
            .iter()
            .flatten()
            .map(|r| r.to_proto().into())
            .collect(),
        hidden: access.hidden,
        replace_access,
        prompt: match body {
            Body::Prompt { prompt } => Some(prompt.to_proto()),
            _ => None,
        },
    };
    let answer = client
        .register(authorized(args, request)?)
        .await
        .map_err(|s| format!("/{}: {}", spec.name, status_line(&s)))?
        .into_inner();
    Ok(match answer.outcome() {
        pb::RegisterOutcome::Created => "created",
        pb::RegisterOutcome::Replaced => "replaced",
        _ => "unchanged",
    })
}

pub(super) fn read_file(file: &Path) -> Result<Vec<Declared>, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    commands_file::parse(&text, &client_policy()).map_err(|e| format!("{}: {e}", file.display()))
}
