//! What a request's body asks, read once it may matter: a message that may be a
//! command, a call about a task the front made or keeps data for, a listing, the
//! extended card, or completion; anything else goes on as it came.

use std::sync::LazyLock;

use bytes::Bytes;
use memchr::memmem::Finder;
use serde_json::{json, Value};

use crate::front::a2a;
use crate::front::answer::records_failed;
use crate::front::callers::Verified;
use crate::front::card_serving::agent_speaks;
use crate::front::commands::{command, complete, CommandCall};
use crate::front::context::{Context, TASK_ID_PREFIX};
use crate::front::handled::Handled;
use crate::front::join::Joiner;
use crate::front::json_text;
use crate::front::operations::{method_v10, speaks_1_0, Binding, TaskCall};
use crate::front::records::{Kept, Own, Scope};
use crate::front::tasks::{own_task_call, plain};
use crate::front::v03;
use crate::http1::head::Headers;

/// Whether a body may name a task: an id the front made (they share a prefix), or a
/// `taskId` (a message on a task whose data the front may keep). Judged on its bytes,
/// with searchers built once (a search built per request costs more than the search).
pub(super) fn may_name_a_task(body: &[u8]) -> bool {
    static SOUGHT: LazyLock<[Finder<'static>; 2]> = LazyLock::new(|| {
        [
            Finder::new(TASK_ID_PREFIX.as_bytes()),
            Finder::new(b"\"taskId\""),
        ]
    });
    SOUGHT.iter().any(|sought| sought.find(body).is_some())
}

/// A body that may be a command (or a call about a task the front made): parsed,
/// and answered if it is one.
pub(super) async fn inspect(
    ctx: &Context,
    binding: Binding,
    uri: &hyper::Uri,
    headers: &Headers,
    verified: Option<&Verified>,
    scope: &Scope,
    bytes: &Bytes,
) -> Handled {
    let (path, query) = (uri.path(), uri.query());
    let Ok(body) = serde_json::from_slice::<Value>(bytes) else {
        // The agent answers what it cannot parse, as it would without the front.
        return Handled::Forward(bytes.clone());
    };
    let (id, method, params) = match binding {
        Binding::JsonRpc | Binding::JsonRpc03 => (
            body.get("id").cloned().unwrap_or(Value::Null),
            body.get("method")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            body.get("params").cloned().unwrap_or(Value::Null),
        ),
        Binding::HttpJson | Binding::Grpc => {
            let method = if path.ends_with("/message:stream") {
                "SendStreamingMessage"
            } else {
                "SendMessage"
            };
            (Value::Null, method, body.clone())
        }
    };
    // The version the client asked in: 0.3's method names, or 1.0's. The front
    // answers in it only if the agent speaks it too; otherwise the request goes to
    // the agent as it came, which answers it as it would without the front.
    let (binding, method) = match method_v10(method) {
        Some(v10) if binding == Binding::JsonRpc => {
            if !agent_speaks(ctx).await.v03 {
                return Handled::Forward(bytes.clone());
            }
            (Binding::JsonRpc03, v10)
        }
        // Completion is the kits' method, in no A2A version.
        _ if method != a2a::COMPLETE_METHOD && !agent_speaks(ctx).await.v10 => {
            return Handled::Forward(bytes.clone())
        }
        _ => (binding, method),
    };
    match method {
        "SendMessage" | "SendStreamingMessage" => {
            let stream = method == "SendStreamingMessage";
            let Some(message) = params.get("message") else {
                return Handled::Forward(bytes.clone());
            };
            // The front reads messages in 1.0's JSON.
            let read;
            let message = if binding == Binding::JsonRpc03 {
                read = v03::message_v10(message);
                &read
            } else {
                message
            };
            if a2a::command_candidate(message).is_none() {
                return Box::pin(plain(ctx, binding, &id, &body, message, scope, bytes)).await;
            }
            // A 1.0 method without `A2A-Version` (which means 0.3) goes to the agent
            // as it came.
            if matches!(binding, Binding::JsonRpc | Binding::HttpJson)
                && !speaks_1_0(headers, query)
            {
                return Handled::Forward(bytes.clone());
            }
            let call = CommandCall {
                binding,
                path,
                id: &id,
                stream,
                headers,
                verified,
                scope,
            };
            command(ctx, &call, &body, message, bytes).await
        }
        "GetTask" | "CancelTask" | "SubscribeToTask" => {
            let call = match method {
                "GetTask" => TaskCall::Get,
                "CancelTask" => TaskCall::Cancel,
                _ => TaskCall::Subscribe,
            };
            let task_id = params.get("id").and_then(Value::as_str).unwrap_or_default();
            let kept = match ctx.records.get(task_id, scope).await {
                Ok(kept) => kept,
                // The agent's own task, with the records out of reach: the agent answers.
                Err(_) if !task_id.starts_with(TASK_ID_PREFIX) => None,
                Err(error) => return Handled::Answer(records_failed(binding, &id, &error)),
            };
            match kept {
                Some(Kept::Task(Own {
                    task,
                    upstream: None,
                })) => Handled::Answer(
                    Box::pin(own_task_call(ctx, binding, &id, call, task, scope)).await,
                ),
                // Joined: the agent has the task now, under its own id.
                Some(Kept::Task(
                    own @ Own {
                        upstream: Some(_), ..
                    },
                )) => {
                    let joiner = Joiner::of_own(task_id, &own);
                    let mut body = body.clone();
                    body["params"]["id"] = json!(joiner.upstream_id());
                    Handled::ForwardJoined {
                        body: Bytes::from(json_text::write(&body)),
                        joiner,
                    }
                }
                // The agent's task, whose data a command changed: shown in it.
                Some(Kept::Data(_)) => Handled::ForwardJoined {
                    body: bytes.clone(),
                    joiner: Joiner::of_agents(task_id),
                },
                None => Handled::Forward(bytes.clone()),
            }
        }
        "GetExtendedAgentCard" => Handled::ForwardCard(bytes.clone()),
        a2a::COMPLETE_METHOD if binding == Binding::JsonRpc => Handled::Answer(
            Box::pin(complete(ctx, path, &id, headers, verified, scope, &params)).await,
        ),
        "ListTasks" => Handled::ForwardList(bytes.clone(), a2a::ListAsked::from_params(&params)),
        _ => Handled::Forward(bytes.clone()),
    }
}
