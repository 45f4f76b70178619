//! Command handlers on 127.0.0.1:0 for Execute to call: a gRPC `CommandHandler` and a
//! JSON-RPC HTTP server as strict as the reference's hook servers, each answering as the
//! command's arguments say; and the calls and checks every kind of handler shares.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_commands::pb::command_handler_server::{CommandHandler, CommandHandlerServer};
use a2a_commands::pb::{
    self, execute_response::Result as Executed, handler_binding::Endpoint, Outcome,
    ParticipantRole as Role, TaskState,
};
use axum::routing::post;
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::{spec, text_message, Client};

/// A call's `authorization` and `traceparent` metadata.
pub type SeenMetadata = (Option<String>, Option<String>);

/// A gRPC handler whose behaviour is chosen by the command's arguments.
#[derive(Default, Clone)]
pub struct GrpcHandler {
    pub seen: Arc<Mutex<Vec<pb::Invocation>>>,
    /// The `authorization` and `traceparent` metadata of each call.
    pub metadata: Arc<Mutex<Vec<SeenMetadata>>>,
}

fn reply(text: &str) -> pb::HandlerResult {
    pb::HandlerResult {
        result: Some(pb::handler_result::Result::Reply(pb::HandlerReply {
            reply: text.into(),
            ..Default::default()
        })),
    }
}

#[tonic::async_trait]
impl CommandHandler for GrpcHandler {
    async fn handle(
        &self,
        request: tonic::Request<pb::Invocation>,
    ) -> Result<tonic::Response<pb::HandlerResult>, tonic::Status> {
        let text = |name| {
            request
                .metadata()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let metadata = (text("authorization"), text("traceparent"));
        self.metadata.lock().unwrap().push(metadata);
        let invocation = request.into_inner();
        self.seen.lock().unwrap().push(invocation.clone());
        let mut result = reply("done");
        let Some(pb::handler_result::Result::Reply(r)) = result.result.as_mut() else {
            unreachable!()
        };
        match invocation.arguments.as_str() {
            "reply" => {}
            "settings" => {
                r.settings = Some(pb::TaskSettings {
                    model: Some("gpt-x-mini".into()),
                    effort: Some("high".into()),
                })
            }
            "spawn" => {
                r.spawn = Some(pb::HandlerSpawn {
                    goal: "Write the tests".into(),
                })
            }
            "abort" => {
                result.result = Some(pb::handler_result::Result::Abort(pb::HandlerAbort {
                    reason: "deploys are frozen".into(),
                }))
            }
            "none" => result.result = None,
            "slow" => tokio::time::sleep(Duration::from_secs(60)).await,
            "error" => return Err(tonic::Status::failed_precondition("no cluster")),
            "big" => r.reply = "x".repeat(200_000),
            "bad-model" => {
                r.settings = Some(pb::TaskSettings {
                    model: Some("gpt-y".into()),
                    effort: None,
                })
            }
            "bad-effort" => {
                r.settings = Some(pb::TaskSettings {
                    model: None,
                    effort: Some("max".into()),
                })
            }
            "empty-reply" => r.reply.clear(),
            "empty-goal" => r.spawn = Some(pb::HandlerSpawn { goal: " ".into() }),
            other => r.reply = format!("unexpected {other}"),
        }
        Ok(tonic::Response::new(result))
    }
}

pub async fn start_grpc_handler() -> (SocketAddr, GrpcHandler) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = GrpcHandler::default();
    let service = CommandHandlerServer::new(handler.clone());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            ),
    );
    (addr, handler)
}

/// Checks a `command.invoked.in` request the way the reference harness's models read
/// it: every key present, no other, each of its type. Returns what is wrong.
fn reference_shape_errors(request: &Value, expected_id: u64) -> Vec<String> {
    let mut errors = Vec::new();
    let mut keys = |at: &str, value: &Value, want: &[&str]| {
        let got: std::collections::BTreeSet<&str> = value
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let want: std::collections::BTreeSet<&str> = want.iter().copied().collect();
        if got != want {
            errors.push(format!("{at}: keys {got:?}, want {want:?}"));
        }
    };
    keys("request", request, &["jsonrpc", "id", "method", "params"]);
    keys("params", &request["params"], &["context"]);
    let c = &request["params"]["context"];
    keys(
        "context",
        c,
        &[
            "task_id",
            "correlation_id",
            "attempt",
            "name",
            "arguments",
            "sender",
            "sender_role",
            "task",
            "result",
        ],
    );
    keys(
        "task",
        &c["task"],
        &[
            "id",
            "name",
            "state",
            "sub_state",
            "settings",
            "steps_done",
            "steps_total",
            "children",
        ],
    );
    keys(
        "settings",
        &c["task"]["settings"],
        &["model", "reasoning_effort"],
    );
    for child in c["task"]["children"].as_array().into_iter().flatten() {
        keys("child", child, &["task_id", "state"]);
    }
    let mut check = |what: &str, ok: bool| {
        if !ok {
            errors.push(format!("{what} has the wrong type or value"));
        }
    };
    check("id", request["id"] == json!(expected_id));
    check("method", request["method"] == "command.invoked.in");
    check("attempt", c["attempt"].is_u64());
    check("sender", c["sender"].is_string());
    check(
        "sender_role",
        c["sender_role"].is_null()
            || ["assignee", "reporter", "watcher", "admin"]
                .contains(&c["sender_role"].as_str().unwrap_or("")),
    );
    check("result", c["result"].is_null());
    check(
        "steps",
        c["task"]["steps_done"].is_u64() && c["task"]["steps_total"].is_u64(),
    );
    errors
}

