//! The caller's deadline (`grpc-timeout`) in the server: a unary call still unanswered
//! when it passes answers DEADLINE_EXCEEDED (never tonic's CANCELLED "Timeout
//! expired"), a server stream still open then ends with that status, and Execute calls
//! a handler with what is left of it (or not at all, with less than the minimum left).
//! tonic's client enforces the deadline it sends too, so the unary case uses a raw
//! HTTP/2 client that only sends the header: the status seen is the server's. Where the
//! tonic client is used, an answer that came after the deadline would be its own error.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_commands::pb::command_handler_server::{CommandHandler, CommandHandlerServer};
use a2a_commands::pb::{self, handler_binding::Endpoint, Outcome, ParticipantRole as Role};
use common::handlers::*;
use common::*;
use tokio::net::TcpListener;
use tokio_stream::StreamExt as _;

/// A handler that answers after `delay`, and counts its calls.
#[derive(Clone)]
struct Slow {
    delay: Duration,
    calls: Arc<Mutex<u32>>,
}

#[tonic::async_trait]
impl CommandHandler for Slow {
    async fn handle(
        &self,
        _request: tonic::Request<pb::Invocation>,
    ) -> Result<tonic::Response<pb::HandlerResult>, tonic::Status> {
        *self.calls.lock().unwrap() += 1;
        tokio::time::sleep(self.delay).await;
        Ok(tonic::Response::new(pb::HandlerResult {
            result: Some(pb::handler_result::Result::Reply(pb::HandlerReply {
                reply: "late".into(),
                ..Default::default()
            })),
        }))
    }

    async fn complete(
        &self,
        _request: tonic::Request<pb::Invocation>,
    ) -> Result<tonic::Response<pb::CompleteResponse>, tonic::Status> {
        tokio::time::sleep(self.delay).await;
        Ok(tonic::Response::new(pb::CompleteResponse::default()))
    }
}

async fn start_slow(delay: Duration) -> (String, Slow) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let slow = Slow {
        delay,
        calls: Arc::default(),
    };
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CommandHandlerServer::new(slow.clone()))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    (format!("http://{addr}"), slow)
}

/// A server with `/slow` bound to a handler that takes 5 s, within its 10 s timeout.
async fn with_slow_handler() -> (TestServer, Client, Slow) {
    let (url, slow) = start_slow(Duration::from_secs(5)).await;
    let server = TestServer::start().await;
    let mut client = server.client().await;
    register_with(
        &mut client,
        "slow",
        binding(Endpoint::Grpc(url), 10_000),
        false,
    )
    .await
    .unwrap();
    (server, client, slow)
}

/// The command outcome of an Execute answer.
fn outcome_of(executed: pb::ExecuteResponse) -> pb::CommandOutcome {
    match executed.result {
        Some(pb::execute_response::Result::Command(outcome)) => outcome,
        other => panic!("{other:?}"),
    }
}

fn execute_message(text: &str) -> pb::ExecuteRequest {
    pb::ExecuteRequest {
        message: Some(text_message("m-1", text)),
        task: Some(task()),
        sender: Some(pb::Sender {
            id: "u-1".into(),
            role: Role::Assignee.into(),
        }),
        ..Default::default()
    }
}

fn execute_request(text: &str, timeout: Duration) -> tonic::Request<pb::ExecuteRequest> {
    let mut request = tonic::Request::new(execute_message(text));
    request.set_timeout(timeout);
    request
}

#[tokio::test]
async fn a_unary_call_past_its_deadline_answers_deadline_exceeded() {
    let (server, _client, _) = with_slow_handler().await;
    // Complete asks the handler, which takes longer than the caller waits.
    let request = pb::CompleteRequest {
        text: "/slow a".into(),
        task: Some(task()),
        sender: Some(pb::Sender {
            id: "u-1".into(),
            role: Role::Assignee.into(),
        }),
        ..Default::default()
    };
    let mut raw = http2::Http2::connect(server.addr()).await;
    let answer = raw
        .unary_with(http2::COMPLETE, &request, &[("grpc-timeout", "300m")])
        .await;
    assert_eq!(
        answer.grpc_status(),
        Some(tonic::Code::DeadlineExceeded as i32),
        "{answer:?}"
    );
    assert!(answer.grpc_message().contains("grpc-timeout"), "{answer:?}");
}

