//! The idle timeout (`--idle-timeout-seconds`): the server closes a connection with no
//! call in flight, and never one with a call in flight.

mod common;

use std::time::Duration;

use a2a_commands::pb;
use common::http2::*;
use common::*;
use http::{Method, StatusCode};
use prost::Message as _;

/// The bound on waiting for anything here; only a hang guard.
const HANG: Duration = Duration::from_secs(60);

/// A connection with no call in flight for the idle timeout is closed, including one
/// that never sends a byte and one that sends only the HTTP/2 preface.
#[tokio::test]
async fn idle_connections_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start_with(|s| {
        s.limits.idle_timeout = Some(Duration::from_secs(2));
    })
    .await;
    // The server ends the stream: a read returns 0 bytes (after any frames it sent).
    async fn closed_by_server(mut socket: tokio::net::TcpStream) {
        let mut buf = [0u8; 4096];
        let wait = Duration::from_secs(30);
        loop {
            match tokio::time::timeout(wait, socket.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return,
                Ok(Ok(_)) => continue,
                Err(_) => panic!("the idle connection was still open after {wait:?}"),
            }
        }
    }
    let silent = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    closed_by_server(silent).await;

    let mut preface_only = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    // The client preface and an empty SETTINGS frame, then nothing.
    preface_only
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    closed_by_server(preface_only).await;

    // Calls still work: idle closing applies to connections with nothing in flight.
    still_serving(&server).await;
}

/// A connection that made its call and went quiet is closed; one holding a WatchSpecs
/// stream open all that time is not, and still serves.
#[tokio::test]
async fn a_call_in_flight_keeps_its_connection_open() {
    let server = TestServer::start_with(|s| {
        s.builtins.clear();
        s.limits.idle_timeout = Some(Duration::from_secs(2));
    })
    .await;
    let mut watching = Http2::connect(server.addr()).await;
    let watch = framed(&pb::WatchSpecsRequest::default());
    let started = watching
        .start(Method::POST, WATCH_SPECS, Some(GRPC), Some(watch), true)
        .await;
    let response = started.response.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut updates = Messages::new(response.into_body());
    let state = pb::ListSpecsResponse::decode(updates.next().await.unwrap()).unwrap();
    assert!(state.commands.is_empty());

    // Opened after the watch began, and busy for a call: its idle time runs out later
    // than the watching connection's would.
    let mut quiet = Http2::connect(server.addr()).await;
    let request = pb::ClassifyRequest {
        message: Some(text_message("m", "/status")),
    };
    assert_eq!(quiet.unary(CLASSIFY, &request).await.grpc_status(), Some(0));
    tokio::time::timeout(HANG, quiet.closed())
        .await
        .expect("the quiet connection was never closed");

    // The watching connection is still open: its stream delivers the next change...
    let mut client = server.client().await;
    register(&mut client, spec("deploy", "Deploy", ""), false)
        .await
        .unwrap();
    let update = tokio::time::timeout(HANG, updates.next())
        .await
        .expect("no update")
        .expect("the stream ended");
    let update = pb::ListSpecsResponse::decode(update).unwrap();
    assert_eq!(update.commands[0].spec.as_ref().unwrap().name, "deploy");
    assert!(!watching.is_closed());
    // ...and it takes new calls.
    assert_eq!(
        watching.unary(CLASSIFY, &request).await.grpc_status(),
        Some(0)
    );
}
