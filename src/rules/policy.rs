//! Who may run what: the reference's role rules, shared by every command.

use crate::pb::ParticipantRole;
use crate::rules::reply::Reply;

/// The refusal for a sender of `role` running `/name`, or `None` when the sender may go
/// on. `changes_task` says whether this run would change the task (watchers may not).
pub fn refuse_by_role(role: ParticipantRole, name: &str, changes_task: bool) -> Option<Reply> {
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
