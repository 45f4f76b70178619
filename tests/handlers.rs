//! Command bodies that run elsewhere, end to end: a real gRPC `CommandHandler` and a
//! real JSON-RPC HTTP server, each on 127.0.0.1:0, called through Execute.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_commands::pb::command_handler_server::{CommandHandler, CommandHandlerServer};
use a2a_commands::pb::{
    self, execute_response::Result as Executed, handler_binding::Endpoint, Outcome,
    ParticipantRole as Role, TaskState,
};
use a2a_commands::rules::body::HandlerPolicy;
use axum::routing::post;
use common::*;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tonic::Code;

/// A call's `authorization` and `traceparent` metadata.
type SeenMetadata = (Option<String>, Option<String>);

/// A gRPC handler whose behaviour is chosen by the command's arguments.
#[derive(Default, Clone)]
struct GrpcHandler {
    seen: Arc<Mutex<Vec<pb::Invocation>>>,
    /// The `authorization` and `traceparent` metadata of each call.
    metadata: Arc<Mutex<Vec<SeenMetadata>>>,
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

async fn start_grpc_handler() -> (SocketAddr, GrpcHandler) {
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

async fn start_json_rpc_handler() -> (String, Arc<Mutex<Vec<Value>>>) {
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

fn binding(endpoint: Endpoint, timeout_ms: u32) -> pb::HandlerBinding {
    pb::HandlerBinding {
        endpoint: Some(endpoint),
        timeout_ms,
        ..Default::default()
    }
}

async fn register_with(
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

fn task() -> pb::TaskSnapshot {
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

async fn execute(client: &mut Client, text: &str, role: Role) -> pb::CommandOutcome {
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
fn meta(outcome: &pb::CommandOutcome) -> Value {
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

fn unchanged(outcome: &pb::CommandOutcome) {
    assert_eq!(
        outcome.changes,
        Some(pb::Changes::default()),
        "{}",
        outcome.reply
    );
}

/// The checks every kind of handler must pass; `name` is registered to it.
async fn the_common_cases(client: &mut Client, name: &str, refusal: &str) {
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

#[tokio::test]
async fn grpc_handlers_end_to_end() {
    let (addr, handler) = start_grpc_handler().await;
    let server = TestServer::start().await;
    let mut client = server.client().await;
    register_with(
        &mut client,
        "deploy",
        binding(Endpoint::Grpc(format!("http://{addr}")), 300),
        false,
    )
    .await
    .unwrap();
    the_common_cases(&mut client, "deploy", "refused: deploys are frozen").await;

    let out = execute(&mut client, "/deploy none", Role::Assignee).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::NoHandler, "command /deploy has no handler")
    );
    let out = execute(&mut client, "/deploy error", Role::Assignee).await;
    assert_eq!(
        out.reply,
        "/deploy failed: handler answered FAILED_PRECONDITION"
    );
    let out = execute(&mut client, "/deploy empty-reply", Role::Assignee).await;
    assert_eq!(out.reply, "/deploy failed: malformed answer: no reply");
    let out = execute(&mut client, "/deploy empty-goal", Role::Assignee).await;
    assert_eq!(
        out.reply,
        "/deploy failed: invalid answer: a spawn needs a goal"
    );

    // The handler got what the built-ins get.
    let seen = handler.seen.lock().unwrap().clone();
    let first = &seen[0];
    assert_eq!(first.task_id, "t-9");
    assert_eq!(first.correlation_id, "m-42");
    assert_eq!(first.attempt, 2);
    assert_eq!(
        (first.command.as_str(), first.arguments.as_str()),
        ("deploy", "reply")
    );
    assert_eq!(first.sender.as_ref().unwrap().role(), Role::Assignee);
    assert_eq!(first.task.as_ref().unwrap().sub_tasks.len(), 1);
    assert_eq!(first.message.as_ref().unwrap().message_id, "m-42");
}

#[tokio::test]
async fn json_rpc_handlers_end_to_end() {
    let (url, seen) = start_json_rpc_handler().await;
    let server = TestServer::start().await;
    let mut client = server.client().await;
    register_with(
        &mut client,
        "review",
        binding(Endpoint::JsonRpc(url), 300),
        false,
    )
    .await
    .unwrap();
    the_common_cases(&mut client, "review", "refused: policy").await;

    let out = execute(&mut client, "/review null", Role::Assignee).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::NoHandler, "command /review has no handler")
    );
    // The context may come back bare, with the reference's `reasoning_effort`.
    let out = execute(&mut client, "/review bare", Role::Assignee).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::Ok, "bare done")
    );
    let settings = out.changes.clone().unwrap().settings.unwrap();
    assert_eq!(settings.effort.as_deref(), Some("high"));
    for (args, reason) in [
        ("http500", "handler answered HTTP 500"),
        ("rpc-error", "handler error -32000: exploded"),
        (
            "abort-other",
            "abort reason \"frozen\" is not one of refused, policy, invalid",
        ),
    ] {
        let out = execute(&mut client, &format!("/review {args}"), Role::Assignee).await;
        assert_eq!(out.reply, format!("/review failed: {reason}"));
    }
    for args in ["malformed", "wrong-types", "unknown-key"] {
        let out = execute(&mut client, &format!("/review {args}"), Role::Assignee).await;
        assert_eq!(out.outcome(), Outcome::Failed);
        assert!(
            out.reply.starts_with("/review failed: malformed answer: "),
            "{}",
            out.reply
        );
    }

    // Every request had the reference's shape (the handler answers 422 otherwise, and
    // the replies above would have failed), with ids counting from 1.
    let seen = seen.lock().unwrap().clone();
    let ids: Vec<u64> = seen
        .iter()
        .map(|s| s["request"]["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    let context = &seen[0]["request"]["params"]["context"];
    assert_eq!(
        *context,
        json!({
            "task_id": "t-9", "correlation_id": "m-42", "attempt": 2, "name": "review",
            "arguments": "reply", "sender": "u-1", "sender_role": "assignee",
            "task": {
                "id": "t-9", "name": "Ship it", "state": "WORKING", "sub_state": null,
                "settings": {"model": null, "reasoning_effort": null},
                "steps_done": 0, "steps_total": 0,
                "children": [{"task_id": "t-9.1", "state": "COMPLETED"}]
            },
            "result": null
        })
    );
}

#[tokio::test]
async fn unreachable_handlers_fail_quickly() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    register_with(
        &mut client,
        "grpc-gone",
        binding(Endpoint::Grpc(format!("http://127.0.0.1:{port}")), 2_000),
        false,
    )
    .await
    .unwrap();
    register_with(
        &mut client,
        "http-gone",
        binding(
            Endpoint::JsonRpc(format!("http://127.0.0.1:{port}/x")),
            2_000,
        ),
        false,
    )
    .await
    .unwrap();
    for name in ["grpc-gone", "http-gone"] {
        let out = execute(&mut client, &format!("/{name} reply"), Role::Assignee).await;
        assert_eq!(out.outcome(), Outcome::Failed);
        assert_eq!(out.reply, format!("/{name} failed: handler unreachable"));
        unchanged(&out);
    }
}

#[tokio::test]
async fn registration_checks_bindings() {
    let server = TestServer::start_with(|s| {
        s.handlers = HandlerPolicy {
            allowed_hosts: vec!["127.0.0.1".into(), "*.internal".into()],
            ..HandlerPolicy::default()
        }
    })
    .await;
    let mut client = server.client().await;
    let cases = [
        (
            binding(Endpoint::Grpc("ftp://127.0.0.1/x".into()), 0),
            "handler.grpc: must be an http:// or https:// URL",
        ),
        (
            binding(Endpoint::JsonRpc("file:///etc/passwd".into()), 0),
            "handler.json_rpc: must be an http:// or https:// URL",
        ),
        (
            binding(Endpoint::JsonRpc("unix:/run/h.sock".into()), 0),
            "handler.json_rpc: must be an http:// or https:// URL",
        ),
        (
            binding(Endpoint::Grpc("not-a-url".into()), 0),
            "handler.grpc: is not a URL",
        ),
        (
            binding(Endpoint::Grpc("http://127.0.0.1:7000/\tx".into()), 0),
            "handler.grpc: must not contain whitespace or control characters",
        ),
        (
            binding(
                Endpoint::Mcp(format!("http://127.0.0.1/{}", "x".repeat(3000))),
                0,
            ),
            "handler.mcp: must be at most 2048 characters (got 3017)",
        ),
        (
            pb::HandlerBinding {
                headers: vec![pb::HandlerHeader {
                    name: "authorization".into(),
                    value_file: "token".into(),
                }],
                ..binding(Endpoint::Grpc("http://127.0.0.1:7000".into()), 0)
            },
            "handler.headers[0]: headers need the server's --handler-secrets-dir",
        ),
        (
            binding(Endpoint::JsonRpc("http://10.0.0.8/hook".into()), 0),
            "handler.json_rpc: host \"10.0.0.8\" is not in the allowed handler hosts",
        ),
        (
            binding(Endpoint::JsonRpc("https://evil.example/hook".into()), 0),
            "handler.json_rpc: host \"evil.example\" is not in the allowed",
        ),
        (
            binding(Endpoint::Grpc("http://127.0.0.1:7000".into()), 30_001),
            "handler.timeout_ms: must be at most 30000",
        ),
        (
            pb::HandlerBinding {
                endpoint: None,
                timeout_ms: 0,
                ..Default::default()
            },
            "handler: must set grpc, json_rpc or mcp",
        ),
        (
            binding(
                Endpoint::JsonRpc("https://user:pw@hooks.internal/x".into()),
                0,
            ),
            "handler.json_rpc: must not carry credentials",
        ),
    ];
    for (bad, want) in cases {
        let status = register_with(&mut client, "hook", bad, false)
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().starts_with(want), "{}", status.message());
    }
    register_with(
        &mut client,
        "hook",
        binding(Endpoint::JsonRpc("https://hooks.internal/x".into()), 0),
        false,
    )
    .await
    .unwrap();
    let listed = list(&mut client).await;
    let hook = listed.commands.last().unwrap();
    assert_eq!(hook.body(), pb::CommandBody::Handler);
    assert_eq!(
        hook.handler.as_ref().unwrap().timeout_ms,
        5_000,
        "the default is shown resolved"
    );
    // The card stays exactly the schema's three keys.
    let params: Value = serde_json::from_str(&listed.card_params_json).unwrap();
    assert_eq!(
        params["commands"][4],
        json!({"name": "hook", "description": "Runs elsewhere", "argument_hint": "<what>"})
    );
}

#[tokio::test]
async fn bindings_survive_restart_and_override_keeps_the_builtins_place() {
    let (addr, _) = start_grpc_handler().await;
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    let grpc = binding(Endpoint::Grpc(format!("http://{addr}")), 1_000);
    // Without override a built-in's name is taken.
    let taken = register_with(&mut client, "effort", grpc.clone(), false)
        .await
        .unwrap_err();
    assert_eq!(taken.code(), Code::AlreadyExists);
    register_with(&mut client, "effort", grpc.clone(), true)
        .await
        .unwrap();
    register_with(&mut client, "deploy", grpc.clone(), false)
        .await
        .unwrap();
    // The same registration again changes nothing; another endpoint without override
    // is a conflict.
    let again = register_with(&mut client, "deploy", grpc.clone(), false)
        .await
        .unwrap();
    assert_eq!(again.outcome(), pb::RegisterOutcome::Unchanged);
    let other = binding(Endpoint::Grpc("http://127.0.0.1:1".into()), 1_000);
    assert_eq!(
        register_with(&mut client, "deploy", other, false)
            .await
            .unwrap_err()
            .code(),
        Code::AlreadyExists
    );

    server.restart().await;
    let mut client = server.client().await;
    assert_eq!(
        names(&mut client).await,
        ["model", "effort", "sub-task", "status", "deploy"]
    );
    let listed = list(&mut client).await;
    // Shown as registered.
    assert_eq!(listed.commands[1].handler, Some(grpc));
    let out = execute(&mut client, "/effort reply", Role::Assignee).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::Ok, "done"),
        "the handler replaced the built-in"
    );
}

