//! Fleet mode's settings: its flags over the config file's `fleet` object, checked,
//! and what `--print-config` shows of them.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::cli::non_empty;
use crate::config::cli::FleetArgs;
use crate::config::defaults;
use crate::config::error::ConfigError;
use crate::registry;

/// The config file's `fleet` object: the fleet flags' names without `fleet-`, in
/// snake case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FleetFile {
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

pub(super) fn fleet_options(
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
pub(super) fn check_endpoint(endpoint: &str) -> Result<&'static str, ConfigError> {
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
pub(super) fn describe_fleet(fleet: &registry::FleetOptions) -> serde_json::Value {
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
