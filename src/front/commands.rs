//! Commands through the front: a message whose one text part is a registered command,
//! run with `run::Runner` (Execute's rules) and answered in the binding's shape, with
//! the task the front makes or the data it keeps; and `commands/complete`.

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{json, Value};

use crate::bodies::Trace;
use crate::error::Error;
use crate::front::a2a;
use crate::front::answer::run_failed;
use crate::front::answer::{
    error_answer, json_answer, json_text_answer, records_failed, stream_answer,
};
use crate::front::callers::Verified;
use crate::front::context::{Context, TASK_ID_PREFIX};
use crate::front::handled::Handled;
use crate::front::join::{data_of, prompt_body, set_data, task_context};
use crate::front::json_text;
use crate::front::operations::Binding;
use crate::front::records::{Kept, Own, Scope};
use crate::front::tasks::{plain, task_as_seen};
use crate::front::v03;
use crate::http1::head::{Answer, Headers};
use crate::pb::{self, SubState, TaskState};
use crate::rules::event::JsonForm;
use crate::rules::execute::reply_event;
use crate::rules::parse::single_text;
use crate::rules::task::Task;
use crate::run::{now, Asked, CompleteAsked, Ran, Whole};
use crate::views::{SenderView, TaskView};

/// A message that may be a command, as the front runs it: where it came, and who sent
/// it.
#[derive(Clone, Copy)]
pub(super) struct CommandCall<'a> {
    pub(super) binding: Binding,
    pub(super) path: &'a str,
    pub(super) id: &'a Value,
    pub(super) stream: bool,
    pub(super) headers: &'a Headers,
    pub(super) verified: Option<&'a Verified>,
    pub(super) scope: &'a Scope,
}

