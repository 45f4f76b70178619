//! Property tests of spec validation against the rules written out independently.

use a2a_commands::rules::spec::{CommandName, CommandSpec};
use proptest::prelude::*;

/// The name rule, as the issue states it.
fn name_ok(name: &str) -> bool {
    let re = regex::Regex::new(r"\A[a-z][a-z0-9-]*\z").unwrap();
    re.is_match(name) && name.chars().count() <= 64
}

/// One line, at most `max` characters, no control characters, no invisible or
/// direction-changing format characters, and not whitespace alone (Python's `isspace`),
/// as the issues state it.
fn line_ok(text: &str, max: usize) -> bool {
    let hidden = |c: char| {
        matches!(c, '\u{061C}' | '\u{200B}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
    };
    let py_space = |c: char| c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c);
    text.chars().count() <= max
        && !text
            .chars()
            .any(|c| c.is_control() || hidden(c) || matches!(c, '\u{2028}' | '\u{2029}'))
        && (text.is_empty() || !text.chars().all(py_space))
}

fn text() -> impl Strategy<Value = String> {
    let alphabet = prop::sample::select(vec![
        'a', 'z', 'm', '0', '9', '-', '_', ' ', 'A', 'é', '\n', '\r', '\t', '\0', '\u{7f}',
        '\u{85}', '\u{9b}', '\u{2028}', '\u{2029}', '\u{200b}', '\u{202e}', '\u{3000}', '🙂',
    ]);
    prop_oneof![
        prop::collection::vec(alphabet.clone(), 0..8),
        prop::collection::vec(alphabet, 60..70),
    ]
    .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    #[test]
    fn names_follow_the_rule(name in text()) {
        prop_assert_eq!(CommandName::parse("name", &name).is_ok(), name_ok(&name));
    }

    #[test]
    fn any_string_name_follows_the_rule(name in "\\PC{0,70}") {
        prop_assert_eq!(CommandName::parse("name", &name).is_ok(), name_ok(&name));
    }

    #[test]
    fn specs_follow_the_rules(name in text(), description in text(), hint in text()) {
        let want = name_ok(&name)
            && !description.is_empty()
            && line_ok(&description, 1024)
            && line_ok(&hint, 256);
        let got = CommandSpec::new("spec", &name, &description, &hint);
        prop_assert_eq!(got.is_ok(), want, "{:?}", got);
        if let Err(e) = got {
            // Errors name the field they are about.
            let text = e.to_string();
            prop_assert!(text.starts_with("spec.name: ") || text.starts_with("spec.description: ") || text.starts_with("spec.argument_hint: "), "{}", text);
        }
    }

    #[test]
    fn long_texts_count_characters_not_bytes(n in 1000usize..1100, c in prop::sample::select(vec!['a', 'é', '名', '🙂'])) {
        let description: String = std::iter::repeat_n(c, n).collect();
        prop_assert_eq!(CommandSpec::new("spec", "m", &description, "").is_ok(), n <= 1024);
    }
}

/// The element count never exceeds the message's length in bytes, which is what lets
/// the decoder skip the walk for a message no longer than the limit.
mod element_counts {
    use a2a_commands::pb;
    use a2a_commands::wire::{count_elements, Shape};
    use proptest::prelude::*;
    use prost::Message as _;

    fn value(kind: u8) -> prost_types::Value {
        use prost_types::value::Kind;
        let kind = match kind % 4 {
            0 => Kind::NullValue(0),
            1 => Kind::StringValue(String::new()),
            2 => Kind::ListValue(prost_types::ListValue {
                values: vec![prost_types::Value { kind: None }; usize::from(kind % 5)],
            }),
            _ => Kind::StructValue(prost_types::Struct::default()),
        };
        prost_types::Value { kind: Some(kind) }
    }

    fn metadata(entries: &[u8]) -> Option<prost_types::Struct> {
        Some(prost_types::Struct {
            fields: entries
                .iter()
                .enumerate()
                .map(|(i, kind)| (i.to_string(), value(*kind)))
                .collect(),
        })
    }

    fn message(parts: &[u8], entries: &[u8]) -> pb::Message {
        pb::Message {
            parts: parts
                .iter()
                .map(|kind| pb::Part {
                    content: match kind % 3 {
                        0 => None,
                        1 => Some(pb::part::Content::Text(String::new())),
                        _ => Some(pb::part::Content::Data(value(*kind))),
                    },
                    metadata: if kind % 2 == 0 {
                        metadata(entries)
                    } else {
                        None
                    },
                    ..Default::default()
                })
                .collect(),
            metadata: metadata(entries),
            ..Default::default()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn never_more_elements_than_bytes(
            parts in prop::collection::vec(any::<u8>(), 0..40),
            entries in prop::collection::vec(any::<u8>(), 0..12),
            forms in prop::collection::vec(0i32..4, 0..40),
        ) {
            let execute = pb::ExecuteRequest {
                message: Some(message(&parts, &entries)),
                event_forms: forms,
                ..Default::default()
            }
            .encode_to_vec();
            let classify = pb::ClassifyRequest { message: Some(message(&parts, &entries)) }
                .encode_to_vec();
            for (shape, bytes) in [(Shape::Execute, execute), (Shape::Classify, classify)] {
                let count = count_elements(shape, &bytes, usize::MAX).unwrap();
                prop_assert!(count <= bytes.len(), "{count} elements in {} bytes", bytes.len());
            }
        }

        #[test]
        fn never_more_elements_than_bytes_in_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            for shape in [Shape::Execute, Shape::Classify, Shape::Complete, Shape::Register] {
                if let Ok(count) = count_elements(shape, &bytes, usize::MAX) {
                    prop_assert!(count <= bytes.len());
                }
            }
        }
    }
}
