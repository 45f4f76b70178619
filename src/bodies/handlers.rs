//! [`Handlers`]: calls a command's handler over the protocol its binding names.
//!
//! Every call is bounded: by the binding's timeout (which also covers waiting for a
//! free slot and connecting), by a per-endpoint concurrency limit, and by a maximum
//! answer size. Whatever goes wrong becomes a [`HandlerAnswer::Failed`] with a short
//! reason for the reply; the details go to the log.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::bodies::call::{CallHeaders, Failure, Trace, MAX_ENDPOINTS};
use crate::bodies::grpc::GrpcClient;
use crate::bodies::json_rpc::JsonRpcClient;
use crate::bodies::mcp::McpClient;
use crate::bodies::spans::{self, Operation};
use crate::metrics::{metrics, HandlerLabels, TransportLabels};
use crate::pb;
use crate::rules::body::{HandlerAnswer, HandlerBinding, HandlerKind, HandlerPolicy};
use crate::rules::complete::{self, ArgumentQuery, Completions};
use crate::rules::prompt::{ListedPrompt, PromptAnswer};
use crate::telemetry::Tracer;

/// Time kept back from the caller's deadline for the answer to be written after a
/// handler call ends, so that a shortened call still ends in a reply. It also covers
/// the way back to the caller, whose clock started before ours: 10 ms was too little
/// on a loaded machine (a kit's client, timing the call itself, gave up first).
pub const ANSWER_RESERVE: Duration = Duration::from_millis(50);

/// How long one handler call may take, and whether the caller's deadline set it.
struct Limit {
    timeout: Duration,
    by_caller: bool,
}

impl Limit {
    /// The failure when the call took all of it.
    fn expired(&self, binding: &HandlerBinding) -> Failure {
        if self.by_caller {
            Failure::new(
                format!(
                    "timed out after {} ms (what was left of the caller's deadline)",
                    self.timeout.as_millis()
                ),
                "the caller's deadline passed",
            )
        } else {
            Failure::timed_out(binding, "deadline passed")
        }
    }
}

/// A handler call not made (`failure` says why): logged, and answered as a failure.
fn not_called(command: &str, url: &str, failure: Failure) -> HandlerAnswer {
    tracing::warn!(command, handler = %url, reason = %failure.reason, detail = %failure.detail, "handler not called");
    HandlerAnswer::Failed(failure.reason)
}

/// What is kept per endpoint URL: its concurrency slots and its call counter (JSON-RPC
/// ids count per endpoint, as the reference's do).
struct Endpoint {
    slots: Semaphore,
    calls: AtomicU64,
}

/// The clients that call handlers; one per server, shared by all calls.
pub struct Handlers {
    policy: HandlerPolicy,
    grpc: GrpcClient,
    json_rpc: JsonRpcClient,
    mcp: McpClient,
    endpoints: Mutex<HashMap<String, Arc<Endpoint>>>,
    /// Where each call's client span goes (traces on only).
    tracer: Option<Tracer>,
}

/// The handlers' clients could not be set up (an unreadable CA file).
#[derive(Debug, thiserror::Error)]
#[error("handler CA file {path}: {reason}")]
pub struct SetupError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

