//! Where spans go and which are kept, resolved from flags and OpenTelemetry's standard
//! environment variables (the flag first, then the signal's own variable, then the
//! general one), so that a sidecar is configured as any OpenTelemetry SDK is.

use std::time::Duration;

/// The OTLP transport spans are sent over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/gRPC (`grpc`, the default).
    Grpc,
    /// OTLP/HTTP with protobuf bodies (`http/protobuf`).
    HttpProtobuf,
}

impl Protocol {
    /// The name OpenTelemetry's variables use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Grpc => "grpc",
            Self::HttpProtobuf => "http/protobuf",
        }
    }
}

/// Which traces are kept (`OTEL_TRACES_SAMPLER`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sampler {
    /// Every trace.
    AlwaysOn,
    /// None.
    AlwaysOff,
    /// This fraction of trace ids.
    TraceIdRatio(f64),
    /// The caller's decision when it sent one (a sampled flag in `traceparent`), else
    /// the inner rule.
    ParentBased(ParentRoot),
}

/// What a parent-based sampler does for a trace that starts here.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParentRoot {
    /// Keep it.
    AlwaysOn,
    /// Drop it.
    AlwaysOff,
    /// Keep this fraction.
    TraceIdRatio(f64),
}

impl Sampler {
    /// `OTEL_TRACES_SAMPLER`'s name for it, and its argument if it takes one.
    pub fn describe(self) -> (&'static str, Option<f64>) {
        match self {
            Self::AlwaysOn => ("always_on", None),
            Self::AlwaysOff => ("always_off", None),
            Self::TraceIdRatio(r) => ("traceidratio", Some(r)),
            Self::ParentBased(ParentRoot::AlwaysOn) => ("parentbased_always_on", None),
            Self::ParentBased(ParentRoot::AlwaysOff) => ("parentbased_always_off", None),
            Self::ParentBased(ParentRoot::TraceIdRatio(r)) => ("parentbased_traceidratio", Some(r)),
        }
    }
}

/// How ended spans are queued and sent (the `OTEL_BSP_*` variables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// The longest a span waits for its batch to fill (`OTEL_BSP_SCHEDULE_DELAY`).
    pub delay: Duration,
    /// Spans queued at most; past that they are dropped and counted
    /// (`OTEL_BSP_MAX_QUEUE_SIZE`).
    pub max_queue: usize,
    /// Spans per export at most (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    pub max_batch: usize,
    /// How long one export may take before its spans count as dropped
    /// (`OTEL_BSP_EXPORT_TIMEOUT`).
    pub export_timeout: Duration,
}

impl Default for Batching {
    /// OpenTelemetry's defaults.
    fn default() -> Self {
        Self {
            delay: Duration::from_millis(5000),
            max_queue: 2048,
            max_batch: 512,
            export_timeout: Duration::from_millis(30_000),
        }
    }
}

/// Where spans go, when they are exported at all.
#[derive(Clone, Debug, PartialEq)]
pub struct Export {
    /// The collector's URL: for gRPC its origin, for HTTP the traces path included.
    pub endpoint: String,
    /// The transport.
    pub protocol: Protocol,
    /// Headers sent with every export (often a collector's API key: never printed).
    pub headers: Vec<(String, String)>,
    /// How long one export may take (`OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT`).
    pub timeout: Duration,
}

impl Export {
    /// The endpoint as it may be printed: without a user, password or query, which may
    /// hold credentials.
    pub fn shown_endpoint(&self) -> String {
        match url::Url::parse(&self.endpoint) {
            Ok(mut url) => {
                let _ = url.set_username("");
                let _ = url.set_password(None);
                url.set_query(None);
                let shown = url.to_string();
                // `Url` adds a root path the endpoint may not have had.
                match shown.strip_suffix('/') {
                    Some(bare) if !self.endpoint.ends_with('/') => bare.to_owned(),
                    _ => shown,
                }
            }
            Err(_) => "<unparsable>".to_owned(),
        }
    }
}

/// Everything about traces a server is started with.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSettings {
    /// Where spans go; `None`: traces are off, and no span is made.
    pub export: Option<Export>,
    /// Why traces are off, for `--print-config` (empty when on).
    pub off_because: &'static str,
    /// `service.name`.
    pub service_name: String,
    /// The other resource attributes (`OTEL_RESOURCE_ATTRIBUTES`), in order.
    pub resource: Vec<(String, String)>,
    /// Which traces are kept.
    pub sampler: Sampler,
    /// Queueing and batching.
    pub batching: Batching,
}

