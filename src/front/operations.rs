//! The A2A operations the front knows, and the bindings they come on: one list of
//! method names (1.0's and 0.3's JSON-RPC names, HTTP+JSON's paths, the metrics'
//! labels), what a request's headers say of the version and extensions it speaks, and
//! the tenant it names.

use std::sync::LazyLock;

use hyper::header::{self, HeaderName, HeaderValue};
use hyper::Method;
use memchr::memmem::Finder;
use serde_json::Value;

use crate::front::a2a;
use crate::http1::head::Headers;
use crate::http1::token::same_name;
use crate::rules::card::EXTENSION_URI;

/// Which A2A binding a request came on, for the shape of its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Binding {
    /// JSON-RPC 2.0; the request's id.
    JsonRpc,
    /// A2A 0.3's JSON-RPC (`message/send`, `tasks/get`, ...): read and answered in
    /// 0.3's JSON (`v03`); the front reasons in 1.0's.
    JsonRpc03,
    /// HTTP+JSON (REST).
    HttpJson,
    /// A2A's gRPC binding: inside the front, read and answered as HTTP+JSON's JSON;
    /// `grpc` converts at the edges and speaks gRPC to the agent.
    Grpc,
}

impl Binding {
    /// Whether its requests and answers are JSON-RPC's (the call in `params`, the
    /// answer in `result`).
    pub(super) fn is_rpc(self) -> bool {
        matches!(self, Binding::JsonRpc | Binding::JsonRpc03)
    }

    /// Where an answer's payload is: JSON-RPC's `result`, or the whole body.
    pub(super) fn payload(self, answer: &mut Value) -> Option<&mut Value> {
        if self.is_rpc() {
            answer.get_mut("result")
        } else {
            Some(answer)
        }
    }

    /// Where a message request's message is in its body.
    pub(super) fn message_at(self) -> &'static str {
        if self.is_rpc() {
            "/params/message"
        } else {
            "/message"
        }
    }
}

/// A call about one task (besides a message to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TaskCall {
    Get,
    Cancel,
    Subscribe,
}

/// The A2A versions the front serves a request in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Speaks {
    /// 0.3 (`0.3`, any patch), or no version named at all.
    V03,
    /// 1.x (`1`, `1.0`, `1.0.1`, ...): 1.0's JSON, which later 1.x keep.
    V10,
}

/// The A2A version a request names in its `A2A-Version` header (or query parameter),
/// as the front serves it; `Err` with what it named when the front serves no such
/// version (A2A's VersionNotSupportedError). Read on every request: no allocation
/// unless the version is refused or comes in the query.
pub(super) fn speaks(headers: &Headers, query: Option<&str>) -> Result<Speaks, String> {
    let from_query;
    let named = match headers.get("a2a-version") {
        Some(value) => value.as_bytes(),
        None => {
            from_query = query.and_then(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .find(|(k, _)| k.eq_ignore_ascii_case("a2a-version"))
                    .map(|(_, v)| v.into_owned())
            });
            from_query.as_deref().unwrap_or_default().as_bytes()
        }
    };
    version_of(named.trim_ascii())
        .ok_or_else(|| String::from_utf8_lossy(named.trim_ascii()).into_owned())
}

/// The version `named` is served as: 0.3 (none, `0.3`, `0.3.<patch>`) or 1.x (`1`,
/// `1.<minor>`, `1.<minor>.<patch>`).
fn version_of(named: &[u8]) -> Option<Speaks> {
    match named {
        b"1.0" | b"1" => return Some(Speaks::V10),
        b"" | b"0.3" => return Some(Speaks::V03),
        _ => {}
    }
    let number = |part: &[u8]| !part.is_empty() && part.iter().all(u8::is_ascii_digit);
    let parts: Vec<&[u8]> = named.split(|&b| b == b'.').collect();
    match parts.as_slice() {
        [b"0", b"3", patch] if number(patch) => Some(Speaks::V03),
        [b"1", minor] if number(minor) => Some(Speaks::V10),
        [b"1", minor, patch] if number(minor) && number(patch) => Some(Speaks::V10),
        _ => None,
    }
}

