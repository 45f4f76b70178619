//! The service's Prometheus metrics (OpenMetrics text, with `prometheus-client`), kept
//! in one process-wide set that every layer records into and `--metrics-listen` serves.
//!
//! Per-call metrics (calls, their latency, Execute's outcomes) are recorded only by a
//! server that serves them (`--metrics-listen`; its observing layer decides, see
//! `transport::layers::observe::CallLog`): without a scraper they would be work on every
//! call for nobody. The rest (registry, writer, handlers, commands file, WatchSpecs) changes
//! rarely and is always kept.
//!
//! Label sets stay bounded: methods and gRPC codes are fixed sets, and a command name
//! is a label only where it is registered (Execute's outcomes of commands, handler
//! calls), so the registry's capacity bounds it. Nothing a user typed that is not
//! registered becomes a label.

use std::cell::RefCell;
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// A gRPC call's method and status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    /// The method, e.g. `Execute`.
    pub method: &'static str,
    /// The status code, e.g. `OK`.
    pub code: &'static str,
}

/// A method alone.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabels {
    /// The method.
    pub method: &'static str,
}

/// A command's outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// The registered command.
    pub command: String,
    /// `ok`, `refused`, `failed`, `no_handler`, or `prompt` (a prompt command expanded).
    pub outcome: &'static str,
}

/// A handler call's command, transport and result.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HandlerLabels {
    /// The registered command.
    pub command: String,
    /// `grpc`, `json_rpc`, `mcp`, or `mcp_prompt` (a prompt command's MCP prompt).
    pub transport: &'static str,
    /// `reply`, `abort`, `no_answer` or `failed`; for `mcp_prompt`, `expanded`, `usage`
    /// or `failed`.
    pub result: &'static str,
}

/// A handler call's transport.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TransportLabels {
    /// `grpc`, `json_rpc` or `mcp`.
    pub transport: &'static str,
}

/// A commands-file reconcile's result.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// `ok` or `rejected`.
    pub result: &'static str,
}

fn latency_histogram() -> Histogram {
    // 25 µs to about 13 s.
    Histogram::new(exponential_buckets(0.000_025, 2.0, 20))
}

/// Every metric the service records.
pub struct Metrics {
    registry: Registry,
    /// gRPC calls by method and code.
    pub calls: Family<CallLabels, Counter>,
    /// gRPC call latency by method, in seconds.
    pub call_seconds: Family<MethodLabels, Histogram, fn() -> Histogram>,
    /// Execute's commands by command and outcome.
    pub outcomes: Family<OutcomeLabels, Counter>,
    /// Handler calls by command, transport and result.
    pub handler_calls: Family<HandlerLabels, Counter>,
    /// Handler call latency by transport, in seconds.
    pub handler_seconds: Family<TransportLabels, Histogram, fn() -> Histogram>,
    /// Commands in the registry.
    pub registry_commands: Gauge,
    /// The registry's revision.
    pub registry_revision: Gauge,
    /// Changes per group commit.
    pub group_size: Histogram,
    /// How long a group takes to reach the disk (record, batch, flush), in seconds.
    pub flush_seconds: Histogram,
    /// Commands-file reconciles by result.
    pub file_reconciles: Family<ReconcileLabels, Counter>,
    /// When the commands file was last applied, in seconds since the Unix epoch.
    pub file_last_success: Gauge<f64, AtomicU64>,
    /// Open WatchSpecs streams.
    pub watch_subscribers: Gauge,
    /// The fleet store (etcd, fleet mode only).
    pub fleet: FleetMetrics,
    /// Span export (traces on only).
    pub traces: TraceMetrics,
    /// The front (`--front-upstream` only).
    pub front: FrontMetrics,
}

/// Why spans were not exported.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DropLabels {
    /// `queue_full` (the collector is slower than the calls) or `export_failed` (it
    /// refused, failed or did not answer in time).
    pub reason: &'static str,
}

/// What span export reports (zero while traces are off).
#[derive(Clone, Debug, Default)]
pub struct TraceMetrics {
    /// Spans the collector accepted.
    pub exported: Counter,
    /// Spans dropped, by reason.
    pub dropped: Family<DropLabels, Counter>,
}

