//! The built-in commands `model`, `effort`, `sub-task` and `status`: their specs and
//! their bodies, each a pure function of the task snapshot and the model catalogue.
//!
//! Reply texts, refusals and role rules follow the reference harness word for word
//! (`docs/reference-behaviour.md`); tests pin every one of them.

use serde::{Deserialize, Serialize};

use crate::rules::reply::{Changes, Reply, SubTask};
use crate::rules::spec::CommandSpec;
use crate::rules::task::{state_name, Task, EFFORTS};
use crate::rules::text::trim_py_whitespace;

/// One of the built-in commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    /// `/model [<model>]`: show or choose the task's model.
    Model,
    /// `/effort [low|medium|high]`: show or set the reasoning effort.
    Effort,
    /// `/sub-task <description>`: start a linked sub-task.
    SubTask,
    /// `/status`: show the task's status.
    Status,
}

impl Builtin {
    /// Every built-in, in registration order.
    pub const ALL: [Builtin; 4] = [Self::Model, Self::Effort, Self::SubTask, Self::Status];

    /// The command name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Effort => "effort",
            Self::SubTask => "sub-task",
            Self::Status => "status",
        }
    }

    /// The built-in whose name is `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The spec the built-in registers, with the reference's description and hint.
    pub fn spec(self) -> CommandSpec {
        let (description, hint) = match self {
            Self::Model => ("Show or choose this task's model", "[<model>]"),
            Self::Effort => (
                "Show or set this task's reasoning effort",
                "[low|medium|high]",
            ),
            Self::SubTask => ("Start a linked sub-task", "<description>"),
            Self::Status => ("Show this task's status", ""),
        };
        CommandSpec::new("", self.name(), description, hint).expect("built-in specs are valid")
    }

    /// Whether running it with `arguments` would change the task (watchers may not).
    pub fn changes_task(self, arguments: &str) -> bool {
        match self {
            Self::Model | Self::Effort => !trim_py_whitespace(arguments).is_empty(),
            Self::SubTask => true,
            Self::Status => false,
        }
    }

    /// Runs the built-in. Role checks have been done by the caller.
    pub fn run(self, task: &Task<'_>, arguments: &str, catalogue: &Catalogue) -> Reply {
        let argument = trim_py_whitespace(arguments);
        match self {
            Self::Model => model(task, argument, catalogue),
            Self::Effort => effort(task, argument, catalogue),
            Self::SubTask => sub_task(task, argument),
            Self::Status => Reply::ok(status(task, catalogue), Changes::default()),
        }
    }
}

/// The deployment's models and efforts (configuration, not per task).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catalogue {
    /// The model a task uses until it chooses one; one of `models`.
    pub default_model: String,
    /// The models `/model` accepts, in the order its replies list them.
    pub models: Vec<String>,
    /// The effort a task uses until it chooses one; `None` leaves it to the provider.
    pub default_effort: Option<String>,
}

impl Catalogue {
    /// Whether `model` is selectable (compared exactly).
    pub fn is_selectable(&self, model: &str) -> bool {
        self.models.iter().any(|m| m == model)
    }

    /// Whether `effort` is accepted (compared exactly).
    pub fn is_accepted_effort(effort: &str) -> bool {
        EFFORTS.contains(&effort)
    }

    fn selectable(&self) -> String {
        self.models.join(", ")
    }
}

fn accepted_efforts() -> String {
    EFFORTS.join(", ")
}

fn model_line(task: &Task<'_>, catalogue: &Catalogue) -> String {
    let mut line = String::new();
    push_model_line(&mut line, task, catalogue);
    line
}

fn push_model_line(text: &mut String, task: &Task<'_>, catalogue: &Catalogue) {
    text.push_str("Model: ");
    match task.model {
        Some(model) => text.push_str(model),
        None => {
            text.push_str(&catalogue.default_model);
            text.push_str(" (default)");
        }
    }
}

fn effort_line(task: &Task<'_>, catalogue: &Catalogue) -> String {
    let mut line = String::new();
    push_effort_line(&mut line, task, catalogue);
    line
}

fn push_effort_line(text: &mut String, task: &Task<'_>, catalogue: &Catalogue) {
    text.push_str("Effort: ");
    match (task.effort, &catalogue.default_effort) {
        (Some(effort), _) => text.push_str(effort),
        (None, Some(default)) => {
            text.push_str(default);
            text.push_str(" (default)");
        }
        (None, None) => text.push_str("provider default"),
    }
}

fn model(task: &Task<'_>, argument: &str, catalogue: &Catalogue) -> Reply {
    if argument.is_empty() {
        let text = format!(
            "{}\nSelectable: {}",
            model_line(task, catalogue),
            catalogue.selectable()
        );
        return Reply::ok(text, Changes::default());
    }
    if !catalogue.is_selectable(argument) {
        return Reply::refused(format!(
            "refused: not a selectable model. Selectable: {}",
            catalogue.selectable()
        ));
    }
    let changes = Changes {
        model: Some(argument.to_owned()),
        ..Changes::default()
    };
    Reply::ok(format!("Model set to {argument}."), changes)
}

fn effort(task: &Task<'_>, argument: &str, catalogue: &Catalogue) -> Reply {
    if argument.is_empty() {
        let text = format!(
            "{}\nAccepted: {}",
            effort_line(task, catalogue),
            accepted_efforts()
        );
        return Reply::ok(text, Changes::default());
    }
    if !Catalogue::is_accepted_effort(argument) {
        return Reply::refused(format!(
            "refused: not an accepted effort. Accepted: {}",
            accepted_efforts()
        ));
    }
    let changes = Changes {
        effort: Some(argument.to_owned()),
        ..Changes::default()
    };
    Reply::ok(format!("Effort set to {argument}."), changes)
}

fn sub_task(task: &Task<'_>, goal: &str) -> Reply {
    if goal.is_empty() {
        return Reply::refused("Usage: /sub-task <description>".to_owned());
    }
    let sub_task = SubTask::next_for(task, goal);
    let text = format!("Starting a sub-task.\nCreated sub-task {}.", sub_task.id);
    let changes = Changes {
        sub_task: Some(sub_task),
        ..Changes::default()
    };
    Reply::ok(text, changes)
}

/// `/status`'s reply, pushed piece by piece: it is the command typed most, and
/// `core::fmt` cost more than the text (BENCHMARKS.md, issue 31).
fn status(task: &Task<'_>, catalogue: &Catalogue) -> String {
    let mut text = String::with_capacity(160);
    for piece in [
        "Task ",
        task.id,
        " · ",
        task.name,
        "\nState: ",
        task.state_name(),
    ] {
        text.push_str(piece);
    }
    if let Some(sub_state) = task.sub_state_name() {
        text.push_str(" · ");
        text.push_str(sub_state);
    }
    text.push('\n');
    push_model_line(&mut text, task, catalogue);
    text.push('\n');
    push_effort_line(&mut text, task, catalogue);
    match task.plan {
        Some((done, total)) => {
            let mut numbers = itoa::Buffer::new();
            text.push_str("\nPlan: ");
            text.push_str(numbers.format(done));
            text.push('/');
            text.push_str(numbers.format(total));
            text.push_str(" steps done");
        }
        None => text.push_str("\nPlan: none"),
    }
    if task.sub_tasks.is_empty() {
        text.push_str("\nSub-tasks: none");
    } else {
        text.push_str("\nSub-tasks:");
        for (id, state) in &task.sub_tasks {
            for piece in ["\n- ", id, " · ", state_name(*state)] {
                text.push_str(piece);
            }
        }
    }
    text
}
