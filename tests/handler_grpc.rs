//! A command bound to a gRPC `CommandHandler`, end to end through Execute: what the
//! handler is sent, and every kind of answer it can give.

mod common;

use a2a_commands::pb::{handler_binding::Endpoint, Outcome, ParticipantRole as Role};
use common::handlers::*;
use common::*;

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
