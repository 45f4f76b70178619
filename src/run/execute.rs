//! [`Runner::execute`]: Execute's work, independent of how the request arrived.

use std::sync::Arc;
use std::time::Instant;

use crate::bodies::{Handlers, Trace};
use crate::error::Error;
use crate::pb::{self, OrdinaryReason, Outcome, ParticipantRole};
use crate::registry::Registry;
use crate::rules::body::HandlerAnswer;
use crate::rules::builtins::Catalogue;
use crate::rules::execute::{
    execute, handler_reply, prompt_result, without_prompts, Execution, Prompted,
};
use crate::rules::reply::Reply;
use crate::rules::task::Task;

/// Now, to the millisecond (A2A timestamps carry milliseconds): a reply's timestamp.
pub fn now() -> prost_types::Timestamp {
    let mut ts = prost_types::Timestamp::from(std::time::SystemTime::now());
    ts.nanos -= ts.nanos % 1_000_000;
    ts
}

/// What runs commands: the registry read, the built-ins' catalogue and the handlers'
/// clients, shared by every transport of one server.
pub struct Runner {
    registry: Arc<Registry>,
    catalogue: Arc<Catalogue>,
    handlers: Arc<Handlers>,
}

/// A message to run (`'m`), and what it is run with (`'a`), as a transport read them.
pub struct Asked<'m, 'a> {
    /// The message's id (a handler's correlation id).
    pub message_id: &'m str,
    /// The text of the message's one part, when it has exactly one part and it is text
    /// (`rules::parse::single_text`): only such a message can be a command.
    pub text: Option<&'m str>,
    /// Its task, checked.
    pub task: &'a Task<'a>,
    /// The message, task and sender in full, for a handler's invocation.
    pub whole: Whole<'a>,
    /// The sender's role (unspecified when there is no sender).
    pub role: ParticipantRole,
    /// Which delivery of the message this is (0 counts as the first).
    pub attempt: u32,
    /// Whether the caller can take a prompt command's expansion; otherwise a prompt
    /// command is a failure reply.
    pub accepts_prompt: bool,
    /// The caller's trace context, passed on to handlers.
    pub trace: &'a Trace,
    /// When the caller stops waiting: handler calls are shortened to it.
    pub deadline: Option<Instant>,
}

/// The message, its task and its sender in full, as a handler's invocation carries
/// them: only a command whose body is a handler needs them.
#[derive(Clone, Copy)]
pub enum Whole<'a> {
    /// Decoded, one by one.
    Decoded {
        /// The message.
        message: &'a pb::Message,
        /// The task as sent.
        task: &'a pb::TaskSnapshot,
        /// Who sent it.
        sender: Option<&'a pb::Sender>,
    },
    /// The `ExecuteRequest` they came in, decoded.
    Request(&'a pb::ExecuteRequest),
    /// The `ExecuteRequest` they came in, encoded (`views` read only what the
    /// rules need): decoded when a handler is invoked.
    Encoded(&'a [u8]),
}

impl Whole<'_> {
    /// The message, the task and the sender, owned.
    fn owned(self) -> Result<(pb::Message, pb::TaskSnapshot, Option<pb::Sender>), Error> {
        match self {
            Self::Decoded {
                message,
                task,
                sender,
            } => Ok((message.clone(), task.clone(), sender.cloned())),
            Self::Request(request) => Ok((
                request.message.clone().unwrap_or_default(),
                request.task.clone().unwrap_or_default(),
                request.sender.clone(),
            )),
            Self::Encoded(bytes) => {
                // A view is made only of what prost decodes (`views`), so this
                // fails only on a defect there; it is then said as prost would have.
                let request =
                    <pb::ExecuteRequest as prost::Message>::decode(bytes).map_err(|e| {
                        Error::invalid("request", format!("not a valid protobuf message: {e}"))
                    })?;
                Ok((
                    request.message.unwrap_or_default(),
                    request.task.unwrap_or_default(),
                    request.sender,
                ))
            }
        }
    }
}

