//! Configuration: command-line flags, each also read from an environment variable, and
//! an optional JSON config file for the model catalogue and the built-ins.
//!
//! Precedence, highest first: flag, environment variable, config file, default.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;

use crate::builtins::{Builtin, Catalogue, EFFORTS};
use crate::handlers::HandlerPolicy;
use crate::registry;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "a2a-commands",
    version,
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
    Serve(ServeArgs),
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
    #[arg(long, env = "A2A_COMMANDS_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,

    /// Address of the health-only listener (grpc.health.v1, plaintext), for
    /// Kubernetes probes on the pod's IP; `off` for none.
    #[arg(long, env = "A2A_COMMANDS_HEALTH_LISTEN", default_value = "0.0.0.0:50052", value_parser = parse_optional_addr)]
    pub health_listen: OptionalAddr,

    /// JSON file of declarative commands, reconciled at start and whenever it changes:
    /// {"commands": [{"name", "description", "argument_hint", "handler"}]}.
    #[arg(long, env = "A2A_COMMANDS_COMMANDS_FILE")]
    pub commands_file: Option<PathBuf>,

    /// How often the commands file is checked for changes, in milliseconds.
    #[arg(
        long,
        env = "A2A_COMMANDS_COMMANDS_FILE_POLL_MS",
        default_value_t = 1_000
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

    /// Log filter in RUST_LOG syntax, for example `info` or `a2a_commands=debug`.
    #[arg(long = "log", env = "RUST_LOG", default_value = "info")]
    pub log_filter: String,

    /// Most commands the registry holds (built-ins included).
    #[arg(long, env = "A2A_COMMANDS_MAX_COMMANDS", default_value_t = 10_000)]
    pub max_commands: usize,

    /// sled's page cache in MiB (sled's own default would be 1 GiB).
    #[arg(long, env = "A2A_COMMANDS_CACHE_MIB", default_value_t = 8)]
    pub cache_mib: u64,

    /// Largest request accepted, in bytes; larger ones are RESOURCE_EXHAUSTED.
    #[arg(long, env = "A2A_COMMANDS_MAX_MESSAGE_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_message_bytes: usize,

    /// Longest wait for calls in flight at shutdown, in seconds; connections still open
    /// then are closed. Keep it below Kubernetes' termination grace period.
    #[arg(long, env = "A2A_COMMANDS_DRAIN_SECONDS", default_value_t = 10)]
    pub drain_seconds: u64,

    /// Timeout of a handler binding that names none, in milliseconds.
    #[arg(long, env = "A2A_COMMANDS_HANDLER_TIMEOUT_MS", default_value_t = 5_000)]
    pub handler_timeout_ms: u32,

    /// Largest timeout a handler binding may ask for, in milliseconds.
    #[arg(
        long,
        env = "A2A_COMMANDS_HANDLER_MAX_TIMEOUT_MS",
        default_value_t = 30_000
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
    #[arg(long, env = "A2A_COMMANDS_HANDLER_MAX_ANSWER_BYTES", default_value_t = 64 * 1024)]
    pub handler_max_answer_bytes: usize,

    /// Most calls in flight to one handler endpoint; more wait (within their timeout).
    #[arg(long, env = "A2A_COMMANDS_HANDLER_CONCURRENCY", default_value_t = 32)]
    pub handler_concurrency: usize,

    /// JSON config file: {"default_model", "models", "default_effort", "builtins"}.
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

/// A listen address that can be turned off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionalAddr(pub Option<SocketAddr>);

fn parse_optional_addr(text: &str) -> Result<OptionalAddr, String> {
    match text.trim() {
        "" | "off" | "none" => Ok(OptionalAddr(None)),
        addr => addr
            .parse()
            .map(|a| OptionalAddr(Some(a)))
            .map_err(|e| format!("{e} (an ip:port, or off)")),
    }
}

/// TLS files for the API listener.
#[derive(Clone, Debug)]
pub struct Tls {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// PEM CA for client certificates; set means mTLS.
    pub client_ca: Option<PathBuf>,
}

/// The config file's shape; every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    default_model: Option<String>,
    models: Option<Vec<String>>,
    default_effort: Option<String>,
    builtins: Option<Vec<String>>,
}

/// Everything `serve` needs, checked.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The API's address.
    pub listen: SocketAddr,
    /// The health-only listener's address, if any.
    pub health_listen: Option<SocketAddr>,
    /// The declarative commands file, if any.
    pub commands_file: Option<PathBuf>,
    /// How often the commands file is checked.
    pub commands_file_poll: Duration,
    /// The admin token's file, if changes need one.
    pub admin_token_file: Option<PathBuf>,
    /// TLS for the API listener, if any.
    pub tls: Option<Tls>,
    /// How to open the registry.
    pub registry: registry::Options,
    /// The model catalogue.
    pub catalogue: Catalogue,
    /// The built-ins to offer, in order.
    pub builtins: Vec<Builtin>,
    /// Largest request accepted, in bytes.
    pub max_message_bytes: usize,
    /// Longest wait for calls in flight at shutdown.
    pub drain_timeout: Duration,
    /// Limits on command handlers.
    pub handlers: HandlerPolicy,
}

/// A configuration that cannot be used; the message says which setting and why.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {0}")]
pub struct ConfigError(String);