impl Handlers {
    /// Clients under `policy`; trusts `policy.ca_file`'s certificates beside the
    /// system's for `https://` handlers.
    pub fn new(policy: HandlerPolicy) -> Result<Self, SetupError> {
        // rustls needs one process-wide crypto provider; ring is the one we build.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = match &policy.ca_file {
            Some(path) => {
                let fail = |reason: String| SetupError {
                    path: path.display().to_string(),
                    reason,
                };
                let pem = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
                if reqwest::Certificate::from_pem_bundle(&pem).map_or(true, |c| c.is_empty()) {
                    return Err(fail("holds no PEM certificate".into()));
                }
                Some(pem)
            }
            None => None,
        };
        let http = crate::bodies::call::http_client(ca.as_deref());
        Ok(Self {
            policy,
            grpc: GrpcClient::new(ca),
            json_rpc: JsonRpcClient::new(http.clone()),
            mcp: McpClient::new(http),
            endpoints: Mutex::new(HashMap::new()),
            tracer: None,
        })
    }

    /// The same clients, each call making a client span sent to `tracer`.
    pub fn traced(self, tracer: Option<Tracer>) -> Self {
        Self { tracer, ..self }
    }

    /// The policy handlers are held to.
    pub fn policy(&self) -> &HandlerPolicy {
        &self.policy
    }

    /// How long a call to `binding` may take for a caller who stops waiting at
    /// `deadline`: the binding's timeout, or what is left of the deadline (less
    /// [`ANSWER_RESERVE`]) when that is shorter. Less than the policy's minimum left is
    /// a failure at once: the handler is not called for an answer nobody will read.
    fn time_for(
        &self,
        binding: &HandlerBinding,
        deadline: Option<Instant>,
    ) -> Result<Limit, Failure> {
        let own = binding.timeout();
        let Some(deadline) = deadline else {
            return Ok(Limit {
                timeout: own,
                by_caller: false,
            });
        };
        let left = deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(ANSWER_RESERVE);
        let minimum = Duration::from_millis(u64::from(self.policy.min_time_left_ms));
        if left < minimum {
            return Err(Failure::new(
                format!(
                    "not called: {} ms left of the caller's deadline (the minimum is {} ms)",
                    left.as_millis(),
                    minimum.as_millis()
                ),
                "the caller's deadline is too close (--handler-min-time-left-ms)",
            ));
        }
        Ok(if left < own {
            Limit {
                timeout: left,
                by_caller: true,
            }
        } else {
            Limit {
                timeout: own,
                by_caller: false,
            }
        })
    }

    /// Calls the handler, passing on `trace`; never takes longer than the binding's
    /// timeout or what is left of the caller's `deadline` (plus the time to notice
    /// it), and never fails: failures are answers.
    pub async fn invoke(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
        trace: &Trace,
        deadline: Option<Instant>,
    ) -> HandlerAnswer {
        let limit = match self.time_for(binding, deadline) {
            Ok(limit) => limit,
            Err(failure) => return not_called(&invocation.command, &binding.url, failure),
        };
        let max_answer_bytes = self.policy.max_answer_bytes;
        let (span, trace) = spans::start(
            self.tracer.as_ref(),
            binding,
            Operation::Invoke,
            &invocation.command,
            trace,
        );
        let call = async {
            let (headers, endpoint) = self.prepare(binding, &trace)?;
            let _slot = endpoint
                .slots
                .acquire()
                .await
                .map_err(|e| Failure::new("handler busy", e))?;
            let max = max_answer_bytes;
            match binding.kind {
                HandlerKind::Grpc => self.grpc.call(binding, invocation, &headers, max).await,
                HandlerKind::JsonRpc => {
                    let id = endpoint.calls.fetch_add(1, Ordering::Relaxed) + 1;
                    self.json_rpc
                        .call(binding, invocation, id, &headers, max)
                        .await
                }
                HandlerKind::Mcp => self.mcp.call(binding, invocation, &headers, max).await,
            }
        };
        let started = std::time::Instant::now();
        // Boxed: the transports' futures take kilobytes, and unboxed they would make
        // every Execute's future (which tonic moves into a box per call) that large,
        // commands that call no handler included.
        let result = match tokio::time::timeout(limit.timeout, Box::pin(call)).await {
            Ok(result) => result,
            Err(_) => Err(limit.expired(binding)),
        };
        let transport = match binding.kind {
            HandlerKind::Grpc => "grpc",
            HandlerKind::JsonRpc => "json_rpc",
            HandlerKind::Mcp => "mcp",
        };
        let m = metrics();
        m.handler_seconds
            .get_or_create(&TransportLabels { transport })
            .observe(started.elapsed().as_secs_f64());
        let outcome = match &result {
            Ok(HandlerAnswer::Reply { .. }) => "reply",
            Ok(HandlerAnswer::Abort(_)) => "abort",
            Ok(HandlerAnswer::NoAnswer) => "no_answer",
            Ok(HandlerAnswer::Failed(_)) | Err(_) => "failed",
        };
        m.handler_calls
            .get_or_create(&HandlerLabels {
                command: invocation.command.clone(),
                transport,
                result: outcome,
            })
            .inc();
        let _current = spans::end(span, outcome, result.as_ref().err());
        result.unwrap_or_else(|failure| {
            tracing::warn!(
                command = %invocation.command,
                handler = %binding.url,
                trace_id = trace.trace_id(),
                reason = %failure.reason,
                detail = %failure.detail,
                "handler failed"
            );
            HandlerAnswer::Failed(failure.reason)
        })
    }

    /// Gets an MCP prompt command's prompt `prompt` from `server`, for `command` typed
    /// with `arguments`: bounded as [`Handlers::invoke`] is, and never failing: a
    /// failure is [`PromptAnswer::Failed`] with a short reason (the detail is logged).
    pub async fn prompt(
        &self,
        server: &HandlerBinding,
        prompt: &str,
        command: &str,
        arguments: &str,
        trace: &Trace,
        deadline: Option<Instant>,
    ) -> PromptAnswer {
        let limit = match self.time_for(server, deadline) {
            Ok(limit) => limit,
            Err(failure) => {
                return match not_called(command, &server.url, failure) {
                    HandlerAnswer::Failed(reason) => PromptAnswer::Failed(reason),
                    _ => unreachable!("not_called is a failure"),
                }
            }
        };
        let (span, trace) = spans::start(
            self.tracer.as_ref(),
            server,
            Operation::Prompt(prompt),
            command,
            trace,
        );
        let call = async {
            let (headers, endpoint) = self.prepare(server, &trace)?;
            let _slot = endpoint
                .slots
                .acquire()
                .await
                .map_err(|e| Failure::new("handler busy", e))?;
            let max = self.policy.max_answer_bytes;
            self.mcp
                .prompt(server, prompt, command, arguments, &headers, max)
                .await
        };
        let started = std::time::Instant::now();
        let result = match tokio::time::timeout(limit.timeout, Box::pin(call)).await {
            Ok(result) => result,
            Err(_) => Err(limit.expired(server)),
        };
        let m = metrics();
        let transport = "mcp_prompt";
        m.handler_seconds
            .get_or_create(&TransportLabels { transport })
            .observe(started.elapsed().as_secs_f64());
        let outcome = match &result {
            Ok(PromptAnswer::Expanded(_)) => "expanded",
            Ok(PromptAnswer::Usage(_)) => "usage",
            Ok(PromptAnswer::Failed(_)) | Err(_) => "failed",
        };
        m.handler_calls
            .get_or_create(&HandlerLabels {
                command: command.to_owned(),
                transport,
                result: outcome,
            })
            .inc();
        let _current = spans::end(span, outcome, result.as_ref().err());
        result.unwrap_or_else(|failure| {
            tracing::warn!(
                command,
                prompt_server = %server.url,
                trace_id = trace.trace_id(),
                reason = %failure.reason,
                detail = %failure.detail,
                "prompt failed"
            );
            PromptAnswer::Failed(failure.reason)
        })
    }

    /// Every prompt the MCP server `server` lists (for `ctl import-mcp-prompts`),
    /// within its timeout.
    pub async fn list_prompts(&self, server: &HandlerBinding) -> Result<Vec<ListedPrompt>, String> {
        let call = async {
            let (headers, _) = self.prepare(server, &Trace::default())?;
            self.mcp
                .list_prompts(server, &headers, self.policy.max_answer_bytes)
                .await
        };
        match tokio::time::timeout(server.timeout(), call).await {
            Ok(Ok(prompts)) => Ok(prompts),
            Ok(Err(failure)) => Err(format!("{}: {}", failure.reason, failure.detail)),
            Err(_) => Err(format!(
                "{}: no answer within {} ms",
                server.url, server.timeout_ms
            )),
        }
    }

    /// Suggestions for `query`'s argument from its handler, cut to `limit`: Complete's
    /// handler half. The handler sees the command, what was typed, the `sender` and the
    /// `task` (a default one when the request sent none).
    pub async fn suggest(
        &self,
        query: &ArgumentQuery<'_>,
        sender: Option<pb::Sender>,
        task: Option<pb::TaskSnapshot>,
        limit: usize,
        trace: &Trace,
    ) -> Completions<'static> {
        let task = task.unwrap_or_default();
        let invocation = pb::Invocation {
            task_id: task.id.clone(),
            correlation_id: String::new(),
            attempt: 1,
            command: query.command.to_owned(),
            arguments: query.argument.to_owned(),
            sender,
            task: Some(task),
            message: None,
        };
        let timeout = std::time::Duration::from_millis(complete::HANDLER_TIMEOUT_MS);
        if let Some(prompt) = &query.prompt {
            return self
                .complete_prompt(query, prompt, trace, timeout, limit)
                .await;
        }
        let (values, total) = self
            .complete(&query.handler, &invocation, trace, timeout)
            .await;
        complete::from_handler(query, values, total, limit)
    }

    /// Suggestions for an MCP prompt command's argument from its server, within
    /// `timeout`; any failure is no suggestions, logged at debug.
    async fn complete_prompt(
        &self,
        query: &ArgumentQuery<'_>,
        prompt: &str,
        trace: &Trace,
        timeout: std::time::Duration,
        limit: usize,
    ) -> Completions<'static> {
        let server = &query.handler;
        let (span, trace) = spans::start(
            self.tracer.as_ref(),
            server,
            Operation::CompletePrompt,
            query.command,
            trace,
        );
        let call = async {
            let (headers, endpoint) = self.prepare(server, &trace)?;
            let _slot = endpoint
                .slots
                .try_acquire()
                .map_err(|e| Failure::new("handler busy", e))?;
            let max = self.policy.max_answer_bytes;
            self.mcp
                .complete_prompt(server, prompt, query.argument, &headers, max)
                .await
        };
        let result = match tokio::time::timeout(timeout.min(server.timeout()), Box::pin(call)).await
        {
            Ok(result) => result,
            Err(_) => Err(Failure::new("timed out", "completion deadline passed")),
        };
        let _current = spans::end_completion(span, &result);
        match result {
            Ok((start, values, total)) => {
                // Each value replaces the word being typed; the words before it stay.
                let typed_before = &query.argument[..start];
                let head = format!("{}{typed_before}", query.head);
                let query = ArgumentQuery {
                    head: &head,
                    ..query.clone()
                };
                complete::from_handler(&query, values, total, limit)
            }
            Err(failure) => {
                tracing::debug!(
                    command = %query.command,
                    prompt_server = %server.url,
                    reason = %failure.reason,
                    detail = %failure.detail,
                    "prompt server gave no completions"
                );
                Completions::default()
            }
        }
    }

    /// Asks the handler for argument suggestions (`invocation.arguments` is what was
    /// typed): within `timeout`, and any failure (none implemented, an error, a slow or
    /// malformed answer) is no suggestions, logged at debug. Returns the values and how
    /// many the handler says there are.
    async fn complete(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
        trace: &Trace,
        timeout: std::time::Duration,
    ) -> (Vec<(String, String)>, usize) {
        let (span, trace) = spans::start(
            self.tracer.as_ref(),
            binding,
            Operation::Complete,
            &invocation.command,
            trace,
        );
        let call = async {
            let (headers, endpoint) = self.prepare(binding, &trace)?;
            let _slot = endpoint
                .slots
                .try_acquire()
                .map_err(|e| Failure::new("handler busy", e))?;
            let max = self.policy.max_answer_bytes;
            match binding.kind {
                HandlerKind::Grpc => self.grpc.complete(binding, invocation, &headers, max).await,
                HandlerKind::JsonRpc => {
                    let id = endpoint.calls.fetch_add(1, Ordering::Relaxed) + 1;
                    self.json_rpc
                        .complete(binding, invocation, id, &headers, max)
                        .await
                }
                // MCP offers completion for prompts and resources only, not for tools.
                HandlerKind::Mcp => Ok((Vec::new(), 0)),
            }
        };
        // Boxed, as in `invoke`: Complete's future stays small when no handler is asked.
        let call = Box::pin(call);
        let result = match tokio::time::timeout(timeout.min(binding.timeout()), call).await {
            Ok(result) => result,
            Err(_) => Err(Failure::new("timed out", "completion deadline passed")),
        };
        let _current = spans::end_completion(span, &result);
        result.unwrap_or_else(|failure| {
            tracing::debug!(
                command = %invocation.command,
                handler = %binding.url,
                reason = %failure.reason,
                detail = %failure.detail,
                "handler gave no completions"
            );
            (Vec::new(), 0)
        })
    }

    /// What every call to `binding` needs first: its host allowed now (the list may
    /// have changed since registration), its headers read, its endpoint's state.
    fn prepare(
        &self,
        binding: &HandlerBinding,
        trace: &Trace,
    ) -> Result<(CallHeaders, Arc<Endpoint>), Failure> {
        let host_allowed = url::Url::parse(&binding.url)
            .ok()
            .and_then(|u| u.host_str().map(|h| self.policy.allows_host(h)))
            .unwrap_or(false);
        if !host_allowed {
            return Err(Failure::new("handler host not allowed", &binding.url));
        }
        let headers =
            CallHeaders::read(self.policy.secrets_dir.as_deref(), &binding.headers, trace)?;
        Ok((headers, self.endpoint(&binding.url)))
    }

    fn endpoint(&self, url: &str) -> Arc<Endpoint> {
        let mut endpoints = self.endpoints.lock().expect("not poisoned");
        if endpoints.len() >= MAX_ENDPOINTS && !endpoints.contains_key(url) {
            // Forget endpoints with no call in flight (unregistered ones among them);
            // one in use keeps its slots and its count.
            endpoints.retain(|_, e| Arc::strong_count(e) > 1);
        }
        Arc::clone(endpoints.entry(url.to_owned()).or_insert_with(|| {
            Arc::new(Endpoint {
                slots: Semaphore::new(self.policy.max_concurrency),
                calls: AtomicU64::new(0),
            })
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_endpoints_are_forgotten() {
        let handlers = Handlers::new(HandlerPolicy::default()).unwrap();
        let busy = handlers.endpoint("http://busy:1/");
        for i in 0..1000 {
            let _ = handlers.endpoint(&format!("http://h{i}:1/"));
            assert!(handlers
                .grpc
                .channel_for(&format!("http://h{i}:1/"))
                .is_ok());
        }
        let slots = handlers.endpoints.lock().unwrap();
        assert!(slots.len() <= MAX_ENDPOINTS, "{}", slots.len());
        assert!(handlers.grpc.endpoints() <= MAX_ENDPOINTS);
        assert!(
            Arc::ptr_eq(&slots["http://busy:1/"], &busy),
            "the one in use is kept"
        );
    }
}
