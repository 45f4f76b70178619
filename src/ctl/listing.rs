//! Reading the registry: `list` (a table or JSON), `watch`, and the registry as declared
//! commands (for `export`).

use tokio_stream::StreamExt as _;

use crate::ctl::connect::{status_line, Client};
use crate::ctl::imports::client_policy;
use crate::ctl::output::say;
use crate::pb;
use crate::registry::Declared;
use crate::rules::body::Body;
use crate::rules::policy::{Access, Role};
use crate::rules::spec::CommandSpec;

pub(super) async fn list_specs(client: &mut Client) -> Result<pb::ListSpecsResponse, String> {
    client
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .map(|r| r.into_inner())
        .map_err(|s| status_line(&s))
}

pub(super) async fn list(client: &mut Client, json: bool) -> Result<(), String> {
    let listed = list_specs(client).await?;
    if json {
        say!("{}", listing_json(&listed));
        return Ok(());
    }
    say!("revision {}", listed.revision);
    say!(
        "{:<20} {:<8} {:<10} {:<22} DESCRIPTION",
        "NAME",
        "SOURCE",
        "BODY",
        "ROLES"
    );
    for command in &listed.commands {
        let spec = command.spec.clone().unwrap_or_default();
        let body = match (command.body(), &command.handler) {
            (pb::CommandBody::Handler, Some(h)) => match &h.endpoint {
                Some(pb::handler_binding::Endpoint::Grpc(_)) => "grpc",
                Some(pb::handler_binding::Endpoint::JsonRpc(_)) => "json-rpc",
                Some(pb::handler_binding::Endpoint::Mcp(_)) => "mcp",
                None => "handler",
            },
            (pb::CommandBody::Builtin, _) => "built-in",
            (pb::CommandBody::Prompt, _) => {
                match command.prompt.as_ref().and_then(|p| p.source.as_ref()) {
                    Some(pb::prompt_binding::Source::Mcp(_)) => "mcp-prompt",
                    _ => "prompt",
                }
            }
            _ => "none",
        };
        let source = match command.source() {
            pb::CommandSource::File => "file",
            pb::CommandSource::Builtin => "built-in",
            _ => "api",
        };
        let mut roles: Vec<&str> = command
            .allowed_roles()
            .filter_map(Role::of)
            .map(Role::name)
            .collect();
        if roles.is_empty() {
            roles.push("all");
        }
        let hidden = if command.hidden { " (hidden)" } else { "" };
        say!(
            "{:<20} {:<8} {:<10} {:<22} {}{hidden}",
            format!("/{}", spec.name),
            source,
            body,
            roles.join(","),
            spec.description
        );
    }
    Ok(())
}

/// ListSpecs' answer as JSON (the commands and the revision; the card is left out).
pub(super) fn listing_json(listed: &pb::ListSpecsResponse) -> String {
    let commands: Vec<serde_json::Value> = listed
        .commands
        .iter()
        .map(|command| {
            let spec = command.spec.clone().unwrap_or_default();
            let access = Access::parse("allowed_roles", &command.allowed_roles, command.hidden)
                .unwrap_or_default();
            serde_json::json!({
                "name": spec.name,
                "description": spec.description,
                "argument_hint": spec.argument_hint,
                "source": command.source().as_str_name(),
                "body": command.body().as_str_name(),
                "handler": command.handler.as_ref().and_then(|h| h.endpoint.as_ref()).map(|e| match e {
                    pb::handler_binding::Endpoint::Grpc(u) => serde_json::json!({"grpc": u}),
                    pb::handler_binding::Endpoint::JsonRpc(u) => serde_json::json!({"json_rpc": u}),
                    pb::handler_binding::Endpoint::Mcp(u) => serde_json::json!({"mcp": u}),
                }),
                "prompt": command.prompt.as_ref().and_then(|p| p.source.as_ref()).map(|s| match s {
                    pb::prompt_binding::Source::Template(t) => serde_json::json!({"template": t}),
                    pb::prompt_binding::Source::Mcp(m) => serde_json::json!({"mcp": m.url, "name": m.name}),
                }),
                "roles": access.roles,
                "hidden": access.hidden,
            })
        })
        .collect();
    serde_json::json!({"revision": listed.revision, "commands": commands}).to_string()
}

/// The listed commands as configuration declares them, in order; built-ins that only
/// come from configuration are left out.
pub(super) fn declared_of(listed: &pb::ListSpecsResponse) -> Result<Vec<Declared>, String> {
    let policy = client_policy();
    listed
        .commands
        .iter()
        .filter(|c| c.source() != pb::CommandSource::Builtin)
        .map(|c| {
            let s = c.spec.clone().unwrap_or_default();
            let spec = CommandSpec::new("spec", &s.name, &s.description, &s.argument_hint)
                .map_err(|e| e.to_string())?;
            let body = Body::from_bindings("", c.handler.as_ref(), c.prompt.as_ref(), &policy)
                .map_err(|e| e.to_string())?;
            let access = Access::parse("allowed_roles", &c.allowed_roles, c.hidden)
                .map_err(|e| e.to_string())?;
            Ok((spec, body, access))
        })
        .collect()
}

pub(super) async fn watch(client: &mut Client, json: bool) -> Result<(), String> {
    let mut stream = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .map_err(|s| status_line(&s))?
        .into_inner();
    while let Some(update) = stream.next().await {
        let update = update.map_err(|s| status_line(&s))?;
        if json {
            say!("{}", listing_json(&update));
        } else {
            let names: Vec<String> = update
                .commands
                .iter()
                .map(|c| format!("/{}", c.spec.as_ref().map_or("", |s| s.name.as_str())))
                .collect();
            say!("revision {}: {}", update.revision, names.join(" "));
        }
    }
    Ok(())
}
