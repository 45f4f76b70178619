//! The command line: `a2a-commands serve` and its flags, each also read from an
//! environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::defaults;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "a2a-commands",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("A2A_COMMANDS_COMMIT"), ")"),
    about = "The A2A Commands extension v1 as a gRPC service"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the gRPC API.
    Serve(Box<ServeArgs>),
    /// Write what a data directory still holds as a commands file, without changing the
    /// directory (sled reads a temporary copy): the way back from a damaged store.
    Salvage(SalvageArgs),
    /// Manage a running server over gRPC: list, register, unregister, watch, export,
    /// import; and check a commands file offline.
    Ctl(Box<CtlArgs>),
}

/// `ctl`'s connection flags and verb.
#[derive(Clone, Debug, Args)]
pub struct CtlArgs {
    /// The server's API: `host:port` or `http://host:port`, or `https://host:port` for
    /// TLS (the kits read A2A_COMMANDS_ADDR in the same forms).
    #[arg(
        long,
        env = "A2A_COMMANDS_ADDR",
        default_value = defaults::CTL_ADDR,
        global = true
    )]
    pub addr: String,
    /// File holding the admin token, for register, unregister and import (the server's
    /// own variable, so it works as is inside the sidecar's container).
    #[arg(long, env = "A2A_COMMANDS_ADMIN_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// The admin token itself, when no token file is given.
    #[arg(
        long,
        env = "A2A_COMMANDS_ADMIN_TOKEN",
        hide_env_values = true,
        global = true
    )]
    pub token: Option<String>,
    /// PEM CA certificate(s) that signed the server's certificate (https:// only).
    #[arg(long, global = true)]
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate, for a server that requires mTLS (with --tls-key).
    #[arg(long, global = true)]
    pub tls_cert: Option<PathBuf>,
    /// PEM client key (with --tls-cert).
    #[arg(long, global = true)]
    pub tls_key: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub verb: CtlVerb,
}

