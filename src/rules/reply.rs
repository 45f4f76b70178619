//! What a command answers: its outcome, its reply text, and what it changes on the task
//! (settings, a sub-task), for the gateway to apply before it emits the reply.

use crate::pb::Outcome;
use crate::rules::task::Task;
use crate::rules::text::trim_py_whitespace;

/// Longest sub-task name derived from its goal, in characters.
const SUB_TASK_NAME_CHARS: usize = 60;

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

/// A short name for a sub-task: the goal's first line, cut at a character boundary.
pub fn sub_task_name(goal: &str) -> String {
    let first_line = goal.lines().next().unwrap_or_default();
    let first_line = trim_py_whitespace(first_line);
    if first_line.chars().count() <= SUB_TASK_NAME_CHARS {
        return first_line.to_owned();
    }
    let mut name: String = first_line.chars().take(SUB_TASK_NAME_CHARS - 1).collect();
    name.push('…');
    name
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

impl Reply {
    /// The command ran: `text` is the reply, `changes` what to apply.
    pub fn ok(text: String, changes: Changes) -> Self {
        Self {
            outcome: Outcome::Ok,
            text,
            changes,
        }
    }

    /// A refusal: the reply is the text, nothing changes.
    pub fn refused(text: String) -> Self {
        Self {
            outcome: Outcome::Refused,
            text,
            changes: Changes::default(),
        }
    }

    /// A registered command that nothing runs.
    pub fn no_handler(name: &str) -> Self {
        Self {
            outcome: Outcome::NoHandler,
            text: format!("command /{name} has no handler"),
            changes: Changes::default(),
        }
    }

    /// A body that failed, with the short reason the sender sees.
    pub fn failed(name: &str, reason: &str) -> Self {
        Self {
            outcome: Outcome::Failed,
            text: format!("/{name} failed: {reason}"),
            changes: Changes::default(),
        }
    }
}