impl Default for TraceSettings {
    /// Off.
    fn default() -> Self {
        Self {
            export: None,
            off_because: "no OTLP endpoint configured",
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            resource: Vec::new(),
            sampler: Sampler::ParentBased(ParentRoot::AlwaysOn),
            batching: Batching::default(),
        }
    }
}

/// The most spans a queue may hold, whatever `OTEL_BSP_MAX_QUEUE_SIZE` asks: a bound
/// on memory, far above any useful setting.
const MAX_QUEUE: u64 = 1 << 20;

/// `service.name` when nothing names one.
pub const DEFAULT_SERVICE_NAME: &str = "a2a-commands";

/// The trace flags of `serve` (each also read from its OpenTelemetry variable).
#[derive(Clone, Debug, Default)]
pub struct TraceFlags {
    /// `--otlp-traces-endpoint`: the URL spans are sent to, used as is.
    pub endpoint: Option<String>,
    /// `--otlp-protocol`: `grpc` or `http/protobuf`.
    pub protocol: Option<String>,
    /// `--trace-sampler`.
    pub sampler: Option<String>,
    /// `--trace-sampler-arg`.
    pub sampler_arg: Option<String>,
    /// `--service-name`.
    pub service_name: Option<String>,
}

impl TraceSettings {
    /// Resolves `flags` over the variables `env` gives (`std::env::var` in the server,
    /// a map in tests). A value that cannot be used is an error naming where it came
    /// from; a header's value is never quoted.
    pub fn resolve(
        flags: &TraceFlags,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let mut settings = Self::default();

        // Either switch turns traces off before anything else is judged, so a sidecar
        // can be switched off whatever the rest says.
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            settings.off_because = "OTEL_SDK_DISABLED=true";
            return Ok(settings);
        }
        match env("OTEL_TRACES_EXPORTER")
            .map(|e| e.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("otlp") => {}
            Some("none") => {
                settings.off_because = "OTEL_TRACES_EXPORTER=none";
                return Ok(settings);
            }
            Some(other) => {
                return Err(format!(
                    "OTEL_TRACES_EXPORTER={other:?}: only otlp (or none) is supported"
                ))
            }
        }

