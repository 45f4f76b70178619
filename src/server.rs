//! The gRPC layer: translates requests into calls on the registry, classifier and
//! executor, and wires the API, health and reflection onto one listener.
//!
//! Nothing here decides behaviour; it checks the shape of requests, calls the plain
//! functions, and turns their results and errors into protobuf.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;

use crate::builtins::Catalogue;
use crate::classify::{classify, Classification};
use crate::config::Settings;
use crate::error::Error;
use crate::execute::{execute, handler_reply, reply_event, Execution, Task};
use crate::handlers::{HandlerBinding, Handlers};
use crate::pb::command_service_server::{CommandService, CommandServiceServer};
use crate::pb::{self, EventJsonFormat, OrdinaryReason, ParticipantRole};
use crate::registry::{Applied, Body, Change, OpenError, Registry};
use crate::spec::{CommandName, CommandSpec};

/// The gRPC service name of the API, as health and reflection know it.
pub const SERVICE_NAME: &str = "a2a.commands.v1.CommandService";

/// The `CommandService` implementation.
pub struct Api {
    registry: Arc<Registry>,
    catalogue: Arc<Catalogue>,
    handlers: Arc<Handlers>,
}

fn required<'a, T>(field: &str, value: &'a Option<T>) -> Result<&'a T, Error> {
    value
        .as_ref()
        .ok_or_else(|| Error::invalid(field, "is required"))
}

fn ordinary(reason: OrdinaryReason, name: Option<&str>) -> pb::Ordinary {
    pb::Ordinary {
        reason: reason.into(),
        name: name.unwrap_or_default().to_owned(),
    }
}

/// Now, to the millisecond (A2A timestamps carry milliseconds).
fn now() -> prost_types::Timestamp {
    let mut ts = prost_types::Timestamp::from(SystemTime::now());
    ts.nanos -= ts.nanos % 1_000_000;
    ts
}

fn settings_to_proto(model: Option<String>, effort: Option<String>) -> Option<pb::TaskSettings> {
    (model.is_some() || effort.is_some()).then_some(pb::TaskSettings { model, effort })
}

#[tonic::async_trait]
impl CommandService for Api {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        let request = request.into_inner();
        let spec = required("spec", &request.spec)?;
        let spec = CommandSpec::new("spec", &spec.name, &spec.description, &spec.argument_hint)?;
        let body = match &request.handler {
            None => Body::None,
            Some(binding) => Body::Handler {
                handler: HandlerBinding::parse("handler", binding, self.handlers.policy())?,
            },
        };
        let change = Change::Register {
            spec,
            body,
            replace: request.r#override,
        };
        let (applied, revision) = self.registry.apply(change).await?;
        let outcome = match applied {
            Applied::Created => pb::RegisterOutcome::Created,
            Applied::Replaced => pb::RegisterOutcome::Replaced,
            _ => pb::RegisterOutcome::Unchanged,
        };
        Ok(Response::new(pb::RegisterResponse {
            outcome: outcome.into(),
            revision,
        }))
    }

    async fn unregister(
        &self,
        request: Request<pb::UnregisterRequest>,
    ) -> Result<Response<pb::UnregisterResponse>, Status> {
        let name = CommandName::parse("name", &request.get_ref().name)?;
        let (_, revision) = self.registry.apply(Change::Unregister { name }).await?;
        Ok(Response::new(pb::UnregisterResponse { revision }))
    }

    async fn list_specs(
        &self,
        _request: Request<pb::ListSpecsRequest>,
    ) -> Result<Response<pb::ListSpecsResponse>, Status> {
        let snapshot = self.registry.snapshot();
        let card = snapshot.card();
        let commands = snapshot
            .commands()
            .iter()
            .map(|c| pb::RegisteredCommand {
                spec: Some(spec_to_proto(&c.spec)),
                body: match c.body {
                    Body::Builtin { .. } => pb::CommandBody::Builtin,
                    Body::None => pb::CommandBody::None,
                    Body::Handler { .. } => pb::CommandBody::Handler,
                }
                .into(),
                handler: match &c.body {
                    Body::Handler { handler } => Some(handler.to_proto()),
                    _ => None,
                },
            })
            .collect();
        Ok(Response::new(pb::ListSpecsResponse {
            commands,
            revision: snapshot.revision(),
            card_params_json: card.params_json.clone(),
            card_extension_json: card.extension_json.clone(),
            card_extension: Some(pb::AgentExtension {
                uri: crate::card::EXTENSION_URI.to_owned(),
                description: crate::card::EXTENSION_DESCRIPTION.to_owned(),
                required: false,
                params: Some(crate::json::to_struct(&card.params)),
            }),
        }))
    }

    async fn classify(
        &self,
        request: Request<pb::ClassifyRequest>,
    ) -> Result<Response<pb::ClassifyResponse>, Status> {
        let message = required("message", &request.get_ref().message)?;
        let snapshot = self.registry.snapshot();
        let result = match classify(message, &snapshot) {
            Classification::Command {
                name, arguments, ..
            } => pb::classify_response::Result::Command(pb::Command {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            }),
            Classification::Ordinary { reason, name } => {
                pb::classify_response::Result::Ordinary(ordinary(reason, name))
            }
        };
        Ok(Response::new(pb::ClassifyResponse {
            result: Some(result),
            revision: snapshot.revision(),
        }))
    }

    async fn execute(
        &self,
        request: Request<pb::ExecuteRequest>,
    ) -> Result<Response<pb::ExecuteResponse>, Status> {
        let request = request.get_ref();
        let message = required("message", &request.message)?;
        if message.message_id.is_empty() {
            return Err(Error::invalid("message.message_id", "must not be empty").into());
        }
        let task = Task::from_proto(required("task", &request.task)?)?;
        let role = match &request.sender {
            None => ParticipantRole::None,
            Some(sender) => ParticipantRole::try_from(sender.role).map_err(|_| {
                Error::invalid(
                    "sender.role",
                    format!("{} is not a ParticipantRole value", sender.role),
                )
            })?,
        };
        let format = EventJsonFormat::try_from(request.event_json_format).map_err(|_| {
            Error::invalid(
                "event_json_format",
                format!(
                    "{} is not an EventJsonFormat value",
                    request.event_json_format
                ),
            )
        })?;

        let snapshot = self.registry.snapshot();
        let (name, arguments, reply) =
            match execute(message, &task, role, &snapshot, &self.catalogue) {
                Execution::Ordinary { reason, name } => {
                    return Ok(Response::new(pb::ExecuteResponse {
                        result: Some(pb::execute_response::Result::Ordinary(ordinary(
                            reason, name,
                        ))),
                        revision: snapshot.revision(),
                    }));
                }
                Execution::Command {
                    name,
                    arguments,
                    reply,
                } => (name, arguments, reply),
                Execution::Delegate {
                    name,
                    arguments,
                    handler,
                } => {
                    let invocation = pb::Invocation {
                        task_id: task.id.to_owned(),
                        correlation_id: message.message_id.clone(),
                        attempt: request.attempt.max(1),
                        command: name.to_owned(),
                        arguments: arguments.to_owned(),
                        sender: request.sender.clone(),
                        task: request.task.clone(),
                        message: Some(message.clone()),
                    };
                    let answer = self.handlers.invoke(&handler, &invocation).await;
                    let reply = handler_reply(name, answer, &task, role, &self.catalogue);
                    (name, arguments, reply)
                }
            };
        let event = reply_event(
            &task,
            &message.context_id,
            &message.message_id,
            name,
            &reply,
            now(),
        );
        let changes = reply.changes.clone();
        let result = pb::execute_response::Result::Command(pb::CommandOutcome {
            command: Some(pb::Command {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            }),
            outcome: reply.outcome.into(),
            reply: reply.text.clone(),
            event: Some(event.to_proto()),
            event_json: event.to_json(format),
            changes: Some(pb::Changes {
                settings: settings_to_proto(changes.model, changes.effort),
                sub_task: changes.sub_task.map(|s| pb::SubTaskToCreate {
                    id: s.id,
                    name: s.name,
                    goal: s.goal,
                }),
            }),
        });
        Ok(Response::new(pb::ExecuteResponse {
            result: Some(result),
            revision: snapshot.revision(),
        }))
    }
}

