//! What runs a registered command, as data: a built-in, nothing, a handler elsewhere
//! (with its validated binding and the operator's limits), or a prompt for the model;
//! and what a handler answered.
//!
//! These are the types the registry stores and Execute dispatches on; the clients that
//! call handlers live in `crate::bodies`, which depends on this module, not the reverse.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::pb;
use crate::rules::builtins::Builtin;
use crate::rules::prompt::PromptTemplate;
use crate::rules::text::quote_prefix;

/// What runs a registered command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    /// A built-in command of this service.
    Builtin {
        /// Which one.
        builtin: Builtin,
    },
    /// Nothing runs it: Execute answers "no handler".
    None,
    /// A handler elsewhere.
    Handler {
        /// Where, and how long to wait.
        handler: HandlerBinding,
    },
    /// A prompt: Execute answers its expansion, for the model, instead of a reply.
    Prompt {
        /// What it expands from.
        prompt: PromptBody,
    },
}

impl Body {
    /// The body a request's bindings give: a handler, a prompt, or none; never both.
    /// `prefix` (for example `commands[0].`, or empty) qualifies the fields in errors.
    pub fn from_bindings(
        prefix: &str,
        handler: Option<&pb::HandlerBinding>,
        prompt: Option<&pb::PromptBinding>,
        policy: &HandlerPolicy,
    ) -> Result<Self, Error> {
        Ok(match (handler, prompt) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    format!("{prefix}prompt"),
                    "a command has a handler or a prompt, never both",
                ))
            }
            (None, None) => Body::None,
            (Some(binding), None) => Body::Handler {
                handler: HandlerBinding::parse(&format!("{prefix}handler"), binding, policy)?,
            },
            (None, Some(binding)) => Body::Prompt {
                prompt: PromptBody::parse(&format!("{prefix}prompt"), binding, policy)?,
            },
        })
    }
}

/// What a prompt command expands from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum PromptBody {
    /// A template of its own.
    Template {
        /// The template.
        template: PromptTemplate,
    },
    /// A prompt of an MCP server.
    Mcp {
        /// The server (an MCP binding, with the handlers' limits).
        server: HandlerBinding,
        /// The prompt's name there.
        prompt: String,
    },
}

/// The longest MCP prompt name accepted, in characters.
pub const MAX_PROMPT_NAME_CHARS: usize = 256;

impl PromptBody {
    /// Checks a prompt binding from a request; `field` (for example `prompt`) names it
    /// in errors.
    pub fn parse(
        field: &str,
        binding: &pb::PromptBinding,
        policy: &HandlerPolicy,
    ) -> Result<Self, Error> {
        use pb::prompt_binding::Source;
        match &binding.source {
            None => Err(Error::invalid(field, "must set template or mcp")),
            Some(Source::Template(text)) => Ok(Self::Template {
                template: PromptTemplate::parse(&format!("{field}.template"), text)?,
            }),
            Some(Source::Mcp(mcp)) => {
                let field = format!("{field}.mcp");
                let name = &mcp.name;
                let len = name.chars().count();
                if name.is_empty() || len > MAX_PROMPT_NAME_CHARS {
                    return Err(Error::invalid(
                        format!("{field}.name"),
                        format!("must be 1 to {MAX_PROMPT_NAME_CHARS} characters (got {len})"),
                    ));
                }
                if let Some(c) = name.chars().find(|c| c.is_control()) {
                    return Err(Error::invalid(
                        format!("{field}.name"),
                        format!(
                            "must not contain control characters (found U+{:04X})",
                            c as u32
                        ),
                    ));
                }
                let server = HandlerBinding::parse_parts(
                    &field,
                    HandlerKind::Mcp,
                    &mcp.url,
                    format!("{field}.url"),
                    mcp.timeout_ms,
                    &mcp.headers,
                    policy,
                )?;
                Ok(Self::Mcp {
                    server,
                    prompt: name.clone(),
                })
            }
        }
    }

    /// The binding as protobuf.
    pub fn to_proto(&self) -> pb::PromptBinding {
        use pb::prompt_binding::Source;
        let source = match self {
            Self::Template { template } => Source::Template(template.as_str().to_owned()),
            Self::Mcp { server, prompt } => {
                let binding = server.to_proto();
                Source::Mcp(pb::McpPrompt {
                    url: server.url.clone(),
                    name: prompt.clone(),
                    timeout_ms: binding.timeout_ms,
                    headers: binding.headers,
                })
            }
        };
        pb::PromptBinding {
            source: Some(source),
        }
    }
}

/// Which protocol a handler speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerKind {
    /// Our `CommandHandler` gRPC service.
    Grpc,
    /// JSON-RPC 2.0 over HTTP(S), method `command.invoked.in`.
    JsonRpc,
    /// An MCP server's tool `hooks.command.invoked.in`, over streamable HTTP.
    Mcp,
}

/// A header sent with every call to a handler, its value read from a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerHeader {
    /// The header's name (lower case, an HTTP token).
    pub name: String,
    /// The value's file, relative to the secrets directory, with no `..`.
    pub value_file: String,
}

/// A validated handler binding, persisted with its command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerBinding {
    /// The protocol.
    pub kind: HandlerKind,
    /// The endpoint URL (`http` or `https`), as registered.
    pub url: String,
    /// How long Execute waits, in milliseconds (resolved: never 0).
    pub timeout_ms: u32,
    /// Headers sent with every call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HandlerHeader>,
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
    /// The directory header values are read from; without one, bindings may name no
    /// headers.
    pub secrets_dir: Option<PathBuf>,
    /// Extra CA certificates (PEM) trusted for `https://` handlers, beside the system's.
    pub ca_file: Option<PathBuf>,
    /// Least time left of a caller's deadline for a handler to be called, in ms; with
    /// less, the command fails at once.
    pub min_time_left_ms: u32,
}