#[tokio::test]
async fn role_rules_run_by_name_before_any_handler() {
    let (addr, handler) = start_grpc_handler().await;
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let grpc = binding(Endpoint::Grpc(format!("http://{addr}")), 1_000);
    for name in ["model", "effort", "sub-task"] {
        register_with(&mut client, name, grpc.clone(), true)
            .await
            .unwrap();
    }
    for (text, name) in [
        ("/model gpt-x", "model"),
        ("/effort  high ", "effort"),
        ("/sub-task", "sub-task"),
        ("/sub-task reply", "sub-task"),
    ] {
        let out = execute(&mut client, text, Role::Watcher).await;
        assert_eq!(
            (out.outcome(), out.reply.as_str()),
            (
                Outcome::Refused,
                format!("refused: a watcher may not change the task with /{name}").as_str()
            ),
            "{text}"
        );
        let out = execute(&mut client, text, Role::None).await;
        assert_eq!(out.reply, "refused: the sender has no role on this task");
    }
    assert!(
        handler.seen.lock().unwrap().is_empty(),
        "no refused command reached the handler"
    );
    // Reading is allowed: `/model` alone reaches the operator's body.
    let out = execute(&mut client, "/model", Role::Watcher).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::Ok, "unexpected ")
    );
    assert_eq!(handler.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn override_without_a_handler_keeps_the_body() {
    let (addr, _) = start_grpc_handler().await;
    let server = TestServer::start().await;
    let mut client = server.client().await;
    // A gateway registering its specs with override at every start.
    let respec = |name: &str, description: &str| pb::RegisterRequest {
        spec: Some(spec(name, description, "[<model>]")),
        r#override: true,
        handler: None,
        ..Default::default()
    };
    let r = client
        .register(respec("model", "Pick a model"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.outcome(), pb::RegisterOutcome::Replaced);
    let listed = list(&mut client).await;
    assert_eq!(
        listed.commands[0].spec.as_ref().unwrap().description,
        "Pick a model"
    );
    assert_eq!(listed.commands[0].body(), pb::CommandBody::Builtin);
    let out = execute(&mut client, "/model gpt-x-mini", Role::Assignee).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::Ok, "Model set to gpt-x-mini.")
    );
    let again = client
        .register(respec("model", "Pick a model"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.outcome(), pb::RegisterOutcome::Unchanged);

    // A bound handler stays bound too.
    let grpc = binding(Endpoint::Grpc(format!("http://{addr}")), 1_000);
    register_with(&mut client, "deploy", grpc, false)
        .await
        .unwrap();
    client
        .register(respec("deploy", "Deploy it"))
        .await
        .unwrap();
    let out = execute(&mut client, "/deploy reply", Role::Assignee).await;
    assert_eq!((out.outcome(), out.reply.as_str()), (Outcome::Ok, "done"));
    assert_eq!(
        list(&mut client).await.commands[4].body(),
        pb::CommandBody::Handler
    );
}

/// Every Execute log line names its outcome, and every OUTCOME_FAILED leaves its reason
/// at warn: a call that failed (HTTP 500) and an answer that was refused (a model that is
/// not selectable) alike. Read from the real binary's JSON log.
#[tokio::test]
async fn execute_logs_its_outcome_and_every_failure_reason() {
    let (url, _) = start_json_rpc_handler().await;
    let dir = tempfile::tempdir().unwrap();
    let process = common::process::ServeProcess::start(dir.path(), &["--log", "info"]);
    let mut client = Client::connect(process.url()).await.unwrap();
    register_with(
        &mut client,
        "deploy",
        binding(Endpoint::JsonRpc(url), 5_000),
        false,
    )
    .await
    .unwrap();
    let cases = [
        ("/deploy reply", Outcome::Ok),
        ("/deploy http500", Outcome::Failed),
        ("/deploy bad-model", Outcome::Failed),
        ("/status", Outcome::Ok),
        ("/deploy reply", Outcome::Refused),
    ];
    for (text, want) in cases {
        let role = if want == Outcome::Refused {
            Role::None
        } else {
            Role::Assignee
        };
        assert_eq!(
            execute(&mut client, text, role).await.outcome(),
            want,
            "{text}"
        );
    }
    let (mut calls, mut warnings) = (Vec::new(), Vec::new());
    while calls.len() < cases.len() {
        let line = process
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a log line");
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["message"] == "call" && event["method"] == "Execute" {
            calls.push(event);
        } else if event["level"] == "WARN" {
            warnings.push(event);
        }
    }
    let outcomes: Vec<&str> = calls
        .iter()
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "OUTCOME_OK",
            "OUTCOME_FAILED",
            "OUTCOME_FAILED",
            "OUTCOME_OK",
            "OUTCOME_REFUSED"
        ]
    );
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    let text = format!("{warnings:?}");
    assert!(text.contains("500"), "{text}");
    assert!(text.contains("gpt-y"), "{text}");
    assert!(
        !text.contains("bad-model"),
        "arguments are never logged: {text}"
    );
}

