//! Draining: on shutdown or SIGTERM/SIGINT health turns NOT_SERVING, calls in flight
//! finish, WatchSpecs streams end, and the process exits 0 with what it acknowledged.

mod common;

use std::sync::Arc;
use std::time::Duration;

use a2a_commands::pb::command_handler_server::{CommandHandler, CommandHandlerServer};
use a2a_commands::pb::command_service_client::CommandServiceClient;
use a2a_commands::pb::{self, execute_response::Result as Executed, Outcome};
use common::process::ServeProcess;
use common::*;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

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
    execute_request("m-slow", "/slow", pb::ParticipantRole::Admin)
}

fn reply_of(response: pb::ExecuteResponse) -> (Outcome, String) {
    match response.result.unwrap() {
        Executed::Command(c) => (c.outcome(), c.reply),
        other => panic!("{other:?}"),
    }
}

/// Waits on the health Watch stream (overall status) until it reports `want`. The
/// stream sends the current status, then each change, so there is nothing to poll.
async fn until_health(channel: &Channel, want: ServingStatus) {
    let watch = async {
        let mut updates = HealthClient::new(channel.clone())
            .watch(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        while let Some(update) = updates.message().await.unwrap() {
            if update.status() == want {
                return;
            }
        }
        panic!("the health stream ended before {want:?}");
    };
    // Only a hang guard: the status normally arrives at once.
    tokio::time::timeout(Duration::from_secs(60), watch)
        .await
        .unwrap_or_else(|_| panic!("health never became {want:?}"));
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

#[tokio::test]
async fn sigterm_and_sigint_drain_flush_and_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    for signal in ["TERM", "INT"] {
        let process = ServeProcess::start(dir.path(), &[]);
        let mut client = CommandServiceClient::connect(process.url()).await.unwrap();
        let name = format!("after-{}", signal.to_lowercase());
        register(
            &mut client,
            spec(&name, "Registered before the signal", ""),
            false,
        )
        .await
        .unwrap();
        drop(client);
        process.signal(signal);
        let (status, lines) = tokio::task::spawn_blocking(move || process.wait())
            .await
            .unwrap();
        assert!(status.success(), "{signal}: {status:?} {lines:#?}");
        assert!(
            lines.iter().any(|l| l.contains("stopped cleanly")),
            "{lines:#?}"
        );
    }
    let process = ServeProcess::start(dir.path(), &[]);
    let mut client = CommandServiceClient::connect(process.url()).await.unwrap();
    let names = names(&mut client).await;
    assert_eq!(names[4..], ["after-term", "after-int"]);
}

/// A signal right after the "serving" line drains and exits 0: the handlers are in place
/// before the line is written.
#[test]
fn a_signal_right_after_serving_drains() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..10 {
        let process = ServeProcess::start(dir.path(), &[]);
        process.signal("TERM");
        let (status, lines) = process.wait();
        assert!(status.success(), "{status:?} {lines:#?}");
    }
}

/// Open WatchSpecs streams end (OK) when the drain starts, so they do not hold it open
/// until its timeout.
#[tokio::test]
async fn a_drain_ends_watch_streams() {
    let dir = tempfile::tempdir().unwrap();
    let process = ServeProcess::start(dir.path(), &["--drain-seconds", "60"]);
    let mut client = CommandServiceClient::connect(process.url()).await.unwrap();
    let mut watch = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();
    watch.message().await.unwrap().expect("the current state");
    process.signal("TERM");
    assert_eq!(
        watch.message().await.unwrap(),
        None,
        "the stream ends cleanly"
    );
    let (status, lines) = tokio::task::spawn_blocking(move || process.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?} {lines:#?}");
    assert!(
        !lines.iter().any(|l| l.contains("drain timed out")),
        "{lines:#?}"
    );
}
