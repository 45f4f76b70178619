//! A real server on 127.0.0.1:0 with a temporary sled directory, and real clients.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use a2a_commands::config::Settings;
use a2a_commands::pb;
use a2a_commands::pb::command_service_client::CommandServiceClient;
use a2a_commands::transport::server::{self, RunningServer};
use tonic::transport::Channel;

pub mod etcd;
pub mod handlers;
pub mod http2;
pub mod metrics;
pub mod otlp;
pub mod pki;
pub mod process;

pub type Client = CommandServiceClient<Channel>;

/// An in-process server and the directory it keeps its registry in.
pub struct TestServer {
    pub server: Option<RunningServer>,
    pub settings: Settings,
    pub dir: tempfile::TempDir,
}

pub fn settings(dir: &Path) -> Settings {
    Settings::with_defaults("127.0.0.1:0".parse().unwrap(), dir.join("data"))
}

impl TestServer {
    /// Starts with the default settings.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts with settings adjusted by `adjust`.
    pub async fn start_with(adjust: impl FnOnce(&mut Settings)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings(dir.path());
        adjust(&mut settings);
        let server = server::start(settings.clone())
            .await
            .expect("server starts");
        Self {
            server: Some(server),
            settings,
            dir,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.settings.registry.data_dir.clone()
    }

    /// A new client on its own connection. The listener is bound before `start`
    /// returns, so connecting needs no waiting.
    pub async fn client(&self) -> Client {
        CommandServiceClient::connect(format!("http://{}", self.addr()))
            .await
            .expect("connects")
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr()))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    /// Drains and stops the server, then starts a new one on the same directory.
    pub async fn restart(&mut self) {
        self.server.take().unwrap().shutdown().await.unwrap();
        let server = server::start(self.settings.clone())
            .await
            .expect("restarts");
        self.server = Some(server);
    }

    pub async fn stop(mut self) {
        self.server.take().unwrap().shutdown().await.unwrap();
    }
}

/// A channel to `addr` over plain text (a listener other than the API's, e.g. health).
pub async fn connect(addr: SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

pub fn spec(name: &str, description: &str, hint: &str) -> pb::CommandSpec {
    pb::CommandSpec {
        name: name.into(),
        description: description.into(),
        argument_hint: hint.into(),
    }
}

pub async fn register(
    client: &mut Client,
    spec: pb::CommandSpec,
    replace: bool,
) -> Result<pb::RegisterResponse, tonic::Status> {
    client
        .register(pb::RegisterRequest {
            spec: Some(spec),
            r#override: replace,
            handler: None,
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner())
}

pub async fn list(client: &mut Client) -> pb::ListSpecsResponse {
    client
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .unwrap()
        .into_inner()
}

pub async fn names(client: &mut Client) -> Vec<String> {
    list(client)
        .await
        .commands
        .into_iter()
        .map(|c| c.spec.unwrap().name)
        .collect()
}

pub fn text_message(id: &str, text: &str) -> pb::Message {
    pb::Message {
        message_id: id.into(),
        context_id: "c-1".into(),
        task_id: "t-1".into(),
        role: pb::Role::User.into(),
        parts: vec![text_part(text)],
        ..Default::default()
    }
}

/// An Execute request of `text` (message `message_id`) on a working task `t-1`, from
/// sender `u` of `role`.
pub fn execute_request(
    message_id: &str,
    text: &str,
    role: pb::ParticipantRole,
) -> pb::ExecuteRequest {
    pb::ExecuteRequest {
        message: Some(text_message(message_id, text)),
        task: Some(pb::TaskSnapshot {
            id: "t-1".into(),
            state: pb::TaskState::Working.into(),
            ..Default::default()
        }),
        sender: Some(pb::Sender {
            id: "u".into(),
            role: role.into(),
        }),
        ..Default::default()
    }
}

pub fn text_part(text: &str) -> pb::Part {
    pb::Part {
        content: Some(pb::part::Content::Text(text.into())),
        ..Default::default()
    }
}

pub async fn classify(client: &mut Client, message: pb::Message) -> pb::classify_response::Result {
    client
        .classify(pb::ClassifyRequest {
            message: Some(message),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
}

/// Asserts that `server` still serves: a new connection classifies `/status`.
pub async fn still_serving(server: &TestServer) {
    let mut client = server.client().await;
    let got = classify(&mut client, text_message("m", "/status")).await;
    assert!(
        matches!(got, pb::classify_response::Result::Command(_)),
        "still serving: {got:?}"
    );
}

/// Every file under `dir`, by relative path, with its bytes.
pub fn files(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}
