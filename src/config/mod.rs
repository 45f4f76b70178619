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

/// The config file's `front` object: the front flags' names without `front-`, in
/// snake case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontFile {
    upstream: Option<String>,
    listen: Option<SocketAddr>,
    public_url: Option<String>,
    timeout_ms: Option<u64>,
    stream_idle_timeout_ms: Option<u64>,
    max_body_bytes: Option<usize>,
    card_refresh_seconds: Option<u64>,
    records_max: Option<usize>,
    records_expiry_seconds: Option<u64>,
    signing_key_file: Option<PathBuf>,
    signing_key_id: Option<String>,
    signing_jku: Option<String>,
    default_role: Option<String>,
    role_header: Option<String>,
    sender_header: Option<String>,
    upstream_grpc: Option<String>,
    upstream_a2a_version: Option<String>,
    jwt_jwks_file: Option<PathBuf>,
    jwt_jwks_url: Option<String>,
    jwt_issuer: Option<String>,
    jwt_audience: Option<String>,
    jwt_sender_claim: Option<String>,
    jwt_role_claim: Option<String>,
    jwt_required: Option<bool>,
    jwt_jwks_refresh_seconds: Option<u64>,
}

/// The config file's `fleet` object: the fleet flags' names without `fleet-`, in
/// snake case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FleetFile {
    etcd_endpoints: Option<Vec<String>>,
    prefix: Option<String>,
    etcd_ca_file: Option<PathBuf>,
    etcd_cert_file: Option<PathBuf>,
    etcd_key_file: Option<PathBuf>,
    etcd_user: Option<String>,
    etcd_password_file: Option<PathBuf>,
    timeout_ms: Option<u64>,
    max_txn_ops: Option<usize>,
    max_request_bytes: Option<usize>,
    member_name: Option<String>,
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

