//! The declarative commands file: applied before serving, followed without a restart,
//! owning its commands, and rejected whole (at start or on a change) when invalid.

mod common;

use std::time::Duration;

use a2a_commands::pb;
use a2a_commands::pb::command_service_client::CommandServiceClient;
use common::process::ServeProcess;
use common::*;
use tonic::Code;

fn write_commands(path: &std::path::Path, commands: serde_json::Value) {
    replace_file(
        path,
        &serde_json::json!({ "commands": commands }).to_string(),
    );
}

/// Writes `text` to `path` then renames it in place, as Kubernetes swaps a ConfigMap's
/// files: a server polling the file never reads half of it.
fn replace_file(path: &std::path::Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn command(name: &str, description: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "description": description, "argument_hint": ""})
}

/// Reads WatchSpecs until the registry lists `want` (names in order).
async fn until_names(
    stream: &mut tonic::Streaming<pb::ListSpecsResponse>,
    want: &[&str],
) -> pb::ListSpecsResponse {
    loop {
        let update = stream.message().await.unwrap().expect("stream open");
        let names: Vec<String> = update
            .commands
            .iter()
            .map(|c| c.spec.clone().unwrap().name)
            .collect();
        if names == want {
            return update;
        }
    }
}

#[tokio::test]
async fn commands_file_converges_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("commands.json");
    write_commands(
        &file,
        serde_json::json!([command("deploy", "Deploy"), command("review", "Review")]),
    );
    let server = TestServer::start_with(|s| {
        s.builtins.clear();
        s.commands_file = Some(file.clone());
        s.commands_file_poll = Duration::from_millis(20);
    })
    .await;
    let mut client = server.client().await;
    assert_eq!(
        names(&mut client).await,
        ["deploy", "review"],
        "applied before serving"
    );
    register(
        &mut client,
        spec("mine", "Registered over the API", ""),
        false,
    )
    .await
    .unwrap();
    let mut watch = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();

    // The API may not change what the file owns.
    let owned = register(&mut client, spec("deploy", "Changed", ""), true)
        .await
        .unwrap_err();
    assert_eq!(owned.code(), Code::FailedPrecondition);
    let owned = client
        .unregister(pb::UnregisterRequest {
            name: "review".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(owned.code(), Code::FailedPrecondition);

    // Add and update.
    write_commands(
        &file,
        serde_json::json!([
            command("deploy", "Deploy v2"),
            command("review", "Review"),
            command("test", "Test")
        ]),
    );
    let update = until_names(&mut watch, &["deploy", "review", "mine", "test"]).await;
    assert_eq!(
        update.commands[0].spec.clone().unwrap().description,
        "Deploy v2"
    );
    assert_eq!(update.commands[0].source(), pb::CommandSource::File);
    assert_eq!(update.commands[2].source(), pb::CommandSource::Api);

    // Reorder: the file's commands take the file's order in the places they hold.
    write_commands(
        &file,
        serde_json::json!([
            command("test", "Test"),
            command("deploy", "Deploy v2"),
            command("review", "Review")
        ]),
    );
    until_names(&mut watch, &["test", "deploy", "mine", "review"]).await;

    // An invalid change is rejected whole; a later valid one still applies.
    replace_file(
        &file,
        r#"{"commands": [{"name": "Bad Name", "description": "x"}]}"#,
    );
    write_commands(&file, serde_json::json!([command("review", "Review")]));
    let update = until_names(&mut watch, &["mine", "review"]).await;
    assert!(update
        .commands
        .iter()
        .all(|c| c.spec.as_ref().unwrap().name != "Bad Name"));
}

/// A built-in the file takes over and later drops is back at once, as a fresh replica
/// given that file would hold it; a name registered over the API that the file lists is
/// the file's from then on, and goes when the file drops it.
#[tokio::test]
async fn commands_file_and_builtins_converge_like_a_fresh_replica() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("commands.json");
    write_commands(&file, serde_json::json!([command("deploy", "Deploy")]));
    let server = TestServer::start_with(|s| {
        s.commands_file = Some(file.clone());
        s.commands_file_poll = Duration::from_millis(20);
    })
    .await;
    let mut client = server.client().await;
    register(&mut client, spec("review", "From the API", ""), false)
        .await
        .unwrap();
    let mut watch = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();
    write_commands(
        &file,
        serde_json::json!([
            command("deploy", "Deploy"),
            command("status", "Our status"),
            command("review", "Now the file's")
        ]),
    );
    let update = until_names(
        &mut watch,
        &["model", "effort", "sub-task", "deploy", "status", "review"],
    )
    .await;
    assert_eq!(update.commands[4].source(), pb::CommandSource::File);
    assert_eq!(update.commands[5].source(), pb::CommandSource::File);
    // Listed without a handler, the built-in keeps its body.
    assert_eq!(update.commands[4].body(), pb::CommandBody::Builtin);

    write_commands(&file, serde_json::json!([command("deploy", "Deploy")]));
    let update = until_names(
        &mut watch,
        &["model", "effort", "sub-task", "status", "deploy"],
    )
    .await;
    assert_eq!(update.commands[3].source(), pb::CommandSource::Builtin);
    assert_eq!(
        update.commands[3].spec.as_ref().unwrap().description,
        "Show this task's status"
    );
}

#[test]
fn invalid_commands_file_change_keeps_the_last_good_registry() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("commands.json");
    write_commands(&file, serde_json::json!([command("deploy", "Deploy")]));
    let poll = [
        "--commands-file",
        file.to_str().unwrap(),
        "--commands-file-poll-ms",
        "20",
    ];
    let process = ServeProcess::start(&dir.path().join("data"), &poll);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut client = runtime
        .block_on(CommandServiceClient::connect(process.url()))
        .unwrap();
    let before = runtime.block_on(list(&mut client));

    replace_file(
        &file,
        r#"{"commands": [{"name": "deploy", "description": "two\nlines"}]}"#,
    );
    // A generous bound that only guards against a hang; the line itself is the signal.
    let rejected = std::iter::from_fn(|| process.lines.recv_timeout(Duration::from_secs(60)).ok())
        .find(|line| line.contains("commands file rejected"))
        .expect("a rejection line");
    assert!(
        rejected.contains("commands[0].description: must be one line"),
        "{rejected}"
    );
    let after = runtime.block_on(list(&mut client));
    assert_eq!(after.commands, before.commands);
    assert_eq!(after.revision, before.revision);
}

#[test]
fn invalid_commands_file_at_start_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("commands.json");
    std::fs::write(
        &file,
        r#"{"commands": [{"name": "ok", "description": "x", "hook": "old"}]}"#,
    )
    .unwrap();
    let output = common::process::serve_command(
        &dir.path().join("data"),
        &["--commands-file", file.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("commands file {}", file.display()))
            && last.contains("unknown field `hook`"),
        "{stderr}"
    );
}
