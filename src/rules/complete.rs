//! Argument completion, as pure functions: what the text typed so far asks to complete
//! (a command name, or a registered command's argument), and the suggestions the
//! service makes itself (names by prefix; `/model`'s selectable models, `/effort`'s
//! accepted efforts). [`plan`] decides a whole request; when a handler command's
//! suggestions come from its handler, the plan says what to ask it ([`ArgumentQuery`]),
//! and the handler clients ask and cut the answer with [`Completions::cut`], as Execute
//! delegates.

use std::borrow::Cow;

use crate::error::Error;
use crate::pb::ParticipantRole;
use crate::rules::body::{Body, HandlerBinding, PromptBody};
use crate::rules::builtins::{Builtin, Catalogue};
use crate::rules::parse::{Found, Lookup};
use crate::rules::policy::{changes_task, Access};
use crate::rules::spec::is_name_byte;
use crate::rules::task::EFFORTS;
use crate::rules::text::is_py_whitespace;

/// The default most suggestions, and the most a request may ask for.
pub const DEFAULT_LIMIT: usize = 10;
/// See [`DEFAULT_LIMIT`].
pub const MAX_LIMIT: usize = 100;
/// The longest a handler may take to suggest values: completion runs as the user types.
pub const HANDLER_TIMEOUT_MS: u64 = 500;

/// What the typed text asks to complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target<'t> {
    /// A command name starting with `prefix`.
    Name {
        /// What was typed after `/`.
        prefix: &'t str,
    },
    /// The argument of the registered command `name`.
    Argument {
        /// The command.
        name: &'t str,
        /// The text before the argument (`/name` and the whitespace after it).
        head: &'t str,
        /// The argument typed so far (leading whitespace dropped, as the parse rule
        /// does).
        argument: &'t str,
    },
    /// Nothing to complete (not command syntax, or a name that is not registered).
    Nothing,
}

/// What `text` asks to complete, against the registered `commands`.
pub fn target<'t>(text: &'t str, commands: &impl Lookup) -> Target<'t> {
    let Some(rest) = text.strip_prefix('/') else {
        return Target::Nothing;
    };
    let name_len = rest.bytes().take_while(|&b| is_name_byte(b)).count();
    let (name, after) = rest.split_at(name_len);
    if after.is_empty() {
        // Still typing the name (an empty prefix lists every name).
        let valid = name.is_empty() || name.as_bytes()[0].is_ascii_lowercase();
        return if valid {
            Target::Name { prefix: name }
        } else {
            Target::Nothing
        };
    }
    if !after.starts_with(is_py_whitespace) || commands.find(name).is_none() {
        return Target::Nothing;
    }
    let argument = after.trim_start_matches(is_py_whitespace);
    Target::Argument {
        name,
        head: &text[..text.len() - argument.len()],
        argument,
    }
}

/// One suggestion (see `CompleteResponse` in the proto). It borrows what it can: a
/// completion menu asks on every keystroke, and the names, descriptions and values are
/// already held by the registry, the catalogue or the typed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suggestion<'a> {
    /// The completed word.
    pub value: Cow<'a, str>,
    /// What the whole text has before the value: `/` before a name, the typed text
    /// before an argument.
    pub before: Cow<'a, str>,
    /// What it has after the value: a space after a name, for the argument to follow.
    pub after: &'static str,
    /// A short description; may be empty.
    pub description: Cow<'a, str>,
}

impl Suggestion<'_> {
    /// The whole text with the value applied, in its three parts.
    pub fn text_parts(&self) -> [&str; 3] {
        [&self.before, &self.value, self.after]
    }

    /// The whole text with the value applied.
    pub fn text(&self) -> String {
        self.text_parts().concat()
    }
}

/// Suggestions cut to a limit, with how many there were.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completions<'a> {
    /// At most the limit, best first.
    pub values: Vec<Suggestion<'a>>,
    /// How many there were in all.
    pub total: usize,
    /// More than `values` holds.
    pub has_more: bool,
}

impl<'a> Completions<'a> {
    /// `all` cut to `limit`; `total` is at least their count (a handler may know of
    /// more than it sent).
    pub fn cut(mut all: Vec<Suggestion<'a>>, total: usize, limit: usize) -> Self {
        let total = total.max(all.len());
        all.truncate(limit);
        Self {
            has_more: total > all.len(),
            values: all,
            total,
        }
    }
}

/// The limit a request asks for: 0 means the default; at most [`MAX_LIMIT`].
pub fn limit(requested: u32) -> usize {
    match requested as usize {
        0 => DEFAULT_LIMIT,
        n => n.min(MAX_LIMIT),
    }
}

/// Whether a sender of `role` is offered the command `name` at all: not hidden, and
/// allowed both by the reference's role rules (a watcher is refused `/sub-task` whatever
/// its argument) and by its own access.
pub fn offered(role: ParticipantRole, name: &str, access: Option<&Access>) -> bool {
    let always_refused = role == ParticipantRole::Watcher && changes_task(name, "");
    let own = access.is_none_or(|access| !access.hidden && access.allows(role));
    own && role != ParticipantRole::None && !always_refused && !name.is_empty()
}