/// The front's settings from `args` over the config file's `front` object; `None`
/// without an upstream (the front off).
fn front_options(
    args: &cli::FrontArgs,
    file: Option<FrontFile>,
) -> Result<Option<FrontOptions>, ConfigError> {
    use crate::front::callers::parse_role;
    use crate::front::options::defaults;
    let file = file.unwrap_or_default();
    let signing = signing(args, &file)?;
    let jwt = jwt(args, &file)?;
    let upstream_grpc = args
        .front_upstream_grpc
        .clone()
        .or_else(|| file.upstream_grpc.clone())
        .map(|address| {
            let address = address.trim().to_owned();
            let valid = url::Url::parse(&format!("http://{address}"))
                .ok()
                .filter(|u| u.host_str().is_some() && u.port().is_some() && u.path() == "/")
                .is_some();
            if valid {
                Ok(address)
            } else {
                Err(ConfigError(format!(
                    "front-upstream-grpc: {address:?} must be host:port (the agent's gRPC address)"
                )))
            }
        })
        .transpose()?;
    let version_word = args
        .front_upstream_a2a_version
        .clone()
        .or_else(|| file.upstream_a2a_version.clone())
        .unwrap_or_else(|| "auto".into());
    let upstream_versions = match version_word.trim() {
        "auto" => None,
        "1.0" => Some(crate::front::card::Versions {
            v10: true,
            v03: false,
        }),
        "0.3" => Some(crate::front::card::Versions {
            v10: false,
            v03: true,
        }),
        "both" => Some(crate::front::card::Versions {
            v10: true,
            v03: true,
        }),
        other => {
            return Err(ConfigError(format!(
                "front-upstream-a2a-version: {other:?} is not one of auto, 1.0, 0.3, both"
            )))
        }
    };
    let Some(upstream) = args.front_upstream.clone().or(file.upstream) else {
        return Ok(None);
    };
    let http_url = |flag: &str, text: &str| -> Result<url::Url, ConfigError> {
        let url = url::Url::parse(text)
            .map_err(|e| ConfigError(format!("{flag}: {text:?} is not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(ConfigError(format!(
                "{flag}: {text:?} must be an http:// or https:// URL with a host"
            )));
        }
        if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
            return Err(ConfigError(format!(
                "{flag}: {text:?} may have a path, but no query, fragment or user"
            )));
        }
        Ok(url)
    };
    let upstream = http_url("front-upstream", &upstream)?;
    if upstream.scheme() == "https" {
        return Err(ConfigError(
            "front-upstream: the front reaches its agent over http:// (the agent beside it \
             in the pod); https:// upstreams are not supported yet"
                .into(),
        ));
    }
    let public_url = args
        .front_public_url
        .clone()
        .or(file.public_url)
        .map(|u| http_url("front-public-url", &u))
        .transpose()?;
    let role_word = args
        .front_default_role
        .clone()
        .or(file.default_role)
        .unwrap_or_else(|| "watcher".into());
    let default_role = parse_role(&role_word).ok_or_else(|| {
        ConfigError(format!(
            "front-default-role: {role_word:?} is not a role (assignee, reporter, watcher, admin, none)"
        ))
    })?;
    let header = |flag: &str, value: Option<String>| -> Result<Option<String>, ConfigError> {
        value
            .map(|name| {
                let name = name.trim().to_ascii_lowercase();
                tonic::codegen::http::HeaderName::from_bytes(name.as_bytes())
                    .map(|_| name.clone())
                    .map_err(|_| ConfigError(format!("{flag}: {name:?} is not a header name")))
            })
            .transpose()
    };
    let timeout_ms = args.front_timeout_ms.or(file.timeout_ms);
    let options = FrontOptions {
        listen: args
            .front_listen
            .or(file.listen)
            .unwrap_or_else(|| defaults::LISTEN.parse().expect("a socket address")),
        upstream,
        public_url,
        timeout: timeout_ms.map_or(defaults::TIMEOUT, Duration::from_millis),
        stream_idle: args
            .front_stream_idle_timeout_ms
            .or(file.stream_idle_timeout_ms)
            .map_or(defaults::STREAM_IDLE, Duration::from_millis),
        max_body_bytes: args
            .front_max_body_bytes
            .or(file.max_body_bytes)
            .unwrap_or(defaults::MAX_BODY_BYTES),
        card_refresh: args
            .front_card_refresh_seconds
            .or(file.card_refresh_seconds)
            .map_or(defaults::CARD_REFRESH, Duration::from_secs),
        records: registry::records::Limits {
            cap: args
                .front_records_max
                .or(file.records_max)
                .unwrap_or(defaults::RECORDS_MAX),
            expiry: args
                .front_records_expiry_seconds
                .or(file.records_expiry_seconds)
                .map_or(defaults::RECORDS_EXPIRY, Duration::from_secs),
        },
        signing,
        default_role,
        role_header: header(
            "front-role-header",
            args.front_role_header.clone().or(file.role_header),
        )?,
        sender_header: header(
            "front-sender-header",
            args.front_sender_header.clone().or(file.sender_header),
        )?,
        upstream_grpc,
        upstream_versions,
        jwt,
    };
    if options.timeout.is_zero() || options.stream_idle.is_zero() || options.max_body_bytes == 0 {
        return Err(ConfigError(
            "front-timeout-ms, front-stream-idle-timeout-ms and front-max-body-bytes: must be at least 1".into(),
        ));
    }
    if options.records.cap == 0 || options.records.expiry.is_zero() {
        return Err(ConfigError(
            "front-records-max and front-records-expiry-seconds: must be at least 1".into(),
        ));
    }
    Ok(Some(options))
}

