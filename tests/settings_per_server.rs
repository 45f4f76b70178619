//! Settings are each server's own: two servers in one process, one serving metrics and
//! one not, count only the calls of the one that serves them (per-call metrics used to
//! be switched on for the whole process); two with different element limits each
//! apply their own (the limit used to be one process-wide static).

mod common;

use common::metrics::scrape;
use common::TestServer;
use tonic::Code;

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

/// A Classify request of `parts` text parts.
fn with_parts(parts: usize) -> a2a_commands::pb::ClassifyRequest {
    let mut message = common::text_message("m", "x");
    message.parts = (0..parts).map(|_| common::text_part("x")).collect();
    a2a_commands::pb::ClassifyRequest {
        message: Some(message),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_in_one_process_keep_their_own_element_limits() {
    // Started in this order so that a process-wide limit would be the strict one's.
    let loose = TestServer::start_with(|s| s.limits.max_request_elements = 1_000).await;
    let strict = TestServer::start_with(|s| s.limits.max_request_elements = 50).await;
    let (mut loose_client, mut strict_client) = (loose.client().await, strict.client().await);

    let refused = strict_client.classify(with_parts(200)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("more than 50"),
        "{}",
        refused.message()
    );

    loose_client
        .classify(with_parts(200))
        .await
        .expect("200 parts are within the loose server's limit");
    let refused = loose_client.classify(with_parts(2_000)).await.unwrap_err();
    assert!(
        refused.message().contains("more than 1000"),
        "{}",
        refused.message()
    );

    loose.stop().await;
    strict.stop().await;
}
