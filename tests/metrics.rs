//! The Prometheus metrics on `--metrics-listen`: calls by method and code, and Execute's
//! commands by outcome. The metrics are one set per process, so each test counts calls
//! of its own methods and commands, as differences between two scrapes.

mod common;

use a2a_commands::pb::{self, ParticipantRole as Role};
use common::metrics::{scrape, Scrape};
use common::*;

async fn start() -> TestServer {
    TestServer::start_with(|s| s.metrics_listen = Some("127.0.0.1:0".parse().unwrap())).await
}

async fn scrape_of(server: &TestServer) -> Scrape {
    scrape(server.server.as_ref().unwrap().metrics_addr().unwrap()).await
}

#[tokio::test]
async fn calls_are_counted_by_method_and_code() {
    let server = start().await;
    let before = scrape_of(&server).await;
    let mut client = server.client().await;
    for _ in 0..3 {
        classify(&mut client, text_message("m", "/status")).await;
    }
    for _ in 0..2 {
        let status = client
            .classify(pb::ClassifyRequest { message: None })
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
    }
    let after = scrape_of(&server).await;

    assert!(after.head.starts_with("HTTP/1.1 200"), "{}", after.head);
    assert!(
        after
            .head
            .to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{}",
        after.head
    );
    assert!(after.body.ends_with("# EOF\n"));
    let counted = |series: &str| {
        after
            .value(series)
            .unwrap_or_else(|| panic!("{series} is not listed:\n{}", after.body))
            - before.count(series)
    };
    assert_eq!(
        counted(r#"a2a_commands_calls_total{method="Classify",code="OK"}"#),
        3.0
    );
    assert_eq!(
        counted(r#"a2a_commands_calls_total{method="Classify",code="INVALID_ARGUMENT"}"#),
        2.0
    );
    assert_eq!(
        counted(r#"a2a_commands_call_duration_seconds_count{method="Classify"}"#),
        5.0
    );
}

async fn execute(client: &mut Client, text: &str, role: Role) {
    client
        .execute(execute_request("m", text, role))
        .await
        .unwrap();
}

#[tokio::test]
async fn execute_is_counted_by_command_and_outcome() {
    let server = start().await;
    let mut client = server.client().await;
    register(&mut client, spec("deploy", "Deploy", ""), false)
        .await
        .unwrap();
    let before = scrape_of(&server).await;
    execute(&mut client, "/model", Role::Assignee).await;
    execute(&mut client, "/model gpt-x", Role::Watcher).await;
    execute(&mut client, "/deploy now", Role::Assignee).await;
    execute(&mut client, "/deploy now", Role::Assignee).await;
    execute(&mut client, "/nope-typed-by-a-user", Role::Assignee).await;
    let after = scrape_of(&server).await;

    let counted = |series: &str| {
        after
            .value(series)
            .unwrap_or_else(|| panic!("{series} is not listed:\n{}", after.body))
            - before.count(series)
    };
    let outcome = |command: &str, outcome: &str| {
        counted(&format!(
            "a2a_commands_execute_outcomes_total{{command=\"{command}\",outcome=\"{outcome}\"}}"
        ))
    };
    assert_eq!(outcome("model", "ok"), 1.0);
    assert_eq!(outcome("model", "refused"), 1.0);
    assert_eq!(outcome("deploy", "no_handler"), 2.0);
    assert_eq!(
        counted(r#"a2a_commands_calls_total{method="Execute",code="OK"}"#),
        5.0
    );
    // What a user typed that is not registered never becomes a label.
    assert!(!after.body.contains("nope-typed"), "{}", after.body);
}
