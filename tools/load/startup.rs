//! Start-up time to SERVING and resident memory, empty and with 10,000 commands.

use a2a_commands::pb::{self, command_service_client::CommandServiceClient};
use tonic::transport::Channel;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

use crate::cli::Args;
use crate::report::ms;
use crate::server::{connect, rss_kib, start_server};
use crate::workload::prepare;

/// Start-up time to SERVING and resident memory, empty and with 10,000 commands.
pub(crate) async fn startup(args: &Args) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let log = dir.path().join("server.log");
    let empty = start_server(args, &data, &log);
    let channels = connect(empty.addr, 1).await;
    // Idle: a few calls so the runtime has warmed up, then nothing.
    let mut health = HealthClient::new(channels[0].clone());
    for _ in 0..10 {
        health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .expect("health");
    }
    let idle_empty = rss_kib(empty.child.id());
    prepare(&channels[0], 10_000, "http://127.0.0.1:1").await;
    let loaded_after_registering = rss_kib(empty.child.id());
    drop(channels);
    drop(empty);

    let server = start_server(args, &data, &log);
    // SERVING as a probe sees it: poll the health listener from the spawn.
    let health_channel = Channel::from_shared(format!("http://{}", server.health_addr))
        .expect("uri")
        .connect_lazy();
    let mut health = HealthClient::new(health_channel);
    let to_serving = loop {
        if let Ok(r) = health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
        {
            if r.into_inner().status == 1 {
                break server.started.elapsed();
            }
        }
    };
    let mut api = CommandServiceClient::new(connect(server.addr, 1).await.remove(0));
    let listed = api
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .expect("list")
        .into_inner();
    let idle_loaded = rss_kib(server.child.id());
    println!();
    println!("| start-up and memory | value |");
    println!("| --- | ---: |");
    println!("| commands after restart | {} |", listed.commands.len());
    println!(
        "| spawn to SERVING (health listener), 10,000 commands | {} ms |",
        ms(to_serving)
    );
    let mib = |k: Option<u64>| {
        k.map_or("n/a".to_owned(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        })
    };
    println!(
        "| resident memory, idle, empty registry | {} |",
        mib(idle_empty)
    );
    println!(
        "| resident memory, after registering 10,000 | {} |",
        mib(loaded_after_registering)
    );
    println!(
        "| resident memory, idle, restarted with 10,000 | {} |",
        mib(idle_loaded)
    );
}
