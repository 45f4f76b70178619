//! What the load tool sends: messages, Execute requests, specs to register, and an
//! echo handler to measure what a handler call adds.

use a2a_commands::pb::command_handler_server::{CommandHandler, CommandHandlerServer};
use a2a_commands::pb::command_service_client::CommandServiceClient;
use a2a_commands::pb::{self, part::Content};
use tonic::transport::Channel;

pub(crate) fn message(id: String, text: &str) -> pb::Message {
    pb::Message {
        message_id: id,
        context_id: "c-load".into(),
        task_id: "t-load".into(),
        role: pb::Role::User.into(),
        parts: vec![pb::Part {
            content: Some(Content::Text(text.into())),
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub(crate) fn execute_request(text: &str, i: usize) -> pb::ExecuteRequest {
    pb::ExecuteRequest {
        message: Some(message(format!("m-{i}"), text)),
        task: Some(pb::TaskSnapshot {
            id: "t-load".into(),
            context_id: "c-load".into(),
            name: "Load".into(),
            state: pb::TaskState::Working.into(),
            plan: Some(pb::PlanProgress {
                steps_done: 1,
                steps_total: 3,
            }),
            ..Default::default()
        }),
        sender: Some(pb::Sender {
            id: "load".into(),
            role: pb::ParticipantRole::Assignee.into(),
        }),
        ..Default::default()
    }
}

pub(crate) fn complete_request(text: &str) -> pb::CompleteRequest {
    pb::CompleteRequest {
        text: text.into(),
        sender: Some(pb::Sender {
            id: "load".into(),
            role: pb::ParticipantRole::Assignee.into(),
        }),
        ..Default::default()
    }
}

/// Writes each measured request as a framed gRPC body (the 5-byte prefix, then the
/// protobuf), with `bodies.tsv` listing `name<TAB>path<TAB>file`, for an outside client.
pub(crate) fn write_bodies(dir: &std::path::Path, revision: u64) -> std::io::Result<()> {
    fn framed(message: &impl prost::Message) -> Vec<u8> {
        let body = message.encode_to_vec();
        let mut out = Vec::with_capacity(body.len() + 5);
        out.push(0);
        out.extend_from_slice(&u32::try_from(body.len()).expect("small").to_be_bytes());
        out.extend_from_slice(&body);
        out
    }
    const SERVICE: &str = "/a2a.commands.v1.CommandService";
    let classify = |text: &str| pb::ClassifyRequest {
        message: Some(message("m-1".into(), text)),
    };
    let bodies: Vec<(&str, String, Vec<u8>)> = vec![
        (
            "floor",
            "/grpc.health.v1.Health/Check".into(),
            framed(&tonic_health::pb::HealthCheckRequest::default()),
        ),
        (
            "classify-command",
            format!("{SERVICE}/Classify"),
            framed(&classify("/cmd-00042 some arguments")),
        ),
        (
            "classify-ordinary",
            format!("{SERVICE}/Classify"),
            framed(&classify("Please summarise the thread so far.")),
        ),
        (
            "execute-status",
            format!("{SERVICE}/Execute"),
            framed(&execute_request("/status", 1)),
        ),
        (
            "execute-ordinary",
            format!("{SERVICE}/Execute"),
            framed(&execute_request("hello there", 1)),
        ),
        (
            "listspecs-full",
            format!("{SERVICE}/ListSpecs"),
            framed(&pb::ListSpecsRequest::default()),
        ),
        (
            "listspecs-current",
            format!("{SERVICE}/ListSpecs"),
            framed(&pb::ListSpecsRequest {
                known_revision: Some(revision),
                ..Default::default()
            }),
        ),
        (
            "complete-names",
            format!("{SERVICE}/Complete"),
            framed(&complete_request("/cmd-0004")),
        ),
        (
            "complete-model",
            format!("{SERVICE}/Complete"),
            framed(&complete_request("/model g")),
        ),
    ];
    std::fs::create_dir_all(dir)?;
    let mut index = String::new();
    for (name, path, body) in bodies {
        let file = dir.join(format!("{name}.bin"));
        std::fs::write(&file, body)?;
        index.push_str(&format!("{name}\t{path}\t{}\n", file.display()));
    }
    std::fs::write(dir.join("bodies.tsv"), index)
}

pub(crate) fn spec(name: String) -> pb::CommandSpec {
    pb::CommandSpec {
        name,
        description: "A command registered by the load tool".into(),
        argument_hint: "[<arg>]".into(),
    }
}

/// A handler that answers at once, to measure what a handler call adds.
struct Echo;

#[tonic::async_trait]
impl CommandHandler for Echo {
    async fn handle(
        &self,
        request: tonic::Request<pb::Invocation>,
    ) -> Result<tonic::Response<pb::HandlerResult>, tonic::Status> {
        let reply = format!("echo {}", request.get_ref().arguments);
        Ok(tonic::Response::new(pb::HandlerResult {
            result: Some(pb::handler_result::Result::Reply(pb::HandlerReply {
                reply,
                ..Default::default()
            })),
        }))
    }
}

pub(crate) async fn start_echo_handler() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CommandHandlerServer::new(Echo))
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            ),
    );
    url
}

pub(crate) async fn prepare(channel: &Channel, count: usize, handler_url: &str) {
    let mut client = CommandServiceClient::new(channel.clone());
    // Concurrent registrations share flushes, so preparing 10,000 is quick.
    let mut batch = Vec::new();
    for i in 0..count {
        let mut client = client.clone();
        batch.push(tokio::spawn(async move {
            client
                .register(pb::RegisterRequest {
                    spec: Some(spec(format!("cmd-{i:05}"))),
                    ..Default::default()
                })
                .await
        }));
        if batch.len() == 256 || i + 1 == count {
            for call in batch.drain(..) {
                call.await.expect("task").expect("register");
            }
        }
    }
    client
        .register(pb::RegisterRequest {
            spec: Some(spec("echo".into())),
            handler: Some(pb::HandlerBinding {
                endpoint: Some(pb::handler_binding::Endpoint::Grpc(handler_url.into())),
                timeout_ms: 5_000,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("register the echo handler");
}
