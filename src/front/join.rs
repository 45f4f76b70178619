//! One task across the front and the agent: the front's task joined to the agent's
//! (its id and context written back as the front's in every answer and event), the
//! follow-up and prompt bodies sent on, and the task data the front keeps, shown in the
//! tasks it passes back.

use std::sync::Arc;

use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;
use http_body_util::BodyExt as _;
use hyper::header;
use serde_json::{json, Value};

use crate::front::a2a::{self, TASK_DATA_KEY};
use crate::front::answer::upstream_failed;
use crate::front::context::Context;
use crate::front::json_text;
use crate::front::limits::Timed;
use crate::front::operations::Binding;
use crate::front::reading::read_whole;
use crate::front::records::Kept;
use crate::front::records::{Own, Records, Scope, Upstream as Joined};
use crate::front::upstream::{self as agent};
use crate::http1::head::Answer;
use crate::rules::card::EXTENSION_URI;

/// A body of the frames sent on `rx` (data, then perhaps trailers), as they come.
pub(super) fn frames_body(rx: FrameReceiver) -> Body {
    Body::new(http_body_util::StreamBody::new(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    ))
}

/// What a task that writes a body frame by frame sends its frames on.
pub(super) type FrameReceiver = tokio::sync::mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>;

/// Sets `task`'s task data to `data`; an empty one is left out (as the kit contract
/// leaves out keys with no value), with the metadata it would have been alone in.
pub(super) fn set_data(task: &mut Value, data: Value) {
    if !task.is_object() {
        return;
    }
    if data.as_object().is_some_and(serde_json::Map::is_empty) {
        if let Some(metadata) = task.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove(TASK_DATA_KEY);
            if metadata.is_empty() {
                task.as_object_mut().map(|t| t.remove("metadata"));
            }
        }
        return;
    }
    if !task.get("metadata").is_some_and(Value::is_object) {
        task["metadata"] = json!({});
    }
    task["metadata"][TASK_DATA_KEY] = data;
}

/// The context of `task`, or `fallback` when there is no task or it names none.
pub(super) fn task_context(task: &Option<Value>, fallback: &str) -> String {
    task.as_ref()
        .and_then(|t| t.get("contextId"))
        .and_then(Value::as_str)
        .unwrap_or(fallback)
        .to_owned()
}

/// The request body with a prompt command's expansion as the message: one text part,
/// and the metadata the kits add (`command`, `originalText`).
pub(super) fn prompt_body(binding: Binding, body: &Value, name: &str, text: &str) -> Bytes {
    let mut body = body.clone();
    let message = body.pointer_mut(binding.message_at());
    if let Some(message) = message {
        let typed = message
            .pointer("/parts/0/text")
            .cloned()
            .unwrap_or(Value::Null);
        message["parts"] = if binding == Binding::JsonRpc03 {
            json!([{"kind": "text", "text": text}])
        } else {
            json!([{"text": text}])
        };
        if !message.get("metadata").is_some_and(Value::is_object) {
            message["metadata"] = json!({});
        }
        message["metadata"]["command"] = json!(name);
        message["metadata"]["originalText"] = typed;
    }
    Bytes::from(json_text::write(&body))
}

/// The task data in `task` (an empty object when it has none).
pub(super) fn data_of(task: &Value) -> Value {
    task.pointer(&format!("/metadata/{TASK_DATA_KEY}"))
        .cloned()
        .unwrap_or_else(|| json!({}))
}

/// Every task id `from` in `value` (a task's `id`, a message's or event's `taskId`,
/// `referenceTaskIds`) written as `to`.
pub(super) fn rename(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object.iter_mut() {
                match (key.as_str(), &*inner) {
                    ("id" | "taskId", Value::String(id)) if id == from => *inner = json!(to),
                    _ => rename(inner, from, to),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(id) if id == from => *item = json!(to),
                    _ => rename(item, from, to),
                }
            }
        }
        _ => {}
    }
}

/// Every `contextId` `from` in `value` written as `to`.
pub(super) fn rename_context(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object.iter_mut() {
                match (key.as_str(), &*inner) {
                    ("contextId", Value::String(id)) if id == from => *inner = json!(to),
                    _ => rename_context(inner, from, to),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| rename_context(i, from, to)),
        _ => {}
    }
}

/// The agent's context id in one of its answers (beside the task id [`task_id_in`]
/// finds).
pub(super) fn context_in(value: &Value) -> Option<String> {
    let value = value.get("result").unwrap_or(value);
    [
        "/task/contextId",
        "/message/contextId",
        "/statusUpdate/contextId",
        "/artifactUpdate/contextId",
        "/contextId",
    ]
    .iter()
    .find_map(|at| value.pointer(at))
    .and_then(Value::as_str)
    .map(str::to_owned)
}

