//! Conversions between our types and protobuf: the registry as ListSpecs sends it, the
//! time a reply is made, and JSON values as protobuf `Struct`s. (Classify's, Execute's
//! and Complete's answers are written straight to bytes by `answers`.)

use crate::pb;
use crate::registry::{Snapshot, Source};
use crate::rules::body::Body;
use crate::rules::card::{EXTENSION_DESCRIPTION, EXTENSION_URI};
use crate::rules::spec::CommandSpec;
use crate::rules::structs::to_struct;

fn spec_to_proto(spec: &CommandSpec) -> pb::CommandSpec {
    pb::CommandSpec {
        name: spec.name.to_string(),
        description: spec.description.clone(),
        argument_hint: spec.argument_hint.clone(),
    }
}

/// The registry at one snapshot, as ListSpecs and WatchSpecs send it; `with_struct`
/// adds the card entry as a protobuf message.
pub fn list_response(snapshot: &Snapshot, with_struct: bool) -> pb::ListSpecsResponse {
    let card = snapshot.card();
    let commands = snapshot
        .commands()
        .map(|c| pb::RegisteredCommand {
            spec: Some(spec_to_proto(&c.spec)),
            body: match c.body {
                Body::Builtin { .. } => pb::CommandBody::Builtin,
                Body::None => pb::CommandBody::None,
                Body::Handler { .. } => pb::CommandBody::Handler,
                Body::Prompt { .. } => pb::CommandBody::Prompt,
            }
            .into(),
            handler: match &c.body {
                Body::Handler { handler } => Some(handler.to_proto()),
                _ => None,
            },
            source: match c.source {
                Source::Api => pb::CommandSource::Api,
                Source::Builtins => pb::CommandSource::Builtin,
                Source::File => pb::CommandSource::File,
            }
            .into(),
            allowed_roles: c
                .access
                .roles
                .iter()
                .flatten()
                .map(|r| r.to_proto().into())
                .collect(),
            hidden: c.access.hidden,
            prompt: match &c.body {
                Body::Prompt { prompt } => Some(prompt.to_proto()),
                _ => None,
            },
        })
        .collect();
    pb::ListSpecsResponse {
        commands,
        revision: snapshot.revision(),
        card_params_json: card.params_json.clone(),
        card_extension_json: card.extension_json.clone(),
        card_extension: with_struct.then(|| pb::AgentExtension {
            uri: EXTENSION_URI.to_owned(),
            description: EXTENSION_DESCRIPTION.to_owned(),
            required: false,
            params: Some(to_struct(&card.params)),
        }),
        unchanged: false,
    }
}

/// The ListSpecs answer to `request` at `snapshot`: only the revision when the
/// caller's `known_revision` is current, else every command (with the card entry as a
/// message when asked).
pub fn list_specs(snapshot: &Snapshot, request: &pb::ListSpecsRequest) -> pb::ListSpecsResponse {
    if request.known_revision == Some(snapshot.revision()) {
        unchanged_response(snapshot.revision())
    } else {
        list_response(snapshot, request.include_card_extension)
    }
}

/// The ListSpecs answer when the caller's `known_revision` is current: a few bytes.
fn unchanged_response(revision: u64) -> pb::ListSpecsResponse {
    pb::ListSpecsResponse {
        revision,
        unchanged: true,
        ..Default::default()
    }
}
