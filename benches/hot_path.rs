//! Micro-benchmarks of the read path: classification (typical and 1 MiB messages, 10
//! and 10,000 commands registered), card rendering, and spec validation.
//!
//! `cargo bench --bench hot_path`

use std::hint::black_box;

use a2a_commands::pb::{self, part::Content};
use a2a_commands::rules::card::Card;
use a2a_commands::rules::event::JsonForm;
use a2a_commands::rules::parse::{classify, single_text};
use a2a_commands::rules::spec::CommandSpec;
use a2a_commands::transport::answers::write_event;
use a2a_commands::wire::ProtoWriter;
use a2a_commands::{registry::Snapshot, rules::body::Body};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn registry(n: usize) -> Snapshot {
    Snapshot::detached((0..n).map(|i| {
        let spec =
            CommandSpec::new("", &format!("cmd-{i:05}"), "A benchmark command", "[<arg>]").unwrap();
        (spec, Body::None)
    }))
}

fn message(text: String) -> pb::Message {
    pb::Message {
        message_id: "m-1".into(),
        parts: vec![pb::Part {
            content: Some(Content::Text(text)),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn classification(c: &mut Criterion) {
    let mut group = c.benchmark_group("classify");
    for n in [10, 10_000] {
        let snapshot = registry(n);
        let cases = [
            ("command", message("/cmd-00007 deploy to staging".into())),
            ("not registered", message("/deploy to staging".into())),
            (
                "ordinary",
                message("Please summarise the thread so far.".into()),
            ),
        ];
        for (what, msg) in cases {
            group.bench_with_input(BenchmarkId::new(what, n), &msg, |b, msg| {
                b.iter(|| classify(black_box(msg), &snapshot))
            });
        }
    }
    group.finish();

    // Cost against message size: 1 KiB to 1 MiB, command and ordinary.
    let mut group = c.benchmark_group("classify by size");
    let snapshot = registry(10_000);
    for size in [1 << 10, 1 << 15, 1 << 20] {
        group.throughput(Throughput::Bytes(size as u64));
        let command = message(format!("/cmd-00007 {}", "x".repeat(size)));
        let ordinary = message(format!("{} /cmd-00007", "x".repeat(size)));
        let long_name = message(format!("/{}", "a".repeat(size)));
        for (what, msg) in [
            ("command", command),
            ("ordinary", ordinary),
            ("one long name", long_name),
        ] {
            group.bench_with_input(BenchmarkId::new(what, size), &msg, |b, msg| {
                b.iter(|| classify(black_box(msg), &snapshot))
            });
        }
    }
    group.finish();
}

fn card(c: &mut Criterion) {
    let mut group = c.benchmark_group("card render");
    for n in [10, 100, 10_000] {
        let snapshot = registry(n);
        let specs: Vec<CommandSpec> = snapshot.commands().map(|c| c.spec.clone()).collect();
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| Card::render(black_box(&specs).iter()))
        });
    }
    group.finish();
}

fn validation(c: &mut Criterion) {
    let mut group = c.benchmark_group("spec validation");
    let description = "Deploy the current branch to an environment".to_owned();
    group.bench_function("typical", |b| {
        b.iter(|| {
            CommandSpec::new(
                "spec",
                black_box("deploy"),
                black_box(&description),
                black_box("<env>"),
            )
        })
    });
    let long = "d".repeat(1024);
    let hint = "h".repeat(256);
    group.bench_function("longest allowed", |b| {
        b.iter(|| {
            CommandSpec::new(
                "spec",
                black_box(&"a".repeat(64)),
                black_box(&long),
                black_box(&hint),
            )
        })
    });
    group.bench_function("rejected name", |b| {
        b.iter(|| {
            CommandSpec::new(
                "spec",
                black_box("Deploy"),
                black_box(&description),
                black_box(""),
            )
        })
    });
    group.finish();
}

/// The whole of Execute's own work for `/status`: checking the snapshot, classifying,
/// running the built-in, and building the event as protobuf and as A2A 1.0 JSON.
fn execution(c: &mut Criterion) {
    use a2a_commands::rules::builtins::{Builtin, Catalogue};
    use a2a_commands::rules::{
        execute::{execute, reply_event, Execution},
        task::Task,
    };

    let snapshot =
        Snapshot::detached(Builtin::ALL.map(|b| (b.spec(), Body::Builtin { builtin: b })));
    let catalogue = Catalogue {
        default_model: "gpt-x".into(),
        models: vec!["gpt-x".into(), "gpt-x-mini".into()],
        default_effort: None,
    };
    let snapshot_pb = pb::TaskSnapshot {
        id: "t-load".into(),
        context_id: "c-load".into(),
        name: "Load".into(),
        state: pb::TaskState::Working.into(),
        plan: Some(pb::PlanProgress {
            steps_done: 1,
            steps_total: 3,
        }),
        ..Default::default()
    };
    let msg = message("/status".into());
    let timestamp = prost_types::Timestamp {
        seconds: 1_796_217_892,
        nanos: 807_000_000,
    };
    c.bench_function("execute /status, event as protobuf and JSON", |b| {
        b.iter(|| {
            let task = Task::from_proto(black_box(&snapshot_pb)).unwrap();
            let role = pb::ParticipantRole::Assignee;
            let Execution::Command { name, reply, .. } =
                execute(single_text(&msg), &task, role, &snapshot, &catalogue).unwrap()
            else {
                unreachable!()
            };
            let event = reply_event(&task, "", &msg.message_id, name, &reply, timestamp, false);
            let mut bytes = ProtoWriter::default();
            write_event(&mut bytes, &event);
            let bytes = bytes.into_vec();
            let json = event.to_json(JsonForm::A2a10);
            (bytes.len(), json.len())
        })
    });
}

/// What per-call metrics add to a call (`--metrics-listen` on): a counter and a
/// latency histogram per call, plus an outcome counter per Execute of a command.
fn per_call_metrics(c: &mut Criterion) {
    use a2a_commands::metrics::metrics;
    let m = metrics();
    c.bench_function("metrics: one call recorded", |b| {
        b.iter(|| m.call("Classify", "OK", std::time::Duration::from_micros(20)));
    });
    c.bench_function("metrics: one Execute outcome recorded", |b| {
        b.iter(|| m.outcome("status", "ok"));
    });
}

criterion_group!(
    benches,
    classification,
    card,
    validation,
    execution,
    per_call_metrics
);
criterion_main!(benches);
