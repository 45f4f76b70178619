//! The gRPC health service: on the API listener, and alone on the health listener.

mod common;

use a2a_commands::pb;
use a2a_commands::pb::command_service_client::CommandServiceClient;
use a2a_commands::transport::service::SERVICE_NAME;
use common::*;
use tonic::transport::Channel;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

async fn health_status(channel: Channel, service: &str) -> ServingStatus {
    HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status()
}

#[tokio::test]
async fn health_is_serving_overall_and_per_service() {
    let server = TestServer::start().await;
    let channel = server.channel().await;
    for service in ["", SERVICE_NAME] {
        let status = health_status(channel.clone(), service).await;
        assert_eq!(status, ServingStatus::Serving, "{service:?}");
    }
    let unknown = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: "no.such.Service".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
}

#[tokio::test]
async fn health_listener_serves_health_only() {
    let server = TestServer::start().await;
    let health_addr = server.server.as_ref().unwrap().health_addr().unwrap();
    assert_ne!(health_addr, server.addr());
    let channel = connect(health_addr).await;
    assert_eq!(
        health_status(channel.clone(), "").await,
        ServingStatus::Serving
    );
    assert_eq!(
        health_status(channel.clone(), SERVICE_NAME).await,
        ServingStatus::Serving
    );
    let mut api = CommandServiceClient::new(channel.clone());
    let status = api
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    let mut reflection =
        tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient::new(channel);
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            tonic_reflection::pb::v1::server_reflection_request::MessageRequest::ListServices(
                String::new(),
            ),
        ),
    };
    // Reflection there describes health alone (so grpcurl works on the probe port).
    let mut answers = reflection
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(
        tonic_reflection::pb::v1::server_reflection_response::MessageResponse::ListServicesResponse(
            list,
        ),
    ) = answer.message_response
    else {
        panic!("{answer:?}")
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["grpc.health.v1.Health"]);
}
