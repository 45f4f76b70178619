//! Request decoding plus classification and execution, on arbitrary bytes: whatever a
//! gateway sends, decoding either fails cleanly or the read path answers without
//! panicking, classification agrees with the parsing rule, and a borrowed view of an
//! Execute or Complete request (`views`) is only ever made of bytes prost decodes to the
//! same values.

#![no_main]

use std::sync::OnceLock;

use a2a_commands::rules::builtins::{Builtin, Catalogue};
use a2a_commands::rules::parse::{classify, parse_command_text, single_text, Classification};
use a2a_commands::rules::{execute::execute, task::Task};
use a2a_commands::pb;
use a2a_commands::views::{CompleteView, ExecuteView};
use a2a_commands::{registry::Snapshot, rules::body::Body};
use a2a_commands::rules::spec::CommandSpec;
use libfuzzer_sys::fuzz_target;
use prost::Message as _;

fn snapshot() -> &'static Snapshot {
    static SNAPSHOT: OnceLock<Snapshot> = OnceLock::new();
    SNAPSHOT.get_or_init(|| {
        let builtins = Builtin::ALL.map(|b| (b.spec(), Body::Builtin { builtin: b }));
        let others = ["a", "deploy", "x-1"]
            .map(|n| (CommandSpec::new("", n, "fuzz", "").unwrap(), Body::None));
        Snapshot::detached(builtins.into_iter().chain(others))
    })
}

fn catalogue() -> Catalogue {
    Catalogue {
        default_model: "m".into(),
        models: vec!["m".into(), "n".into()],
        default_effort: None,
    }
}

fuzz_target!(|data: &[u8]| {
    if let Some(view) = ExecuteView::parse(data) {
        let decoded = pb::ExecuteRequest::decode(data).expect("a viewed request decodes");
        assert_eq!(view, ExecuteView::of(&decoded));
    }
    if let Some(view) = CompleteView::parse(data) {
        let decoded = pb::CompleteRequest::decode(data).expect("a viewed request decodes");
        assert_eq!(view, CompleteView::of(&decoded));
    }
    if let Ok(request) = pb::ClassifyRequest::decode(data) {
        if let Some(message) = &request.message {
            let parsed = single_text(message).and_then(parse_command_text);
            match classify(message, snapshot()) {
                Classification::Command {
                    name, arguments, ..
                } => {
                    assert_eq!(parsed, Some((name, arguments)));
                }
                Classification::Ordinary { .. } => {
                    assert!(parsed.is_none_or(|(name, _)| snapshot().get(name).is_none()));
                }
            }
        }
    }
    if let Ok(request) = pb::ExecuteRequest::decode(data) {
        if let (Some(message), Some(task)) = (&request.message, &request.task) {
            if let Ok(task) = Task::from_proto(task) {
                let role = request
                    .sender
                    .as_ref()
                    .and_then(|s| pb::ParticipantRole::try_from(s.role).ok())
                    .unwrap_or(pb::ParticipantRole::None);
                let _ = execute(single_text(message), &task, role, snapshot(), &catalogue());
            }
        }
    }
});
