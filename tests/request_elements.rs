//! The element limit (`--max-request-elements`): a request with more repeated elements
//! is RESOURCE_EXHAUSTED before it is decoded, whoever sends it. (That two servers keep
//! their own limit is in `settings_per_server.rs`.)

mod common;

use a2a_commands::pb;
use common::*;
use tonic::Code;

fn with_parts(count: usize) -> pb::ClassifyRequest {
    let mut message = text_message("m", "x");
    message.parts = (0..count).map(|_| text_part("x")).collect();
    pb::ClassifyRequest {
        message: Some(message),
    }
}

#[tokio::test]
async fn more_elements_than_the_limit_are_resource_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret").unwrap();
    let server = TestServer::start_with(|s| {
        s.limits.max_request_elements = 50;
        s.admin_token_file = Some(token.clone());
    })
    .await;
    let mut client = server.client().await;

    // Under the limit, many parts are just not a command.
    let got = client.classify(with_parts(20)).await.unwrap().into_inner();
    assert!(matches!(
        got.result,
        Some(pb::classify_response::Result::Ordinary(_))
    ));

    let refused = client.classify(with_parts(500)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert!(
        refused.message().contains("--max-request-elements"),
        "{}",
        refused.message()
    );

    // Register is decoded before its token is checked, so it is bounded the same way
    // for a caller with no token at all.
    let headers = (0..500)
        .map(|i| pb::HandlerHeader {
            name: format!("x-{i}"),
            value_file: "f".into(),
        })
        .collect();
    let refused = client
        .register(pb::RegisterRequest {
            spec: Some(spec("deploy", "Deploy", "")),
            handler: Some(pb::HandlerBinding {
                endpoint: Some(pb::handler_binding::Endpoint::Grpc(
                    "http://127.0.0.1:1".into(),
                )),
                headers,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(refused.message().contains("--max-request-elements"));
    still_serving(&server).await;
}
