//! Tasks through the front: the calls about a task the front made (get, cancel,
//! subscribe), answered here until the agent holds it, and under the agent's id after;
//! plain follow-ups; the agent's task read for a command; listings with the front's
//! tasks in them.

use axum::body::Body;
use bytes::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use crate::front::a2a;
use crate::front::answer::{
    error_answer, json_answer, records_failed, stream_answer, upstream_failed,
};
use crate::front::callers::Verified;
use crate::front::context::{Context, TASK_ID_PREFIX};
use crate::front::forward::forward;
use crate::front::grpc_agent::grpc_task;
use crate::front::handled::Handled;
use crate::front::join::translate;
use crate::front::join::{data_of, follow_up_body, set_data, Joiner};
use crate::front::json_text;
use crate::front::operations::{Binding, TaskCall};
use crate::front::reading::read_json;
use crate::front::records::{Kept, Own, Scope};
use crate::front::upstream::{identity_only, own_call_headers};
use crate::front::v03;
use crate::http1::head::{Answer, Headers, Request};
use crate::run::now;

/// A message that is not a command: as it came, unless it is on a task the front
/// made, which the agent knows by its own id (or not yet: then the message starts
/// the agent's task). That message is the one the task waited for: the wait ends.
pub(super) async fn plain(
    ctx: &Context,
    binding: Binding,
    id: &Value,
    body: &Value,
    message: &Value,
    scope: &Scope,
    bytes: &Bytes,
) -> Handled {
    let task_id = message
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if task_id.is_empty() {
        return Handled::Forward(bytes.clone());
    }
    let mut own = match ctx.records.get(task_id, scope).await {
        Ok(Some(Kept::Task(own))) => own,
        // The agent's task, whose data a command changed: the message carries the
        // settings chosen, and the answer shows the data.
        Ok(Some(Kept::Data(data))) => {
            let joiner = Joiner::of_agents(task_id);
            let body = if data.get("settings").is_some() {
                follow_up_body(binding, body, &joiner, &data)
            } else {
                bytes.clone()
            };
            return Handled::ForwardJoined { body, joiner };
        }
        Ok(None) => return Handled::Forward(bytes.clone()),
        // A plain message always reaches the agent: with the records out of reach
        // (etcd down) and nothing of the task in this sidecar's copy, as it came.
        Err(error) if !task_id.starts_with(TASK_ID_PREFIX) => {
            tracing::warn!(error = %error, "the front's records are out of reach; a plain message on the agent's task goes on as it came");
            return Handled::Forward(bytes.clone());
        }
        Err(error) => return Handled::Answer(records_failed(binding, id, &error)),
    };
    let data = data_of(&own.task);
    if let Some(mut ended) = data.as_object().cloned() {
        if ended.remove("subState").is_some() {
            set_data(&mut own.task, Value::Object(ended));
            // The wait's end is kept if it can be; the message goes on either way.
            if let Err(error) = ctx.records.put_task(&own, scope).await {
                tracing::warn!(error = %error, "the front could not record the end of a task's wait");
            }
        }
    }
    let joiner = Joiner::of_own(task_id, &own);
    Handled::ForwardJoined {
        body: follow_up_body(binding, body, &joiner, &data),
        joiner,
    }
}

