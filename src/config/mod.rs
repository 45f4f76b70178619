//! Configuration: command-line flags, each also read from an environment variable, and
//! an optional JSON config file for the model catalogue and the built-ins.
//!
//! Precedence, highest first: flag, environment variable, config file, default.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::front::FrontOptions;
use crate::registry;
use crate::rules::body::HandlerPolicy;
use crate::rules::builtins::{Builtin, Catalogue};
use crate::rules::task::EFFORTS;
use crate::telemetry::{TraceFlags, TraceSettings};

pub mod cli;
pub mod defaults;
mod error;
mod fleet;
mod front;

use cli::non_empty;
pub use error::ConfigError;
use fleet::{describe_fleet, fleet_options, FleetFile};
use front::{describe_front, front_options, FrontFile};

pub use cli::{
    Cli, Command, CtlArgs, CtlVerb, FleetArgs, HandlerArgs, LogFormat, OptionalAddr, RegisterArgs,
    SalvageArgs, ServeArgs, TraceArgs,
};

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
    fleet: Option<FleetFile>,
    front: Option<FrontFile>,
}

/// Everything `serve` needs, checked.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The API's address.
    pub listen: SocketAddr,
    /// The health-only listener's address, if any.
    pub health_listen: Option<SocketAddr>,
    /// The metrics listener's address, if any.
    pub metrics_listen: Option<SocketAddr>,
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
    /// Fleet mode: the registry kept in etcd for every replica; `None` for sled mode.
    pub fleet: Option<registry::FleetOptions>,
    /// The model catalogue.
    pub catalogue: Catalogue,
    /// The built-ins to offer, in order.
    pub builtins: Vec<Builtin>,
    /// Largest request accepted, in bytes.
    pub max_message_bytes: usize,
    /// Longest wait for calls in flight at shutdown.
    pub drain_timeout: Duration,
    /// Limits on connections and on what one request may cost.
    pub limits: Limits,
    /// One successful call in how many gets its log line.
    pub call_log_sample: u64,
    /// Limits on command handlers.
    pub handlers: HandlerPolicy,
    /// Traces (off unless an OTLP endpoint is configured).
    pub traces: TraceSettings,
    /// The front, when an upstream agent is configured.
    pub front: Option<FrontOptions>,
}

/// Limits on connections and requests (see SECURITY.md, "Resource limits").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most repeated elements in one Classify or Execute request.
    pub max_request_elements: usize,
    /// Memory the requests of all calls in flight may take together, in bytes.
    pub max_request_memory: usize,
    /// Most concurrent streams per HTTP/2 connection.
    pub max_concurrent_streams: u32,
    /// Largest HTTP/2 header list accepted, in bytes.
    pub max_header_list_bytes: u32,
    /// Interval of HTTP/2 keep-alive pings.
    pub keepalive: Duration,
    /// How long a ping may go unanswered.
    pub keepalive_timeout: Duration,
    /// How long a connection may be open with no call in flight; `None`: for ever.
    pub idle_timeout: Option<Duration>,
    /// How long a request's message may take to arrive once it has started; `None`: for
    /// ever. Until it has, it holds its share of the request memory budget.
    pub request_read_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        let seconds = Duration::from_secs;
        Self {
            max_request_elements: defaults::MAX_REQUEST_ELEMENTS,
            max_request_memory: defaults::MAX_REQUEST_MEMORY_MIB << 20,
            max_concurrent_streams: defaults::MAX_CONCURRENT_STREAMS,
            max_header_list_bytes: defaults::MAX_HEADER_LIST_BYTES,
            keepalive: seconds(defaults::KEEPALIVE_SECONDS),
            keepalive_timeout: seconds(defaults::KEEPALIVE_TIMEOUT_SECONDS),
            idle_timeout: Some(seconds(defaults::IDLE_TIMEOUT_SECONDS)),
            request_read_timeout: Some(seconds(defaults::REQUEST_READ_TIMEOUT_SECONDS)),
        }
    }
}

