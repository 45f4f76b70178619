//! Who may run what: the reference's role rules. They run by command name, before any
//! body, whatever runs the command (an operator's replacement of `/model` included).

use crate::error::Error;
use crate::pb::ParticipantRole;
use crate::rules::builtins::Builtin;
use crate::rules::reply::Reply;

/// Whether running `/name arguments` changes the task, by the reference's rule: `/model`
/// and `/effort` with an argument, and `/sub-task` always. Decided by the name alone.
pub fn changes_task(name: &str, arguments: &str) -> bool {
    Builtin::from_name(name).is_some_and(|b| b.changes_task(arguments))
}

/// The refusal for a sender of `role` running `/name arguments`, or `None` when the
/// sender may go on. An unspecified role is the gateway's mistake, not a refusal.
pub fn refuse_by_role(
    role: ParticipantRole,
    name: &str,
    arguments: &str,
) -> Result<Option<Reply>, Error> {
    Ok(match role {
        ParticipantRole::Unspecified => {
            return Err(Error::invalid(
                "sender.role",
                "must be set when the message is a command \
                 (PARTICIPANT_ROLE_NONE for a sender with no role on the task)",
            ))
        }
        ParticipantRole::None => Some(Reply::refused(
            "refused: the sender has no role on this task".to_owned(),
        )),
        ParticipantRole::Watcher if changes_task(name, arguments) => Some(watcher_refusal(name)),
        _ => None,
    })
}

/// What a watcher is told when a command would change the task.
pub fn watcher_refusal(name: &str) -> Reply {
    Reply::refused(format!(
        "refused: a watcher may not change the task with /{name}"
    ))
}