/// How a message was run, at registry revision `revision`.
pub enum Ran<'m> {
    /// Not a command: the message goes on to the agent.
    Ordinary {
        /// Why.
        reason: OrdinaryReason,
        /// The typed name, when it was not registered.
        name: Option<&'m str>,
        /// The registry revision it was judged at.
        revision: u64,
    },
    /// A prompt command: `text` goes to the agent in place of the message's text.
    Prompt {
        /// The command's name.
        name: &'m str,
        /// Its arguments.
        arguments: &'m str,
        /// The expansion.
        text: String,
        /// The registry revision.
        revision: u64,
    },
    /// A command ran (or was refused, or failed): its reply and changes.
    Command {
        /// The command's name.
        name: &'m str,
        /// Its arguments.
        arguments: &'m str,
        /// The reply and what it changes.
        reply: Reply,
        /// The registry revision.
        revision: u64,
    },
}

impl Runner {
    /// Runs commands of `registry`, built-ins with `catalogue`, handlers with `handlers`.
    pub fn new(
        registry: Arc<Registry>,
        catalogue: Arc<Catalogue>,
        handlers: Arc<Handlers>,
    ) -> Self {
        Self {
            registry,
            catalogue,
            handlers,
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The built-ins' catalogue.
    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    /// The handlers' clients.
    pub fn handlers(&self) -> &Handlers {
        &self.handlers
    }

    /// Runs `asked`: classifies the message against the current registry, applies the
    /// role rules, and runs the command's body (a built-in, a template, a handler or an
    /// MCP prompt, bounded by their timeouts and the caller's deadline). Fails only when
    /// there is no registry to read (fleet mode, not yet read) or the request is
    /// malformed for a command (a missing role); a failing handler is a failure reply.
    pub async fn execute<'m>(&self, asked: &Asked<'m, '_>) -> Result<Ran<'m>, Error> {
        let snapshot = self.registry.read()?;
        let revision = snapshot.revision();
        let execution = execute(
            asked.text,
            asked.task,
            asked.role,
            &snapshot,
            &self.catalogue,
        )?;
        // A caller that cannot take a prompt result never gets one (its kit predates them).
        let execution = if asked.accepts_prompt {
            execution
        } else {
            without_prompts(execution)
        };
        // Not held across a handler call: a slow handler must not keep old registry
        // states alive.
        drop(snapshot);
        let (name, arguments, reply) = match execution {
            Execution::Ordinary { reason, name } => {
                return Ok(Ran::Ordinary {
                    reason,
                    name,
                    revision,
                })
            }
            Execution::Command {
                name,
                arguments,
                reply,
            } => (name, arguments, reply),
            Execution::Prompt {
                name,
                arguments,
                text,
            } => {
                return Ok(Ran::Prompt {
                    name,
                    arguments,
                    text,
                    revision,
                })
            }
            Execution::AskPrompt {
                name,
                arguments,
                server,
                prompt,
            } => {
                // Boxed, as the call below: a remote call's future is kilobytes that
                // every built-in's run would otherwise carry and copy.
                let answer = Box::pin(self.handlers.prompt(
                    &server,
                    &prompt,
                    name,
                    arguments,
                    asked.trace,
                    asked.deadline,
                ))
                .await;
                match prompt_result(name, answer) {
                    Prompted::Text(text) => {
                        return Ok(Ran::Prompt {
                            name,
                            arguments,
                            text,
                            revision,
                        })
                    }
                    Prompted::Reply(reply) => (name, arguments, reply),
                }
            }
            Execution::Delegate {
                name,
                arguments,
                handler,
            } => {
                let (message, task, sender) = asked.whole.owned()?;
                let invocation = pb::Invocation {
                    task_id: asked.task.id.to_owned(),
                    correlation_id: asked.message_id.to_owned(),
                    attempt: asked.attempt.max(1),
                    command: name.to_owned(),
                    arguments: arguments.to_owned(),
                    sender,
                    task: Some(task),
                    message: Some(message),
                };
                let answer = Box::pin(self.handlers.invoke(
                    &handler,
                    &invocation,
                    asked.trace,
                    asked.deadline,
                ))
                .await;
                // A failed call was logged with its detail where it failed.
                let call_failed = matches!(answer, HandlerAnswer::Failed(_));
                let reply = handler_reply(name, answer, asked.task, asked.role, &self.catalogue);
                if reply.outcome == Outcome::Failed && !call_failed {
                    tracing::warn!(command = name, handler = %handler.url, reason = %reply.text, "handler answer rejected");
                }
                (name, arguments, reply)
            }
        };
        Ok(Ran::Command {
            name,
            arguments,
            reply,
            revision,
        })
    }
}
