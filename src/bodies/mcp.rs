//! Handlers that are MCP servers: the tool `hooks.command.invoked.in`, called over MCP's
//! streamable HTTP transport with `{"context": ...}` (the JSON-RPC handlers' context),
//! as the harness that defined the extension calls it. The context comes back in the
//! tool's structured content, or else as JSON in its first text block, and is read by
//! the same rules as a JSON-RPC `result`.
//!
//! Each call is one MCP session (initialize, call, close): command bodies are called
//! rarely, and a session per call needs no state kept between calls.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::{json, Value};

use crate::bodies::call::{shorten, CallHeaders, Failure};
use crate::bodies::json_rpc::{invocation_context, parse_result};
use crate::pb;
use crate::rules::body::{HandlerAnswer, HandlerBinding};

/// The tool a command body is.
pub const TOOL: &str = "hooks.command.invoked.in";

/// Calls MCP handlers with one pooled HTTP client.
pub(super) struct McpClient {
    http: reqwest::Client,
}

impl McpClient {
    /// Calls handlers with `http`.
    pub(super) fn new(http: reqwest::Client) -> Self {
        Self { http }
    }

    /// Calls the tool with `invocation`'s context and `headers` on every request of
    /// the session; answers of at most `max_answer_bytes` are read.
    pub(super) async fn call(
        &self,
        binding: &HandlerBinding,
        invocation: &pb::Invocation,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<HandlerAnswer, Failure> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(binding.url.clone());
        config.custom_headers = headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        config.max_json_response_size = max_answer_bytes;
        config.reinit_on_expired_session = false;
        let transport = StreamableHttpClientTransport::with_client(self.http.clone(), config);
        let session =
            ().serve(transport)
                .await
                .map_err(|e| Failure::new("handler unreachable", e))?;
        let arguments = json!({"context": invocation_context(invocation)});
        let Value::Object(arguments) = arguments else {
            unreachable!("an object")
        };
        let called = session
            .call_tool(CallToolRequestParams::new(TOOL).with_arguments(arguments))
            .await;
        // The session ends whatever the call did; a failure to close is not the call's.
        let _ = session.cancel().await;
        let result = called.map_err(|e| Failure::new("handler call failed", e))?;
        answer_of(result)
    }
}

/// Reads a tool result: an error result is a failure; otherwise the context is the
/// structured content, or else the first text block as JSON.
fn answer_of(result: CallToolResult) -> Result<HandlerAnswer, Failure> {
    let first_text = result
        .content
        .iter()
        .find_map(|block| block.as_text().map(|t| t.text.clone()));
    if result.is_error == Some(true) {
        let detail = first_text.unwrap_or_default();
        return Err(Failure::new(
            format!("handler tool failed: {}", shorten(&detail, 120)),
            detail,
        ));
    }
    let context = match (result.structured_content, first_text) {
        (Some(structured), _) => structured,
        (None, Some(text)) => serde_json::from_str(&text).map_err(Failure::malformed)?,
        (None, None) => Value::Null,
    };
    parse_result(context)
}
