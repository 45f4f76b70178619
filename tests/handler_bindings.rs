//! Registering a handler binding: what is checked, what is kept across a restart, and
//! what an override with or without a handler keeps of a command.

mod common;

use a2a_commands::pb::{self, handler_binding::Endpoint, Outcome, ParticipantRole as Role};
use a2a_commands::rules::body::HandlerPolicy;
use common::handlers::*;
use common::*;
use serde_json::{json, Value};
use tonic::Code;

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
