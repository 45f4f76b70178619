//! The `CommandService` implementation: the gRPC layer, which only translates.
//!
//! Each method checks the request's shape, calls the plain functions (registry,
//! classify, execute, handlers), converts the result to protobuf, and logs one line:
//! method, status code, latency and command name. Message text and arguments are never
//! logged, since they may carry secrets.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::bodies::{Handlers, Trace};
use crate::error::Error;
use crate::metrics::metrics;
use crate::pb::command_service_server::CommandService;
use crate::pb::{self, Outcome, ParticipantRole};
use crate::registry::{Applied, Change, Registry};
use crate::rules::body::{Body, HandlerAnswer, HandlerBinding};
use crate::rules::builtins::Catalogue;
use crate::rules::complete::{self, ArgumentSource, Completions, Target};
use crate::rules::event::Forms;
use crate::rules::execute::{execute, handler_reply, reply_event, Execution};
use crate::rules::parse::{classify, Classification};
use crate::rules::policy::Access;
use crate::rules::spec::{CommandName, CommandSpec};
use crate::rules::task::Task;
use crate::transport::auth::AdminAuth;
use crate::transport::call_log::CallLog;
use crate::transport::convert::{
    list_response, now, ordinary, outcome_to_proto, unchanged_response,
};

/// The `CommandService` implementation.
pub struct Api {
    registry: Arc<Registry>,
    catalogue: Arc<Catalogue>,
    handlers: Arc<Handlers>,
    auth: AdminAuth,
    /// Cancelled when the server starts draining: WatchSpecs streams end then, so they
    /// do not hold the drain open until its timeout.
    draining: CancellationToken,
    /// This server's call log and call metrics.
    calls: Arc<CallLog>,
}

impl Api {
    /// The API over `registry`, running built-ins with `catalogue` and handlers with
    /// `handlers`; changes need `auth`; every call goes to `calls`.
    pub fn new(
        registry: Arc<Registry>,
        catalogue: Catalogue,
        handlers: Handlers,
        auth: AdminAuth,
        draining: CancellationToken,
        calls: Arc<CallLog>,
    ) -> Self {
        Self {
            registry,
            catalogue: Arc::new(catalogue),
            handlers: Arc::new(handlers),
            auth,
            draining,
            calls,
        }
    }

    /// This server's call log.
    pub(crate) fn calls(&self) -> &Arc<CallLog> {
        &self.calls
    }

    /// The registry served.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
}

/// The gRPC service name of the API, as health and reflection know it.
pub const SERVICE_NAME: &str = "a2a.commands.v1.CommandService";

fn required<'a, T>(field: &str, value: &'a Option<T>) -> Result<&'a T, Error> {
    value
        .as_ref()
        .ok_or_else(|| Error::invalid(field, "is required"))
}

