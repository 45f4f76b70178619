//! Declarative commands: the `--commands-file` JSON, read at start and whenever it
//! changes, and reconciled into the registry with the built-ins (see
//! [`Change::Configure`]).
//!
//! The file has the shape of the harness's plugin `commands.json`, with our handler
//! binding where that file has its hook: `{"commands": [{"name", "description",
//! "argument_hint", "handler"}]}`; a prompt command has `"prompt"` instead, a template
//! or `{"mcp": URL, "name": ...}`. A file is checked whole before anything changes; a
//! bad file changes nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::metrics::{metrics, ReconcileLabels};
use crate::pb;
use crate::registry::handle::Registry;
use crate::registry::snapshot::{Registered, Source};
use crate::registry::state::{Change, Declared};
use crate::rules::body::{Body, HandlerBinding, HandlerKind, HandlerPolicy, PromptBody};
use crate::rules::builtins::Builtin;
use crate::rules::policy::{Access, Role};
use crate::rules::spec::CommandSpec;
use crate::rules::text::quote_prefix;

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct File {
    commands: Vec<Entry>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    description: String,
    #[serde(default)]
    argument_hint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handler: Option<HandlerEntry>,
    /// A prompt command's prompt: a template, or an MCP server's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompt: Option<PromptEntry>,
    /// The roles allowed to run it (`assignee`, `reporter`, `watcher`, `admin`);
    /// absent: every role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    roles: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    hidden: bool,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct HandlerEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    grpc: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    json_rpc: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mcp: Option<String>,
    #[serde(default)]
    timeout_ms: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    headers: Vec<HeaderEntry>,
}

#[derive(Deserialize, Serialize)]
#[serde(untagged, try_from = "serde_json::Value")]
enum PromptEntry {
    Template(String),
    Mcp(McpPromptEntry),
}

/// Read by hand, so that a bad entry is named: serde's untagged enums say only that no
/// variant matched.
impl TryFrom<serde_json::Value> for PromptEntry {
    type Error = String;

