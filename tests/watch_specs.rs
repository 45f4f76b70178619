//! WatchSpecs: the current state, then each change, without ever holding up a writer.

mod common;

use a2a_commands::pb;
use common::*;

#[tokio::test]
async fn watch_specs_sends_the_state_then_each_change_and_never_blocks_writers() {
    let server = TestServer::start_with(|s| s.builtins.clear()).await;
    let mut client = server.client().await;
    let mut watch = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert!(first.commands.is_empty());
    let mut last = first.revision;
    for name in ["a", "b", "c"] {
        let r = register(&mut client, spec(name, "d", ""), false)
            .await
            .unwrap();
        let update = watch.message().await.unwrap().unwrap();
        assert_eq!(update.revision, r.revision);
        assert!(update.revision > last);
        assert_eq!(
            update.commands.last().unwrap().spec.clone().unwrap().name,
            name
        );
        let card: serde_json::Value = serde_json::from_str(&update.card_params_json).unwrap();
        assert_eq!(
            card["commands"].as_array().unwrap().len(),
            update.commands.len()
        );
        last = update.revision;
    }

    // A watcher that never reads: registration goes on regardless.
    let _stalled = client
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let mut writer = server.client().await;
    let mut revision = 0;
    for i in 0..500 {
        let big = "x".repeat(1000);
        revision = register(&mut writer, spec(&format!("cmd-{i}"), &big, ""), false)
            .await
            .unwrap()
            .revision;
    }
    // The reading watcher skips to the latest state.
    let update = loop {
        let update = watch.message().await.unwrap().unwrap();
        if update.revision == revision {
            break update;
        }
    };
    assert_eq!(update.commands.len(), 503);
}
