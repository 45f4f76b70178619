//! `a2a-commands ctl`: manage a running server over its gRPC API from the same binary
//! (so it works with `kubectl exec` in the distroless image), and check a commands file
//! offline. Every failure is one line: `a2a-commands ctl: <what>`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_stream::StreamExt as _;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::Request;

use crate::bodies::Handlers;
use crate::config::{CtlArgs, CtlVerb, RegisterArgs};
use crate::pb::{self, command_service_client::CommandServiceClient};
use crate::registry::commands_file;
use crate::registry::prompt_files;
use crate::registry::Declared;
use crate::rules::body::{Body, HandlerBinding, HandlerKind, HandlerPolicy, PromptBody};
use crate::rules::policy::{Access, Role};
use crate::rules::prompt::argument_hint;
use crate::rules::spec::CommandSpec;

type Client = CommandServiceClient<Channel>;

/// Writes one line to standard output (see [`write_out`]).
macro_rules! say {
    ($($arg:tt)*) => {
        write_out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Set while `ctl` makes changes: a reader that goes away then does not stop them.
static CHANGING: AtomicBool = AtomicBool::new(false);
/// Set once the reader has gone: nothing more is written.
static READER_GONE: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output. A reader that went away (`ctl list | head -1`)
/// ends the process quietly, as other command-line tools end, where `print!` would
/// panic. (Restoring SIGPIPE's default instead would also kill the process when a
/// server closes its socket.)
pub fn write_out(text: &str) {
    use std::io::Write as _;
    if READER_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            if CHANGING.load(Ordering::Relaxed) {
                // Stopping halfway would leave some changes unmade: finish them quietly.
                READER_GONE.store(true, Ordering::Relaxed);
                return;
            }
            std::process::exit(0);
        }
        eprintln!("a2a-commands: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// Runs `args`' verb; the error is the one line to print.
pub async fn run(args: CtlArgs) -> Result<(), String> {
    if let CtlVerb::Check { file, handlers } = &args.verb {
        let policy = crate::config::handler_policy(handlers).map_err(|e| e.to_string())?;
        return check(file, &policy);
    }
    if let CtlVerb::Fleet {
        fleet,
        config,
        json,
    } = &args.verb
    {
        return fleet_members(fleet, config.as_deref(), *json).await;
    }
    let imported = match &args.verb {
        CtlVerb::ImportPrompts { path, output } => Some((prompt_files::import(path)?, output)),
        CtlVerb::ImportMcpPrompts { url, output } => Some((mcp_prompts(url).await?, output)),
        _ => None,
    };
    if let Some((imported, Some(out))) = &imported {
        // A commands file: nothing is sent, so no server is needed.
        let text = commands_file::render(imported.commands.iter().map(|(s, b, a)| (s, b, a)));
        std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        say!(
            "wrote {} prompt commands to {}",
            imported.commands.len(),
            out.display()
        );
        return refusals(&imported.refused);
    }
    let mut client = connect(&args).await?;
    let result = match imported {
        Some((imported, None)) => {
            CHANGING.store(true, Ordering::Relaxed);
            // Replacing, but never widening an operator's restriction: the files carry no
            // access of their own.
            let registered = register_all(&mut client, &args, imported.commands, true, false).await;
            registered.and(refusals(&imported.refused))
        }
        _ => verb(&mut client, &args).await,
    };
    // A TLS 1.3 server that wants a client certificate ends the connection only after
    // the handshake, so the first call fails with a closed or broken connection.
    let tls_without_cert = args.addr.trim().starts_with("https://") && args.tls_cert.is_none();
    result.map_err(|line| {
        if tls_without_cert && line.contains("transport error") && !line.contains("--tls-") {
            format!("{line} (if the server requires client certificates, pass --tls-cert and --tls-key)")
        } else {
            line
        }
    })
}

/// Runs every verb but `check` over `client`.
async fn verb(client: &mut Client, args: &CtlArgs) -> Result<(), String> {
    let changes = matches!(
        args.verb,
        CtlVerb::Register(_)
            | CtlVerb::Unregister { .. }
            | CtlVerb::Import { .. }
            | CtlVerb::ImportPrompts { output: None, .. }
            | CtlVerb::ImportMcpPrompts { output: None, .. }
    );
    CHANGING.store(changes, Ordering::Relaxed);
    match &args.verb {
        CtlVerb::List { json } => list(client, *json).await,
        CtlVerb::Register(register_args) => register(client, args, register_args).await,
        CtlVerb::Unregister { names } => {
            for name in names {
                let request = authorized(args, pb::UnregisterRequest { name: name.clone() })?;
                let revision = client
                    .unregister(request)
                    .await
                    .map_err(|s| status_line(&s))?
                    .into_inner()
                    .revision;
                say!("unregistered /{name} (revision {revision})");
            }
            Ok(())
        }
        CtlVerb::Watch { json } => watch(client, *json).await,
        CtlVerb::Export { output } => {
            let listed = list_specs(client).await?;
            let declared = declared_of(&listed)?;
            let text = commands_file::render(declared.iter().map(|(s, b, a)| (s, b, a)));
            match output {
                Some(path) => std::fs::write(path, text)
                    .map_err(|e| format!("cannot write {}: {e}", path.display())),
                None => {
                    write_out(&text);
                    Ok(())
                }
            }
        }
        CtlVerb::Import { file } => register_all(client, args, read_file(file)?, true, true).await,
        CtlVerb::ImportPrompts { .. } | CtlVerb::ImportMcpPrompts { .. } => {
            unreachable!("handled in run")
        }
        CtlVerb::Check { .. } | CtlVerb::Fleet { .. } => unreachable!("handled above"),
    }
}

/// `ctl fleet`: each live sidecar and the revision it applied, from etcd; an error if
/// they do not all show the same.
async fn fleet_members(
    args: &crate::config::FleetArgs,
    config: Option<&Path>,
    json: bool,
) -> Result<(), String> {
    use crate::registry::fleet::{etcd::Etcd, layout::Keys, members};
    let options = crate::config::fleet_settings(args, config)
        .map_err(|e| e.to_string())?
        .ok_or("ctl fleet needs the fleet's etcd: --fleet-etcd-endpoints or A2A_COMMANDS_FLEET_ETCD_ENDPOINTS")?;
    let etcd = Etcd::new(&options)?;
    let listed = members::list(&etcd, &Keys::new(&options.prefix))
        .await
        .map_err(|e| e.to_string())?;
    if json {
        say!(
            "{}",
            serde_json::to_string(&listed).expect("members serialize")
        );
    } else {
        say!(
            "{:<32} {:<24} {:>10} {:>14}",
            "MEMBER",
            "ADDR",
            "REVISION",
            "ETCD_REVISION"
        );
        for m in &listed {
            say!(
                "{:<32} {:<24} {:>10} {:>14}",
                m.name,
                m.addr,
                m.revision,
                m.etcd_revision
            );
        }
    }
    let revisions: std::collections::BTreeSet<u64> = listed.iter().map(|m| m.revision).collect();
    if revisions.len() > 1 {
        return Err(format!(
            "the {} live sidecars have applied different revisions: {revisions:?}",
            listed.len()
        ));
    }
    Ok(())
}

/// Each file or prompt an import refused, on stderr; an error if there was any.
fn refusals(refused: &[String]) -> Result<(), String> {
    for line in refused {
        eprintln!("{line}");
    }
    match refused.len() {
        0 => Ok(()),
        n => Err(format!("{n} not imported (see above)")),
    }
}

/// Every prompt the MCP server at `url` lists, as prompt commands of the same name.
async fn mcp_prompts(url: &str) -> Result<prompt_files::Imported, String> {
    let policy = client_policy();
    let server = HandlerBinding::parse_parts(
        "url",
        HandlerKind::Mcp,
        url,
        "url".to_owned(),
        0,
        &[],
        &policy,
    )
    .map_err(|e| e.to_string())?;
    let handlers = Handlers::new(policy.clone()).map_err(|e| e.to_string())?;
    let listed = handlers.list_prompts(&server).await?;
    let mut imported = prompt_files::Imported::default();
    for prompt in listed {
        let description = prompt
            .description
            .as_deref()
            .map(|d| crate::rules::text::first_py_line(d.trim()).to_owned())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| format!("The MCP prompt {}", prompt.name));
        let description: String = description
            .chars()
            .take(crate::rules::spec::MAX_DESCRIPTION_CHARS)
            .collect();
        let hint = argument_hint(&prompt.arguments);
        let name = prompt.name.replace('_', "-");
        let spec = match CommandSpec::new("", &name, &description, &hint) {
            Ok(spec) => spec,
            Err(e) => {
                imported
                    .refused
                    .push(format!("prompt {:?}: skipped: {e}", prompt.name));
                continue;
            }
        };
        // The server's own default timeout, not the listing's.
        let server = HandlerBinding {
            timeout_ms: 0,
            ..server.clone()
        };
        let body = Body::Prompt {
            prompt: PromptBody::Mcp {
                server,
                prompt: prompt.name,
            },
        };
        imported.commands.push((spec, body, Access::default()));
    }
    Ok(imported)
}

/// The policy a client checks files with: the server's rules of shape; the server
/// applies its own limits (hosts, timeouts, secrets) when the commands arrive.
fn client_policy() -> HandlerPolicy {
    HandlerPolicy {
        max_timeout_ms: u32::MAX,
        secrets_dir: Some(".".into()),
        ..HandlerPolicy::default()
    }
}

/// Checks `file` as `serve` would with `policy`.
fn check(file: &Path, policy: &HandlerPolicy) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let problems = commands_file::check(&text, policy);
    if problems.is_empty() {
        say!("{}: valid", file.display());
        return Ok(());
    }
    for problem in &problems {
        eprintln!("{}: {problem}", file.display());
    }
    Err(format!(
        "{}: {} problem{}",
        file.display(),
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    ))
}

fn read_file(file: &Path) -> Result<Vec<Declared>, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    commands_file::parse(&text, &client_policy()).map_err(|e| format!("{}: {e}", file.display()))
}