/// A JSON-RPC handler over HTTP, strict like the reference's hook servers, whose
/// behaviour is chosen by the arguments.
async fn json_rpc(
    seen: Arc<Mutex<Vec<Value>>>,
    headers: axum::http::HeaderMap,
    body: String,
) -> (axum::http::StatusCode, String) {
    let request: Value = serde_json::from_str(&body).unwrap();
    let expected_id = seen.lock().unwrap().len() as u64 + 1;
    seen.lock()
        .unwrap()
        .push(json!({"request": request.clone(), "headers": {
            "authorization": headers.get("authorization").map(|v| v.to_str().unwrap()),
            "traceparent": headers.get("traceparent").map(|v| v.to_str().unwrap()),
        }}));
    let errors = reference_shape_errors(&request, expected_id);
    if !errors.is_empty() {
        return (
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            format!("{errors:?}"),
        );
    }
    let id = request["id"].clone();
    let context = request["params"]["context"].clone();
    let with_result = |result: Value| {
        let mut context = context.clone();
        context["result"] = result;
        json!({"jsonrpc": "2.0", "id": id, "result": {"context": context}}).to_string()
    };
    let ok = axum::http::StatusCode::OK;
    match context["arguments"].as_str().unwrap() {
        "reply" => (ok, with_result(json!({"reply": "done"}))),
        "bare" => {
            let mut bare = context.clone();
            bare["result"] =
                json!({"reply": "bare done", "settings": {"reasoning_effort": "high"}});
            (
                ok,
                json!({"jsonrpc": "2.0", "id": id, "result": bare}).to_string(),
            )
        }
        "settings" => (
            ok,
            with_result(json!({"reply": "switched", "settings": {"model": "gpt-x-mini"}})),
        ),
        "spawn" => (
            ok,
            with_result(json!({"reply": "spawned", "spawn": {"goal": "Write the tests"}})),
        ),
        "abort" => (
            ok,
            json!({"jsonrpc": "2.0", "id": id, "result": {"abort": {"reason": "policy"}}})
                .to_string(),
        ),
        "abort-other" => (
            ok,
            json!({"jsonrpc": "2.0", "id": id, "result": {"abort": {"reason": "frozen"}}})
                .to_string(),
        ),
        "null" => (
            ok,
            json!({"jsonrpc": "2.0", "id": id, "result": null}).to_string(),
        ),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            (ok, with_result(json!({"reply": "late"})))
        }
        "http500" => (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom".into()),
        "malformed" => (ok, "{\"jsonrpc\": \"2.0\", \"result\": {".into()),
        "wrong-types" => (ok, with_result(json!({"reply": 42}))),
        "unknown-key" => (ok, with_result(json!({"reply": "r", "effort": "high"}))),
        "big" => (ok, with_result(json!({"reply": "x".repeat(200_000)}))),
        "bad-model" => (
            ok,
            with_result(json!({"reply": "r", "settings": {"model": "gpt-y"}})),
        ),
        "bad-effort" => (
            ok,
            with_result(json!({"reply": "r", "settings": {"reasoning_effort": "max"}})),
        ),
        "rpc-error" => (
            ok,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "exploded"}})
                .to_string(),
        ),
        other => (
            ok,
            with_result(json!({"reply": format!("unexpected {other}")})),
        ),
    }
}