impl Settings {
    /// A configuration with every default, the registry in `data_dir`, the API on
    /// `listen` and the health listener on a free port of the same IP (tests and tools
    /// start from this).
    pub fn with_defaults(listen: SocketAddr, data_dir: PathBuf) -> Self {
        Self {
            listen,
            health_listen: Some(SocketAddr::new(listen.ip(), 0)),
            commands_file: None,
            commands_file_poll: Duration::from_secs(1),
            admin_token_file: None,
            tls: None,
            registry: registry::Options {
                data_dir,
                cache_bytes: 8 << 20,
                max_commands: 10_000,
            },
            catalogue: default_catalogue(),
            builtins: Builtin::ALL.to_vec(),
            max_message_bytes: 4 << 20,
            drain_timeout: Duration::from_secs(10),
            handlers: HandlerPolicy::default(),
        }
    }

    /// Resolves flags, environment and config file into settings.
    pub fn from_args(args: &ServeArgs) -> Result<Self, ConfigError> {
        let file = match &args.config {
            Some(path) => read_config_file(path)?,
            None => ConfigFile::default(),
        };
        let defaults = default_catalogue();
        let models = args
            .models
            .clone()
            .or(file.models)
            .map(non_empty)
            .unwrap_or(defaults.models);
        let default_model = args
            .default_model
            .clone()
            .or(file.default_model)
            .unwrap_or(defaults.default_model);
        let default_effort = args.default_effort.clone().or(file.default_effort);
        let builtins = args.builtins.clone().or(file.builtins).map(non_empty);
        let catalogue = Catalogue {
            default_model,
            models,
            default_effort,
        };
        check_catalogue(&catalogue)?;
        let builtins = match builtins {
            None => Builtin::ALL.to_vec(),
            Some(names) => names
                .iter()
                .map(|n| {
                    Builtin::from_name(n).ok_or_else(|| {
                        ConfigError(format!(
                            "builtins: {n:?} is not a built-in (model, effort, sub-task, status)"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        if args.max_commands == 0 {
            return Err(ConfigError("max-commands: must be at least 1".into()));
        }
        let handlers = HandlerPolicy {
            default_timeout_ms: args.handler_timeout_ms,
            max_timeout_ms: args.handler_max_timeout_ms,
            allowed_hosts: non_empty(args.handler_allowed_hosts.clone()),
            max_answer_bytes: args.handler_max_answer_bytes,
            max_concurrency: args.handler_concurrency,
        };
        if handlers.default_timeout_ms == 0 || handlers.default_timeout_ms > handlers.max_timeout_ms
        {
            return Err(ConfigError(format!(
                "handler-timeout-ms: must be between 1 and handler-max-timeout-ms ({})",
                handlers.max_timeout_ms
            )));
        }
        if handlers.max_concurrency == 0 {
            return Err(ConfigError(
                "handler-concurrency: must be at least 1".into(),
            ));
        }
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(Tls {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.tls_client_ca.clone(),
            }),
            _ => None,
        };
        Ok(Self {
            listen: args.listen,
            health_listen: args.health_listen.0,
            commands_file: args.commands_file.clone(),
            commands_file_poll: Duration::from_millis(args.commands_file_poll_ms.max(10)),
            admin_token_file: args.admin_token_file.clone(),
            tls,
            registry: registry::Options {
                data_dir: args.data_dir.clone().unwrap_or_else(default_data_dir),
                cache_bytes: args.cache_mib.max(1) << 20,
                max_commands: args.max_commands,
            },
            catalogue,
            builtins,
            max_message_bytes: args.max_message_bytes,
            drain_timeout: Duration::from_secs(args.drain_seconds),
            handlers,
        })
    }
}

fn default_catalogue() -> Catalogue {
    Catalogue {
        default_model: "gpt-x".into(),
        models: vec!["gpt-x".into(), "gpt-x-mini".into()],
        default_effort: None,
    }
}

/// Drops empty items, so `--builtins ""` means none.
fn non_empty(items: Vec<String>) -> Vec<String> {
    items
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn check_catalogue(catalogue: &Catalogue) -> Result<(), ConfigError> {
    if catalogue.models.is_empty() {
        return Err(ConfigError(
            "models: at least one model must be selectable".into(),
        ));
    }
    if !catalogue.is_selectable(&catalogue.default_model) {
        return Err(ConfigError(format!(
            "default-model: {:?} is not one of the selectable models ({})",
            catalogue.default_model,
            catalogue.models.join(", ")
        )));
    }
    if let Some(effort) = &catalogue.default_effort {
        if !Catalogue::is_accepted_effort(effort) {
            return Err(ConfigError(format!(
                "default-effort: {effort:?} is not one of {}",
                EFFORTS.join(", ")
            )));
        }
    }
    Ok(())
}

fn read_config_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("config file {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| ConfigError(format!("config file {}: {e}", path.display())))
}

/// Where the registry lives when no directory is given.
pub fn default_data_dir() -> PathBuf {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(xdg) = non_empty("XDG_DATA_HOME") {
        PathBuf::from(xdg).join("a2a-commands")
    } else if let Some(home) = non_empty("HOME") {
        PathBuf::from(home).join(".local/share/a2a-commands")
    } else {
        PathBuf::from("a2a-commands-data")
    }
}