/// The card's signing key, read and loaded when a file is given.
fn signing(
    args: &cli::FrontArgs,
    file: &FrontFile,
) -> Result<Option<crate::front::options::Signing>, ConfigError> {
    let Some(key_file) = args
        .front_signing_key_file
        .clone()
        .or_else(|| file.signing_key_file.clone())
    else {
        return Ok(None);
    };
    let key_id = args
        .front_signing_key_id
        .clone()
        .or_else(|| file.signing_key_id.clone())
        .unwrap_or_else(|| crate::front::options::defaults::SIGNING_KEY_ID.to_owned());
    let jku = args
        .front_signing_jku
        .clone()
        .or_else(|| file.signing_jku.clone());
    let pem = std::fs::read_to_string(&key_file).map_err(|e| {
        ConfigError(format!(
            "front-signing-key-file: cannot read {}: {e}",
            key_file.display()
        ))
    })?;
    let signer =
        crate::front::sign::Signer::from_pem(&pem, &key_id, jku.as_deref()).map_err(|e| {
            ConfigError(format!(
                "front-signing-key-file: {}: {e}",
                key_file.display()
            ))
        })?;
    Ok(Some(crate::front::options::Signing {
        key_file,
        key_id,
        jku,
        signer: std::sync::Arc::new(signer),
    }))
}

/// Verified callers' settings, when a key set is given: the issuer and the audience
/// are required with it, and a key set file must hold a usable key.
fn jwt(
    args: &cli::FrontArgs,
    file: &FrontFile,
) -> Result<Option<crate::front::callers::JwtOptions>, ConfigError> {
    use crate::front::callers::{defaults, JwtOptions, KeySource};
    let path = args
        .front_jwt_jwks_file
        .clone()
        .or_else(|| file.jwt_jwks_file.clone());
    let url = args
        .front_jwt_jwks_url
        .clone()
        .or_else(|| file.jwt_jwks_url.clone());
    let keys = match (path, url) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(ConfigError(
                "front-jwt-jwks-file and front-jwt-jwks-url: give one key set, not both".into(),
            ))
        }
        (Some(path), None) => {
            crate::front::jwks::check_file(&path)
                .map_err(|e| ConfigError(format!("front-jwt-jwks-file: {e}")))?;
            KeySource::File(path)
        }
        (None, Some(text)) => {
            let url = url::Url::parse(&text).map_err(|e| {
                ConfigError(format!("front-jwt-jwks-url: {text:?} is not a URL ({e})"))
            })?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err(ConfigError(format!(
                    "front-jwt-jwks-url: {text:?} must be an http:// or https:// URL with a host"
                )));
            }
            KeySource::Url(url)
        }
    };
    let required = |flag: &str, value: Option<String>| {
        value.filter(|v| !v.trim().is_empty()).ok_or_else(|| {
            ConfigError(format!(
                "{flag}: required with a JWT key set (tokens are checked against it)"
            ))
        })
    };
    let claim = |value: Option<String>, default: &str| {
        value
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    let refresh = args
        .front_jwt_jwks_refresh_seconds
        .or(file.jwt_jwks_refresh_seconds)
        .map_or(defaults::REFRESH, Duration::from_secs);
    if refresh.is_zero() {
        return Err(ConfigError(
            "front-jwt-jwks-refresh-seconds: must be at least 1".into(),
        ));
    }
    Ok(Some(JwtOptions {
        keys,
        issuer: required(
            "front-jwt-issuer",
            args.front_jwt_issuer
                .clone()
                .or_else(|| file.jwt_issuer.clone()),
        )?,
        audience: required(
            "front-jwt-audience",
            args.front_jwt_audience
                .clone()
                .or_else(|| file.jwt_audience.clone()),
        )?,
        sender_claim: claim(
            args.front_jwt_sender_claim
                .clone()
                .or_else(|| file.jwt_sender_claim.clone()),
            defaults::SENDER_CLAIM,
        ),
        role_claim: claim(
            args.front_jwt_role_claim
                .clone()
                .or_else(|| file.jwt_role_claim.clone()),
            defaults::ROLE_CLAIM,
        ),
        required: args.front_jwt_required || file.jwt_required.unwrap_or(false),
        refresh,
    }))
}

