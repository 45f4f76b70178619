//! Requests that are not gRPC get the HTTP answers the gRPC spec gives: 405 for a
//! method other than POST, 415 for another content type; the connection goes on.

mod common;

use a2a_commands::pb;
use common::http2::*;
use common::*;
use http::{Method, StatusCode};

#[tokio::test]
async fn other_methods_are_405_and_other_content_types_415() {
    let server = TestServer::start().await;
    let mut connection = Http2::connect(server.addr()).await;

    for method in [Method::GET, Method::PUT] {
        let started = connection
            .start(method.clone(), CLASSIFY, Some(GRPC), None, true)
            .await;
        let answer = answer(started.response).await;
        assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(answer.headers["allow"], "POST", "{method}");
        assert_eq!(answer.grpc_status(), None, "not a gRPC answer: {answer:?}");
    }

    for content_type in [Some("application/json"), Some("text/plain"), None] {
        let started = connection
            .start(
                Method::POST,
                CLASSIFY,
                content_type,
                Some(bytes::Bytes::from_static(b"{}")),
                true,
            )
            .await;
        let answer = answer(started.response).await;
        assert_eq!(
            answer.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
        assert_eq!(
            answer.headers["accept"], "application/grpc",
            "{content_type:?}"
        );
    }

    // Any application/grpc variant is gRPC, and the same connection still serves it.
    let request = pb::ClassifyRequest {
        message: Some(text_message("m", "/status")),
    };
    for content_type in [GRPC, "application/grpc+proto"] {
        let started = connection
            .start(
                Method::POST,
                CLASSIFY,
                Some(content_type),
                Some(framed(&request)),
                true,
            )
            .await;
        let answer = answer(started.response).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.grpc_status(), Some(0), "{answer:?}");
        answer.assert_classified_a_command();
    }
}