/// The URL `addr` names: `host:port` is taken as `http://host:port`, the form the kits
/// accept too; `https://` means TLS.
pub fn server_url(addr: &str) -> Result<String, String> {
    let addr = addr.trim();
    if addr.starts_with("http://") || addr.starts_with("https://") {
        Ok(addr.to_owned())
    } else if let Some((scheme, _)) = addr.split_once("://") {
        Err(format!(
            "--addr {addr}: the scheme {scheme}:// is not served; use host:port, \
             http://host:port, or https://host:port for TLS"
        ))
    } else {
        Ok(format!("http://{addr}"))
    }
}

async fn connect(args: &CtlArgs) -> Result<Client, String> {
    let url = server_url(&args.addr)?;
    let fail = |e: &dyn std::error::Error| format!("cannot connect to {url}: {}", explain(e));
    let mut endpoint = Endpoint::from_shared(url.clone()).map_err(|e| fail(&e))?;
    if url.starts_with("https://") {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut tls = ClientTlsConfig::new().with_native_roots();
        if let Some(ca) = &args.tls_ca {
            let pem =
                std::fs::read(ca).map_err(|e| format!("cannot read {}: {e}", ca.display()))?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
            let read = |p: &Path| {
                std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
            };
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| fail(&e))?;
    }
    let channel = endpoint.connect().await.map_err(|e| fail(&e))?;
    Ok(CommandServiceClient::new(channel))
}