/// `GET .../tasks/{id}`, `POST .../tasks/{id}:cancel`, `GET|POST
/// .../tasks/{id}:subscribe`: about a task the front made, answered here, or, once
/// the agent holds it, asked of the agent under its id and answered under the
/// front's; about any other, passed to the agent as it came.
pub(super) async fn rest_task_call(ctx: &Context, request: Request) -> Answer {
    let path = request.uri().path().to_owned();
    let Some((base, last)) = path.rsplit_once("/tasks/") else {
        return forward(ctx, request, None).await;
    };
    let (id, call, suffix) = if let Some(id) = last.strip_suffix(":cancel") {
        (id, TaskCall::Cancel, ":cancel")
    } else if let Some(id) = last.strip_suffix(":subscribe") {
        (id, TaskCall::Subscribe, ":subscribe")
    } else {
        (last, TaskCall::Get, "")
    };
    // Push-notification configs and the like go to the agent.
    if id.is_empty() || id.contains('/') {
        return forward(ctx, request, None).await;
    }
    let tenant = ctx.tenant(false, &path, b"");
    let scope = ctx.scope(
        request.headers(),
        request.extensions().get::<Verified>(),
        tenant,
    );
    let kept = match ctx.records.get(id, &scope).await {
        Ok(kept) => kept,
        // The agent's own task, with the records out of reach: the agent answers.
        Err(_) if !id.starts_with(TASK_ID_PREFIX) => None,
        Err(error) => return records_failed(Binding::HttpJson, &Value::Null, &error),
    };
    let mut request = request;
    match kept {
        None => forward(ctx, request, None).await,
        Some(Kept::Data(_)) => {
            identity_only(request.headers_mut());
            let answer = forward(ctx, request, Some(Binding::HttpJson)).await;
            translate(ctx, answer, Joiner::of_agents(id), &scope).await
        }
        Some(Kept::Task(Own {
            task,
            upstream: None,
        })) => own_task_call(ctx, Binding::HttpJson, &Value::Null, call, task, &scope).await,
        Some(Kept::Task(own)) => {
            let joiner = Joiner::of_own(id, &own);
            identity_only(request.headers_mut());
            let (mut parts, body) = request.into_parts();
            let query = parts
                .uri
                .query()
                .map(|q| format!("?{q}"))
                .unwrap_or_default();
            let asked = format!(
                "{base}/tasks/{}{suffix}{query}",
                a2a::urlencode(joiner.upstream_id())
            );
            parts.uri = asked.parse().unwrap_or(parts.uri);
            let answer = forward(
                ctx,
                Request::from_parts(parts, body),
                Some(Binding::HttpJson),
            )
            .await;
            translate(ctx, answer, joiner, &scope).await
        }
    }
}

/// A call about a task the front made that no message has taken to the agent yet:
/// it waits for its next message, so a subscription sees the task and ends (A2A
/// ends a stream at an interrupted state), and a cancel ends it here.
pub(super) async fn own_task_call(
    ctx: &Context,
    binding: Binding,
    id: &Value,
    call: TaskCall,
    task: Value,
    scope: &Scope,
) -> Answer {
    let mut task = task;
    let answer = |task: Value| match binding {
        Binding::JsonRpc => json_answer(StatusCode::OK, &a2a::rpc_result(id, task)),
        Binding::JsonRpc03 => {
            json_answer(StatusCode::OK, &a2a::rpc_result(id, v03::task_v03(&task)))
        }
        Binding::HttpJson | Binding::Grpc => json_answer(StatusCode::OK, &task),
    };
    match call {
        TaskCall::Get => answer(task),
        TaskCall::Cancel => {
            let at = now().to_string();
            if !a2a::cancel(&mut task, &at) {
                return error_answer(
                    binding,
                    id,
                    StatusCode::CONFLICT,
                    a2a::TASK_NOT_CANCELABLE,
                    "the task has already ended and cannot be canceled",
                );
            }
            let own = Own {
                task,
                upstream: None,
            };
            if let Err(error) = ctx.records.put_task(&own, scope).await {
                return records_failed(binding, id, &error);
            }
            answer(own.task)
        }
        TaskCall::Subscribe if a2a::is_terminal(&task) => error_answer(
            binding,
            id,
            StatusCode::BAD_REQUEST,
            a2a::UNSUPPORTED_OPERATION,
            "the task has ended: there is nothing to subscribe to",
        ),
        TaskCall::Subscribe => stream_answer(binding, id, &[json!({"task": task})]),
    }
}

