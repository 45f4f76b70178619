//! Execute over real gRPC: every reply, refusal and role rule of the reference, the
//! event's shape, and bad requests.

mod common;

use a2a_commands::pb::{
    self, execute_response::Result as Executed, handler_binding::Endpoint, EventForm,
    EventJsonFormat, OrdinaryReason, Outcome, ParticipantRole as Role, SubState, TaskState,
};
use a2a_commands::rules::builtins::Catalogue;
use common::handlers::{self, binding, register_with, start_grpc_handler};
use common::*;
use prost_types::value::Kind;
use tonic::Code;

const ROLES_THAT_MAY_CHANGE: [Role; 3] = [Role::Assignee, Role::Reporter, Role::Admin];
const ALL_STATES: [TaskState; 8] = [
    TaskState::Submitted,
    TaskState::Working,
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::InputRequired,
    TaskState::Rejected,
    TaskState::AuthRequired,
];

fn task() -> pb::TaskSnapshot {
    pb::TaskSnapshot {
        id: "t-1".into(),
        context_id: "c-1".into(),
        name: "Write the docs".into(),
        state: TaskState::Working.into(),
        ..Default::default()
    }
}

fn with_sub_tasks(n: usize) -> pb::TaskSnapshot {
    let mut t = task();
    t.sub_tasks = (1..=n)
        .map(|i| pb::SubTaskSnapshot {
            id: format!("t-1.{i}"),
            state: TaskState::Completed.into(),
        })
        .collect();
    t
}

fn with_settings(model: Option<&str>, effort: Option<&str>) -> pb::TaskSnapshot {
    let mut t = task();
    t.settings = Some(pb::TaskSettings {
        model: model.map(Into::into),
        effort: effort.map(Into::into),
    });
    t
}

fn request(text: &str, task: pb::TaskSnapshot, role: Role) -> pb::ExecuteRequest {
    pb::ExecuteRequest {
        message: Some(text_message("m-7", text)),
        task: Some(task),
        sender: Some(pb::Sender {
            id: "user-1".into(),
            role: role.into(),
        }),
        // Every form, and the metadata on the event too, so each test sees everything.
        event_forms: vec![EventForm::Protobuf.into(), EventForm::A2a10Json.into()],
        event_metadata: true,
        attempt: 1,
        ..Default::default()
    }
}

async fn call(client: &mut Client, req: pb::ExecuteRequest) -> pb::ExecuteResponse {
    client.execute(req).await.unwrap().into_inner()
}

async fn run(
    client: &mut Client,
    text: &str,
    task: pb::TaskSnapshot,
    role: Role,
) -> pb::CommandOutcome {
    match call(client, request(text, task, role))
        .await
        .result
        .unwrap()
    {
        Executed::Command(outcome) => outcome,
        other => panic!("{text:?} was not a command: {other:?}"),
    }
}

fn metadata(event: &pb::TaskStatusUpdateEvent) -> Vec<(String, String)> {
    let fields = &event.metadata.as_ref().unwrap().fields;
    fields
        .iter()
        .map(|(k, v)| match &v.kind {
            Some(Kind::StringValue(s)) => (k.clone(), s.clone()),
            other => panic!("{k}: {other:?}"),
        })
        .collect()
}

/// Checks reply text, outcome, and that the event carries exactly the reply.
fn check(outcome: &pb::CommandOutcome, want_outcome: Outcome, want_reply: &str) {
    assert_eq!(outcome.reply, want_reply);
    assert_eq!(outcome.outcome(), want_outcome, "{want_reply}");
    let message = outcome
        .event
        .as_ref()
        .unwrap()
        .status
        .as_ref()
        .unwrap()
        .message
        .as_ref()
        .unwrap();
    assert_eq!(message.parts.len(), 1);
    assert_eq!(
        message.parts[0].content,
        Some(pb::part::Content::Text(want_reply.into()))
    );
    if want_outcome != Outcome::Ok {
        assert_eq!(
            outcome.changes,
            Some(pb::Changes::default()),
            "{want_reply}: changes nothing"
        );
    }
}

fn changed_settings(outcome: &pb::CommandOutcome) -> pb::TaskSettings {
    outcome.changes.clone().unwrap().settings.unwrap()
}

