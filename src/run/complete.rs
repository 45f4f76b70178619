//! [`Runner::complete`]: Complete's work (completing what a user has typed: command
//! names, or a command's argument from the catalogue or its handler), independent of
//! how the request arrived. The caller writes the answer in its own shape, from the
//! suggestions as they are (they may borrow the registry until then).

use crate::bodies::Trace;
use crate::error::Error;
use crate::pb::ParticipantRole;
use crate::rules::complete::{self, Completions, Plan};
use crate::rules::task::Task;
use crate::run::execute::Runner;
use crate::views::{SenderView, TaskView};

/// What completion is asked for.
#[derive(Clone, Copy, Debug)]
pub struct CompleteAsked<'t, 'a> {
    /// What the user has typed, from its first character.
    pub text: &'t str,
    /// The sender (its role decides what is offered).
    pub sender: Option<SenderView<'a>>,
    /// The task the text is typed into, if any; one that is sent must be well formed.
    pub task: Option<&'a TaskView<'a>>,
    /// The most values wanted (0: the default).
    pub limit: u32,
    /// The caller's trace context, for a handler asked for values.
    pub trace: &'a Trace,
}

impl Runner {
    /// The completions of `asked.text`, handed to `answer` with the command whose
    /// argument was completed ("" when names were) and the registry's revision; returns
    /// what `answer` made, and that command.
    pub async fn complete<'t, T>(
        &self,
        asked: &CompleteAsked<'t, '_>,
        answer: impl FnOnce(&Completions<'_>, &str, u64) -> T,
    ) -> Result<(T, &'t str), Error> {
        let limit = complete::limit(asked.limit);
        if let Some(task) = asked.task {
            Task::from_view(task)?;
        }
        let role = asked
            .sender
            .and_then(|s| ParticipantRole::try_from(s.role).ok())
            .unwrap_or(ParticipantRole::Unspecified);
        let snapshot = self.registry().read()?;
        let revision = snapshot.revision();
        let listing = |prefix| {
            snapshot
                .starting_with(prefix)
                .map(|c| (c.spec.name.as_str(), c.spec.description.as_str(), &c.access))
        };
        let plan = complete::plan(
            asked.text,
            role,
            &*snapshot,
            listing,
            self.catalogue(),
            limit,
        )?;
        let query = match plan {
            // Answered while the suggestions still borrow the snapshot.
            Plan::Answer {
                completions,
                command,
            } => return Ok((answer(&completions, command, revision), command)),
            Plan::Ask(query) => query,
        };
        // Not held across a handler call: a slow handler must not keep old states alive.
        drop(snapshot);
        let completions = self
            .handlers()
            .suggest(
                &query,
                asked.sender.map(SenderView::to_proto),
                asked.task.map(TaskView::to_proto),
                limit,
                asked.trace,
            )
            .await;
        Ok((answer(&completions, query.command, revision), query.command))
    }
}