/// `ctl`'s verbs.
#[derive(Clone, Debug, Subcommand)]
pub enum CtlVerb {
    /// The registry as a table (or JSON).
    List {
        /// ListSpecs' answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Register one command from flags, or every command of a commands file.
    Register(RegisterArgs),
    /// Remove commands.
    Unregister {
        /// The names.
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Print the registry's revision and commands after every change, until stopped.
    Watch {
        /// Each state as ListSpecs JSON, one per line.
        #[arg(long)]
        json: bool,
    },
    /// The registry as a commands file (built-ins that only come from configuration left
    /// out), for a backup or to move it.
    Export {
        /// Where to write it; standard output when not given.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Register every command of a commands file, replacing those of the same name.
    Import {
        /// The commands file.
        file: PathBuf,
    },
    /// Register the prompt commands of a Claude Code (`.claude/commands/*.md`) or Gemini
    /// CLI (`.gemini/commands/*.toml`) folder, replacing those of the same name; a file
    /// that runs a shell or reads a file (`!{...}`, `` !`...` ``, `@{...}`, `@path`) is
    /// refused, never run.
    ImportPrompts {
        /// The folder: a project holding `.claude/commands` or `.gemini/commands`, or a
        /// commands folder itself.
        path: PathBuf,
        /// Write them as a commands file here instead of registering them.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Register every prompt an MCP server lists as a prompt command, replacing those of
    /// the same name (`_` in a prompt's name becomes `-` in the command's).
    ImportMcpPrompts {
        /// The MCP server (streamable HTTP): an http:// or https:// URL.
        url: String,
        /// A header sent to the server, `NAME=FILE` (repeat for more), as a commands
        /// file's `headers`: the value is read from FILE, relative to --secrets-dir here
        /// (for the listing) and to the server's --handler-secrets-dir at each Execute.
        #[arg(long = "header", value_name = "NAME=FILE")]
        headers: Vec<String>,
        /// Where FILE is read from for the listing.
        #[arg(long, default_value = ".")]
        secrets_dir: PathBuf,
        /// Write them as a commands file here instead of registering them.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// The fleet's live sidecars and the registry revision each has applied, read from
    /// etcd with the same flags and variables as `serve` (so it works as is inside a
    /// sidecar's container); exits non-zero if they disagree.
    Fleet {
        /// The fleet's etcd.
        #[command(flatten)]
        fleet: FleetArgs,
        /// The config file, for its "fleet" settings.
        #[arg(long, env = "A2A_COMMANDS_CONFIG")]
        config: Option<PathBuf>,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a commands file offline (no server needed) exactly as `serve` would, with
    /// the same handler flags: every error, one per line; exits non-zero if there is any.
    Check {
        /// The commands file.
        file: PathBuf,
        /// The server's handler limits, from the same flags and variables as `serve`.
        #[command(flatten)]
        handlers: HandlerArgs,
        /// Fleet mode's settings, from the same flags and variables as `serve`: checked
        /// too when given (a mistyped endpoint is named in one line).
        #[command(flatten)]
        fleet: FleetArgs,
        /// The front's settings, from the same flags and variables as `serve`: checked
        /// too when given.
        #[command(flatten)]
        front: Box<FrontArgs>,
        /// The config file, for its "fleet" and "front" settings.
        #[arg(long, env = "A2A_COMMANDS_CONFIG")]
        config: Option<PathBuf>,
    },
}

/// `ctl register`'s flags.
#[derive(Clone, Debug, Args)]
pub struct RegisterArgs {
    /// A commands file whose every command is registered (instead of the flags below).
    #[arg(long, conflicts_with_all = [
        "name", "description", "hint", "grpc", "json_rpc", "mcp", "timeout_ms", "roles",
        "hidden", "replace_access", "prompt", "prompt_file", "mcp_prompt",
    ])]
    pub file: Option<PathBuf>,
    /// The name typed after `/`.
    #[arg(long, required_unless_present = "file")]
    pub name: Option<String>,
    /// What the command does (one line).
    #[arg(long, required_unless_present = "file")]
    pub description: Option<String>,
    /// How to write its arguments.
    #[arg(long, default_value = "")]
    pub hint: String,
    /// A gRPC CommandHandler's URL.
    #[arg(long, conflicts_with_all = ["json_rpc", "mcp"])]
    pub grpc: Option<String>,
    /// A JSON-RPC hook's URL.
    #[arg(long, conflicts_with = "mcp")]
    pub json_rpc: Option<String>,
    /// An MCP server's URL.
    #[arg(long)]
    pub mcp: Option<String>,
    /// The handler's timeout in milliseconds (0: the server's default).
    #[arg(long, default_value_t = 0)]
    pub timeout_ms: u32,
    /// Make it a prompt command with this template (`$ARGUMENTS`, `$1`..`$9`, `{{args}}`).
    #[arg(long, conflicts_with_all = ["grpc", "json_rpc", "mcp", "prompt_file", "mcp_prompt"])]
    pub prompt: Option<String>,
    /// Make it a prompt command with the template in this file.
    #[arg(long, conflicts_with_all = ["grpc", "json_rpc", "mcp", "mcp_prompt"])]
    pub prompt_file: Option<PathBuf>,
    /// Make it a prompt command with this prompt of the MCP server given by --mcp.
    #[arg(long, requires = "mcp", conflicts_with_all = ["grpc", "json_rpc"])]
    pub mcp_prompt: Option<String>,
    /// A role allowed to run it (repeat for several; none: every role).
    #[arg(long = "role")]
    pub roles: Vec<String>,
    /// Leave it off the card.
    #[arg(long)]
    pub hidden: bool,
    /// Replace a command of the same name (its place kept; without a handler flag, its
    /// body kept; its access only ever narrowed).
    #[arg(long = "override")]
    pub replace: bool,
    /// With --override: the command's roles and hidden become exactly these flags', so
    /// no --role allows every role and no --hidden shows it (a file's commands always
    /// take the file's access).
    #[arg(long, requires = "replace")]
    pub replace_access: bool,
}

/// `salvage`'s flags.
#[derive(Clone, Debug, Args)]
pub struct SalvageArgs {
    /// The data directory to read.
    #[arg(long, env = "A2A_COMMANDS_DATA_DIR")]
    pub data_dir: PathBuf,
    /// Where to write the commands file; standard output when not given.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// `serve`'s flags.
#[derive(Clone, Debug, Args)]
pub struct ServeArgs {
    /// Address the gRPC API listens on.
    #[arg(long, env = "A2A_COMMANDS_LISTEN", default_value = defaults::LISTEN, value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// Address of the health-only listener (grpc.health.v1, plaintext), for
    /// Kubernetes probes on the pod's IP; `off` for none.
    #[arg(long, env = "A2A_COMMANDS_HEALTH_LISTEN", default_value = defaults::HEALTH_LISTEN, value_parser = parse_optional_addr)]
    pub health_listen: OptionalAddr,

    /// Address of the Prometheus metrics listener (plain HTTP, `GET /metrics`,
    /// OpenMetrics text); `off` (the default) for none.
    #[arg(long, env = "A2A_COMMANDS_METRICS_LISTEN", default_value = defaults::METRICS_LISTEN, value_parser = parse_optional_addr)]
    pub metrics_listen: OptionalAddr,

    /// JSON file of declarative commands, reconciled at start and whenever it changes:
    /// {"commands": [{"name", "description", "argument_hint", "handler"}]}.
    #[arg(long, env = "A2A_COMMANDS_COMMANDS_FILE")]
    pub commands_file: Option<PathBuf>,

    /// How often the commands file is checked for changes, in milliseconds.
    #[arg(
        long,
        env = "A2A_COMMANDS_COMMANDS_FILE_POLL_MS",
        default_value_t = defaults::COMMANDS_FILE_POLL_MS
    )]
    pub commands_file_poll_ms: u64,

    /// File holding the admin token; when set, Register and Unregister need
    /// `authorization: Bearer <token>`. Read on every such call (Secret rotation).
    #[arg(long, env = "A2A_COMMANDS_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<PathBuf>,

    /// PEM certificate chain for TLS on the API listener (with --tls-key).
    #[arg(long, env = "A2A_COMMANDS_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key for TLS on the API listener (with --tls-cert).
    #[arg(long, env = "A2A_COMMANDS_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// PEM CA certificate(s): clients must present a certificate signed by one (mTLS).
    #[arg(long, env = "A2A_COMMANDS_TLS_CLIENT_CA", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,

    /// Directory of the registry's sled store [default: $XDG_DATA_HOME/a2a-commands,
    /// else ~/.local/share/a2a-commands, else ./a2a-commands-data].
    #[arg(long, env = "A2A_COMMANDS_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// Log line format.
    #[arg(long, env = "A2A_COMMANDS_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log one successful call in N (its per-call line at info); failed calls are always
    /// logged, and metrics count every call. 1 logs every call.
    #[arg(long, env = "A2A_COMMANDS_CALL_LOG_SAMPLE", default_value_t = defaults::CALL_LOG_SAMPLE)]
    pub call_log_sample: u64,

    /// Log filter in RUST_LOG syntax, for example `info` or `a2a_commands=debug`.
    #[arg(long = "log", env = "RUST_LOG", default_value = "info")]
    pub log_filter: String,

    /// Print the effective configuration (flags, variables, config file and defaults
    /// resolved) as JSON, and exit without serving.
    #[arg(long)]
    pub print_config: bool,

    /// Most commands the registry holds (built-ins included).
    #[arg(long, env = "A2A_COMMANDS_MAX_COMMANDS", default_value_t = defaults::MAX_COMMANDS)]
    pub max_commands: usize,

    /// sled's page cache in MiB (sled's own default would be 1 GiB).
    #[arg(long, env = "A2A_COMMANDS_CACHE_MIB", default_value_t = defaults::CACHE_MIB)]
    pub cache_mib: u64,

    /// Largest request accepted, in bytes; larger ones are RESOURCE_EXHAUSTED.
    #[arg(long, env = "A2A_COMMANDS_MAX_MESSAGE_BYTES", default_value_t = defaults::MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,

    /// Most repeated elements one Classify, Execute, Complete or Register request may
    /// hold (message parts, metadata entries, list values, extensions, sub-tasks,
    /// handler headers, roles); more is RESOURCE_EXHAUSTED, checked before the request
    /// is decoded.
    #[arg(
        long,
        env = "A2A_COMMANDS_MAX_REQUEST_ELEMENTS",
        default_value_t = defaults::MAX_REQUEST_ELEMENTS
    )]
    pub max_request_elements: usize,

