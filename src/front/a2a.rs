//! A2A 1.0 as the front reads and writes it, in JSON: the pre-check on a request's
//! bytes, the message and task read into our protobuf types for the rules, and the
//! answers a command gets (the reply event, the task) on each binding. Everything
//! specific to A2A's JSON is here; the rest of the front moves bytes.

use serde_json::{json, Map, Value};

use crate::front::json_text;
use crate::pb::{self, SubState, TaskState};
use crate::rules::structs::{to_struct, to_value};

/// The task data's key in a task's metadata (docs/kit-contract.md, section 3).
pub const TASK_DATA_KEY: &str = "a2a-commands";

/// Whether a request body might carry a command, judged on its bytes without parsing
/// them: the body is small, and somewhere a JSON string starts with `/` and a lower-case
/// letter (written as is, or with `/` escaped). A body this says no to cannot hold a
/// message whose only text starts so (the contract's pre-check, section 1), so it goes
/// to the agent untouched and is never parsed.
pub fn may_hold_command(body: &[u8], max: usize) -> bool {
    if body.len() > max {
        return false;
    }
    // Every form has a `/`, or a `\` escaping one: a body with neither is answered
    // at the cost of two scans, never looked at quote by quote.
    if memchr::memchr2(b'/', b'\\', body).is_none() {
        return false;
    }
    let starts = |at: usize, prefix: &[u8]| body.get(at..at + prefix.len()) == Some(prefix);
    memchr::memchr_iter(b'"', body).any(|i| {
        let after = |n: usize| body.get(i + 1 + n).copied();
        let letter = |at: Option<u8>| at.is_some_and(|c| c.is_ascii_lowercase());
        (after(0) == Some(b'/') && letter(after(1)))
            || (starts(i + 1, b"\\/") && letter(after(2)))
            || ((starts(i + 1, b"\\u002f") || starts(i + 1, b"\\u002F")) && letter(after(6)))
    })
}

/// The largest body the pre-check reads: a command's message is short; a larger body is
/// a plain message by construction (its text would exceed any command's).
pub const PRECHECK_MAX_BYTES: usize = 64 << 10;

/// The message of a `SendMessage` request's params (or an HTTP+JSON body), when it is
/// exactly one text part: what could be a command. Anything else is `None` (and goes
/// to the agent untouched).
pub fn command_candidate(message: &Value) -> Option<&str> {
    let parts = message.get("parts")?.as_array()?;
    let [part] = parts.as_slice() else {
        return None;
    };
    let text = part.get("text")?.as_str()?;
    may_be_command(text).then_some(text)
}

/// Whether a message's one text part could be a command: `/` and a lower-case letter
/// (the name's first character). Whether it is one is the registry's to say.
pub fn may_be_command(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next() == Some('/') && chars.next().is_some_and(|c| c.is_ascii_lowercase())
}