        let attributes = match env("OTEL_RESOURCE_ATTRIBUTES") {
            Some(text) => pairs(&text, "OTEL_RESOURCE_ATTRIBUTES", true)?,
            None => Vec::new(),
        };
        let named_in_attributes = attributes
            .iter()
            .find(|(k, _)| k == "service.name")
            .map(|(_, v)| v.clone());
        settings.resource = attributes
            .into_iter()
            .filter(|(k, _)| k != "service.name")
            .collect();
        settings.service_name = flags
            .service_name
            .clone()
            .or_else(|| env("OTEL_SERVICE_NAME"))
            .or(named_in_attributes)
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());

        let (sampler_name, sampler_source) = match (&flags.sampler, env("OTEL_TRACES_SAMPLER")) {
            (Some(s), _) => (Some(s.clone()), "--trace-sampler"),
            (None, s) => (s, "OTEL_TRACES_SAMPLER"),
        };
        let (arg, arg_source) = match (&flags.sampler_arg, env("OTEL_TRACES_SAMPLER_ARG")) {
            (Some(a), _) => (Some(a.clone()), "--trace-sampler-arg"),
            (None, a) => (a, "OTEL_TRACES_SAMPLER_ARG"),
        };
        if let Some(name) = sampler_name {
            settings.sampler = sampler(&name, sampler_source, arg.as_deref(), arg_source)?;
        }

        settings.batching = Batching {
            delay: Duration::from_millis(number(env, "OTEL_BSP_SCHEDULE_DELAY", 5000)?),
            max_queue: number(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048)?.clamp(1, MAX_QUEUE) as usize,
            max_batch: number(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)?.clamp(1, MAX_QUEUE)
                as usize,
            export_timeout: Duration::from_millis(number(env, "OTEL_BSP_EXPORT_TIMEOUT", 30_000)?),
        };

        // A batch larger than the queue could never fill (OpenTelemetry's rule).
        settings.batching.max_batch = settings.batching.max_batch.min(settings.batching.max_queue);

        let protocol = match flags
            .protocol
            .clone()
            .map(|p| (p, "--otlp-protocol"))
            .or_else(|| {
                env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                    .map(|p| (p, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
                    .or_else(|| {
                        env("OTEL_EXPORTER_OTLP_PROTOCOL")
                            .map(|p| (p, "OTEL_EXPORTER_OTLP_PROTOCOL"))
                    })
            }) {
            None => Protocol::Grpc,
            Some((p, _)) if p.trim() == "grpc" => Protocol::Grpc,
            Some((p, _)) if p.trim() == "http/protobuf" => Protocol::HttpProtobuf,
            Some((p, source)) => {
                return Err(format!(
                    "{source}={p:?}: the OTLP protocol must be grpc or http/protobuf"
                ))
            }
        };

        // Where the endpoint comes from decides whether HTTP's path is added: a
        // signal's own endpoint is used as is, the general one is a base.
        let endpoint = match flags
            .endpoint
            .clone()
            .map(|e| (e, "--otlp-traces-endpoint"))
        {
            Some(given) => Some((given, false)),
            None => env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .map(|e| ((e, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), false))
                .or_else(|| {
                    env("OTEL_EXPORTER_OTLP_ENDPOINT")
                        .map(|e| ((e, "OTEL_EXPORTER_OTLP_ENDPOINT"), true))
                }),
        };
        let headers = match env("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .map(|h| (h, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"))
            .or_else(|| {
                env("OTEL_EXPORTER_OTLP_HEADERS").map(|h| (h, "OTEL_EXPORTER_OTLP_HEADERS"))
            }) {
            Some((text, source)) => pairs(&text, source, false)?,
            None => Vec::new(),
        };
        for (name, _) in &headers {
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !valid {
                return Err(format!(
                    "OTLP header name {name:?} is not a valid header name"
                ));
            }
        }

        let timeout = match env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") {
            Some(_) => number(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 10_000)?,
            None => number(env, "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)?,
        };
        let Some(((text, source), general)) = endpoint else {
            return Ok(settings);
        };
        settings.off_because = "";
        settings.export = Some(Export {
            endpoint: endpoint_url(&text, source, protocol, general)?,
            protocol,
            headers,
            timeout: Duration::from_millis(timeout.max(1)),
        });
        Ok(settings)
    }

    /// What `--print-config` shows: everything but header values.
    pub fn describe(&self) -> serde_json::Value {
        let (sampler, arg) = self.sampler.describe();
        let mut out = serde_json::json!({
            "export": self.export.as_ref().map_or_else(
                || serde_json::json!(format!("off ({})", self.off_because)),
                |e| serde_json::json!({
                    "endpoint": e.shown_endpoint(),
                    "protocol": e.protocol.name(),
                    "timeout_ms": e.timeout.as_millis() as u64,
                    "headers": e.headers.iter().map(|(k, _)| format!("{k}: <redacted>")).collect::<Vec<_>>(),
                }),
            ),
            "service_name": self.service_name,
            "resource": self.resource.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
            "sampler": sampler,
            "schedule_delay_ms": self.batching.delay.as_millis() as u64,
            "max_queue_size": self.batching.max_queue,
            "max_export_batch_size": self.batching.max_batch,
            "export_timeout_ms": self.batching.export_timeout.as_millis() as u64,
        });
        if let Some(arg) = arg {
            out["sampler_arg"] = serde_json::json!(arg);
        }
        out
    }
}

/// The sampler named `name`, with its argument where it takes one.
fn sampler(
    name: &str,
    source: &str,
    arg: Option<&str>,
    arg_source: &str,
) -> Result<Sampler, String> {
    let ratio = || -> Result<f64, String> {
        match arg {
            None => Ok(1.0),
            Some(text) => text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| format!("{arg_source}={text:?}: a ratio from 0 to 1")),
        }
    };
    Ok(match name.trim() {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::TraceIdRatio(ratio()?),
        "parentbased_always_on" => Sampler::ParentBased(ParentRoot::AlwaysOn),
        "parentbased_always_off" => Sampler::ParentBased(ParentRoot::AlwaysOff),
        "parentbased_traceidratio" => Sampler::ParentBased(ParentRoot::TraceIdRatio(ratio()?)),
        other => {
            return Err(format!(
                "{source}={other:?}: one of always_on, always_off, traceidratio, \
                 parentbased_always_on, parentbased_always_off, parentbased_traceidratio"
            ))
        }
    })
}