/// An error with its causes (tonic's own says only "transport error"), and what to do
/// about the common ones.
fn explain(error: &dyn std::error::Error) -> String {
    let mut causes = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !causes.iter().any(|c| c.contains(&text)) {
            causes.push(text);
        }
        source = cause.source();
    }
    let all = causes.join(": ");
    let lower = all.to_lowercase();
    let hint = if lower.contains("connection refused") {
        " (is the server running there? set --addr or A2A_COMMANDS_ADDR)"
    } else if lower.contains("unknownissuer") || lower.contains("invalid peer certificate") {
        " (the server's certificate is not trusted: pass its CA with --tls-ca)"
    } else if lower.contains("certificaterequired") || lower.contains("certificate required") {
        " (the server requires a client certificate: pass --tls-cert and --tls-key)"
    } else if lower.contains("invalid uri") || lower.contains("invalid authority") {
        " (give host:port, http://host:port or https://host:port)"
    } else if lower.contains("corrupt message") || lower.contains("invalidcontenttype") {
        " (is it a TLS server? use https://)"
    } else {
        ""
    };
    format!("{all}{hint}")
}

/// `message` with the admin token, if one is configured.
fn authorized<T>(args: &CtlArgs, message: T) -> Result<Request<T>, String> {
    let mut request = Request::new(message);
    let token = match (&args.token_file, &args.token) {
        (Some(path), _) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?
                .trim()
                .to_owned(),
        ),
        (None, Some(token)) => Some(token.trim().to_owned()),
        (None, None) => None,
    };
    if let Some(token) = token {
        let value = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|_| "the admin token is not a valid header value".to_owned())?;
        request.metadata_mut().insert("authorization", value);
    }
    Ok(request)
}