#[tokio::test]
async fn model_shows_sets_and_refuses() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let selectable = "Selectable: gpt-x, gpt-x-mini";
    for role in ROLES_THAT_MAY_CHANGE.into_iter().chain([Role::Watcher]) {
        let shown = run(&mut c, "/model", task(), role).await;
        check(
            &shown,
            Outcome::Ok,
            &format!("Model: gpt-x (default)\n{selectable}"),
        );
        assert_eq!(shown.changes, Some(pb::Changes::default()));
        let chosen = run(
            &mut c,
            "/model",
            with_settings(Some("gpt-x-mini"), None),
            role,
        )
        .await;
        check(
            &chosen,
            Outcome::Ok,
            &format!("Model: gpt-x-mini\n{selectable}"),
        );
        // Whitespace-only arguments are no arguments.
        let blank = run(&mut c, "/model   \n", task(), role).await;
        check(
            &blank,
            Outcome::Ok,
            &format!("Model: gpt-x (default)\n{selectable}"),
        );
    }
    for role in ROLES_THAT_MAY_CHANGE {
        let set = run(&mut c, "/model gpt-x-mini", task(), role).await;
        check(&set, Outcome::Ok, "Model set to gpt-x-mini.");
        assert_eq!(
            changed_settings(&set),
            pb::TaskSettings {
                model: Some("gpt-x-mini".into()),
                effort: None
            }
        );
        assert!(set.changes.unwrap().sub_task.is_none());

        let refused = run(&mut c, "/model gpt-y", task(), role).await;
        check(
            &refused,
            Outcome::Refused,
            &format!("refused: not a selectable model. {selectable}"),
        );
        assert!(
            !refused.reply.contains("gpt-y"),
            "does not echo the refused value"
        );
        // Compared exactly: case matters.
        let upper = run(&mut c, "/model GPT-X", task(), role).await;
        check(
            &upper,
            Outcome::Refused,
            &format!("refused: not a selectable model. {selectable}"),
        );
    }
}

#[tokio::test]
async fn effort_shows_sets_and_refuses() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let accepted = "Accepted: low, medium, high";
    for role in ROLES_THAT_MAY_CHANGE.into_iter().chain([Role::Watcher]) {
        let shown = run(&mut c, "/effort", task(), role).await;
        check(
            &shown,
            Outcome::Ok,
            &format!("Effort: provider default\n{accepted}"),
        );
        let chosen = run(&mut c, "/effort", with_settings(None, Some("low")), role).await;
        check(&chosen, Outcome::Ok, &format!("Effort: low\n{accepted}"));
    }
    for role in ROLES_THAT_MAY_CHANGE {
        for effort in ["low", "medium", "high"] {
            let set = run(&mut c, &format!("/effort {effort}"), task(), role).await;
            check(&set, Outcome::Ok, &format!("Effort set to {effort}."));
            assert_eq!(
                changed_settings(&set),
                pb::TaskSettings {
                    model: None,
                    effort: Some(effort.into())
                }
            );
        }
        for bad in ["extreme", "HIGH", "low medium"] {
            let refused = run(&mut c, &format!("/effort {bad}"), task(), role).await;
            check(
                &refused,
                Outcome::Refused,
                &format!("refused: not an accepted effort. {accepted}"),
            );
        }
    }
}

#[tokio::test]
async fn effort_with_a_configured_default() {
    let server = TestServer::start_with(|s| {
        s.catalogue = Catalogue {
            default_model: "b".into(),
            models: vec!["a".into(), "b".into(), "c".into()],
            default_effort: Some("medium".into()),
        }
    })
    .await;
    let mut c = server.client().await;
    let shown = run(&mut c, "/effort", task(), Role::Assignee).await;
    check(
        &shown,
        Outcome::Ok,
        "Effort: medium (default)\nAccepted: low, medium, high",
    );
    let model = run(&mut c, "/model", task(), Role::Assignee).await;
    check(
        &model,
        Outcome::Ok,
        "Model: b (default)\nSelectable: a, b, c",
    );
    let refused = run(&mut c, "/model gpt-x", task(), Role::Assignee).await;
    check(
        &refused,
        Outcome::Refused,
        "refused: not a selectable model. Selectable: a, b, c",
    );
}

