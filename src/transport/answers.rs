//! Classify's, Execute's and Complete's answers, encoded from the rules' output as it
//! is (borrowed strings, the reply event) straight into the bytes sent.
//!
//! These three are the calls a gateway makes on every message and a completion menu on
//! every keystroke. Building their generated structs copied each string once more,
//! prost then measured each nested message once per level above it, and everything was
//! freed after sending (BENCHMARKS.md, "The hot path", has the instructions it cost).
//! Each function here writes the fields of the proto's message, in field order, with
//! the writer's proto3 rules, so the bytes are the ones prost writes for the same
//! answer: the tests below build the generated structs and compare. `service` answers
//! with these bytes; `unary` frames and sends them as they are.

use crate::pb::Outcome;
use crate::pb::{OrdinaryReason, Role};
use crate::rules::complete::Completions;
use crate::rules::event::ReplyEvent;
use crate::rules::parse::Classification;
use crate::rules::reply::Reply;
use crate::wire::{Answer, ProtoWriter};

/// Room for a small answer (Classify, Execute's ordinary one); the writer grows past it.
const SMALL: usize = 128;
/// Room for an Execute answer with its reply event.
const WITH_EVENT: usize = 512;

/// Writes `event` as an A2A 1.0 `TaskStatusUpdateEvent` (mirrored in our package):
/// `{ task_id = 1; context_id = 2; status = 3; metadata = 4 }`, its status
/// `TaskStatus { state = 1; message = 2; timestamp = 3 }`, its message
/// `Message { message_id = 1; context_id = 2; task_id = 3; role = 4; parts = 5;
/// metadata = 6 }` with one text part.
pub fn write_event(w: &mut ProtoWriter, event: &ReplyEvent<'_>) {
    w.string(1, event.task_id);
    w.string(2, event.context_id);
    w.message(3, |status| {
        status.int(1, event.state as i64);
        status.message(2, |message| {
            message.string(1, &event.message_id);
            message.string(2, event.context_id);
            message.string(3, event.task_id);
            message.int(4, Role::Agent as i64);
            // `Part.text` is a member of a oneof: present even when empty.
            message.message(5, |part| part.optional_string(1, Some(event.text)));
            message.message(6, |metadata| event_metadata(metadata, event));
        });
        status.message(3, |timestamp| {
            timestamp.int(1, event.timestamp.seconds);
            timestamp.int(2, i64::from(event.timestamp.nanos));
        });
    });
    if event.event_metadata {
        w.message(4, |metadata| event_metadata(metadata, event));
    }
}

/// The event's metadata `Struct`: `command`, then `task_ref` when there is one (a map's
/// entries in key order, as prost writes a `BTreeMap`).
fn event_metadata(w: &mut ProtoWriter, event: &ReplyEvent<'_>) {
    let entry = |w: &mut ProtoWriter, key: &str, value: &str| {
        w.message(1, |entry| {
            entry.string(1, key);
            // A `Value` whose `string_value`, a member of its `kind` oneof, is present.
            entry.message(2, |v| v.optional_string(3, Some(value)));
        });
    };
    entry(w, "command", event.command);
    if let Some(task_ref) = event.task_ref {
        entry(w, "task_ref", task_ref);
    }
}

/// `Command { name = 1; arguments = 2 }`.
fn command(w: &mut ProtoWriter, tag: u32, name: &str, arguments: &str) {
    w.message(tag, |c| {
        c.string(1, name);
        c.string(2, arguments);
    });
}

/// `Ordinary { reason = 1; name = 2 }`.
fn ordinary(w: &mut ProtoWriter, tag: u32, reason: OrdinaryReason, name: Option<&str>) {
    w.message(tag, |o| {
        o.int(1, reason as i64);
        o.string(2, name.unwrap_or_default());
    });
}

/// `ClassifyResponse { oneof result { command = 1; ordinary = 2 } revision = 3 }`.
pub fn classified(classification: &Classification<'_, '_>, revision: u64) -> Answer {
    let mut w = ProtoWriter::answer(SMALL);
    match classification {
        Classification::Command {
            name, arguments, ..
        } => command(&mut w, 1, name, arguments),
        Classification::Ordinary { reason, name } => ordinary(&mut w, 2, *reason, *name),
    }
    w.uint(3, revision);
    w.into_answer()
}

