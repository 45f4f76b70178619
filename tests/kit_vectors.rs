//! The gateway kits' shared vectors (`docs/vectors/*.json`) checked against the
//! service's own rules, so that what both kits run is what the service does
//! (`docs/kit-contract.md`):
//!
//! - every message's classification, command syntax, and that the kits' pre-check never
//!   skips a message the service would call a command (also over random text);
//! - the whitespace the contract writes out is exactly the service's;
//! - every snapshot a kit builds is accepted, and answers `/status` as the vector says;
//! - every task data a kit writes matches `docs/kit-task-data.schema.json`;
//! - the fallback replies have the reference's failure form, for command syntax only;
//! - a command-created task (input-required, awaiting the next message) shows so.

use a2a_commands::pb::{self, part::Content, OrdinaryReason, ParticipantRole, SubState, TaskState};
use a2a_commands::registry::Snapshot;
use a2a_commands::rules::body::Body;
use a2a_commands::rules::builtins::{Builtin, Catalogue};
use a2a_commands::rules::execute::{execute, Execution};
use a2a_commands::rules::parse::{classify, parse_command_text, single_text, Classification};
use a2a_commands::rules::task::Task;
use a2a_commands::rules::text::is_py_whitespace;
use proptest::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs")
}

fn vectors(name: &str) -> Value {
    let path = docs().join("vectors").join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn cases(name: &str) -> Vec<Value> {
    vectors(name)["cases"].as_array().unwrap().clone()
}

/// The kits' pre-check (contract, section 1): one text part, `/`, then `a`-`z`.
fn may_be_command(message: &pb::Message) -> bool {
    single_text(message).is_some_and(may_be_command_text)
}

fn may_be_command_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 2 && bytes[0] == b'/' && bytes[1].is_ascii_lowercase()
}

/// An A2A 1.0 JSON part as ours (only the content's kind matters to the rules).
fn part(json: &Value) -> pb::Part {
    let content = if let Some(text) = json.get("text") {
        Content::Text(text.as_str().unwrap().to_owned())
    } else if json.get("raw").is_some() {
        Content::Raw(b"/model".to_vec())
    } else if let Some(url) = json.get("url") {
        Content::Url(url.as_str().unwrap().to_owned())
    } else {
        assert!(json.get("data").is_some(), "{json}");
        Content::Data(prost_types::Value::default())
    };
    pb::Part {
        content: Some(content),
        ..Default::default()
    }
}

fn message(parts: &Value) -> pb::Message {
    pb::Message {
        message_id: "m-1".into(),
        role: pb::Role::User as i32,
        parts: parts.as_array().unwrap().iter().map(part).collect(),
        ..Default::default()
    }
}

fn builtins() -> Snapshot {
    Snapshot::detached(Builtin::ALL.map(|b| (b.spec(), Body::Builtin { builtin: b })))
}

/// The service's default catalogue, which the vectors' replies assume.
fn catalogue() -> Catalogue {
    Catalogue {
        default_model: "gpt-x".into(),
        models: vec!["gpt-x".into(), "gpt-x-mini".into()],
        default_effort: None,
    }
}

/// Classify's answer as the vectors spell it (protobuf JSON).
fn service_json(classification: &Classification<'_, '_>) -> Value {
    match classification {
        Classification::Command {
            name, arguments, ..
        } => serde_json::json!({"command": {"name": name, "arguments": arguments}}),
        Classification::Ordinary { reason, name } => {
            let mut ordinary = serde_json::json!({"reason": reason.as_str_name()});
            if let Some(name) = name {
                ordinary["name"] = Value::from(*name);
            }
            serde_json::json!({"ordinary": ordinary})
        }
    }
}