    /// Memory, in MiB, that the requests of all calls in flight may take together (each
    /// counts its bytes twice, as received and decoded, plus what its repeated elements
    /// cost); a call that does not fit is RESOURCE_EXHAUSTED at once, unread. Never
    /// less than one largest request.
    #[arg(
        long,
        env = "A2A_COMMANDS_MAX_REQUEST_MEMORY_MIB",
        default_value_t = defaults::MAX_REQUEST_MEMORY_MIB
    )]
    pub max_request_memory_mib: usize,

    /// Most concurrent HTTP/2 streams (calls) per connection, advertised to clients.
    #[arg(
        long,
        env = "A2A_COMMANDS_MAX_CONCURRENT_STREAMS",
        default_value_t = defaults::MAX_CONCURRENT_STREAMS
    )]
    pub max_concurrent_streams: u32,

    /// Largest HTTP/2 header list a client may send, in bytes.
    #[arg(long, env = "A2A_COMMANDS_MAX_HEADER_LIST_BYTES", default_value_t = defaults::MAX_HEADER_LIST_BYTES)]
    pub max_header_list_bytes: u32,

    /// Seconds between HTTP/2 pings on a connection; one not answered within
    /// --keepalive-timeout-seconds closes it (dead and half-open peers).
    #[arg(long, env = "A2A_COMMANDS_KEEPALIVE_SECONDS", default_value_t = defaults::KEEPALIVE_SECONDS)]
    pub keepalive_seconds: u64,

    /// Seconds a keep-alive ping may go unanswered before the connection is closed.
    #[arg(
        long,
        env = "A2A_COMMANDS_KEEPALIVE_TIMEOUT_SECONDS",
        default_value_t = defaults::KEEPALIVE_TIMEOUT_SECONDS
    )]
    pub keepalive_timeout_seconds: u64,

    /// Seconds a connection may stay open with no call in flight before it is closed
    /// (clients reconnect on their next call); 0 keeps idle connections open.
    #[arg(long, env = "A2A_COMMANDS_IDLE_TIMEOUT_SECONDS", default_value_t = defaults::IDLE_TIMEOUT_SECONDS)]
    pub idle_timeout_seconds: u64,

    /// Seconds a request's message may take to arrive once it has started (it holds its
    /// share of --max-request-memory-mib until then); slower is DEADLINE_EXCEEDED. 0:
    /// no limit.
    #[arg(
        long,
        env = "A2A_COMMANDS_REQUEST_READ_TIMEOUT_SECONDS",
        default_value_t = defaults::REQUEST_READ_TIMEOUT_SECONDS
    )]
    pub request_read_timeout_seconds: u64,

    /// Longest wait for calls in flight at shutdown, in seconds; connections still open
    /// then are closed. Keep it below Kubernetes' termination grace period.
    #[arg(long, env = "A2A_COMMANDS_DRAIN_SECONDS", default_value_t = defaults::DRAIN_SECONDS)]
    pub drain_seconds: u64,

    /// How handler bindings are checked and called.
    #[command(flatten)]
    pub handlers: HandlerArgs,

    /// Fleet mode: the registry kept in etcd for every replica.
    #[command(flatten)]
    pub fleet: FleetArgs,

    /// Traces: spans sent to an OTLP collector.
    #[command(flatten)]
    pub traces: TraceArgs,

    /// The front: this sidecar as an A2A proxy in front of an agent.
    #[command(flatten)]
    pub front: FrontArgs,

    /// JSON config file: {"default_model", "models", "default_effort", "builtins",
    /// "fleet", "front"}.
    #[arg(long, env = "A2A_COMMANDS_CONFIG")]
    pub config: Option<PathBuf>,

    /// The model a task uses until it chooses one [default: gpt-x].
    #[arg(long, env = "A2A_COMMANDS_DEFAULT_MODEL")]
    pub default_model: Option<String>,

    /// The selectable models, comma-separated [default: gpt-x,gpt-x-mini].
    #[arg(long, env = "A2A_COMMANDS_MODELS", value_delimiter = ',')]
    pub models: Option<Vec<String>>,

    /// The default reasoning effort (low, medium or high) [default: none, the
    /// provider's].
    #[arg(long, env = "A2A_COMMANDS_DEFAULT_EFFORT")]
    pub default_effort: Option<String>,

    /// The built-ins to offer, comma-separated; empty for none
    /// [default: model,effort,sub-task,status].
    #[arg(long, env = "A2A_COMMANDS_BUILTINS", value_delimiter = ',')]
    pub builtins: Option<Vec<String>>,
}

