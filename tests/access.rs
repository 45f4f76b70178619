//! Beyond the extension, over real gRPC: who may run a command (per-command roles),
//! hidden commands, and argument completion (names, built-in values, handlers).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use a2a_commands::pb::command_handler_server::{CommandHandler, CommandHandlerServer};
use a2a_commands::pb::{
    self, execute_response::Result as Executed, Outcome, ParticipantRole as Role,
};
use a2a_commands::rules::card::PARAMS_SCHEMA;
use axum::routing::post;
use common::*;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tonic::Code;

async fn register_access(
    client: &mut Client,
    name: &str,
    roles: &[Role],
    hidden: bool,
    replace: bool,
) -> pb::RegisterResponse {
    client
        .register(pb::RegisterRequest {
            spec: Some(spec(name, &format!("The {name} command"), "")),
            r#override: replace,
            allowed_roles: roles.iter().map(|&r| r.into()).collect(),
            hidden,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
}

async fn run(client: &mut Client, text: &str, role: Role) -> pb::CommandOutcome {
    let request = pb::ExecuteRequest {
        message: Some(text_message("m-1", text)),
        task: Some(pb::TaskSnapshot {
            id: "t-1".into(),
            name: "Docs".into(),
            state: pb::TaskState::Working.into(),
            ..Default::default()
        }),
        sender: Some(pb::Sender {
            id: "u-1".into(),
            role: role.into(),
        }),
        ..Default::default()
    };
    match client.execute(request).await.unwrap().into_inner().result {
        Some(Executed::Command(outcome)) => outcome,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn per_command_roles_refuse_before_any_body_and_persist() {
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    register_access(
        &mut client,
        "deploy",
        &[Role::Admin, Role::Assignee],
        false,
        false,
    )
    .await;
    // Narrowing a built-in: the override keeps its body.
    register_access(&mut client, "status", &[Role::Admin], false, true).await;

    let out = run(&mut client, "/deploy prod", Role::Reporter).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::Refused, "refused: a reporter may not run /deploy")
    );
    let out = run(&mut client, "/deploy prod", Role::Assignee).await;
    assert_eq!(out.reply, "command /deploy has no handler");
    let out = run(&mut client, "/status", Role::Assignee).await;
    assert_eq!(out.reply, "refused: an assignee may not run /status");
    let out = run(&mut client, "/status", Role::Admin).await;
    assert!(out.reply.starts_with("Task t-1 · Docs"), "{}", out.reply);
    // The reference's own rules still come first.
    let out = run(&mut client, "/deploy prod", Role::None).await;
    assert_eq!(out.reply, "refused: the sender has no role on this task");

    // Shown by ListSpecs, never on the card, and kept across a restart.
    server.restart().await;
    let mut client = server.client().await;
    let listed = list(&mut client).await;
    let deploy = listed
        .commands
        .iter()
        .find(|c| c.spec.as_ref().unwrap().name == "deploy")
        .unwrap();
    assert_eq!(
        deploy.allowed_roles().collect::<Vec<_>>(),
        [Role::Assignee, Role::Admin]
    );
    assert!(!listed.card_params_json.contains("roles"));
    let out = run(&mut client, "/deploy prod", Role::Watcher).await;
    assert_eq!(out.reply, "refused: a watcher may not run /deploy");

    let bad = client
        .register(pb::RegisterRequest {
            spec: Some(spec("x", "X", "")),
            allowed_roles: vec![Role::None.into()],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(
        bad.message().starts_with("allowed_roles[0]: "),
        "{}",
        bad.message()
    );
}

#[tokio::test]
async fn hidden_commands_run_but_stay_off_the_card() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    register_access(&mut client, "debug", &[], true, false).await;
    register_access(&mut client, "deploy", &[], false, false).await;
    let listed = list(&mut client).await;
    let params: Value = serde_json::from_str(&listed.card_params_json).unwrap();
    let names: Vec<&str> = params["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["model", "effort", "sub-task", "status", "deploy"]);
    let schema: Value = serde_json::from_str(PARAMS_SCHEMA).unwrap();
    assert!(jsonschema::validator_for(&schema)
        .unwrap()
        .is_valid(&params));
    assert!(listed
        .commands
        .iter()
        .any(|c| c.hidden && c.spec.as_ref().unwrap().name == "debug"));
    let out = run(&mut client, "/debug", Role::Assignee).await;
    assert_eq!(out.reply, "command /debug has no handler");
}

#[tokio::test]
async fn the_commands_file_sets_roles_and_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("commands.json");
    std::fs::write(
        &file,
        json!({"commands": [
            {"name": "deploy", "description": "Deploy", "roles": ["admin"]},
            {"name": "debug", "description": "Debug", "hidden": true}
        ]})
        .to_string(),
    )
    .unwrap();
    let server = TestServer::start_with(|s| s.commands_file = Some(file)).await;
    let mut client = server.client().await;
    let out = run(&mut client, "/deploy", Role::Assignee).await;
    assert_eq!(out.reply, "refused: an assignee may not run /deploy");
    let listed = list(&mut client).await;
    assert!(!listed.card_params_json.contains("debug"));
}

async fn complete(client: &mut Client, text: &str, role: Role, limit: u32) -> pb::CompleteResponse {
    client
        .complete(pb::CompleteRequest {
            text: text.into(),
            sender: Some(pb::Sender {
                id: "u-1".into(),
                role: role.into(),
            }),
            limit,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
}

fn texts(answer: &pb::CompleteResponse) -> Vec<&str> {
    answer.values.iter().map(|v| v.text.as_str()).collect()
}

#[tokio::test]
async fn completion_of_names_and_builtin_values() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    register_access(&mut client, "mole", &[], true, false).await;
    register_access(&mut client, "modify", &[Role::Admin], false, false).await;

    assert_eq!(
        texts(&complete(&mut client, "/mo", Role::Assignee, 0).await),
        ["/model "]
    );
    assert_eq!(
        texts(&complete(&mut client, "/mo", Role::Admin, 0).await),
        ["/model ", "/modify "]
    );
    let all = complete(&mut client, "/", Role::Reporter, 2).await;
    assert_eq!((all.values.len(), all.total, all.has_more), (2, 4, true));
    assert_eq!(
        all.values[0].description,
        "Show or choose this task's model"
    );

    let models = complete(&mut client, "/model g", Role::Assignee, 0).await;
    assert_eq!(texts(&models), ["/model gpt-x", "/model gpt-x-mini"]);
    assert_eq!(models.command, "model");
    let efforts = complete(&mut client, "/effort h", Role::Assignee, 0).await;
    assert_eq!(texts(&efforts), ["/effort high"]);
    // A watcher may not change the model: nothing to suggest.
    assert!(complete(&mut client, "/model ", Role::Watcher, 0)
        .await
        .values
        .is_empty());
    assert!(complete(&mut client, "/nope x", Role::Assignee, 0)
        .await
        .values
        .is_empty());
    assert!(complete(&mut client, "hello", Role::Assignee, 0)
        .await
        .values
        .is_empty());

    let missing = client
        .complete(pb::CompleteRequest {
            text: "/mo".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::InvalidArgument);
    assert!(missing.message().starts_with("sender.role: "));
}

/// A gRPC handler that suggests environments, and fails for `/broken`.
#[derive(Clone, Default)]
struct Suggests;

#[tonic::async_trait]
impl CommandHandler for Suggests {
    async fn complete(
        &self,
        request: tonic::Request<pb::Invocation>,
    ) -> Result<tonic::Response<pb::CompleteResponse>, tonic::Status> {
        let invocation = request.into_inner();
        match invocation.command.as_str() {
            "broken" => Err(tonic::Status::internal("no")),
            "slow" => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Err(tonic::Status::internal("late"))
            }
            _ => {
                let values = ["staging", "production", "sandbox"]
                    .into_iter()
                    .filter(|v| v.starts_with(&invocation.arguments))
                    .map(|v| pb::Completion {
                        value: v.into(),
                        description: format!("Deploy to {v}"),
                        ..Default::default()
                    })
                    .collect();
                Ok(tonic::Response::new(pb::CompleteResponse {
                    values,
                    ..Default::default()
                }))
            }
        }
    }
}

async fn start_suggests() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CommandHandlerServer::new(Suggests))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    addr
}

/// A JSON-RPC handler answering `command.completion`.
async fn start_json_rpc_suggests() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/hook",
        post(|body: String| async move {
            let request: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(request["method"], "command.completion");
            let typed = request["params"]["context"]["arguments"].as_str().unwrap().to_owned();
            let values: Vec<Value> = ["1", "2", "3", "10"]
                .iter()
                .filter(|v| v.starts_with(&typed))
                .map(|v| json!(v))
                .collect();
            json!({"jsonrpc": "2.0", "id": request["id"], "result": {"values": values, "total": 40}})
                .to_string()
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/hook")
}

#[tokio::test]
async fn completion_asks_handlers_and_their_failures_give_nothing() {
    let addr = start_suggests().await;
    let json_url = start_json_rpc_suggests().await;
    let server = TestServer::start().await;
    let mut client = server.client().await;
    for name in ["deploy", "broken", "slow"] {
        client
            .register(pb::RegisterRequest {
                spec: Some(spec(name, "Runs elsewhere", "<env>")),
                handler: Some(pb::HandlerBinding {
                    endpoint: Some(pb::handler_binding::Endpoint::Grpc(format!(
                        "http://{addr}"
                    ))),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    client
        .register(pb::RegisterRequest {
            spec: Some(spec("scale", "Scale", "<n>")),
            handler: Some(pb::HandlerBinding {
                endpoint: Some(pb::handler_binding::Endpoint::JsonRpc(json_url)),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();

    let deploy = complete(&mut client, "/deploy st", Role::Assignee, 0).await;
    assert_eq!(texts(&deploy), ["/deploy staging"]);
    assert_eq!(deploy.values[0].description, "Deploy to staging");
    let scale = complete(&mut client, "/scale 1", Role::Assignee, 1).await;
    assert_eq!(
        (texts(&scale), scale.total, scale.has_more),
        (vec!["/scale 1"], 40, true)
    );
    for broken in ["/broken x", "/slow x"] {
        let answer = complete(&mut client, broken, Role::Assignee, 0).await;
        assert!(answer.values.is_empty(), "{broken}");
        assert_eq!(answer.command, &broken[1..broken.find(' ').unwrap()]);
    }
}
