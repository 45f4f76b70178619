//! The front's settings: its flags over the config file's `front` object, checked,
//! and what `--print-config` shows of them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::cli::{self};
use crate::config::defaults;
use crate::config::error::ConfigError;
use crate::front::FrontOptions;
use crate::registry;

/// The config file's `front` object: the front flags' names without `front-`, in
/// snake case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FrontFile {
    upstream: Option<String>,
    listen: Option<SocketAddr>,
    public_url: Option<String>,
    timeout_ms: Option<u64>,
    stream_idle_timeout_ms: Option<u64>,
    max_body_bytes: Option<usize>,
    send_timeout_seconds: Option<u64>,
    max_connections: Option<usize>,
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
    card_jwks_file: Option<PathBuf>,
    card_jwks_url: Option<String>,
    card_jwks_refresh_seconds: Option<u64>,
}

/// The front's settings from `args` over the config file's `front` object; `None`
/// without an upstream (the front off).
pub(super) fn front_options(
    args: &cli::FrontArgs,
    file: Option<FrontFile>,
) -> Result<Option<FrontOptions>, ConfigError> {
    use crate::front::callers::parse_role;
    let file = file.unwrap_or_default();
    let signing = signing(args, &file)?;
    let jwt = jwt(args, &file)?;
    let card_keys = card_keys(args, &file)?;
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
        .unwrap_or_else(|| defaults::FRONT_DEFAULT_ROLE.into());
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
            .unwrap_or_else(|| defaults::FRONT_LISTEN.parse().expect("a socket address")),
        upstream,
        public_url,
        timeout: timeout_ms.map_or(defaults::FRONT_TIMEOUT, Duration::from_millis),
        stream_idle: args
            .front_stream_idle_timeout_ms
            .or(file.stream_idle_timeout_ms)
            .map_or(defaults::FRONT_STREAM_IDLE, Duration::from_millis),
        max_body_bytes: args
            .front_max_body_bytes
            .or(file.max_body_bytes)
            .unwrap_or(defaults::FRONT_MAX_BODY_BYTES),
        send_timeout: args
            .front_send_timeout_seconds
            .or(file.send_timeout_seconds)
            .map_or(defaults::FRONT_SEND_TIMEOUT, Duration::from_secs),
        max_connections: args
            .front_max_connections
            .or(file.max_connections)
            .unwrap_or(defaults::FRONT_MAX_CONNECTIONS),
        card_refresh: args
            .front_card_refresh_seconds
            .or(file.card_refresh_seconds)
            .map_or(defaults::FRONT_CARD_REFRESH, Duration::from_secs),
        records: registry::records::Limits {
            cap: args
                .front_records_max
                .or(file.records_max)
                .unwrap_or(defaults::FRONT_RECORDS_MAX),
            expiry: args
                .front_records_expiry_seconds
                .or(file.records_expiry_seconds)
                .map_or(defaults::FRONT_RECORDS_EXPIRY, Duration::from_secs),
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
        card_keys,
    };
    if options.timeout.is_zero()
        || options.stream_idle.is_zero()
        || options.max_body_bytes == 0
        || options.send_timeout.is_zero()
        || options.max_connections == 0
    {
        return Err(ConfigError(
            "front-timeout-ms, front-stream-idle-timeout-ms, front-max-body-bytes, front-send-timeout-seconds and front-max-connections: must be at least 1".into(),
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
pub(super) fn signing(
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
        .unwrap_or_else(|| defaults::FRONT_SIGNING_KEY_ID.to_owned());
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

/// A key set's source from its two flags (`<flag>-file`, `<flag>-url`): at most one,
/// a file that holds a usable key, a URL with a host.
fn key_source(
    flag: &str,
    path: Option<PathBuf>,
    url: Option<String>,
) -> Result<Option<crate::front::jwks::KeySource>, ConfigError> {
    use crate::front::jwks::KeySource;
    Ok(Some(match (path, url) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(ConfigError(format!(
                "{flag}-file and {flag}-url: give one key set, not both"
            )))
        }
        (Some(path), None) => {
            crate::front::jwks::check_file(&path)
                .map_err(|e| ConfigError(format!("{flag}-file: {e}")))?;
            KeySource::File(path)
        }
        (None, Some(text)) => {
            let url = url::Url::parse(&text)
                .map_err(|e| ConfigError(format!("{flag}-url: {text:?} is not a URL ({e})")))?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err(ConfigError(format!(
                    "{flag}-url: {text:?} must be an http:// or https:// URL with a host"
                )));
            }
            KeySource::Url(url)
        }
    }))
}

/// The key set the agent's card must be signed by, when one is given, and how long a
/// fetched one is kept.
pub(super) fn card_keys(
    args: &cli::FrontArgs,
    file: &FrontFile,
) -> Result<Option<(crate::front::jwks::KeySource, Duration)>, ConfigError> {
    let path = args
        .front_card_jwks_file
        .clone()
        .or_else(|| file.card_jwks_file.clone());
    let url = args
        .front_card_jwks_url
        .clone()
        .or_else(|| file.card_jwks_url.clone());
    let Some(keys) = key_source("front-card-jwks", path, url)? else {
        return Ok(None);
    };
    let refresh = args
        .front_card_jwks_refresh_seconds
        .or(file.card_jwks_refresh_seconds)
        .map_or(defaults::FRONT_JWT_REFRESH, Duration::from_secs);
    if refresh.is_zero() {
        return Err(ConfigError(
            "front-card-jwks-refresh-seconds: must be at least 1".into(),
        ));
    }
    Ok(Some((keys, refresh)))
}

/// Verified callers' settings, when a key set is given: the issuer and the audience
/// are required with it, and a key set file must hold a usable key.
pub(super) fn jwt(
    args: &cli::FrontArgs,
    file: &FrontFile,
) -> Result<Option<crate::front::callers::JwtOptions>, ConfigError> {
    use crate::front::callers::JwtOptions;
    let path = args
        .front_jwt_jwks_file
        .clone()
        .or_else(|| file.jwt_jwks_file.clone());
    let url = args
        .front_jwt_jwks_url
        .clone()
        .or_else(|| file.jwt_jwks_url.clone());
    let Some(keys) = key_source("front-jwt-jwks", path, url)? else {
        return Ok(None);
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
        .map_or(defaults::FRONT_JWT_REFRESH, Duration::from_secs);
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
            defaults::FRONT_JWT_SENDER_CLAIM,
        ),
        role_claim: claim(
            args.front_jwt_role_claim
                .clone()
                .or_else(|| file.jwt_role_claim.clone()),
            defaults::FRONT_JWT_ROLE_CLAIM,
        ),
        required: args.front_jwt_required || file.jwt_required.unwrap_or(false),
        refresh,
    }))
}

