//! Execute: a pure function of the registry snapshot, the request and the catalogue.
//!
//! It classifies the message, applies the role rules, runs the command's body and
//! describes the reply; it writes nothing and keeps nothing per task, so any replica
//! gives the same answer and a retry is harmless. Only the timestamp comes from outside,
//! as an argument.

use prost_types::Timestamp;

use crate::builtins::{sub_task_name, Catalogue};
use crate::classify::{classify, trim_py_whitespace, Classification};
use crate::error::Error;
use crate::event::{reply_message_id, ReplyEvent};
use crate::handlers::{HandlerAnswer, HandlerBinding};
use crate::pb::{self, OrdinaryReason, Outcome, ParticipantRole, SubState, TaskState};
use crate::registry::{Body, Snapshot};

/// The task snapshot a gateway sent, checked.
#[derive(Clone, Debug)]
pub struct Task<'a> {
    /// The task's id (never empty).
    pub id: &'a str,
    /// The task's context id.
    pub context_id: &'a str,
    /// The task's name.
    pub name: &'a str,
    /// The task's state (never unspecified).
    pub state: TaskState,
    /// What an input-required task waits for.
    pub sub_state: SubState,
    /// The chosen model, if any.
    pub model: Option<&'a str>,
    /// The chosen effort, if any.
    pub effort: Option<&'a str>,
    /// Steps done and steps in the plan, if there is a plan.
    pub plan: Option<(u32, u32)>,
    /// The sub-tasks' ids and states, in creation order.
    pub sub_tasks: Vec<(&'a str, TaskState)>,
}

/// The A2A name of `state` without its `TASK_STATE_` prefix, as `/status` shows it.
pub fn state_name(state: TaskState) -> &'static str {
    let name = state.as_str_name();
    name.strip_prefix("TASK_STATE_").unwrap_or(name)
}

/// A set, known state; the error is the rule broken (the caller names the field, so
/// the field's path is only formatted on failure).
fn task_state(value: i32) -> Result<TaskState, String> {
    match TaskState::try_from(value) {
        Ok(TaskState::Unspecified) => {
            Err("must be set to a TaskState other than TASK_STATE_UNSPECIFIED".into())
        }
        Ok(state) => Ok(state),
        Err(_) => Err(format!("{value} is not a TaskState value")),
    }
}

impl<'a> Task<'a> {
    /// Checks the snapshot; errors name the offending field under `task.`.
    pub fn from_proto(task: &'a pb::TaskSnapshot) -> Result<Self, Error> {
        if task.id.is_empty() {
            return Err(Error::invalid("task.id", "must not be empty"));
        }
        let state = task_state(task.state).map_err(|rule| Error::invalid("task.state", rule))?;
        let sub_state = SubState::try_from(task.sub_state).map_err(|_| {
            Error::invalid(
                "task.sub_state",
                format!("{} is not a SubState value", task.sub_state),
            )
        })?;
        let sub_tasks = task
            .sub_tasks
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let state = task_state(s.state)
                    .map_err(|rule| Error::invalid(format!("task.sub_tasks[{i}].state"), rule))?;
                Ok((s.id.as_str(), state))
            })
            .collect::<Result<_, Error>>()?;
        let settings = task.settings.as_ref();
        Ok(Self {
            id: &task.id,
            context_id: &task.context_id,
            name: &task.name,
            state,
            sub_state,
            model: settings.and_then(|s| s.model.as_deref()),
            effort: settings.and_then(|s| s.effort.as_deref()),
            plan: task.plan.as_ref().map(|p| (p.steps_done, p.steps_total)),
            sub_tasks,
        })
    }

    /// The state name `/status` shows.
    pub fn state_name(&self) -> &'static str {
        state_name(self.state)
    }

    /// The sub-state as `/status` shows it, if there is one.
    pub fn sub_state_name(&self) -> Option<&'static str> {
        match self.sub_state {
            SubState::Unspecified => None,
            SubState::AwaitingNextMessage => Some("awaiting-next-message"),
            SubState::AwaitingAnswer => Some("awaiting-answer"),
        }
    }
}

/// A sub-task for the gateway to create.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubTask {
    /// `<task id>.<n>`.
    pub id: String,
    /// A short name derived from the goal.
    pub name: String,
    /// What it is to do.
    pub goal: String,
}

impl SubTask {
    /// The next sub-task of `task`: n is one more than the sub-tasks it has.
    pub fn next_for(task: &Task<'_>, goal: &str) -> Self {
        Self {
            id: format!("{}.{}", task.id, task.sub_tasks.len() + 1),
            name: sub_task_name(goal),
            goal: goal.to_owned(),
        }
    }
}