/// The agent's task id in one of its answers (a task, a message, an event; JSON-RPC's
/// `result` or the HTTP+JSON body).
pub(super) fn task_id_in(value: &Value) -> Option<String> {
    let value = value.get("result").unwrap_or(value);
    [
        "/task/id",
        "/message/taskId",
        "/statusUpdate/taskId",
        "/artifactUpdate/taskId",
    ]
    .iter()
    .find_map(|at| value.pointer(at))
    .or_else(|| value.get("status").and(value.get("id")))
    // 0.3: the result is the object itself, named by its `kind`.
    .or_else(|| {
        let kind = value.get("kind")?.as_str()?;
        matches!(kind, "message" | "status-update" | "artifact-update")
            .then(|| value.get("taskId"))
            .flatten()
    })
    .and_then(Value::as_str)
    .map(str::to_owned)
}

/// The body of a plain message on the front's task, for the agent: its `taskId` the
/// agent's (or none, so that the agent starts its task), its `contextId` the one the
/// agent knows the task by (so that a client that named the front's, or none, is never
/// refused for a context that does not match), and the task's chosen settings in its
/// metadata under this extension's URI (one key an agent that honours `/model` reads).
pub(super) fn follow_up_body(
    binding: Binding,
    body: &Value,
    joiner: &Joiner,
    data: &Value,
) -> Bytes {
    let mut body = body.clone();
    let message = body.pointer_mut(binding.message_at());
    if let Some(message) = message.and_then(Value::as_object_mut) {
        match &joiner.upstream {
            Some(upstream) => {
                message.insert("taskId".into(), json!(upstream.id));
            }
            None => {
                message.remove("taskId");
            }
        }
        if let Some(front_context) = &joiner.front_context {
            let named = message.get("contextId").and_then(Value::as_str);
            if named.is_none_or(|c| c.is_empty() || c == front_context) {
                let context = joiner
                    .upstream
                    .as_ref()
                    .and_then(|u| u.context.as_deref())
                    .unwrap_or(front_context);
                message.insert("contextId".into(), json!(context));
            }
        }
        if let Some(settings) = data.get("settings").filter(|s| s.is_object()) {
            let metadata = message.entry("metadata").or_insert_with(|| json!({}));
            if metadata.is_object() {
                metadata[EXTENSION_URI] = json!({"settings": settings});
            }
        }
    }
    Bytes::from(json_text::write(&body))
}

/// Where the first whole server-sent event in `pending` ends (after its blank line).
pub(super) fn event_end(pending: &[u8]) -> Option<usize> {
    let lf = pending
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|at| at + 2);
    let crlf = pending
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Writes the agent's id of one front task back as the front's, and the agent's
/// context as the front's, in answers, and shows the task data the front keeps in the
/// task.
pub(super) struct Joiner {
    pub(super) front: String,
    /// The context the front gave the task (none: the agent's own task).
    pub(super) front_context: Option<String>,
    /// The agent's task, once known.
    pub(super) upstream: Option<Joined>,
    /// The task data the front keeps, shown in the task.
    pub(super) data: Option<Value>,
}