/// A whole number of milliseconds or items from `name`, or `default`.
fn number(env: impl Fn(&str) -> Option<String>, name: &str, default: u64) -> Result<u64, String> {
    match env(name) {
        None => Ok(default),
        Some(text) => text
            .trim()
            .parse()
            .map_err(|_| format!("{name}={text:?}: a whole number")),
    }
}

/// `key=value` pairs separated by commas, values percent-decoded (the W3C baggage
/// form OpenTelemetry's variables use). Values are quoted in errors only when
/// `quote_values` (never for headers, which may hold keys).
fn pairs(text: &str, source: &str, quote_values: bool) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let items = text.split(',').map(str::trim).filter(|i| !i.is_empty());
    for (at, item) in items.enumerate() {
        let Some((key, value)) = item.split_once('=') else {
            // A header without `=` may be a whole credential: name its place only.
            return Err(if quote_values {
                format!("{source}: {item:?} is not key=value")
            } else {
                format!("{source}: item {} is not key=value", at + 1)
            });
        };
        let value = percent_decode(value.trim()).ok_or_else(|| {
            format!(
                "{source}: the value of {:?} is not valid percent-encoding",
                key.trim()
            )
        })?;
        out.push((key.trim().to_owned(), value));
    }
    Ok(out)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The URL spans are sent to: `host:port` alone is taken as `http://` (as the fleet's
/// etcd endpoints are); the general endpoint gets HTTP's `/v1/traces` path.
fn endpoint_url(
    text: &str,
    source: &str,
    protocol: Protocol,
    general: bool,
) -> Result<String, String> {
    let text = text.trim();
    let with_scheme = if text.contains("://") {
        text.to_owned()
    } else {
        format!("http://{text}")
    };
    let url = url::Url::parse(&with_scheme)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or_else(|| format!("{source}={text:?}: not an http:// or https:// URL with a host"))?;
    let mut out = url.to_string();
    if protocol == Protocol::HttpProtobuf && general {
        if !out.ends_with('/') {
            out.push('/');
        }
        out.push_str("v1/traces");
    } else if protocol == Protocol::Grpc && url.path() == "/" && !text.ends_with('/') {
        // `Url` adds a root path the operator did not write.
        out.pop();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(flags: &TraceFlags, vars: &[(&str, &str)]) -> Result<TraceSettings, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TraceSettings::resolve(flags, |name| vars.get(name).cloned())
    }

    #[test]
    fn off_unless_an_endpoint_is_given_and_not_disabled() {
        let off = resolve(&TraceFlags::default(), &[]).unwrap();
        assert_eq!(off.export, None);
        assert_eq!(off.service_name, "a2a-commands");
        let on = resolve(
            &TraceFlags::default(),
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")],
        )
        .unwrap();
        let export = on.export.unwrap();
        assert_eq!(export.endpoint, "http://collector:4317");
        assert_eq!(export.protocol, Protocol::Grpc);
        for (name, value, why) in [
            ("OTEL_SDK_DISABLED", "TRUE", "OTEL_SDK_DISABLED=true"),
            ("OTEL_TRACES_EXPORTER", "none", "OTEL_TRACES_EXPORTER=none"),
        ] {
            let off = resolve(
                &TraceFlags::default(),
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                    (name, value),
                ],
            )
            .unwrap();
            assert_eq!((off.export, off.off_because), (None, why));
        }
        let err = resolve(
            &TraceFlags::default(),
            &[("OTEL_TRACES_EXPORTER", "zipkin")],
        )
        .unwrap_err();
        assert!(err.contains("OTEL_TRACES_EXPORTER"), "{err}");
    }

    #[test]
    fn the_flag_wins_then_the_signal_s_variable_then_the_general_one() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://general:4318/base"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ];
        let general = resolve(&TraceFlags::default(), &vars)
            .unwrap()
            .export
            .unwrap();
        assert_eq!(general.endpoint, "http://general:4318/base/v1/traces");
        let mut with_signal = vars.to_vec();
        with_signal.push((
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://signal:4318/custom",
        ));
        let signal = resolve(&TraceFlags::default(), &with_signal)
            .unwrap()
            .export
            .unwrap();
        assert_eq!(signal.endpoint, "http://signal:4318/custom");
        let flags = TraceFlags {
            endpoint: Some("https://flag:4317".into()),
            protocol: Some("grpc".into()),
            ..TraceFlags::default()
        };
        let flag = resolve(&flags, &with_signal).unwrap().export.unwrap();
        assert_eq!(
            (flag.endpoint.as_str(), flag.protocol),
            ("https://flag:4317", Protocol::Grpc)
        );
        let err = resolve(
            &TraceFlags::default(),
            &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
        )
        .unwrap_err();
        assert!(err.contains("grpc or http/protobuf"), "{err}");
        let err = resolve(
            &TraceFlags::default(),
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x")],
        )
        .unwrap_err();
        assert!(err.starts_with("OTEL_EXPORTER_OTLP_ENDPOINT="), "{err}");
    }

    #[test]
    fn the_switches_win_and_credentials_in_the_url_are_not_printed() {
        let off = resolve(
            &TraceFlags::default(),
            &[
                ("OTEL_SDK_DISABLED", "true"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://bad"),
            ],
        )
        .unwrap();
        assert_eq!(off.off_because, "OTEL_SDK_DISABLED=true");
        let on = resolve(
            &TraceFlags::default(),
            &[
                (
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                    "https://user:tok@collector:4317?key=k",
                ),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "8"),
            ],
        )
        .unwrap();
        let export = on.export.as_ref().unwrap();
        assert_eq!(export.shown_endpoint(), "https://collector:4317");
        assert_eq!(export.timeout, Duration::from_millis(2500));
        assert_eq!(
            on.batching.max_batch, 8,
            "a batch never larger than the queue"
        );
        let printed = on.describe().to_string();
        assert!(
            !printed.contains("tok") && !printed.contains("key=k"),
            "{printed}"
        );
    }

    #[test]
    fn headers_are_decoded_and_never_printed() {
        let settings = resolve(
            &TraceFlags::default(),
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cr%3Dt, tenant=a"),
            ],
        )
        .unwrap();
        let export = settings.export.as_ref().unwrap();
        assert_eq!(
            export.headers,
            [
                ("x-api-key".into(), "s3cr=t".into()),
                ("tenant".into(), "a".into())
            ]
        );
        let printed = settings.describe().to_string();
        assert!(
            printed.contains("x-api-key") && !printed.contains("s3cr"),
            "{printed}"
        );
        let err = resolve(
            &TraceFlags::default(),
            &[(
                "OTEL_EXPORTER_OTLP_HEADERS",
                "tenant=a,Authorization: Bearer s3cret",
            )],
        );
        let err = err.unwrap_err();
        assert_eq!(err, "OTEL_EXPORTER_OTLP_HEADERS: item 2 is not key=value");
    }

    #[test]
    fn resource_service_name_and_sampler() {
        let settings = resolve(
            &TraceFlags::default(),
            &[
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "service.name=from-attrs,k8s.pod.name=pod-1",
                ),
                ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
            ],
        )
        .unwrap();
        assert_eq!(settings.service_name, "from-attrs");
        assert_eq!(settings.resource, [("k8s.pod.name".into(), "pod-1".into())]);
        assert_eq!(
            settings.sampler,
            Sampler::ParentBased(ParentRoot::TraceIdRatio(0.25))
        );
        let named = resolve(
            &TraceFlags::default(),
            &[
                ("OTEL_SERVICE_NAME", "sidecar"),
                ("OTEL_RESOURCE_ATTRIBUTES", "service.name=x"),
            ],
        )
        .unwrap();
        assert_eq!(named.service_name, "sidecar");
        for (name, arg) in [("traceidratio", "1.5"), ("sometimes", "")] {
            let flags = TraceFlags {
                sampler: Some(name.into()),
                sampler_arg: Some(arg.into()),
                ..TraceFlags::default()
            };
            assert!(resolve(&flags, &[]).is_err(), "{name} {arg}");
        }
    }
}