impl Default for HandlerPolicy {
    fn default() -> Self {
        Self {
            default_timeout_ms: 5_000,
            max_timeout_ms: 30_000,
            allowed_hosts: Vec::new(),
            max_answer_bytes: 64 * 1024,
            max_concurrency: 32,
            secrets_dir: None,
            ca_file: None,
            min_time_left_ms: 50,
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

/// Most headers one binding may name.
pub const MAX_HEADERS: usize = 16;

impl HandlerHeader {
    /// Checks a header from a request; `field` names it in errors.
    fn parse(
        field: &str,
        header: &pb::HandlerHeader,
        policy: &HandlerPolicy,
    ) -> Result<Self, Error> {
        if policy.secrets_dir.is_none() {
            return Err(Error::invalid(
                field,
                "headers need the server's --handler-secrets-dir (none is set)",
            ));
        }
        let name = &header.name;
        let token =
            |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || name.len() > 64 || !name.chars().all(token) {
            return Err(Error::invalid(
                format!("{field}.name"),
                format!(
                    "must be a lower-case HTTP header name of at most 64 characters (got {})",
                    quote_prefix(name)
                ),
            ));
        }
        if matches!(
            name.as_str(),
            "content-type" | "content-length" | "te" | "host" | "traceparent" | "tracestate"
        ) || name.starts_with("grpc-")
        {
            return Err(Error::invalid(
                format!("{field}.name"),
                format!("{name:?} is set by the service itself"),
            ));
        }
        let file = &header.value_file;
        let relative = Path::new(file);
        let plain = !file.is_empty()
            && file.len() <= 256
            && relative
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain {
            return Err(Error::invalid(
                format!("{field}.value_file"),
                format!(
                    "must be a relative path inside --handler-secrets-dir, without `..` (got {})",
                    quote_prefix(file)
                ),
            ));
        }
        Ok(Self {
            name: name.clone(),
            value_file: file.clone(),
        })
    }
}

/// The longest handler URL accepted, in characters: far above any real endpoint, and
/// small enough that errors and listings quoting it stay small.
pub const MAX_URL_CHARS: usize = 2048;

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
            Some(E::Mcp(url)) => (HandlerKind::Mcp, url, format!("{field}.mcp")),
            None => return Err(Error::invalid(field, "must set grpc, json_rpc or mcp")),
        };
        Self::parse_parts(
            field,
            kind,
            url,
            url_field,
            binding.timeout_ms,
            &binding.headers,
            policy,
        )
    }

    /// Checks a binding's parts: its endpoint `url` (named `url_field` in errors), its
    /// timeout and headers (named under `field`).
    pub fn parse_parts(
        field: &str,
        kind: HandlerKind,
        url: &str,
        url_field: String,
        timeout_ms: u32,
        headers: &[pb::HandlerHeader],
        policy: &HandlerPolicy,
    ) -> Result<Self, Error> {
        let len = url.chars().count();
        if len > MAX_URL_CHARS {
            return Err(Error::invalid(
                &url_field,
                format!("must be at most {MAX_URL_CHARS} characters (got {len})"),
            ));
        }
        if let Some(c) = url.chars().find(|c| c.is_whitespace() || c.is_control()) {
            // The URL is kept as registered, so nothing may hide in it.
            return Err(Error::invalid(
                &url_field,
                format!("must not contain whitespace or control characters (found {c:?})"),
            ));
        }
        let parsed = url::Url::parse(url).map_err(|e| {
            Error::invalid(
                &url_field,
                format!("is not a URL ({e}): {}", quote_prefix(url)),
            )
        })?;
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
        let timeout_ms = match timeout_ms {
            0 => policy.default_timeout_ms,
            t if t > policy.max_timeout_ms => {
                return Err(Error::invalid(
                    format!("{field}.timeout_ms"),
                    format!("must be at most {} (got {t})", policy.max_timeout_ms),
                ))
            }
            t => t,
        };
        if headers.len() > MAX_HEADERS {
            return Err(Error::invalid(
                format!("{field}.headers"),
                format!("must name at most {MAX_HEADERS} headers"),
            ));
        }
        let headers = headers
            .iter()
            .enumerate()
            .map(|(i, h)| HandlerHeader::parse(&format!("{field}.headers[{i}]"), h, policy))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            kind,
            // As registered (ListSpecs shows what the operator wrote); it has no
            // whitespace or control characters, so it is what the parser checked.
            url: url.to_owned(),
            timeout_ms,
            headers,
        })
    }

    /// The binding as protobuf.
    pub fn to_proto(&self) -> pb::HandlerBinding {
        use pb::handler_binding::Endpoint as E;
        let endpoint = match self.kind {
            HandlerKind::Grpc => E::Grpc(self.url.clone()),
            HandlerKind::JsonRpc => E::JsonRpc(self.url.clone()),
            HandlerKind::Mcp => E::Mcp(self.url.clone()),
        };
        pb::HandlerBinding {
            endpoint: Some(endpoint),
            timeout_ms: self.timeout_ms,
            headers: self
                .headers
                .iter()
                .map(|h| pb::HandlerHeader {
                    name: h.name.clone(),
                    value_file: h.value_file.clone(),
                })
                .collect(),
        }
    }

    /// How long a call may take.
    pub fn timeout(&self) -> Duration {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