/// A front request's binding, method and what became of it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FrontLabels {
    /// `jsonrpc`, `http_json`, or `other` (the card, anything else passed through).
    pub binding: &'static str,
    /// The A2A method (`SendMessage`, `GetTask`, ...), `card`, or `other`.
    pub method: &'static str,
    /// `answered` (by the front), `passed` (to the agent), or `upstream_error` (the
    /// agent could not be reached in time).
    pub result: &'static str,
}

/// What the front reports (zero while it is off).
#[derive(Clone, Debug)]
pub struct FrontMetrics {
    /// Requests by binding, method and result.
    pub requests: Family<FrontLabels, Counter>,
    /// How long the agent took to start answering a passed request, in seconds.
    pub upstream_seconds: Histogram,
    /// Client connections open now.
    pub connections: Gauge,
    /// Client connections closed unread because `--front-max-connections` were open.
    pub connections_refused: Counter,
    /// Cards of the agent refused because no signature verified with the card key set.
    pub cards_unverified: Counter,
}

impl FrontMetrics {
    /// Counts one front request under `labels`. Each thread keeps the counters it has
    /// used (a handful: the label sets are few and fixed): the family's own lookup
    /// hashes the labels and takes a lock, at every request.
    pub fn count_request(&self, labels: FrontLabels) {
        thread_local! {
            static KEPT: RefCell<Vec<(usize, FrontLabels, Counter)>> = const { RefCell::new(Vec::new()) };
        }
        // Which family a kept counter is from (tests may make more than one).
        let family = std::ptr::from_ref(&self.requests) as usize;
        KEPT.with(|kept| {
            let mut kept = kept.borrow_mut();
            if let Some((_, _, counter)) = kept
                .iter()
                .find(|(from, kept, _)| *from == family && *kept == labels)
            {
                counter.inc();
                return;
            }
            // A clone shares the family's count.
            let counter = self.requests.get_or_create(&labels).clone();
            counter.inc();
            kept.push((family, labels, counter));
        });
    }
}

impl Default for FrontMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            upstream_seconds: latency_histogram(),
            connections: Gauge::default(),
            connections_refused: Counter::default(),
            cards_unverified: Counter::default(),
        }
    }
}

