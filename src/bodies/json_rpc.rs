//! Handlers that take JSON-RPC 2.0 POSTs over HTTP(S), method `command.invoked.in`.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::bodies::call::{shorten, CallHeaders, Failure};
use crate::pb::{self, ParticipantRole};
use crate::rules::body::{HandlerAnswer, HandlerBinding};
use crate::rules::task::state_name;

/// The JSON-RPC method a command invocation is posted as.
pub const METHOD: &str = "command.invoked.in";

/// A pooled HTTP client shared by every JSON-RPC handler.
pub(super) struct JsonRpcClient {
    http: reqwest::Client,
}

impl JsonRpcClient {
    /// Calls handlers with `http`.
    pub(super) fn new(http: reqwest::Client) -> Self {
        Self { http }
    }

    /// Posts `invocation` as `command.invoked.in`, the `id`-th call to this endpoint,
    /// with `headers`; answers of at most `max_answer_bytes` are read.
    pub(super) async fn call(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
        id: u64,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<HandlerAnswer, Failure> {
        let result = self
            .post(binding, METHOD, invocation, id, headers, max_answer_bytes)
            .await?;
        parse_result(result)
    }

    /// Posts `invocation` as `command.completion` (its `arguments` being what was typed
    /// so far): the values, with descriptions, and the total the handler gives.
    pub(super) async fn complete(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
        id: u64,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<(Vec<(String, String)>, usize), Failure> {
        let result = self
            .post(
                binding,
                COMPLETION_METHOD,
                invocation,
                id,
                headers,
                max_answer_bytes,
            )
            .await?;
        parse_completion(result)
    }

    /// Posts `method` with `invocation`'s context and returns the answer's `result`.
    async fn post(
        &self,
        binding: &HandlerBinding,
        method: &str,
        invocation: &pb::Invocation,
        id: u64,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<Value, Failure> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": method,
            "params": {"context": invocation_context(invocation)},
        });
        let mut request = self
            .http
            .post(&binding.url)
            .header("content-type", "application/json");
        for (name, value) in headers.iter() {
            request = request.header(name, value);
        }
        let mut response = request.body(body.to_string()).send().await.map_err(|e| {
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
        parse_response(&bytes, id)
    }
}

/// The JSON-RPC method a completion request is posted as.
pub const COMPLETION_METHOD: &str = "command.completion";

/// A completion answer: `{"values": [...], "total"?, "has_more"?}`, each value a string
/// or `{"value", "description"?}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompletionResult {
    values: Vec<CompletionValue>,
    #[serde(default)]
    total: Option<u64>,
    #[serde(default)]
    #[allow(dead_code)] // Implied by total; accepted as MCP's shape has it.
    has_more: Option<bool>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum CompletionValue {
    Plain(String),
    Described {
        value: String,
        #[serde(default)]
        description: String,
    },
}

fn parse_completion(result: Value) -> Result<(Vec<(String, String)>, usize), Failure> {
    if result.is_null() {
        return Ok((Vec::new(), 0));
    }
    let result: CompletionResult = serde_json::from_value(result).map_err(Failure::malformed)?;
    let values: Vec<(String, String)> = result
        .values
        .into_iter()
        .map(|v| match v {
            CompletionValue::Plain(value) => (value, String::new()),
            CompletionValue::Described { value, description } => (value, description),
        })
        .collect();
    let total = result.total.map_or(values.len(), |t| t as usize);
    Ok((values, total))
}

/// The reference's role names; a sender with no role (or an unspecified one) is `null`.
fn role_name(role: i32) -> Value {
    ParticipantRole::try_from(role)
        .ok()
        .and_then(crate::rules::policy::Role::of)
        .map_or(Value::Null, |role| role.name().into())
}

/// The context the reference harness sends (its `CommandInvokedIn`, every key present,
/// no other): the same for JSON-RPC and MCP bodies.
pub fn invocation_context(invocation: &pb::Invocation) -> Value {
    let state = |s: i32| state_name(pb::TaskState::try_from(s).unwrap_or_default());
    let task = invocation.task.clone().unwrap_or_default();
    let sender = invocation.sender.clone().unwrap_or_default();
    let settings = task.settings.unwrap_or_default();
    // Empty counts as not chosen, as in the reference.
    let chosen = |v: Option<String>| v.filter(|v| !v.is_empty());
    let sub_state = match pb::SubState::try_from(task.sub_state).unwrap_or_default() {
        pb::SubState::Unspecified => Value::Null,
        pb::SubState::AwaitingNextMessage => "awaiting-next-message".into(),
        pb::SubState::AwaitingAnswer => "awaiting-answer".into(),
    };
    let (steps_done, steps_total) = task.plan.map_or((0, 0), |p| (p.steps_done, p.steps_total));
    json!({
        "task_id": invocation.task_id,
        "correlation_id": invocation.correlation_id,
        "attempt": invocation.attempt,
        "name": invocation.command,
        "arguments": invocation.arguments,
        "sender": sender.id,
        "sender_role": role_name(sender.role),
        "task": {
            "id": task.id,
            "name": task.name,
            "state": state(task.state),
            "sub_state": sub_state,
            "settings": {
                "model": chosen(settings.model),
                "reasoning_effort": chosen(settings.effort),
            },
            "steps_done": steps_done,
            "steps_total": steps_total,
            "children": task.sub_tasks.iter()
                .map(|s| json!({"task_id": s.id, "state": state(s.state)}))
                .collect::<Vec<_>>(),
        },
        "result": null,
    })
}

/// The JSON-RPC answer's shape, checked strictly: wrong types are malformed.
#[derive(Deserialize)]
struct JsonRpcResponse {
    jsonrpc: String,
    #[serde(default)]
    id: Value,
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
#[serde(deny_unknown_fields)]
struct Abort {
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapped {
    context: Context,
}

/// The context as the reference's model reads it back: every key, no other.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Read for their shape: the reference's model requires them.
struct Context {
    task_id: String,
    correlation_id: String,
    attempt: u64,
    name: String,
    arguments: String,
    sender: String,
    sender_role: Option<String>,
    task: serde_json::Map<String, Value>,
    result: Option<CommandResult>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandResult {
    reply: String,
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
    reasoning_effort: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Spawn {
    goal: String,
}

/// The reasons an abort may give, as in the reference.
const ABORT_REASONS: [&str; 3] = ["refused", "policy", "invalid"];

/// Reads a JSON-RPC response to the call numbered `id`: its `result` (null if absent).
fn parse_response(bytes: &[u8], id: u64) -> Result<Value, Failure> {
    let response: JsonRpcResponse = serde_json::from_slice(bytes).map_err(Failure::malformed)?;
    if response.jsonrpc != "2.0" {
        return Err(Failure::malformed(format!(
            "jsonrpc is {:?}, not \"2.0\"",
            shorten(&response.jsonrpc, 16)
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
    if response.id != json!(id) {
        return Err(Failure::malformed(format!(
            "the answer's id {} is not the call's ({id})",
            shorten(&response.id.to_string(), 32)
        )));
    }
    Ok(response.result.unwrap_or(Value::Null))
}

/// Reads what a body answered (a JSON-RPC `result`, or an MCP tool's context): `null`
/// (no answer), `{"abort": {"reason"}}`, or the context with `result` filled in,
/// wrapped as `{"context": ...}` or bare.
pub(super) fn parse_result(result: Value) -> Result<HandlerAnswer, Failure> {
    let object = match result {
        Value::Null => return Ok(HandlerAnswer::NoAnswer),
        Value::Object(object) => object,
        other => {
            return Err(Failure::malformed(format!(
                "result is {}, not an object or null",
                shorten(&other.to_string(), 32)
            )))
        }
    };
    if object.contains_key("abort") {
        let abort: AbortResult =
            serde_json::from_value(Value::Object(object)).map_err(Failure::malformed)?;
        let reason = abort.abort.reason;
        if !ABORT_REASONS.contains(&reason.as_str()) {
            return Err(Failure::new(
                format!(
                    "abort reason {} is not one of refused, policy, invalid",
                    shorten(&format!("{reason:?}"), 40)
                ),
                reason,
            ));
        }
        return Ok(HandlerAnswer::Abort(reason));
    }
    let context = if object.contains_key("context") {
        let wrapped: Wrapped =
            serde_json::from_value(Value::Object(object)).map_err(Failure::malformed)?;
        wrapped.context
    } else {
        serde_json::from_value(Value::Object(object)).map_err(Failure::malformed)?
    };
    let Some(result) = context.result else {
        return Ok(HandlerAnswer::NoAnswer);
    };
    let settings = result.settings.unwrap_or(Settings {
        model: None,
        reasoning_effort: None,
    });
    Ok(HandlerAnswer::Reply {
        reply: result.reply,
        model: settings.model,
        effort: settings.reasoning_effort,
        spawn_goal: result.spawn.map(|s| s.goal),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Result<HandlerAnswer, String> {
        parse_response(text.as_bytes(), 7)
            .and_then(parse_result)
            .map_err(|f| f.reason)
    }

    #[test]
    fn completion_answers() {
        let values = parse_completion(json!({"values": ["staging", {"value": "prod", "description": "Production"}], "total": 5}))
            .unwrap_or_else(|f| panic!("{}", f.reason));
        assert_eq!(
            values,
            (
                vec![
                    ("staging".into(), String::new()),
                    ("prod".into(), "Production".into())
                ],
                5
            )
        );
        assert_eq!(parse_completion(Value::Null).ok(), Some((Vec::new(), 0)));
        assert!(parse_completion(json!({"values": [1]})).is_err());
    }

    fn context(result: &str) -> String {
        format!(
            r#"{{"task_id":"t","correlation_id":"m","attempt":1,"name":"n","arguments":"","sender":"u","sender_role":null,"task":{{}},"result":{result}}}"#
        )
    }

    #[test]
    fn json_rpc_answers_as_the_reference_reads_them() {
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":7,"result":null}"#),
            Ok(HandlerAnswer::NoAnswer)
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":7,"result":{"abort":{"reason":"policy"}}}"#),
            Ok(HandlerAnswer::Abort("policy".into()))
        );
        assert!(
            answer(r#"{"jsonrpc":"2.0","id":7,"result":{"abort":{"reason":"frozen"}}}"#)
                .unwrap_err()
                .starts_with("abort reason \"frozen\" is not one of")
        );
        let reply = HandlerAnswer::Reply {
            reply: "ok".into(),
            model: Some("m".into()),
            effort: Some("high".into()),
            spawn_goal: Some("g".into()),
        };
        let full = context(
            r#"{"reply":"ok","settings":{"model":"m","reasoning_effort":"high"},"spawn":{"goal":"g"}}"#,
        );
        let wrapped = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"context":{full}}}}}"#);
        let bare = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{full}}}"#);
        assert_eq!(answer(&wrapped), Ok(reply.clone()));
        assert_eq!(answer(&bare), Ok(reply));
        let none = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{}}}"#, context("null"));
        assert_eq!(answer(&none), Ok(HandlerAnswer::NoAnswer));
        // Unknown keys, missing keys and wrong types are malformed, as in the reference.
        for bad in [
            context(r#"{"reply":"ok","effort":"high"}"#),
            context(r#"{"reply":5}"#),
            context(r#"{}"#).replace(r#""attempt":1,"#, ""),
            context("null").replace('}', r#","extra":1}"#),
        ] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{bad}}}"#);
            assert!(
                answer(&text).unwrap_err().starts_with("malformed answer"),
                "{text}"
            );
        }
        assert!(answer(r#"{"jsonrpc":"2.0","id":8,"result":null}"#)
            .unwrap_err()
            .contains("is not the call's (7)"));
        assert!(answer("not json")
            .unwrap_err()
            .starts_with("malformed answer"));
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}"#),
            Err("handler error -32601: nope".into())
        );
    }
}