/// The command names `role` is offered, in registration order, of `commands`: those
/// starting with the typed prefix (the registry finds them by binary search), each with
/// its description and access.
pub fn names<'a>(
    role: ParticipantRole,
    commands: impl Iterator<Item = (&'a str, &'a str, &'a Access)>,
    limit: usize,
) -> Completions<'a> {
    // Every match is counted; only the first `limit` are built.
    let mut total = 0;
    let mut values = Vec::with_capacity(limit.min(DEFAULT_LIMIT));
    let offered_here = commands.filter(|(name, _, access)| offered(role, name, Some(access)));
    for (name, description, _) in offered_here {
        total += 1;
        if values.len() < limit {
            values.push(Suggestion {
                value: Cow::Borrowed(name),
                before: Cow::Borrowed("/"),
                after: " ",
                description: Cow::Borrowed(description),
            });
        }
    }
    Completions::cut(values, total, limit)
}

/// The values a built-in suggests for `argument` (by prefix), or none: `/model` the
/// selectable models, `/effort` the accepted efforts, the others nothing. A sender the
/// reference would refuse a change (a watcher) is offered none.
pub fn builtin_values<'a>(
    builtin: Builtin,
    name: &str,
    head: &'a str,
    argument: &str,
    role: ParticipantRole,
    catalogue: &'a Catalogue,
) -> Vec<Suggestion<'a>> {
    if role == ParticipantRole::Watcher && changes_task(name, "x") {
        return Vec::new();
    }
    let values: Vec<&str> = match builtin {
        Builtin::Model => catalogue.models.iter().map(String::as_str).collect(),
        Builtin::Effort => EFFORTS.to_vec(),
        Builtin::SubTask | Builtin::Status => Vec::new(),
    };
    values
        .into_iter()
        .filter(|v| v.starts_with(argument))
        .map(|value| Suggestion {
            value: Cow::Borrowed(value),
            before: Cow::Borrowed(head),
            after: "",
            description: Cow::Borrowed(""),
        })
        .collect()
}

/// How a registered command's argument is completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgumentSource<'a> {
    /// By the service (a built-in's values).
    Builtin(Builtin),
    /// By the command's handler.
    Handler(&'a crate::rules::body::HandlerBinding),
    /// By the MCP server whose prompt the command is (`completion/complete`).
    Prompt(&'a HandlerBinding, &'a str),
    /// Not at all.
    None,
}

/// Where `body`'s argument suggestions come from.
pub fn argument_source(body: &Body) -> ArgumentSource<'_> {
    match body {
        Body::Builtin { builtin } => ArgumentSource::Builtin(*builtin),
        Body::Handler { handler } => ArgumentSource::Handler(handler),
        Body::Prompt {
            prompt: PromptBody::Mcp { server, prompt },
        } => ArgumentSource::Prompt(server, prompt),
        // A template offers nothing: it has no list of values.
        Body::None
        | Body::Prompt {
            prompt: PromptBody::Template { .. },
        } => ArgumentSource::None,
    }
}

/// What a Complete request is answered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan<'t, 'c> {
    /// The answer: `completions` for `command` ("" when names or nothing were completed).
    Answer {
        /// The suggestions (borrowing the typed text, the registry and the catalogue).
        completions: Completions<'c>,
        /// The command whose argument was completed.
        command: &'t str,
    },
    /// The answer is the command's handler's: ask it.
    Ask(ArgumentQuery<'t>),
}

/// What to ask a handler for: values for the argument typed after `head`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentQuery<'t> {
    /// The command.
    pub command: &'t str,
    /// The text before the argument; each value is offered after it.
    pub head: &'t str,
    /// The argument typed so far.
    pub argument: &'t str,
    /// The command's handler (a copy: the registry's state is not held while it runs).
    pub handler: HandlerBinding,
    /// For an MCP prompt command, the prompt's name on the server `handler` names.
    pub prompt: Option<String>,
}

