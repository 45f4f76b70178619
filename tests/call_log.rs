//! The one log line per call: Execute's names its outcome and every failure's reason,
//! and sampling (`--call-log-sample`) never drops a failure. Read from the real binary.

mod common;

use std::time::Duration;

use a2a_commands::pb::command_service_client::CommandServiceClient;
use a2a_commands::pb::{handler_binding::Endpoint, Outcome, ParticipantRole as Role};
use common::handlers::*;
use common::process::ServeProcess;
use common::*;
use serde_json::Value;

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

/// With --call-log-sample, successful calls are sampled but every failure keeps its
/// line.
#[tokio::test]
async fn sampled_call_logs_keep_every_failure() {
    let dir = tempfile::tempdir().unwrap();
    let process = ServeProcess::start(dir.path(), &["--call-log-sample", "1000"]);
    let mut client = CommandServiceClient::connect(process.url()).await.unwrap();
    for _ in 0..5 {
        client
            .classify(a2a_commands::pb::ClassifyRequest {
                message: Some(text_message("m", "/model")),
            })
            .await
            .unwrap();
    }
    for _ in 0..3 {
        client
            .classify(a2a_commands::pb::ClassifyRequest { message: None })
            .await
            .unwrap_err();
    }
    drop(client);
    process.signal("TERM");
    let (_, lines) = tokio::task::spawn_blocking(move || process.wait())
        .await
        .unwrap();
    let calls: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("\"message\":\"call\"") && l.contains("Classify"))
        .collect();
    let failed = calls
        .iter()
        .filter(|l| l.contains("InvalidArgument"))
        .count();
    assert_eq!(failed, 3, "{calls:#?}");
    assert_eq!(
        calls.len() - failed,
        1,
        "one success in 1000 is logged: {calls:#?}"
    );
}
