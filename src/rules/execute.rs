//! Execute: a pure function of the registered commands, the request and the catalogue.
//!
//! It classifies the message, applies the role rules, runs the command's body and
//! describes the reply; it writes nothing and keeps nothing per task, so any replica
//! gives the same answer and a retry is harmless. Only the timestamp comes from outside,
//! as an argument.

use prost_types::Timestamp;

use crate::error::Error;
use crate::pb::{OrdinaryReason, ParticipantRole};
use crate::rules::body::{Body, HandlerAnswer, HandlerBinding, PromptBody};
use crate::rules::builtins::Catalogue;
use crate::rules::event::{reply_message_id, ReplyEvent};
use crate::rules::parse::{classify_text, Classification, Lookup};
use crate::rules::policy::{refuse_by_role, watcher_refusal};
use crate::rules::prompt::PromptAnswer;
use crate::rules::reply::{Changes, Reply, SubTask};
use crate::rules::task::Task;
use crate::rules::text::trim_py_whitespace;

/// What Execute decided.
#[derive(Clone, Debug)]
pub enum Execution<'m> {
    /// Not a command: the gateway sends the message to the model.
    Ordinary {
        /// Why.
        reason: OrdinaryReason,
        /// The typed name, when it was not registered.
        name: Option<&'m str>,
    },
    /// A command whose body is a handler elsewhere: the caller invokes it and turns
    /// the answer into a reply with [`handler_reply`].
    Delegate {
        /// Its name.
        name: &'m str,
        /// Its arguments.
        arguments: &'m str,
        /// Where its body runs.
        handler: HandlerBinding,
    },
    /// A prompt command: the gateway sends `text` to the model in place of the
    /// message's text.
    Prompt {
        /// Its name.
        name: &'m str,
        /// Its arguments.
        arguments: &'m str,
        /// The expansion.
        text: String,
    },
    /// A prompt command whose prompt is an MCP server's: the caller gets it and turns
    /// the answer into the result with [`prompt_result`].
    AskPrompt {
        /// Its name.
        name: &'m str,
        /// Its arguments.
        arguments: &'m str,
        /// The server.
        server: HandlerBinding,
        /// The prompt's name there.
        prompt: String,
    },
    /// A command ran (or was refused).
    Command {
        /// Its name.
        name: &'m str,
        /// Its arguments.
        arguments: &'m str,
        /// What it replied and changes.
        reply: Reply,
    },
}

/// Runs a message, by the text of its one part (`text`, from
/// [`single_text`](crate::rules::parse::single_text); `None` for a message of any other
/// shape), against the registered `commands` for `task`, sent by someone with `role`.
/// Pure: the same inputs give the same result. The role rules run first, by the
/// command's name, whatever its body, then the command's own allowed roles. A command
/// from a sender whose role is unspecified is an error (the gateway forgot it); an
/// ordinary message needs no role.
pub fn execute<'m>(
    text: Option<&'m str>,
    task: &Task<'_>,
    role: ParticipantRole,
    commands: &impl Lookup,
    catalogue: &Catalogue,
) -> Result<Execution<'m>, Error> {
    let (name, body, access, arguments) = match classify_text(text, commands) {
        Classification::Ordinary { reason, name } => {
            return Ok(Execution::Ordinary { reason, name })
        }
        Classification::Command {
            name,
            body,
            access,
            arguments,
        } => (name, body, access, arguments),
    };
    let refusal = refuse_by_role(role, name, arguments)?
        .or_else(|| access.and_then(|a| a.refuse(role, name)));
    let reply = match refusal {
        Some(refusal) => refusal,
        None => match body {
            Body::Builtin { builtin } => builtin.run(task, arguments, catalogue),
            Body::None => Reply::no_handler(name),
            Body::Handler { handler } => {
                return Ok(Execution::Delegate {
                    name,
                    arguments,
                    handler: handler.clone(),
                })
            }
            Body::Prompt {
                prompt: PromptBody::Template { template },
            } => match template.expand(arguments) {
                Ok(text) => {
                    return Ok(Execution::Prompt {
                        name,
                        arguments,
                        text,
                    })
                }
                Err(error) => Reply::failed(name, &error.to_string()),
            },
            Body::Prompt {
                prompt: PromptBody::Mcp { server, prompt },
            } => {
                return Ok(Execution::AskPrompt {
                    name,
                    arguments,
                    server: server.clone(),
                    prompt: prompt.clone(),
                })
            }
        },
    };
    Ok(Execution::Command {
        name,
        arguments,
        reply,
    })
}

/// Why a prompt command fails for a caller that cannot take a prompt result.
pub const PROMPTS_NOT_TAKEN: &str =
    "this gateway cannot run prompt commands; update its a2a-commands kit";