/// The handler flags: how bindings are checked (`serve`, and `ctl check` with the same
/// flags and variables, so both judge a file alike) and called.
#[derive(Clone, Debug, Args)]
pub struct HandlerArgs {
    /// Timeout of a handler binding that names none, in milliseconds.
    #[arg(long, env = "A2A_COMMANDS_HANDLER_TIMEOUT_MS", default_value_t = defaults::handlers().default_timeout_ms)]
    pub handler_timeout_ms: u32,

    /// Largest timeout a handler binding may ask for, in milliseconds.
    #[arg(
        long,
        env = "A2A_COMMANDS_HANDLER_MAX_TIMEOUT_MS",
        default_value_t = defaults::handlers().max_timeout_ms
    )]
    pub handler_max_timeout_ms: u32,

    /// Hosts handlers may be on, comma-separated (`name` or `*.domain`); empty allows
    /// any.
    #[arg(
        long,
        env = "A2A_COMMANDS_HANDLER_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub handler_allowed_hosts: Vec<String>,

    /// Largest handler answer accepted, in bytes; larger ones are failures.
    #[arg(long, env = "A2A_COMMANDS_HANDLER_MAX_ANSWER_BYTES", default_value_t = defaults::handlers().max_answer_bytes)]
    pub handler_max_answer_bytes: usize,

    /// Directory that handler header values are read from (at each call, so a mounted
    /// Secret can rotate); bindings name files relative to it. Without it, bindings may
    /// name no headers.
    #[arg(long, env = "A2A_COMMANDS_HANDLER_SECRETS_DIR")]
    pub handler_secrets_dir: Option<PathBuf>,

    /// PEM file of CA certificates trusted for https:// handlers, beside the system's.
    #[arg(long, env = "A2A_COMMANDS_HANDLER_CA_FILE")]
    pub handler_ca_file: Option<PathBuf>,

    /// Least time, in milliseconds, that must be left of Execute's deadline (the
    /// caller's grpc-timeout) for a handler or MCP prompt to be called; with less the
    /// command fails at once. A handler whose timeout is longer than what is left is
    /// called with what is left.
    #[arg(long, env = "A2A_COMMANDS_HANDLER_MIN_TIME_LEFT_MS", default_value_t = defaults::handlers().min_time_left_ms)]
    pub handler_min_time_left_ms: u32,

    /// Most calls in flight to one handler endpoint; more wait (within their timeout).
    #[arg(long, env = "A2A_COMMANDS_HANDLER_CONCURRENCY", default_value_t = defaults::handlers().max_concurrency)]
    pub handler_concurrency: usize,
}

