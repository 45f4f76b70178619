//! The `CommandService` implementation: the gRPC layer, which only translates.
//!
//! Each method checks the request's shape, calls the plain functions (registry,
//! classify, execute, handlers), converts the result to protobuf, and logs one line:
//! method, status code, latency and command name. Message text and arguments are never
//! logged, since they may carry secrets.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Request, Response, Status};

use crate::auth::AdminAuth;
use crate::builtins::Catalogue;
use crate::classify::{classify, Classification};
use crate::error::Error;
use crate::execute::{execute, handler_reply, reply_event, Execution, Reply, Task};
use crate::handlers::{HandlerBinding, Handlers};
use crate::list_route::ListCache;
use crate::pb::command_service_server::CommandService;
use crate::pb::{self, EventJsonFormat, OrdinaryReason, ParticipantRole};
use crate::registry::{Applied, Body, Change, Registry, Snapshot, Source};
use crate::spec::{CommandName, CommandSpec};

/// The `CommandService` implementation.
pub struct Api {
    registry: Arc<Registry>,
    catalogue: Arc<Catalogue>,
    handlers: Arc<Handlers>,
    auth: AdminAuth,
    list_cache: ListCache,
}

impl Api {
    /// The API over `registry`, running built-ins with `catalogue` and handlers with
    /// `handlers`; changes need `auth`.
    pub fn new(
        registry: Arc<Registry>,
        catalogue: Catalogue,
        handlers: Handlers,
        auth: AdminAuth,
    ) -> Self {
        Self {
            registry,
            catalogue: Arc::new(catalogue),
            handlers: Arc::new(handlers),
            auth,
            list_cache: ListCache::default(),
        }
    }

    /// The registry served.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The encoded ListSpecs answer of the latest revision.
    pub(crate) fn list_cache(&self) -> &ListCache {
        &self.list_cache
    }
}

/// Logs the call's one line: method, status code, latency and command name.
fn log_call<T>(method: &'static str, started: Instant, result: &Result<T, Error>, command: &str) {
    let code = result.as_ref().map_or_else(Error::code, |_| Code::Ok);
    tracing::info!(
        method,
        code = ?code,
        latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        command,
        "call"
    );
}

/// Logs the call's one line and wraps the answer.
pub(crate) fn logged<T>(
    method: &'static str,
    started: Instant,
    command: &str,
    result: Result<T, Error>,
) -> Result<Response<T>, Status> {
    log_call(method, started, &result, command);
    result.map(Response::new).map_err(Status::from)
}

fn required<'a, T>(field: &str, value: &'a Option<T>) -> Result<&'a T, Error> {
    value
        .as_ref()
        .ok_or_else(|| Error::invalid(field, "is required"))
}

fn enum_value<E: TryFrom<i32>>(field: &str, type_name: &str, value: i32) -> Result<E, Error> {
    E::try_from(value)
        .map_err(|_| Error::invalid(field, format!("{value} is not a {type_name} value")))
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

fn spec_to_proto(spec: &CommandSpec) -> pb::CommandSpec {
    pb::CommandSpec {
        name: spec.name.to_string(),
        description: spec.description.clone(),
        argument_hint: spec.argument_hint.clone(),
    }
}

/// The registry at one snapshot, as ListSpecs and WatchSpecs send it; `with_struct`
/// adds the card entry as a protobuf message.
pub fn list_response(snapshot: &Snapshot, with_struct: bool) -> pb::ListSpecsResponse {
    let card = snapshot.card();
    let commands = snapshot
        .commands()
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
            source: match c.source {
                Source::Api => pb::CommandSource::Api,
                Source::Builtins => pb::CommandSource::Builtin,
                Source::File => pb::CommandSource::File,
            }
            .into(),
        })
        .collect();
    pb::ListSpecsResponse {
        commands,
        revision: snapshot.revision(),
        card_params_json: card.params_json.clone(),
        card_extension_json: card.extension_json.clone(),
        card_extension: with_struct.then(|| pb::AgentExtension {
            uri: crate::card::EXTENSION_URI.to_owned(),
            description: crate::card::EXTENSION_DESCRIPTION.to_owned(),
            required: false,
            params: Some(crate::json::to_struct(&card.params)),
        }),
    }
}

fn outcome_to_proto(
    name: &str,
    arguments: &str,
    reply: Reply,
    event: pb::TaskStatusUpdateEvent,
    event_json: String,
) -> pb::CommandOutcome {
    let changes = reply.changes;
    let settings =
        (changes.model.is_some() || changes.effort.is_some()).then_some(pb::TaskSettings {
            model: changes.model,
            effort: changes.effort,
        });
    pb::CommandOutcome {
        command: Some(pb::Command {
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }),
        outcome: reply.outcome.into(),
        event: Some(event),
        event_json,
        reply: reply.text,
        changes: Some(pb::Changes {
            settings,
            sub_task: changes.sub_task.map(|s| pb::SubTaskToCreate {
                id: s.id,
                name: s.name,
                goal: s.goal,
            }),
        }),
    }
}

impl Api {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<pb::RegisterResponse, Error> {
        self.auth.check(request.metadata())?;
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
        Ok(pb::RegisterResponse {
            outcome: outcome.into(),
            revision,
        })
    }