#[test]
fn messages_are_classified_as_the_vectors_say_and_the_pre_check_skips_no_command() {
    let snapshot = builtins();
    let registered = vectors("messages")["registered"].clone();
    let names: Vec<&str> = snapshot.commands().map(|c| c.spec.name.as_str()).collect();
    assert_eq!(registered, serde_json::json!(names));
    for case in cases("messages") {
        let message = message(&case["parts"]);
        let classification = classify(&message, &snapshot);
        // The service, as the kits check it over gRPC too.
        let mut wanted = case["service"].clone();
        if let Some(command) = wanted.get_mut("command") {
            command
                .as_object_mut()
                .unwrap()
                .entry("arguments")
                .or_insert("".into());
        }
        assert_eq!(service_json(&classification), wanted, "{case}");
        // Command syntax, as the kits' fallback reads it.
        let syntax = single_text(&message).and_then(parse_command_text);
        let wanted_syntax = match &case["syntax"] {
            Value::Null => None,
            s => Some((
                s["name"].as_str().unwrap(),
                s["arguments"].as_str().unwrap(),
            )),
        };
        assert_eq!(syntax, wanted_syntax, "{case}");
        // The pre-check: as the vector says, and never false for command syntax.
        assert_eq!(
            may_be_command(&message),
            case["mayBeCommand"].as_bool().unwrap(),
            "{case}"
        );
        let syntactic = !matches!(
            classification,
            Classification::Ordinary {
                reason: OrdinaryReason::NotSingleTextPart | OrdinaryReason::NotCommandSyntax,
                ..
            }
        );
        assert!(!syntactic || may_be_command(&message), "skipped: {case}");
    }
}

proptest! {
    #[test]
    fn the_pre_check_never_skips_command_syntax(
        text in "(/|[a-zA-Z0-9 \t\n\u{1c}\u{85}\u{a0}\u{feff}\u{3000}-]|.){0,12}"
    ) {
        if parse_command_text(&text).is_some() {
            prop_assert!(may_be_command_text(&text), "{:?}", text);
        }
    }
}

/// The code points the contract writes out as whitespace (section 2).
fn contract_whitespace() -> Vec<u32> {
    let contract = std::fs::read_to_string(docs().join("kit-contract.md")).unwrap();
    let section = contract.split("## 2. Command syntax").nth(1).unwrap();
    let block = section.split("```").nth(1).unwrap();
    let code = |s: &str| u32::from_str_radix(s.trim().trim_start_matches("U+"), 16).unwrap();
    let mut points = Vec::new();
    for item in block.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.split_once('–') {
            Some((from, to)) => points.extend(code(from)..=code(to)),
            None => points.push(code(item)),
        }
    }
    points
}

#[test]
fn the_contract_whitespace_is_the_services() {
    let written = contract_whitespace();
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        assert_eq!(
            is_py_whitespace(c),
            written.contains(&(c as u32)),
            "U+{:04X}",
            c as u32
        );
    }
}

fn state(name: &Value) -> i32 {
    TaskState::from_str_name(name.as_str().unwrap()).unwrap() as i32
}

/// A `TaskSnapshot` from its protobuf JSON, as the vectors spell it.
fn snapshot_from_json(json: &Value) -> pb::TaskSnapshot {
    let text = |key: &str| {
        json.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let count = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64).unwrap_or(0) as u32;
    let settings = &json["settings"];
    pb::TaskSnapshot {
        id: text("id"),
        context_id: text("contextId"),
        name: text("name"),
        state: state(&json["state"]),
        sub_state: json.get("subState").map_or(0, |s| {
            SubState::from_str_name(s.as_str().unwrap()).unwrap() as i32
        }),
        settings: Some(pb::TaskSettings {
            model: settings
                .get("model")
                .map(|m| m.as_str().unwrap().to_owned()),
            effort: settings
                .get("effort")
                .map(|e| e.as_str().unwrap().to_owned()),
        }),
        plan: json.get("plan").map(|p| pb::PlanProgress {
            steps_done: count(p, "stepsDone"),
            steps_total: count(p, "stepsTotal"),
        }),
        sub_tasks: json
            .get("subTasks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| pb::SubTaskSnapshot {
                id: s["id"].as_str().unwrap().to_owned(),
                state: state(&s["state"]),
            })
            .collect(),
    }
}

/// The `/status` reply the service gives for `snapshot`.
fn status_reply(snapshot: &pb::TaskSnapshot) -> String {
    let task = Task::from_proto(snapshot).unwrap();
    let message = message(&serde_json::json!([{"text": "/status"}]));
    match execute(
        single_text(&message),
        &task,
        ParticipantRole::Assignee,
        &builtins(),
        &catalogue(),
    )
    .unwrap()
    {
        Execution::Command { reply, .. } => reply.text,
        other => panic!("/status did not run: {other:?}"),
    }
}