    fn try_from(value: serde_json::Value) -> Result<Self, String> {
        match value {
            serde_json::Value::String(template) => Ok(Self::Template(template)),
            object @ serde_json::Value::Object(_) => serde_json::from_value(object)
                .map(Self::Mcp)
                .map_err(|e| format!("prompt: {e}")),
            _ => Err(
                "prompt: must be a template (a string) or an MCP prompt ({\"mcp\": URL, \"name\": ...})"
                    .to_owned(),
            ),
        }
    }
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct McpPromptEntry {
    mcp: String,
    name: String,
    #[serde(default)]
    timeout_ms: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    headers: Vec<HeaderEntry>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct HeaderEntry {
    name: String,
    value_file: String,
}

/// The registry's `commands` as a commands file (see [`render`]). Built-ins that only
/// come from configuration are left out: listing them would make the file own them.
pub fn render_registered<'a>(commands: impl IntoIterator<Item = &'a Registered>) -> String {
    render(
        commands
            .into_iter()
            .filter(|c| c.source != Source::Builtins)
            .map(|c| (&c.spec, &c.body, &c.access)),
    )
}

/// `commands` as a commands file (pretty JSON), in their order.
pub fn render<'a>(
    commands: impl IntoIterator<Item = (&'a CommandSpec, &'a Body, &'a Access)>,
) -> String {
    let commands = commands
        .into_iter()
        .map(|(spec, body, access)| Entry {
            roles: access
                .roles
                .as_ref()
                .map(|roles| roles.iter().map(|r| r.name().to_owned()).collect()),
            hidden: access.hidden,
            name: spec.name.to_string(),
            description: spec.description.clone(),
            argument_hint: spec.argument_hint.clone(),
            handler: match body {
                Body::Handler { handler } => {
                    let url = Some(handler.url.clone());
                    let (grpc, json_rpc, mcp) = match handler.kind {
                        HandlerKind::Grpc => (url, None, None),
                        HandlerKind::JsonRpc => (None, url, None),
                        HandlerKind::Mcp => (None, None, url),
                    };
                    Some(HandlerEntry {
                        grpc,
                        json_rpc,
                        mcp,
                        timeout_ms: handler.timeout_ms,
                        headers: headers_of(handler),
                    })
                }
                Body::Builtin { .. } | Body::None | Body::Prompt { .. } => None,
            },
            prompt: match body {
                Body::Prompt {
                    prompt: PromptBody::Template { template },
                } => Some(PromptEntry::Template(template.as_str().to_owned())),
                Body::Prompt {
                    prompt: PromptBody::Mcp { server, prompt },
                } => Some(PromptEntry::Mcp(McpPromptEntry {
                    mcp: server.url.clone(),
                    name: prompt.clone(),
                    timeout_ms: server.timeout_ms,
                    headers: headers_of(server),
                })),
                _ => None,
            },
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&File { commands }).expect("serializes");
    text.push('\n');
    text
}

fn headers_of(binding: &HandlerBinding) -> Vec<HeaderEntry> {
    binding
        .headers
        .iter()
        .map(|h| HeaderEntry {
            name: h.name.clone(),
            value_file: h.value_file.clone(),
        })
        .collect()
}

fn headers_to_proto(headers: Vec<HeaderEntry>) -> Vec<pb::HandlerHeader> {
    headers
        .into_iter()
        .map(|h| pb::HandlerHeader {
            name: h.name,
            value_file: h.value_file,
        })
        .collect()
}

/// A commands file that cannot be used; the message names the file and the problem.
#[derive(Debug, thiserror::Error)]
#[error("commands file {}: {reason}", path.display())]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: String,
    /// The file is fine but the registry could not take it now (the fleet store is
    /// unreachable, or not read yet): the same content is tried again.
    pub transient: bool,
}

/// The file's commands, in file order, as the registry takes them.
pub type FileCommands = Vec<Declared>;

/// Parses and checks a commands file's text; the first problem is the error.
pub fn parse(text: &str, policy: &HandlerPolicy) -> Result<FileCommands, String> {
    parse_all(text, policy)?.into_iter().collect()
}

/// Every problem of a commands file's text, one line each; empty when it is valid.
pub fn check(text: &str, policy: &HandlerPolicy) -> Vec<String> {
    match parse_all(text, policy) {
        Err(e) => vec![e],
        Ok(entries) => entries.into_iter().filter_map(Result::err).collect(),
    }
}

/// The commands file's own key for a field the API names: an MCP prompt is
/// `{"mcp": URL, "name", "timeout_ms", "headers"}` in the file where the API's
/// `PromptBinding` nests `mcp.url`, `mcp.name`, ... (a template's problems keep naming
/// `prompt.template`, the form's name).
fn file_key(field: &str) -> String {
    if let Some((at, rest)) = field.split_once(".prompt.") {
        let key = match rest.strip_prefix("mcp.") {
            Some("url") => "mcp".to_owned(),
            Some(inner) => inner.to_owned(),
            None => rest.to_owned(),
        };
        return format!("{at}.prompt.{key}");
    }
    field.to_owned()
}

/// Each entry checked on its own (so every problem is found), names checked for
/// duplicates; an error only for text that is not a commands file at all.
fn parse_all(text: &str, policy: &HandlerPolicy) -> Result<Vec<Result<Declared, String>>, String> {
    let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = HashSet::new();
    Ok(file
        .commands
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            let at = format!("commands[{i}]");
            if !seen.insert(entry.name.clone()) {
                return Err(format!("{at}.name: {:?} is listed twice", entry.name));
            }
            parse_entry(&at, entry, policy)
        })
        .collect())
}

