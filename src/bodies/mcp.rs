//! Handlers that are MCP servers: the tool `hooks.command.invoked.in`, called over MCP's
//! streamable HTTP transport with `{"context": ...}` (the JSON-RPC handlers' context),
//! as the harness that defined the extension calls it. The context comes back in the
//! tool's structured content, or else as JSON in its first text block, and is read by
//! the same rules as a JSON-RPC `result`.
//!
//! Prompt commands whose prompt is an MCP server's are got the same way: `prompts/list`
//! for the prompt's declared arguments, then `prompts/get`; their argument suggestions
//! come from `completion/complete` with a `ref/prompt`.
//!
//! Each call is one MCP session (initialize, call, close): command bodies are called
//! rarely, and a session per call needs no state kept between calls. What is kept is each
//! server's prompt list, for a short while (see `McpClient::prompt_lists`).

use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CallToolResult, CompleteRequestParams, ContentBlock,
    GetPromptRequestParams, Reference, Role,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bodies::call::{shorten, CallHeaders, Failure};
use crate::bodies::json_rpc::{invocation_context, parse_result};
use crate::pb;
use crate::rules::body::{HandlerAnswer, HandlerBinding};
use crate::rules::prompt::{
    completing, map_arguments, mcp_expansion, ListedPrompt, PromptAnswer, PromptArgument,
    PromptPart,
};

/// The tool a command body is.
pub const TOOL: &str = "hooks.command.invoked.in";

/// How long a server's prompt list is kept: each Execute of an MCP prompt command and
/// each completion needs its prompt's declared arguments, and asking `prompts/list`
/// every time is a round trip more per call.
const PROMPT_LIST_TTL: Duration = Duration::from_secs(10);

/// Calls MCP handlers with one pooled HTTP client.
pub(super) struct McpClient {
    http: reqwest::Client,
    /// Each server's prompts and their declared arguments, by URL, with when they were
    /// listed. A prompt the list lacks is listed again at once (the server may have
    /// added it), and a failed `prompts/get` drops the server's list (it may have
    /// changed); otherwise a list is kept for [`PROMPT_LIST_TTL`].
    prompt_lists: Mutex<HashMap<String, Listed>>,
}

/// A server's prompt list and when it was asked for.
type Listed = (Instant, Arc<Vec<ListedPrompt>>);

impl McpClient {
    /// Calls handlers with `http`.
    pub(super) fn new(http: reqwest::Client) -> Self {
        Self {
            http,
            prompt_lists: Mutex::new(HashMap::new()),
        }
    }

