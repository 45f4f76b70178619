//! Crash test: concurrent clients change the registry of the real binary while it is
//! killed with SIGKILL at a random moment, again and again on the same directory. After
//! each restart every acknowledged change must be there, an unacknowledged one either
//! wholly there or not at all, the order must follow the acknowledgements, and the
//! revision must never go backwards.
//!
//! Every other round the binary is also killed while it starts (at a random moment
//! between spawning and serving): the next start must still open the store.
//!
//! `A2A_COMMANDS_CRASH_ROUNDS` sets the number of kills (default 20; a soak runs more),
//! `A2A_COMMANDS_CRASH_SEED` replays a run.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use a2a_commands::pb::{self, command_service_client::CommandServiceClient};
use common::process::{serve_command, ServeProcess};
use common::spec;

const CLIENTS: usize = 4;

/// A small deterministic generator (xorshift64*), so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What one client knows of its own names.
#[derive(Clone, Default)]
struct Model {
    /// Name to description, for names that exist as far as acknowledgements tell.
    names: HashMap<String, String>,
    /// Revision at which each existing name was (acknowledged) created; absent when its
    /// creation was never acknowledged.
    created_at: HashMap<String, u64>,
    /// The change sent but not answered when the server died: name and its state after.
    pending: Option<(String, Option<String>)>,
    /// Names created so far, to make new ones.
    made: usize,
}

async fn client_loop(
    id: usize,
    url: String,
    mut model: Model,
    seed: u64,
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicUsize>,
    max_revision: Arc<Mutex<u64>>,
) -> Model {
    let mut rng = Rng(seed | 1);
    let Ok(mut client) = CommandServiceClient::connect(url).await else {
        return model;
    };
    while !stop.load(Ordering::Relaxed) {
        let existing: Vec<String> = model.names.keys().cloned().collect();
        let choice = if existing.is_empty() { 0 } else { rng.below(3) };
        let (name, after, result) = match choice {
            0 => {
                let name = format!("c{id}-{}", model.made);
                model.made += 1;
                model.pending = Some((name.clone(), Some("v0".into())));
                let request = pb::RegisterRequest {
                    spec: Some(spec(&name, "v0", "")),
                    ..Default::default()
                };
                let result = client
                    .register(request)
                    .await
                    .map(|r| r.into_inner().revision);
                (name, Some("v0".to_owned()), result)
            }
            1 => {
                let name = existing[rng.below(existing.len() as u64) as usize].clone();
                let description = format!("v{}", rng.below(1_000_000) + 1);
                model.pending = Some((name.clone(), Some(description.clone())));
                let request = pb::RegisterRequest {
                    spec: Some(spec(&name, &description, "")),
                    r#override: true,
                    ..Default::default()
                };
                let result = client
                    .register(request)
                    .await
                    .map(|r| r.into_inner().revision);
                (name, Some(description), result)
            }
            _ => {
                let name = existing[rng.below(existing.len() as u64) as usize].clone();
                model.pending = Some((name.clone(), None));
                let request = pb::UnregisterRequest { name: name.clone() };
                let result = client
                    .unregister(request)
                    .await
                    .map(|r| r.into_inner().revision);
                (name, None, result)
            }
        };
        let Ok(revision) = result else {
            // The server is gone: this change is neither known done nor known undone.
            return model;
        };
        model.pending = None;
        match after {
            Some(description) => {
                if !model.names.contains_key(&name) {
                    model.created_at.insert(name.clone(), revision);
                }
                model.names.insert(name, description);
            }
            None => {
                model.names.remove(&name);
                model.created_at.remove(&name);
            }
        }
        let mut max = max_revision.lock().unwrap();
        *max = (*max).max(revision);
        drop(max);
        acked.fetch_add(1, Ordering::Relaxed);
    }
    model
}