fn describe_front(front: &FrontOptions) -> serde_json::Value {
    serde_json::json!({
        "upstream": front.upstream.as_str(),
        "listen": front.listen.to_string(),
        "public_url": front.public_url.as_ref().map(url::Url::as_str),
        "timeout_ms": front.timeout.as_millis() as u64,
        "stream_idle_timeout_ms": front.stream_idle.as_millis() as u64,
        "max_body_bytes": front.max_body_bytes,
        "card_refresh_seconds": front.card_refresh.as_secs(),
        "records_max": front.records.cap,
        "records_expiry_seconds": front.records.expiry.as_secs(),
        "signing_key_file": front.signing.as_ref().map(|s| s.key_file.display().to_string()),
        "signing_key_id": front.signing.as_ref().map(|s| s.key_id.clone()),
        "signing_jku": front.signing.as_ref().and_then(|s| s.jku.clone()),
        "default_role": crate::front::callers::role_word(front.default_role),
        "role_header": front.role_header,
        "sender_header": front.sender_header,
        "upstream_grpc": front.upstream_grpc,
        "upstream_a2a_version": match front.upstream_versions {
            None => "auto",
            Some(v) if v.v10 && v.v03 => "both",
            Some(v) if v.v03 => "0.3",
            Some(_) => "1.0",
        },
        "jwt_jwks_file": front.jwt.as_ref().and_then(|j| match &j.keys {
            crate::front::callers::KeySource::File(path) => Some(path.display().to_string()),
            crate::front::callers::KeySource::Url(_) => None,
        }),
        "jwt_jwks_url": front.jwt.as_ref().and_then(|j| match &j.keys {
            crate::front::callers::KeySource::Url(url) => Some(url.to_string()),
            crate::front::callers::KeySource::File(_) => None,
        }),
        "jwt_issuer": front.jwt.as_ref().map(|j| j.issuer.clone()),
        "jwt_audience": front.jwt.as_ref().map(|j| j.audience.clone()),
        "jwt_sender_claim": front.jwt.as_ref().map(|j| j.sender_claim.clone()),
        "jwt_role_claim": front.jwt.as_ref().map(|j| j.role_claim.clone()),
        "jwt_required": front.jwt.as_ref().is_some_and(|j| j.required),
        "jwt_jwks_refresh_seconds": front.jwt.as_ref().map(|j| j.refresh.as_secs()),
    })
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

fn fleet_options(
    args: &FleetArgs,
    file: Option<FleetFile>,
    listen: &str,
) -> Result<Option<registry::FleetOptions>, ConfigError> {
    let file = file.unwrap_or_default();
    let Some(endpoints) = args.fleet_etcd_endpoints.clone().or(file.etcd_endpoints) else {
        return Ok(None);
    };
    // `host:port` alone, as etcdctl takes it, is plain http.
    let endpoints: Vec<String> = non_empty(endpoints)
        .into_iter()
        .map(|e| {
            if e.contains("://") {
                e
            } else {
                format!("http://{e}")
            }
        })
        .collect();
    if endpoints.is_empty() {
        return Ok(None);
    }
    let mut schemes = std::collections::BTreeSet::new();
    for endpoint in &endpoints {
        schemes.insert(check_endpoint(endpoint)?);
    }
    if schemes.len() > 1 {
        return Err(ConfigError(
            "fleet-etcd-endpoints: all http:// or all https://, not both".into(),
        ));
    }
    let ca = args.fleet_etcd_ca_file.clone().or(file.etcd_ca_file);
    let cert = args.fleet_etcd_cert_file.clone().or(file.etcd_cert_file);
    let key = args.fleet_etcd_key_file.clone().or(file.etcd_key_file);
    let identity = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => {
            return Err(ConfigError(
                "fleet-etcd-cert-file and fleet-etcd-key-file: give both or neither".into(),
            ))
        }
    };
    let https = schemes.contains("https");
    if !https && (ca.is_some() || identity.is_some()) {
        return Err(ConfigError(
            "fleet-etcd-ca-file, -cert-file, -key-file: TLS needs https:// endpoints".into(),
        ));
    }
    let tls = https.then_some(registry::EtcdTls { ca, identity });
    let user = match (
        args.fleet_etcd_user.clone().or(file.etcd_user),
        args.fleet_etcd_password_file
            .clone()
            .or(file.etcd_password_file),
    ) {
        (Some(user), Some(password)) => Some((user, password)),
        (None, None) => None,
        _ => {
            return Err(ConfigError(
                "fleet-etcd-user and fleet-etcd-password-file: give both or neither".into(),
            ))
        }
    };
    let prefix = args
        .fleet_prefix
        .clone()
        .or(file.prefix)
        .unwrap_or_else(|| defaults::FLEET_PREFIX.to_owned());
    if prefix.is_empty() {
        return Err(ConfigError("fleet-prefix: must not be empty".into()));
    }
    let timeout_ms = args
        .fleet_timeout_ms
        .or(file.timeout_ms)
        .unwrap_or(defaults::FLEET_TIMEOUT_MS);
    let max_txn_ops = args
        .fleet_max_txn_ops
        .or(file.max_txn_ops)
        .unwrap_or(defaults::FLEET_MAX_TXN_OPS);
    let max_request_bytes = args
        .fleet_max_request_bytes
        .or(file.max_request_bytes)
        .unwrap_or(defaults::FLEET_MAX_REQUEST_BYTES);
    if timeout_ms == 0 || max_txn_ops < 3 || max_request_bytes < 4096 {
        return Err(ConfigError(
            "fleet-timeout-ms, fleet-max-txn-ops, fleet-max-request-bytes: at least 1, 3 and 4096"
                .into(),
        ));
    }
    let member_name = args
        .fleet_member_name
        .clone()
        .or(file.member_name)
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "sidecar".to_owned());
    Ok(Some(registry::FleetOptions {
        endpoints,
        prefix,
        tls,
        user,
        timeout: Duration::from_millis(timeout_ms),
        max_txn_ops,
        max_request_bytes,
        member_name,
        member_addr: listen.to_owned(),
    }))
}

