//! The read deadline (`--request-read-timeout-seconds`): a request whose message does
//! not arrive in time is DEADLINE_EXCEEDED, gives its budget share back, and its
//! connection goes on serving.

mod common;

use std::time::Duration;

use a2a_commands::pb;
use bytes::Bytes;
use common::http2::*;
use common::*;
use http::Method;
use tonic::Code;

/// A server whose budget holds one largest request (4 KiB) and whose requests have
/// 1 s for their message (a bound the next call, sent whole, never comes near).
async fn server() -> TestServer {
    TestServer::start_with(|s| {
        s.max_message_bytes = 4096;
        // Never below one largest request: this makes it exactly one.
        s.limits.max_request_memory = 0;
        s.limits.request_read_timeout = Some(Duration::from_secs(1));
    })
    .await
}

fn small() -> pb::ClassifyRequest {
    pb::ClassifyRequest {
        message: Some(text_message("m", "/status")),
    }
}

/// Reads the answer to `started`, bounded only to turn a hang into a failure.
async fn answer_within_a_minute(started: Started) -> Answer {
    tokio::time::timeout(Duration::from_secs(60), answer(started.response))
        .await
        .expect("the server never answered the unfinished request")
}

#[tokio::test]
async fn a_message_cut_short_is_deadline_exceeded_and_the_connection_goes_on() {
    let server = server().await;
    let mut connection = Http2::connect(server.addr()).await;
    // A message announced as the largest accepted, of which two bytes come; the rest
    // never does. It takes the whole budget until it fails.
    let mut first = vec![0u8];
    first.extend_from_slice(&4096u32.to_be_bytes());
    first.extend_from_slice(b"\x0a\x00");
    let stalled = connection
        .start(
            Method::POST,
            CLASSIFY,
            Some(GRPC),
            Some(Bytes::from(first)),
            false,
        )
        .await;
    let answer = answer_within_a_minute(stalled).await;
    assert_eq!(
        answer.grpc_status(),
        Some(Code::DeadlineExceeded as i32),
        "{answer:?}"
    );
    assert!(
        answer
            .grpc_message()
            .contains("--request-read-timeout-seconds"),
        "{}",
        answer.grpc_message()
    );

    // The same connection serves the next call, which fits only if the share is back.
    let next = connection.unary(CLASSIFY, &small()).await;
    assert_eq!(next.grpc_status(), Some(0), "{next:?}");
    assert!(matches!(
        next.message::<pb::ClassifyResponse>().result,
        Some(pb::classify_response::Result::Command(_))
    ));
    assert!(!connection.is_closed());
}

#[tokio::test]
async fn a_request_with_no_data_frame_is_deadline_exceeded() {
    let server = server().await;
    let mut connection = Http2::connect(server.addr()).await;
    // Headers only: no data frame, and no end of stream, ever.
    let stalled = connection
        .start(Method::POST, CLASSIFY, Some(GRPC), None, false)
        .await;
    let answer = answer_within_a_minute(stalled).await;
    assert_eq!(
        answer.grpc_status(),
        Some(Code::DeadlineExceeded as i32),
        "{answer:?}"
    );
    let next = connection.unary(CLASSIFY, &small()).await;
    assert_eq!(next.grpc_status(), Some(0), "{next:?}");
}