/// One entry, checked as the registry would check it.
fn parse_entry(at: &str, entry: Entry, policy: &HandlerPolicy) -> Result<Declared, String> {
    let spec = CommandSpec::new(at, &entry.name, &entry.description, &entry.argument_hint)
        .map_err(|e| e.to_string())?;
    let handler = match entry.handler {
        None => None,
        Some(h) => {
            use pb::handler_binding::Endpoint;
            let endpoint = match (h.grpc, h.json_rpc, h.mcp) {
                (Some(url), None, None) => Some(Endpoint::Grpc(url)),
                (None, Some(url), None) => Some(Endpoint::JsonRpc(url)),
                (None, None, Some(url)) => Some(Endpoint::Mcp(url)),
                (None, None, None) => None,
                _ => {
                    return Err(format!(
                        "{at}.handler: set one of grpc, json_rpc and mcp, not several"
                    ))
                }
            };
            Some(pb::HandlerBinding {
                endpoint,
                timeout_ms: h.timeout_ms,
                headers: headers_to_proto(h.headers),
            })
        }
    };
    let prompt = entry.prompt.map(|prompt| {
        use pb::prompt_binding::Source;
        let source = match prompt {
            PromptEntry::Template(text) => Source::Template(text),
            PromptEntry::Mcp(m) => Source::Mcp(pb::McpPrompt {
                url: m.mcp,
                name: m.name,
                timeout_ms: m.timeout_ms,
                headers: headers_to_proto(m.headers),
            }),
        };
        pb::PromptBinding {
            source: Some(source),
        }
    });
    let body = Body::from_bindings(&format!("{at}."), handler.as_ref(), prompt.as_ref(), policy)
        .map_err(|e| match e {
            Error::InvalidArgument { field, rule } => format!("{}: {rule}", file_key(&field)),
            other => other.to_string(),
        })?;
    let mut roles = Vec::new();
    for (i, name) in entry.roles.iter().flatten().enumerate() {
        let role = Role::from_name(name).ok_or_else(|| {
            format!(
                "{at}.roles[{i}]: {} is not assignee, reporter, watcher or admin",
                quote_prefix(name)
            )
        })?;
        roles.push(role);
    }
    roles.sort_unstable();
    roles.dedup();
    let access = Access {
        roles: (!roles.is_empty()).then_some(roles),
        hidden: entry.hidden,
    };
    Ok((spec, body, access))
}

/// Checks `bytes` (the file's content) and makes the registry hold its commands and
/// the `builtins` (see [`Change::Configure`]).
async fn apply_bytes(
    path: &Path,
    bytes: &[u8],
    builtins: &[Builtin],
    policy: &HandlerPolicy,
    registry: &Registry,
) -> Result<(), FileError> {
    let result = reconcile(path, bytes, builtins, policy, registry).await;
    let m = metrics();
    let label = ReconcileLabels {
        result: if result.is_ok() { "ok" } else { "rejected" },
    };
    m.file_reconciles.get_or_create(&label).inc();
    if result.is_ok() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        m.file_last_success.set(now.as_secs_f64());
    }
    result
}

