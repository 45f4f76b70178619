//! Declarative commands: the `--commands-file` JSON, read at start and whenever it
//! changes, and reconciled into the registry with the built-ins (see
//! [`Change::Configure`]).
//!
//! The file has the shape of the harness's plugin `commands.json`, with our handler
//! binding where that file has its hook: `{"commands": [{"name", "description",
//! "argument_hint", "handler"}]}`. A file is checked whole before anything changes; a
//! bad file changes nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::pb;
use crate::registry::handle::Registry;
use crate::registry::snapshot::{Registered, Source};
use crate::registry::state::{Change, Declared};
use crate::rules::body::{Body, HandlerBinding, HandlerKind, HandlerPolicy};
use crate::rules::builtins::Builtin;
use crate::rules::policy::{Access, Role};
use crate::rules::spec::CommandSpec;

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
    /// The roles allowed to run it (`assignee`, `reporter`, `watcher`, `admin`);
    /// absent: every role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    roles: Option<Vec<Role>>,
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
#[serde(deny_unknown_fields)]
struct HeaderEntry {
    name: String,
    value_file: String,
}

/// `commands` as a commands file (pretty JSON), in their order. Built-ins that only come
/// from configuration are left out: listing them would make the file own them.
pub fn render<'a>(commands: impl IntoIterator<Item = &'a Registered>) -> String {
    let commands = commands
        .into_iter()
        .filter(|c| c.source != Source::Builtins)
        .map(|c| Entry {
            roles: c.access.roles.clone(),
            hidden: c.access.hidden,
            name: c.spec.name.to_string(),
            description: c.spec.description.clone(),
            argument_hint: c.spec.argument_hint.clone(),
            handler: match &c.body {
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
                        headers: handler
                            .headers
                            .iter()
                            .map(|h| HeaderEntry {
                                name: h.name.clone(),
                                value_file: h.value_file.clone(),
                            })
                            .collect(),
                    })
                }
                Body::Builtin { .. } | Body::None => None,
            },
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&File { commands }).expect("serializes");
    text.push('\n');
    text
}

/// A commands file that cannot be used; the message names the file and the problem.
#[derive(Debug, thiserror::Error)]
#[error("commands file {}: {reason}", path.display())]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: String,
}

/// The file's commands, in file order, as the registry takes them.
pub type FileCommands = Vec<Declared>;

/// Parses and checks a commands file's text.
pub fn parse(text: &str, policy: &HandlerPolicy) -> Result<FileCommands, String> {
    let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = HashSet::new();
    let mut commands = Vec::with_capacity(file.commands.len());
    for (i, entry) in file.commands.into_iter().enumerate() {
        let at = format!("commands[{i}]");
        let spec = CommandSpec::new(&at, &entry.name, &entry.description, &entry.argument_hint)
            .map_err(|e| e.to_string())?;
        if !seen.insert(spec.name.clone()) {
            return Err(format!("{at}.name: {:?} is listed twice", entry.name));
        }
        let body = match entry.handler {
            None => Body::None,
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
                let binding = pb::HandlerBinding {
                    endpoint,
                    timeout_ms: h.timeout_ms,
                    headers: h
                        .headers
                        .into_iter()
                        .map(|h| pb::HandlerHeader {
                            name: h.name,
                            value_file: h.value_file,
                        })
                        .collect(),
                };
                let handler = HandlerBinding::parse(&format!("{at}.handler"), &binding, policy)
                    .map_err(|e| e.to_string())?;
                Body::Handler { handler }
            }
        };
        let access = Access {
            roles: entry
                .roles
                .map(|mut roles| {
                    roles.sort_unstable();
                    roles.dedup();
                    roles
                })
                .filter(|roles| !roles.is_empty()),
            hidden: entry.hidden,
        };
        commands.push((spec, body, access));
    }
    Ok(commands)
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
    let fail = |reason: String| FileError {
        path: path.to_owned(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8: {e}")))?;
    let file = parse(text, policy).map_err(fail)?;
    let change = Change::Configure {
        builtins: builtins.to_vec(),
        file: Some(file),
    };
    registry
        .apply(change)
        .await
        .map_err(|e: Error| fail(e.to_string()))?;
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
    })?;
    apply_bytes(path, &bytes, builtins, policy, registry).await?;
    Ok(bytes)
}

/// Re-reads the file every `interval` and reconciles when its content differs from
/// `applied` (what was last applied, so a change made while the service started is not
/// missed). A bad change is logged and skipped: the registry keeps the last good state.
/// Kubernetes updates a mounted ConfigMap by swapping a symlink, which polling the path
/// sees.
pub async fn watch(
    path: PathBuf,
    interval: Duration,
    builtins: Vec<Builtin>,
    policy: HandlerPolicy,
    registry: Arc<Registry>,
    applied: Vec<u8>,
) {
    let mut last = Some(applied);
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
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
            Err(e) => {
                tracing::error!(error = %e, "commands file rejected; keeping the last good registry")
            }
        }
        last = Some(current);
    }
}
