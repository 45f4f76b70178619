//! Handlers that implement our `CommandHandler` gRPC service.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::bodies::call::{CallHeaders, Failure, MAX_ENDPOINTS};
use crate::codes;
use crate::pb::{self, command_handler_client::CommandHandlerClient};
use crate::rules::body::{HandlerAnswer, HandlerBinding};

/// One lazily connected, shared channel per endpoint.
pub(super) struct GrpcClient {
    channels: Mutex<HashMap<String, Channel>>,
    /// Extra CA certificates (PEM) for `https://` handlers.
    ca: Option<Vec<u8>>,
}

impl GrpcClient {
    /// Channels that trust `ca` (PEM) beside the system's roots for TLS.
    pub(super) fn new(ca: Option<Vec<u8>>) -> Self {
        Self {
            channels: Mutex::default(),
            ca,
        }
    }

    pub(super) fn channel_for(&self, url: &str) -> Result<Channel, Failure> {
        let mut channels = self.channels.lock().expect("not poisoned");
        if let Some(channel) = channels.get(url) {
            return Ok(channel.clone());
        }
        let mut endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| Failure::new("bad handler endpoint", e))?
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true);
        if url.starts_with("https://") {
            let mut tls = ClientTlsConfig::new().with_native_roots();
            if let Some(pem) = &self.ca {
                tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
            }
            endpoint = endpoint
                .tls_config(tls)
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

    #[cfg(test)]
    pub(super) fn endpoints(&self) -> usize {
        self.channels.lock().expect("not poisoned").len()
    }

    /// Calls `Handle` with `invocation` and `headers` as metadata; answers of at most
    /// `max_answer_bytes` are read.
    pub(super) async fn call(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<HandlerAnswer, Failure> {
        let mut client = CommandHandlerClient::new(self.channel_for(&binding.url)?)
            .max_decoding_message_size(max_answer_bytes);
        let mut request = tonic::Request::new(invocation.clone());
        request.set_timeout(binding.timeout());
        with_metadata(&mut request, headers)?;
        let result = client
            .handle(request)
            .await
            .map_err(|status| failure(&status, binding, max_answer_bytes))?;
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
}

impl GrpcClient {
    /// Calls `Complete` with `invocation` and `headers` as metadata: the values (with
    /// their descriptions) and the total the handler gives.
    pub(super) async fn complete(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<(Vec<(String, String)>, usize), Failure> {
        let mut client = CommandHandlerClient::new(self.channel_for(&binding.url)?)
            .max_decoding_message_size(max_answer_bytes);
        let mut request = tonic::Request::new(invocation.clone());
        request.set_timeout(binding.timeout());
        with_metadata(&mut request, headers)?;
        let answer = client
            .complete(request)
            .await
            .map_err(|status| failure(&status, binding, max_answer_bytes))?
            .into_inner();
        let total = answer.total as usize;
        Ok((
            answer
                .values
                .into_iter()
                .map(|c| (c.value, c.description))
                .collect(),
            total,
        ))
    }
}

/// Puts `headers` on `request` as gRPC metadata.
fn with_metadata<T>(request: &mut tonic::Request<T>, headers: &CallHeaders) -> Result<(), Failure> {
    for (name, value) in headers.iter() {
        let key = tonic::metadata::MetadataKey::from_bytes(name.as_str().as_bytes())
            .map_err(|e| Failure::new("bad handler header", e))?;
        let value = tonic::metadata::MetadataValue::try_from(value.as_bytes())
            .map_err(|e| Failure::new("bad handler header", e))?;
        request.metadata_mut().insert(key, value);
    }
    Ok(())
}

fn failure(status: &tonic::Status, binding: &HandlerBinding, max_answer_bytes: usize) -> Failure {
    use tonic::Code;
    let failure = match status.code() {
        // The deadline we sent with the call (grpc-timeout) passed, on either side.
        Code::DeadlineExceeded | Code::Cancelled => Failure::timed_out(binding, status),
        Code::OutOfRange | Code::ResourceExhausted if status.message().contains("too large") => {
            Failure::new(
                format!("answer larger than {max_answer_bytes} bytes"),
                status,
            )
        }
        Code::Unavailable => Failure::new("handler unreachable", status),
        code => Failure::new(format!("handler answered {}", codes::name(code)), status),
    };
    Failure {
        grpc_code: Some(status.code()),
        ..failure
    }
}