async fn reconcile(
    path: &Path,
    bytes: &[u8],
    builtins: &[Builtin],
    policy: &HandlerPolicy,
    registry: &Registry,
) -> Result<(), FileError> {
    let fail = |reason: String| FileError {
        path: path.to_owned(),
        reason,
        transient: false,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8: {e}")))?;
    let file = parse(text, policy).map_err(fail)?;
    let change = Change::Configure {
        builtins: builtins.to_vec(),
        file: Some(file),
    };
    registry.apply(change).await.map_err(|e: Error| FileError {
        transient: matches!(e, Error::FleetUnavailable(_) | Error::NotReady),
        ..fail(e.to_string())
    })?;
    Ok(())
}

/// Reads, checks and applies the file once; returns the content applied, for
/// [`watch`] to start from.
pub async fn apply(
    path: &Path,
    builtins: &[Builtin],
    policy: &HandlerPolicy,
    registry: &Registry,
) -> Result<Vec<u8>, FileError> {
    let bytes = std::fs::read(path).map_err(|e| FileError {
        path: path.to_owned(),
        reason: e.to_string(),
        transient: false,
    })?;
    apply_bytes(path, &bytes, builtins, policy, registry).await?;
    Ok(bytes)
}

/// Fleet mode without a commands file: makes the registry hold the `builtins` once
/// etcd takes the change, trying again every second until it does.
pub async fn configure_builtins(builtins: Vec<Builtin>, registry: Arc<Registry>) {
    let mut waiting = false;
    let mut resets = registry.resets();
    loop {
        let change = Change::Configure {
            builtins: builtins.clone(),
            file: None,
        };
        match registry.apply(change).await {
            // Applied; again after a reset (etcd recreated or restored).
            Ok(_) => {
                waiting = false;
                if resets.changed().await.is_err() {
                    return;
                }
            }
            Err(e @ (Error::FleetUnavailable(_) | Error::NotReady)) => {
                if !waiting {
                    tracing::warn!(error = %e, "built-ins not applied yet; trying again every second");
                    waiting = true;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => {
                tracing::error!(error = %e, "the built-ins could not be applied");
                return;
            }
        }
    }
}

/// Re-reads the file every `interval` and reconciles when its content differs from
/// `applied` (what was last applied, so a change made while the service started is not
/// missed; `None` applies the file at the first tick). A bad change is logged and
/// skipped: the registry keeps the last good state. A change the registry could not take
/// for now (fleet mode, etcd unreachable) is tried again at the next tick.
/// Kubernetes updates a mounted ConfigMap by swapping a symlink, which polling the path
/// sees.
pub async fn watch(
    path: PathBuf,
    interval: Duration,
    builtins: Vec<Builtin>,
    policy: HandlerPolicy,
    registry: Arc<Registry>,
    applied: Option<Vec<u8>>,
) {
    let mut last = applied;
    let mut waiting = false;
    // After a fleet reset (etcd recreated or restored) the file is applied again.
    let mut resets = registry.resets();
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            Ok(()) = resets.changed() => last = None,
        }
        let current = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                if last.is_some() {
                    tracing::warn!(file = %path.display(), error = %e, "commands file unreadable; keeping the registry as it is");
                    last = None;
                }
                continue;
            }
        };
        if last.as_ref() == Some(&current) {
            continue;
        }
        match apply_bytes(&path, &current, &builtins, &policy, &registry).await {
            Ok(()) => tracing::info!(
                file = %path.display(),
                revision = registry.snapshot().revision(),
                "commands file reconciled"
            ),
            Err(e) if e.transient => {
                if !waiting {
                    tracing::warn!(error = %e, "commands file not applied yet; trying again at every check");
                    waiting = true;
                }
                continue;
            }
            Err(e) => {
                tracing::error!(error = %e, "commands file rejected; keeping the last good registry")
            }
        }
        waiting = false;
        last = Some(current);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_prompts_problems_name_the_files_own_keys() {
        let policy = HandlerPolicy::default();
        let bad_url = r#"{"commands": [{"name": "review", "description": "Review",
            "prompt": {"mcp": "ftp://127.0.0.1/mcp", "name": "review"}}]}"#;
        let problems = check(bad_url, &policy);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("commands[0].prompt.mcp: "),
            "{problems:?}"
        );
        let no_name = r#"{"commands": [{"name": "review", "description": "Review",
            "prompt": {"mcp": "http://127.0.0.1/mcp", "name": ""}}]}"#;
        let problems = check(no_name, &policy);
        assert!(
            problems[0].starts_with("commands[0].prompt.name: "),
            "{problems:?}"
        );
        assert_eq!(
            file_key("commands[2].prompt.template"),
            "commands[2].prompt.template"
        );
        assert_eq!(
            file_key("commands[2].handler.url"),
            "commands[2].handler.url"
        );
    }
}