/// `ExecuteResponse` (`ordinary = 1`, `revision = 3`): not a command.
pub fn executed_ordinary(reason: OrdinaryReason, name: Option<&str>, revision: u64) -> Answer {
    let mut w = ProtoWriter::answer(SMALL);
    ordinary(&mut w, 1, reason, name);
    w.uint(3, revision);
    w.into_answer()
}

/// `ExecuteResponse` (`prompt = 4`, then `revision = 3`, as prost orders a oneof by its
/// first field): a prompt command's expansion, `PromptExpansion { command = 1; text = 2 }`.
pub fn executed_prompt(name: &str, arguments: &str, text: &str, revision: u64) -> Answer {
    let mut w = ProtoWriter::answer(SMALL + text.len());
    w.message(4, |p| {
        command(p, 1, name, arguments);
        p.string(2, text);
    });
    w.uint(3, revision);
    w.into_answer()
}

/// A command's answer: who ran, its reply and changes, and the reply event in the forms
/// asked for (`event` as protobuf, `event_json` as text, "" when not asked).
pub struct Ran<'a> {
    /// The command's name.
    pub name: &'a str,
    /// Its arguments.
    pub arguments: &'a str,
    /// What it replied and changes.
    pub reply: &'a Reply,
    /// The reply event, when its protobuf form was asked for.
    pub event: Option<&'a ReplyEvent<'a>>,
    /// The reply event as JSON, when a JSON form was asked for.
    pub event_json: &'a str,
}

/// `ExecuteResponse` (`command = 2`, `revision = 3`): a command's
/// `CommandOutcome { command = 1; outcome = 2; reply = 3; event = 4; event_json = 5;
/// changes = 6 }`.
pub fn executed_command(ran: &Ran<'_>, revision: u64) -> Answer {
    let mut w = ProtoWriter::answer(WITH_EVENT + ran.event_json.len());
    w.message(2, |o| {
        command(o, 1, ran.name, ran.arguments);
        o.int(2, ran.reply.outcome as i64);
        o.string(3, &ran.reply.text);
        if let Some(event) = ran.event {
            o.message(4, |e| write_event(e, event));
        }
        o.string(5, ran.event_json);
        let changes = &ran.reply.changes;
        // `Changes { settings = 1; sub_task = 2 }`, always present.
        o.message(6, |c| {
            if changes.model.is_some() || changes.effort.is_some() {
                c.message(1, |s| {
                    s.optional_string(1, changes.model.as_deref());
                    s.optional_string(2, changes.effort.as_deref());
                });
            }
            if let Some(sub_task) = &changes.sub_task {
                c.message(2, |t| {
                    t.string(1, &sub_task.id);
                    t.string(2, &sub_task.name);
                    t.string(3, &sub_task.goal);
                });
            }
        });
    });
    w.uint(3, revision);
    w.into_answer()
}

/// `CompleteResponse { repeated values = 1; total = 2; has_more = 3; command = 4;
/// revision = 5 }`, each value a `Completion { value = 1; text = 2; description = 3 }`.
pub fn completed(completions: &Completions<'_>, command: &str, revision: u64) -> Answer {
    let mut w = ProtoWriter::answer(SMALL + 64 * completions.values.len());
    for suggestion in &completions.values {
        w.message(1, |c| {
            c.string(1, &suggestion.value);
            c.string_of(2, &suggestion.text_parts());
            c.string(3, &suggestion.description);
        });
    }
    w.uint(
        2,
        u64::try_from(completions.total)
            .unwrap_or(u64::MAX)
            .min(u64::from(u32::MAX)),
    );
    w.bool(3, completions.has_more);
    w.string(4, command);
    w.uint(5, revision);
    w.into_answer()
}

/// Execute's encoded answer, and what it concerns for the observing layer.
pub(crate) enum Executed<'r> {
    /// Not a command.
    Ordinary(Answer),
    /// A command that ran (or was refused), and how it ended.
    Command {
        name: &'r str,
        outcome: Outcome,
        bytes: Answer,
    },
    /// A prompt command's expansion.
    Prompt { name: &'r str, bytes: Answer },
}

impl<'r> Executed<'r> {
    pub(crate) fn prompt(name: &'r str, arguments: &str, text: &str, revision: u64) -> Self {
        Executed::Prompt {
            name,
            bytes: executed_prompt(name, arguments, text, revision),
        }
    }