pub(super) fn describe_front(front: &FrontOptions) -> serde_json::Value {
    serde_json::json!({
        "upstream": front.upstream.as_str(),
        "listen": front.listen.to_string(),
        "public_url": front.public_url.as_ref().map(url::Url::as_str),
        "timeout_ms": front.timeout.as_millis() as u64,
        "stream_idle_timeout_ms": front.stream_idle.as_millis() as u64,
        "max_body_bytes": front.max_body_bytes,
        "send_timeout_seconds": front.send_timeout.as_secs(),
        "max_connections": front.max_connections,
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
            crate::front::jwks::KeySource::File(path) => Some(path.display().to_string()),
            crate::front::jwks::KeySource::Url(_) => None,
        }),
        "jwt_jwks_url": front.jwt.as_ref().and_then(|j| match &j.keys {
            crate::front::jwks::KeySource::Url(url) => Some(url.to_string()),
            crate::front::jwks::KeySource::File(_) => None,
        }),
        "jwt_issuer": front.jwt.as_ref().map(|j| j.issuer.clone()),
        "jwt_audience": front.jwt.as_ref().map(|j| j.audience.clone()),
        "jwt_sender_claim": front.jwt.as_ref().map(|j| j.sender_claim.clone()),
        "jwt_role_claim": front.jwt.as_ref().map(|j| j.role_claim.clone()),
        "jwt_required": front.jwt.as_ref().is_some_and(|j| j.required),
        "jwt_jwks_refresh_seconds": front.jwt.as_ref().map(|j| j.refresh.as_secs()),
        "card_jwks_file": front.card_keys.as_ref().and_then(|(keys, _)| match keys {
            crate::front::jwks::KeySource::File(path) => Some(path.display().to_string()),
            crate::front::jwks::KeySource::Url(_) => None,
        }),
        "card_jwks_url": front.card_keys.as_ref().and_then(|(keys, _)| match keys {
            crate::front::jwks::KeySource::Url(url) => Some(url.to_string()),
            crate::front::jwks::KeySource::File(_) => None,
        }),
        "card_jwks_refresh_seconds": front.card_keys.as_ref().map(|(_, refresh)| refresh.as_secs()),
    })
}