fn spec_to_proto(spec: &CommandSpec) -> pb::CommandSpec {
    pb::CommandSpec {
        name: spec.name.to_string(),
        description: spec.description.clone(),
        argument_hint: spec.argument_hint.clone(),
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data directory could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The registry could not be prepared (built-ins).
    #[error("cannot prepare the registry: {0}")]
    Registry(#[from] Error),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Reflection could not be built from the descriptors.
    #[error("cannot build server reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// A server that is running.
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
    registry: Arc<Registry>,
    drain_timeout: Duration,
}

impl RunningServer {
    /// The address the API listens on (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The registry the server serves.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Drains: health turns NOT_SERVING, new connections are refused, in-flight calls
    /// finish (for at most the drain timeout; connections still open then are cut),
    /// then the registry is flushed and closed.
    pub async fn shutdown(mut self) -> Result<(), tonic::transport::Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = match tokio::time::timeout(self.drain_timeout, &mut self.task).await {
            Ok(Ok(result)) => result,
            Ok(Err(join)) => panic!("server task failed: {join}"),
            Err(_) => {
                tracing::warn!(
                    timeout = ?self.drain_timeout,
                    "drain timed out: closing the connections still open"
                );
                self.task.abort();
                Ok(())
            }
        };
        self.registry.close().await;
        result
    }
}

fn reflection_builder() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
}

/// Opens the registry, makes the built-ins as configured, binds the listener and starts
/// serving in the background. Returns once the server accepts connections.
pub async fn start(settings: Settings) -> Result<RunningServer, StartError> {
    let registry = Arc::new(Registry::open(&settings.registry)?);
    registry
        .apply(Change::SetBuiltins {
            enabled: settings.builtins.clone(),
        })
        .await?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: settings.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: settings.listen,
        source,
    })?;

    let api = Api {
        registry: Arc::clone(&registry),
        catalogue: Arc::new(settings.catalogue.clone()),
        handlers: Arc::new(Handlers::new(settings.handlers.clone())),
    };
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<CommandServiceServer<Api>>().await;
    let reflection_v1 = reflection_builder().build_v1()?;
    let reflection_v1alpha = reflection_builder().build_v1alpha()?;
    let api = CommandServiceServer::new(api)
        .max_decoding_message_size(settings.max_message_bytes)
        .max_encoding_message_size(usize::MAX);

    let (stop, stopped) = oneshot::channel::<()>();
    let drain = async move {
        let _ = stopped.await;
        health
            .set_service_status("", ServingStatus::NotServing)
            .await;
        health.set_not_serving::<CommandServiceServer<Api>>().await;
        tracing::info!("draining: no new calls, waiting for calls in flight");
    };
    let task = tokio::spawn(
        tonic::transport::Server::builder()
            .http2_keepalive_interval(Some(Duration::from_secs(30)))
            .add_service(health_service)
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha)
            .add_service(api)
            .serve_with_incoming_shutdown(TcpListenerStream::new(listener), drain),
    );
    tracing::info!(%addr, revision = registry.snapshot().revision(), commands = registry.snapshot().commands().len(), "serving");
    Ok(RunningServer {
        addr,
        stop: Some(stop),
        task,
        registry,
        drain_timeout: settings.drain_timeout,
    })
}
