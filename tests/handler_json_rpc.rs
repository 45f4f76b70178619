//! A command bound to a JSON-RPC handler over HTTP, end to end through Execute: the
//! reference's request shape, and every kind of answer it can give.

mod common;

use a2a_commands::pb::{handler_binding::Endpoint, Outcome, ParticipantRole as Role};
use common::handlers::*;
use common::*;
use serde_json::json;

#[tokio::test]
async fn json_rpc_handlers_end_to_end() {
    let (url, seen) = start_json_rpc_handler().await;
    let server = TestServer::start().await;
    let mut client = server.client().await;
    register_with(
        &mut client,
        "review",
        binding(Endpoint::JsonRpc(url), 300),
        false,
    )
    .await
    .unwrap();
    the_common_cases(&mut client, "review", "refused: policy").await;

    let out = execute(&mut client, "/review null", Role::Assignee).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::NoHandler, "command /review has no handler")
    );
    // The context may come back bare, with the reference's `reasoning_effort`.
    let out = execute(&mut client, "/review bare", Role::Assignee).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::Ok, "bare done")
    );
    let settings = out.changes.clone().unwrap().settings.unwrap();
    assert_eq!(settings.effort.as_deref(), Some("high"));
    for (args, reason) in [
        ("http500", "handler answered HTTP 500"),
        ("rpc-error", "handler error -32000: exploded"),
        (
            "abort-other",
            "abort reason \"frozen\" is not one of refused, policy, invalid",
        ),
    ] {
        let out = execute(&mut client, &format!("/review {args}"), Role::Assignee).await;
        assert_eq!(out.reply, format!("/review failed: {reason}"));
    }
    for args in ["malformed", "wrong-types", "unknown-key"] {
        let out = execute(&mut client, &format!("/review {args}"), Role::Assignee).await;
        assert_eq!(out.outcome(), Outcome::Failed);
        assert!(
            out.reply.starts_with("/review failed: malformed answer: "),
            "{}",
            out.reply
        );
    }

    // Every request had the reference's shape (the handler answers 422 otherwise, and
    // the replies above would have failed), with ids counting from 1.
    let seen = seen.lock().unwrap().clone();
    let ids: Vec<u64> = seen
        .iter()
        .map(|s| s["request"]["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    let context = &seen[0]["request"]["params"]["context"];
    assert_eq!(
        *context,
        json!({
            "task_id": "t-9", "correlation_id": "m-42", "attempt": 2, "name": "review",
            "arguments": "reply", "sender": "u-1", "sender_role": "assignee",
            "task": {
                "id": "t-9", "name": "Ship it", "state": "WORKING", "sub_state": null,
                "settings": {"model": null, "reasoning_effort": null},
                "steps_done": 0, "steps_total": 0,
                "children": [{"task_id": "t-9.1", "state": "COMPLETED"}]
            },
            "result": null
        })
    );
}