/// What a command changes; applied by the gateway before it emits the reply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// A new model.
    pub model: Option<String>,
    /// A new effort.
    pub effort: Option<String>,
    /// A sub-task to create.
    pub sub_task: Option<SubTask>,
}

/// How a command ended and what it said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// How it ended.
    pub outcome: Outcome,
    /// The reply text.
    pub text: String,
    /// What it changes (empty unless the outcome is ok).
    pub changes: Changes,
}

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

/// Role rules shared by every command; `None` when the sender may go on.
fn refuse_by_role(role: ParticipantRole, name: &str, changes_task: bool) -> Option<Reply> {
    match role {
        ParticipantRole::None => Some(Reply::refused(
            "refused: the sender has no role on this task".to_owned(),
        )),
        ParticipantRole::Watcher if changes_task => Some(Reply::refused(format!(
            "refused: a watcher may not change the task with /{name}"
        ))),
        _ => None,
    }
}

/// Runs `message` against the registry `snapshot` for `task`, sent by someone with
/// `role`. Pure: the same inputs give the same result.
pub fn execute<'m>(
    message: &'m pb::Message,
    task: &Task<'_>,
    role: ParticipantRole,
    snapshot: &Snapshot,
    catalogue: &Catalogue,
) -> Execution<'m> {
    let (name, command, arguments) = match classify(message, snapshot) {
        Classification::Ordinary { reason, name } => return Execution::Ordinary { reason, name },
        Classification::Command {
            name,
            command,
            arguments,
        } => (name, command, arguments),
    };
    let reply = match &command.body {
        Body::Builtin { builtin } => refuse_by_role(role, name, builtin.changes_task(arguments))
            .unwrap_or_else(|| builtin.run(task, arguments, catalogue)),
        Body::None => refuse_by_role(role, name, false).unwrap_or_else(|| no_handler(name)),
        Body::Handler { handler } => match refuse_by_role(role, name, false) {
            Some(refusal) => refusal,
            None => {
                return Execution::Delegate {
                    name,
                    arguments,
                    handler: handler.clone(),
                }
            }
        },
    };
    Execution::Command {
        name,
        arguments,
        reply,
    }
}

fn no_handler(name: &str) -> Reply {
    Reply {
        outcome: Outcome::NoHandler,
        text: format!("command /{name} has no handler"),
        changes: Changes::default(),
    }
}

fn failed(name: &str, reason: &str) -> Reply {
    Reply {
        outcome: Outcome::Failed,
        text: format!("/{name} failed: {reason}"),
        changes: Changes::default(),
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
        HandlerAnswer::NoAnswer => return no_handler(name),
        HandlerAnswer::Abort(reason) => return Reply::refused(format!("refused: {reason}")),
        HandlerAnswer::Failed(reason) => return failed(name, &reason),
        HandlerAnswer::Reply {
            reply,
            model,
            effort,
            spawn_goal,
        } => (reply, model, effort, spawn_goal),
    };
    if text.is_empty() {
        return failed(name, "malformed answer: no reply");
    }
    if let Some(model) = model.as_deref().filter(|m| !catalogue.is_selectable(m)) {
        return failed(
            name,
            &format!("invalid answer: {model:?} is not a selectable model"),
        );
    }
    if let Some(effort) = effort
        .as_deref()
        .filter(|e| !Catalogue::is_accepted_effort(e))
    {
        return failed(
            name,
            &format!("invalid answer: {effort:?} is not an accepted effort"),
        );
    }
    if spawn_goal
        .as_deref()
        .is_some_and(|g| trim_py_whitespace(g).is_empty())
    {
        return failed(name, "invalid answer: a spawn needs a goal");
    }
    let changes = Changes {
        model,
        effort,
        sub_task: spawn_goal.map(|goal| SubTask::next_for(task, &goal)),
    };
    if changes != Changes::default() {
        if let Some(refusal) = refuse_by_role(role, name, true) {
            return refusal;
        }
    }
    Reply {
        outcome: Outcome::Ok,
        text,
        changes,
    }
}

/// The event that carries `reply` for `task`, replying to the message `incoming_id`.
pub fn reply_event<'a>(
    task: &Task<'a>,
    fallback_context_id: &'a str,
    incoming_id: &str,
    name: &'a str,
    reply: &'a Reply,
    timestamp: Timestamp,
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
    }
}
