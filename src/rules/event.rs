//! The status update a command reply is re-emitted as, and its JSON forms: A2A 1.0
//! (protobuf's canonical JSON mapping) and A2A 0.3. (Its protobuf form is written by
//! `transport::answers`, straight into Execute's answer.)

use prost_types::Timestamp;
use serde::Serialize;

use crate::error::Error;
use crate::pb::{EventForm, EventJsonFormat, Role, TaskState};

/// A command's reply, as the event that carries it.
#[derive(Clone, Debug)]
pub struct ReplyEvent<'a> {
    /// The task's id.
    pub task_id: &'a str,
    /// The task's context id.
    pub context_id: &'a str,
    /// The task's state, repeated unchanged.
    pub state: TaskState,
    /// The reply message's id (derived from the incoming message's id).
    pub message_id: String,
    /// The reply text.
    pub text: &'a str,
    /// The command's name, for the metadata.
    pub command: &'a str,
    /// The created sub-task's id, for the metadata.
    pub task_ref: Option<&'a str>,
    /// When the reply was made.
    pub timestamp: Timestamp,
    /// Whether the event's own metadata repeats the message's (the reference puts it on
    /// the message only).
    pub event_metadata: bool,
}

/// A JSON form of the event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonForm {
    /// A2A 1.0: protobuf's canonical JSON mapping.
    A2a10,
    /// A2A 0.3: `kind` fields, lower-case states, `final: false`.
    A2a03,
}

/// Which forms of the event a caller asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forms {
    /// The protobuf event.
    pub protobuf: bool,
    /// One JSON form, if any.
    pub json: Option<JsonForm>,
}

impl Forms {
    /// Reads the request's `event_forms` (and the deprecated `event_json_format`, used
    /// only when `event_forms` is empty): empty means the protobuf event alone.
    pub fn from_request(forms: &[i32], legacy_json: i32) -> Result<Self, Error> {
        if forms.is_empty() {
            let json = match EventJsonFormat::try_from(legacy_json) {
                Ok(EventJsonFormat::Unspecified) => None,
                Ok(EventJsonFormat::A2a10) => Some(JsonForm::A2a10),
                Ok(EventJsonFormat::A2a03) => Some(JsonForm::A2a03),
                Err(_) => {
                    return Err(Error::invalid(
                        "event_json_format",
                        format!("{legacy_json} is not an EventJsonFormat value"),
                    ))
                }
            };
            return Ok(Self {
                protobuf: true,
                json,
            });
        }
        let mut out = Self {
            protobuf: false,
            json: None,
        };
        for (i, &value) in forms.iter().enumerate() {
            let field = || format!("event_forms[{i}]");
            let json = match EventForm::try_from(value) {
                Ok(EventForm::Protobuf) => {
                    out.protobuf = true;
                    continue;
                }
                Ok(EventForm::A2a10Json) => JsonForm::A2a10,
                Ok(EventForm::A2a03Json) => JsonForm::A2a03,
                Ok(EventForm::Unspecified) => {
                    return Err(Error::invalid(
                        field(),
                        "must not be EVENT_FORM_UNSPECIFIED",
                    ))
                }
                Err(_) => {
                    return Err(Error::invalid(
                        field(),
                        format!("{value} is not an EventForm value"),
                    ))
                }
            };
            if out.json.is_some_and(|j| j != json) {
                return Err(Error::invalid(
                    field(),
                    "at most one JSON form may be asked for",
                ));
            }
            out.json = Some(json);
        }
        Ok(out)
    }
}

/// The reply message's id for an incoming message id: stable, so retries match.
pub fn reply_message_id(incoming: &str) -> String {
    // Not `format!` (a formatter) nor `concat` (a general join), which cost several
    // times more, on every command's reply.
    const SUFFIX: &str = ":reply";
    let mut id = String::with_capacity(incoming.len() + SUFFIX.len());
    id.push_str(incoming);
    id.push_str(SUFFIX);
    id
}

