//! Running as a sidecar: the health listener, draining, the commands file, WatchSpecs,
//! admin auth and TLS, each over real gRPC.

mod common;

use std::sync::Arc;
use std::time::Duration;

use a2a_commands::config::Tls;
use a2a_commands::pb::command_handler_server::{CommandHandler, CommandHandlerServer};
use a2a_commands::pb::command_service_client::CommandServiceClient;
use a2a_commands::pb::{self, execute_response::Result as Executed, Outcome};
use a2a_commands::transport::service::SERVICE_NAME;
use common::pki::{pki, Pki};
use common::process::ServeProcess;
use common::*;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

async fn health_status(channel: Channel, service: &str) -> ServingStatus {
    HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status()
}

async fn connect(addr: std::net::SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// A gRPC handler that holds every call until released.
#[derive(Clone)]
struct Gate {
    entered: Arc<Notify>,
    release: Arc<Notify>,
}

#[tonic::async_trait]
impl CommandHandler for Gate {
    async fn handle(
        &self,
        _: tonic::Request<pb::Invocation>,
    ) -> Result<tonic::Response<pb::HandlerResult>, tonic::Status> {
        self.entered.notify_one();
        self.release.notified().await;
        Ok(tonic::Response::new(pb::HandlerResult {
            result: Some(pb::handler_result::Result::Reply(pb::HandlerReply {
                reply: "finished".into(),
                ..Default::default()
            })),
        }))
    }
}

async fn start_gate() -> (String, Gate) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let gate = Gate {
        entered: Arc::new(Notify::new()),
        release: Arc::new(Notify::new()),
    };
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CommandHandlerServer::new(gate.clone()))
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            ),
    );
    (url, gate)
}