/// The A2A message `message` (1.0 JSON) as our protobuf type, for the rules and the
/// handlers: ids, role, parts (text, url and data parts; raw bytes only as a part
/// without content), metadata, extensions and reference task ids.
pub fn message_from_json(message: &Value) -> pb::Message {
    let text = |key: &str| {
        message
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let strings = |key: &str| -> Vec<String> {
        message
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let role = match message.get("role").and_then(Value::as_str) {
        Some("ROLE_AGENT" | "agent") => pb::Role::Agent,
        Some("ROLE_USER" | "user") => pb::Role::User,
        _ => pb::Role::Unspecified,
    };
    let parts = message
        .get("parts")
        .and_then(Value::as_array)
        .map(|parts| parts.iter().map(part_from_json).collect())
        .unwrap_or_default();
    pb::Message {
        message_id: text("messageId"),
        context_id: text("contextId"),
        task_id: text("taskId"),
        role: role.into(),
        parts,
        metadata: message
            .get("metadata")
            .filter(|m| m.is_object())
            .map(to_struct),
        extensions: strings("extensions"),
        reference_task_ids: strings("referenceTaskIds"),
    }
}

fn part_from_json(part: &Value) -> pb::Part {
    use pb::part::Content;
    let content = if let Some(text) = part.get("text").and_then(Value::as_str) {
        Some(Content::Text(text.to_owned()))
    } else if let Some(url) = part.get("url").and_then(Value::as_str) {
        Some(Content::Url(url.to_owned()))
    } else {
        part.get("data").map(|data| Content::Data(to_value(data)))
    };
    pb::Part {
        content,
        metadata: part
            .get("metadata")
            .filter(|m| m.is_object())
            .map(to_struct),
        filename: part
            .get("filename")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        media_type: part
            .get("mediaType")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    }
}

/// A task's state from its JSON name (1.0's `TASK_STATE_*`, or 0.3's lower-case words).
pub fn state_from_json(state: Option<&str>) -> TaskState {
    let Some(state) = state else {
        return TaskState::Submitted;
    };
    TaskState::from_str_name(state)
        .or_else(|| {
            TaskState::from_str_name(&format!(
                "TASK_STATE_{}",
                state.to_ascii_uppercase().replace('-', "_")
            ))
        })
        .filter(|s| *s != TaskState::Unspecified)
        .unwrap_or(TaskState::Submitted)
}

/// The task snapshot Execute is given for the A2A task `task` (1.0 JSON): its ids and
/// state, and its task data read as the kit contract reads it (section 3). Sub-tasks'
/// states are not looked up: each counts as submitted.
pub fn snapshot_from_task(task: &Value) -> pb::TaskSnapshot {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let state = state_from_json(task.pointer("/status/state").and_then(Value::as_str));
    let data = task
        .pointer(&format!("/metadata/{TASK_DATA_KEY}"))
        .cloned()
        .unwrap_or(Value::Null);
    let read = |camel: &str, snake: &str| data.get(camel).or_else(|| data.get(snake));
    let sub_state = match read("subState", "sub_state").and_then(Value::as_str) {
        Some("awaiting-next-message") if state == TaskState::InputRequired => {
            SubState::AwaitingNextMessage
        }
        Some("awaiting-answer") if state == TaskState::InputRequired => SubState::AwaitingAnswer,
        _ => SubState::Unspecified,
    };
    let count = |v: Option<&Value>| {
        v.and_then(Value::as_f64)
            .map_or(0, |n| n.clamp(0.0, f64::from(u32::MAX)) as u32)
    };
    let plan = data
        .get("plan")
        .filter(|p| p.is_object())
        .map(|plan| pb::PlanProgress {
            steps_done: count(plan.get("stepsDone").or_else(|| plan.get("steps_done"))),
            steps_total: count(plan.get("stepsTotal").or_else(|| plan.get("steps_total"))),
        });
    let sub_tasks = read("subTasks", "sub_tasks")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(|id| pb::SubTaskSnapshot {
                    id: id.to_owned(),
                    state: TaskState::Submitted.into(),
                })
                .collect()
        })
        .unwrap_or_default();
    pb::TaskSnapshot {
        id: text(task.get("id")).unwrap_or_default(),
        context_id: text(task.get("contextId")).unwrap_or_default(),
        name: text(data.get("name")).unwrap_or_default(),
        state: state.into(),
        sub_state: sub_state.into(),
        settings: Some(pb::TaskSettings {
            model: text(data.pointer("/settings/model")),
            effort: text(data.pointer("/settings/effort")),
        }),
        plan,
        sub_tasks,
    }
}

