//! The agent card's extension entry, rendered from the registry.
//!
//! `params` is exactly the published schema's `CommandsExtensionParams`: `commands`, each
//! with the three keys `name`, `description` and `argument_hint`, always all present, in
//! registration order. Nothing else (bodies, handlers) ever reaches the card.

use serde::Serialize;

use crate::rules::spec::CommandSpec;

/// The Commands extension v1's URI.
pub const EXTENSION_URI: &str =
    "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1";

/// The description the extension entry carries.
pub const EXTENSION_DESCRIPTION: &str =
    "Slash commands: a message whose only part is the text /<name> <arguments>, with <name> \
     listed here, runs that command instead of reaching the model.";

/// The published card-params schema, shipped with the service.
pub const PARAMS_SCHEMA: &str = include_str!("../../docs/commands-extension-v1.schema.json");

/// The rendered card entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    /// `{"commands": [...]}` as compact JSON.
    pub params_json: String,
    /// The whole `AgentExtension` entry as compact JSON.
    pub extension_json: String,
    /// The params as a JSON value, for building protobuf `Struct`s.
    pub params: serde_json::Value,
}

#[derive(Serialize)]
struct Params<'a> {
    commands: Vec<&'a CommandSpec>,
}

#[derive(Serialize)]
struct Extension<'a> {
    uri: &'a str,
    description: &'a str,
    required: bool,
    params: &'a serde_json::Value,
}

impl Card {
    /// Renders the card entry for `specs`, in the order given.
    pub fn render<'a>(specs: impl Iterator<Item = &'a CommandSpec>) -> Self {
        let params = serde_json::to_value(Params {
            commands: specs.collect(),
        })
        .expect("specs always serialize");
        let extension = Extension {
            uri: EXTENSION_URI,
            description: EXTENSION_DESCRIPTION,
            required: false,
            params: &params,
        };
        Self {
            params_json: params.to_string(),
            extension_json: serde_json::to_string(&extension).expect("always serializes"),
            params,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_keys_always_present() {
        let spec = CommandSpec::new("", "status", "Show this task's status", "").unwrap();
        let card = Card::render([&spec].into_iter());
        assert_eq!(
            card.params_json,
            r#"{"commands":[{"name":"status","description":"Show this task's status","argument_hint":""}]}"#
        );
        assert!(card.extension_json.contains(r#""required":false"#));
        assert_eq!(
            Card::render(std::iter::empty()).params_json,
            r#"{"commands":[]}"#
        );
    }
}