/// Task `task_id` as its client sees it, for the rules: a task the front made (once
/// joined, the agent's state of it under the front's id), or the agent's, with the
/// task data the front keeps (`own` and `kept_data`: what the records hold for it).
/// `Err` as [`upstream_task`]'s.
#[allow(clippy::too_many_arguments)]
pub(super) async fn task_as_seen(
    ctx: &Context,
    binding: Binding,
    path: &str,
    id: &Value,
    headers: &Headers,
    task_id: &str,
    own: Option<Own>,
    kept_data: Option<Value>,
    tenant: Option<&str>,
) -> Result<Value, Option<Answer>> {
    if let Some(own) = own {
        let Some(upstream) = &own.upstream else {
            return Ok(own.task);
        };
        return Ok(
            match upstream_task(ctx, binding, path, id, headers, &upstream.id, tenant).await {
                Ok(mut fresh) => {
                    Joiner::of_own(task_id, &own).rewrite(&mut fresh);
                    set_data(&mut fresh, data_of(&own.task));
                    fresh
                }
                Err(_) => own.task,
            },
        );
    }
    let mut task = upstream_task(ctx, binding, path, id, headers, task_id, tenant).await?;
    // What the front keeps for the agent's task (settings a command chose) is part
    // of its data.
    if let Some(data) = kept_data {
        set_data(&mut task, data);
    }
    Ok(task)
}

/// The agent's task `task_id`, asked on `binding` with the caller's credentials in the
/// caller's `tenant` (in JSON-RPC's params and gRPC's request; HTTP+JSON's is in `path`):
/// the task's JSON, or the agent's own answer when it gave no task (`None`: an answer
/// the front cannot read, so the message goes to the agent as it came).
#[allow(clippy::too_many_arguments)]
pub(super) async fn upstream_task(
    ctx: &Context,
    binding: Binding,
    path: &str,
    id: &Value,
    headers: &Headers,
    task_id: &str,
    tenant: Option<&str>,
) -> Result<Value, Option<Answer>> {
    let mut params = json!({"id": task_id});
    if let Some(tenant) = tenant {
        params["tenant"] = json!(tenant);
    }
    if binding == Binding::Grpc {
        return grpc_task(ctx, headers, &params).await;
    }
    // Asked where the client's message went: the same JSON-RPC endpoint, or the
    // HTTP+JSON interface's base.
    let front_base = ctx.public.path();
    let mut asked = own_call_headers(headers, "application/json");
    asked.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    let max = ctx.options.max_body_bytes;
    let answer = match binding {
        Binding::JsonRpc | Binding::JsonRpc03 => {
            let method = if binding == Binding::JsonRpc03 {
                "tasks/get"
            } else {
                "GetTask"
            };
            let call = json!({"jsonrpc": "2.0", "id": "a2a-commands-front",
                              "method": method, "params": params});
            let uri = ctx.upstream.uri_for(path, front_base);
            ctx.upstream
                .call(
                    Method::POST,
                    uri,
                    asked,
                    Bytes::from(json_text::write(&call)),
                    max,
                )
                .await
        }
        Binding::HttpJson | Binding::Grpc => {
            let base = path
                .strip_suffix("/message:send")
                .or_else(|| path.strip_suffix("/message:stream"))
                .unwrap_or_default();
            let tasks = format!("{base}/tasks/{}", a2a::urlencode(task_id));
            let uri = ctx.upstream.uri_for(&tasks, front_base);
            ctx.upstream
                .call(Method::GET, uri, asked, Bytes::new(), max)
                .await
        }
    };
    let (status, _, bytes) = answer.map_err(|e| Some(upstream_failed(binding, id, &e)))?;
    let parsed: Value = serde_json::from_slice(&bytes).map_err(|_| None)?;
    let task = match binding {
        Binding::JsonRpc03 if parsed.get("result").is_some() => v03::task_v10(&parsed["result"]),
        Binding::JsonRpc | Binding::JsonRpc03 => match parsed.get("result") {
            Some(task) => task.clone(),
            None => {
                let error = parsed.get("error").cloned().unwrap_or(Value::Null);
                return Err(Some(json_answer(
                    StatusCode::OK,
                    &json!({"jsonrpc": "2.0", "id": id, "error": error}),
                )));
            }
        },
        Binding::HttpJson | Binding::Grpc if status.is_success() => parsed,
        Binding::HttpJson | Binding::Grpc => return Err(Some(json_answer(status, &parsed))),
    };
    if task.get("id").and_then(Value::as_str).is_some() {
        Ok(task)
    } else {
        Err(None)
    }
}

