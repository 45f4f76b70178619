//! The card params and extension entry that ListSpecs renders, validated against the
//! schema the project ships (and, where present, the published copy in shared/).

mod common;

use a2a_commands::rules::card::{EXTENSION_URI, PARAMS_SCHEMA};
use common::*;
use serde_json::{json, Value};

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(PARAMS_SCHEMA).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_valid(params: &Value) {
    let validator = validator();
    let errors: Vec<String> = validator
        .iter_errors(params)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{params}: {errors:?}");
}

#[test]
fn shipped_schema_is_the_published_one() {
    let published = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/spec/commands-extension-v1.schema.json");
    match std::fs::read_to_string(&published) {
        Ok(text) => {
            let published: Value = serde_json::from_str(&text).unwrap();
            let shipped: Value = serde_json::from_str(PARAMS_SCHEMA).unwrap();
            assert_eq!(shipped, published);
        }
        Err(_) => eprintln!(
            "skipped: {} is not beside this checkout",
            published.display()
        ),
    }
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    // Guards the tests below: a validator that accepted everything would prove nothing.
    let validator = validator();
    assert!(!validator.is_valid(&json!({"commands": [{"name": "x"}]})));
    assert!(!validator
        .is_valid(&json!({"commands": [{"name": "x", "description": "d", "handler": {}}]})));
    assert!(!validator.is_valid(&json!({"commands": [], "extra": 1})));
}

async fn card_for(specs: &[(&str, &str, &str)]) -> (Value, Value, Vec<String>) {
    let server = TestServer::start_with(|s| s.builtins.clear()).await;
    let mut client = server.client().await;
    for (name, description, hint) in specs {
        register(&mut client, spec(name, description, hint), false)
            .await
            .unwrap();
    }
    let listed = list(&mut client).await;
    let params: Value = serde_json::from_str(&listed.card_params_json).unwrap();
    let extension: Value = serde_json::from_str(&listed.card_extension_json).unwrap();
    let order = listed
        .commands
        .into_iter()
        .map(|c| c.spec.unwrap().name)
        .collect();
    (params, extension, order)
}

fn check_extension(extension: &Value, params: &Value) {
    assert_eq!(extension["uri"], EXTENSION_URI);
    assert_eq!(extension["required"], false);
    assert!(extension["description"]
        .as_str()
        .is_some_and(|d| !d.is_empty()));
    assert_eq!(&extension["params"], params);
    let keys: Vec<&str> = extension
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["uri", "description", "required", "params"]);
}

#[tokio::test]
async fn empty_registry() {
    let (params, extension, _) = card_for(&[]).await;
    assert_eq!(params, json!({"commands": []}));
    assert_valid(&params);
    check_extension(&extension, &params);
}

#[tokio::test]
async fn one_command_has_all_three_keys() {
    let (params, extension, _) = card_for(&[("status", "Show this task's status", "")]).await;
    assert_eq!(
        params,
        json!({"commands": [{"name": "status", "description": "Show this task's status", "argument_hint": ""}]})
    );
    assert_valid(&params);
    check_extension(&extension, &params);
}

#[tokio::test]
async fn many_commands_in_registration_order() {
    let specs: Vec<(String, String, String)> = (0..200)
        .map(|i| {
            (
                format!("cmd-{:03}", 199 - i),
                format!("Command «{i}» \"quoted\""),
                format!("[<arg{i}>]"),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str, &str)> = specs
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    let (params, extension, order) = card_for(&borrowed).await;
    assert_valid(&params);
    check_extension(&extension, &params);
    let on_card: Vec<&str> = params["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(on_card, order);
    assert_eq!(on_card.first(), Some(&"cmd-199"));
    assert_eq!(
        params["commands"][0]["description"],
        "Command «0» \"quoted\""
    );
}

#[tokio::test]
async fn protobuf_extension_matches_the_json() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    assert!(
        list(&mut client).await.card_extension.is_none(),
        "only on request"
    );
    let listed = client
        .list_specs(a2a_commands::pb::ListSpecsRequest {
            include_card_extension: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let ext = listed.card_extension.unwrap();
    assert_eq!(ext.uri, EXTENSION_URI);
    assert!(!ext.required);
    let commands = &ext.params.unwrap().fields["commands"];
    let Some(prost_types::value::Kind::ListValue(list)) = &commands.kind else {
        panic!("commands is a list")
    };
    assert_eq!(list.values.len(), 4);
}