async fn register_slow(client: &mut Client, url: &str) {
    client
        .register(pb::RegisterRequest {
            spec: Some(spec("slow", "Takes its time", "")),
            handler: Some(pb::HandlerBinding {
                endpoint: Some(pb::handler_binding::Endpoint::Grpc(url.into())),
                timeout_ms: 30_000,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();
}

fn slow_request() -> pb::ExecuteRequest {
    pb::ExecuteRequest {
        message: Some(text_message("m-slow", "/slow")),
        task: Some(pb::TaskSnapshot {
            id: "t-1".into(),
            state: pb::TaskState::Working.into(),
            ..Default::default()
        }),
        sender: Some(pb::Sender {
            id: "u".into(),
            role: pb::ParticipantRole::Admin.into(),
        }),
        ..Default::default()
    }
}

fn reply_of(response: pb::ExecuteResponse) -> (Outcome, String) {
    match response.result.unwrap() {
        Executed::Command(c) => (c.outcome(), c.reply),
        other => panic!("{other:?}"),
    }
}

/// Polls health until it reads `want` (each check is a real call; no sleeping).
async fn until_health(channel: &Channel, want: ServingStatus) {
    for _ in 0..10_000 {
        if health_status(channel.clone(), "").await == want {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("health never became {want:?}");
}

#[tokio::test]
async fn health_listener_serves_health_only() {
    let server = TestServer::start().await;
    let health_addr = server.server.as_ref().unwrap().health_addr().unwrap();
    assert_ne!(health_addr, server.addr());
    let channel = connect(health_addr).await;
    assert_eq!(
        health_status(channel.clone(), "").await,
        ServingStatus::Serving
    );
    assert_eq!(
        health_status(channel.clone(), SERVICE_NAME).await,
        ServingStatus::Serving
    );
    let mut api = CommandServiceClient::new(channel.clone());
    let status = api
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    let mut reflection =
        tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient::new(channel);
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            tonic_reflection::pb::v1::server_reflection_request::MessageRequest::ListServices(
                String::new(),
            ),
        ),
    };
    // Reflection there describes health alone (so grpcurl works on the probe port).
    let mut answers = reflection
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(
        tonic_reflection::pb::v1::server_reflection_response::MessageResponse::ListServicesResponse(
            list,
        ),
    ) = answer.message_response
    else {
        panic!("{answer:?}")
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["grpc.health.v1.Health"]);
}

#[tokio::test]
async fn drain_turns_health_not_serving_and_finishes_calls_in_flight() {
    let (url, gate) = start_gate().await;
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    register_slow(&mut client, &url).await;
    let health = connect(server.server.as_ref().unwrap().health_addr().unwrap()).await;

    let entered = gate.entered.notified();
    let in_flight = tokio::spawn(async move { client.execute(slow_request()).await });
    entered.await;
    let running = server.server.take().unwrap();
    let shutdown = tokio::spawn(running.shutdown());
    until_health(&health, ServingStatus::NotServing).await;
    assert!(
        !shutdown.is_finished(),
        "the drain waits for the call in flight"
    );

    gate.release.notify_one();
    let response = in_flight.await.unwrap().unwrap().into_inner();
    assert_eq!(reply_of(response), (Outcome::Ok, "finished".into()));
    shutdown.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_calls_in_flight_completes_them_and_exits_zero() {
    let (url, gate) = start_gate().await;
    let dir = tempfile::tempdir().unwrap();
    let process = ServeProcess::start(dir.path(), &["--log", "info"]);
    let mut client = CommandServiceClient::connect(process.url()).await.unwrap();
    register_slow(&mut client, &url).await;
    for i in 0..20 {
        register(
            &mut client,
            spec(&format!("kept-{i}"), "Survives", ""),
            false,
        )
        .await
        .unwrap();
    }
    let before = list(&mut client).await;

    let entered = gate.entered.notified();
    let mut in_flight_client = client.clone();
    let in_flight = tokio::spawn(async move { in_flight_client.execute(slow_request()).await });
    entered.await;
    process.signal("TERM");
    // The process says it is draining before the call is let go.
    let lines = &process.lines;
    loop {
        let line = tokio::task::block_in_place(|| lines.recv_timeout(Duration::from_secs(60)))
            .expect("draining line");
        if line.contains("draining") {
            break;
        }
    }
    gate.release.notify_one();
    let response = in_flight.await.unwrap().unwrap().into_inner();
    assert_eq!(reply_of(response), (Outcome::Ok, "finished".into()));
    drop(client);
    let (status, _) = tokio::task::spawn_blocking(move || process.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");

    let process = ServeProcess::start(dir.path(), &[]);
    let mut client = CommandServiceClient::connect(process.url()).await.unwrap();
    let after = list(&mut client).await;
    assert_eq!(after.commands, before.commands);
    assert_eq!(after.revision, before.revision);
}

fn write_commands(path: &std::path::Path, commands: serde_json::Value) {
    // Write then rename, as Kubernetes swaps a ConfigMap's files: a reader never sees
    // half a file.
    let tmp = path.with_extension("tmp");
    std::fs::write(
        &tmp,
        serde_json::json!({ "commands": commands }).to_string(),
    )
    .unwrap();
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
    std::fs::write(
        &file,
        r#"{"commands": [{"name": "Bad Name", "description": "x"}]}"#,
    )
    .unwrap();
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

    std::fs::write(
        &file,
        r#"{"commands": [{"name": "deploy", "description": "two\nlines"}]}"#,
    )
    .unwrap();
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

#[tokio::test]
async fn watch_specs_sends_the_state_then_each_change_and_never_blocks_writers() {
    let server = TestServer::start_with(|s| s.builtins.clear()).await;
    let mut client = server.client().await;
    let mut watch = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert!(first.commands.is_empty());
    let mut last = first.revision;
    for name in ["a", "b", "c"] {
        let r = register(&mut client, spec(name, "d", ""), false)
            .await
            .unwrap();
        let update = watch.message().await.unwrap().unwrap();
        assert_eq!(update.revision, r.revision);
        assert!(update.revision > last);
        assert_eq!(
            update.commands.last().unwrap().spec.clone().unwrap().name,
            name
        );
        let card: serde_json::Value = serde_json::from_str(&update.card_params_json).unwrap();
        assert_eq!(
            card["commands"].as_array().unwrap().len(),
            update.commands.len()
        );
        last = update.revision;
    }

    // A watcher that never reads: registration goes on regardless.
    let _stalled = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let mut writer = server.client().await;
    let mut revision = 0;
    for i in 0..500 {
        let big = "x".repeat(1000);
        revision = register(&mut writer, spec(&format!("cmd-{i}"), &big, ""), false)
            .await
            .unwrap()
            .revision;
    }
    // The reading watcher skips to the latest state.
    let update = loop {
        let update = watch.message().await.unwrap().unwrap();
        if update.revision == revision {
            break update;
        }
    };
    assert_eq!(update.commands.len(), 503);
}

#[tokio::test]
async fn admin_token_guards_changes_only() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let server = TestServer::start_with(|s| s.admin_token_file = Some(token_file.clone())).await;
    let channel = server.channel().await;
    let with = |token: Option<&'static str>| {
        move |mut request: tonic::Request<()>| {
            if let Some(token) = token {
                request
                    .metadata_mut()
                    .insert("authorization", token.parse().unwrap());
            }
            Ok(request)
        }
    };
    let mut anonymous = CommandServiceClient::with_interceptor(channel.clone(), with(None));
    let mut wrong =
        CommandServiceClient::with_interceptor(channel.clone(), with(Some("Bearer nope")));
    let mut malformed =
        CommandServiceClient::with_interceptor(channel.clone(), with(Some("s3cret-token")));
    let mut admin =
        CommandServiceClient::with_interceptor(channel.clone(), with(Some("Bearer s3cret-token")));
    let request = || pb::RegisterRequest {
        spec: Some(spec("deploy", "Deploy", "")),
        ..Default::default()
    };

    assert_eq!(
        anonymous.register(request()).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    assert_eq!(
        malformed.register(request()).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    let denied = wrong.register(request()).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied);
    assert!(!denied.message().contains("s3cret"));
    let unregister = || pb::UnregisterRequest {
        name: "status".into(),
    };
    assert_eq!(
        anonymous.unregister(unregister()).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    assert_eq!(
        wrong.unregister(unregister()).await.unwrap_err().code(),
        Code::PermissionDenied
    );

    admin.register(request()).await.unwrap();
    admin.unregister(unregister()).await.unwrap();
    // Reads stay open.
    let listed = anonymous
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.commands.len(), 4);
    anonymous
        .classify(pb::ClassifyRequest {
            message: Some(text_message("m", "/deploy")),
        })
        .await
        .unwrap();
    anonymous.execute(slow_request()).await.unwrap();

    // Rotation: the file is read on every change.
    std::fs::write(&token_file, "rotated").unwrap();
    assert_eq!(
        admin.register(request()).await.unwrap_err().code(),
        Code::PermissionDenied
    );
}

async fn tls_server(pki: &Pki, mutual: bool) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let tls = Tls {
        cert: write("server.pem", &pki.server.0),
        key: write("server.key", &pki.server.1),
        client_ca: mutual.then(|| write("ca.pem", &pki.ca)),
    };
    (TestServer::start_with(|s| s.tls = Some(tls)).await, dir)
}

async fn tls_channel(
    addr: std::net::SocketAddr,
    pki: &Pki,
    client_cert: bool,
) -> Result<Channel, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&pki.ca))
        .domain_name("localhost");
    if client_cert {
        tls = tls.identity(Identity::from_pem(&pki.client.0, &pki.client.1));
    }
    Channel::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
}

#[tokio::test]
async fn tls_and_mutual_tls() {
    let pki = pki();
    let (server, _dir) = tls_server(&pki, false).await;
    let channel = tls_channel(server.addr(), &pki, false).await.unwrap();
    let mut client = CommandServiceClient::new(channel);
    assert_eq!(names(&mut client).await.len(), 4);
    // Plain text is refused.
    let plain = Channel::from_shared(format!("http://{}", server.addr()))
        .unwrap()
        .connect()
        .await;
    let refused = match plain {
        Err(_) => true,
        Ok(channel) => CommandServiceClient::new(channel)
            .list_specs(pb::ListSpecsRequest::default())
            .await
            .is_err(),
    };
    assert!(refused, "a plain-text client must not be served");

    let (server, _dir) = tls_server(&pki, true).await;
    let with_cert = tls_channel(server.addr(), &pki, true).await.unwrap();
    assert_eq!(
        names(&mut CommandServiceClient::new(with_cert)).await.len(),
        4
    );
    let without = match tls_channel(server.addr(), &pki, false).await {
        Err(_) => true,
        Ok(channel) => CommandServiceClient::new(channel)
            .list_specs(pb::ListSpecsRequest::default())
            .await
            .is_err(),
    };
    assert!(
        without,
        "with mTLS a client without a certificate must be refused"
    );
}
