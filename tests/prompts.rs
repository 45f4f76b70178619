//! Prompt commands over real gRPC: registered with a template or from the commands file,
//! Execute answers `prompt` with the expansion `docs/vectors/prompts.json` gives (the
//! same file every kit runs), the role rules and hidden apply as to every command, and
//! the pure rules the sidecar keeps to itself (splitting, an MCP prompt's arguments and
//! result) are checked against the same file.

mod common;

use a2a_commands::pb::{self, execute_response::Result as Answer, ParticipantRole};
use a2a_commands::rules::prompt::{
    map_arguments, mcp_expansion, split_arguments, PromptArgument, PromptPart, MAX_EXPANSION_BYTES,
    MAX_PLACEHOLDERS, MAX_TEMPLATE_BYTES,
};
use common::{execute_request, list, spec, TestServer};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

fn vectors() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/vectors/prompts.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn list_of<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key].as_array().unwrap()
}

fn template_binding(template: &str) -> pb::PromptBinding {
    pb::PromptBinding {
        source: Some(pb::prompt_binding::Source::Template(template.to_owned())),
    }
}

async fn register_prompt(
    client: &mut common::Client,
    name: &str,
    template: &str,
) -> Result<pb::RegisterResponse, tonic::Status> {
    client
        .register(pb::RegisterRequest {
            spec: Some(spec(name, "A prompt", "")),
            r#override: true,
            prompt: Some(template_binding(template)),
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner())
}

/// Execute as a gateway that runs prompt commands (as every kit does) calls it.
async fn execute(client: &mut common::Client, text: &str, role: ParticipantRole) -> Answer {
    client
        .execute(pb::ExecuteRequest {
            accepts_prompt: true,
            ..execute_request("m-1", text, role)
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
}

#[test]
fn the_limits_are_the_vectors() {
    let limits = &vectors()["limits"];
    assert_eq!(limits["templateBytes"], MAX_TEMPLATE_BYTES);
    assert_eq!(limits["placeholders"], MAX_PLACEHOLDERS);
    assert_eq!(limits["expansionBytes"], MAX_EXPANSION_BYTES);
}

#[tokio::test]
async fn templates_expand_as_the_vectors_say() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    for case in list_of(&vectors(), "templates") {
        let note = case["note"].as_str().unwrap();
        let template = case["template"].as_str().unwrap();
        let registered = register_prompt(&mut client, "p", template).await;
        if let Some(error) = case.get("error") {
            let status = registered.expect_err(note);
            assert_eq!(status.code(), tonic::Code::InvalidArgument, "{note}");
            assert!(
                status.message().starts_with("prompt.template: "),
                "{note}: {}",
                status.message()
            );
            assert!(
                status.message().contains(error.as_str().unwrap()),
                "{note}: {}",
                status.message()
            );
            continue;
        }
        registered.unwrap_or_else(|e| panic!("{note}: {e}"));
        let arguments = case["arguments"].as_str().unwrap();
        let text = if arguments.is_empty() {
            "/p".to_owned()
        } else {
            format!("/p {arguments}")
        };
        match (
            execute(&mut client, &text, ParticipantRole::Assignee).await,
            case.get("failure"),
        ) {
            (Answer::Prompt(expansion), None) => {
                assert_eq!(
                    expansion.text,
                    case["expansion"].as_str().unwrap(),
                    "{note}"
                );
                let command = expansion.command.unwrap();
                assert_eq!(
                    (command.name.as_str(), command.arguments.as_str()),
                    ("p", arguments),
                    "{note}"
                );
            }
            (Answer::Command(outcome), Some(failure)) => {
                assert_eq!(outcome.outcome(), pb::Outcome::Failed, "{note}");
                assert_eq!(
                    outcome.reply,
                    format!("/p failed: {}", failure.as_str().unwrap()),
                    "{note}"
                );
                assert!(outcome.changes.unwrap_or_default() == pb::Changes::default());
            }
            (other, _) => panic!("{note}: {other:?}"),
        }
    }
}

#[test]
fn splitting_and_mcp_arguments_are_the_vectors() {
    let v = vectors();
    for case in list_of(&v, "split") {
        let words: Vec<String> = serde_json::from_value(case["words"].clone()).unwrap();
        assert_eq!(
            split_arguments(case["text"].as_str().unwrap()),
            words,
            "{case}"
        );
    }
    for case in list_of(&v, "mcpArguments") {
        let declared: Vec<PromptArgument> =
            serde_json::from_value(case["declared"].clone()).unwrap();
        let got = map_arguments("review", &declared, case["text"].as_str().unwrap());
        match case.get("usage") {
            Some(usage) => assert_eq!(got, Err(usage.as_str().unwrap().to_owned()), "{case}"),
            None => {
                let want: serde_json::Map<String, Value> =
                    serde_json::from_value(case["arguments"].clone()).unwrap();
                let got: serde_json::Map<String, Value> = got
                    .unwrap()
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                assert_eq!(got, want, "{case}");
            }
        }
    }
}

#[test]
fn mcp_results_are_the_vectors() {
    for case in list_of(&vectors(), "mcpResults") {
        let declared: Vec<PromptArgument> =
            serde_json::from_value(case["declared"].clone()).unwrap();
        let parts: Vec<PromptPart> = case["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let kind = m["content"]["type"].as_str().unwrap();
                match (m["role"].as_str().unwrap(), kind) {
                    ("user", "text") => {
                        PromptPart::UserText(m["content"]["text"].as_str().unwrap().to_owned())
                    }
                    ("assistant", _) => PromptPart::Other("an assistant message".into()),
                    (_, "image") => PromptPart::Other("an image".into()),
                    (_, "resource") => PromptPart::Other("a resource".into()),
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        let got = mcp_expansion(&parts, &declared, case["arguments"].as_str().unwrap());
        match case.get("failure") {
            Some(failure) => assert_eq!(got, Err(failure.as_str().unwrap().to_owned()), "{case}"),
            None => assert_eq!(
                got,
                Ok(case["expansion"].as_str().unwrap().to_owned()),
                "{case}"
            ),
        }
    }
}

#[tokio::test]
async fn a_prompt_command_is_listed_kept_and_ruled_like_any_command() {
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    let registered = client
        .register(pb::RegisterRequest {
            spec: Some(spec("review", "Review code", "<file>")),
            prompt: Some(template_binding("Review $1 for bugs.")),
            allowed_roles: vec![ParticipantRole::Assignee.into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(registered.outcome(), pb::RegisterOutcome::Created);

    // Listed with its prompt, and on the card like any other command.
    let listed = list(&mut client).await;
    let review = listed
        .commands
        .iter()
        .find(|c| c.spec.as_ref().unwrap().name == "review")
        .unwrap();
    assert_eq!(review.body(), pb::CommandBody::Prompt);
    assert_eq!(review.prompt, Some(template_binding("Review $1 for bugs.")));
    assert!(
        listed.card_params_json.contains("\"review\""),
        "{}",
        listed.card_params_json
    );

    // The role rules apply before any expansion.
    match execute(&mut client, "/review a.rs", ParticipantRole::Watcher).await {
        Answer::Command(outcome) => {
            assert_eq!(outcome.outcome(), pb::Outcome::Refused);
            assert_eq!(outcome.reply, "refused: a watcher may not run /review");
        }
        other => panic!("{other:?}"),
    }
    match execute(&mut client, "/review a.rs", ParticipantRole::Assignee).await {
        Answer::Prompt(expansion) => assert_eq!(expansion.text, "Review a.rs for bugs."),
        other => panic!("{other:?}"),
    }

    // A handler and a prompt together are refused.
    let both = client
        .register(pb::RegisterRequest {
            spec: Some(spec("both", "Both", "")),
            prompt: Some(template_binding("x")),
            handler: Some(pb::HandlerBinding {
                endpoint: Some(pb::handler_binding::Endpoint::Grpc(
                    "http://127.0.0.1:1".into(),
                )),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(both.code(), tonic::Code::InvalidArgument);
    assert!(
        both.message().contains("a handler or a prompt, never both"),
        "{}",
        both.message()
    );

    // Kept across a restart.
    server.restart().await;
    let mut client = server.client().await;
    match execute(&mut client, "/review b.rs", ParticipantRole::Assignee).await {
        Answer::Prompt(expansion) => assert_eq!(expansion.text, "Review b.rs for bugs."),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_prompt_command_from_the_commands_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("commands.json");
    std::fs::write(
        &file,
        r#"{"commands": [
            {"name": "summarize", "description": "Summarize", "prompt": "Summarize {{args}} in three lines."},
            {"name": "explain", "description": "Explain", "prompt": {"mcp": "http://127.0.0.1:9/mcp", "name": "explain"}, "hidden": true}
        ]}"#,
    )
    .unwrap();
    let server = TestServer::start_with(|s| {
        s.commands_file = Some(file.clone());
        s.commands_file_poll = Duration::from_millis(20);
    })
    .await;
    let mut client = server.client().await;
    match execute(
        &mut client,
        "/summarize the thread",
        ParticipantRole::Watcher,
    )
    .await
    {
        Answer::Prompt(expansion) => {
            assert_eq!(expansion.text, "Summarize the thread in three lines.")
        }
        other => panic!("{other:?}"),
    }
    let listed = list(&mut client).await;
    let explain = listed
        .commands
        .iter()
        .find(|c| c.spec.as_ref().unwrap().name == "explain")
        .unwrap();
    match explain.prompt.as_ref().and_then(|p| p.source.clone()) {
        Some(pb::prompt_binding::Source::Mcp(mcp)) => {
            assert_eq!(
                (mcp.url.as_str(), mcp.name.as_str()),
                ("http://127.0.0.1:9/mcp", "explain")
            );
            assert_eq!(mcp.timeout_ms, 5000, "shown resolved");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        !listed.card_params_json.contains("explain"),
        "hidden stays off the card"
    );
    // An unreachable MCP server fails the command, in the failure form.
    match execute(&mut client, "/explain x", ParticipantRole::Assignee).await {
        Answer::Command(outcome) => {
            assert_eq!(outcome.outcome(), pb::Outcome::Failed);
            assert!(
                outcome.reply.starts_with("/explain failed: "),
                "{}",
                outcome.reply
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_bad_prompt_in_the_commands_file_is_named() {
    use a2a_commands::registry::commands_file::check;
    use a2a_commands::rules::body::HandlerPolicy;
    let policy = HandlerPolicy::default();
    let file = |prompt: &str| {
        format!(r#"{{"commands": [{{"name": "a", "description": "A", "prompt": {prompt}}}]}}"#)
    };
    let problems = check(
        &file(r#"{"mcp": "http://127.0.0.1:1/", "nam": "x"}"#),
        &policy,
    );
    assert!(problems[0].contains("unknown field `nam`"), "{problems:?}");
    let problems = check(&file("5"), &policy);
    assert!(
        problems[0].contains("must be a template (a string) or an MCP prompt"),
        "{problems:?}"
    );
    let problems = check(&file(r#""Hi \u202e""#), &policy);
    assert!(
        problems[0].starts_with("commands[0].prompt.template: "),
        "{problems:?}"
    );
    assert!(check(
        &file(r#"{"mcp": "http://127.0.0.1:1/", "name": "x"}"#),
        &policy
    )
    .is_empty());
}

/// A gateway whose kit predates prompt commands sends no `accepts_prompt`: it is never
/// answered `prompt` (it would send the typed text to the model as ordinary text), but a
/// failure reply it understands, and an MCP prompt's server is not even asked.
#[tokio::test]
async fn a_caller_that_cannot_take_prompts_gets_a_failure_reply_instead() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    register_prompt(&mut client, "fix", "Fix issue #$1.")
        .await
        .unwrap();
    let old = client
        .execute(execute_request("m-1", "/fix 42", ParticipantRole::Assignee))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    let Answer::Command(outcome) = old else {
        panic!("a prompt answered to a caller that cannot take one: {old:?}")
    };
    assert_eq!(outcome.outcome(), pb::Outcome::Failed);
    assert_eq!(
        outcome.reply,
        "/fix failed: this gateway cannot run prompt commands; update its a2a-commands kit"
    );
    // The same command, for a caller that takes prompts.
    assert!(matches!(
        execute(&mut client, "/fix 42", ParticipantRole::Assignee).await,
        Answer::Prompt(p) if p.text == "Fix issue #42."
    ));
}
