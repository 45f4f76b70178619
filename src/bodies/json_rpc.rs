//! Handlers that take JSON-RPC 2.0 POSTs over HTTP(S), method `command.invoked.in`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::bodies::call::{shorten, Failure};
use crate::pb::{self, ParticipantRole};
use crate::rules::body::{HandlerAnswer, HandlerBinding};
use crate::rules::event::v03_state;
use crate::rules::task::state_name;

/// The JSON-RPC method a command invocation is posted as.
pub const METHOD: &str = "command.invoked.in";

/// A pooled HTTP client shared by every JSON-RPC handler.
pub(super) struct JsonRpcClient {
    http: reqwest::Client,
}

impl JsonRpcClient {
    pub(super) fn new() -> Self {
        let http = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(90))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("the HTTP client builds");
        Self { http }
    }

    /// Posts `invocation` as `command.invoked.in`; answers at most `max_answer_bytes`
    /// are read.
    pub(super) async fn call(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
        max_answer_bytes: usize,
    ) -> Result<HandlerAnswer, Failure> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": invocation.correlation_id,
            "method": METHOD,
            "params": {"context": invocation_context(invocation)},
        });
        let mut response = self
            .http
            .post(&binding.url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| {
                let reason = if e.is_connect() {
                    "handler unreachable"
                } else {
                    "request failed"
                };
                Failure::new(reason, e)
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(Failure::new(
                format!("handler answered HTTP {}", status.as_u16()),
                status,
            ));
        }
        let max = max_answer_bytes;
        if response.content_length().is_some_and(|n| n > max as u64) {
            return Err(Failure::new(
                format!("answer larger than {max} bytes"),
                "content-length",
            ));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Failure::new("reading the answer failed", e))?
        {
            if bytes.len() + chunk.len() > max {
                return Err(Failure::new(
                    format!("answer larger than {max} bytes"),
                    "body",
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        parse_answer(&bytes)
    }
}

fn role_name(role: i32) -> Value {
    match ParticipantRole::try_from(role) {
        Ok(ParticipantRole::Assignee) => "assignee".into(),
        Ok(ParticipantRole::Reporter) => "reporter".into(),
        Ok(ParticipantRole::Watcher) => "watcher".into(),
        Ok(ParticipantRole::Admin) => "admin".into(),
        _ => Value::Null,
    }
}

/// The JSON-RPC `context` for an invocation.
pub fn invocation_context(invocation: &pb::Invocation) -> Value {
    let state = |s: i32| pb::TaskState::try_from(s).unwrap_or_default();
    let task = invocation.task.clone().unwrap_or_default();
    let sender = invocation.sender.clone().unwrap_or_default();
    let settings = task.settings.unwrap_or_default();
    let sub_state = match pb::SubState::try_from(task.sub_state).unwrap_or_default() {
        pb::SubState::Unspecified => Value::Null,
        pb::SubState::AwaitingNextMessage => "awaiting-next-message".into(),
        pb::SubState::AwaitingAnswer => "awaiting-answer".into(),
    };
    json!({
        "task_id": invocation.task_id,
        "correlation_id": invocation.correlation_id,
        "attempt": invocation.attempt,
        "command": invocation.command,
        "arguments": invocation.arguments,
        "sender": {"id": sender.id, "role": role_name(sender.role)},
        "task": {
            "id": task.id,
            "context_id": task.context_id,
            "name": task.name,
            "state": state_name(state(task.state)),
            "state_v0_3": v03_state(state(task.state)),
            "sub_state": sub_state,
            "settings": {"model": settings.model, "effort": settings.effort},
            "plan": task.plan.map(|p| json!({"steps_done": p.steps_done, "steps_total": p.steps_total})),
            "sub_tasks": task.sub_tasks.iter().map(|s| json!({"id": s.id, "state": state_name(state(s.state))})).collect::<Vec<_>>(),
        },
    })
}

/// The JSON-RPC answer's shape, checked strictly: wrong types are malformed.
#[derive(Deserialize)]
struct JsonRpcResponse {
    jsonrpc: String,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<JsonRpcError>,
}

#[derive(Deserialize)]
struct JsonRpcError {
    code: i64,
    message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AbortResult {
    abort: Abort,
}

#[derive(Deserialize)]
struct Abort {
    reason: String,
}

#[derive(Deserialize)]
struct ContextResult {
    context: ContextWithResult,
}

#[derive(Deserialize)]
struct ContextWithResult {
    #[serde(default)]
    result: Option<CommandResult>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandResult {
    reply: Option<String>,
    #[serde(default)]
    settings: Option<Settings>,
    #[serde(default)]
    spawn: Option<Spawn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    effort: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Spawn {
    goal: Option<String>,
}

/// Reads a JSON-RPC answer: `result` null (no answer), `{"abort": ...}`, or
/// `{"context": {..., "result": {...}}}`; an `error` member is a failure.
fn parse_answer(bytes: &[u8]) -> Result<HandlerAnswer, Failure> {
    let response: JsonRpcResponse = serde_json::from_slice(bytes).map_err(Failure::malformed)?;
    if response.jsonrpc != "2.0" {
        return Err(Failure::malformed(format!(
            "jsonrpc is {:?}, not \"2.0\"",
            response.jsonrpc
        )));
    }
    if let Some(error) = response.error {
        return Err(Failure::new(
            format!(
                "handler error {}: {}",
                error.code,
                shorten(&error.message, 120)
            ),
            error.message,
        ));
    }
    let result = match response.result {
        None | Some(Value::Null) => return Ok(HandlerAnswer::NoAnswer),
        Some(result) => result,
    };
    if result.get("abort").is_some() {
        let abort: AbortResult = serde_json::from_value(result).map_err(Failure::malformed)?;
        return Ok(HandlerAnswer::Abort(abort.abort.reason));
    }
    let context: ContextResult = serde_json::from_value(result).map_err(Failure::malformed)?;
    let Some(result) = context.context.result else {
        return Ok(HandlerAnswer::NoAnswer);
    };
    let settings = result.settings.unwrap_or(Settings {
        model: None,
        effort: None,
    });
    Ok(HandlerAnswer::Reply {
        reply: result.reply.unwrap_or_default(),
        model: settings.model,
        effort: settings.effort,
        spawn_goal: result.spawn.map(|s| s.goal.unwrap_or_default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Result<HandlerAnswer, String> {
        parse_answer(text.as_bytes()).map_err(|f| f.reason)
    }

    #[test]
    fn json_rpc_answers() {
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":"1","result":null}"#),
            Ok(HandlerAnswer::NoAnswer)
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":"1","result":{"abort":{"reason":"no"}}}"#),
            Ok(HandlerAnswer::Abort("no".into()))
        );
        assert_eq!(
            answer(
                r#"{"jsonrpc":"2.0","id":"1","result":{"context":{"task_id":"t","result":{"reply":"ok","settings":{"model":"m"},"spawn":{"goal":"g"}}}}}"#
            ),
            Ok(HandlerAnswer::Reply {
                reply: "ok".into(),
                model: Some("m".into()),
                effort: None,
                spawn_goal: Some("g".into())
            })
        );
        assert!(answer(
            r#"{"jsonrpc":"2.0","id":"1","result":{"context":{"result":{"reply":5}}}}"#
        )
        .unwrap_err()
        .starts_with("malformed answer"));
        assert!(answer("not json")
            .unwrap_err()
            .starts_with("malformed answer"));
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"nope"}}"#),
            Err("handler error -32601: nope".into())
        );
    }
}