impl Joiner {
    /// For the front's task `front`, kept as `own`.
    pub(super) fn of_own(front: &str, own: &Own) -> Self {
        Self {
            front: front.to_owned(),
            front_context: own
                .task
                .get("contextId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            upstream: own.upstream.clone(),
            data: None,
        }
    }

    /// For the agent's own task `id`, whose data the front keeps: only the data is
    /// written in.
    pub(super) fn of_agents(id: &str) -> Self {
        Self {
            front: id.to_owned(),
            front_context: None,
            upstream: Some(Joined {
                id: id.to_owned(),
                context: None,
            }),
            data: None,
        }
    }

    /// The agent's id for the task (the front's while it has none).
    pub(super) fn upstream_id(&self) -> &str {
        self.upstream.as_ref().map_or(&self.front, |u| &u.id)
    }

    /// Rewrites one answer (or one event's data) in place; returns the agent's task
    /// when this answer is the first to give it (the two are one task from now on).
    pub(super) fn rewrite(&mut self, value: &mut Value) -> Option<Joined> {
        let mut found = None;
        if self.upstream.is_none() {
            found = task_id_in(value).map(|id| Joined {
                id,
                context: context_in(value),
            });
            self.upstream.clone_from(&found);
        }
        let Some(from) = &self.upstream else {
            return None;
        };
        rename(value, &from.id, &self.front);
        if let (Some(theirs), Some(ours)) = (&from.context, &self.front_context) {
            if theirs != ours {
                rename_context(value, theirs, ours);
            }
        }
        let Some(data) = &self.data else {
            return found;
        };
        for at in ["/result/task", "/task", "/result", ""] {
            let Some(task) = value.pointer_mut(at) else {
                continue;
            };
            if task.get("id").and_then(Value::as_str) == Some(self.front.as_str())
                && task.get("status").is_some()
            {
                set_data(task, data.clone());
                break;
            }
        }
        found
    }

    /// Rewrites one server-sent event (its `data:` lines as one JSON value).
    pub(super) fn rewrite_event(&mut self, event: &[u8]) -> (Bytes, Option<Joined>) {
        let text = String::from_utf8_lossy(event);
        let Ok(mut value) = serde_json::from_str::<Value>(&a2a::sse_data(event)) else {
            return (Bytes::copy_from_slice(event), None);
        };
        let found = self.rewrite(&mut value);
        let mut out = String::new();
        for line in text.lines() {
            if !line.starts_with("data:") && !line.is_empty() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push_str(&a2a::sse_event(&value));
        (Bytes::from(out), found)
    }
}

/// Joins the front's task `front` to the agent's `upstream` in the records; a failure
/// is logged (the answer in hand is still right; a later call asks the agent again).
pub(super) async fn join(records: &Records, front: &str, upstream: &Joined, scope: &Scope) {
    if let Err(error) = records.join(front, upstream, scope).await {
        tracing::warn!(error = %error, task = %front, upstream_task = %upstream.id, "the front could not record the agent's id for its task");
    }
}

/// The agent's answer about the front's task `front` with the agent's id for it
/// written as `front` (learning that id from the answer when it is not known yet),
/// and the task data the front keeps in the task. A stream is rewritten event by
/// event, each passed on as it arrives.
pub(super) async fn translate(
    ctx: &Context,
    answer: Answer,
    mut joiner: Joiner,
    scope: &Scope,
) -> Answer {
    let (mut parts, body) = answer.into_parts();
    let streaming = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    parts.headers.remove(header::CONTENT_LENGTH);
    // The task data the front keeps, shown in the task it passes back: a task it
    // made, or the agent's, whose data a command changed.
    joiner.data = match ctx.records.get(&joiner.front, scope).await {
        Ok(Some(Kept::Task(own))) => Some(data_of(&own.task)),
        Ok(Some(Kept::Data(data))) => Some(data),
        Ok(None) => None,
        Err(error) => {
            tracing::warn!(error = %error, task = %joiner.front, "the front's records could not be read; the answer goes without the task data");
            None
        }
    };
    if let Some(coding) = agent::encoding(&parts.headers) {
        // Asked for identity, the agent encoded its answer all the same: it passes
        // as it came, unread (its ids the agent's).
        tracing::warn!(coding, task = %joiner.front, "the agent encoded an answer the front asked for unencoded; it passes unread");
        return Answer::from_parts(parts, body);
    }
    let records = Arc::clone(&ctx.records);
    let scope = scope.clone();
    if !streaming {
        let bytes = match read_whole(ctx, body).await {
            Ok(bytes) => bytes,
            Err(error) => return upstream_failed(Binding::HttpJson, &Value::Null, &error),
        };
        let body = match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut value) => {
                if let Some(found) = joiner.rewrite(&mut value) {
                    join(&records, &joiner.front, &found, &scope).await;
                }
                Bytes::from(json_text::write(&value))
            }
            Err(_) => bytes,
        };
        return Answer::from_parts(parts, Body::from(body));
    }
    let body = Timed::new(body, ctx.options.stream_idle);
    let (events, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut body = body;
        let mut pending: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = match frame.map(Frame::into_data) {
                Ok(Ok(data)) => data,
                // Trailers (a gRPC agent's status) end the stream as they came.
                Ok(Err(trailers)) => {
                    if !pending.is_empty() {
                        let rest = Bytes::from(std::mem::take(&mut pending));
                        let _ = events.send(Ok(Frame::data(rest))).await;
                    }
                    let _ = events.send(Ok(trailers)).await;
                    return;
                }
                Err(e) => {
                    let _ = events.send(Err(std::io::Error::other(e.to_string()))).await;
                    return;
                }
            };
            pending.extend_from_slice(&data);
            while let Some(end) = event_end(&pending) {
                let event: Vec<u8> = pending.drain(..end).collect();
                let (rewritten, found) = joiner.rewrite_event(&event);
                if let Some(found) = found {
                    join(&records, &joiner.front, &found, &scope).await;
                }
                if events.send(Ok(Frame::data(rewritten))).await.is_err() {
                    return;
                }
            }
        }
        if !pending.is_empty() {
            let _ = events.send(Ok(Frame::data(Bytes::from(pending)))).await;
        }
    });
    Answer::from_parts(parts, frames_body(rx))
}