/// Whether a request asks for A2A 1.x; none at all (or one the front refuses) is 0.3.
pub(super) fn speaks_1_0(headers: &Headers, query: Option<&str>) -> bool {
    speaks(headers, query) == Ok(Speaks::V10)
}

/// The tenant a request names (A2A 1.0's optional `tenant`): on HTTP+JSON (and gRPC,
/// read as HTTP+JSON) the path's segment between one of `bases` (the front's paths of
/// the agent's HTTP+JSON interfaces; the root when none is the path's) and the call
/// (`message:…`, `tasks…`, `extendedAgentCard`), else the body's `tenant`; on JSON-RPC
/// (`rpc`), its params' `tenant`. An empty one is none. The body is parsed only when it
/// holds the key.
pub fn tenant(rpc: bool, path: &str, bases: &[String], body: &[u8]) -> Option<String> {
    if !rpc {
        let under = bases
            .iter()
            .filter_map(|base| path.strip_prefix(base.as_str()))
            .find(|rest| rest.starts_with('/'))
            .unwrap_or(path);
        let mut segments = under.trim_start_matches('/').splitn(2, '/');
        if let (Some(first), Some(rest)) = (segments.next(), segments.next()) {
            let call = rest.starts_with("message:")
                || rest == "tasks"
                || rest.starts_with("tasks/")
                || rest == "extendedAgentCard";
            if call && !first.is_empty() {
                let decoded = percent_encoding::percent_decode_str(first).decode_utf8();
                return decoded.ok().map(|t| t.into_owned());
            }
        }
    }
    memchr::memmem::find(body, b"\"tenant\"")?;
    let value: Value = serde_json::from_slice(body).ok()?;
    let holder = if rpc { value.get("params")? } else { &value };
    holder
        .get("tenant")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// A2A 1.0.1's preferred media type for HTTP+JSON.
pub(super) const A2A_JSON: &str = "application/a2a+json";

/// Whether an HTTP+JSON request is in (or asks for) [`A2A_JSON`].
pub(super) fn asks_a2a_json(headers: &Headers) -> bool {
    [header::ACCEPT, header::CONTENT_TYPE].iter().any(|name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains(A2A_JSON))
    })
}

/// Whether the request activates this extension (`A2A-Extensions`, or 0.3's
/// `X-A2A-Extensions`).
pub(super) fn activates_us(headers: &Headers) -> bool {
    headers.iter().any(|(name, value)| {
        (same_name(name, b"a2a-extensions") || same_name(name, b"x-a2a-extensions"))
            && value
                .to_str()
                .is_ok_and(|v| v.split(',').any(|uri| uri.trim() == EXTENSION_URI))
    })
}

/// Adds this extension to the answer's `A2A-Extensions` (beside any the agent named).
pub(super) fn echo_activation(headers: &mut Headers) {
    let listed = headers
        .get_all("a2a-extensions")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|uri| uri.trim() == EXTENSION_URI);
    if !listed {
        headers.append(
            HeaderName::from_static("a2a-extensions"),
            HeaderValue::from_static(EXTENSION_URI),
        );
    }
}

/// One A2A operation, as each binding names it.
pub(super) struct Operation {
    /// Its 1.0 name: the JSON-RPC method, the gRPC method, the metrics' label.
    pub(super) name: &'static str,
    /// Its 0.3 JSON-RPC method, where the front reads 0.3's.
    pub(super) v03: Option<&'static str>,
    /// Whether the front looks at a JSON-RPC call of it whatever its body holds: it
    /// answers it for its own tasks, or writes its ids, task data or card into its
    /// answer.
    pub(super) looked_at: bool,
}

const fn op(name: &'static str, v03: Option<&'static str>, looked_at: bool) -> Operation {
    Operation {
        name,
        v03,
        looked_at,
    }
}

