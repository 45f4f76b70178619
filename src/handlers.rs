//! Command bodies that run elsewhere: the handler binding a command is registered with,
//! and the clients that call it (gRPC `CommandHandler`, or JSON-RPC 2.0 over HTTP).
//!
//! Every call is bounded: by the binding's timeout (which also covers waiting for a
//! free slot and connecting), by a per-endpoint concurrency limit, and by a maximum
//! answer size. Whatever goes wrong becomes a [`HandlerAnswer::Failed`] with a short
//! reason for the reply; the details go to the log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::error::Error;
use crate::event::v03_state;
use crate::execute::state_name;
use crate::pb::{self, command_handler_client::CommandHandlerClient, ParticipantRole};

/// Endpoints whose connections and slots are kept; past that, idle ones are dropped so
/// that registering and removing many handler URLs cannot grow memory without bound.
const MAX_ENDPOINTS: usize = 256;

/// The JSON-RPC method a command invocation is posted as.
pub const JSON_RPC_METHOD: &str = "command.invoked.in";

/// Which protocol a handler speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerKind {
    /// Our `CommandHandler` gRPC service.
    Grpc,
    /// JSON-RPC 2.0 over HTTP(S), method `command.invoked.in`.
    JsonRpc,
}

/// A validated handler binding, persisted with its command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerBinding {
    /// The protocol.
    pub kind: HandlerKind,
    /// The endpoint URL (`http` or `https`).
    pub url: String,
    /// How long Execute waits, in milliseconds (resolved: never 0).
    pub timeout_ms: u32,
}

/// Operator limits on handlers.
#[derive(Clone, Debug)]
pub struct HandlerPolicy {
    /// Timeout of a binding that names none.
    pub default_timeout_ms: u32,
    /// Largest timeout a binding may ask for.
    pub max_timeout_ms: u32,
    /// Hosts handlers may be on (`name` or `*.suffix`); empty allows any.
    pub allowed_hosts: Vec<String>,
    /// Largest answer accepted, in bytes.
    pub max_answer_bytes: usize,
    /// Most calls in flight to one endpoint.
    pub max_concurrency: usize,
}

impl Default for HandlerPolicy {
    fn default() -> Self {
        Self {
            default_timeout_ms: 5_000,
            max_timeout_ms: 30_000,
            allowed_hosts: Vec::new(),
            max_answer_bytes: 64 * 1024,
            max_concurrency: 32,
        }
    }
}

impl HandlerPolicy {
    /// Whether `host` is on the allow-list (or there is none).
    pub fn allows_host(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.allowed_hosts.is_empty()
            || self.allowed_hosts.iter().any(|pattern| {
                let pattern = pattern.to_ascii_lowercase();
                match pattern.strip_prefix("*.") {
                    Some(suffix) => host
                        .strip_suffix(suffix)
                        .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
                    None => host == pattern,
                }
            })
    }
}

impl HandlerBinding {
    /// Checks a binding from a request; `field` (for example `handler`) names it in
    /// errors.
    pub fn parse(
        field: &str,
        binding: &pb::HandlerBinding,
        policy: &HandlerPolicy,
    ) -> Result<Self, Error> {
        use pb::handler_binding::Endpoint as E;
        let (kind, url, url_field) = match &binding.endpoint {
            Some(E::Grpc(url)) => (HandlerKind::Grpc, url, format!("{field}.grpc")),
            Some(E::JsonRpc(url)) => (HandlerKind::JsonRpc, url, format!("{field}.json_rpc")),
            None => return Err(Error::invalid(field, "must set grpc or json_rpc")),
        };
        let parsed = url::Url::parse(url)
            .map_err(|e| Error::invalid(&url_field, format!("is not a URL ({e}): {url:?}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::invalid(
                &url_field,
                format!(
                    "must be an http:// or https:// URL (got scheme {:?})",
                    parsed.scheme()
                ),
            ));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            // ListSpecs shows bindings to anyone who can read the registry.
            return Err(Error::invalid(
                &url_field,
                "must not carry credentials (user:password@); put them in the handler",
            ));
        }
        let host = parsed
            .host_str()
            .ok_or_else(|| Error::invalid(&url_field, "must name a host"))?;
        if !policy.allows_host(host) {
            return Err(Error::invalid(
                &url_field,
                format!("host {host:?} is not in the allowed handler hosts"),
            ));
        }
        let timeout_ms = match binding.timeout_ms {
            0 => policy.default_timeout_ms,
            t if t > policy.max_timeout_ms => {
                return Err(Error::invalid(
                    format!("{field}.timeout_ms"),
                    format!("must be at most {} (got {t})", policy.max_timeout_ms),
                ))
            }
            t => t,
        };
        Ok(Self {
            kind,
            // The parsed form: what was checked is what is called, logged and shown
            // (the parser drops tabs and line breaks a raw string could smuggle in).
            url: parsed.to_string(),
            timeout_ms,
        })
    }