/// A listen address that can be turned off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionalAddr(pub Option<SocketAddr>);

fn parse_optional_addr(text: &str) -> Result<OptionalAddr, String> {
    match text.trim() {
        "" | "off" | "none" => Ok(OptionalAddr(None)),
        addr => socket_addr(addr)
            .map(|a| OptionalAddr(Some(a)))
            .map_err(|e| format!("{e}, or off")),
    }
}

fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    socket_addr(text.trim())
}

/// An `ip:port`; `localhost:port` is loopback. The error says what to write instead (and
/// names the variable too, since clap names only the flag).
fn socket_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        if let Ok(port) = port.parse::<u16>() {
            return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
        }
    }
    let hint = if text.parse::<u16>().is_ok() {
        format!("a port alone is not an address: write 127.0.0.1:{text} (loopback) or 0.0.0.0:{text} (every interface)")
    } else {
        "expected ip:port, such as 127.0.0.1:50051, 0.0.0.0:50051, [::1]:50051 or localhost:50051 (host names other than localhost are not resolved)".to_owned()
    };
    Err(format!(
        "{text:?} (from the flag or its A2A_COMMANDS_* variable): {hint}"
    ))
}

/// The fleet flags (`serve`, and `ctl fleet` with the same flags and variables). Without
/// endpoints the service runs in sled mode.
#[derive(Clone, Debug, Default, Args)]
pub struct FleetArgs {
    /// etcd client URLs, comma-separated (`http://etcd-0:2379,...`, `host:port` for
    /// http; `https://` with TLS); setting them turns fleet mode on [default: none, sled
    /// mode].
    #[arg(long, env = "A2A_COMMANDS_FLEET_ETCD_ENDPOINTS", value_delimiter = ',')]
    pub fleet_etcd_endpoints: Option<Vec<String>>,
    /// The key prefix the fleet's registry lives under [default: /a2a-commands/].
    #[arg(long, env = "A2A_COMMANDS_FLEET_PREFIX")]
    pub fleet_prefix: Option<String>,
    /// PEM CA certificate(s) that signed etcd's certificates (else the system's roots).
    #[arg(long, env = "A2A_COMMANDS_FLEET_ETCD_CA_FILE")]
    pub fleet_etcd_ca_file: Option<PathBuf>,
    /// PEM client certificate for etcd (with --fleet-etcd-key-file).
    #[arg(long, env = "A2A_COMMANDS_FLEET_ETCD_CERT_FILE")]
    pub fleet_etcd_cert_file: Option<PathBuf>,
    /// PEM client key for etcd (with --fleet-etcd-cert-file).
    #[arg(long, env = "A2A_COMMANDS_FLEET_ETCD_KEY_FILE")]
    pub fleet_etcd_key_file: Option<PathBuf>,
    /// etcd user (with --fleet-etcd-password-file).
    #[arg(long, env = "A2A_COMMANDS_FLEET_ETCD_USER")]
    pub fleet_etcd_user: Option<String>,
    /// File holding the etcd user's password.
    #[arg(long, env = "A2A_COMMANDS_FLEET_ETCD_PASSWORD_FILE")]
    pub fleet_etcd_password_file: Option<PathBuf>,
    /// How long one etcd call may take, in milliseconds [default: 5000].
    #[arg(long, env = "A2A_COMMANDS_FLEET_TIMEOUT_MS")]
    pub fleet_timeout_ms: Option<u64>,
    /// Most operations in one etcd transaction: etcd's --max-txn-ops [default: 128].
    #[arg(long, env = "A2A_COMMANDS_FLEET_MAX_TXN_OPS")]
    pub fleet_max_txn_ops: Option<usize>,
    /// Largest etcd request in bytes: etcd's --max-request-bytes [default: 1572864].
    #[arg(long, env = "A2A_COMMANDS_FLEET_MAX_REQUEST_BYTES")]
    pub fleet_max_request_bytes: Option<usize>,
    /// This sidecar's name in `ctl fleet` [default: $HOSTNAME, the pod's name].
    #[arg(long, env = "A2A_COMMANDS_FLEET_MEMBER_NAME")]
    pub fleet_member_name: Option<String>,
}

