//! The JSON text the front writes: a value written straight into bytes, and an answer
//! whose task is already text (its record's), copied rather than serialised again.

use serde_json::value::RawValue;
use serde_json::Value;

/// `value`'s JSON text. Written straight into bytes: `Value`'s `to_string` goes
/// through `fmt` at each token and costs twice as much.
pub fn write(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("a Value serializes")
}

/// The answer `{"task": …}` (in JSON-RPC's `result` when `id` is given) with the task
/// already JSON text: the same bytes `a2a::rpc_result` and `a2a::keyed` would make of it,
/// with the task copied rather than serialised again.
pub fn task_answer(id: Option<&Value>, task: &RawValue) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct TaskResult<'a> {
        task: &'a RawValue,
    }
    #[derive(serde::Serialize)]
    struct RpcResult<'a> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: TaskResult<'a>,
    }
    let result = TaskResult { task };
    match id {
        Some(id) => serde_json::to_vec(&RpcResult {
            jsonrpc: "2.0",
            id,
            result,
        }),
        None => serde_json::to_vec(&result),
    }
    .expect("JSON serializes")
}