    /// The binding as protobuf.
    pub fn to_proto(&self) -> pb::HandlerBinding {
        use pb::handler_binding::Endpoint as E;
        let endpoint = match self.kind {
            HandlerKind::Grpc => E::Grpc(self.url.clone()),
            HandlerKind::JsonRpc => E::JsonRpc(self.url.clone()),
        };
        pb::HandlerBinding {
            endpoint: Some(endpoint),
            timeout_ms: self.timeout_ms,
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(u64::from(self.timeout_ms))
    }
}

/// What a handler answered, before Execute checks it against the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandlerAnswer {
    /// A reply.
    Reply {
        /// The reply text (may still be empty: Execute rejects that).
        reply: String,
        /// A new model.
        model: Option<String>,
        /// A new effort.
        effort: Option<String>,
        /// A sub-task's goal (may still be empty: Execute rejects that).
        spawn_goal: Option<String>,
    },
    /// A refusal with its reason.
    Abort(String),
    /// No answer: the command has no handler after all.
    NoAnswer,
    /// The call failed; the short reason goes into the reply.
    Failed(String),
}

/// The clients that call handlers; one per server, shared by all calls.
pub struct Handlers {
    policy: HandlerPolicy,
    http: reqwest::Client,
    channels: Mutex<HashMap<String, Channel>>,
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A failure inside a call: the short reason and the detail for the log.
struct Failure {
    reason: String,
    detail: String,
}

impl Failure {
    fn new(reason: impl Into<String>, detail: impl ToString) -> Self {
        Self {
            reason: reason.into(),
            detail: detail.to_string(),
        }
    }

    fn malformed(detail: impl ToString) -> Self {
        let detail = detail.to_string();
        Self {
            reason: format!("malformed answer: {}", shorten(&detail, 120)),
            detail,
        }
    }
}

fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max_chars - 1).collect();
    short.push('…');
    short
}