/// A message whose one text part may be a command: run, and answered if it is one.
pub(super) async fn command(
    ctx: &Context,
    call: &CommandCall<'_>,
    body: &Value,
    message_json: &Value,
    bytes: &Bytes,
) -> Handled {
    let CommandCall {
        binding,
        path,
        id,
        stream,
        headers,
        verified,
        scope,
    } = *call;
    let message = a2a::message_from_json(message_json);
    // The task: the front's own, the agent's (asked with the caller's credentials),
    // or none yet (the front makes one if this is a command).
    let kept = if message.task_id.is_empty() {
        None
    } else {
        match ctx.records.get(&message.task_id, scope).await {
            Ok(kept) => kept,
            // The agent's own task, with the records out of reach: run without the data
            // the front may keep for it; a command that would change it is refused
            // when it is written.
            Err(_) if !message.task_id.starts_with(TASK_ID_PREFIX) => None,
            Err(error) => return Handled::Answer(records_failed(binding, id, &error)),
        }
    };
    let (own, kept_data) = match kept {
        Some(Kept::Task(own)) => (Some(own), None),
        Some(Kept::Data(data)) => (None, Some(data)),
        None => (None, None),
    };
    let joined = own.as_ref().and_then(|own| own.upstream.clone());
    let task_json = if message.task_id.is_empty() {
        None
    } else {
        // Boxed, as each path a new task's command does not take: the futures of
        // calls to the agent are large, and a command's future is moved whole.
        let looked = Box::pin(task_as_seen(
            ctx,
            binding,
            path,
            id,
            headers,
            &message.task_id,
            own.clone(),
            kept_data,
            scope.tenant.as_deref(),
        ))
        .await;
        match looked {
            Ok(task) => Some(task),
            // The agent answers for its own tasks (not found, not allowed).
            Err(Some(answer)) => return Handled::Answer(answer),
            Err(None) => {
                return not_run(
                    ctx,
                    binding,
                    id,
                    &message,
                    bytes,
                    "the agent's answer about the task could not be read",
                )
            }
        }
    };
    let snapshot = task_json.as_ref().map(a2a::snapshot_from_task);
    let new_task = snapshot.is_none();
    let new_id = ctx.new_id();
    let context_id = if message.context_id.is_empty() {
        format!("ctx-{new_id}")
    } else {
        message.context_id.clone()
    };
    let snapshot = snapshot.unwrap_or_else(|| pb::TaskSnapshot {
        id: new_id.clone(),
        context_id: context_id.clone(),
        // The contract's lifecycle: a command as a task's first message parks it,
        // waiting for the next message.
        state: TaskState::InputRequired.into(),
        sub_state: SubState::AwaitingNextMessage.into(),
        settings: Some(pb::TaskSettings::default()),
        ..Default::default()
    });
    let Ok(task) = Task::from_proto(&snapshot) else {
        return not_run(
            ctx,
            binding,
            id,
            &message,
            bytes,
            "the agent's task is not one the front can read",
        );
    };
    let (sender, role) = ctx.sender(headers, verified);
    let trace = Trace::from_headers(
        headers.get("traceparent").and_then(|v| v.to_str().ok()),
        headers.get("tracestate").and_then(|v| v.to_str().ok()),
    );
    let asked = Asked {
        message_id: &message.message_id,
        text: single_text(&message),
        task: &task,
        whole: Whole::Decoded {
            message: &message,
            task: &snapshot,
            sender: Some(&sender),
        },
        role,
        attempt: 1,
        accepts_prompt: true,
        trace: &trace,
        deadline: None,
    };
    let ran = match ctx.runner.execute(&asked).await {
        Ok(ran) => ran,
        Err(error) => return Handled::Answer(run_failed(ctx, binding, id, &error)),
    };
    match ran {
        Ran::Ordinary { .. } if own.is_some() => {
            Box::pin(plain(ctx, binding, id, body, message_json, scope, bytes)).await
        }
        Ran::Ordinary { .. } => Handled::Forward(bytes.clone()),
        Ran::Prompt { name, text, .. } => {
            let expanded = prompt_body(binding, body, name, &text);
            if own.is_none() {
                return Handled::Forward(expanded);
            }
            let expanded: Value = serde_json::from_slice(&expanded).expect("our JSON");
            let message = expanded.pointer(binding.message_at());
            let mut message = message.cloned().unwrap_or_default();
            if binding == Binding::JsonRpc03 {
                message = v03::message_v10(&message);
            }
            Box::pin(plain(ctx, binding, id, &expanded, &message, scope, bytes)).await
        }
        Ran::Command { name, reply, .. } => {
            let replied = reply_event(
                &task,
                &message.context_id,
                &message.message_id,
                name,
                &reply,
                now(),
                false,
            );
            // The reply's message; the whole event only for a stream, which sends it.
            let event = stream.then(|| replied.to_value(JsonForm::A2a10));
            let reply_message = match &event {
                Some(event) => event
                    .pointer("/status/message")
                    .cloned()
                    .unwrap_or_default(),
                None => replied.message_value(),
            };
            // A new task's data says what it waits for; an existing one's is its own.
            let data = match &task_json {
                Some(task) => data_of(task),
                None => json!({"subState": "awaiting-next-message"}),
            };
            let changed = a2a::data_with_changes(&data, &reply.changes);
            let unchanged = changed.is_none();
            let data = changed.unwrap_or(data);
            if let Some(sub_task) = &reply.changes.sub_task {
                let sub = a2a::new_task(
                    &sub_task.id,
                    &task_context(&task_json, &context_id),
                    &json!({"messageId": format!("{}:goal", sub_task.id), "role": "ROLE_USER",
                            "parts": [{"text": sub_task.goal}],
                            "referenceTaskIds": [snapshot.id]}),
                    "TASK_STATE_SUBMITTED",
                    None,
                    json!({"name": sub_task.name, "goal": sub_task.goal, "parentId": snapshot.id}),
                );
                let sub = Own {
                    task: sub,
                    upstream: None,
                };
                if let Err(error) = ctx.records.put_task(&sub, scope).await {
                    return Handled::Answer(records_failed(binding, id, &error));
                }
            }
            // The new task's JSON as its record was written, for the answer.
            let mut written = None;
            let (submitted, answered) = if new_task {
                let made = |state: &str, status: Option<Value>, data: Value| {
                    a2a::new_task(&new_id, &context_id, message_json, state, status, data)
                };
                // The task as submitted is an event of the stream only.
                let submitted = stream.then(|| made("TASK_STATE_SUBMITTED", None, data.clone()));
                // The reply and the data move into the task: neither is needed after.
                let answered = Own {
                    task: made("TASK_STATE_INPUT_REQUIRED", Some(reply_message), data),
                    upstream: None,
                };
                match ctx.records.put_task_text(&answered, scope).await {
                    Ok(text) => written = Some(text),
                    Err(error) => return Handled::Answer(records_failed(binding, id, &error)),
                }
                (submitted.unwrap_or_default(), answered.task)
            } else {
                let mut task = task_json.unwrap_or_default();
                set_data(&mut task, data.clone());
                // A command that changes nothing of the task writes nothing: it runs
                // while the records are out of reach (etcd down).
                let kept = if unchanged {
                    Ok(())
                } else if own.is_some() {
                    let own = Own {
                        task: task.clone(),
                        upstream: joined,
                    };
                    ctx.records.put_task(&own, scope).await
                } else {
                    ctx.records.put_data(&snapshot.id, &data, scope).await
                };
                if let Err(error) = kept {
                    return Handled::Answer(records_failed(binding, id, &error));
                }
                let mut answered = task.clone();
                if let Some(status) = answered.get_mut("status").and_then(Value::as_object_mut) {
                    status.insert("message".into(), reply_message.clone());
                }
                (task, answered)
            };
            Handled::Answer(if let Some(mut event) = event {
                if new_task {
                    // The reply moves the new task to input-required.
                    event["taskId"] = json!(new_id);
                    event["contextId"] = json!(context_id);
                    event["status"]["message"]["taskId"] = json!(new_id);
                    event["status"]["message"]["contextId"] = json!(context_id);
                }
                stream_answer(
                    binding,
                    id,
                    &[
                        a2a::keyed("task", submitted),
                        a2a::keyed("statusUpdate", event),
                    ],
                )
            } else if let (Some(text), Binding::JsonRpc | Binding::HttpJson | Binding::Grpc) =
                (&written, binding)
            {
                let rpc_id = (binding == Binding::JsonRpc).then_some(id);
                json_text_answer(StatusCode::OK, json_text::task_answer(rpc_id, text))
            } else {
                let result = a2a::keyed("task", answered);
                match binding {
                    Binding::JsonRpc => json_answer(StatusCode::OK, &a2a::rpc_result(id, result)),
                    Binding::JsonRpc03 => json_answer(
                        StatusCode::OK,
                        &a2a::rpc_result(id, v03::result_v03(&result)),
                    ),
                    Binding::HttpJson | Binding::Grpc => json_answer(StatusCode::OK, &result),
                }
            })
        }
    }
}