    async fn unregister(
        &self,
        request: Request<pb::UnregisterRequest>,
    ) -> Result<pb::UnregisterResponse, Error> {
        self.auth.check(request.metadata())?;
        let name = CommandName::parse("name", &request.get_ref().name)?;
        let (_, revision) = self.registry.apply(Change::Unregister { name }).await?;
        Ok(pb::UnregisterResponse { revision })
    }

    fn classify(&self, request: &pb::ClassifyRequest) -> Result<pb::ClassifyResponse, Error> {
        let message = required("message", &request.message)?;
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
        Ok(pb::ClassifyResponse {
            result: Some(result),
            revision: snapshot.revision(),
        })
    }

    async fn execute(&self, request: &pb::ExecuteRequest) -> Result<pb::ExecuteResponse, Error> {
        let message = required("message", &request.message)?;
        if message.message_id.is_empty() {
            return Err(Error::invalid("message.message_id", "must not be empty"));
        }
        let task = Task::from_proto(required("task", &request.task)?)?;
        let role = match &request.sender {
            None => ParticipantRole::None,
            Some(sender) => enum_value("sender.role", "ParticipantRole", sender.role)?,
        };
        let format: EventJsonFormat = enum_value(
            "event_json_format",
            "EventJsonFormat",
            request.event_json_format,
        )?;

        let snapshot = self.registry.snapshot();
        let revision = snapshot.revision();
        let (name, arguments, reply) =
            match execute(message, &task, role, &snapshot, &self.catalogue) {
                Execution::Ordinary { reason, name } => {
                    return Ok(pb::ExecuteResponse {
                        result: Some(pb::execute_response::Result::Ordinary(ordinary(
                            reason, name,
                        ))),
                        revision,
                    });
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
                    // Do not hold the snapshot across the call: a slow handler must not
                    // keep old registry states alive.
                    drop(snapshot);
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
                    (
                        name,
                        arguments,
                        handler_reply(name, answer, &task, role, &self.catalogue),
                    )
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
        let (event_proto, event_json) = (event.to_proto(), event.to_json(format));
        let outcome = outcome_to_proto(name, arguments, reply, event_proto, event_json);
        Ok(pb::ExecuteResponse {
            result: Some(pb::execute_response::Result::Command(outcome)),
            revision,
        })
    }
}

fn command_of_execute(response: &Result<pb::ExecuteResponse, Error>) -> &str {
    match response {
        Ok(pb::ExecuteResponse {
            result: Some(pb::execute_response::Result::Command(outcome)),
            ..
        }) => outcome.command.as_ref().map_or("", |c| c.name.as_str()),
        _ => "",
    }
}

/// The stream WatchSpecs answers with.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::ListSpecsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl CommandService for Api {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        let started = Instant::now();
        let name = request
            .get_ref()
            .spec
            .as_ref()
            .map(|s| s.name.clone())
            .unwrap_or_default();
        let result = Api::register(self, request).await;
        logged("Register", started, &name, result)
    }

    async fn unregister(
        &self,
        request: Request<pb::UnregisterRequest>,
    ) -> Result<Response<pb::UnregisterResponse>, Status> {
        let started = Instant::now();
        let name = request.get_ref().name.clone();
        let result = Api::unregister(self, request).await;
        logged("Unregister", started, &name, result)
    }

    /// Served by `list_route::Routes` from cached bytes when the server is wired by
    /// `server::start`; this is the same answer for anyone using the generated server
    /// directly.
    async fn list_specs(
        &self,
        request: Request<pb::ListSpecsRequest>,
    ) -> Result<Response<pb::ListSpecsResponse>, Status> {
        let started = Instant::now();
        let with_struct = request.get_ref().include_card_extension;
        let response = list_response(&self.registry.snapshot(), with_struct);
        logged("ListSpecs", started, "", Ok(response))
    }

    type WatchSpecsStream = WatchStream;

    async fn watch_specs(
        &self,
        request: Request<pb::WatchSpecsRequest>,
    ) -> Result<Response<Self::WatchSpecsStream>, Status> {
        let started = Instant::now();
        let with_struct = request.get_ref().include_card_extension;
        // A watch channel holds only the latest snapshot: a slow reader skips ahead and
        // the writer never waits for it.
        let updates = tokio_stream::wrappers::WatchStream::new(self.registry.subscribe())
            .map(move |snapshot| Ok(list_response(&snapshot, with_struct)));
        logged(
            "WatchSpecs",
            started,
            "",
            Ok(Box::pin(updates) as WatchStream),
        )
    }

    async fn classify(
        &self,
        request: Request<pb::ClassifyRequest>,
    ) -> Result<Response<pb::ClassifyResponse>, Status> {
        let started = Instant::now();
        let result = Api::classify(self, request.get_ref());
        // The name is read from the answer in place: nothing is copied to log it.
        let command = match &result {
            Ok(pb::ClassifyResponse {
                result: Some(pb::classify_response::Result::Command(c)),
                ..
            }) => c.name.as_str(),
            _ => "",
        };
        log_call("Classify", started, &result, command);
        result.map(Response::new).map_err(Status::from)
    }

    async fn execute(
        &self,
        request: Request<pb::ExecuteRequest>,
    ) -> Result<Response<pb::ExecuteResponse>, Status> {
        let started = Instant::now();
        let result = Api::execute(self, request.get_ref()).await;
        log_call("Execute", started, &result, command_of_execute(&result));
        result.map(Response::new).map_err(Status::from)
    }
}
