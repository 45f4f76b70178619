//! A handler that cannot be reached fails its command at once, with the reason in the
//! reply and nothing changed.

mod common;

use a2a_commands::pb::{handler_binding::Endpoint, Outcome, ParticipantRole as Role};
use common::handlers::*;
use common::*;

#[tokio::test]
async fn unreachable_handlers_fail_quickly() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    // A port held but never listened on: every connection to it is refused, and no
    // other process can take it while the test runs.
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = held.local_addr().unwrap().port();
    register_with(
        &mut client,
        "grpc-gone",
        binding(Endpoint::Grpc(format!("http://127.0.0.1:{port}")), 2_000),
        false,
    )
    .await
    .unwrap();
    register_with(
        &mut client,
        "http-gone",
        binding(
            Endpoint::JsonRpc(format!("http://127.0.0.1:{port}/x")),
            2_000,
        ),
        false,
    )
    .await
    .unwrap();
    for name in ["grpc-gone", "http-gone"] {
        let out = execute(&mut client, &format!("/{name} reply"), Role::Assignee).await;
        assert_eq!(out.outcome(), Outcome::Failed);
        assert_eq!(out.reply, format!("/{name} failed: handler unreachable"));
        unchanged(&out);
    }
}