/// The trace flags. Each falls back to OpenTelemetry's own variables (the signal's,
/// then the general one), read in `config`, so that the usual `OTEL_*` settings work
/// as in any OpenTelemetry SDK; `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_RESOURCE_ATTRIBUTES`,
/// `OTEL_SDK_DISABLED` and `OTEL_BSP_*` are variables only.
#[derive(Args, Clone, Debug, Default)]
pub struct TraceArgs {
    /// The OTLP collector spans are sent to, used as is (else
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT); setting one
    /// turns traces on [default: none, traces off].
    #[arg(long)]
    pub otlp_traces_endpoint: Option<String>,
    /// grpc or http/protobuf (else OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
    /// OTEL_EXPORTER_OTLP_PROTOCOL) [default: grpc].
    #[arg(long)]
    pub otlp_protocol: Option<String>,
    /// Which traces are kept: always_on, always_off, traceidratio,
    /// parentbased_always_on, parentbased_always_off, parentbased_traceidratio (else
    /// OTEL_TRACES_SAMPLER) [default: parentbased_always_on].
    #[arg(long)]
    pub trace_sampler: Option<String>,
    /// The ratio of the *traceidratio samplers, 0 to 1 (else OTEL_TRACES_SAMPLER_ARG)
    /// [default: 1].
    #[arg(long)]
    pub trace_sampler_arg: Option<String>,
    /// service.name of the spans (else OTEL_SERVICE_NAME, else service.name in
    /// OTEL_RESOURCE_ATTRIBUTES) [default: a2a-commands].
    #[arg(long)]
    pub service_name: Option<String>,
}