    pub(crate) fn into_bytes(self) -> Answer {
        match self {
            Executed::Ordinary(bytes)
            | Executed::Command { bytes, .. }
            | Executed::Prompt { bytes, .. } => bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb;
    use crate::pb::part::Content;
    use crate::rules::builtins::Builtin;
    use crate::rules::complete::Suggestion;
    use crate::rules::event::tests::event;
    use crate::rules::reply::{Changes, SubTask};
    use prost::Message as _;
    use prost_types::{value::Kind, Struct, Timestamp, Value};

    fn command_pb(name: &str, arguments: &str) -> Option<pb::Command> {
        Some(pb::Command {
            name: name.into(),
            arguments: arguments.into(),
        })
    }

    /// The event built as generated types, field by field.
    fn generated_event(event: &ReplyEvent<'_>) -> pb::TaskStatusUpdateEvent {
        let string = |s: &str| Value {
            kind: Some(Kind::StringValue(s.to_owned())),
        };
        let mut fields = std::collections::BTreeMap::new();
        fields.insert("command".to_owned(), string(event.command));
        if let Some(task_ref) = event.task_ref {
            fields.insert("task_ref".to_owned(), string(task_ref));
        }
        let metadata = Struct { fields };
        pb::TaskStatusUpdateEvent {
            task_id: event.task_id.to_owned(),
            context_id: event.context_id.to_owned(),
            status: Some(pb::TaskStatus {
                state: event.state.into(),
                message: Some(pb::Message {
                    message_id: event.message_id.clone(),
                    context_id: event.context_id.to_owned(),
                    task_id: event.task_id.to_owned(),
                    role: Role::Agent.into(),
                    parts: vec![pb::Part {
                        content: Some(Content::Text(event.text.to_owned())),
                        ..Default::default()
                    }],
                    metadata: Some(metadata.clone()),
                    ..Default::default()
                }),
                timestamp: Some(event.timestamp),
            }),
            metadata: event.event_metadata.then_some(metadata),
        }
    }

    #[test]
    fn events_are_what_prost_writes() {
        let long = "r".repeat(200);
        let cases = [
            event(None),
            event(Some("t-1.1")),
            // The event's own metadata only when asked; empty strings left out, the
            // part's text kept.
            ReplyEvent {
                event_metadata: false,
                text: "",
                context_id: "",
                ..event(Some("t-1.1"))
            },
            ReplyEvent {
                text: &long,
                state: pb::TaskState::Unspecified,
                timestamp: Timestamp::default(),
                ..event(None)
            },
        ];
        for case in cases {
            let mut w = ProtoWriter::default();
            write_event(&mut w, &case);
            let bytes = w.into_vec();
            let want = generated_event(&case);
            assert_eq!(bytes, want.encode_to_vec(), "{case:?}");
            let got = pb::TaskStatusUpdateEvent::decode(&bytes[..]).unwrap();
            assert_eq!(got.metadata.is_some(), case.event_metadata);
            let message = got.status.unwrap().message.unwrap();
            let metadata = message.metadata.unwrap().fields;
            assert_eq!(metadata.len(), 1 + usize::from(case.task_ref.is_some()));
        }
    }

    #[test]
    fn classify_answers_are_what_prost_writes() {
        let body = crate::rules::body::Body::Builtin {
            builtin: Builtin::Status,
        };
        let command = Classification::Command {
            name: "status",
            body: &body,
            access: None,
            arguments: "now please",
        };
        let want = pb::ClassifyResponse {
            result: Some(pb::classify_response::Result::Command(
                command_pb("status", "now please").unwrap(),
            )),
            revision: 7,
        };
        assert_eq!(classified(&command, 7).message(), want.encode_to_vec());
        for (reason, name) in [
            (OrdinaryReason::NotRegistered, Some("nope")),
            (OrdinaryReason::NotCommandSyntax, None),
            (OrdinaryReason::NotSingleTextPart, Some("")),
        ] {
            let want = pb::ClassifyResponse {
                result: Some(pb::classify_response::Result::Ordinary(pb::Ordinary {
                    reason: reason.into(),
                    name: name.unwrap_or_default().into(),
                })),
                revision: 0,
            };
            let got = classified(&Classification::Ordinary { reason, name }, 0);
            assert_eq!(got.message(), want.encode_to_vec());
            let want = pb::ExecuteResponse {
                result: Some(pb::execute_response::Result::Ordinary(pb::Ordinary {
                    reason: reason.into(),
                    name: name.unwrap_or_default().into(),
                })),
                revision: u64::MAX,
            };
            assert_eq!(
                executed_ordinary(reason, name, u64::MAX).message(),
                want.encode_to_vec()
            );
        }
    }

    #[test]
    fn prompt_answers_are_what_prost_writes() {
        for text in ["", "Review this:\n\nx", &"long ".repeat(100)] {
            let want = pb::ExecuteResponse {
                result: Some(pb::execute_response::Result::Prompt(pb::PromptExpansion {
                    command: command_pb("review", ""),
                    text: text.into(),
                })),
                revision: 3,
            };
            assert_eq!(
                executed_prompt("review", "", text, 3).message(),
                want.encode_to_vec()
            );
        }
    }

    #[test]
    fn command_answers_are_what_prost_writes() {
        let sub_task = SubTask {
            id: "t-1.1".into(),
            name: "Draft".into(),
            goal: "Draft the API".into(),
        };
        let replies = [
            Reply::ok("Status: working".into(), Changes::default()),
            Reply::ok(
                "Model set to x.".into(),
                Changes {
                    model: Some("x".into()),
                    effort: Some(String::new()),
                    sub_task: None,
                },
            ),
            Reply::ok(
                String::new(),
                Changes {
                    sub_task: Some(sub_task),
                    ..Default::default()
                },
            ),
            Reply::failed("deploy", &"slow ".repeat(40)),
        ];
        for reply in &replies {
            let event = ReplyEvent {
                text: &reply.text,
                command: "status",
                ..event(reply.changes.sub_task.as_ref().map(|s| s.id.as_str()))
            };
            let event_pb = generated_event(&event);
            for (with_event, json) in [(true, ""), (false, "{\"taskId\":\"t-1\"}"), (true, "{}")] {
                let ran = Ran {
                    name: "status",
                    arguments: "x y",
                    reply,
                    event: with_event.then_some(&event),
                    event_json: json,
                };
                let changes = &reply.changes;
                let want = pb::ExecuteResponse {
                    result: Some(pb::execute_response::Result::Command(pb::CommandOutcome {
                        command: command_pb("status", "x y"),
                        outcome: reply.outcome.into(),
                        reply: reply.text.clone(),
                        event: with_event.then(|| event_pb.clone()),
                        event_json: json.into(),
                        changes: Some(pb::Changes {
                            settings: (changes.model.is_some() || changes.effort.is_some()).then(
                                || pb::TaskSettings {
                                    model: changes.model.clone(),
                                    effort: changes.effort.clone(),
                                },
                            ),
                            sub_task: changes.sub_task.as_ref().map(|s| pb::SubTaskToCreate {
                                id: s.id.clone(),
                                name: s.name.clone(),
                                goal: s.goal.clone(),
                            }),
                        }),
                    })),
                    revision: 12,
                };
                assert_eq!(
                    executed_command(&ran, 12).message(),
                    want.encode_to_vec(),
                    "{reply:?}"
                );
            }
        }
    }

    #[test]
    fn complete_answers_are_what_prost_writes() {
        let suggestion = |value: &'static str, description: &'static str| Suggestion {
            value: value.into(),
            before: "/".into(),
            after: " ",
            description: description.into(),
        };
        let cases = [
            Completions::default(),
            Completions::cut(
                vec![
                    suggestion("status", "Show the task"),
                    suggestion("sub-task", ""),
                ],
                5,
                2,
            ),
            Completions {
                values: vec![suggestion("", "")],
                total: usize::MAX,
                has_more: true,
            },
        ];
        for completions in &cases {
            for command in ["", "model"] {
                let want = pb::CompleteResponse {
                    values: completions
                        .values
                        .iter()
                        .map(|s| pb::Completion {
                            value: s.value.to_string(),
                            text: s.text(),
                            description: s.description.to_string(),
                        })
                        .collect(),
                    total: u32::try_from(completions.total).unwrap_or(u32::MAX),
                    has_more: completions.has_more,
                    command: command.into(),
                    revision: 9,
                };
                assert_eq!(
                    completed(completions, command, 9).message(),
                    want.encode_to_vec()
                );
            }
        }
    }
}
