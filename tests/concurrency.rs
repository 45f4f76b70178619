//! Many writers and readers at once: every ListSpecs, WatchSpecs or Classify answer is a
//! state that existed, that is, exactly the changes up to its revision.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use a2a_commands::pb::{self, classify_response::Result as Classified};
use common::*;

/// A registry state as a reader saw it: revision and names in order.
type State = (u64, Vec<String>);

const WRITERS: usize = 6;
const PER_WRITER: usize = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_only_see_states_that_existed() {
    let server = TestServer::start_with(|s| s.builtins.clear()).await;
    // name -> revision at which it was registered (only registrations, so the state
    // at revision r is exactly the names registered at or before r).
    let created: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let lists: Arc<Mutex<Vec<State>>> = Arc::default();
    let classified: Arc<Mutex<Vec<(u64, String, bool)>>> = Arc::default();

    let mut watch = server
        .client()
        .await
        .watch_specs(pb::WatchSpecsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let watched = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(update) = watch.message().await.unwrap() {
            let names: Vec<String> = update
                .commands
                .iter()
                .map(|c| c.spec.clone().unwrap().name)
                .collect();
            let done = names.len() == WRITERS * PER_WRITER;
            seen.push((update.revision, names));
            if done {
                break;
            }
        }
        seen
    });

    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let mut client = server.client().await;
        let created = Arc::clone(&created);
        tasks.push(tokio::spawn(async move {
            for i in 0..PER_WRITER {
                let name = format!("w{w}-{i}");
                let r = register(&mut client, spec(&name, "d", ""), false)
                    .await
                    .unwrap();
                created.lock().unwrap().insert(name, r.revision);
            }
        }));
    }
    for r in 0..3 {
        let mut client = server.client().await;
        let lists = Arc::clone(&lists);
        let classified = Arc::clone(&classified);
        tasks.push(tokio::spawn(async move {
            for i in 0..300 {
                let listed = list(&mut client).await;
                let names = listed
                    .commands
                    .into_iter()
                    .map(|c| c.spec.unwrap().name)
                    .collect();
                lists.lock().unwrap().push((listed.revision, names));
                let name = format!("w{}-{}", (i + r) % WRITERS, (i * 7) % PER_WRITER);
                let response = client
                    .classify(pb::ClassifyRequest {
                        message: Some(text_message("m", &format!("/{name} x"))),
                    })
                    .await
                    .unwrap()
                    .into_inner();
                let is_command = matches!(response.result, Some(Classified::Command(_)));
                classified
                    .lock()
                    .unwrap()
                    .push((response.revision, name, is_command));
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let seen_by_watch = watched.await.unwrap();

    let created = created.lock().unwrap().clone();
    assert_eq!(created.len(), WRITERS * PER_WRITER);
    let state_at = |revision: u64| {
        let mut names: Vec<(u64, &String)> = created
            .iter()
            .filter(|(_, r)| **r <= revision)
            .map(|(n, r)| (*r, n))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|(_, n)| n.clone())
            .collect::<Vec<_>>()
    };
    let lists = lists.lock().unwrap();
    for (revision, names) in lists.iter().chain(seen_by_watch.iter()) {
        // The registry starts at some revision with no commands; states are the
        // registrations up to the revision, in the order they were made.
        assert_eq!(names, &state_at(*revision), "revision {revision}");
    }
    let classified = classified.lock().unwrap();
    for (revision, name, is_command) in classified.iter() {
        assert_eq!(
            *is_command,
            created[name] <= *revision,
            "{name} at revision {revision}"
        );
    }
    let revisions: Vec<u64> = seen_by_watch.iter().map(|(r, _)| *r).collect();
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "watch revisions increase"
    );
    println!(
        "concurrency: {} lists, {} watch updates, {} classifications checked against {} registrations",
        lists.len(),
        seen_by_watch.len(),
        classified.len(),
        created.len()
    );
}