/// Checks the restarted registry against the models and folds what the restart showed
/// into them (resolving the pending changes). Returns the changes checked.
fn check(
    listed: &pb::ListSpecsResponse,
    models: &mut [Model],
    max_acked: u64,
    last_seen: u64,
) -> usize {
    assert!(
        listed.revision >= max_acked,
        "revision went back: {} < acked {max_acked}",
        listed.revision
    );
    assert!(
        listed.revision >= last_seen,
        "revision went back: {} < {last_seen}",
        listed.revision
    );
    let actual: HashMap<&str, &str> = listed
        .commands
        .iter()
        .map(|c| {
            let spec = c.spec.as_ref().unwrap();
            (spec.name.as_str(), spec.description.as_str())
        })
        .collect();
    let mut checked = 0;
    for (id, model) in models.iter_mut().enumerate() {
        let prefix = format!("c{id}-");
        // No name of this client exists that the model does not explain.
        for name in actual.keys().filter(|n| n.starts_with(&prefix)) {
            let explained = model.names.contains_key(*name)
                || model.pending.as_ref().is_some_and(|(p, _)| p == name);
            assert!(
                explained,
                "{name} exists but was never acknowledged or sent"
            );
        }
        let mut names: Vec<String> = model.names.keys().cloned().collect();
        if let Some((pending, _)) = &model.pending {
            names.push(pending.clone());
        }
        for name in names {
            let acked = model.names.get(&name).map(String::as_str);
            let got = actual.get(name.as_str()).copied();
            let pending = model
                .pending
                .as_ref()
                .filter(|(p, _)| *p == name)
                .map(|(_, after)| after.as_deref());
            let ok = got == acked || pending.is_some_and(|after| got == after);
            assert!(
                ok,
                "{name}: found {got:?}, acknowledged {acked:?}, pending {pending:?}"
            );
            checked += 1;
            // Fold in: what is there now is the truth for the next round.
            match got {
                Some(description) => {
                    if acked.is_none() {
                        model.created_at.remove(&name); // created, but when is unknown
                    }
                    model.names.insert(name, description.to_owned());
                }
                None => {
                    model.names.remove(&name);
                    model.created_at.remove(&name);
                }
            }
        }
        model.pending = None;
    }
    // Order follows the acknowledged creations.
    let created: HashMap<&str, u64> = models
        .iter()
        .flat_map(|m| m.created_at.iter().map(|(n, r)| (n.as_str(), *r)))
        .collect();
    let in_order: Vec<u64> = listed
        .commands
        .iter()
        .filter_map(|c| created.get(c.spec.as_ref().unwrap().name.as_str()).copied())
        .collect();
    assert!(
        in_order.windows(2).all(|w| w[0] < w[1]),
        "order differs from acknowledgement order: {in_order:?}"
    );
    checked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_changes_survive_sigkill() {
    let rounds: usize = std::env::var("A2A_COMMANDS_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("A2A_COMMANDS_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("crash test: {rounds} rounds, seed {seed}");
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut models = vec![Model::default(); CLIENTS];
    let max_revision = Arc::new(Mutex::new(0u64));
    let mut last_seen = 0;
    let (mut kills, mut changes, mut acked_total) = (0, 0, 0);

    let mut start_kills = 0;
    for round in 0..rounds {
        if round % 2 == 1 {
            // A kill during start-up: a random moment of opening, checking or
            // configuring the store (this delay is the chaos, not a wait for readiness).
            let mut child = serve_command(&data, &["--builtins", ""]).spawn().unwrap();
            std::thread::sleep(std::time::Duration::from_micros(rng.below(40_000)));
            child.kill().unwrap();
            child.wait().unwrap();
            start_kills += 1;
        }
        let mut process = ServeProcess::start(&data, &["--builtins", ""]);
        let url = process.url();
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = models
            .iter()
            .cloned()
            .enumerate()
            .map(|(id, model)| {
                tokio::spawn(client_loop(
                    id,
                    url.clone(),
                    model,
                    rng.next(),
                    Arc::clone(&stop),
                    Arc::clone(&acked),
                    Arc::clone(&max_revision),
                ))
            })
            .collect();
        // Kill after a random number of acknowledged changes (so at a random point of
        // a group commit), bounded so the test always ends.
        let target = 5 + rng.below(120) as usize;
        while acked.load(Ordering::Relaxed) < target {
            tokio::task::yield_now().await;
            if tasks.iter().all(|t| t.is_finished()) {
                panic!("round {round}: every client stopped before the kill");
            }
        }
        process.child.kill().unwrap();
        process.child.wait().unwrap();
        kills += 1;
        stop.store(true, Ordering::Relaxed);
        models = Vec::new();
        for task in tasks {
            models.push(task.await.unwrap());
        }
        acked_total += acked.load(Ordering::Relaxed);

        let process = ServeProcess::start(&data, &["--builtins", ""]);
        let mut client = CommandServiceClient::connect(process.url()).await.unwrap();
        let listed = client
            .list_specs(pb::ListSpecsRequest::default())
            .await
            .unwrap()
            .into_inner();
        let max_acked = *max_revision.lock().unwrap();
        changes += check(&listed, &mut models, max_acked, last_seen);
        last_seen = listed.revision;
        drop(client);
        drop(process);
    }
    println!("crash test: {kills} kills and {start_kills} kills during start-up survived, {acked_total} acknowledged changes, {changes} name states checked, final revision {last_seen}");
}