/// One line for a failed call: the code's name and the server's message.
fn status_line(status: &tonic::Status) -> String {
    let line = format!(
        "{}: {}",
        crate::codes::name(status.code()),
        status.message()
    );
    // A call that failed below gRPC (TLS, a reset) carries the cause as its source.
    match std::error::Error::source(status) {
        Some(cause) => format!("{line}: {}", explain(cause)),
        None => line,
    }
}

async fn list_specs(client: &mut Client) -> Result<pb::ListSpecsResponse, String> {
    client
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .map(|r| r.into_inner())
        .map_err(|s| status_line(&s))
}

async fn list(client: &mut Client, json: bool) -> Result<(), String> {
    let listed = list_specs(client).await?;
    if json {
        say!("{}", listing_json(&listed));
        return Ok(());
    }
    say!("revision {}", listed.revision);
    say!(
        "{:<20} {:<8} {:<10} {:<22} DESCRIPTION",
        "NAME",
        "SOURCE",
        "BODY",
        "ROLES"
    );
    for command in &listed.commands {
        let spec = command.spec.clone().unwrap_or_default();
        let body = match (command.body(), &command.handler) {
            (pb::CommandBody::Handler, Some(h)) => match &h.endpoint {
                Some(pb::handler_binding::Endpoint::Grpc(_)) => "grpc",
                Some(pb::handler_binding::Endpoint::JsonRpc(_)) => "json-rpc",
                Some(pb::handler_binding::Endpoint::Mcp(_)) => "mcp",
                None => "handler",
            },
            (pb::CommandBody::Builtin, _) => "built-in",
            (pb::CommandBody::Prompt, _) => {
                match command.prompt.as_ref().and_then(|p| p.source.as_ref()) {
                    Some(pb::prompt_binding::Source::Mcp(_)) => "mcp-prompt",
                    _ => "prompt",
                }
            }
            _ => "none",
        };
        let source = match command.source() {
            pb::CommandSource::File => "file",
            pb::CommandSource::Builtin => "built-in",
            _ => "api",
        };
        let mut roles: Vec<&str> = command
            .allowed_roles()
            .filter_map(Role::of)
            .map(Role::name)
            .collect();
        if roles.is_empty() {
            roles.push("all");
        }
        let hidden = if command.hidden { " (hidden)" } else { "" };
        say!(
            "{:<20} {:<8} {:<10} {:<22} {}{hidden}",
            format!("/{}", spec.name),
            source,
            body,
            roles.join(","),
            spec.description
        );
    }
    Ok(())
}