#[tokio::test]
async fn sub_task_creates_the_next_linked_sub_task() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for role in ROLES_THAT_MAY_CHANGE {
        for existing in [0, 1, 4] {
            let out = run(
                &mut c,
                "/sub-task  Draft the API section\nwith examples",
                with_sub_tasks(existing),
                role,
            )
            .await;
            let id = format!("t-1.{}", existing + 1);
            check(
                &out,
                Outcome::Ok,
                &format!("Starting a sub-task.\nCreated sub-task {id}."),
            );
            let sub_task = out.changes.clone().unwrap().sub_task.unwrap();
            assert_eq!(sub_task.id, id);
            assert_eq!(sub_task.goal, "Draft the API section\nwith examples");
            assert_eq!(sub_task.name, "Draft the API section");
            assert!(out.changes.clone().unwrap().settings.is_none());
            let event = out.event.unwrap();
            let want = vec![
                ("command".to_owned(), "sub-task".to_owned()),
                ("task_ref".to_owned(), id.clone()),
            ];
            assert_eq!(metadata(&event), want);
            let message = event.status.unwrap().message.unwrap();
            assert_eq!(
                message.metadata, event.metadata,
                "the message carries the same metadata"
            );
        }
        for empty in ["/sub-task", "/sub-task   ", "/sub-task\n\t"] {
            let usage = run(&mut c, empty, task(), role).await;
            check(&usage, Outcome::Refused, "Usage: /sub-task <description>");
            assert_eq!(
                metadata(&usage.event.unwrap()),
                [("command".to_owned(), "sub-task".to_owned())]
            );
        }
    }
}

#[tokio::test]
async fn status_lists_everything() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let plain = run(&mut c, "/status", task(), Role::Watcher).await;
    check(
        &plain,
        Outcome::Ok,
        "Task t-1 · Write the docs\nState: WORKING\nModel: gpt-x (default)\nEffort: provider default\nPlan: none\nSub-tasks: none",
    );

    let mut full = with_sub_tasks(2);
    full.sub_tasks[1].state = TaskState::InputRequired.into();
    full.state = TaskState::InputRequired.into();
    full.sub_state = SubState::AwaitingNextMessage.into();
    full.settings = Some(pb::TaskSettings {
        model: Some("gpt-x-mini".into()),
        effort: Some("high".into()),
    });
    full.plan = Some(pb::PlanProgress {
        steps_done: 2,
        steps_total: 5,
    });
    let out = run(&mut c, "/status", full.clone(), Role::Assignee).await;
    check(
        &out,
        Outcome::Ok,
        "Task t-1 · Write the docs\nState: INPUT_REQUIRED · awaiting-next-message\nModel: gpt-x-mini\nEffort: high\nPlan: 2/5 steps done\nSub-tasks:\n- t-1.1 · COMPLETED\n- t-1.2 · INPUT_REQUIRED",
    );
    full.sub_state = SubState::AwaitingAnswer.into();
    full.plan = Some(pb::PlanProgress {
        steps_done: 0,
        steps_total: 0,
    });
    let out = run(&mut c, "/status ignored arguments", full, Role::Reporter).await;
    assert!(
        out.reply
            .contains("State: INPUT_REQUIRED · awaiting-answer\n"),
        "{}",
        out.reply
    );
    // A plan of zero steps is no plan, as in the reference (it tests steps_total).
    assert!(out.reply.contains("\nPlan: none\n"), "{}", out.reply);
}