/// Every A2A operation the front knows (1.0's, with 0.3's names beside them), and the
/// kits' completion; the one list the metrics, the JSON-RPC reading and 0.3's names
/// come from.
pub(super) const OPERATIONS: [Operation; 12] = [
    op("SendMessage", Some("message/send"), false),
    op("SendStreamingMessage", Some("message/stream"), false),
    op("GetTask", Some("tasks/get"), true),
    op("CancelTask", Some("tasks/cancel"), true),
    op("SubscribeToTask", Some("tasks/resubscribe"), true),
    op("ListTasks", None, true),
    op("GetExtendedAgentCard", None, true),
    op("GetTaskPushNotificationConfig", None, false),
    op("ListTaskPushNotificationConfigs", None, false),
    op("CreateTaskPushNotificationConfig", None, false),
    op("DeleteTaskPushNotificationConfig", None, false),
    op(a2a::COMPLETE_METHOD, None, true),
];

/// A method name as the metrics name it: a known operation's (1.0's or 0.3's name), or
/// `other`.
pub(super) fn known_method(called: &[u8]) -> &'static str {
    OPERATIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.v03))
        .find(|name| name.as_bytes() == called)
        .unwrap_or("other")
}

/// Whether the front looks at a JSON-RPC call of `method` (a name [`known_method`]
/// gave) whatever its body holds.
pub(super) fn looked_at(method: &str) -> bool {
    OPERATIONS
        .iter()
        .any(|o| o.looked_at && (o.name == method || o.v03 == Some(method)))
}

/// The 1.0 name of 0.3 method `method`, if the front reads it.
pub(super) fn method_v10(method: &str) -> Option<&'static str> {
    OPERATIONS
        .iter()
        .find(|o| o.v03 == Some(method))
        .map(|o| o.name)
}

/// A JSON-RPC body's method, found by its key (the body is never parsed for it); a
/// `/` written `\/` is a `/`.
pub(super) fn jsonrpc_method(body: &[u8]) -> &'static str {
    static METHOD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"method\""));
    let Some(at) = METHOD.find(body) else {
        return "other";
    };
    let value = body[at + 8..]
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b':'))
        .map(|start| &body[at + 8 + start..]);
    let name = value
        .and_then(|v| v.strip_prefix(b"\""))
        .and_then(|v| memchr::memchr(b'"', v).map(|end| &v[..end]));
    let Some(name) = name else {
        return "other";
    };
    let unescaped;
    let name = if memchr::memmem::find(name, b"\\/").is_some() {
        unescaped = name
            .iter()
            .enumerate()
            .filter(|&(i, &b)| !(b == b'\\' && name.get(i + 1) == Some(&b'/')))
            .map(|(_, &b)| b)
            .collect::<Vec<u8>>();
        &unescaped[..]
    } else {
        name
    };
    known_method(name)
}

pub(super) fn is_http_json(method: &Method, path: &str) -> bool {
    http_json_method(method, path) != "other" && !path.ends_with("agent-card.json")
}

