//! [`Handlers`]: calls a command's handler over the protocol its binding names.
//!
//! Every call is bounded: by the binding's timeout (which also covers waiting for a
//! free slot and connecting), by a per-endpoint concurrency limit, and by a maximum
//! answer size. Whatever goes wrong becomes a [`HandlerAnswer::Failed`] with a short
//! reason for the reply; the details go to the log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use crate::bodies::call::{Failure, MAX_ENDPOINTS};
use crate::bodies::grpc::GrpcClient;
use crate::bodies::json_rpc::JsonRpcClient;
use crate::pb;
use crate::rules::body::{HandlerAnswer, HandlerBinding, HandlerKind, HandlerPolicy};

/// The clients that call handlers; one per server, shared by all calls.
pub struct Handlers {
    policy: HandlerPolicy,
    grpc: GrpcClient,
    json_rpc: JsonRpcClient,
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Handlers {
    /// Clients under `policy`.
    pub fn new(policy: HandlerPolicy) -> Self {
        // rustls needs one process-wide crypto provider; ring is the one we build.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            policy,
            grpc: GrpcClient::default(),
            json_rpc: JsonRpcClient::new(),
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
        let max_answer_bytes = self.policy.max_answer_bytes;
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
                HandlerKind::Grpc => self.grpc.call(binding, invocation, max_answer_bytes).await,
                HandlerKind::JsonRpc => {
                    self.json_rpc
                        .call(binding, invocation, max_answer_bytes)
                        .await
                }
            }
        };
        let result = match tokio::time::timeout(binding.timeout(), call).await {
            Ok(result) => result,
            Err(_) => Err(Failure::timed_out(binding, "deadline passed")),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_endpoints_are_forgotten() {
        let handlers = Handlers::new(HandlerPolicy::default());
        let busy = handlers.slots_for("http://busy:1/");
        for i in 0..1000 {
            let _ = handlers.slots_for(&format!("http://h{i}:1/"));
            assert!(handlers
                .grpc
                .channel_for(&format!("http://h{i}:1/"))
                .is_ok());
        }
        let slots = handlers.slots.lock().unwrap();
        assert!(slots.len() <= MAX_ENDPOINTS, "{}", slots.len());
        assert!(handlers.grpc.endpoints() <= MAX_ENDPOINTS);
        assert!(
            Arc::ptr_eq(&slots["http://busy:1/"], &busy),
            "the one in use is kept"
        );
    }
}