/// `execution` for a caller that cannot take a prompt result (a gateway whose kit
/// predates prompt commands, and would send the typed text to the model as if it were
/// ordinary, or fail): a prompt command becomes a failure reply it understands, before
/// any MCP server is asked. Everything else is unchanged.
pub fn without_prompts(execution: Execution<'_>) -> Execution<'_> {
    match execution {
        Execution::Prompt {
            name, arguments, ..
        }
        | Execution::AskPrompt {
            name, arguments, ..
        } => Execution::Command {
            name,
            arguments,
            reply: Reply::failed(name, PROMPTS_NOT_TAKEN),
        },
        other => other,
    }
}

/// What an MCP prompt command comes to.
#[derive(Clone, Debug)]
pub enum Prompted {
    /// The expansion, for the model.
    Text(String),
    /// The reply refusing it (its usage) or failing it (`/<name> failed: <reason>`).
    Reply(Reply),
}

/// What the answer of an MCP prompt command's server comes to.
pub fn prompt_result(name: &str, answer: PromptAnswer) -> Prompted {
    match answer {
        PromptAnswer::Expanded(text) => Prompted::Text(text),
        PromptAnswer::Usage(usage) => {
            Prompted::Reply(Reply::refused(format!("refused: usage: {usage}")))
        }
        PromptAnswer::Failed(reason) => Prompted::Reply(Reply::failed(name, &reason)),
    }
}

/// Turns a handler's answer into the reply, checking it as the built-ins are checked:
/// a reply is required, settings must be in the catalogue, a spawn needs a goal, and a
/// watcher may not change the task.
pub fn handler_reply(
    name: &str,
    answer: HandlerAnswer,
    task: &Task<'_>,
    role: ParticipantRole,
    catalogue: &Catalogue,
) -> Reply {
    let (text, model, effort, spawn_goal) = match answer {
        HandlerAnswer::NoAnswer => return Reply::no_handler(name),
        HandlerAnswer::Abort(reason) => return Reply::refused(format!("refused: {reason}")),
        HandlerAnswer::Failed(reason) => return Reply::failed(name, &reason),
        HandlerAnswer::Reply {
            reply,
            model,
            effort,
            spawn_goal,
        } => (reply, model, effort, spawn_goal),
    };
    if text.is_empty() {
        return Reply::failed(name, "malformed answer: no reply");
    }
    if let Some(model) = model.as_deref().filter(|m| !catalogue.is_selectable(m)) {
        return Reply::failed(
            name,
            &format!("invalid answer: {model:?} is not a selectable model"),
        );
    }
    if let Some(effort) = effort
        .as_deref()
        .filter(|e| !Catalogue::is_accepted_effort(e))
    {
        return Reply::failed(
            name,
            &format!("invalid answer: {effort:?} is not an accepted effort"),
        );
    }
    if spawn_goal
        .as_deref()
        .is_some_and(|g| trim_py_whitespace(g).is_empty())
    {
        return Reply::failed(name, "invalid answer: a spawn needs a goal");
    }
    let changes = Changes {
        model,
        effort,
        sub_task: spawn_goal.map(|goal| SubTask::next_for(task, &goal)),
    };
    // A handler may not change the task on a watcher's behalf either.
    if changes != Changes::default() && role == ParticipantRole::Watcher {
        return watcher_refusal(name);
    }
    Reply::ok(text, changes)
}

/// The event that carries `reply` for `task`, replying to the message `incoming_id`;
/// `event_metadata` also puts the reply's metadata on the event itself.
pub fn reply_event<'a>(
    task: &Task<'a>,
    fallback_context_id: &'a str,
    incoming_id: &str,
    name: &'a str,
    reply: &'a Reply,
    timestamp: Timestamp,
    event_metadata: bool,
) -> ReplyEvent<'a> {
    let context_id = if task.context_id.is_empty() {
        fallback_context_id
    } else {
        task.context_id
    };
    ReplyEvent {
        task_id: task.id,
        context_id,
        state: task.state,
        message_id: reply_message_id(incoming_id),
        text: &reply.text,
        command: name,
        task_ref: reply.changes.sub_task.as_ref().map(|s| s.id.as_str()),
        timestamp,
        event_metadata,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_without_prompts_gets_a_failure_for_a_prompt_and_nothing_else_changes() {
        let prompt = Execution::Prompt {
            name: "fix",
            arguments: "42",
            text: "Fix issue #42.".into(),
        };
        match without_prompts(prompt) {
            Execution::Command { name, reply, .. } => {
                assert_eq!(name, "fix");
                assert_eq!(reply, Reply::failed("fix", PROMPTS_NOT_TAKEN));
                assert_eq!(
                    reply.text,
                    "/fix failed: this gateway cannot run prompt commands; update its a2a-commands kit"
                );
            }
            other => panic!("{other:?}"),
        }
        let ordinary = Execution::Ordinary {
            reason: OrdinaryReason::NotCommandSyntax,
            name: None,
        };
        assert!(matches!(
            without_prompts(ordinary),
            Execution::Ordinary { .. }
        ));
    }
}
