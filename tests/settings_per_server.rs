//! Settings are each server's own: two servers in one process, one serving metrics and
//! one not, count only the calls of the one that serves them (per-call metrics used to
//! be switched on for the whole process).

mod common;

use std::io::{Read as _, Write as _};

use common::TestServer;

/// `GET /metrics` from `addr`, as text (plain HTTP/1.1, no client crate needed), off the
/// runtime the servers run on.
async fn scrape(addr: std::net::SocketAddr) -> String {
    tokio::task::spawn_blocking(move || scrape_blocking(addr))
        .await
        .unwrap()
}

fn scrape_blocking(addr: std::net::SocketAddr) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text
}

/// The value of the Classify OK counter in a scrape, 0 when absent.
fn classify_calls(scraped: &str) -> u64 {
    scraped
        .lines()
        .find(|l| l.starts_with("a2a_commands_calls_total{method=\"Classify\",code=\"OK\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .map_or(0, |v| v.parse().unwrap())
}

async fn classify(server: &TestServer, times: usize) {
    let mut client = server.client().await;
    for _ in 0..times {
        let request = a2a_commands::pb::ClassifyRequest {
            message: Some(common::text_message("m", "/status")),
        };
        client.classify(request).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_in_one_process_keep_their_own_call_metrics() {
    let served =
        TestServer::start_with(|s| s.metrics_listen = Some("127.0.0.1:0".parse().unwrap())).await;
    let quiet = TestServer::start().await;
    let metrics = served.server.as_ref().unwrap().metrics_addr().unwrap();
    let before = classify_calls(&scrape(metrics).await);
    classify(&quiet, 5).await;
    classify(&served, 2).await;
    assert_eq!(
        classify_calls(&scrape(metrics).await) - before,
        2,
        "only the serving server's calls"
    );
    served.stop().await;
    quiet.stop().await;
}