/// Credentials from files reach gRPC and JSON-RPC handlers (a rotated file at the next
/// call), ListSpecs shows the header names and files but never a value, and the
/// caller's trace context is passed on.
#[tokio::test]
async fn credentials_from_files_and_trace_context_reach_handlers() {
    let secrets = tempfile::tempdir().unwrap();
    std::fs::write(secrets.path().join("token"), "Bearer first\n").unwrap();
    let dir = secrets.path().to_owned();
    let server = TestServer::start_with(|s| s.handlers.secrets_dir = Some(dir)).await;
    let mut client = server.client().await;
    let (addr, grpc_handler) = start_grpc_handler().await;
    let (url, seen) = start_json_rpc_handler().await;
    let with_token = |endpoint| pb::HandlerBinding {
        headers: vec![pb::HandlerHeader {
            name: "authorization".into(),
            value_file: "token".into(),
        }],
        ..binding(endpoint, 5_000)
    };
    register_with(
        &mut client,
        "deploy",
        with_token(Endpoint::Grpc(format!("http://{addr}"))),
        false,
    )
    .await
    .unwrap();
    register_with(
        &mut client,
        "review",
        with_token(Endpoint::JsonRpc(url)),
        false,
    )
    .await
    .unwrap();
    let listed = list(&mut client).await;
    let shown = format!("{:?}", listed.commands);
    assert!(
        shown.contains("value_file: \"token\"") && !shown.contains("first"),
        "{shown}"
    );

    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let traced = |text: &str| {
        let mut request = tonic::Request::new(pb::ExecuteRequest {
            message: Some(text_message("m-1", text)),
            task: Some(task()),
            sender: Some(pb::Sender {
                id: "u-1".into(),
                role: Role::Assignee.into(),
            }),
            ..Default::default()
        });
        request
            .metadata_mut()
            .insert("traceparent", parent.parse().unwrap());
        request
    };
    client.execute(traced("/deploy reply")).await.unwrap();
    client.execute(traced("/review reply")).await.unwrap();
    std::fs::write(secrets.path().join("token"), "Bearer second").unwrap();
    client.execute(traced("/deploy reply")).await.unwrap();
    client.execute(traced("/review reply")).await.unwrap();

    let grpc_seen = grpc_handler.metadata.lock().unwrap().clone();
    let want = |token: &str| (Some(format!("Bearer {token}")), Some(parent.to_owned()));
    assert_eq!(grpc_seen, [want("first"), want("second")]);
    let http_seen: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s["headers"].clone())
        .collect();
    assert_eq!(
        http_seen,
        [
            json!({"authorization": "Bearer first", "traceparent": parent}),
            json!({"authorization": "Bearer second", "traceparent": parent}),
        ]
    );

    // A value that cannot be read is a failure, not a call without credentials.
    std::fs::remove_file(secrets.path().join("token")).unwrap();
    let out = execute(&mut client, "/review reply", Role::Assignee).await;
    assert_eq!(out.reply, "/review failed: handler credentials unavailable");
    assert_eq!(seen.lock().unwrap().len(), 2);
}