/// The task data after a command's changes (settings replaced, a sub-task's id
/// appended), keys the front does not know kept; `None` when nothing changes.
pub fn data_with_changes(data: &Value, changes: &crate::rules::reply::Changes) -> Option<Value> {
    if changes.model.is_none() && changes.effort.is_none() && changes.sub_task.is_none() {
        return None;
    }
    let mut data = data.as_object().cloned().unwrap_or_default();
    if changes.model.is_some() || changes.effort.is_some() {
        let mut settings = data
            .get("settings")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if let Some(model) = &changes.model {
            settings.insert("model".into(), Value::String(model.clone()));
        }
        if let Some(effort) = &changes.effort {
            settings.insert("effort".into(), Value::String(effort.clone()));
        }
        data.insert("settings".into(), Value::Object(settings));
    }
    if let Some(sub_task) = &changes.sub_task {
        let mut ids = data
            .get("subTasks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        ids.push(Value::String(sub_task.id.clone()));
        data.insert("subTasks".into(), Value::Array(ids));
    }
    Some(Value::Object(data))
}

/// A new task the front makes for a command sent as a task's first message (the kit
/// contract's lifecycle, section 4): `state`, the message in its history, its data.
pub fn new_task(
    id: &str,
    context_id: &str,
    message: &Value,
    state: &str,
    status_message: Option<Value>,
    data: Value,
) -> Value {
    let mut sent = message.clone();
    if let Some(m) = sent.as_object_mut() {
        m.insert("taskId".into(), Value::String(id.to_owned()));
        m.insert("contextId".into(), Value::String(context_id.to_owned()));
    }
    let mut status = Map::new();
    status.insert("state".into(), Value::String(state.to_owned()));
    if let Some(reply) = status_message {
        status.insert("message".into(), reply);
    }
    // Built by hand: `json!` would copy each part through a serializer once more.
    let mut metadata = Map::with_capacity(1);
    metadata.insert(TASK_DATA_KEY.into(), data);
    let mut task = Map::with_capacity(5);
    task.insert("id".into(), Value::String(id.to_owned()));
    task.insert("contextId".into(), Value::String(context_id.to_owned()));
    task.insert("status".into(), Value::Object(status));
    task.insert("history".into(), Value::Array(vec![sent]));
    task.insert("metadata".into(), Value::Object(metadata));
    Value::Object(task)
}

/// What a `ListTasks` request asks, as far as the tasks only the front holds are
/// concerned: whether it is the first page (they are listed there, ahead of the
/// agent's), how many at most, and the filters each must pass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListAsked {
    /// No `pageToken`: the first page.
    pub first_page: bool,
    /// `pageSize`, when given.
    pub page_size: Option<usize>,
    /// `contextId`: only tasks of that context.
    pub context_id: Option<String>,
    /// `status`: only tasks in that state (`TASK_STATE_*`).
    pub status: Option<String>,
    /// `statusTimestampAfter` (RFC 3339): only tasks whose status changed after it.
    pub after: Option<String>,
    /// `historyLength`: at most that many of each task's latest messages.
    pub history_length: Option<usize>,
}

/// An RFC 3339 timestamp as (seconds, nanoseconds), comparable.
fn instant(text: &str) -> Option<(i64, i32)> {
    let at: prost_types::Timestamp = text.parse().ok()?;
    Some((at.seconds, at.nanos))
}

/// A2A's default `pageSize` for `ListTasks`, and its largest.
const LIST_PAGE_DEFAULT: usize = 50;
const LIST_PAGE_MAX: usize = 100;

impl ListAsked {
    /// From a JSON-RPC request's `params`.
    pub fn from_params(params: &Value) -> Self {
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
        let number = |key: &str| {
            params
                .get(key)
                .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
                .and_then(|n| usize::try_from(n).ok())
        };
        Self::from_fields(
            text("pageToken"),
            number("pageSize"),
            text("contextId"),
            text("status"),
            text("statusTimestampAfter"),
            number("historyLength"),
        )
    }

    /// From an HTTP+JSON `GET .../tasks` query string (camelCase names, or snake_case).
    pub fn from_query(query: Option<&str>) -> Self {
        let pairs: Vec<(String, String)> =
            url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .into_owned()
                .collect();
        let text = |camel: &str, snake: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == camel || key == snake)
                .map(|(_, value)| value.clone())
        };
        let number = |camel: &str, snake: &str| text(camel, snake)?.parse().ok();
        Self::from_fields(
            text("pageToken", "page_token"),
            number("pageSize", "page_size"),
            text("contextId", "context_id"),
            text("status", "status"),
            text("statusTimestampAfter", "status_timestamp_after"),
            number("historyLength", "history_length"),
        )
    }

    fn from_fields(
        page_token: Option<String>,
        page_size: Option<usize>,
        context_id: Option<String>,
        status: Option<String>,
        after: Option<String>,
        history_length: Option<usize>,
    ) -> Self {
        let given = |v: Option<String>| v.filter(|v| !v.is_empty());
        Self {
            first_page: given(page_token).is_none(),
            page_size,
            context_id: given(context_id),
            status: given(status).filter(|s| s != "TASK_STATE_UNSPECIFIED"),
            after: given(after),
            history_length,
        }
    }

    /// How many of the front's own tasks the first page may hold.
    pub fn limit(&self) -> usize {
        self.page_size
            .filter(|n| *n > 0)
            .unwrap_or(LIST_PAGE_DEFAULT)
            .min(LIST_PAGE_MAX)
    }

    /// `task` as the listing shows it, if it passes the filters.
    pub fn shown(&self, mut task: Value) -> Option<Value> {
        let field = |task: &Value, pointer: &str| {
            task.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if self.context_id.is_some() && field(&task, "/contextId") != self.context_id {
            return None;
        }
        if self.status.is_some() && field(&task, "/status/state") != self.status {
            return None;
        }
        if let Some(after) = self.after.as_deref().and_then(instant) {
            if field(&task, "/status/timestamp")
                .and_then(|at| instant(&at))
                .is_none_or(|at| at <= after)
            {
                return None;
            }
        }
        if let Some(keep) = self.history_length {
            if let Some(history) = task.get_mut("history").and_then(Value::as_array_mut) {
                let drop = history.len().saturating_sub(keep);
                history.drain(..drop);
            }
            if keep == 0 {
                task.as_object_mut().map(|task| task.remove("history"));
            }
        }
        Some(task)
    }
}

