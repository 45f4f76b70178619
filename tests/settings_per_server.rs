//! Settings are each server's own: two servers in one process, one serving metrics and
//! one not, count only the calls of the one that serves them (per-call metrics used to
//! be switched on for the whole process).

mod common;

use common::metrics::scrape;
use common::TestServer;

const CLASSIFY_OK: &str = "a2a_commands_calls_total{method=\"Classify\",code=\"OK\"}";

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
    let before = scrape(metrics).await.count(CLASSIFY_OK);
    classify(&quiet, 5).await;
    classify(&served, 2).await;
    assert_eq!(
        scrape(metrics).await.count(CLASSIFY_OK) - before,
        2.0,
        "only the serving server's calls"
    );
    served.stop().await;
    quiet.stop().await;
}