    /// An MCP session with `binding`'s server, `headers` on every request, answers of
    /// at most `max_answer_bytes` read.
    async fn session(
        &self,
        binding: &HandlerBinding,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<RunningService<RoleClient, ()>, Failure> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(binding.url.clone());
        config.custom_headers = headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        config.max_json_response_size = max_answer_bytes;
        config.reinit_on_expired_session = false;
        let transport = StreamableHttpClientTransport::with_client(self.http.clone(), config);
        ().serve(transport)
            .await
            .map_err(|e| Failure::new("handler unreachable", e))
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
        let session = self.session(binding, headers, max_answer_bytes).await?;
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

impl McpClient {
    /// Gets the prompt `prompt` for the command `command` typed with `arguments`.
    pub(super) async fn prompt(
        &self,
        server: &HandlerBinding,
        prompt: &str,
        command: &str,
        arguments: &str,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<PromptAnswer, Failure> {
        let session = self.session(server, headers, max_answer_bytes).await?;
        let got = match self
            .declared_arguments(&session, &list_key(server), prompt)
            .await
        {
            Ok(declared) => get_prompt(&session, prompt, &declared, command, arguments).await,
            Err(failure) => Err(failure),
        };
        let _ = session.cancel().await;
        if got.is_err() {
            // The server's prompts may have changed: list them again next time.
            self.forget_prompts(&list_key(server));
        }
        got
    }

    /// The server's suggestions for the argument of `prompt` that `typed` is completing:
    /// the values, each with the text before it (`typed`'s prefix), and the total the
    /// server knows of.
    pub(super) async fn complete_prompt(
        &self,
        server: &HandlerBinding,
        prompt: &str,
        typed: &str,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<(usize, Vec<(String, String)>, usize), Failure> {
        let session = self.session(server, headers, max_answer_bytes).await?;
        let asked = async {
            let declared = self
                .declared_arguments(&session, &list_key(server), prompt)
                .await?;
            let Some(first) = declared.first() else {
                return Ok((0, Vec::new(), 0));
            };
            let (index, start) = completing(declared.len(), typed);
            let argument = declared.get(index).unwrap_or(first);
            let params = CompleteRequestParams::new(
                Reference::for_prompt(prompt),
                ArgumentInfo::new(argument.name.clone(), typed[start..].to_owned()),
            );
            let result = session
                .complete(params)
                .await
                .map_err(|e| Failure::new("completion failed", e))?;
            let completion = result.completion;
            let total = completion
                .total
                .map_or(completion.values.len(), |t| t as usize);
            let values = completion
                .values
                .into_iter()
                .map(|v| (v, String::new()))
                .collect();
            Ok((start, values, total))
        }
        .await;
        let _ = session.cancel().await;
        if asked.is_err() {
            self.forget_prompts(&list_key(server));
        }
        asked
    }
}

impl McpClient {
    /// Every prompt `server` lists.
    pub(super) async fn list_prompts(
        &self,
        server: &HandlerBinding,
        headers: &CallHeaders,
        max_answer_bytes: usize,
    ) -> Result<Vec<ListedPrompt>, Failure> {
        let session = self.session(server, headers, max_answer_bytes).await?;
        let listed = session.list_all_prompts().await;
        let _ = session.cancel().await;
        let prompts = listed.map_err(|e| Failure::new("prompt listing failed", e))?;
        Ok(listed_of(prompts))
    }
}

/// What a prompt list is kept under: the server and the headers sent to it (a server
/// may list other prompts for another token).
fn list_key(server: &HandlerBinding) -> String {
    let mut key = server.url.clone();
    for header in &server.headers {
        key.push('\n');
        key.push_str(&header.name);
        key.push('=');
        key.push_str(&header.value_file);
    }
    key
}

/// A server's `prompts/list` answer as the rules read it.
fn listed_of(prompts: Vec<rmcp::model::Prompt>) -> Vec<ListedPrompt> {
    prompts
        .into_iter()
        .map(|p| ListedPrompt {
            name: p.name,
            description: p.description.or(p.title),
            arguments: declared_of(p.arguments),
        })
        .collect()
}

fn declared_of(arguments: Option<Vec<rmcp::model::PromptArgument>>) -> Vec<PromptArgument> {
    arguments
        .unwrap_or_default()
        .into_iter()
        .map(|a| PromptArgument {
            name: a.name,
            required: a.required.unwrap_or(false),
        })
        .collect()
}

impl McpClient {
    /// The arguments `prompt` declares on the server (its list kept under `url`, see
    /// `list_key`), from its prompt list (cached, see `prompt_lists`); a prompt it does
    /// not list fails.
    async fn declared_arguments(
        &self,
        session: &RunningService<RoleClient, ()>,
        url: &str,
        prompt: &str,
    ) -> Result<Vec<PromptArgument>, Failure> {
        let cached = {
            let lists = self.prompt_lists.lock().expect("prompt lists");
            lists
                .get(url)
                .filter(|(at, _)| at.elapsed() < PROMPT_LIST_TTL)
                .map(|(_, list)| Arc::clone(list))
        };
        if let Some(found) = cached
            .as_deref()
            .and_then(|list| list.iter().find(|p| p.name == prompt))
        {
            return Ok(found.arguments.clone());
        }
        let listed = listed_of(
            session
                .list_all_prompts()
                .await
                .map_err(|e| Failure::new("prompt listing failed", e))?,
        );
        let found = listed
            .iter()
            .find(|p| p.name == prompt)
            .map(|p| p.arguments.clone());
        let mut lists = self.prompt_lists.lock().expect("prompt lists");
        // Servers no longer asked (unregistered, say) keep no list.
        lists.retain(|_, (at, _)| at.elapsed() < PROMPT_LIST_TTL);
        lists.insert(url.to_owned(), (Instant::now(), Arc::new(listed)));
        drop(lists);
        found.ok_or_else(|| {
            Failure::new(
                format!("the server has no prompt {}", shorten(prompt, 64)),
                prompt,
            )
        })
    }

    /// Drops what is known of `url`'s prompts.
    fn forget_prompts(&self, url: &str) {
        self.prompt_lists.lock().expect("prompt lists").remove(url);
    }
}

/// `prompts/get` with the arguments mapped from what was typed.
async fn get_prompt(
    session: &RunningService<RoleClient, ()>,
    prompt: &str,
    declared: &[PromptArgument],
    command: &str,
    arguments: &str,
) -> Result<PromptAnswer, Failure> {
    let mapped = match map_arguments(command, declared, arguments) {
        Ok(mapped) => mapped,
        Err(usage) => return Ok(PromptAnswer::Usage(usage)),
    };
    let mut params = GetPromptRequestParams::new(prompt);
    if !mapped.is_empty() {
        params.arguments = Some(
            mapped
                .into_iter()
                .map(|(name, value)| (name, Value::String(value)))
                .collect(),
        );
    }
    let result = session
        .get_prompt(params)
        .await
        .map_err(|e| Failure::new("prompt call failed", e))?;
    let parts: Vec<PromptPart> = result
        .messages
        .into_iter()
        .map(|message| match (message.role, message.content) {
            (Role::User, ContentBlock::Text(text)) => PromptPart::UserText(text.text.clone()),
            (Role::Assistant, _) => PromptPart::Other("an assistant message".into()),
            (_, ContentBlock::Image(_)) => PromptPart::Other("an image".into()),
            (_, ContentBlock::Audio(_)) => PromptPart::Other("an audio clip".into()),
            (_, ContentBlock::Resource(_)) => PromptPart::Other("a resource".into()),
            (_, ContentBlock::ResourceLink(_)) => PromptPart::Other("a resource link".into()),
            (_, _) => PromptPart::Other("content of another kind".into()),
        })
        .collect();
    Ok(match mcp_expansion(&parts, declared, arguments) {
        Ok(text) => PromptAnswer::Expanded(text),
        Err(reason) => PromptAnswer::Failed(reason),
    })
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