impl ReplyEvent<'_> {
    /// The event as JSON text in `format`, ready to send.
    pub fn to_json(&self, format: JsonForm) -> String {
        let (metadata, timestamp) = self.parts();
        serde_json::to_string(&self.form(format, &metadata, &timestamp))
            .expect("events always serialize")
    }

    /// The event as a JSON value in `format`, for a caller that puts it into an
    /// answer of its own (built directly, never written out and read back).
    pub fn to_value(&self, format: JsonForm) -> serde_json::Value {
        let (metadata, timestamp) = self.parts();
        serde_json::to_value(self.form(format, &metadata, &timestamp))
            .expect("events always serialize")
    }

    /// The event's message alone (A2A 1.0's form), as a JSON value: what an answer
    /// that is a task, not an event, carries as its status message.
    pub fn message_value(&self) -> serde_json::Value {
        let (metadata, _) = self.parts();
        serde_json::to_value(self.message(&metadata)).expect("messages always serialize")
    }

    fn message<'a>(&'a self, metadata: &'a Metadata<'a>) -> V1Message<'a> {
        V1Message {
            message_id: &self.message_id,
            context_id: self.context_id,
            task_id: self.task_id,
            role: Role::Agent.as_str_name(),
            parts: [V1Part { text: self.text }],
            metadata,
        }
    }

    fn parts(&self) -> (Metadata<'_>, String) {
        let metadata = Metadata {
            command: self.command,
            task_ref: self.task_ref,
        };
        (metadata, self.timestamp.to_string())
    }

    fn form<'a>(
        &'a self,
        format: JsonForm,
        metadata: &'a Metadata<'a>,
        timestamp: &'a str,
    ) -> Form<'a> {
        let event_metadata = self.event_metadata.then_some(metadata);
        match format {
            JsonForm::A2a10 => Form::V1(V1Event {
                task_id: self.task_id,
                context_id: self.context_id,
                status: V1Status {
                    state: self.state.as_str_name(),
                    message: self.message(metadata),
                    timestamp,
                },
                metadata: event_metadata,
            }),
            JsonForm::A2a03 => Form::V03(V03Event {
                kind: "status-update",
                task_id: self.task_id,
                context_id: self.context_id,
                status: V03Status {
                    state: v03_state(self.state),
                    message: V03Message {
                        kind: "message",
                        message_id: &self.message_id,
                        context_id: self.context_id,
                        task_id: self.task_id,
                        role: "agent",
                        parts: [V03Part {
                            kind: "text",
                            text: self.text,
                        }],
                        metadata,
                    },
                    timestamp,
                },
                is_final: false,
                metadata: event_metadata,
            }),
        }
    }
}

/// The event in one of its JSON forms (serialised as the form itself).
#[derive(Serialize)]
#[serde(untagged)]
enum Form<'a> {
    V1(V1Event<'a>),
    V03(V03Event<'a>),
}

/// A2A 0.3's name for a state.
pub fn v03_state(state: TaskState) -> &'static str {
    match state {
        TaskState::Unspecified => "unknown",
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "input-required",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "auth-required",
    }
}

#[derive(Serialize)]
struct Metadata<'a> {
    command: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    task_ref: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct V1Event<'a> {
    task_id: &'a str,
    context_id: &'a str,
    status: V1Status<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata<'a>>,
}

#[derive(Serialize)]
struct V1Status<'a> {
    state: &'a str,
    message: V1Message<'a>,
    timestamp: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct V1Message<'a> {
    message_id: &'a str,
    context_id: &'a str,
    task_id: &'a str,
    role: &'a str,
    parts: [V1Part<'a>; 1],
    metadata: &'a Metadata<'a>,
}

#[derive(Serialize)]
struct V1Part<'a> {
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct V03Event<'a> {
    kind: &'a str,
    task_id: &'a str,
    context_id: &'a str,
    status: V03Status<'a>,
    #[serde(rename = "final")]
    is_final: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata<'a>>,
}

#[derive(Serialize)]
struct V03Status<'a> {
    state: &'a str,
    message: V03Message<'a>,
    timestamp: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct V03Message<'a> {
    kind: &'a str,
    message_id: &'a str,
    context_id: &'a str,
    task_id: &'a str,
    role: &'a str,
    parts: [V03Part<'a>; 1],
    metadata: &'a Metadata<'a>,
}

