//! Fleet mode's figures (`--fleet A,B,C --sled D`, driven by `scripts/bench-fleet.sh`):
//! how long a Register made through sidecar A takes to reach WatchSpecs on B and C, and
//! how many Registers a second one and three writers get through, beside a sled-mode
//! server measured in the same run.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use a2a_commands::pb::{self, command_service_client::CommandServiceClient};
use tokio_stream::StreamExt;
use tonic::transport::Channel;

use crate::server::connect;

type Client = CommandServiceClient<Channel>;

/// Runs the fleet measurements; `sled` is the same binary in sled mode.
pub(crate) async fn run(fleet: &[SocketAddr], sled: SocketAddr, count: usize) -> ExitCode {
    assert!(fleet.len() >= 3, "--fleet takes three sidecars");
    let mut clients = Vec::new();
    for addr in fleet {
        clients.push(CommandServiceClient::new(connect(*addr, 1).await.remove(0)));
    }
    let sled_client = CommandServiceClient::new(connect(sled, 1).await.remove(0));

    let (local, across) = propagation(&clients, count).await;
    let sled_local = propagation(&[sled_client.clone(), sled_client.clone()], count)
        .await
        .0;
    println!("| propagation ({count} registrations) | p50 | p99 | max |");
    println!("| --- | ---: | ---: | ---: |");
    row(
        "sled: Register answered, same sidecar's WatchSpecs",
        &sled_local,
    );
    row("fleet: Register answered on A", &local);
    row("fleet: WatchSpecs on B and C both show it", &across);

    let per_writer = count / 2;
    println!();
    println!(
        "| Register rate ({per_writer} per writer) | registrations/s | ÷ sled, same writers |"
    );
    println!("| --- | ---: | ---: |");
    for writers in [1, 3] {
        let sled_rate = rate(&vec![sled_client.clone(); writers], per_writer, "s").await;
        let fleet_rate = rate(&clients[..writers], per_writer, "f").await;
        println!("| sled, {writers} writer(s) | {sled_rate:.0} | 1.00 |");
        println!(
            "| fleet, {writers} writer(s) (one per sidecar) | {fleet_rate:.0} | {:.2} |",
            fleet_rate / sled_rate
        );
    }
    ExitCode::SUCCESS
}

fn row(what: &str, samples: &[Duration]) {
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e3
    };
    println!(
        "| {what} | {:.2} ms | {:.2} ms | {:.2} ms |",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

/// Registers `count` commands through the first client, one at a time; for each, the
/// time until its Register answered, and until every other client's WatchSpecs showed
/// its revision. Both sorted.
async fn propagation(clients: &[Client], count: usize) -> (Vec<Duration>, Vec<Duration>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, u64, Instant)>();
    for (i, client) in clients.iter().enumerate().skip(1) {
        let mut stream = client
            .clone()
            .watch_specs(pb::WatchSpecsRequest::default())
            .await
            .expect("WatchSpecs")
            .into_inner();
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(Ok(update)) = stream.next().await {
                if tx.send((i, update.revision, Instant::now())).is_err() {
                    break;
                }
            }
        });
    }
    let watchers = clients.len() - 1;
    let mut writer = clients[0].clone();
    let run = unique();
    let (mut answered, mut across) = (Vec::new(), Vec::new());
    for k in 0..count {
        let started = Instant::now();
        let revision = writer
            .register(request(&format!("p{run}-{k}")))
            .await
            .expect("Register")
            .into_inner()
            .revision;
        answered.push(started.elapsed());
        let mut seen = vec![false; watchers];
        let mut last = started;
        while seen.iter().any(|s| !s) {
            let (i, at, when) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("the change reached every watcher within 10 s")
                .expect("watchers stream");
            if at >= revision {
                seen[i - 1] = true;
                last = last.max(when);
            }
        }
        across.push(last - started);
    }
    cleanup(&mut writer, &format!("p{run}-"), count).await;
    answered.sort();
    across.sort();
    (answered, across)
}

/// Registrations a second: `per_writer` each through every client at once.
async fn rate(clients: &[Client], per_writer: usize, tag: &str) -> f64 {
    let run = unique();
    let started = Instant::now();
    let writers: Vec<_> = clients
        .iter()
        .cloned()
        .enumerate()
        .map(|(w, mut client)| {
            let prefix = format!("r{tag}{run}-{w}-");
            tokio::spawn(async move {
                for k in 0..per_writer {
                    client
                        .register(request(&format!("{prefix}{k}")))
                        .await
                        .expect("Register");
                }
                (client, prefix)
            })
        })
        .collect();
    let mut done = Vec::new();
    for w in writers {
        done.push(w.await.expect("writer"));
    }
    let rate = (per_writer * clients.len()) as f64 / started.elapsed().as_secs_f64();
    for (mut client, prefix) in done {
        cleanup(&mut client, &prefix, per_writer).await;
    }
    rate
}

async fn cleanup(client: &mut Client, prefix: &str, count: usize) {
    for k in 0..count {
        let _ = client
            .unregister(pb::UnregisterRequest {
                name: format!("{prefix}{k}"),
            })
            .await;
    }
}

fn request(name: &str) -> pb::RegisterRequest {
    pb::RegisterRequest {
        spec: Some(pb::CommandSpec {
            name: name.into(),
            description: "fleet benchmark".into(),
            argument_hint: String::new(),
        }),
        ..Default::default()
    }
}

/// A short tag unique to this run, so names never clash with an earlier run's.
fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!("{:x}", nanos % 0xfffff)
}
