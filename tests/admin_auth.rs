//! The admin token: Register and Unregister need it, reads do not, and the file is read
//! again on every change (rotation).

mod common;

use a2a_commands::pb;
use a2a_commands::pb::command_service_client::CommandServiceClient;
use common::*;
use tonic::Code;

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
    anonymous
        .execute(execute_request(
            "m",
            "/status",
            pb::ParticipantRole::Assignee,
        ))
        .await
        .unwrap();

    // Rotation: the file is read on every change.
    std::fs::write(&token_file, "rotated").unwrap();
    assert_eq!(
        admin.register(request()).await.unwrap_err().code(),
        Code::PermissionDenied
    );
}