pub async fn start_json_rpc_handler() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let state = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/commands",
        post(move |headers: axum::http::HeaderMap, body: String| {
            json_rpc(Arc::clone(&state), headers, body)
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/commands"), seen)
}

pub fn binding(endpoint: Endpoint, timeout_ms: u32) -> pb::HandlerBinding {
    pb::HandlerBinding {
        endpoint: Some(endpoint),
        timeout_ms,
        ..Default::default()
    }
}

pub async fn register_with(
    client: &mut Client,
    name: &str,
    handler: pb::HandlerBinding,
    replace: bool,
) -> Result<pb::RegisterResponse, tonic::Status> {
    client
        .register(pb::RegisterRequest {
            spec: Some(spec(name, "Runs elsewhere", "<what>")),
            r#override: replace,
            handler: Some(handler),
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner())
}

pub fn task() -> pb::TaskSnapshot {
    pb::TaskSnapshot {
        id: "t-9".into(),
        context_id: "c-9".into(),
        name: "Ship it".into(),
        state: TaskState::Working.into(),
        sub_tasks: vec![pb::SubTaskSnapshot {
            id: "t-9.1".into(),
            state: TaskState::Completed.into(),
        }],
        ..Default::default()
    }
}

pub async fn execute(client: &mut Client, text: &str, role: Role) -> pb::CommandOutcome {
    let mut request = tonic::Request::new(pb::ExecuteRequest {
        message: Some(text_message("m-42", text)),
        task: Some(task()),
        sender: Some(pb::Sender {
            id: "u-1".into(),
            role: role.into(),
        }),
        attempt: 2,
        ..Default::default()
    });
    // A client-side deadline well above every handler timeout used here: if Execute
    // ever waited for a stuck handler, this call would fail instead of hanging.
    request.set_timeout(Duration::from_secs(30));
    match client
        .execute(request)
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
    {
        Executed::Command(outcome) => outcome,
        other => panic!("{other:?}"),
    }
}

/// The reply message's metadata (where the reference puts it).
pub fn meta(outcome: &pb::CommandOutcome) -> Value {
    let event = outcome.event.as_ref().unwrap();
    let message = event.status.as_ref().unwrap().message.as_ref().unwrap();
    let fields = &message.metadata.as_ref().unwrap().fields;
    Value::Object(
        fields
            .iter()
            .map(|(k, v)| match &v.kind {
                Some(prost_types::value::Kind::StringValue(s)) => {
                    (k.clone(), Value::String(s.clone()))
                }
                other => panic!("{other:?}"),
            })
            .collect(),
    )
}

pub fn unchanged(outcome: &pb::CommandOutcome) {
    assert_eq!(
        outcome.changes,
        Some(pb::Changes::default()),
        "{}",
        outcome.reply
    );
}

/// The checks every kind of handler must pass; `name` is registered to it.
pub async fn the_common_cases(client: &mut Client, name: &str, refusal: &str) {
    let out = execute(client, &format!("/{name} reply"), Role::Assignee).await;
    assert_eq!((out.outcome(), out.reply.as_str()), (Outcome::Ok, "done"));
    unchanged(&out);
    assert_eq!(meta(&out), json!({"command": name}));

    let out = execute(client, &format!("/{name} settings"), Role::Reporter).await;
    assert_eq!(out.outcome(), Outcome::Ok);
    let settings = out.changes.clone().unwrap().settings.unwrap();
    assert_eq!(settings.model.as_deref(), Some("gpt-x-mini"));

    let out = execute(client, &format!("/{name} spawn"), Role::Admin).await;
    assert_eq!(out.outcome(), Outcome::Ok);
    let sub_task = out.changes.clone().unwrap().sub_task.unwrap();
    assert_eq!(
        (sub_task.id.as_str(), sub_task.goal.as_str()),
        ("t-9.2", "Write the tests")
    );
    assert_eq!(meta(&out), json!({"command": name, "task_ref": "t-9.2"}));

    let out = execute(client, &format!("/{name} abort"), Role::Assignee).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::Refused, refusal)
    );
    unchanged(&out);

    // A watcher may run a handler, but not change the task through it.
    let out = execute(client, &format!("/{name} reply"), Role::Watcher).await;
    assert_eq!(out.outcome(), Outcome::Ok);
    let out = execute(client, &format!("/{name} spawn"), Role::Watcher).await;
    assert_eq!(
        out.reply,
        format!("refused: a watcher may not change the task with /{name}")
    );
    unchanged(&out);
    // No role: refused before the handler is called.
    let out = execute(client, &format!("/{name} reply"), Role::None).await;
    assert_eq!(out.reply, "refused: the sender has no role on this task");

    for (args, reason) in [
        ("slow", "timed out after 300 ms"),
        ("big", "answer larger than 65536 bytes"),
        (
            "bad-model",
            "invalid answer: \"gpt-y\" is not a selectable model",
        ),
        (
            "bad-effort",
            "invalid answer: \"max\" is not an accepted effort",
        ),
    ] {
        let out = execute(client, &format!("/{name} {args}"), Role::Assignee).await;
        assert_eq!(out.outcome(), Outcome::Failed, "{args}");
        assert_eq!(out.reply, format!("/{name} failed: {reason}"), "{args}");
        unchanged(&out);
        assert_eq!(meta(&out), json!({"command": name}));
    }
}
