//! Classify over real gRPC: every row of the reference table, message shapes, and a
//! property test against the reference regular expression.

mod common;

use a2a_commands::pb::{self, classify_response::Result as Classified, OrdinaryReason};
use a2a_commands::rules::parse::parse_command_text;
use common::*;
use proptest::prelude::*;
use std::sync::LazyLock;

/// The reference rule, written as the reference writes it: `^/([a-z][a-z0-9-]*)(?:\s+(.*))?$`
/// with dot matching newline, where `\s` is Python's (Unicode White_Space plus
/// U+001C..U+001F). Python's `$` also matches before a final newline, which the
/// greedy `(.*)` makes irrelevant here.
fn reference(text: &str) -> Option<(String, String)> {
    static RULE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"(?s)\A/([a-z][a-z0-9-]*)(?:[\s\x1C-\x1F]+(.*))?\z").unwrap()
    });
    let caps = RULE.captures(text)?;
    Some((
        caps[1].to_owned(),
        caps.get(2).map_or("", |m| m.as_str()).to_owned(),
    ))
}

fn command(name: &str, arguments: &str) -> Classified {
    Classified::Command(pb::Command {
        name: name.into(),
        arguments: arguments.into(),
    })
}

fn ordinary(reason: OrdinaryReason, name: &str) -> Classified {
    Classified::Ordinary(pb::Ordinary {
        reason: reason.into(),
        name: name.into(),
    })
}

#[tokio::test]
async fn every_row_of_the_reference_table() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let syntax = |_: ()| ordinary(OrdinaryReason::NotCommandSyntax, "");
    let rows: Vec<(&str, Classified)> = vec![
        ("/model", command("model", "")),
        ("/model gpt-x", command("model", "gpt-x")),
        ("/model   gpt-x  ", command("model", "gpt-x  ")),
        (
            "/sub-task line one\nline two",
            command("sub-task", "line one\nline two"),
        ),
        ("/model\tgpt-x", command("model", "gpt-x")),
        ("/model\n", command("model", "")),
        (" /model", syntax(())),
        ("/Model", syntax(())),
        ("/MODEL", syntax(())),
        ("/model!", syntax(())),
        ("/model:x", syntax(())),
        ("/", syntax(())),
        ("/ model", syntax(())),
        ("//model", syntax(())),
        ("/9lives", syntax(())),
        (
            "/unknown-name args",
            ordinary(OrdinaryReason::NotRegistered, "unknown-name"),
        ),
        ("model", syntax(())),
        // Whitespace is Python's: the information separators count, zero-width space
        // does not.
        ("/model\u{1C}gpt-x", command("model", "gpt-x")),
        ("/model\u{2003}gpt-x", command("model", "gpt-x")),
        ("/model\u{200B}gpt-x", syntax(())),
        ("", syntax(())),
    ];
    for (i, (text, want)) in rows.into_iter().enumerate() {
        let got = classify(&mut client, text_message(&format!("m-{i}"), text)).await;
        assert_eq!(got, want, "{text:?}");
    }
}

#[tokio::test]
async fn only_a_single_text_part_can_be_a_command() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let not_single = ordinary(OrdinaryReason::NotSingleTextPart, "");
    let data = pb::Part {
        content: Some(pb::part::Content::Data(prost_types::Value {
            kind: Some(prost_types::value::Kind::StringValue("/model".into())),
        })),
        ..Default::default()
    };
    let file = pb::Part {
        content: Some(pb::part::Content::Url("https://example.com/model".into())),
        filename: "model".into(),
        ..Default::default()
    };
    let raw = pb::Part {
        content: Some(pb::part::Content::Raw(b"/model".to_vec())),
        ..Default::default()
    };
    let shapes: Vec<Vec<pb::Part>> = vec![
        vec![],
        vec![text_part("/model"), text_part("/status")],
        vec![text_part("/model"), data.clone()],
        vec![data],
        vec![file],
        vec![raw],
        vec![pb::Part::default()],
    ];
    for parts in shapes {
        let shown = format!("{parts:?}");
        let mut message = text_message("m", "");
        message.parts = parts;
        assert_eq!(classify(&mut client, message).await, not_single, "{shown}");
    }
    // Part metadata, media type and message metadata do not matter.
    let mut message = text_message("m", "/status");
    message.parts[0].media_type = "text/plain".into();
    assert_eq!(classify(&mut client, message).await, command("status", ""));

    let missing = client
        .classify(pb::ClassifyRequest { message: None })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), tonic::Code::InvalidArgument);
    assert!(missing.message().starts_with("message: "));
}

#[tokio::test]
async fn registration_decides_and_revision_is_reported() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let message = text_message("m", "/deploy prod");
    assert_eq!(
        classify(&mut client, message.clone()).await,
        ordinary(OrdinaryReason::NotRegistered, "deploy")
    );
    let r = register(&mut client, spec("deploy", "Deploy", "<env>"), false)
        .await
        .unwrap();
    let response = client
        .classify(pb::ClassifyRequest {
            message: Some(message),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.result.unwrap(), command("deploy", "prod"));
    assert_eq!(response.revision, r.revision);
}

/// Text that is likely to be near the command syntax: slashes, name characters, every
/// kind of whitespace, separators, upper case, non-ASCII.
fn near_command_text() -> impl Strategy<Value = String> {
    let alphabet = prop::sample::select(vec![
        '/', 'a', 'm', 'z', '0', '9', '-', 'M', '_', '!', ' ', '\t', '\n', '\r', '\u{0B}',
        '\u{0C}', '\u{1C}', '\u{1D}', '\u{1E}', '\u{1F}', '\u{85}', '\u{A0}', '\u{1680}',
        '\u{2000}', '\u{200A}', '\u{200B}', '\u{2028}', '\u{202F}', '\u{3000}', '\u{FEFF}', 'é',
        '€', '\0',
    ]);
    prop::collection::vec(alphabet, 0..24).prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn parser_matches_the_reference_rule(text in near_command_text()) {
        let ours = parse_command_text(&text).map(|(n, a)| (n.to_owned(), a.to_owned()));
        prop_assert_eq!(ours, reference(&text));
    }

    #[test]
    fn parser_matches_the_reference_rule_on_any_string(text in "/?\\PC{0,16}") {
        let ours = parse_command_text(&text).map(|(n, a)| (n.to_owned(), a.to_owned()));
        prop_assert_eq!(ours, reference(&text));
    }
}

#[test]
fn property_over_grpc() {
    // Fewer cases, each through a real server: the wire path agrees with the rule too.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(TestServer::start_with(|s| s.builtins.clear()));
    let mut client = runtime.block_on(server.client());
    for name in ["m", "model", "a-9", "z0"] {
        runtime
            .block_on(register(&mut client, spec(name, "d", ""), false))
            .unwrap();
    }
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(300));
    runner
        .run(&near_command_text(), |text| {
            let mut client = client.clone();
            let got = runtime.block_on(classify(&mut client, text_message("m", &text)));
            let want = match reference(&text) {
                Some((name, args)) if ["m", "model", "a-9", "z0"].contains(&name.as_str()) => {
                    command(&name, &args)
                }
                Some((name, _)) => ordinary(OrdinaryReason::NotRegistered, &name),
                None => ordinary(OrdinaryReason::NotCommandSyntax, ""),
            };
            prop_assert_eq!(got, want);
            Ok(())
        })
        .unwrap();
}
