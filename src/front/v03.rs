//! A2A 0.3's JSON beside 1.0's (issue 44, point 2): the front keeps and reasons in 1.0
//! JSON, and a client that asked in 0.3 (`message/send`, `tasks/get`, ...) is read and
//! answered through these conversions, so that one answer is never in both. 0.3 objects
//! carry a `kind`; roles are `user` and `agent`; states are lower case with hyphens; a
//! file part nests its content under `file`; a status update says `final`.

use serde_json::{json, Map, Value};

/// A 1.0 state name as 0.3 writes it (`TASK_STATE_INPUT_REQUIRED` → `input-required`).
fn state_v03(state: &str) -> String {
    match state.strip_prefix("TASK_STATE_") {
        Some("UNSPECIFIED") | None => "unknown".into(),
        Some(rest) => rest.to_ascii_lowercase().replace('_', "-"),
    }
}

/// A 0.3 state as 1.0 names it (`input-required` → `TASK_STATE_INPUT_REQUIRED`).
fn state_v10(state: &str) -> String {
    match state {
        "unknown" | "" => "TASK_STATE_UNSPECIFIED".into(),
        other => format!(
            "TASK_STATE_{}",
            other.to_ascii_uppercase().replace('-', "_")
        ),
    }
}

fn role_v03(role: &str) -> &'static str {
    match role {
        "ROLE_AGENT" => "agent",
        _ => "user",
    }
}

fn role_v10(role: &str) -> &'static str {
    match role {
        "agent" => "ROLE_AGENT",
        _ => "ROLE_USER",
    }
}

/// Copies the keys of `from` named in `keys` into `to`, as they are.
fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(value) = from.get(*key) {
            to.insert((*key).to_owned(), value.clone());
        }
    }
}

fn part_v03(part: &Value) -> Value {
    let Some(part) = part.as_object() else {
        return part.clone();
    };
    let mut out = Map::new();
    if let Some(text) = part.get("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text.clone());
    } else if let Some(data) = part.get("data") {
        out.insert("kind".into(), json!("data"));
        out.insert("data".into(), data.clone());
    } else {
        let mut file = Map::new();
        if let Some(url) = part.get("url") {
            file.insert("uri".into(), url.clone());
        }
        if let Some(raw) = part.get("raw") {
            file.insert("bytes".into(), raw.clone());
        }
        if let Some(media) = part.get("mediaType") {
            file.insert("mimeType".into(), media.clone());
        }
        if let Some(name) = part.get("filename") {
            file.insert("name".into(), name.clone());
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(file));
    }
    copy(part, &mut out, &["metadata"]);
    Value::Object(out)
}

fn part_v10(part: &Value) -> Value {
    let Some(part) = part.as_object() else {
        return part.clone();
    };
    let mut out = Map::new();
    match part.get("kind").and_then(Value::as_str) {
        Some("data") => copy(part, &mut out, &["data"]),
        Some("file") => {
            let file = part.get("file").and_then(Value::as_object);
            if let Some(file) = file {
                if let Some(uri) = file.get("uri") {
                    out.insert("url".into(), uri.clone());
                }
                if let Some(bytes) = file.get("bytes") {
                    out.insert("raw".into(), bytes.clone());
                }
                if let Some(mime) = file.get("mimeType") {
                    out.insert("mediaType".into(), mime.clone());
                }
                if let Some(name) = file.get("name") {
                    out.insert("filename".into(), name.clone());
                }
            }
        }
        _ => copy(part, &mut out, &["text"]),
    }
    copy(part, &mut out, &["metadata"]);
    Value::Object(out)
}

const MESSAGE_KEYS: [&str; 6] = [
    "messageId",
    "contextId",
    "taskId",
    "metadata",
    "extensions",
    "referenceTaskIds",
];

/// A 1.0 message as 0.3 writes it.
pub fn message_v03(message: &Value) -> Value {
    let Some(message) = message.as_object() else {
        return message.clone();
    };
    let mut out = Map::new();
    out.insert("kind".into(), json!("message"));
    copy(message, &mut out, &MESSAGE_KEYS);
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or_default();
    out.insert("role".into(), json!(role_v03(role)));
    out.insert("parts".into(), parts(message, part_v03));
    Value::Object(out)
}

/// A 0.3 message as 1.0 writes it.
pub fn message_v10(message: &Value) -> Value {
    let Some(message) = message.as_object() else {
        return message.clone();
    };
    let mut out = Map::new();
    copy(message, &mut out, &MESSAGE_KEYS);
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or_default();
    out.insert("role".into(), json!(role_v10(role)));
    out.insert("parts".into(), parts(message, part_v10));
    Value::Object(out)
}

fn parts(holder: &Map<String, Value>, convert: fn(&Value) -> Value) -> Value {
    let converted = holder
        .get("parts")
        .and_then(Value::as_array)
        .map(|parts| parts.iter().map(convert).collect())
        .unwrap_or_default();
    Value::Array(converted)
}

fn status(status: &Value, state: fn(&str) -> String, message: fn(&Value) -> Value) -> Value {
    let Some(status) = status.as_object() else {
        return status.clone();
    };
    let mut out = Map::new();
    let named = status
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or_default();
    out.insert("state".into(), json!(state(named)));
    if let Some(said) = status.get("message") {
        out.insert("message".into(), message(said));
    }
    copy(status, &mut out, &["timestamp"]);
    Value::Object(out)
}