impl Settings {
    /// A configuration with every default, the registry in `data_dir`, the API on
    /// `listen` and the health listener on a free port of the same IP (tests and tools
    /// start from this).
    pub fn with_defaults(listen: SocketAddr, data_dir: PathBuf) -> Self {
        Self {
            listen,
            health_listen: Some(SocketAddr::new(listen.ip(), 0)),
            metrics_listen: None,
            commands_file: None,
            commands_file_poll: Duration::from_millis(defaults::COMMANDS_FILE_POLL_MS),
            admin_token_file: None,
            tls: None,
            registry: registry::Options {
                data_dir,
                cache_bytes: defaults::CACHE_MIB << 20,
                max_commands: defaults::MAX_COMMANDS,
            },
            fleet: None,
            catalogue: default_catalogue(),
            builtins: Builtin::ALL.to_vec(),
            max_message_bytes: defaults::MAX_MESSAGE_BYTES,
            drain_timeout: Duration::from_secs(defaults::DRAIN_SECONDS),
            limits: Limits::default(),
            call_log_sample: defaults::CALL_LOG_SAMPLE,
            handlers: defaults::handlers(),
            traces: TraceSettings::default(),
            front: None,
        }
    }

    /// The effective configuration as JSON (`serve --print-config`):
    /// every setting as resolved, with file paths, never a secret's content.
    pub fn describe(&self) -> serde_json::Value {
        let addr = |a: Option<SocketAddr>| a.map_or_else(|| "off".to_owned(), |a| a.to_string());
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let seconds = |d: Option<Duration>| d.map_or(0, |d| d.as_secs());
        serde_json::json!({
            "listen": self.listen.to_string(),
            "health_listen": addr(self.health_listen),
            "metrics_listen": addr(self.metrics_listen),
            "data_dir": self.registry.data_dir.display().to_string(),
            "max_commands": self.registry.max_commands,
            "cache_mib": self.registry.cache_bytes >> 20,
            "builtins": self.builtins.iter().map(|b| b.name()).collect::<Vec<_>>(),
            "default_model": self.catalogue.default_model,
            "models": self.catalogue.models,
            "default_effort": self.catalogue.default_effort,
            "commands_file": path(&self.commands_file),
            "commands_file_poll_ms": self.commands_file_poll.as_millis() as u64,
            "admin_token_file": path(&self.admin_token_file),
            "tls": self.tls.as_ref().map(|t| serde_json::json!({
                "cert": t.cert.display().to_string(),
                "key": t.key.display().to_string(),
                "client_ca": path(&t.client_ca),
            })),
            "max_message_bytes": self.max_message_bytes,
            "drain_seconds": self.drain_timeout.as_secs(),
            "call_log_sample": self.call_log_sample,
            "max_request_elements": self.limits.max_request_elements,
            "max_request_memory_mib": self.limits.max_request_memory >> 20,
            "max_concurrent_streams": self.limits.max_concurrent_streams,
            "max_header_list_bytes": self.limits.max_header_list_bytes,
            "keepalive_seconds": self.limits.keepalive.as_secs(),
            "keepalive_timeout_seconds": self.limits.keepalive_timeout.as_secs(),
            "idle_timeout_seconds": seconds(self.limits.idle_timeout),
            "request_read_timeout_seconds": seconds(self.limits.request_read_timeout),
            "handler_timeout_ms": self.handlers.default_timeout_ms,
            "handler_max_timeout_ms": self.handlers.max_timeout_ms,
            "handler_allowed_hosts": self.handlers.allowed_hosts,
            "handler_max_answer_bytes": self.handlers.max_answer_bytes,
            "handler_concurrency": self.handlers.max_concurrency,
            "handler_min_time_left_ms": self.handlers.min_time_left_ms,
            "handler_secrets_dir": path(&self.handlers.secrets_dir),
            "handler_ca_file": path(&self.handlers.ca_file),
            "fleet": self.fleet.as_ref().map(describe_fleet),
            "front": self.front.as_ref().map(describe_front),
            "traces": self.traces.describe(),
        })
    }