/// Plans the answer to completing `text` for a sender of `role`, against the
/// registered `commands` (looked up by name; `listing(prefix)` gives those whose names
/// start with `prefix`, in registration order, with their descriptions and access),
/// with at most `limit` suggestions. Completing a command needs a role: an unspecified
/// one is an error.
pub fn plan<'t: 'c, 'c, L>(
    text: &'t str,
    role: ParticipantRole,
    commands: &'c impl Lookup,
    listing: impl FnOnce(&'t str) -> L,
    catalogue: &'c Catalogue,
    limit: usize,
) -> Result<Plan<'t, 'c>, Error>
where
    L: Iterator<Item = (&'c str, &'c str, &'c Access)>,
{
    let answer = |completions, command| {
        Ok(Plan::Answer {
            completions,
            command,
        })
    };
    let target = target(text, commands);
    if target == Target::Nothing {
        return answer(Completions::default(), "");
    }
    if role == ParticipantRole::Unspecified {
        return Err(Error::invalid(
            "sender.role",
            "must be set to complete a command (PARTICIPANT_ROLE_NONE for a sender \
             with no role on the task)",
        ));
    }
    let (name, head, argument) = match target {
        Target::Name { prefix } => return answer(names(role, listing(prefix), limit), ""),
        Target::Argument {
            name,
            head,
            argument,
        } => (name, head, argument),
        Target::Nothing => unreachable!("returned above"),
    };
    let Some(Found { body, access }) = commands.find(name) else {
        return answer(Completions::default(), "");
    };
    if !offered(role, name, access) {
        return answer(Completions::default(), name);
    }
    let values = match argument_source(body) {
        ArgumentSource::Builtin(builtin) => {
            builtin_values(builtin, name, head, argument, role, catalogue)
        }
        ArgumentSource::None => Vec::new(),
        ArgumentSource::Handler(handler) => {
            return Ok(Plan::Ask(ArgumentQuery {
                command: name,
                head,
                argument,
                handler: handler.clone(),
                prompt: None,
            }))
        }
        ArgumentSource::Prompt(server, prompt) => {
            return Ok(Plan::Ask(ArgumentQuery {
                command: name,
                head,
                argument,
                handler: server.clone(),
                prompt: Some(prompt.to_owned()),
            }))
        }
    };
    let total = values.len();
    answer(Completions::cut(values, total, limit), name)
}

/// A handler's `values` (with descriptions) for `query`, of `total` it knows of, cut to
/// `limit`.
pub fn from_handler(
    query: &ArgumentQuery<'_>,
    values: Vec<(String, String)>,
    total: usize,
    limit: usize,
) -> Completions<'static> {
    let all = values
        .into_iter()
        .map(|(value, description)| Suggestion {
            value: Cow::Owned(value),
            before: Cow::Owned(query.head.to_owned()),
            after: "",
            description: Cow::Owned(description),
        })
        .collect();
    Completions::cut(all, total, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::policy::Role;

    struct Names;
    impl Lookup for Names {
        fn find(&self, name: &str) -> Option<Found<'_>> {
            (name == "model").then_some(Found {
                body: &Body::None,
                access: None,
            })
        }
    }

    #[test]
    fn targets() {
        assert_eq!(target("/mo", &Names), Target::Name { prefix: "mo" });
        assert_eq!(target("/", &Names), Target::Name { prefix: "" });
        assert_eq!(
            target("/model  g", &Names),
            Target::Argument {
                name: "model",
                head: "/model  ",
                argument: "g"
            }
        );
        assert_eq!(
            target("/model\u{3000}", &Names),
            Target::Argument {
                name: "model",
                head: "/model\u{3000}",
                argument: ""
            }
        );
        for nothing in ["model", " /mo", "/Mo", "/9", "/nope x", "/model!"] {
            assert_eq!(target(nothing, &Names), Target::Nothing, "{nothing}");
        }
    }

    #[test]
    fn names_leave_out_hidden_and_disallowed() {
        let open = Access::default();
        let hidden = Access {
            hidden: true,
            ..Access::default()
        };
        let admins = Access {
            roles: Some(vec![Role::Admin]),
            hidden: false,
        };
        let commands = [
            ("model", "Model", &open),
            ("mole", "Secret", &hidden),
            ("modify", "Admins", &admins),
            ("status", "Status", &open),
        ];
        // What the registry's index gives for a prefix: the names that start with it.
        let starting = |prefix: &'static str| {
            commands
                .into_iter()
                .filter(move |(name, ..)| name.starts_with(prefix))
        };
        let got = names(ParticipantRole::Assignee, starting("mo"), 10);
        assert_eq!(got.values.len(), 1);
        assert_eq!(got.values[0].text(), "/model ");
        let got = names(ParticipantRole::Admin, starting("mo"), 1);
        assert_eq!((got.values.len(), got.total, got.has_more), (1, 2, true));
        assert_eq!(names(ParticipantRole::None, starting(""), 10).total, 0);
        // A watcher is refused /sub-task whatever its argument: not offered.
        let builtins = [("sub-task", "Start", &open), ("status", "Status", &open)];
        let got = names(ParticipantRole::Watcher, builtins.into_iter(), 10);
        assert_eq!(got.values.len(), 1);
        assert_eq!(got.values[0].value, "status");
    }

    #[test]
    fn builtin_values_by_prefix() {
        let catalogue = Catalogue {
            default_model: "gpt-x".into(),
            models: vec!["gpt-x".into(), "gpt-x-mini".into(), "other".into()],
            default_effort: None,
        };
        let role = ParticipantRole::Reporter;
        let models = builtin_values(Builtin::Model, "model", "/model ", "gpt", role, &catalogue);
        let texts: Vec<String> = models.iter().map(Suggestion::text).collect();
        assert_eq!(texts, ["/model gpt-x", "/model gpt-x-mini"]);
        let efforts = builtin_values(Builtin::Effort, "effort", "/effort ", "", role, &catalogue);
        assert_eq!(efforts.len(), 3);
        let watcher = ParticipantRole::Watcher;
        assert!(
            builtin_values(Builtin::Model, "model", "/model ", "", watcher, &catalogue).is_empty()
        );
        assert!(
            builtin_values(Builtin::Status, "status", "/status ", "", role, &catalogue).is_empty()
        );
    }
}