fn enum_value<E: TryFrom<i32>>(field: &str, type_name: &str, value: i32) -> Result<E, Error> {
    E::try_from(value)
        .map_err(|_| Error::invalid(field, format!("{value} is not a {type_name} value")))
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
        let access = Access::parse("allowed_roles", &request.allowed_roles, request.hidden)?;
        let change = Change::Register {
            spec,
            body,
            access,
            replace: request.r#override,
            replace_access: request.replace_access,
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

    async fn complete(
        &self,
        request: &pb::CompleteRequest,
        trace: &Trace,
    ) -> Result<pb::CompleteResponse, Error> {
        let limit = complete::limit(request.limit);
        // The task is optional here; one that is sent must be well formed.
        if let Some(task) = &request.task {
            Task::from_proto(task)?;
        }
        let snapshot = self.registry.snapshot();
        let revision = snapshot.revision();
        let target = complete::target(&request.text, &snapshot);
        if target == Target::Nothing {
            return Ok(completion_response(Completions::default(), "", revision));
        }
        let role = request
            .sender
            .as_ref()
            .and_then(|s| ParticipantRole::try_from(s.role).ok())
            .unwrap_or(ParticipantRole::Unspecified);
        if role == ParticipantRole::Unspecified {
            return Err(Error::invalid(
                "sender.role",
                "must be set to complete a command (PARTICIPANT_ROLE_NONE for a sender \
                 with no role on the task)",
            ));
        }
        let (name, head, argument) = match target {
            Target::Name { prefix } => {
                let commands = snapshot
                    .commands()
                    .map(|c| (c.spec.name.as_str(), c.spec.description.as_str(), &c.access));
                let names = complete::names(prefix, role, commands, limit);
                return Ok(completion_response(names, "", revision));
            }
            Target::Argument {
                name,
                head,
                argument,
            } => (name, head, argument),
            Target::Nothing => unreachable!("returned above"),
        };
        let Some(command) = snapshot.get(name) else {
            return Ok(completion_response(Completions::default(), "", revision));
        };
        if !complete::offered(role, name, Some(&command.access)) {
            return Ok(completion_response(Completions::default(), name, revision));
        }
        let suggestions = match complete::argument_source(&command.body) {
            ArgumentSource::Builtin(builtin) => {
                complete::builtin_values(builtin, name, head, argument, role, &self.catalogue)
            }
            ArgumentSource::None => Vec::new(),
            ArgumentSource::Handler(binding) => {
                let binding = binding.clone();
                let task = request.task.clone().unwrap_or_default();
                drop(snapshot);
                let invocation = pb::Invocation {
                    task_id: task.id.clone(),
                    correlation_id: String::new(),
                    attempt: 1,
                    command: name.to_owned(),
                    arguments: argument.to_owned(),
                    sender: request.sender.clone(),
                    task: Some(task),
                    message: None,
                };
                let timeout = std::time::Duration::from_millis(complete::HANDLER_TIMEOUT_MS);
                let (values, total) = self
                    .handlers
                    .complete(&binding, &invocation, trace, timeout)
                    .await;
                let all: Vec<_> = values
                    .into_iter()
                    .map(|(value, description)| complete::Suggestion {
                        text: format!("{head}{value}"),
                        value,
                        description,
                    })
                    .collect();
                let completions = Completions::cut(all, total, limit);
                return Ok(completion_response(completions, name, revision));
            }
        };
        let total = suggestions.len();
        Ok(completion_response(
            Completions::cut(suggestions, total, limit),
            name,
            revision,
        ))
    }

    async fn execute(
        &self,
        request: &pb::ExecuteRequest,
        trace: &Trace,
    ) -> Result<pb::ExecuteResponse, Error> {
        let message = required("message", &request.message)?;
        if message.message_id.is_empty() {
            return Err(Error::invalid("message.message_id", "must not be empty"));
        }
        let task = Task::from_proto(required("task", &request.task)?)?;
        // A missing sender is an unspecified role: an error only if this is a command.
        let role = match &request.sender {
            None => ParticipantRole::Unspecified,
            Some(sender) => enum_value("sender.role", "ParticipantRole", sender.role)?,
        };
        #[allow(deprecated)]
        let forms = Forms::from_request(&request.event_forms, request.event_json_format)?;

        let snapshot = self.registry.snapshot();
        let revision = snapshot.revision();
        let (name, arguments, reply) = match execute(
            message,
            &task,
            role,
            &snapshot,
            &self.catalogue,
        )? {
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
                let answer = self.handlers.invoke(&handler, &invocation, trace).await;
                // A failed call was logged with its detail where it failed.
                let call_failed = matches!(answer, HandlerAnswer::Failed(_));
                let reply = handler_reply(name, answer, &task, role, &self.catalogue);
                if reply.outcome == Outcome::Failed && !call_failed {
                    tracing::warn!(command = name, handler = %handler.url, reason = %reply.text, "handler answer rejected");
                }
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
            request.event_metadata,
        );
        let event_proto = forms.protobuf.then(|| event.to_proto());
        let event_json = forms
            .json
            .map(|form| event.to_json(form))
            .unwrap_or_default();
        let outcome = outcome_to_proto(name, arguments, reply, event_proto, event_json);
        Ok(pb::ExecuteResponse {
            result: Some(pb::execute_response::Result::Command(outcome)),
            revision,
        })
    }
}

/// The W3C trace context of an incoming call, to pass on to handlers.
fn trace_of(metadata: &tonic::metadata::MetadataMap) -> Trace {
    let header = |name| metadata.get(name).and_then(|v| v.to_str().ok());
    Trace::from_headers(header("traceparent"), header("tracestate"))
}

/// A Complete answer.
fn completion_response(
    completions: Completions,
    command: &str,
    revision: u64,
) -> pb::CompleteResponse {
    pb::CompleteResponse {
        total: u32::try_from(completions.total).unwrap_or(u32::MAX),
        has_more: completions.has_more,
        values: completions
            .values
            .into_iter()
            .map(|s| pb::Completion {
                value: s.value,
                text: s.text,
                description: s.description,
            })
            .collect(),
        command: command.to_owned(),
        revision,
    }
}

/// The command and outcome of an Execute answer, for its log line.
fn command_of_execute(response: &Result<pb::ExecuteResponse, Error>) -> (&str, &'static str) {
    match response {
        Ok(pb::ExecuteResponse {
            result: Some(pb::execute_response::Result::Command(outcome)),
            ..
        }) => (
            outcome.command.as_ref().map_or("", |c| c.name.as_str()),
            outcome.outcome().as_str_name(),
        ),
        _ => ("", ""),
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
        self.calls.logged("Register", started, &name, result)
    }

    async fn unregister(
        &self,
        request: Request<pb::UnregisterRequest>,
    ) -> Result<Response<pb::UnregisterResponse>, Status> {
        let started = Instant::now();
        let name = request.get_ref().name.clone();
        let result = Api::unregister(self, request).await;
        self.calls.logged("Unregister", started, &name, result)
    }

    /// Served by `list_route::Routes` from cached bytes when the server is wired by
    /// `server::start`; this is the same answer for anyone using the generated server
    /// directly.
    async fn list_specs(
        &self,
        request: Request<pb::ListSpecsRequest>,
    ) -> Result<Response<pb::ListSpecsResponse>, Status> {
        let started = Instant::now();
        let request = request.get_ref();
        let snapshot = self.registry.snapshot();
        let response = if request.known_revision == Some(snapshot.revision()) {
            unchanged_response(snapshot.revision())
        } else {
            list_response(&snapshot, request.include_card_extension)
        };
        self.calls.logged("ListSpecs", started, "", Ok(response))
    }

    async fn watch_specs(
        &self,
        request: Request<pb::WatchSpecsRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let started = Instant::now();
        let with_struct = request.get_ref().include_card_extension;
        // A watch channel holds only the latest snapshot: a slow reader skips ahead and
        // the writer never waits for it.
        let updates = tokio_stream::wrappers::WatchStream::new(self.registry.subscribe())
            .map(move |snapshot| Ok(list_response(&snapshot, with_struct)));
        metrics().watch_subscribers.inc();
        let updates = UntilDrained {
            updates: Box::pin(updates),
            drained: Box::pin(self.draining.clone().cancelled_owned()),
        };
        self.calls.logged(
            "WatchSpecs",
            started,
            "",
            Ok(Box::pin(updates) as WatchStream),
        )
    }

    async fn complete(
        &self,
        request: Request<pb::CompleteRequest>,
    ) -> Result<Response<pb::CompleteResponse>, Status> {
        let started = Instant::now();
        let trace = trace_of(request.metadata());
        let result = Api::complete(self, request.get_ref(), &trace).await;
        let command = result.as_ref().map_or("", |r| r.command.as_str());
        self.calls
            .record("Complete", started, &result, command, "", trace.trace_id());
        result.map(Response::new).map_err(Status::from)
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
        self.calls
            .record("Classify", started, &result, command, "", "");
        result.map(Response::new).map_err(Status::from)
    }

    async fn execute(
        &self,
        request: Request<pb::ExecuteRequest>,
    ) -> Result<Response<pb::ExecuteResponse>, Status> {
        let started = Instant::now();
        let trace = trace_of(request.metadata());
        let result = Api::execute(self, request.get_ref(), &trace).await;
        let (command, outcome) = command_of_execute(&result);
        if !command.is_empty() {
            // Only commands: their names are registered, so the label set is bounded.
            let outcome = match outcome {
                "OUTCOME_OK" => "ok",
                "OUTCOME_REFUSED" => "refused",
                "OUTCOME_FAILED" => "failed",
                _ => "no_handler",
            };
            self.calls.outcome(command, outcome);
        }
        self.calls.record(
            "Execute",
            started,
            &result,
            command,
            outcome,
            trace.trace_id(),
        );
        result.map(Response::new).map_err(Status::from)
    }
}

/// A WatchSpecs stream that ends (OK) when the server starts draining; the client's
/// watch loop reconnects to a replica that is serving.
struct UntilDrained {
    updates: WatchStream,
    drained: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl Drop for UntilDrained {
    fn drop(&mut self) {
        metrics().watch_subscribers.dec();
    }
}

impl Stream for UntilDrained {
    type Item = Result<pb::ListSpecsResponse, Status>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::future::Future as _;
        if self.drained.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(None);
        }
        self.updates.as_mut().poll_next(cx)
    }
}
