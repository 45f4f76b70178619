//! The task snapshot a gateway sends with Execute, checked, and the state names the
//! replies show.

use crate::error::Error;
use crate::pb::{self, SubState, TaskState};
use crate::views::TaskView;

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

/// The efforts a task may have, in the order replies list them.
pub const EFFORTS: [&str; 3] = ["low", "medium", "high"];

/// The A2A name of `state` without its `TASK_STATE_` prefix, as `/status` shows it.
pub fn state_name(state: TaskState) -> &'static str {
    let name = state.as_str_name();
    name.strip_prefix("TASK_STATE_").unwrap_or(name)
}

/// The reference's name of a sub-state (`awaiting-next-message`, `awaiting-answer`).
pub fn sub_state_name(sub_state: SubState) -> Option<&'static str> {
    match sub_state {
        SubState::Unspecified => None,
        SubState::AwaitingNextMessage => Some("awaiting-next-message"),
        SubState::AwaitingAnswer => Some("awaiting-answer"),
    }
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
        Self::from_view(&TaskView::of(task))
    }

    /// As [`Task::from_proto`], from the snapshot's fields as a request's bytes hold
    /// them.
    pub fn from_view(task: &TaskView<'a>) -> Result<Self, Error> {
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
            .map(|(i, &(id, state))| {
                let state = task_state(state)
                    .map_err(|rule| Error::invalid(format!("task.sub_tasks[{i}].state"), rule))?;
                Ok((id, state))
            })
            .collect::<Result<_, Error>>()?;
        // Empty counts as not chosen, as in the reference.
        let model = task.model.filter(|v| !v.is_empty());
        let effort = task.effort.filter(|v| !v.is_empty());
        if let Some(effort) = effort.filter(|e| !EFFORTS.contains(e)) {
            return Err(Error::invalid(
                "task.settings.effort",
                format!(
                    "must be one of {} or empty (got {:?})",
                    EFFORTS.join(", "),
                    effort.chars().take(32).collect::<String>()
                ),
            ));
        }
        Ok(Self {
            id: task.id,
            context_id: task.context_id,
            name: task.name,
            state,
            sub_state,
            model,
            effort,
            // A plan of zero steps is no plan (the reference tests `steps_total`).
            plan: task.plan.filter(|&(_, total)| total > 0),
            sub_tasks,
        })
    }

    /// The state name `/status` shows.
    pub fn state_name(&self) -> &'static str {
        state_name(self.state)
    }

    /// The sub-state as `/status` shows it, if there is one.
    pub fn sub_state_name(&self) -> Option<&'static str> {
        sub_state_name(self.sub_state)
    }
}
