//! The registry over real gRPC: order, override, conflicts, revisions, validation,
//! capacity and persistence across restarts.

mod common;

use a2a_commands::pb::{self, RegisterOutcome};
use common::*;
use tonic::Code;

const BUILTINS: [&str; 4] = ["model", "effort", "sub-task", "status"];

async fn no_builtins() -> TestServer {
    TestServer::start_with(|s| s.builtins.clear()).await
}

#[tokio::test]
async fn builtins_come_first_in_the_reference_order() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    assert_eq!(names(&mut client).await, BUILTINS);
    let listed = list(&mut client).await;
    let status = listed.commands[3].spec.clone().unwrap();
    assert_eq!(status.description, "Show this task's status");
    assert_eq!(status.argument_hint, "");
    assert_eq!(
        listed.commands[1].spec.clone().unwrap().argument_hint,
        "[low|medium|high]"
    );
    assert!(listed
        .commands
        .iter()
        .all(|c| c.body() == pb::CommandBody::Builtin));
}

#[tokio::test]
async fn registration_order_override_and_revisions() {
    let server = no_builtins().await;
    let mut client = server.client().await;
    let start = list(&mut client).await.revision;

    let a = register(&mut client, spec("alpha", "First", ""), false)
        .await
        .unwrap();
    assert_eq!(a.outcome(), RegisterOutcome::Created);
    assert_eq!(a.revision, start + 1);
    register(&mut client, spec("beta", "Second", "<x>"), false)
        .await
        .unwrap();
    register(&mut client, spec("gamma", "Third", ""), false)
        .await
        .unwrap();
    assert_eq!(names(&mut client).await, ["alpha", "beta", "gamma"]);

    // Identical re-registration: success, nothing changes, not even the revision.
    let same = register(&mut client, spec("beta", "Second", "<x>"), false)
        .await
        .unwrap();
    assert_eq!(same.outcome(), RegisterOutcome::Unchanged);
    assert_eq!(same.revision, start + 3);

    // A different spec under the same name is a conflict without override.
    let conflict = register(&mut client, spec("beta", "Changed", ""), false)
        .await
        .unwrap_err();
    assert_eq!(conflict.code(), Code::AlreadyExists);
    assert!(
        conflict.message().contains("/beta"),
        "{}",
        conflict.message()
    );

    // Override replaces the spec and keeps its place.
    let replaced = register(&mut client, spec("beta", "Changed", ""), true)
        .await
        .unwrap();
    assert_eq!(replaced.outcome(), RegisterOutcome::Replaced);
    assert_eq!(replaced.revision, start + 4);
    let listed = list(&mut client).await;
    assert_eq!(listed.revision, start + 4);
    assert_eq!(
        listed.commands[1].spec.clone().unwrap().description,
        "Changed"
    );
    assert_eq!(names(&mut client).await, ["alpha", "beta", "gamma"]);

    // Unregister, then re-register: the name goes to the end.
    let removed = client
        .unregister(pb::UnregisterRequest {
            name: "alpha".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(removed.revision, start + 5);
    assert_eq!(names(&mut client).await, ["beta", "gamma"]);
    register(&mut client, spec("alpha", "First", ""), false)
        .await
        .unwrap();
    assert_eq!(names(&mut client).await, ["beta", "gamma", "alpha"]);

    let missing = client
        .unregister(pb::UnregisterRequest {
            name: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    assert!(missing.message().contains("/nope"));
}

#[tokio::test]
async fn override_of_a_builtin_without_a_handler_keeps_its_place_and_its_body() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let r = register(&mut client, spec("effort", "Our effort", ""), true)
        .await
        .unwrap();
    assert_eq!(r.outcome(), RegisterOutcome::Replaced);
    let listed = list(&mut client).await;
    assert_eq!(names(&mut client).await, BUILTINS);
    assert_eq!(listed.commands[1].body(), pb::CommandBody::Builtin);
    assert_eq!(
        listed.commands[1].spec.as_ref().unwrap().description,
        "Our effort"
    );
    // Registering the same spec again with override (a gateway at every start) changes
    // nothing.
    let again = register(&mut client, spec("effort", "Our effort", ""), true)
        .await
        .unwrap();
    assert_eq!(again.outcome(), RegisterOutcome::Unchanged);
}

#[tokio::test]
async fn every_validation_rule_is_invalid_argument_naming_the_field() {
    let server = no_builtins().await;
    let mut client = server.client().await;
    let long_name = "a".repeat(65);
    let cases: Vec<(pb::CommandSpec, &str, &str)> = vec![
        (
            spec("Model", "d", ""),
            "spec.name",
            "must match [a-z][a-z0-9-]*",
        ),
        (spec("MODEL", "d", ""), "spec.name", "must match"),
        (spec("9lives", "d", ""), "spec.name", "must match"),
        (spec("", "d", ""), "spec.name", "must not be empty"),
        (
            spec(&long_name, "d", ""),
            "spec.name",
            "must be at most 64 characters",
        ),
        (spec("two words", "d", ""), "spec.name", "must match"),
        (spec("modèle", "d", ""), "spec.name", "must match"),
        (spec("a_b", "d", ""), "spec.name", "must match"),
        (
            spec("m", "line\nbreak", ""),
            "spec.description",
            "must be one line",
        ),
        (spec("m", "", ""), "spec.description", "must not be empty"),
        (
            spec("m", &"d".repeat(1025), ""),
            "spec.description",
            "must be at most 1024 characters",
        ),
        (
            spec("m", "bell\u{7}", ""),
            "spec.description",
            "must not contain control characters",
        ),
        (
            spec("m", "tab\there", ""),
            "spec.description",
            "must not contain control characters",
        ),
        (
            spec("m", "del\u{7f}", ""),
            "spec.description",
            "must not contain control characters",
        ),
        (
            spec("m", "c1\u{9b}", ""),
            "spec.description",
            "must not contain control characters",
        ),
        (
            spec("m", "d", &"h".repeat(257)),
            "spec.argument_hint",
            "must be at most 256 characters",
        ),
        (
            spec("m", "d", "a\rb"),
            "spec.argument_hint",
            "must be one line",
        ),
        (
            spec("m", "d", "esc\u{1b}[0m"),
            "spec.argument_hint",
            "must not contain control characters",
        ),
    ];
    for (bad, field, rule) in cases {
        let shown = format!("{bad:?}");
        let status = register(&mut client, bad, false).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{shown}");
        let want = format!("{field}: {rule}");
        assert!(
            status.message().starts_with(&want),
            "{shown}: {}",
            status.message()
        );
    }
    let missing = client
        .register(pb::RegisterRequest::default())
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::InvalidArgument);
    assert!(missing.message().starts_with("spec: "));
    let bad_unregister = client
        .unregister(pb::UnregisterRequest { name: "Bad".into() })
        .await
        .unwrap_err();
    assert_eq!(bad_unregister.code(), Code::InvalidArgument);
    assert!(bad_unregister.message().starts_with("name: "));

    // Limits are inclusive, and non-ASCII text counts in characters.
    let edge = spec(&"a".repeat(64), &"é".repeat(1024), &"…".repeat(256));
    register(&mut client, edge, false).await.unwrap();
    assert_eq!(
        list(&mut client).await.commands.len(),
        1,
        "nothing invalid was registered"
    );
}

#[tokio::test]
async fn capacity_is_resource_exhausted() {
    let server = TestServer::start_with(|s| {
        s.builtins.clear();
        s.registry.max_commands = 3;
    })
    .await;
    let mut client = server.client().await;
    for name in ["a", "b", "c"] {
        register(&mut client, spec(name, "d", ""), false)
            .await
            .unwrap();
    }
    let full = register(&mut client, spec("d", "d", ""), false)
        .await
        .unwrap_err();
    assert_eq!(full.code(), Code::ResourceExhausted);
    assert!(full.message().contains("at most") || full.message().contains("maximum"));
    // Replacing in place and identical re-registration still work when full.
    register(&mut client, spec("b", "new", ""), true)
        .await
        .unwrap();
    register(&mut client, spec("c", "d", ""), false)
        .await
        .unwrap();
}

#[tokio::test]
async fn restart_restores_specs_order_and_revision() {
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    register(&mut client, spec("deploy", "Deploy it", "<env>"), false)
        .await
        .unwrap();
    register(&mut client, spec("review", "Review it", ""), false)
        .await
        .unwrap();
    register(&mut client, spec("model", "Our model", ""), true)
        .await
        .unwrap();
    client
        .unregister(pb::UnregisterRequest {
            name: "effort".into(),
        })
        .await
        .unwrap();
    let before = list(&mut client).await;

    server.restart().await;
    let mut client = server.client().await;
    let after = list(&mut client).await;
    // The unregistered built-in comes back (built-ins are configuration); the built-ins
    // take, within the places they hold, the order a fresh replica gives them.
    assert_eq!(
        names(&mut client).await,
        ["model", "effort", "sub-task", "deploy", "review", "status"]
    );
    let by_name = |list: &pb::ListSpecsResponse, name: &str| {
        list.commands
            .iter()
            .find(|c| c.spec.as_ref().unwrap().name == name)
            .cloned()
    };
    for name in ["model", "sub-task", "status", "deploy", "review"] {
        assert_eq!(by_name(&after, name), by_name(&before, name), "{name}");
    }
    assert_eq!(after.revision, before.revision + 1);
    let model = &after.commands[0];
    assert_eq!(model.spec.as_ref().unwrap().description, "Our model");
    assert_eq!(
        model.body(),
        pb::CommandBody::Builtin,
        "the override survived"
    );

    // With nothing changed in between, a restart keeps the revision exactly.
    server.restart().await;
    let mut client = server.client().await;
    let again = list(&mut client).await;
    assert_eq!(again.commands, after.commands);
    assert_eq!(again.revision, after.revision);
}

#[tokio::test]
async fn disabling_builtins_keeps_only_those_replaced_by_a_handler() {
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    let handler = pb::HandlerBinding {
        endpoint: Some(pb::handler_binding::Endpoint::Grpc(
            "http://127.0.0.1:9".into(),
        )),
        timeout_ms: 0,
        ..Default::default()
    };
    client
        .register(pb::RegisterRequest {
            spec: Some(spec("status", "Our status", "")),
            r#override: true,
            handler: Some(handler),
            ..Default::default()
        })
        .await
        .unwrap();
    // Overridden without a handler: still the built-in's body, so it goes with it.
    register(&mut client, spec("effort", "Our effort", ""), true)
        .await
        .unwrap();
    server.settings.builtins = vec![a2a_commands::rules::builtins::Builtin::Model];
    server.restart().await;
    let mut client = server.client().await;
    assert_eq!(names(&mut client).await, ["model", "status"]);
}