/// The front's flags: an upstream agent URL turns it on.
#[derive(Args, Clone, Debug, Default)]
pub struct FrontArgs {
    /// The A2A agent the front stands in front of (its base URL: the card is at
    /// `<url>/.well-known/agent-card.json`); setting it turns the front on [default: none].
    #[arg(long, env = "A2A_COMMANDS_FRONT_UPSTREAM")]
    pub front_upstream: Option<String>,

    /// Where the front listens for A2A clients (never the gRPC API) [default: 0.0.0.0:8080].
    #[arg(long, env = "A2A_COMMANDS_FRONT_LISTEN")]
    pub front_listen: Option<std::net::SocketAddr>,

    /// The URL clients reach the front at, written into the card's interfaces; nothing
    /// is taken from a request's Host [default: http://<front-listen>].
    #[arg(long, env = "A2A_COMMANDS_FRONT_PUBLIC_URL")]
    pub front_public_url: Option<String>,

    /// How long a call to the agent may take before the client gets an error (a
    /// stream: until it starts; any other answer: between two of its parts), in
    /// milliseconds [default: 30000].
    #[arg(long, env = "A2A_COMMANDS_FRONT_TIMEOUT_MS")]
    pub front_timeout_ms: Option<u64>,

    /// How long a stream from the agent (server-sent events, a gRPC stream) may send
    /// nothing before the front ends it, in milliseconds [default: 300000].
    #[arg(long, env = "A2A_COMMANDS_FRONT_STREAM_IDLE_TIMEOUT_MS")]
    pub front_stream_idle_timeout_ms: Option<u64>,

    /// Largest request body the front reads; larger ones are refused, nothing
    /// forwarded [default: 4194304].
    #[arg(long, env = "A2A_COMMANDS_FRONT_MAX_BODY_BYTES")]
    pub front_max_body_bytes: Option<usize>,

    /// How long an answer may wait for its client to take any of it before the front
    /// closes the connection (nginx's send_timeout), in seconds [default: 60].
    #[arg(long, env = "A2A_COMMANDS_FRONT_SEND_TIMEOUT_SECONDS")]
    pub front_send_timeout_seconds: Option<u64>,

    /// Most client connections the front holds open at once; past it a new connection
    /// is closed at once, unread [default: 10000].
    #[arg(long, env = "A2A_COMMANDS_FRONT_MAX_CONNECTIONS")]
    pub front_max_connections: Option<usize>,

    /// How long the agent's card is kept when its answer sets no Cache-Control, in
    /// seconds [default: 30].
    #[arg(long, env = "A2A_COMMANDS_FRONT_CARD_REFRESH_SECONDS")]
    pub front_card_refresh_seconds: Option<u64>,

    /// Most task records the front keeps (tasks it made, task data of the agent's
    /// tasks); past it the least recently used are forgotten [default: 10000].
    #[arg(long, env = "A2A_COMMANDS_FRONT_RECORDS_MAX")]
    pub front_records_max: Option<usize>,

    /// How long the front keeps a task record after its last use, in seconds
    /// [default: 86400].
    #[arg(long, env = "A2A_COMMANDS_FRONT_RECORDS_EXPIRY_SECONDS")]
    pub front_records_expiry_seconds: Option<u64>,

    /// A PKCS#8 PEM private key (EC P-256, Ed25519 or RSA) the front signs the merged
    /// card with; without one the card is served without signatures [default: none].
    #[arg(long, env = "A2A_COMMANDS_FRONT_SIGNING_KEY_FILE")]
    pub front_signing_key_file: Option<std::path::PathBuf>,

    /// The signing key's id (`kid`), by which verifiers find its public key
    /// [default: a2a-commands-front].
    #[arg(long, env = "A2A_COMMANDS_FRONT_SIGNING_KEY_ID")]
    pub front_signing_key_id: Option<String>,

    /// Where the signing key's public key set is published (`jku`) [default: none].
    #[arg(long, env = "A2A_COMMANDS_FRONT_SIGNING_JKU")]
    pub front_signing_jku: Option<String>,

    /// The sender's role for the role rules when no header says otherwise (assignee,
    /// reporter, watcher, admin, none) [default: watcher].
    #[arg(long, env = "A2A_COMMANDS_FRONT_DEFAULT_ROLE")]
    pub front_default_role: Option<String>,

    /// A request header naming the sender's role, set by the authenticating proxy in
    /// front; read only when given [default: none].
    #[arg(long, env = "A2A_COMMANDS_FRONT_ROLE_HEADER")]
    pub front_role_header: Option<String>,