#[test]
fn every_snapshot_a_kit_builds_is_accepted_and_shows_as_the_vectors_say() {
    for case in cases("task-data") {
        let snapshot = snapshot_from_json(&case["snapshot"]);
        assert_eq!(
            status_reply(&snapshot),
            case["status"].as_str().unwrap(),
            "{case}"
        );
    }
}

#[test]
fn a_command_created_task_shows_input_required_awaiting_the_next_message() {
    let scenario = &vectors("lifecycle")["scenarios"][0]["steps"];
    let created = &scenario[0];
    assert_eq!(created["task"], "new");
    assert_eq!(created["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(created["taskData"]["subState"], "awaiting-next-message");
    // What a kit sends with the next command on that task.
    let snapshot = pb::TaskSnapshot {
        id: "t-1".into(),
        state: TaskState::InputRequired as i32,
        sub_state: SubState::AwaitingNextMessage as i32,
        settings: Some(pb::TaskSettings {
            model: Some("gpt-x-mini".into()),
            effort: None,
        }),
        ..Default::default()
    };
    let status = &scenario[1];
    assert_eq!(status["send"], "/status");
    assert_eq!(
        status_reply(&snapshot),
        status["reply"].as_str().unwrap().replace("{taskId}", "t-1")
    );
}

#[test]
fn every_task_data_a_kit_writes_matches_the_schema() {
    let path = docs().join("kit-task-data.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut written: Vec<Value> = cases("task-data")
        .iter()
        .map(|c| c["data"].clone())
        .collect();
    for case in cases("changes") {
        written.push(case["data"].clone());
        if let Some(sub_task) = case.get("subTask") {
            written.push(sub_task["metadata"]["a2a-commands"].clone());
        }
    }
    for scenario in vectors("lifecycle")["scenarios"].as_array().unwrap() {
        for step in scenario["steps"].as_array().unwrap() {
            if let Some(data) = step.get("taskData") {
                written.push(data.clone());
            }
        }
    }
    for data in &written {
        assert!(validator.is_valid(data), "{data}");
    }
    // The old spellings are read, never written.
    for old in [
        serde_json::json!({"sub_tasks": ["t-1.1"]}),
        serde_json::json!({"sub_state": "awaiting-answer"}),
        serde_json::json!({"parent": "t-1"}),
        serde_json::json!({"plan": {"steps_done": 1, "steps_total": 2}}),
    ] {
        assert!(!validator.is_valid(&old), "{old}");
    }
}

#[test]
fn fallback_replies_have_the_reference_failure_form_for_command_syntax_only() {
    let template = vectors("fallback")["text"].as_str().unwrap().to_owned();
    assert!(template.starts_with("/{name} failed: "));
    for case in cases("fallback") {
        let message = message(&case["message"]["parts"]);
        let syntax = single_text(&message).and_then(parse_command_text);
        match (&case["reply"], syntax) {
            (Value::Null, None) => {}
            (reply, Some((name, _))) => {
                let text = reply["status"]["message"]["parts"][0]["text"]
                    .as_str()
                    .unwrap();
                assert_eq!(text, template.replace("{name}", name), "{case}");
                assert_eq!(reply["status"]["message"]["metadata"]["command"], name);
                assert_eq!(reply["status"]["state"], case["task"]["status"]["state"]);
            }
            (reply, None) => panic!("a reply without command syntax: {reply}"),
        }
    }
}

/// `vectors/deadlines.json` (every kit runs its cases): the default covers the longest
/// handler the sidecar allows by default plus the margin, so no handler is cut short, and
/// the vector's handlers keep within that limit.
#[test]
fn execute_deadlines_cover_every_handler_timeout_the_sidecar_allows() {
    let vector = vectors("deadlines");
    let ms = |key: &str| vector[key].as_u64().unwrap();
    let policy = a2a_commands::rules::body::HandlerPolicy::default();
    assert!(ms("default_ms") >= u64::from(policy.max_timeout_ms) + ms("margin_ms"));
    assert!(ms("no_handler_ms") < ms("default_ms"));
    for command in vector["registry"]["commands"].as_array().unwrap() {
        let timeout = command["handler"]["timeoutMs"]
            .as_u64()
            .or(command["prompt"]["mcp"]["timeoutMs"].as_u64());
        if let Some(timeout) = timeout {
            assert!(timeout <= u64::from(policy.max_timeout_ms), "{command}");
        }
    }
}