/// ListSpecs' answer as JSON (the commands and the revision; the card is left out).
fn listing_json(listed: &pb::ListSpecsResponse) -> String {
    let commands: Vec<serde_json::Value> = listed
        .commands
        .iter()
        .map(|command| {
            let spec = command.spec.clone().unwrap_or_default();
            let access = Access::parse("allowed_roles", &command.allowed_roles, command.hidden)
                .unwrap_or_default();
            serde_json::json!({
                "name": spec.name,
                "description": spec.description,
                "argument_hint": spec.argument_hint,
                "source": command.source().as_str_name(),
                "body": command.body().as_str_name(),
                "handler": command.handler.as_ref().and_then(|h| h.endpoint.as_ref()).map(|e| match e {
                    pb::handler_binding::Endpoint::Grpc(u) => serde_json::json!({"grpc": u}),
                    pb::handler_binding::Endpoint::JsonRpc(u) => serde_json::json!({"json_rpc": u}),
                    pb::handler_binding::Endpoint::Mcp(u) => serde_json::json!({"mcp": u}),
                }),
                "prompt": command.prompt.as_ref().and_then(|p| p.source.as_ref()).map(|s| match s {
                    pb::prompt_binding::Source::Template(t) => serde_json::json!({"template": t}),
                    pb::prompt_binding::Source::Mcp(m) => serde_json::json!({"mcp": m.url, "name": m.name}),
                }),
                "roles": access.roles,
                "hidden": access.hidden,
            })
        })
        .collect();
    serde_json::json!({"revision": listed.revision, "commands": commands}).to_string()
}

/// The listed commands as configuration declares them, in order; built-ins that only
/// come from configuration are left out.
fn declared_of(listed: &pb::ListSpecsResponse) -> Result<Vec<Declared>, String> {
    let policy = client_policy();
    listed
        .commands
        .iter()
        .filter(|c| c.source() != pb::CommandSource::Builtin)
        .map(|c| {
            let s = c.spec.clone().unwrap_or_default();
            let spec = CommandSpec::new("spec", &s.name, &s.description, &s.argument_hint)
                .map_err(|e| e.to_string())?;
            let body = Body::from_bindings("", c.handler.as_ref(), c.prompt.as_ref(), &policy)
                .map_err(|e| e.to_string())?;
            let access = Access::parse("allowed_roles", &c.allowed_roles, c.hidden)
                .map_err(|e| e.to_string())?;
            Ok((spec, body, access))
        })
        .collect()
}

async fn register(client: &mut Client, args: &CtlArgs, flags: &RegisterArgs) -> Result<(), String> {
    let (declared, replace_access) = match &flags.file {
        // A file states each command's whole access.
        Some(file) => (read_file(file)?, true),
        None => (vec![declared_of_flags(flags)?], flags.replace_access),
    };
    register_all(client, args, declared, flags.replace, replace_access).await
}

/// Registers every command, going on past failures (each named on stderr), and fails at
/// the end if any did.
async fn register_all(
    client: &mut Client,
    args: &CtlArgs,
    declared: Vec<Declared>,
    replace: bool,
    replace_access: bool,
) -> Result<(), String> {
    let total = declared.len();
    let mut failed = 0;
    for (spec, body, access) in declared {
        let name = spec.name.to_string();
        let sent = Registration {
            spec: &spec,
            body: &body,
            access: &access,
            replace,
            replace_access,
        };
        match send_register(client, args, sent).await {
            Ok(outcome) => say!("/{name}: {outcome}"),
            // One command: its error is the one line.
            Err(line) if total == 1 => return Err(line),
            Err(line) => {
                eprintln!("{line}");
                failed += 1;
            }
        }
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(format!(
            "{failed} of {total} commands were not registered (see above)"
        ))
    }
}