    /// A request header naming the sender, set by the authenticating proxy in front;
    /// read only when given [default: none].
    #[arg(long, env = "A2A_COMMANDS_FRONT_SENDER_HEADER")]
    pub front_sender_header: Option<String>,

    /// The agent's gRPC address (host:port), for A2A's gRPC binding through the front
    /// (on the front's own port); without it, the card's gRPC interface when that is on
    /// the agent's host [default: none].
    #[arg(long, env = "A2A_COMMANDS_FRONT_UPSTREAM_GRPC")]
    pub front_upstream_grpc: Option<String>,

    /// The A2A version the agent speaks: auto (as its card says), 1.0, 0.3, or both.
    /// The front answers a client in the version it asked in only when the agent
    /// speaks it too [default: auto].
    #[arg(long, env = "A2A_COMMANDS_FRONT_UPSTREAM_A2A_VERSION")]
    pub front_upstream_a2a_version: Option<String>,

    /// A JWK set file that signs callers' JWTs (`Authorization: Bearer`); read again
    /// when it changes. Turns verified callers on [default: none].
    #[arg(
        long,
        env = "A2A_COMMANDS_FRONT_JWT_JWKS_FILE",
        conflicts_with = "front_jwt_jwks_url"
    )]
    pub front_jwt_jwks_file: Option<std::path::PathBuf>,

    /// A JWK set URL (the issuer's jwks_uri) that signs callers' JWTs; fetched and
    /// kept. Turns verified callers on [default: none].
    #[arg(long, env = "A2A_COMMANDS_FRONT_JWT_JWKS_URL")]
    pub front_jwt_jwks_url: Option<String>,

    /// The issuer (`iss`) every caller's JWT must name; required with a key set.
    #[arg(long, env = "A2A_COMMANDS_FRONT_JWT_ISSUER")]
    pub front_jwt_issuer: Option<String>,

    /// An audience (`aud`) every caller's JWT must name; required with a key set.
    #[arg(long, env = "A2A_COMMANDS_FRONT_JWT_AUDIENCE")]
    pub front_jwt_audience: Option<String>,

    /// The JWT claim naming the sender [default: sub].
    #[arg(long, env = "A2A_COMMANDS_FRONT_JWT_SENDER_CLAIM")]
    pub front_jwt_sender_claim: Option<String>,

    /// The JWT claim naming the sender's role (a role word, or a list whose first role
    /// word counts; a dotted name reads a nested claim) [default: role].
    #[arg(long, env = "A2A_COMMANDS_FRONT_JWT_ROLE_CLAIM")]
    pub front_jwt_role_claim: Option<String>,

    /// Refuse requests that carry no JWT (401) instead of giving them the default role.
    #[arg(long, env = "A2A_COMMANDS_FRONT_JWT_REQUIRED")]
    pub front_jwt_required: bool,

    /// How long a JWK set fetched from a URL is kept, in seconds [default: 300].
    #[arg(long, env = "A2A_COMMANDS_FRONT_JWT_JWKS_REFRESH_SECONDS")]
    pub front_jwt_jwks_refresh_seconds: Option<u64>,

    /// A JWK set file the agent's card must be signed by (one of its `signatures` must
    /// verify with one of its keys); read again when it changes. A card that does not
    /// verify is not served [default: none: the card is not checked].
    #[arg(
        long,
        env = "A2A_COMMANDS_FRONT_CARD_JWKS_FILE",
        conflicts_with = "front_card_jwks_url"
    )]
    pub front_card_jwks_file: Option<std::path::PathBuf>,

    /// A JWK set URL the agent's card must be signed by; fetched and kept
    /// [default: none].
    #[arg(long, env = "A2A_COMMANDS_FRONT_CARD_JWKS_URL")]
    pub front_card_jwks_url: Option<String>,

    /// How long the card's JWK set fetched from a URL is kept, in seconds [default: 300].
    #[arg(long, env = "A2A_COMMANDS_FRONT_CARD_JWKS_REFRESH_SECONDS")]
    pub front_card_jwks_refresh_seconds: Option<u64>,
}

/// Drops empty items, so `--builtins ""` means none.
pub(super) fn non_empty(items: Vec<String>) -> Vec<String> {
    items
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}