#[derive(Serialize)]
struct V03Part<'a> {
    kind: &'a str,
    text: &'a str,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The reply to `/model gpt-x` on an input-required task, as the A2A spec's wire
    /// example has it; the tests of the event's other forms start from it too.
    pub(crate) fn event(task_ref: Option<&str>) -> ReplyEvent<'_> {
        ReplyEvent {
            task_id: "t-1",
            context_id: "c-1",
            state: TaskState::InputRequired,
            message_id: reply_message_id("m-7"),
            text: "Model set to gpt-x.",
            command: "model",
            task_ref,
            timestamp: Timestamp {
                seconds: 1_796_217_892,
                nanos: 807_000_000,
            },
            event_metadata: true,
        }
    }

    #[test]
    fn the_message_value_is_the_event_s_message() {
        for task_ref in [None, Some("t-2")] {
            let whole = event(task_ref).to_value(JsonForm::A2a10);
            assert_eq!(event(task_ref).message_value(), whole["status"]["message"]);
        }
    }

    #[test]
    fn the_value_is_the_text_read_back_in_every_form_and_key_order() {
        for format in [JsonForm::A2a10, JsonForm::A2a03] {
            for task_ref in [None, Some("t-2")] {
                let text = event(task_ref).to_json(format);
                let value = event(task_ref).to_value(format);
                assert_eq!(serde_json::to_string(&value).unwrap(), text);
            }
        }
    }

    #[test]
    fn a2a_1_0_json_matches_the_wire_example() {
        let json: serde_json::Value =
            serde_json::from_str(&event(None).to_json(JsonForm::A2a10)).unwrap();
        let want = serde_json::json!({
            "taskId": "t-1", "contextId": "c-1",
            "status": {
                "state": "TASK_STATE_INPUT_REQUIRED",
                "message": {
                    "messageId": "m-7:reply", "contextId": "c-1", "taskId": "t-1",
                    "role": "ROLE_AGENT", "parts": [{"text": "Model set to gpt-x."}],
                    "metadata": {"command": "model"}
                },
                "timestamp": "2026-12-02T13:24:52.807Z"
            },
            "metadata": {"command": "model"}
        });
        assert_eq!(json, want);
    }

    #[test]
    fn a2a_0_3_json_has_kinds_and_final() {
        let json: serde_json::Value =
            serde_json::from_str(&event(Some("t-1.1")).to_json(JsonForm::A2a03)).unwrap();
        assert_eq!(json["kind"], "status-update");
        assert_eq!(json["final"], false);
        assert_eq!(json["status"]["state"], "input-required");
        assert_eq!(json["status"]["message"]["kind"], "message");
        assert_eq!(json["status"]["message"]["role"], "agent");
        assert_eq!(json["status"]["message"]["parts"][0]["kind"], "text");
        assert_eq!(
            json["metadata"],
            serde_json::json!({"command": "model", "task_ref": "t-1.1"})
        );
    }

    #[test]
    fn event_metadata_only_when_asked() {
        let lean = ReplyEvent {
            event_metadata: false,
            ..event(Some("t-1.1"))
        };
        for form in [JsonForm::A2a10, JsonForm::A2a03] {
            let json: serde_json::Value = serde_json::from_str(&lean.to_json(form)).unwrap();
            assert!(json.get("metadata").is_none(), "{json}");
            assert_eq!(json["status"]["message"]["metadata"]["task_ref"], "t-1.1");
        }
    }

    #[test]
    fn forms() {
        let protobuf = EventForm::Protobuf as i32;
        let v1 = EventForm::A2a10Json as i32;
        let v03 = EventForm::A2a03Json as i32;
        let lean = Forms {
            protobuf: true,
            json: None,
        };
        assert_eq!(Forms::from_request(&[], 0).unwrap(), lean);
        assert_eq!(
            Forms::from_request(&[], EventJsonFormat::A2a03 as i32).unwrap(),
            Forms {
                protobuf: true,
                json: Some(JsonForm::A2a03)
            }
        );
        assert_eq!(
            Forms::from_request(&[v1], 0).unwrap(),
            Forms {
                protobuf: false,
                json: Some(JsonForm::A2a10)
            }
        );
        assert_eq!(Forms::from_request(&[protobuf, protobuf], 2).unwrap(), lean);
        let err = |forms: &[i32]| Forms::from_request(forms, 0).unwrap_err().to_string();
        assert!(err(&[v1, v03]).contains("event_forms[1]: at most one JSON form"));
        assert!(err(&[0]).contains("event_forms[0]: must not be EVENT_FORM_UNSPECIFIED"));
        assert!(err(&[protobuf, 9]).contains("event_forms[1]: 9 is not an EventForm value"));
        assert!(Forms::from_request(&[], 7).is_err());
    }
}