/// The agent's answer to `ListTasks`: each task the front made (and the agent now
/// holds) under the front's id, and each with the task data the front keeps. The
/// first page starts with the tasks the front made that the agent does not hold yet
/// (no message reached it), newest first, filtered as asked; `totalSize` counts
/// them. They come on top of the agent's page, so that page may hold more than
/// `pageSize`, and no page token of the agent's is changed.
pub(super) async fn list_answer(
    ctx: &Context,
    answer: Answer,
    binding: Binding,
    asked: &a2a::ListAsked,
    scope: &Scope,
) -> Answer {
    let (mut parts, bytes, mut value) = match read_json(ctx, answer, binding).await {
        Ok(read) => read,
        Err(answer) => return answer,
    };
    // An HTTP+JSON error is no listing.
    let listed = binding.is_rpc() || parts.status.is_success();
    let listing = binding.payload(&mut value).filter(|_| listed);
    let Some(listing) = listing.and_then(Value::as_object_mut) else {
        return Answer::from_parts(parts, Body::from(bytes));
    };
    // proto3's JSON leaves an empty list out.
    let Some(tasks) = listing
        .entry("tasks")
        .or_insert_with(|| json!([]))
        .as_array_mut()
    else {
        return Answer::from_parts(parts, Body::from(bytes));
    };
    for task in tasks.iter_mut() {
        let Some(id) = task.get("id").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        let (front, kept) = match ctx.records.joined_to(&id).await {
            Ok(Some(front)) => match ctx.records.get(&front, scope).await {
                // Another caller's task: listed (by the agent) as the agent's.
                Ok(None) => (None, Ok(None)),
                kept => (Some(front), kept),
            },
            Ok(None) => (None, ctx.records.get(&id, scope).await),
            Err(error) => (None, Err(error)),
        };
        let joiner = match (&front, &kept) {
            (Some(front), Ok(Some(Kept::Task(own)))) => Some(Joiner::of_own(front, own)),
            _ => None,
        };
        let data = match kept {
            Ok(Some(Kept::Task(own))) => Some(data_of(&own.task)),
            Ok(Some(Kept::Data(data))) => Some(data),
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(error = %error, task = %id, "the front's records could not be read; the task is listed as the agent gave it");
                None
            }
        };
        if let Some(mut joiner) = joiner {
            joiner.rewrite(task);
        }
        if let Some(data) = data {
            set_data(task, data);
        }
    }
    if asked.first_page {
        let own = match ctx
            .records
            .unjoined(TASK_ID_PREFIX, asked.limit(), scope)
            .await
        {
            Ok(own) => own,
            Err(error) => {
                tracing::warn!(error = %error, "the front's records could not be read; the tasks only the front holds are not listed");
                Vec::new()
            }
        };
        let own: Vec<Value> = own
            .into_iter()
            .filter_map(|task| asked.shown(task))
            .collect();
        if !own.is_empty() {
            let added = own.len();
            tasks.splice(0..0, own);
            let total = listing
                .get("totalSize")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            listing.insert("totalSize".into(), json!(total + added as u64));
        }
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Answer::from_parts(parts, Body::from(json_text::write(&value)))
}
