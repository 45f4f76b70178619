//! [`Tracer`]: one server's spans, made by the SDK and sent by the OTLP exporter.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::trace::{Sampler as SdkSampler, SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use crate::telemetry::queue::Queue;
use crate::telemetry::settings::{Export, ParentRoot, Protocol, Sampler, TraceSettings};

/// Where one server's spans go: its sampler, its resource and its queue to the
/// collector (the SDK's tracer holds its provider). Cheap to clone; each server has its
/// own, so two in one process (as in tests) trace apart.
#[derive(Clone, Debug)]
pub struct Tracer {
    pub(crate) tracer: SdkTracer,
    queue: Queue,
}

impl Tracer {
    /// The tracer `settings` ask for, or `None` when traces are off. Must run inside a
    /// tokio runtime (the export task is spawned on it). Fails only on what the
    /// exporter refuses to build, with one line naming the endpoint.
    pub fn start(settings: &TraceSettings) -> Result<Option<Self>, String> {
        let Some(export) = &settings.export else {
            return Ok(None);
        };
        let mut exporter = exporter(export)?;
        let resource = Resource::builder_empty()
            .with_service_name(settings.service_name.clone())
            .with_attributes(
                settings
                    .resource
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
            )
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .with_attribute(KeyValue::new("telemetry.sdk.language", "rust"))
            .with_attribute(KeyValue::new("telemetry.sdk.name", "opentelemetry"))
            .build();
        use opentelemetry_sdk::trace::SpanExporter as _;
        exporter.set_resource(&resource);
        let queue = Queue::start(exporter, settings.batching);
        let provider = SdkTracerProvider::builder()
            .with_span_processor(queue.clone())
            .with_sampler(sampler(settings.sampler))
            .with_resource(resource)
            .build();
        use opentelemetry::trace::TracerProvider as _;
        let tracer = provider.tracer("a2a-commands");
        Ok(Some(Self { tracer, queue }))
    }

    /// Sends the spans ended so far; returns once the collector answered or at
    /// `timeout` (the drain calls it last).
    pub async fn flush(&self, timeout: Duration) {
        self.queue.flush(timeout).await;
    }
}

fn exporter(export: &Export) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let built = match export.protocol {
        Protocol::Grpc => {
            let mut metadata = tonic::metadata::MetadataMap::new();
            for (name, value) in &export.headers {
                let key = tonic::metadata::MetadataKey::from_bytes(name.as_bytes())
                    .map_err(|_| format!("OTLP header name {name:?} is not valid"))?;
                let value = value
                    .parse()
                    .map_err(|_| format!("OTLP header {name:?}: its value is not valid"))?;
                metadata.insert(key, value);
            }
            opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(export.endpoint.clone())
                .with_timeout(export.timeout)
                .with_metadata(metadata)
                .build()
        }
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(export.endpoint.clone())
            .with_timeout(export.timeout)
            .with_headers(export.headers.iter().cloned().collect::<HashMap<_, _>>())
            .build(),
    };
    built.map_err(|e| format!("OTLP endpoint {}: {e}", export.shown_endpoint()))
}

fn sampler(sampler: Sampler) -> SdkSampler {
    match sampler {
        Sampler::AlwaysOn => SdkSampler::AlwaysOn,
        Sampler::AlwaysOff => SdkSampler::AlwaysOff,
        Sampler::TraceIdRatio(r) => SdkSampler::TraceIdRatioBased(r),
        Sampler::ParentBased(root) => SdkSampler::ParentBased(Box::new(match root {
            ParentRoot::AlwaysOn => SdkSampler::AlwaysOn,
            ParentRoot::AlwaysOff => SdkSampler::AlwaysOff,
            ParentRoot::TraceIdRatio(r) => SdkSampler::TraceIdRatioBased(r),
        })),
    }
}
