//! Who may run what: the reference's role rules, which run by command name before any
//! body, whatever runs the command (an operator's replacement of `/model` included);
//! then a command's own [`Access`] (the roles an operator allowed), which can only
//! narrow them.

use serde::{Deserialize, Serialize};

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

/// A role a sender holds on a task, as a command's access names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The participant the task is assigned to.
    Assignee,
    /// The participant who reported it.
    Reporter,
    /// A participant who follows it.
    Watcher,
    /// An administrator of the task.
    Admin,
}

impl Role {
    /// The role of a sender, if they hold one.
    pub fn of(role: ParticipantRole) -> Option<Self> {
        match role {
            ParticipantRole::Assignee => Some(Self::Assignee),
            ParticipantRole::Reporter => Some(Self::Reporter),
            ParticipantRole::Watcher => Some(Self::Watcher),
            ParticipantRole::Admin => Some(Self::Admin),
            ParticipantRole::Unspecified | ParticipantRole::None => None,
        }
    }

    /// The role as protobuf.
    pub fn to_proto(self) -> ParticipantRole {
        match self {
            Self::Assignee => ParticipantRole::Assignee,
            Self::Reporter => ParticipantRole::Reporter,
            Self::Watcher => ParticipantRole::Watcher,
            Self::Admin => ParticipantRole::Admin,
        }
    }

    /// The role named `name` (`assignee`, `reporter`, `watcher` or `admin`).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Assignee, Self::Reporter, Self::Watcher, Self::Admin]
            .into_iter()
            .find(|r| r.name() == name)
    }

    /// The role's name as replies and the reference write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Assignee => "assignee",
            Self::Reporter => "reporter",
            Self::Watcher => "watcher",
            Self::Admin => "admin",
        }
    }
}

/// Who may run a registered command, and whether the card shows it. Never on the card.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// The roles allowed to run it, sorted; `None`: every role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<Role>>,
    /// Left out of the card's params and of name completion.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
}

impl Access {
    /// This access, only ever narrowed by `update`: roles are taken from it only while
    /// every role may run the command (a restriction already set is kept), and hidden
    /// only ever turns on. So re-sending a spec, whatever it says, never widens who may
    /// run a command or shows a hidden one; widening is `replace_access`.
    pub fn narrowed_by(&self, update: &Access) -> Access {
        Access {
            roles: self.roles.clone().or_else(|| update.roles.clone()),
            hidden: self.hidden || update.hidden,
        }
    }

    /// Whether this is the default (every role, shown): records leave it out.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Checks a request's `allowed_roles` (ParticipantRole values) and `hidden`;
    /// `field` names the roles in errors. An empty list allows every role.
    pub fn parse(field: &str, roles: &[i32], hidden: bool) -> Result<Self, Error> {
        let mut allowed = Vec::with_capacity(roles.len());
        for (i, &value) in roles.iter().enumerate() {
            let role = ParticipantRole::try_from(value)
                .ok()
                .and_then(Role::of)
                .ok_or_else(|| {
                    Error::invalid(
                        format!("{field}[{i}]"),
                        format!(
                            "{value} is not a role a sender can hold \
                             (ASSIGNEE, REPORTER, WATCHER or ADMIN)"
                        ),
                    )
                })?;
            allowed.push(role);
        }
        allowed.sort_unstable();
        allowed.dedup();
        Ok(Self {
            roles: (!allowed.is_empty()).then_some(allowed),
            hidden,
        })
    }

    /// Whether a sender of `role` may run the command (the reference's rules aside).
    pub fn allows(&self, role: ParticipantRole) -> bool {
        match (&self.roles, Role::of(role)) {
            (None, _) => true,
            (Some(roles), Some(role)) => roles.contains(&role),
            (Some(_), None) => false,
        }
    }

    /// The refusal for a sender of `role` running `/name`, if this access does not
    /// allow it.
    pub fn refuse(&self, role: ParticipantRole, name: &str) -> Option<Reply> {
        let held = Role::of(role)?;
        (!self.allows(role)).then(|| {
            let article = match held {
                Role::Assignee | Role::Admin => "an",
                Role::Reporter | Role::Watcher => "a",
            };
            Reply::refused(format!(
                "refused: {article} {} may not run /{name}",
                held.name()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_narrows_by_role() {
        let admin = ParticipantRole::Admin as i32;
        let access = Access::parse("allowed_roles", &[admin, admin], false).unwrap();
        assert_eq!(access.roles, Some(vec![Role::Admin]));
        assert!(access.allows(ParticipantRole::Admin));
        assert_eq!(
            access
                .refuse(ParticipantRole::Reporter, "deploy")
                .unwrap()
                .text,
            "refused: a reporter may not run /deploy"
        );
        assert!(Access::default().allows(ParticipantRole::Watcher));
        let err = Access::parse(
            "allowed_roles",
            &[admin, ParticipantRole::None as i32],
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("allowed_roles[1]: 5 is not a role"),
            "{err}"
        );
        // Stored compactly: the default writes nothing.
        assert_eq!(serde_json::to_string(&Access::default()).unwrap(), "{}");
    }
}