fn declared_of_flags(flags: &RegisterArgs) -> Result<Declared, String> {
    use pb::handler_binding::Endpoint as E;
    let name = flags.name.as_deref().unwrap_or_default();
    let description = flags.description.as_deref().unwrap_or_default();
    let spec = CommandSpec::new("--", name, description, &flags.hint).map_err(|e| e.to_string())?;
    let endpoint = match (&flags.grpc, &flags.json_rpc, &flags.mcp) {
        (Some(url), _, _) => Some(E::Grpc(url.clone())),
        (_, Some(url), _) => Some(E::JsonRpc(url.clone())),
        (_, _, Some(url)) => Some(E::Mcp(url.clone())),
        _ => None,
    };
    let template = match (&flags.prompt, &flags.prompt_file) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(file)) => Some(
            std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?,
        ),
        (None, None) => None,
    };
    let prompt = match (template, &flags.mcp_prompt, &endpoint) {
        (Some(template), _, _) => Some(pb::prompt_binding::Source::Template(template)),
        (None, Some(name), Some(E::Mcp(url))) => {
            Some(pb::prompt_binding::Source::Mcp(pb::McpPrompt {
                url: url.clone(),
                name: name.clone(),
                timeout_ms: flags.timeout_ms,
                headers: Vec::new(),
            }))
        }
        _ => None,
    };
    if let Some(source) = prompt {
        let binding = pb::PromptBinding {
            source: Some(source),
        };
        let prompt =
            PromptBody::parse("--prompt", &binding, &client_policy()).map_err(|e| e.to_string())?;
        let access = access_of_flags(flags)?;
        return Ok((spec, Body::Prompt { prompt }, access));
    }
    let body = match endpoint {
        Some(endpoint) => Body::Handler {
            handler: HandlerBinding::parse(
                "--handler",
                &pb::HandlerBinding {
                    endpoint: Some(endpoint),
                    timeout_ms: flags.timeout_ms,
                    headers: Vec::new(),
                },
                &client_policy(),
            )
            .map_err(|e| e.to_string())?,
        },
        None => Body::None,
    };
    Ok((spec, body, access_of_flags(flags)?))
}

/// The access `--role` and `--hidden` give.
fn access_of_flags(flags: &RegisterArgs) -> Result<Access, String> {
    let roles = flags
        .roles
        .iter()
        .map(|r| {
            Role::from_name(&r.to_lowercase())
                .ok_or_else(|| format!("--role: {r:?} is not assignee, reporter, watcher or admin"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Access {
        roles: (!roles.is_empty()).then_some(roles),
        hidden: flags.hidden,
    })
}

/// One Register call's content.
struct Registration<'a> {
    spec: &'a CommandSpec,
    body: &'a Body,
    access: &'a Access,
    replace: bool,
    replace_access: bool,
}

async fn send_register(
    client: &mut Client,
    args: &CtlArgs,
    sent: Registration<'_>,
) -> Result<&'static str, String> {
    let Registration {
        spec,
        body,
        access,
        replace,
        replace_access,
    } = sent;
    let request = pb::RegisterRequest {
        spec: Some(pb::CommandSpec {
            name: spec.name.to_string(),
            description: spec.description.clone(),
            argument_hint: spec.argument_hint.clone(),
        }),
        r#override: replace,
        handler: match body {
            Body::Handler { handler } => Some(handler.to_proto()),
            _ => None,
        },
        allowed_roles: access
            .roles
            .iter()
            .flatten()
            .map(|r| r.to_proto().into())
            .collect(),
        hidden: access.hidden,
        replace_access,
        prompt: match body {
            Body::Prompt { prompt } => Some(prompt.to_proto()),
            _ => None,
        },
    };
    let answer = client
        .register(authorized(args, request)?)
        .await
        .map_err(|s| format!("/{}: {}", spec.name, status_line(&s)))?
        .into_inner();
    Ok(match answer.outcome() {
        pb::RegisterOutcome::Created => "created",
        pb::RegisterOutcome::Replaced => "replaced",
        _ => "unchanged",
    })
}

async fn watch(client: &mut Client, json: bool) -> Result<(), String> {
    let mut stream = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .map_err(|s| status_line(&s))?
        .into_inner();
    while let Some(update) = stream.next().await {
        let update = update.map_err(|s| status_line(&s))?;
        if json {
            say!("{}", listing_json(&update));
        } else {
            let names: Vec<String> = update
                .commands
                .iter()
                .map(|c| format!("/{}", c.spec.as_ref().map_or("", |s| s.name.as_str())))
                .collect();
            say!("revision {}: {}", update.revision, names.join(" "));
        }
    }
    Ok(())
}