/// `segment` percent-encoded for one path segment (a task id in an HTTP+JSON path).
pub fn urlencode(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes()).collect()
}

/// A JSON-RPC success answer.
pub fn rpc_result(id: &Value, result: Value) -> Value {
    // Built by hand: `json!` would copy `result` through a serializer.
    let mut answer = Map::with_capacity(3);
    answer.insert("jsonrpc".into(), Value::from("2.0"));
    answer.insert("id".into(), id.clone());
    answer.insert("result".into(), result);
    Value::Object(answer)
}

/// `{key: value}`, `value` moved in (`json!` would copy it through a serializer).
pub fn keyed(key: &str, value: Value) -> Value {
    Value::Object(Map::from_iter([(key.to_owned(), value)]))
}

/// A JSON-RPC error answer.
pub fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// JSON-RPC's parse error (the body is not JSON).
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request (JSON, but not a request).
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's invalid params.
pub const INVALID_PARAMS: i64 = -32602;
/// The JSON-RPC method the kits add for argument completion (the kit contract, 6).
pub const COMPLETE_METHOD: &str = "commands/complete";
/// JSON-RPC's internal error: here, the upstream could not be reached.
pub const INTERNAL_ERROR: i64 = -32603;
/// A2A's `TaskNotFoundError`.
pub const TASK_NOT_FOUND: i64 = -32001;
/// A2A's `TaskNotCancelableError`.
pub const TASK_NOT_CANCELABLE: i64 = -32002;
/// A2A's `UnsupportedOperationError`.
pub const UNSUPPORTED_OPERATION: i64 = -32004;
/// A2A's VersionNotSupportedError: the request named a version not served.
pub const VERSION_NOT_SUPPORTED: i64 = -32009;

/// Whether `task` is in a terminal state (nothing more happens to it).
pub fn is_terminal(task: &Value) -> bool {
    matches!(
        task.pointer("/status/state").and_then(Value::as_str),
        Some(
            "TASK_STATE_COMPLETED"
                | "TASK_STATE_FAILED"
                | "TASK_STATE_CANCELED"
                | "TASK_STATE_REJECTED"
        )
    )
}

/// Cancels `task` at `timestamp` (RFC 3339): its state becomes canceled. `false`, and
/// nothing changed, when it has already ended.
pub fn cancel(task: &mut Value, timestamp: &str) -> bool {
    if is_terminal(task) || !task.is_object() {
        return false;
    }
    task["status"] = json!({"state": "TASK_STATE_CANCELED", "timestamp": timestamp});
    true
}

