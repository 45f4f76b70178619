//! The `CommandService` implementation: the gRPC layer, which only translates.
//!
//! Each method checks the request's shape, calls the plain functions (registry,
//! classify, execute, handlers), and converts the result to protobuf. It [`note`]s the
//! command it concerns for the observing layer, which logs and counts every call.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::bodies::{Handlers, Trace};
use crate::error::Error;
use crate::pb::command_service_server::CommandService;
use crate::pb::{self, ParticipantRole};
use crate::registry::{Applied, Change, Registry};
use crate::rules::body::Body;
use crate::rules::builtins::Catalogue;

use crate::rules::event::Forms;
use crate::rules::execute::reply_event;
use crate::rules::parse::{classify_text, Classification};
use crate::rules::policy::Access;
use crate::rules::spec::{CommandName, CommandSpec};
use crate::rules::task::Task;
use crate::run::{now, Asked, CompleteAsked, Ran, Runner, Whole};
use crate::transport::answers::{self, Executed};
use crate::transport::auth::AdminAuth;
use crate::transport::convert::list_specs;
use crate::transport::layers::observe::note;
use crate::transport::trace::{deadline_of, trace_of};
use crate::transport::watch_specs::{watch_specs, WatchStream};
use crate::views::{ClassifyView, CompleteView, ExecuteView};
use crate::wire::Answer;

/// The `CommandService` implementation.
pub struct Api {
    /// The registry, the catalogue and the handlers; runs Execute, as it runs the
    /// front's commands.
    runner: Arc<Runner>,
    auth: AdminAuth,
    /// Cancelled when the server starts draining: WatchSpecs streams end then, so they
    /// do not hold the drain open until its timeout.
    draining: CancellationToken,
}

impl Api {
    /// The API over `registry`, running built-ins with `catalogue` and handlers with
    /// `handlers`; changes need `auth`; WatchSpecs streams end when `draining` is
    /// cancelled.
    pub fn new(
        registry: Arc<Registry>,
        catalogue: Catalogue,
        handlers: Handlers,
        auth: AdminAuth,
        draining: CancellationToken,
    ) -> Self {
        let runner = Arc::new(Runner::new(
            registry,
            Arc::new(catalogue),
            Arc::new(handlers),
        ));
        Self {
            runner,
            auth,
            draining,
        }
    }

    /// What runs commands for this API (and for the front beside it).
    pub fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// The registry served.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        self.runner.registry()
    }
}

/// The gRPC service name of the API, as health and reflection know it.
pub const SERVICE_NAME: &str = crate::pb::command_service_server::SERVICE_NAME;

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
        let body = Body::from_bindings(
            "",
            request.handler.as_ref(),
            request.prompt.as_ref(),
            self.runner.handlers().policy(),
        )?;
        let access = Access::parse("allowed_roles", &request.allowed_roles, request.hidden)?;
        let change = Change::Register {
            spec,
            body,
            access,
            replace: request.r#override,
            replace_access: request.replace_access,
        };
        let (applied, revision) = self.registry().apply(change).await?;
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
        let (_, revision) = self.registry().apply(Change::Unregister { name }).await?;
        Ok(pb::UnregisterResponse { revision })
    }

    /// Classify's answer, encoded (`answers`); notes the command it found.
    pub(crate) fn classify(&self, request: &ClassifyView<'_>) -> Result<Answer, Error> {
        let message = required("message", &request.message)?;
        let snapshot = self.registry().read()?;
        let classification = classify_text(message.single_text, &snapshot);
        if let Classification::Command { name, .. } = classification {
            note(name, "", "");
        }
        Ok(answers::classified(&classification, snapshot.revision()))
    }

    /// Complete's answer, encoded (`answers`); notes the command whose argument it
    /// completed and the caller's trace id.
    pub(crate) async fn complete(
        &self,
        request: &CompleteView<'_>,
        trace: &Trace,
    ) -> Result<Answer, Error> {
        let result = self.completion(request, trace).await;
        let command = result.as_ref().map_or("", |(_, command)| *command);
        note(command, "", trace.trace_id());
        result.map(|(bytes, _)| bytes)
    }

    /// Complete's answer and the command whose argument it completed ("" for none).
    async fn completion<'r>(
        &self,
        request: &CompleteView<'r>,
        trace: &Trace,
    ) -> Result<(Answer, &'r str), Error> {
        let asked = CompleteAsked {
            text: request.text,
            sender: request.sender,
            task: request.task.as_ref(),
            limit: request.limit,
            trace,
        };
        self.runner.complete(&asked, answers::completed).await
    }

    /// Execute's answer, encoded (`answers`); notes the command, how it ended and the
    /// caller's trace id. `request` is what the rules read, `whole` the request in full
    /// for a handler.
    pub(crate) async fn execute(
        &self,
        request: &ExecuteView<'_>,
        whole: Whole<'_>,
        trace: &Trace,
        deadline: Option<Instant>,
    ) -> Result<Answer, Error> {
        let result = self.execution(request, whole, trace, deadline).await;
        match &result {
            Ok(Executed::Command { name, outcome, .. }) => {
                note(name, outcome.as_str_name(), trace.trace_id())
            }
            Ok(Executed::Prompt { name, .. }) => note(name, "PROMPT", trace.trace_id()),
            _ => note("", "", trace.trace_id()),
        }
        result.map(Executed::into_bytes)
    }

    /// Execute's answer, with what the observing layer notes of it.
    async fn execution<'r>(
        &self,
        request: &ExecuteView<'r>,
        whole: Whole<'_>,
        trace: &Trace,
        deadline: Option<Instant>,
    ) -> Result<Executed<'r>, Error> {
        let message = required("message", &request.message)?;
        if message.message_id.is_empty() {
            return Err(Error::invalid("message.message_id", "must not be empty"));
        }
        let task = Task::from_view(required("task", &request.task)?)?;
        // A missing sender is an unspecified role: an error only if this is a command.
        let role = match &request.sender {
            None => ParticipantRole::Unspecified,
            Some(sender) => enum_value("sender.role", "ParticipantRole", sender.role)?,
        };
        let forms = Forms::from_request(&request.event_forms, request.event_json_format)?;

        let asked = Asked {
            message_id: message.message_id,
            text: message.single_text,
            task: &task,
            whole,
            role,
            attempt: request.attempt,
            accepts_prompt: request.accepts_prompt,
            trace,
            deadline,
        };
        let (name, arguments, reply, revision) = match self.runner.execute(&asked).await? {
            Ran::Ordinary {
                reason,
                name,
                revision,
            } => {
                return Ok(Executed::Ordinary(answers::executed_ordinary(
                    reason, name, revision,
                )));
            }
            Ran::Prompt {
                name,
                arguments,
                text,
                revision,
            } => return Ok(Executed::prompt(name, arguments, &text, revision)),
            Ran::Command {
                name,
                arguments,
                reply,
                revision,
            } => (name, arguments, reply, revision),
        };
        let event = reply_event(
            &task,
            message.context_id,
            message.message_id,
            name,
            &reply,
            now(),
            request.event_metadata,
        );
        let event_json = forms
            .json
            .map(|form| event.to_json(form))
            .unwrap_or_default();
        let ran = answers::Ran {
            name,
            arguments,
            reply: &reply,
            event: forms.protobuf.then_some(&event),
            event_json: &event_json,
        };
        Ok(Executed::Command {
            name,
            outcome: reply.outcome,
            bytes: answers::executed_command(&ran, revision),
        })
    }
}