/// An HTTP+JSON request's method, by its path.
pub(super) fn http_json_method(method: &Method, path: &str) -> &'static str {
    let last = path.rsplit('/').next().unwrap_or_default();
    match (method, last) {
        (_, "agent-card.json" | "agent.json") => "card",
        (&Method::POST, "message:send") => "SendMessage",
        (&Method::POST, "message:stream") => "SendStreamingMessage",
        (&Method::GET, "extendedAgentCard") => "GetExtendedAgentCard",
        (&Method::GET, "tasks") => "ListTasks",
        (_, l) if l.ends_with(":cancel") => "CancelTask",
        (_, l) if l.ends_with(":subscribe") => "SubscribeToTask",
        (&Method::GET, _)
            if path.contains("/tasks/") && !path.contains("/pushNotificationConfigs") =>
        {
            "GetTask"
        }
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_names_every_operation_in_each_version() {
        assert_eq!(method_v10("tasks/resubscribe"), Some("SubscribeToTask"));
        assert_eq!(method_v10("SendMessage"), None);
        assert_eq!(known_method(b"message/stream"), "message/stream");
        assert_eq!(known_method(b"ListTasks"), "ListTasks");
        assert!(looked_at("tasks/get") && looked_at("GetTask") && looked_at("ListTasks"));
        assert!(!looked_at("SendMessage") && !looked_at("other"));
    }

    #[test]
    fn a_json_rpc_method_is_read_from_its_key_for_the_metrics() {
        let call = |body: &str| jsonrpc_method(body.as_bytes());
        assert_eq!(
            call(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage"}"#),
            "SendMessage"
        );
        assert_eq!(call(r#"{"method" : "GetTask","params":{}}"#), "GetTask");
        assert_eq!(call(r#"{"method":"tasks/get"}"#), "tasks/get");
        assert_eq!(call(r#"{"method":"Nonsense"}"#), "other");
        assert_eq!(
            call(r#"{"method":"commands\/complete"}"#),
            "commands/complete"
        );
        assert_eq!(call(r#"{"id":1}"#), "other");
        assert_eq!(call(r#"{"method":"SendMessag"#), "other");
    }

    #[test]
    fn only_a_request_in_1_0_is_answered_by_the_front() {
        let mut headers = Headers::new();
        assert!(!speaks_1_0(&headers, None), "no version means 0.3");
        assert!(speaks_1_0(&headers, Some("A2A-Version=1.0")));
        let version = hyper::header::HeaderName::from_static("a2a-version");
        headers.insert(version.clone(), HeaderValue::from_static("0.3"));
        assert!(!speaks_1_0(&headers, None));
        headers.insert(version, HeaderValue::from_static("1.0"));
        assert!(speaks_1_0(&headers, None));
    }

    #[test]
    fn a_version_the_front_does_not_serve_is_named_back() {
        let named = |v: &'static str| {
            let mut headers = Headers::new();
            headers.insert(
                HeaderName::from_static("a2a-version"),
                HeaderValue::from_static(v),
            );
            speaks(&headers, None)
        };
        for served in ["1", "1.0", "1.1", "1.0.1", " 1.0 "] {
            assert_eq!(named(served), Ok(Speaks::V10), "{served}");
        }
        for served in ["", "0.3", "0.3.0"] {
            assert_eq!(named(served), Ok(Speaks::V03), "{served}");
        }
        for refused in [
            "2.0", "0.2", "0.2.5", "1.x", "v1", "1.0.0.0", "0", "1.", "banana",
        ] {
            assert_eq!(named(refused), Err(refused.to_owned()), "{refused}");
        }
        assert_eq!(
            speaks(&Headers::new(), Some("A2A-Version=9")),
            Err("9".to_owned())
        );
        assert_eq!(speaks(&Headers::new(), None), Ok(Speaks::V03));
    }

    #[test]
    fn a_tenant_is_read_from_the_path_or_the_body() {
        let bases = ["/rest".to_owned()];
        let rest = |path: &str, body: &str| tenant(false, path, &bases, body.as_bytes());
        assert_eq!(rest("/acme/message:send", "{}").as_deref(), Some("acme"));
        assert_eq!(rest("/acme/tasks", "").as_deref(), Some("acme"));
        assert_eq!(rest("/acme/tasks/t-1:cancel", "").as_deref(), Some("acme"));
        assert_eq!(rest("/a%20b+c/tasks/t-1", "").as_deref(), Some("a b+c"));
        assert_eq!(rest("/message:send", "{}"), None);
        assert_eq!(rest("/tasks/t-1", ""), None);
        assert_eq!(
            rest("/message:send", r#"{"tenant":"globex"}"#).as_deref(),
            Some("globex")
        );
        assert_eq!(rest("/rest/acme/message:send", "").as_deref(), Some("acme"));
        assert_eq!(rest("/rest/message:send", ""), None);
        assert_eq!(rest("/rest/tasks/t-1", ""), None);
        let rpc = |body: &str| tenant(true, "/", &bases, body.as_bytes());
        assert_eq!(
            rpc(r#"{"params":{"tenant":"acme","id":"t"}}"#).as_deref(),
            Some("acme")
        );
        assert_eq!(rpc(r#"{"params":{"tenant":""}}"#), None);
        assert_eq!(rpc(r#"{"tenant":"acme","params":{}}"#), None);
        assert_eq!(rpc(r#"{"params":{"id":"t"}}"#), None);
    }
}