#[tokio::test]
async fn empty_settings_are_not_chosen_and_unknown_efforts_are_refused() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let out = run(
        &mut c,
        "/status",
        with_settings(Some(""), Some("")),
        Role::Assignee,
    )
    .await;
    assert!(
        out.reply
            .contains("\nModel: gpt-x (default)\nEffort: provider default\n"),
        "{}",
        out.reply
    );
    let out = run(
        &mut c,
        "/model",
        with_settings(Some(""), None),
        Role::Assignee,
    )
    .await;
    assert!(
        out.reply.starts_with("Model: gpt-x (default)\n"),
        "{}",
        out.reply
    );
    let out = run(
        &mut c,
        "/effort",
        with_settings(None, Some("")),
        Role::Assignee,
    )
    .await;
    assert!(
        out.reply.starts_with("Effort: provider default\n"),
        "{}",
        out.reply
    );
    let status = c
        .execute(request(
            "/status",
            with_settings(None, Some("extreme")),
            Role::Assignee,
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status
            .message()
            .starts_with("task.settings.effort: must be one of low, medium, high"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn sub_task_names_are_the_references() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let long = "x".repeat(70);
    let cases = [
        (
            "/sub-task Draft the API\rthen review".to_owned(),
            "Draft the API",
        ),
        ("/sub-task Draft\u{1E}Review".to_owned(), "Draft"),
        ("/sub-task Draft\u{2029}Review".to_owned(), "Draft"),
        ("/sub-task Draft\u{85}Review".to_owned(), "Draft"),
        (format!("/sub-task {long}"), &long[..60]),
    ];
    for (text, want) in cases {
        let out = run(&mut c, &text, task(), Role::Assignee).await;
        let sub_task = out.changes.unwrap().sub_task.unwrap();
        assert_eq!(sub_task.name, want, "{text:?}");
    }
}

#[tokio::test]
async fn role_rules() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    register(&mut c, spec("deploy", "Deploy", "<env>"), false)
        .await
        .unwrap();
    let no_role = "refused: the sender has no role on this task";
    for text in [
        "/model",
        "/model gpt-x",
        "/effort",
        "/effort low",
        "/sub-task x",
        "/sub-task",
        "/status",
        "/deploy prod",
    ] {
        check(
            &run(&mut c, text, task(), Role::None).await,
            Outcome::Refused,
            no_role,
        );
        // No sender, or no role said, is the gateway's mistake and is said so.
        for sender in [None, Some(pb::Sender::default())] {
            let mut req = request(text, task(), Role::None);
            req.sender = sender;
            let status = c.execute(req).await.unwrap_err();
            assert_eq!(status.code(), Code::InvalidArgument, "{text}");
            assert!(
                status.message().starts_with("sender.role: must be set"),
                "{}",
                status.message()
            );
        }
    }
    // An ordinary message needs no role.
    let mut req = request("hello", task(), Role::None);
    req.sender = None;
    assert!(matches!(
        call(&mut c, req).await.result,
        Some(Executed::Ordinary(_))
    ));
    let watcher_changes = [
        ("/model gpt-x", "model"),
        ("/model nonsense", "model"),
        ("/effort high", "effort"),
        ("/effort nonsense", "effort"),
        ("/sub-task do it", "sub-task"),
        ("/sub-task", "sub-task"),
    ];
    for (text, name) in watcher_changes {
        let out = run(&mut c, text, task(), Role::Watcher).await;
        check(
            &out,
            Outcome::Refused,
            &format!("refused: a watcher may not change the task with /{name}"),
        );
    }
    // A watcher may read, and may run commands that have no built-in body.
    let out = run(&mut c, "/deploy prod", task(), Role::Watcher).await;
    check(&out, Outcome::NoHandler, "command /deploy has no handler");
}

/// The role rules stay with a built-in's name: a handler that replaces it is not called
/// for a change the sender may not make.
#[tokio::test]
async fn role_rules_run_by_name_before_any_handler() {
    let (addr, handler) = start_grpc_handler().await;
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let grpc = binding(Endpoint::Grpc(format!("http://{addr}")), 1_000);
    for name in ["model", "effort", "sub-task"] {
        register_with(&mut client, name, grpc.clone(), true)
            .await
            .unwrap();
    }
    for (text, name) in [
        ("/model gpt-x", "model"),
        ("/effort  high ", "effort"),
        ("/sub-task", "sub-task"),
        ("/sub-task reply", "sub-task"),
    ] {
        let out = handlers::execute(&mut client, text, Role::Watcher).await;
        assert_eq!(
            (out.outcome(), out.reply.as_str()),
            (
                Outcome::Refused,
                format!("refused: a watcher may not change the task with /{name}").as_str()
            ),
            "{text}"
        );
        let out = handlers::execute(&mut client, text, Role::None).await;
        assert_eq!(out.reply, "refused: the sender has no role on this task");
    }
    assert!(
        handler.seen.lock().unwrap().is_empty(),
        "no refused command reached the handler"
    );
    // Reading is allowed: `/model` alone reaches the operator's body.
    let out = handlers::execute(&mut client, "/model", Role::Watcher).await;
    assert_eq!(
        (out.outcome(), out.reply.as_str()),
        (Outcome::Ok, "unexpected ")
    );
    assert_eq!(handler.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn commands_without_a_handler_change_nothing() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    register(&mut c, spec("deploy", "Deploy", "<env>"), false)
        .await
        .unwrap();
    // An override without a handler keeps the built-in's body (see
    // handlers.rs, override_without_a_handler_keeps_the_body).
    register(&mut c, spec("status", "Our own status", ""), true)
        .await
        .unwrap();
    let out = run(&mut c, "/status", task(), Role::Admin).await;
    assert_eq!(out.outcome(), Outcome::Ok, "{}", out.reply);
    for (text, name) in [("/deploy prod", "deploy")] {
        let out = run(&mut c, text, task(), Role::Admin).await;
        check(
            &out,
            Outcome::NoHandler,
            &format!("command /{name} has no handler"),
        );
        assert_eq!(
            metadata(&out.event.unwrap()),
            [("command".to_owned(), name.to_owned())]
        );
    }
}

#[tokio::test]
async fn the_event_repeats_the_state_and_carries_the_reply() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for state in ALL_STATES {
        let mut t = task();
        t.state = state.into();
        let out = run(&mut c, "/model", t, Role::Assignee).await;
        let event = out.event.unwrap();
        assert_eq!(event.task_id, "t-1");
        assert_eq!(event.context_id, "c-1");
        let status = event.status.clone().unwrap();
        assert_eq!(status.state(), state);
        let message = status.message.unwrap();
        assert_eq!(message.role(), pb::Role::Agent);
        assert_eq!(message.message_id, "m-7:reply");
        assert_eq!(
            (message.task_id.as_str(), message.context_id.as_str()),
            ("t-1", "c-1")
        );
        assert!(status.timestamp.is_some());
        assert_eq!(
            metadata(&event),
            [("command".to_owned(), "model".to_owned())]
        );

        let json: serde_json::Value = serde_json::from_str(&out.event_json).unwrap();
        assert_eq!(json["status"]["state"], state.as_str_name());
        assert_eq!(json["metadata"], serde_json::json!({"command": "model"}));
        assert_eq!(
            json["status"]["message"]["metadata"],
            serde_json::json!({"command": "model"})
        );
        assert_eq!(json["status"]["message"]["parts"][0]["text"], out.reply);
    }
}

#[tokio::test]
async fn a2a_0_3_json_on_request() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut req = request("/sub-task go", task(), Role::Assignee);
    req.task.as_mut().unwrap().state = TaskState::InputRequired.into();
    req.event_forms.clear();
    #[allow(deprecated)]
    {
        req.event_json_format = EventJsonFormat::A2a03.into();
    }
    let Executed::Command(out) = call(&mut c, req).await.result.unwrap() else {
        panic!()
    };
    let json: serde_json::Value = serde_json::from_str(&out.event_json).unwrap();
    assert_eq!(json["kind"], "status-update");
    assert_eq!(json["final"], false);
    assert_eq!(json["taskId"], "t-1");
    assert_eq!(json["status"]["state"], "input-required");
    let message = &json["status"]["message"];
    assert_eq!(message["kind"], "message");
    assert_eq!(message["role"], "agent");
    assert_eq!(message["messageId"], "m-7:reply");
    assert_eq!(
        message["parts"],
        serde_json::json!([{"kind": "text", "text": "Starting a sub-task.\nCreated sub-task t-1.1."}])
    );
    assert_eq!(
        json["metadata"],
        serde_json::json!({"command": "sub-task", "task_ref": "t-1.1"})
    );
    assert!(json["status"]["timestamp"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn ordinary_messages_come_back_ordinary() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut two_parts = request("/model", task(), Role::Assignee);
    two_parts
        .message
        .as_mut()
        .unwrap()
        .parts
        .push(text_part("more"));
    let cases = [
        (two_parts, OrdinaryReason::NotSingleTextPart, ""),
        (
            request("hello /model", task(), Role::Assignee),
            OrdinaryReason::NotCommandSyntax,
            "",
        ),
        (
            request("/deploy prod", task(), Role::Assignee),
            OrdinaryReason::NotRegistered,
            "deploy",
        ),
        (
            request("/deploy prod", task(), Role::None),
            OrdinaryReason::NotRegistered,
            "deploy",
        ),
    ];
    for (req, reason, name) in cases {
        let response = call(&mut c, req).await;
        let want = pb::Ordinary {
            reason: reason.into(),
            name: name.into(),
        };
        assert_eq!(response.result, Some(Executed::Ordinary(want)));
    }
}

#[tokio::test]
async fn the_same_request_twice_gives_the_same_answer_but_the_timestamp() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let strip = |mut out: pb::CommandOutcome| {
        let status = out.event.as_mut().unwrap().status.as_mut().unwrap();
        let ts = status.timestamp.take().unwrap();
        let json: serde_json::Value = serde_json::from_str(&out.event_json).unwrap();
        let mut json = json;
        json["status"]["timestamp"] = serde_json::Value::Null;
        out.event_json = json.to_string();
        (out, ts)
    };
    for text in ["/sub-task again", "/model gpt-x", "/status"] {
        let (first, _) = strip(run(&mut c, text, with_sub_tasks(3), Role::Assignee).await);
        let (second, _) = strip(run(&mut c, text, with_sub_tasks(3), Role::Assignee).await);
        assert_eq!(first, second, "{text}");
    }
}

#[tokio::test]
async fn bad_requests_name_the_field() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let base = || request("/status", task(), Role::Assignee);
    type Mutate = fn(&mut pb::ExecuteRequest);
    let cases: Vec<(Mutate, &str)> = vec![
        (|r| r.message = None, "message: "),
        (
            |r| r.message.as_mut().unwrap().message_id.clear(),
            "message.message_id: ",
        ),
        (|r| r.task = None, "task: "),
        (|r| r.task.as_mut().unwrap().id.clear(), "task.id: "),
        (|r| r.task.as_mut().unwrap().state = 0, "task.state: "),
        (
            |r| r.task.as_mut().unwrap().state = 99,
            "task.state: 99 is not a TaskState",
        ),
        (
            |r| r.task.as_mut().unwrap().sub_state = -1,
            "task.sub_state: ",
        ),
        (
            |r| {
                r.task.as_mut().unwrap().sub_tasks = vec![pb::SubTaskSnapshot {
                    id: "x".into(),
                    state: 42,
                }]
            },
            "task.sub_tasks[0].state: ",
        ),
        (|r| r.sender.as_mut().unwrap().role = 17, "sender.role: "),
        (
            |r| r.event_forms = vec![EventForm::A2a10Json.into(), EventForm::A2a03Json.into()],
            "event_forms[1]: at most one JSON form",
        ),
        (|r| r.event_forms = vec![0], "event_forms[0]: "),
        (
            |r| {
                r.event_forms.clear();
                #[allow(deprecated)]
                {
                    r.event_json_format = 5;
                }
            },
            "event_json_format: ",
        ),
    ];
    for (mutate, prefix) in cases {
        let mut req = base();
        mutate(&mut req);
        let status = c.execute(req).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{prefix}");
        assert!(
            status.message().starts_with(prefix),
            "{prefix}: {}",
            status.message()
        );
    }
    // The server is still serving after all of that.
    let out = run(&mut c, "/status", task(), Role::Assignee).await;
    assert_eq!(out.outcome(), Outcome::Ok);
}

