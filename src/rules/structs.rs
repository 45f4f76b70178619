//! JSON as protobuf's `Struct` and `Value` (the card's params on ListSpecs, an A2A
//! message's metadata read by the front): one conversion for every layer above.

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value};

/// `value` as a protobuf `Value` (numbers become doubles, as protobuf JSON has them).
pub fn to_value(value: &serde_json::Value) -> Value {
    let kind = match value {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(to_value).collect(),
        }),
        serde_json::Value::Object(_) => Kind::StructValue(to_struct(value)),
    };
    Value { kind: Some(kind) }
}

/// `value` as a protobuf `Struct`; anything but an object gives an empty one.
pub fn to_struct(value: &serde_json::Value) -> Struct {
    let fields = match value {
        serde_json::Value::Object(map) => {
            map.iter().map(|(k, v)| (k.clone(), to_value(v))).collect()
        }
        _ => Default::default(),
    };
    Struct { fields }
}
