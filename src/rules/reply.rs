//! What a command answers: its outcome, its reply text, and what it changes on the task
//! (settings, a sub-task), for the gateway to apply before it emits the reply.

use crate::pb::Outcome;
use crate::rules::task::Task;
use crate::rules::text::{first_py_line, trim_py_whitespace};

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
        let n = task.sub_tasks.len() + 1;
        Self {
            id: format!("{}.{n}", task.id),
            name: sub_task_name(goal, n),
            goal: goal.to_owned(),
        }
    }
}

/// A sub-task's name, as the reference derives it: `goal.strip().splitlines()[0][:60]`
/// (Python's whitespace and line breaks, 60 characters, no ellipsis), or `sub-task <n>`
/// when that is empty.
pub fn sub_task_name(goal: &str, n: usize) -> String {
    let name: String = first_py_line(trim_py_whitespace(goal))
        .chars()
        .take(SUB_TASK_NAME_CHARS)
        .collect();
    if name.is_empty() {
        format!("sub-task {n}")
    } else {
        name
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_task_names_follow_the_reference() {
        // Python: goal.strip().splitlines()[0][:60]
        assert_eq!(
            sub_task_name("  Draft the API  \nthen more", 1),
            "Draft the API  "
        );
        assert_eq!(sub_task_name("one\rtwo", 1), "one");
        assert_eq!(sub_task_name("one\u{1E}two", 1), "one");
        assert_eq!(sub_task_name("one\u{2028}two", 1), "one");
        assert_eq!(sub_task_name("one\u{1F}two", 1), "one\u{1F}two");
        assert_eq!(sub_task_name(&"é".repeat(70), 1), "é".repeat(60));
        assert_eq!(sub_task_name(" \u{3000} ", 3), "sub-task 3");
    }
}
