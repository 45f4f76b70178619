//! Starting to serve: the services the API listener offers (reflection), and start-ups
//! that fail clearly, leaving the data directory alone.

mod common;

use a2a_commands::transport::service::SERVICE_NAME;
use common::process::serve_command;
use common::*;

#[tokio::test]
async fn reflection_v1_lists_services_and_serves_descriptors() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;

    let server = TestServer::start().await;
    let mut client = ServerReflectionClient::new(server.channel().await);
    let requests = [
        MessageRequest::ListServices(String::new()),
        MessageRequest::FileContainingSymbol(SERVICE_NAME.into()),
        MessageRequest::FileContainingSymbol("google.rpc.BadRequest".into()),
        MessageRequest::FileContainingSymbol("grpc.health.v1.Health".into()),
        MessageRequest::FileContainingSymbol("a2a.commands.v1.TaskStatusUpdateEvent".into()),
    ]
    .map(|r| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(r),
    });
    let mut responses = client
        .server_reflection_info(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    let mut answers = Vec::new();
    while let Some(response) = responses.message().await.unwrap() {
        answers.push(response.message_response.unwrap());
    }
    assert_eq!(answers.len(), 5);
    let MessageResponse::ListServicesResponse(list) = &answers[0] else {
        panic!("{:?}", answers[0])
    };
    let services: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    for want in [
        SERVICE_NAME,
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
    ] {
        assert!(services.contains(&want), "{services:?}");
    }
    // Only what this listener serves: handlers implement CommandHandler, we do not.
    assert!(
        !services.contains(&"a2a.commands.v1.CommandHandler"),
        "{services:?}"
    );
    for answer in &answers[1..] {
        assert!(
            matches!(answer, MessageResponse::FileDescriptorResponse(f) if !f.file_descriptor_proto.is_empty()),
            "{answer:?}"
        );
    }
}

#[tokio::test]
async fn reflection_v1alpha_lists_the_service() {
    use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1alpha::ServerReflectionRequest;

    let server = TestServer::start().await;
    let mut client = ServerReflectionClient::new(server.channel().await);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = responses
        .message()
        .await
        .unwrap()
        .unwrap()
        .message_response
        .unwrap();
    let MessageResponse::ListServicesResponse(list) = answer else {
        panic!("{answer:?}")
    };
    assert!(list.service.iter().any(|s| s.name == SERVICE_NAME));
}

#[tokio::test]
async fn a_second_instance_on_the_same_directory_fails_clearly() {
    let server = TestServer::start().await;
    let output = serve_command(&server.data_dir(), &[]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!(
            "cannot open data directory {}",
            server.data_dir().display()
        )) && last.contains("in use by another running instance"),
        "{stderr}"
    );
    // The first instance is unharmed.
    let mut client = server.client().await;
    assert_eq!(names(&mut client).await.len(), 4);
}

#[test]
fn unusable_directories_fail_clearly_and_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be.
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "keep me").unwrap();
    let output = serve_command(&file, &[]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("cannot open data directory {}", file.display())),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");

    // A store whose files are garbage.
    let corrupt = dir.path().join("corrupt");
    std::fs::create_dir(&corrupt).unwrap();
    std::fs::write(corrupt.join("conf"), b"\xff\xfe garbage").unwrap();
    std::fs::write(corrupt.join("db"), vec![0xAB; 4096]).unwrap();
    let output = serve_command(&corrupt, &[]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot open data directory"), "{stderr}");
    assert_eq!(
        std::fs::read(corrupt.join("db")).unwrap(),
        vec![0xAB; 4096],
        "left untouched"
    );
}

#[test]
fn bad_configuration_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let output = serve_command(dir.path(), &["--default-model", "nope"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("default-model: \"nope\" is not one of the selectable models"),
        "{stderr}"
    );
}