impl Handlers {
    /// Clients under `policy`.
    pub fn new(policy: HandlerPolicy) -> Self {
        // rustls needs one process-wide crypto provider; ring is the one we build.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(90))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("the HTTP client builds");
        Self {
            policy,
            http,
            channels: Mutex::new(HashMap::new()),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The policy handlers are held to.
    pub fn policy(&self) -> &HandlerPolicy {
        &self.policy
    }

    /// Calls the handler; never takes longer than the binding's timeout (plus the time
    /// to notice it), and never fails: failures are answers.
    pub async fn invoke(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
    ) -> HandlerAnswer {
        let call = async {
            let host_allowed = url::Url::parse(&binding.url)
                .ok()
                .and_then(|u| u.host_str().map(|h| self.policy.allows_host(h)))
                .unwrap_or(false);
            if !host_allowed {
                return Err(Failure::new("handler host not allowed", &binding.url));
            }
            let slots = self.slots_for(&binding.url);
            let _slot = slots
                .acquire()
                .await
                .map_err(|e| Failure::new("handler busy", e))?;
            match binding.kind {
                HandlerKind::Grpc => self.call_grpc(binding, invocation).await,
                HandlerKind::JsonRpc => self.call_json_rpc(binding, invocation).await,
            }
        };
        let result = match tokio::time::timeout(binding.timeout(), call).await {
            Ok(result) => result,
            Err(_) => Err(Failure::new(timed_out(binding), "deadline passed")),
        };
        result.unwrap_or_else(|failure| {
            tracing::warn!(
                command = %invocation.command,
                handler = %binding.url,
                reason = %failure.reason,
                detail = %failure.detail,
                "handler failed"
            );
            HandlerAnswer::Failed(failure.reason)
        })
    }

    fn slots_for(&self, url: &str) -> Arc<Semaphore> {
        let mut slots = self.slots.lock().expect("not poisoned");
        if slots.len() >= MAX_ENDPOINTS && !slots.contains_key(url) {
            // Forget endpoints with no call in flight (unregistered ones among them);
            // one in use keeps its slots.
            slots.retain(|_, s| Arc::strong_count(s) > 1);
        }
        Arc::clone(
            slots
                .entry(url.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(self.policy.max_concurrency))),
        )
    }

    fn channel_for(&self, url: &str) -> Result<Channel, Failure> {
        let mut channels = self.channels.lock().expect("not poisoned");
        if let Some(channel) = channels.get(url) {
            return Ok(channel.clone());
        }
        let mut endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| Failure::new("bad handler endpoint", e))?
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true);
        if url.starts_with("https://") {
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .map_err(|e| Failure::new("bad handler TLS settings", e))?;
        }
        // Lazy: connects on first use and reconnects by itself; the channel is shared.
        let channel = endpoint.connect_lazy();
        if channels.len() >= MAX_ENDPOINTS {
            // Calls in flight hold their own clones; a later call reconnects.
            channels.clear();
        }
        channels.insert(url.to_owned(), channel.clone());
        Ok(channel)
    }

    async fn call_grpc(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
    ) -> Result<HandlerAnswer, Failure> {
        let mut client = CommandHandlerClient::new(self.channel_for(&binding.url)?)
            .max_decoding_message_size(self.policy.max_answer_bytes);
        let mut request = tonic::Request::new(invocation.clone());
        request.set_timeout(binding.timeout());
        let result = client
            .handle(request)
            .await
            .map_err(|status| grpc_failure(&status, binding, self.policy.max_answer_bytes))?;
        Ok(match result.into_inner().result {
            None => HandlerAnswer::NoAnswer,
            Some(pb::handler_result::Result::Abort(abort)) => HandlerAnswer::Abort(abort.reason),
            Some(pb::handler_result::Result::Reply(reply)) => {
                let settings = reply.settings.unwrap_or_default();
                HandlerAnswer::Reply {
                    reply: reply.reply,
                    model: settings.model,
                    effort: settings.effort,
                    spawn_goal: reply.spawn.map(|s| s.goal),
                }
            }
        })
    }

    async fn call_json_rpc(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
    ) -> Result<HandlerAnswer, Failure> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": invocation.correlation_id,
            "method": JSON_RPC_METHOD,
            "params": {"context": invocation_context(invocation)},
        });
        let mut response = self
            .http
            .post(&binding.url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| {
                let reason = if e.is_connect() {
                    "handler unreachable"
                } else {
                    "request failed"
                };
                Failure::new(reason, e)
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(Failure::new(
                format!("handler answered HTTP {}", status.as_u16()),
                status,
            ));
        }
        let max = self.policy.max_answer_bytes;
        if response.content_length().is_some_and(|n| n > max as u64) {
            return Err(Failure::new(
                format!("answer larger than {max} bytes"),
                "content-length",
            ));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Failure::new("reading the answer failed", e))?
        {
            if bytes.len() + chunk.len() > max {
                return Err(Failure::new(
                    format!("answer larger than {max} bytes"),
                    "body",
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        parse_json_rpc_answer(&bytes)
    }
}

fn timed_out(binding: &HandlerBinding) -> String {
    format!("timed out after {} ms", binding.timeout_ms)
}

fn grpc_failure(
    status: &tonic::Status,
    binding: &HandlerBinding,
    max_answer_bytes: usize,
) -> Failure {
    use tonic::Code;
    let reason = match status.code() {
        // The deadline we sent with the call (grpc-timeout) passed, on either side.
        Code::DeadlineExceeded | Code::Cancelled => timed_out(binding),
        Code::OutOfRange | Code::ResourceExhausted if status.message().contains("too large") => {
            format!("answer larger than {max_answer_bytes} bytes")
        }
        Code::Unavailable => "handler unreachable".to_owned(),
        code => format!("handler answered {}", code_name(code)),
    };
    Failure::new(reason, status)
}

/// The canonical upper-case name of a gRPC code, as operators know them.
fn code_name(code: tonic::Code) -> String {
    let words = format!("{code:?}");
    let mut name = String::new();
    for (i, c) in words.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

fn role_name(role: i32) -> Value {
    match ParticipantRole::try_from(role) {
        Ok(ParticipantRole::Assignee) => "assignee".into(),
        Ok(ParticipantRole::Reporter) => "reporter".into(),
        Ok(ParticipantRole::Watcher) => "watcher".into(),
        Ok(ParticipantRole::Admin) => "admin".into(),
        _ => Value::Null,
    }
}

/// The JSON-RPC `context` for an invocation.
pub fn invocation_context(invocation: &pb::Invocation) -> Value {
    let state = |s: i32| pb::TaskState::try_from(s).unwrap_or_default();
    let task = invocation.task.clone().unwrap_or_default();
    let sender = invocation.sender.clone().unwrap_or_default();
    let settings = task.settings.unwrap_or_default();
    let sub_state = match pb::SubState::try_from(task.sub_state).unwrap_or_default() {
        pb::SubState::Unspecified => Value::Null,
        pb::SubState::AwaitingNextMessage => "awaiting-next-message".into(),
        pb::SubState::AwaitingAnswer => "awaiting-answer".into(),
    };
    json!({
        "task_id": invocation.task_id,
        "correlation_id": invocation.correlation_id,
        "attempt": invocation.attempt,
        "command": invocation.command,
        "arguments": invocation.arguments,
        "sender": {"id": sender.id, "role": role_name(sender.role)},
        "task": {
            "id": task.id,
            "context_id": task.context_id,
            "name": task.name,
            "state": state_name(state(task.state)),
            "state_v0_3": v03_state(state(task.state)),
            "sub_state": sub_state,
            "settings": {"model": settings.model, "effort": settings.effort},
            "plan": task.plan.map(|p| json!({"steps_done": p.steps_done, "steps_total": p.steps_total})),
            "sub_tasks": task.sub_tasks.iter().map(|s| json!({"id": s.id, "state": state_name(state(s.state))})).collect::<Vec<_>>(),
        },
    })
}

/// The JSON-RPC answer's shape, checked strictly: wrong types are malformed.
#[derive(Deserialize)]
struct JsonRpcResponse {
    jsonrpc: String,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<JsonRpcError>,
}

#[derive(Deserialize)]
struct JsonRpcError {
    code: i64,
    message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AbortResult {
    abort: Abort,
}

#[derive(Deserialize)]
struct Abort {
    reason: String,
}

#[derive(Deserialize)]
struct ContextResult {
    context: ContextWithResult,
}

#[derive(Deserialize)]
struct ContextWithResult {
    #[serde(default)]
    result: Option<CommandResult>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandResult {
    reply: Option<String>,
    #[serde(default)]
    settings: Option<Settings>,
    #[serde(default)]
    spawn: Option<Spawn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    effort: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Spawn {
    goal: Option<String>,
}

/// Reads a JSON-RPC answer: `result` null (no answer), `{"abort": ...}`, or
/// `{"context": {..., "result": {...}}}`; an `error` member is a failure.
fn parse_json_rpc_answer(bytes: &[u8]) -> Result<HandlerAnswer, Failure> {
    let response: JsonRpcResponse = serde_json::from_slice(bytes).map_err(Failure::malformed)?;
    if response.jsonrpc != "2.0" {
        return Err(Failure::malformed(format!(
            "jsonrpc is {:?}, not \"2.0\"",
            response.jsonrpc
        )));
    }
    if let Some(error) = response.error {
        return Err(Failure::new(
            format!(
                "handler error {}: {}",
                error.code,
                shorten(&error.message, 120)
            ),
            error.message,
        ));
    }
    let result = match response.result {
        None | Some(Value::Null) => return Ok(HandlerAnswer::NoAnswer),
        Some(result) => result,
    };
    if result.get("abort").is_some() {
        let abort: AbortResult = serde_json::from_value(result).map_err(Failure::malformed)?;
        return Ok(HandlerAnswer::Abort(abort.abort.reason));
    }
    let context: ContextResult = serde_json::from_value(result).map_err(Failure::malformed)?;
    let Some(result) = context.context.result else {
        return Ok(HandlerAnswer::NoAnswer);
    };
    let settings = result.settings.unwrap_or(Settings {
        model: None,
        effort: None,
    });
    Ok(HandlerAnswer::Reply {
        reply: result.reply.unwrap_or_default(),
        model: settings.model,
        effort: settings.effort,
        spawn_goal: result.spawn.map(|s| s.goal.unwrap_or_default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Result<HandlerAnswer, String> {
        parse_json_rpc_answer(text.as_bytes()).map_err(|f| f.reason)
    }

    #[test]
    fn json_rpc_answers() {
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":"1","result":null}"#),
            Ok(HandlerAnswer::NoAnswer)
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":"1","result":{"abort":{"reason":"no"}}}"#),
            Ok(HandlerAnswer::Abort("no".into()))
        );
        assert_eq!(
            answer(
                r#"{"jsonrpc":"2.0","id":"1","result":{"context":{"task_id":"t","result":{"reply":"ok","settings":{"model":"m"},"spawn":{"goal":"g"}}}}}"#
            ),
            Ok(HandlerAnswer::Reply {
                reply: "ok".into(),
                model: Some("m".into()),
                effort: None,
                spawn_goal: Some("g".into())
            })
        );
        assert!(answer(
            r#"{"jsonrpc":"2.0","id":"1","result":{"context":{"result":{"reply":5}}}}"#
        )
        .unwrap_err()
        .starts_with("malformed answer"));
        assert!(answer("not json")
            .unwrap_err()
            .starts_with("malformed answer"));
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"nope"}}"#),
            Err("handler error -32601: nope".into())
        );
    }

    #[test]
    fn allow_list() {
        let policy = HandlerPolicy {
            allowed_hosts: vec!["localhost".into(), "*.example.com".into()],
            ..HandlerPolicy::default()
        };
        assert!(policy.allows_host("localhost"));
        assert!(policy.allows_host("hooks.Example.com"));
        assert!(!policy.allows_host("example.com"));
        assert!(!policy.allows_host("evil-example.com"));
        assert!(!policy.allows_host("127.0.0.1"));
        assert!(HandlerPolicy::default().allows_host("anything"));
    }

    #[tokio::test]
    async fn idle_endpoints_are_forgotten() {
        let handlers = Handlers::new(HandlerPolicy::default());
        let busy = handlers.slots_for("http://busy:1/");
        for i in 0..1000 {
            let _ = handlers.slots_for(&format!("http://h{i}:1/"));
            assert!(handlers.channel_for(&format!("http://h{i}:1/")).is_ok());
        }
        let slots = handlers.slots.lock().unwrap();
        assert!(slots.len() <= MAX_ENDPOINTS, "{}", slots.len());
        assert!(handlers.channels.lock().unwrap().len() <= MAX_ENDPOINTS);
        assert!(
            Arc::ptr_eq(&slots["http://busy:1/"], &busy),
            "the one in use is kept"
        );
    }

    #[test]
    fn code_names() {
        assert_eq!(
            code_name(tonic::Code::FailedPrecondition),
            "FAILED_PRECONDITION"
        );
        assert_eq!(code_name(tonic::Code::Internal), "INTERNAL");
    }
}