fn artifact(artifact: &Value, convert: fn(&Value) -> Value) -> Value {
    let Some(artifact) = artifact.as_object() else {
        return artifact.clone();
    };
    let mut out = Map::new();
    copy(
        artifact,
        &mut out,
        &[
            "artifactId",
            "name",
            "description",
            "metadata",
            "extensions",
        ],
    );
    out.insert("parts".into(), parts(artifact, convert));
    Value::Object(out)
}

/// One object's conversion, one way.
type Convert = fn(&Value) -> Value;

/// A task, both ways: `v03` says which way.
fn task(task: &Value, v03: bool) -> Value {
    let Some(task) = task.as_object() else {
        return task.clone();
    };
    let mut out = Map::new();
    if v03 {
        out.insert("kind".into(), json!("task"));
    }
    copy(task, &mut out, &["id", "contextId"]);
    if let Some(said) = task.get("status") {
        out.insert(
            "status".into(),
            if v03 {
                status(said, state_v03, message_v03)
            } else {
                status(said, state_v10, message_v10)
            },
        );
    }
    let (convert_message, convert_part): (Convert, Convert) = if v03 {
        (message_v03, part_v03)
    } else {
        (message_v10, part_v10)
    };
    if let Some(history) = task.get("history").and_then(Value::as_array) {
        out.insert(
            "history".into(),
            history.iter().map(convert_message).collect(),
        );
    }
    if let Some(artifacts) = task.get("artifacts").and_then(Value::as_array) {
        out.insert(
            "artifacts".into(),
            artifacts
                .iter()
                .map(|a| artifact(a, convert_part))
                .collect(),
        );
    }
    copy(task, &mut out, &["metadata"]);
    Value::Object(out)
}

/// A 1.0 task as 0.3 writes it.
pub fn task_v03(value: &Value) -> Value {
    task(value, true)
}

/// A 0.3 task as 1.0 writes it.
pub fn task_v10(value: &Value) -> Value {
    task(value, false)
}

/// One 1.0 answer object (a `SendMessage` result or a stream event: `{"task": ...}`,
/// `{"message": ...}`, `{"statusUpdate": ...}`, `{"artifactUpdate": ...}`, or a bare
/// task) as 0.3's result: the object itself, with its `kind`.
pub fn result_v03(value: &Value) -> Value {
    if let Some(found) = value.get("task") {
        return task_v03(found);
    }
    if let Some(found) = value.get("message") {
        return message_v03(found);
    }
    if let Some(update) = value.get("statusUpdate").and_then(Value::as_object) {
        let mut out = Map::new();
        out.insert("kind".into(), json!("status-update"));
        copy(update, &mut out, &["taskId", "contextId", "metadata"]);
        if let Some(said) = update.get("status") {
            out.insert("status".into(), status(said, state_v03, message_v03));
        }
        // A command's reply does not end the stream's task.
        out.insert("final".into(), json!(false));
        return Value::Object(out);
    }
    if let Some(update) = value.get("artifactUpdate").and_then(Value::as_object) {
        let mut out = Map::new();
        out.insert("kind".into(), json!("artifact-update"));
        copy(
            update,
            &mut out,
            &["taskId", "contextId", "append", "lastChunk", "metadata"],
        );
        if let Some(said) = update.get("artifact") {
            out.insert("artifact".into(), artifact(said, part_v03));
        }
        return Value::Object(out);
    }
    if value.get("status").is_some() && value.get("id").is_some() {
        return task_v03(value);
    }
    value.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_goes_to_0_3_and_back_unchanged() {
        let v10 = json!({
            "id": "t-1", "contextId": "c-1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-12-05T00:00:00Z",
                       "message": {"messageId": "m-1:reply", "taskId": "t-1", "contextId": "c-1",
                                   "role": "ROLE_AGENT", "parts": [{"text": "Model set to gpt-x."}],
                                   "metadata": {"command": "model"}}},
            "history": [{"messageId": "m-1", "role": "ROLE_USER",
                         "parts": [{"text": "/model gpt-x"},
                                   {"url": "https://x.test/a.png", "mediaType": "image/png", "filename": "a.png"},
                                   {"data": {"k": 1}}]}],
            "metadata": {"a2a-commands": {"settings": {"model": "gpt-x"}}}
        });
        let v03 = task_v03(&v10);
        assert_eq!(v03["kind"], "task");
        assert_eq!(v03["status"]["state"], "input-required");
        assert_eq!(v03["status"]["message"]["kind"], "message");
        assert_eq!(v03["status"]["message"]["role"], "agent");
        assert_eq!(
            v03["status"]["message"]["parts"][0],
            json!({"kind": "text", "text": "Model set to gpt-x."})
        );
        assert_eq!(
            v03["history"][0]["parts"][1],
            json!({"kind": "file", "file": {"uri": "https://x.test/a.png", "mimeType": "image/png", "name": "a.png"}})
        );
        assert_eq!(
            v03["history"][0]["parts"][2],
            json!({"kind": "data", "data": {"k": 1}})
        );
        assert_eq!(task_v10(&v03), v10);
    }

    #[test]
    fn a_status_update_is_a_0_3_event_that_is_not_final() {
        let event = json!({"statusUpdate": {"taskId": "t-1", "contextId": "c-1",
            "status": {"state": "TASK_STATE_WORKING"}, "metadata": {"command": "status"}}});
        assert_eq!(
            result_v03(&event),
            json!({"kind": "status-update", "taskId": "t-1", "contextId": "c-1",
                   "metadata": {"command": "status"}, "status": {"state": "working"}, "final": false})
        );
        assert_eq!(state_v10("auth-required"), "TASK_STATE_AUTH_REQUIRED");
        assert_eq!(state_v03("TASK_STATE_UNSPECIFIED"), "unknown");
    }
}