/// Checks one etcd endpoint; returns its scheme.
fn check_endpoint(endpoint: &str) -> Result<&'static str, ConfigError> {
    let bad = |why: &str| {
        ConfigError(format!(
            "fleet-etcd-endpoints: {endpoint:?} {why} (expected host:port, http://host:port or https://host:port)"
        ))
    };
    let url = url::Url::parse(endpoint).map_err(|e| bad(&format!("is not a URL: {e}")))?;
    let scheme = match url.scheme() {
        "http" => "http",
        "https" => "https",
        _ => return Err(bad("is not an http:// or https:// URL")),
    };
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("has no host"));
    }
    if url.port().is_none() {
        return Err(bad("has no port"));
    }
    if url.path() != "/" || url.query().is_some() {
        return Err(bad("has a path"));
    }
    Ok(scheme)
}

/// Fleet mode's settings for `--print-config`: file paths, never the password.
fn describe_fleet(fleet: &registry::FleetOptions) -> serde_json::Value {
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    serde_json::json!({
        "etcd_endpoints": fleet.endpoints,
        "prefix": fleet.prefix,
        "etcd_ca_file": fleet.tls.as_ref().and_then(|t| path(&t.ca)),
        "etcd_cert_file": fleet.tls.as_ref().and_then(|t| t.identity.as_ref()).map(|i| i.0.display().to_string()),
        "etcd_key_file": fleet.tls.as_ref().and_then(|t| t.identity.as_ref()).map(|i| i.1.display().to_string()),
        "etcd_user": fleet.user.as_ref().map(|u| u.0.clone()),
        "etcd_password_file": fleet.user.as_ref().map(|u| u.1.display().to_string()),
        "etcd_password": fleet.user.as_ref().map(|_| "<redacted>"),
        "timeout_ms": fleet.timeout.as_millis() as u64,
        "max_txn_ops": fleet.max_txn_ops,
        "max_request_bytes": fleet.max_request_bytes,
        "member_name": fleet.member_name,
    })
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