#[tonic::async_trait]
impl CommandService for Api {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        if let Some(spec) = &request.get_ref().spec {
            note(&spec.name, "", "");
        }
        answer(Api::register(self, request).await)
    }

    async fn unregister(
        &self,
        request: Request<pb::UnregisterRequest>,
    ) -> Result<Response<pb::UnregisterResponse>, Status> {
        note(&request.get_ref().name, "", "");
        answer(Api::unregister(self, request).await)
    }

    /// Served by `routes::Routes` from bytes cached per revision when the server is
    /// wired by `server::start`; the same rule here for anyone serving `Api` directly.
    async fn list_specs(
        &self,
        request: Request<pb::ListSpecsRequest>,
    ) -> Result<Response<pb::ListSpecsResponse>, Status> {
        let snapshot = self.registry().read()?;
        Ok(Response::new(list_specs(&snapshot, request.get_ref())))
    }

    async fn watch_specs(
        &self,
        request: Request<pb::WatchSpecsRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let with_struct = request.get_ref().include_card_extension;
        answer(watch_specs(self.registry(), &self.draining, with_struct))
    }

    /// Served by `routes::Routes` from the encoded answer as it is when the server is
    /// wired by `server::start`; decoded here for anyone serving `Api` directly.
    async fn complete(
        &self,
        request: Request<pb::CompleteRequest>,
    ) -> Result<Response<pb::CompleteResponse>, Status> {
        let trace = trace_of(request.metadata().as_ref());
        let view = CompleteView::of(request.get_ref());
        decoded(Api::complete(self, &view, &trace).await)
    }

    /// As `complete`.
    async fn classify(
        &self,
        request: Request<pb::ClassifyRequest>,
    ) -> Result<Response<pb::ClassifyResponse>, Status> {
        decoded(Api::classify(self, &ClassifyView::of(request.get_ref())))
    }

    /// As `complete`.
    async fn execute(
        &self,
        request: Request<pb::ExecuteRequest>,
    ) -> Result<Response<pb::ExecuteResponse>, Status> {
        let trace = trace_of(request.metadata().as_ref());
        let deadline = deadline_of(request.extensions());
        let asked = request.get_ref();
        let view = ExecuteView::of(asked);
        decoded(Api::execute(self, &view, Whole::Request(asked), &trace, deadline).await)
    }
}

/// An encoded answer as the generated type it encodes.
fn decoded<T: prost::Message + Default>(
    result: Result<Answer, Error>,
) -> Result<Response<T>, Status> {
    let answer = result.map_err(Status::from)?;
    // `answers` writes what prost writes for `T` (its tests compare the bytes).
    Ok(Response::new(
        T::decode(answer.message()).expect("an encoded answer decodes as its type"),
    ))
}

/// A method's result as gRPC answers it.
pub(crate) fn answer<T>(result: Result<T, Error>) -> Result<Response<T>, Status> {
    result.map(Response::new).map_err(Status::from)
}