/// `commands/complete` (the method the kits add to JSON-RPC): what the user has
/// typed completed, as `Complete` completes it, in the kits' result shape (MCP's
/// `completion/complete`: `values`, `total`, `hasMore`, and `command`).
pub(super) async fn complete(
    ctx: &Context,
    path: &str,
    id: &Value,
    headers: &Headers,
    verified: Option<&Verified>,
    scope: &Scope,
    params: &Value,
) -> Answer {
    let binding = Binding::JsonRpc;
    let invalid = |what: &str| {
        error_answer(
            binding,
            id,
            StatusCode::BAD_REQUEST,
            a2a::INVALID_PARAMS,
            &format!("Invalid params: {what}"),
        )
    };
    let Some(text) = params.get("text").and_then(Value::as_str) else {
        return invalid("text must be a string");
    };
    let limit = match params.get("limit") {
        None | Some(Value::Null) => 0,
        Some(limit) => match limit.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(limit) => limit,
            None => return invalid("limit must be a non-negative integer"),
        },
    };
    let task = match params.get("taskId") {
        None | Some(Value::Null) => None,
        Some(Value::String(task_id)) => {
            let (own, kept_data) = match ctx.records.get(task_id, scope).await {
                Ok(Some(Kept::Task(own))) => (Some(own), None),
                Ok(Some(Kept::Data(data))) => (None, Some(data)),
                Ok(None) => (None, None),
                Err(error) => return records_failed(binding, id, &error),
            };
            match task_as_seen(
                ctx,
                binding,
                path,
                id,
                headers,
                task_id,
                own,
                kept_data,
                scope.tenant.as_deref(),
            )
            .await
            {
                Ok(task) => Some(a2a::snapshot_from_task(&task)),
                Err(Some(answer)) => return answer,
                Err(None) => {
                    return error_answer(
                        binding,
                        id,
                        StatusCode::NOT_FOUND,
                        a2a::TASK_NOT_FOUND,
                        &format!("Task not found: {task_id}"),
                    )
                }
            }
        }
        Some(_) => return invalid("taskId must be a string"),
    };
    let (sender, _) = ctx.sender(headers, verified);
    let trace = Trace::from_headers(
        headers.get("traceparent").and_then(|v| v.to_str().ok()),
        headers.get("tracestate").and_then(|v| v.to_str().ok()),
    );
    let task = task.as_ref().map(TaskView::of);
    let asked = CompleteAsked {
        text,
        sender: Some(SenderView::of(&sender)),
        task: task.as_ref(),
        limit,
        trace: &trace,
    };
    let completed = ctx
        .runner
        .complete(&asked, |completions, command, _| {
            let values: Vec<Value> = completions
                .values
                .iter()
                .map(|s| json!({"value": s.value, "text": s.text(), "description": s.description}))
                .collect();
            json!({"values": values, "total": completions.total,
                   "hasMore": completions.has_more, "command": command})
        })
        .await;
    match completed {
        Ok((result, _)) => json_answer(StatusCode::OK, &a2a::rpc_result(id, result)),
        Err(error @ Error::InvalidArgument { .. }) => invalid(&error.to_string()),
        Err(error) => run_failed(ctx, binding, id, &error),
    }
}

/// A message that may be a registered command the front cannot run (`why`): the
/// binding's error saying so, with nothing forwarded, since the agent would take
/// it for a prompt; a message that is not a registered command goes to the agent
/// as the ordinary message it is.
pub(super) fn not_run(
    ctx: &Context,
    binding: Binding,
    id: &Value,
    message: &pb::Message,
    bytes: &Bytes,
    why: &str,
) -> Handled {
    let name = match ctx.runner.registry().read() {
        Ok(snapshot) => match crate::rules::parse::classify(message, &snapshot) {
            crate::rules::parse::Classification::Command { name, .. } => name.to_owned(),
            _ => return Handled::Forward(bytes.clone()),
        },
        Err(_) => "the command".to_owned(),
    };
    Handled::Answer(error_answer(
        binding,
        id,
        StatusCode::BAD_GATEWAY,
        a2a::INTERNAL_ERROR,
        &format!("/{name} was not run and nothing was forwarded: {why}"),
    ))
}
