//! Many writers and readers at once: every ListSpecs, WatchSpecs or Classify answer is a
//! state that existed, that is, exactly the changes up to its revision, and readers saw
//! states from the middle of the writes, not only from before or after them.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_commands::pb::{self, classify_response::Result as Classified};
use common::*;

/// A registry state as a reader saw it: revision and names in order.
type State = (u64, Vec<String>);

const WRITERS: usize = 6;
const PER_WRITER: usize = 60;
/// Reads each reader makes at least; it goes on until the writers have finished.
const READS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_only_see_states_that_existed() {
    let server = TestServer::start_with(|s| s.builtins.clear()).await;
    // name -> revision at which it was registered (only registrations, so the state
    // at revision r is exactly the names registered at or before r).
    let created: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let lists: Arc<Mutex<Vec<State>>> = Arc::default();
    let classified: Arc<Mutex<Vec<(u64, String, bool)>>> = Arc::default();
    // Readers read for as long as writers write (and at least a set number of times).
    let writing = Arc::new(AtomicBool::new(true));
    // Set once a ListSpecs answer listed two commands or more. Each registration has its
    // own revision, so that answer's revision is past the first registration's; the
    // last registration waits for it, so the answer is also before the last one. This
    // makes the overlap certain instead of likely.
    let middle_seen = Arc::new(tokio::sync::watch::Sender::new(false));

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

    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let mut client = server.client().await;
        let created = Arc::clone(&created);
        let mut middle = middle_seen.subscribe();
        writers.push(tokio::spawn(async move {
            for i in 0..PER_WRITER {
                if w == 0 && i == PER_WRITER - 1 {
                    // Only a hang guard: readers see such a state almost at once.
                    tokio::time::timeout(Duration::from_secs(60), middle.wait_for(|seen| *seen))
                        .await
                        .expect("no reader saw a state in the middle of the writes")
                        .unwrap();
                }
                let name = format!("w{w}-{i}");
                let r = register(&mut client, spec(&name, "d", ""), false)
                    .await
                    .unwrap();
                created.lock().unwrap().insert(name, r.revision);
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..3 {
        let mut client = server.client().await;
        let lists = Arc::clone(&lists);
        let classified = Arc::clone(&classified);
        let writing = Arc::clone(&writing);
        let middle_seen = Arc::clone(&middle_seen);
        readers.push(tokio::spawn(async move {
            let mut i = 0;
            while i < READS || writing.load(Ordering::Acquire) {
                let listed = list(&mut client).await;
                let names: Vec<String> = listed
                    .commands
                    .into_iter()
                    .map(|c| c.spec.unwrap().name)
                    .collect();
                if names.len() >= 2 {
                    middle_seen.send_replace(true);
                }
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
                i += 1;
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    writing.store(false, Ordering::Release);
    for reader in readers {
        reader.await.unwrap();
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
    // The reads overlapped the writes: some answer is of a state after the first
    // registration and before the last.
    let first = *created.values().min().unwrap();
    let last = *created.values().max().unwrap();
    assert!(
        lists.iter().any(|(r, _)| first < *r && *r < last),
        "no ListSpecs answer between revisions {first} and {last}"
    );
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