/// The data of one server-sent event: its `data:` lines, joined.
pub fn sse_data(event: &[u8]) -> String {
    String::from_utf8_lossy(event)
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim_start)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One server-sent event carrying `data`.
pub fn sse_event(data: &Value) -> String {
    let mut event = String::from("data: ");
    event.push_str(&String::from_utf8(json_text::write(data)).expect("JSON is UTF-8"));
    event.push_str("\n\n");
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_answer_from_its_text_is_the_bytes_of_the_value_s() {
        let task = json!({"id": "front-1", "status": {"state": "TASK_STATE_INPUT_REQUIRED"},
                          "metadata": {"x": [1, "é\u{1}"]}});
        let text = serde_json::value::to_raw_value(&task).unwrap();
        for id in [json!(7), json!("r-1"), Value::Null] {
            let want = json_text::write(&rpc_result(&id, keyed("task", task.clone())));
            assert_eq!(json_text::task_answer(Some(&id), &text), want);
        }
        assert_eq!(
            json_text::task_answer(None, &text),
            json_text::write(&keyed("task", task))
        );
    }

    #[test]
    fn a_task_is_canceled_once_and_an_ended_one_never() {
        let mut task = json!({"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}});
        assert!(!is_terminal(&task));
        assert!(cancel(&mut task, "2026-12-05T00:00:00Z"));
        assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED");
        assert!(is_terminal(&task));
        let before = task.clone();
        assert!(!cancel(&mut task, "2026-12-06T00:00:00Z"));
        assert_eq!(task, before);
    }

    #[test]
    fn the_byte_precheck_finds_every_way_json_can_write_a_command() {
        let max = PRECHECK_MAX_BYTES;
        assert!(may_hold_command(br#"{"parts":[{"text":"/status"}]}"#, max));
        assert!(may_hold_command(br#"{"parts":[{"text":"\/status"}]}"#, max));
        assert!(may_hold_command(
            br#"{"parts":[{"text":"\u002fstatus"}]}"#,
            max
        ));
        assert!(!may_hold_command(
            br#"{"parts":[{"text":"hello /status"}]}"#,
            max
        ));
        assert!(!may_hold_command(br#"{"parts":[{"text":"/Status"}]}"#, max));
        assert!(!may_hold_command(br#"{"parts":[{"text":"/ x"}]}"#, max));
        let big = format!(r#"{{"parts":[{{"text":"/status {}"}}]}}"#, "x".repeat(max));
        assert!(!may_hold_command(big.as_bytes(), max));
    }

    #[test]
    fn only_one_text_part_starting_with_a_slash_and_a_letter_is_a_candidate() {
        let one = json!({"parts": [{"text": "/model gpt"}]});
        assert_eq!(command_candidate(&one), Some("/model gpt"));
        let two = json!({"parts": [{"text": "/model"}, {"text": "x"}]});
        assert_eq!(command_candidate(&two), None);
        let data = json!({"parts": [{"data": {"text": "/model"}}]});
        assert_eq!(command_candidate(&data), None);
        assert_eq!(command_candidate(&json!({"parts": [{"text": "/9"}]})), None);
    }

    #[test]
    fn a_task_s_data_is_read_as_the_kit_contract_says() {
        let task = json!({
            "id": "t-1", "contextId": "c-1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED"},
            "metadata": {"a2a-commands": {
                "name": "Docs", "settings": {"model": "gpt-x"}, "sub_state": "awaiting-answer",
                "plan": {"stepsDone": 1.7, "stepsTotal": -3}, "subTasks": ["t-1.1", 7]
            }}
        });
        let snapshot = snapshot_from_task(&task);
        assert_eq!(snapshot.name, "Docs");
        assert_eq!(snapshot.state(), TaskState::InputRequired);
        assert_eq!(snapshot.sub_state(), SubState::AwaitingAnswer);
        assert_eq!(snapshot.settings.unwrap().model.as_deref(), Some("gpt-x"));
        assert_eq!(
            snapshot.plan,
            Some(pb::PlanProgress {
                steps_done: 1,
                steps_total: 0
            })
        );
        assert_eq!(snapshot.sub_tasks.len(), 1);
        let working = json!({"id": "t", "status": {"state": "working"},
            "metadata": {"a2a-commands": {"subState": "awaiting-next-message"}}});
        let snapshot = snapshot_from_task(&working);
        assert_eq!(snapshot.state(), TaskState::Working);
        assert_eq!(
            snapshot.sub_state(),
            SubState::Unspecified,
            "only while input-required"
        );
    }

    #[test]
    fn changes_are_written_over_the_data_keeping_the_rest() {
        use crate::rules::reply::Changes;
        let data = json!({"name": "Docs", "settings": {"effort": "low"}, "mine": 1});
        let changes = Changes {
            model: Some("gpt-y".into()),
            ..Changes::default()
        };
        let written = data_with_changes(&data, &changes).unwrap();
        assert_eq!(
            written,
            json!({"name": "Docs", "settings": {"effort": "low", "model": "gpt-y"}, "mine": 1})
        );
        assert_eq!(data_with_changes(&data, &Changes::default()), None);
    }
}