#[tokio::test]
async fn builtins_can_be_turned_off() {
    let server = TestServer::start_with(|s| s.builtins.clear()).await;
    let mut c = server.client().await;
    let response = call(&mut c, request("/model gpt-x", task(), Role::Assignee)).await;
    let want = pb::Ordinary {
        reason: OrdinaryReason::NotRegistered.into(),
        name: "model".into(),
    };
    assert_eq!(response.result, Some(Executed::Ordinary(want)));
}

#[tokio::test]
async fn the_answer_has_only_the_forms_asked_for() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let outcome = |response: pb::ExecuteResponse| match response.result.unwrap() {
        Executed::Command(outcome) => outcome,
        other => panic!("{other:?}"),
    };
    // The lean default: the protobuf event, metadata on its message only.
    let mut req = request("/sub-task x", task(), Role::Assignee);
    req.event_forms.clear();
    req.event_metadata = false;
    let lean = outcome(call(&mut c, req.clone()).await);
    assert!(lean.event_json.is_empty());
    let event = lean.event.unwrap();
    assert_eq!(
        event.metadata, None,
        "the reference puts metadata on the message only"
    );
    let message = event.status.unwrap().message.unwrap();
    let fields = &message.metadata.unwrap().fields;
    assert_eq!(fields.len(), 2, "command and task_ref: {fields:?}");

    // JSON alone.
    req.event_forms = vec![EventForm::A2a03Json.into()];
    let json_only = outcome(call(&mut c, req.clone()).await);
    assert!(json_only.event.is_none());
    let json: serde_json::Value = serde_json::from_str(&json_only.event_json).unwrap();
    assert_eq!(json["kind"], "status-update");
    assert!(json.get("metadata").is_none());
    assert_eq!(json["status"]["message"]["metadata"]["command"], "sub-task");

    // A caller of the deprecated field gets what it got before: both forms.
    req.event_forms.clear();
    #[allow(deprecated)]
    {
        req.event_json_format = EventJsonFormat::A2a10.into();
    }
    let legacy = outcome(call(&mut c, req).await);
    assert!(legacy.event.is_some());
    let json: serde_json::Value = serde_json::from_str(&legacy.event_json).unwrap();
    assert_eq!(json["status"]["state"], "TASK_STATE_WORKING");
}