    /// Resolves flags, environment and config file into settings.
    pub fn from_args(args: &ServeArgs) -> Result<Self, ConfigError> {
        let mut file = match &args.config {
            Some(path) => read_config_file(path)?,
            None => ConfigFile::default(),
        };
        let fleet = fleet_options(&args.fleet, file.fleet.take(), &args.listen.to_string())?;
        let front = front_options(&args.front, file.front.take())?;
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
        let handlers = handler_policy(&args.handlers)?;
        let traces = trace_settings(&args.traces, |name| std::env::var(name).ok())?;
        if args.max_concurrent_streams == 0 || args.keepalive_seconds == 0 {
            return Err(ConfigError(
                "max-concurrent-streams and keepalive-seconds: must be at least 1".into(),
            ));
        }
        let limits = Limits {
            max_request_elements: args.max_request_elements,
            max_request_memory: args.max_request_memory_mib.saturating_mul(1 << 20),
            max_concurrent_streams: args.max_concurrent_streams,
            max_header_list_bytes: args.max_header_list_bytes,
            keepalive: Duration::from_secs(args.keepalive_seconds),
            keepalive_timeout: Duration::from_secs(args.keepalive_timeout_seconds.max(1)),
            idle_timeout: (args.idle_timeout_seconds > 0)
                .then(|| Duration::from_secs(args.idle_timeout_seconds)),
            request_read_timeout: (args.request_read_timeout_seconds > 0)
                .then(|| Duration::from_secs(args.request_read_timeout_seconds)),
        };
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
            metrics_listen: args.metrics_listen.0,
            commands_file: args.commands_file.clone(),
            commands_file_poll: Duration::from_millis(args.commands_file_poll_ms.max(10)),
            admin_token_file: args.admin_token_file.clone(),
            tls,
            registry: registry::Options {
                data_dir: args.data_dir.clone().unwrap_or_else(default_data_dir),
                cache_bytes: args.cache_mib.max(1) << 20,
                max_commands: args.max_commands,
            },
            fleet,
            catalogue,
            builtins,
            max_message_bytes: args.max_message_bytes,
            drain_timeout: Duration::from_secs(args.drain_seconds),
            limits,
            call_log_sample: args.call_log_sample,
            handlers,
            traces,
            front,
        })
    }
}

/// The front's settings from `args` and the config file's `front` object (given by
/// `config`, if any); `None` without an upstream. `ctl check` judges them as `serve` does.
pub fn front_settings(
    args: &cli::FrontArgs,
    config: Option<&Path>,
) -> Result<Option<FrontOptions>, ConfigError> {
    let file = match config {
        Some(path) => read_config_file(path)?.front,
        None => None,
    };
    front_options(args, file)
}

/// Trace settings from the trace flags over OpenTelemetry's variables (`env`).
pub fn trace_settings(
    args: &cli::TraceArgs,
    env: impl Fn(&str) -> Option<String>,
) -> Result<TraceSettings, ConfigError> {
    let flags = TraceFlags {
        endpoint: args.otlp_traces_endpoint.clone(),
        protocol: args.otlp_protocol.clone(),
        sampler: args.trace_sampler.clone(),
        sampler_arg: args.trace_sampler_arg.clone(),
        service_name: args.service_name.clone(),
    };
    TraceSettings::resolve(&flags, env).map_err(|e| ConfigError(format!("traces: {e}")))
}

/// Fleet mode's settings from `args`, the config file's `fleet` object (given by
/// `config`, if any) and the defaults; `None` without endpoints (sled mode). `ctl fleet`
/// resolves them as `serve` does.
pub fn fleet_settings(
    args: &FleetArgs,
    config: Option<&Path>,
) -> Result<Option<registry::FleetOptions>, ConfigError> {
    let file = match config {
        Some(path) => read_config_file(path)?.fleet,
        None => None,
    };
    fleet_options(args, file, "")
}

fn default_catalogue() -> Catalogue {
    Catalogue {
        default_model: "gpt-x".into(),
        models: vec!["gpt-x".into(), "gpt-x-mini".into()],
        default_effort: None,
    }
}

/// The handler policy the flags give, checked: what `serve` applies and `ctl check`
/// judges a commands file by.
pub fn handler_policy(args: &cli::HandlerArgs) -> Result<HandlerPolicy, ConfigError> {
    let policy = HandlerPolicy {
        default_timeout_ms: args.handler_timeout_ms,
        max_timeout_ms: args.handler_max_timeout_ms,
        allowed_hosts: non_empty(args.handler_allowed_hosts.clone()),
        max_answer_bytes: args.handler_max_answer_bytes,
        max_concurrency: args.handler_concurrency,
        secrets_dir: args.handler_secrets_dir.clone(),
        ca_file: args.handler_ca_file.clone(),
        min_time_left_ms: args.handler_min_time_left_ms,
    };
    if policy.default_timeout_ms == 0 || policy.default_timeout_ms > policy.max_timeout_ms {
        return Err(ConfigError(format!(
            "handler-timeout-ms: must be between 1 and handler-max-timeout-ms ({})",
            policy.max_timeout_ms
        )));
    }
    if policy.max_concurrency == 0 {
        return Err(ConfigError(
            "handler-concurrency: must be at least 1".into(),
        ));
    }
    Ok(policy)
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
