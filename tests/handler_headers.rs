//! What reaches a handler besides the invocation: credential headers read from files
//! (never shown) and the caller's trace context.

mod common;

use a2a_commands::pb::{self, handler_binding::Endpoint, ParticipantRole as Role};
use common::handlers::*;
use common::*;
use serde_json::json;

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