/// What the fleet store reports (fleet mode only; zero otherwise).
#[derive(Clone, Debug, Default)]
pub struct FleetMetrics {
    /// 1 while the last call to etcd answered, else 0.
    pub connected: Gauge,
    /// The etcd revision of the last change applied.
    pub applied_etcd_revision: Gauge,
    /// Seconds since etcd last answered.
    pub seconds_since_contact: Gauge<f64, AtomicU64>,
    /// Watches opened again after they ended.
    pub watch_restarts: Counter,
    /// Whole reads of the fleet's registry (at start, after a compaction or a gap).
    pub full_reads: Counter,
    /// Writes that found the registry changed by another sidecar and were made again.
    pub write_conflicts: Counter,
    /// Times etcd's history was found not to be the one followed (recreated, restored
    /// from a snapshot, the keys deleted), and the whole registry taken from it.
    pub resets: Counter,
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("a2a_commands");
        let calls = Family::default();
        registry.register(
            "calls",
            "gRPC calls by method and status code",
            calls.clone(),
        );
        let call_seconds: Family<MethodLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "call_duration_seconds",
            "gRPC call latency by method",
            call_seconds.clone(),
        );
        let outcomes = Family::default();
        registry.register(
            "execute_outcomes",
            "Commands run by Execute, by command and outcome",
            outcomes.clone(),
        );
        let handler_calls = Family::default();
        registry.register(
            "handler_calls",
            "Handler calls by command, transport and result",
            handler_calls.clone(),
        );
        let handler_seconds: Family<TransportLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "handler_call_duration_seconds",
            "Handler call latency by transport",
            handler_seconds.clone(),
        );
        let registry_commands = Gauge::default();
        registry.register(
            "registry_commands",
            "Commands in the registry",
            registry_commands.clone(),
        );
        let registry_revision = Gauge::default();
        registry.register(
            "registry_revision",
            "The registry's revision",
            registry_revision.clone(),
        );
        let group_size = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        registry.register(
            "writer_group_size",
            "Changes written per group commit",
            group_size.clone(),
        );
        let flush_seconds = latency_histogram();
        registry.register(
            "writer_flush_duration_seconds",
            "Time for a group to reach the disk (record, batch, flush)",
            flush_seconds.clone(),
        );
        let file_reconciles = Family::default();
        registry.register(
            "commands_file_reconciles",
            "Commands-file reconciles by result",
            file_reconciles.clone(),
        );
        let file_last_success = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "commands_file_last_success_timestamp_seconds",
            "When the commands file was last applied (Unix time)",
            file_last_success.clone(),
        );
        let watch_subscribers = Gauge::default();
        registry.register(
            "watch_subscribers",
            "Open WatchSpecs streams",
            watch_subscribers.clone(),
        );
        let fleet = FleetMetrics::default();
        registry.register(
            "fleet_connected",
            "1 while etcd answers the fleet store's calls",
            fleet.connected.clone(),
        );
        registry.register(
            "fleet_applied_etcd_revision",
            "The etcd revision of the last fleet change applied",
            fleet.applied_etcd_revision.clone(),
        );
        registry.register(
            "fleet_seconds_since_contact",
            "Seconds since etcd last answered the fleet store",
            fleet.seconds_since_contact.clone(),
        );
        registry.register(
            "fleet_watch_restarts",
            "Fleet watches opened again after they ended",
            fleet.watch_restarts.clone(),
        );
        registry.register(
            "fleet_full_reads",
            "Whole reads of the fleet's registry",
            fleet.full_reads.clone(),
        );
        registry.register(
            "fleet_write_conflicts",
            "Fleet writes made again after another sidecar's change",
            fleet.write_conflicts.clone(),
        );
        registry.register(
            "fleet_resets",
            "Times etcd's history was not the one followed (etcd recreated, restored or its keys deleted)",
            fleet.resets.clone(),
        );
        let front = FrontMetrics::default();
        registry.register(
            "front_requests",
            "Front requests by binding, method and result (answered by the front, passed to the agent, upstream error)",
            front.requests.clone(),
        );
        registry.register(
            "front_upstream_duration_seconds",
            "How long the agent took to start answering a request the front passed on",
            front.upstream_seconds.clone(),
        );
        registry.register(
            "front_connections",
            "Client connections the front holds open",
            front.connections.clone(),
        );
        registry.register(
            "front_connections_refused",
            "Client connections closed unread because --front-max-connections were open",
            front.connections_refused.clone(),
        );
        registry.register(
            "front_cards_unverified",
            "Cards of the agent refused: none of their signatures verified with --front-card-jwks-*",
            front.cards_unverified.clone(),
        );
        let traces = TraceMetrics::default();
        registry.register(
            "trace_spans_exported",
            "Spans the OTLP collector accepted",
            traces.exported.clone(),
        );
        registry.register(
            "trace_spans_dropped",
            "Spans dropped before a collector accepted them, by reason",
            traces.dropped.clone(),
        );
        Self {
            registry,
            fleet,
            traces,
            front,
            calls,
            call_seconds,
            outcomes,
            handler_calls,
            handler_seconds,
            registry_commands,
            registry_revision,
            group_size,
            flush_seconds,
            file_reconciles,
            file_last_success,
            watch_subscribers,
        }
    }

    /// Records one gRPC call (a server does so only when it serves its metrics).
    pub fn call(&self, method: &'static str, code: &'static str, latency: Duration) {
        self.calls.get_or_create(&CallLabels { method, code }).inc();
        self.call_seconds
            .get_or_create(&MethodLabels { method })
            .observe(latency.as_secs_f64());
    }

    /// Records how an Execute of the registered `command` ended (`ok`, `refused`,
    /// `failed`, `no_handler`).
    pub fn outcome(&self, command: &str, outcome: &'static str) {
        self.outcomes
            .get_or_create(&OutcomeLabels {
                command: command.to_owned(),
                outcome,
            })
            .inc();
    }

    /// The metrics as OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_openmetrics() {
        let m = metrics();
        m.call("Classify", "OK", Duration::from_micros(30));
        m.outcome("model", "ok");
        let text = m.encode();
        assert!(
            text.contains("a2a_commands_calls_total{method=\"Classify\",code=\"OK\"}"),
            "{text}"
        );
        assert!(text.contains("# TYPE a2a_commands_call_duration_seconds histogram"));
        assert!(text.ends_with("# EOF\n"));
    }
}
