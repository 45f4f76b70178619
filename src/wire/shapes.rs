//! Which shape each generated type is walked as by the codec's element check
//! (`wire::codec`): Classify, Execute, Complete and Register requests are walked;
//! everything else has no repeated field a caller can fill, or is an answer the caller
//! receives. Every generated service and client needs these impls to compile, so they
//! live here, beside the codec and the generated types, below every layer that uses
//! them.

use crate::pb;
use crate::wire::codec::{Scanned, Shape};

macro_rules! scanned {
    ($shape:ident: $($t:ty),* $(,)?) => {
        $(impl Scanned for $t { const SHAPE: Shape = Shape::$shape; })*
    };
}
scanned!(Classify: pb::ClassifyRequest);
scanned!(Execute: pb::ExecuteRequest);
scanned!(Complete: pb::CompleteRequest);
scanned!(Register: pb::RegisterRequest);
// No repeated field a caller fills, or answers we receive from handlers and the service
// (a client's own concern).
scanned!(Opaque:
    pb::UnregisterRequest, pb::ListSpecsRequest, pb::WatchSpecsRequest,
    pb::Invocation, pb::RegisterResponse, pb::UnregisterResponse, pb::ListSpecsResponse,
    pb::ClassifyResponse, pb::ExecuteResponse, pb::HandlerResult, pb::CompleteResponse,
);

#[cfg(test)]
mod tests {
    use crate::pb;
    use crate::wire::codec::{count_elements, ScanError, Shape};
    use prost::Message as _;

    fn classify_with(parts: usize) -> Vec<u8> {
        let message = pb::Message {
            message_id: "m".into(),
            parts: vec![pb::Part::default(); parts],
            extensions: vec!["x".into(); 3],
            metadata: Some(prost_types::Struct {
                fields: [(
                    "k".to_owned(),
                    prost_types::Value {
                        kind: Some(prost_types::value::Kind::ListValue(
                            prost_types::ListValue {
                                values: vec![prost_types::Value::default(); 5],
                            },
                        )),
                    },
                )]
                .into(),
            }),
            ..Default::default()
        };
        pb::ClassifyRequest {
            message: Some(message),
        }
        .encode_to_vec()
    }

    #[test]
    fn counts_parts_extensions_entries_and_list_values() {
        // 7 parts + 3 extensions + 1 metadata entry + 5 list values.
        let bytes = classify_with(7);
        assert_eq!(count_elements(Shape::Classify, &bytes, 100), Ok(16));
        assert_eq!(
            count_elements(Shape::Classify, &bytes, 15),
            Err(ScanError::TooMany { max: 15 })
        );
        assert_eq!(count_elements(Shape::Opaque, &bytes, 0), Ok(0));
    }

    #[test]
    fn counts_sub_tasks_and_packed_forms_of_execute() {
        let request = pb::ExecuteRequest {
            message: Some(pb::Message::default()),
            task: Some(pb::TaskSnapshot {
                sub_tasks: vec![pb::SubTaskSnapshot::default(); 4],
                ..Default::default()
            }),
            event_forms: vec![1, 2, 3],
            ..Default::default()
        };
        let bytes = request.encode_to_vec();
        assert_eq!(count_elements(Shape::Execute, &bytes, 100), Ok(7));
    }

    #[test]
    fn counts_handler_headers_and_roles_of_register() {
        let request = pb::RegisterRequest {
            spec: Some(pb::CommandSpec::default()),
            handler: Some(pb::HandlerBinding {
                headers: vec![pb::HandlerHeader::default(); 6],
                ..Default::default()
            }),
            allowed_roles: vec![1, 2],
            ..Default::default()
        };
        let bytes = request.encode_to_vec();
        assert_eq!(count_elements(Shape::Register, &bytes, 100), Ok(8));
        assert_eq!(
            count_elements(Shape::Register, &bytes, 7),
            Err(ScanError::TooMany { max: 7 })
        );
    }

    #[test]
    fn malformed_bytes_are_left_to_prost() {
        assert_eq!(
            count_elements(Shape::Classify, &[0x0A, 0x05, 0x2A], 10),
            Err(ScanError::Malformed)
        );
        assert_eq!(
            count_elements(Shape::Classify, &[0xFF; 11], 10),
            Err(ScanError::Malformed)
        );
    }
}