#[tokio::test]
async fn a_stream_open_at_its_deadline_ends_with_deadline_exceeded() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let mut request = tonic::Request::new(pb::WatchSpecsRequest::default());
    request.set_timeout(Duration::from_secs(2));
    let mut stream = client.watch_specs(request).await.unwrap().into_inner();
    let first = stream.next().await.expect("the current state").unwrap();
    assert!(first.revision > 0);
    let end = stream.next().await.expect("an end, not silence");
    let status = end.unwrap_err();
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    assert!(stream.next().await.is_none(), "nothing after the status");
}

#[tokio::test]
async fn calls_answered_within_their_deadline_are_unchanged() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let mut request = tonic::Request::new(pb::ListSpecsRequest::default());
    request.set_timeout(Duration::from_secs(5));
    let listed = client.list_specs(request).await.unwrap().into_inner();
    assert!(!listed.commands.is_empty());
    let request = execute_request("/status", Duration::from_secs(5));
    let executed = client.execute(request).await.unwrap().into_inner();
    assert!(matches!(
        executed.result,
        Some(pb::execute_response::Result::Command(_))
    ));
}

/// Execute with a handler slower than the caller's deadline: the handler is called with
/// what is left, and the caller gets the failure reply before its deadline, not an
/// error status.
#[tokio::test]
async fn execute_shortens_a_handler_call_to_what_is_left_of_the_deadline() {
    let (server, _client, slow) = with_slow_handler().await;
    // A client that only sends the deadline: tonic's own would race the server's
    // answer, made a few ms before the deadline, with its own timer.
    let mut raw = http2::Http2::connect(server.addr()).await;
    let answer = raw
        .unary_with(
            http2::EXECUTE,
            &execute_message("/slow now"),
            &[("grpc-timeout", "400m")],
        )
        .await;
    assert_eq!(answer.grpc_status(), Some(0), "{answer:?}");
    let outcome = outcome_of(answer.message());
    assert_eq!(outcome.outcome(), Outcome::Failed);
    assert!(
        outcome.reply.starts_with("/slow failed: timed out after")
            && outcome.reply.contains("caller's deadline"),
        "{}",
        outcome.reply
    );
    assert_eq!(*slow.calls.lock().unwrap(), 1, "the handler was called");
}

/// Less than the minimum left: the failure reply at once, the handler never called.
#[tokio::test]
async fn execute_with_less_than_the_minimum_left_does_not_call_the_handler() {
    let (url, slow) = start_slow(Duration::from_millis(1)).await;
    let server = TestServer::start_with(|s| s.handlers.min_time_left_ms = 5_000).await;
    let mut client = server.client().await;
    register_with(
        &mut client,
        "slow",
        binding(Endpoint::Grpc(url), 10_000),
        false,
    )
    .await
    .unwrap();
    let executed = client
        .execute(execute_request("/slow now", Duration::from_secs(4)))
        .await
        .unwrap()
        .into_inner();
    let outcome = outcome_of(executed);
    assert_eq!(outcome.outcome(), Outcome::Failed);
    assert!(
        outcome.reply.starts_with("/slow failed: not called:")
            && outcome.reply.contains("the minimum is 5000 ms"),
        "{}",
        outcome.reply
    );
    assert_eq!(*slow.calls.lock().unwrap(), 0, "never called");
    // With enough time left the same command runs.
    let executed = client
        .execute(execute_request("/slow now", Duration::from_secs(30)))
        .await
        .unwrap()
        .into_inner();
    let outcome = outcome_of(executed);
    assert_eq!(outcome.reply, "late");
    assert_eq!(*slow.calls.lock().unwrap(), 1);
}
