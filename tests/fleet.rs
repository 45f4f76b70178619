//! Fleet mode against a real three-member etcd cluster on loopback, with three real
//! sidecars (the binary) in front of it: concurrent writers, the leader killed mid-write,
//! a paused sidecar catching up across a compaction, every member down. After each
//! scenario, on every sidecar: each acknowledged Register is present, each acknowledged
//! Unregister absent, all show the same revision and the same ordered list, and the
//! revisions WatchSpecs streamed only went up.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_commands::pb;
use common::etcd::{self, EtcdCluster};
use common::process::ServeProcess;
use common::{spec, Client};
use tokio_stream::StreamExt;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

/// The scenarios run one at a time: each starts a cluster on ports it picks free, and
/// two picking at once could collide; it also keeps two cores from being shared by
/// several clusters' elections.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A sidecar in fleet mode on `cluster`, its registry copy in `dir`.
fn sidecar(cluster: &EtcdCluster, dir: &Path, name: &str, extra: &[&str]) -> ServeProcess {
    sidecar_timed(cluster, dir, name, extra, "2000")
}

/// The same with `--fleet-timeout-ms` `timeout_ms`.
fn sidecar_timed(
    cluster: &EtcdCluster,
    dir: &Path,
    name: &str,
    extra: &[&str],
    timeout_ms: &str,
) -> ServeProcess {
    let endpoints = cluster.endpoints();
    let mut args = vec![
        "--fleet-etcd-endpoints",
        &endpoints,
        "--fleet-member-name",
        name,
        "--fleet-timeout-ms",
        timeout_ms,
    ];
    args.extend_from_slice(extra);
    ServeProcess::start(dir, &args)
}

async fn client(process: &ServeProcess) -> Client {
    Client::connect(process.url()).await.expect("connects")
}

/// The same as [`client`], where a local binding named `client` shadows it.
async fn client_of(process: &ServeProcess) -> Client {
    client(process).await
}

/// Waits until the sidecar answers ListSpecs (fleet mode: it has a registry to serve).
async fn ready(process: &ServeProcess) -> Client {
    let mut client = client(process).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match client.list_specs(pb::ListSpecsRequest::default()).await {
            Ok(_) => return client,
            Err(status) => {
                assert_eq!(status.code(), Code::Unavailable, "{status:?}");
                assert!(Instant::now() < deadline, "not ready in 30 s: {status:?}");
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (at most 30 s) for a log line of `process` that contains `text`; returns it.
/// The lines read meanwhile are gone for later waits.
fn wait_for_line(process: &ServeProcess, text: &str) -> String {
    let mut seen = process.before.clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(line) = seen.iter().find(|l| l.contains(text)) {
            return line.clone();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match process.lines.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no line with {text:?}: {seen:#?}"),
        }
    }
}

/// Every line `process` logged that has not been read yet: the process is killed and its
/// log read to its end (so none still on its way is missed).
fn every_line(process: &mut ServeProcess) -> Vec<String> {
    let _ = process.child.kill();
    let _ = process.child.wait();
    process.rest_of_lines()
}

/// The overall status on the sidecar's health listener (what the kubelet asks).
async fn health_of(process: &ServeProcess) -> ServingStatus {
    let addr = process.health_addr.expect("a health listener");
    let mut health = HealthClient::new(common::connect(addr).await);
    let answer = health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("health answers")
        .into_inner();
    ServingStatus::try_from(answer.status).unwrap()
}

/// The registry as one sidecar serves it: revision and names in order.
async fn listed(client: &mut Client) -> (u64, Vec<String>) {
    let answer = client
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .expect("ListSpecs answers")
        .into_inner();
    let names = answer
        .commands
        .into_iter()
        .map(|c| c.spec.unwrap().name)
        .collect();
    (answer.revision, names)
}

/// Waits until every sidecar serves the same revision and list; returns it.
async fn converged(clients: &mut [Client]) -> (u64, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut seen = Vec::new();
        for client in clients.iter_mut() {
            seen.push(listed(client).await);
        }
        if seen.windows(2).all(|w| w[0] == w[1]) {
            return seen.remove(0);
        }
        assert!(
            Instant::now() < deadline,
            "the sidecars did not converge in 30 s: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every revision a sidecar's WatchSpecs streams, collected in the background.
fn watch_revisions(mut client: Client) -> Arc<Mutex<Vec<u64>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&seen);
    tokio::spawn(async move {
        let Ok(answer) = client.watch_specs(pb::WatchSpecsRequest::default()).await else {
            return;
        };
        let mut stream = answer.into_inner();
        while let Some(Ok(update)) = stream.next().await {
            into.lock().unwrap().push(update.revision);
        }
    });
    seen
}

/// Waits (at most 30 s) until WatchSpecs has streamed `last`, then checks that every
/// revision it streamed went up.
async fn assert_increasing(revisions: &Mutex<Vec<u64>>, last: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while revisions.lock().unwrap().last() != Some(&last) {
        assert!(
            Instant::now() < deadline,
            "WatchSpecs never streamed revision {last}: {:?}",
            revisions.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let revisions = revisions.lock().unwrap();
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "WatchSpecs revisions went back or repeated: {revisions:?}"
    );
}

/// One line for the record: what the writers were told, and where the sidecars met (every
/// acknowledged change was checked present and every unregistered one absent: none lost).
fn report(scenario: &str, acked: &[Acknowledged], revision: u64, sidecars: usize) {
    let present: usize = acked.iter().map(|a| a.present.len()).sum();
    let absent: usize = acked.iter().map(|a| a.absent.len()).sum();
    eprintln!(
        "fleet: {scenario}: {present} acknowledged registrations present and {absent} names absent as answered (unregistered, or not made), 0 lost; {sidecars} sidecars converged at revision {revision}"
    );
}

/// What the writers were told.
#[derive(Default)]
struct Acknowledged {
    present: BTreeSet<String>,
    absent: BTreeSet<String>,
}

impl Acknowledged {
    fn check(&self, names: &[String]) {
        for name in &self.present {
            assert!(
                names.contains(name),
                "acknowledged /{name} is missing: {names:?}"
            );
        }
        for name in &self.absent {
            assert!(
                !names.contains(name),
                "unregistered /{name} is back: {names:?}"
            );
        }
    }
}

async fn register(client: &mut Client, name: &str) -> Result<u64, tonic::Status> {
    common::register(client, spec(name, "fleet test", ""), false)
        .await
        .map(|r| r.revision)
}

/// Registers `name` once the sidecar takes writes again (it answers UNAVAILABLE until it
/// has read the fleet); gives up at `deadline`.
async fn register_once_writable(client: &mut Client, name: &str, deadline: Instant) -> u64 {
    loop {
        match register(client, name).await {
            Ok(revision) => return revision,
            Err(status) => {
                assert_eq!(status.code(), Code::Unavailable, "{status:?}");
                assert!(Instant::now() < deadline, "no write: {status:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn unregister(client: &mut Client, name: &str) -> Result<u64, tonic::Status> {
    client
        .unregister(pb::UnregisterRequest { name: name.into() })
        .await
        .map(|r| r.into_inner().revision)
}

/// Writer `w` through `client`: registers `w{w}-{k}` for each k, unregistering every
/// third one it registered. Failures are allowed only when `faults`, and must then be
/// UNAVAILABLE naming the fleet store; what was acknowledged is recorded.
async fn writer(mut client: Client, w: usize, count: usize, faults: bool) -> Acknowledged {
    let mut acked = Acknowledged::default();
    for k in 0..count {
        let name = format!("w{w}-{k}");
        match register(&mut client, &name).await {
            Ok(_) => {
                acked.present.insert(name.clone());
            }
            Err(status) => {
                assert!(faults, "register {name}: {status:?}");
                assert_eq!(status.code(), Code::Unavailable, "{status:?}");
                assert!(status.message().contains("fleet store"), "{status:?}");
                // Answered "not made": it must never show up later.
                if status.message().contains("was not made") {
                    acked.absent.insert(name.clone());
                }
                continue;
            }
        }
        if k % 3 == 2 {
            match unregister(&mut client, &name).await {
                Ok(_) => {
                    acked.present.remove(&name);
                    acked.absent.insert(name);
                }
                Err(status) => {
                    assert!(faults, "unregister {name}: {status:?}");
                    acked.present.remove(&name);
                }
            }
        }
    }
    acked
}

struct Fleet {
    cluster: EtcdCluster,
    sidecars: Vec<ServeProcess>,
    dirs: tempfile::TempDir,
}

impl Fleet {
    async fn start() -> Option<Self> {
        Self::start_timed("2000").await
    }

    /// Three sidecars with `--fleet-timeout-ms` `timeout_ms`.
    async fn start_timed(timeout_ms: &str) -> Option<Self> {
        if !etcd::available() {
            return None;
        }
        let cluster = EtcdCluster::start(3).await;
        let dirs = tempfile::tempdir().unwrap();
        let sidecars = (0..3)
            .map(|i| {
                sidecar_timed(
                    &cluster,
                    &dirs.path().join(format!("s{i}")),
                    &format!("s{i}"),
                    &[],
                    timeout_ms,
                )
            })
            .collect();
        Some(Self {
            cluster,
            sidecars,
            dirs,
        })
    }

    async fn clients(&self) -> Vec<Client> {
        let mut clients = Vec::new();
        for s in &self.sidecars {
            clients.push(ready(s).await);
        }
        clients
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_through_three_sidecars_lose_nothing() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let mut clients = fleet.clients().await;
    // The built-ins are written once, by whichever sidecar gets there first.
    let (_, names) = converged(&mut clients).await;
    assert_eq!(names, ["model", "effort", "sub-task", "status"]);
    let watched: Vec<_> = clients.iter().cloned().map(watch_revisions).collect();

    let writers: Vec<_> = clients
        .iter()
        .cloned()
        .enumerate()
        .map(|(w, c)| tokio::spawn(writer(c, w, 30, false)))
        .collect();
    let mut acked = Vec::new();
    for w in writers {
        acked.push(w.await.unwrap());
    }
    let (revision, names) = converged(&mut clients).await;
    for a in &acked {
        a.check(&names);
    }
    // 90 registers and 30 unregisters, each its own revision, after the built-ins'.
    assert_eq!(revision, 1 + 90 + 30, "{names:?}");
    // Registration order is commit order across the fleet: one writer's commands keep
    // the order it registered them in.
    for w in 0..3 {
        let mine: Vec<&String> = names
            .iter()
            .filter(|n| n.starts_with(&format!("w{w}-")))
            .collect();
        let mut sorted = mine.clone();
        sorted.sort_by_key(|n| n.split('-').nth(1).unwrap().parse::<u32>().unwrap());
        assert_eq!(mine, sorted);
    }
    for w in &watched {
        assert_increasing(w, revision).await;
    }
    report(
        "concurrent writers on three sidecars",
        &acked,
        revision,
        clients.len(),
    );

    // `ctl fleet` lists the three sidecars at the same revision (each writes its member
    // key at most once a second).
    let deadline = Instant::now() + Duration::from_secs(30);
    let members = loop {
        let out = common::process::binary()
            .args([
                "ctl",
                "fleet",
                "--fleet-etcd-endpoints",
                &fleet.cluster.endpoints(),
                "--json",
            ])
            .output()
            .unwrap();
        let members: Vec<serde_json::Value> =
            serde_json::from_slice(&out.stdout).unwrap_or_default();
        let agree = members.iter().all(|m| m["revision"] == revision);
        if out.status.success() && members.len() == 3 && agree {
            break members;
        }
        assert!(Instant::now() < deadline, "ctl fleet: {out:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let listed: BTreeSet<&str> = members
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, BTreeSet::from(["s0", "s1", "s2"]));
    assert!(
        members.iter().all(|m| m["revision"] == revision),
        "{members:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_etcd_leader_mid_writes_loses_no_acknowledged_change() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let mut clients = fleet.clients().await;
    converged(&mut clients).await;
    let watched: Vec<_> = clients.iter().cloned().map(watch_revisions).collect();
    let writers: Vec<_> = clients
        .iter()
        .cloned()
        .enumerate()
        .map(|(w, c)| tokio::spawn(writer(c, w, 40, true)))
        .collect();
    // Once some changes are through, the leader dies.
    let deadline = Instant::now() + Duration::from_secs(30);
    while listed(&mut clients[0]).await.0 < 15 {
        assert!(Instant::now() < deadline, "no writes went through");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let leader = fleet.cluster.leader();
    fleet.cluster.kill(leader);
    let at_kill = listed(&mut clients[0]).await.0;
    let mut acked = Vec::new();
    for w in writers {
        acked.push(w.await.unwrap());
    }
    let (_, names) = converged(&mut clients).await;
    for a in &acked {
        a.check(&names);
    }
    // Writes go on with two members of three.
    let revision = register(&mut clients[1], "after-the-leader").await.unwrap();
    assert!(
        revision > at_kill,
        "{revision} after {at_kill}: no write after the kill"
    );
    let (now, names) = converged(&mut clients).await;
    assert_eq!(now, revision);
    assert!(names.contains(&"after-the-leader".to_owned()));
    for w in &watched {
        assert_increasing(w, now).await;
    }
    report(
        "the etcd leader killed mid-writes",
        &acked,
        now,
        clients.len(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_paused_sidecar_catches_up_across_a_compaction() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let mut clients = fleet.clients().await;
    converged(&mut clients).await;
    let watched = watch_revisions(clients[2].clone());
    fleet.sidecars[2].signal("STOP");
    // Every member restarted on its data, so that the paused sidecar's watch ends with
    // nothing of the writes below sent to it, whichever member it watched: it would read,
    // once continued, events etcd had already sent it, and never meet the compaction.
    fleet.cluster.kill(0);
    fleet.cluster.kill(1);
    fleet.cluster.kill(2);
    fleet.cluster.restart(&[0, 1, 2]).await;
    // The member every sidecar watches first goes too: once continued, the paused
    // sidecar must watch again elsewhere, from a revision compacted away.
    fleet.cluster.kill(0);
    // Both writers take changes again (a leader elected, their endpoints moved on)
    // before the writes that must not fail.
    let deadline = Instant::now() + Duration::from_secs(30);
    register_once_writable(&mut clients[0], "ready-0", deadline).await;
    register_once_writable(&mut clients[1], "ready-1", deadline).await;
    let acked = {
        let a = tokio::spawn(writer(clients[0].clone(), 0, 15, false));
        let b = tokio::spawn(writer(clients[1].clone(), 1, 15, false));
        [a.await.unwrap(), b.await.unwrap()]
    };
    fleet.cluster.compact().await;
    fleet.sidecars[2].signal("CONT");
    let (revision, names) = converged(&mut clients).await;
    for a in &acked {
        a.check(&names);
    }
    assert_eq!(revision, 1 + 2 + 30 + 10);
    assert_increasing(&watched, revision).await;
    report(
        "a paused sidecar across a compaction",
        &acked,
        revision,
        clients.len(),
    );
    // The paused sidecar met the compaction (logged before it read the registry whole,
    // so before it converged; waited for, since lines reach the test through a thread).
    wait_for_line(&fleet.sidecars[2], "compacted past this sidecar's revision");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_every_member_down_reads_go_on_and_writes_are_refused() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let mut clients = fleet.clients().await;
    converged(&mut clients).await;
    register(&mut clients[0], "before").await.unwrap();
    let before = converged(&mut clients).await;
    for i in 0..3 {
        fleet.cluster.kill(i);
    }

    // Reads answer from the registry applied.
    for client in &mut clients {
        assert_eq!(listed(client).await, before);
        let got = common::classify(client, common::text_message("m", "/before now")).await;
        assert!(
            matches!(got, pb::classify_response::Result::Command(_)),
            "{got:?}"
        );
    }
    // Writes are refused, naming the fleet store; nothing is written locally.
    let refused = register(&mut clients[1], "during").await.unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert!(
        refused.message().contains("fleet store (etcd)"),
        "{refused:?}"
    );
    // A change that would change nothing is not answered from a registry etcd cannot
    // confirm either.
    let unconfirmed = register(&mut clients[0], "before").await.unwrap_err();
    assert_eq!(unconfirmed.code(), Code::Unavailable, "{unconfirmed:?}");
    let missing = unregister(&mut clients[0], "never-there")
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::Unavailable, "{missing:?}");
    assert_eq!(listed(&mut clients[1]).await, before);

    // A sidecar restarted meanwhile serves the copy it applied.
    let dir = fleet.dirs.path().join("s2");
    drop(fleet.sidecars.pop());
    fleet
        .sidecars
        .push(sidecar(&fleet.cluster, &dir, "s2", &[]));
    clients[2] = ready(&fleet.sidecars[2]).await;
    assert_eq!(listed(&mut clients[2]).await, before);

    // One that never read the fleet has nothing to serve: not ready.
    let fresh = sidecar(
        &fleet.cluster,
        &fleet.dirs.path().join("fresh"),
        "fresh",
        &[],
    );
    let mut fresh_client = client(&fresh).await;
    let status = fresh_client
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(health_of(&fresh).await, ServingStatus::NotServing);

    // The members come back: everyone converges, and writes go on.
    fleet.cluster.restart(&[0, 1, 2]).await;
    clients.push(ready(&fresh).await);
    let deadline = Instant::now() + Duration::from_secs(30);
    while health_of(&fresh).await != ServingStatus::Serving {
        assert!(
            Instant::now() < deadline,
            "the fresh sidecar never turned SERVING"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // s2 served its copy; it takes writes once it has read the fleet again.
    let revision = register_once_writable(&mut clients[2], "after", deadline).await;
    let (now, names) = converged(&mut clients).await;
    assert_eq!(now, revision);
    assert_eq!(
        names,
        ["model", "effort", "sub-task", "status", "before", "after"]
    );
    let acked = Acknowledged {
        present: BTreeSet::from(["before".to_owned(), "after".to_owned()]),
        absent: BTreeSet::from(["during".to_owned()]),
    };
    acked.check(&names);
    report("every etcd member down", &[acked], now, clients.len());
}

/// Every member killed under concurrent writers: a change sent once the sidecar knows
/// etcd is unreachable is answered UNAVAILABLE within one fleet timeout (nothing
/// written), while the change whose answer the kill lost is still being read back
/// (for up to three timeouts); no acknowledged change is lost, and once etcd is back
/// everyone converges with the changes made in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_every_member_killed_under_writers_changes_fail_fast() {
    let _one = ONE_AT_A_TIME.lock().await;
    // A long timeout, so that "within one" holds with a wide margin on a loaded machine
    // and still tells one timeout from the three a lost answer's read-back may take.
    let Some(mut fleet) = Fleet::start_timed("10000").await else {
        return;
    };
    let timeout = Duration::from_millis(10_000); // the sidecars' --fleet-timeout-ms
    let mut clients = fleet.clients().await;
    converged(&mut clients).await;
    let watched: Vec<_> = clients.iter().cloned().map(watch_revisions).collect();
    // Two writers per sidecar, so that changes are in flight when etcd goes.
    let writers: Vec<_> = (0..6)
        .map(|w| tokio::spawn(writer(clients[w % 3].clone(), w, 60, true)))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while listed(&mut clients[0]).await.0 < 15 {
        assert!(Instant::now() < deadline, "no writes went through");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for i in 0..3 {
        fleet.cluster.kill(i);
    }
    // Each sidecar finds etcd gone at its next call; from then on a change waits for
    // nothing. The first probe may be the call that finds out (refused connections: at
    // once); each is bounded by one fleet timeout, well under the three timeouts a
    // lost answer's read-back may take.
    for (i, client) in clients.iter_mut().enumerate() {
        for round in 0..3 {
            let started = Instant::now();
            let name = format!("probe-{i}-{round}");
            let refused = register(client, &name).await.unwrap_err();
            let took = started.elapsed();
            assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
            assert!(refused.message().contains("fleet store"), "{refused:?}");
            assert!(took < timeout, "register {name} waited {took:?}");
            let started = Instant::now();
            let refused = unregister(client, "before-anything").await.unwrap_err();
            let took = started.elapsed();
            assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
            assert!(took < timeout, "unregister waited {took:?}");
        }
    }
    fleet.cluster.restart(&[0, 1, 2]).await;
    let mut acked = Vec::new();
    for w in writers {
        acked.push(w.await.unwrap());
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let revision = register_once_writable(&mut clients[0], "after-the-outage", deadline).await;
    let (now, names) = converged(&mut clients).await;
    assert!(now >= revision);
    for a in &acked {
        a.check(&names);
    }
    assert!(
        !names.iter().any(|n| n.starts_with("probe-")),
        "a refused change was made: {names:?}"
    );
    for w in &watched {
        assert_increasing(w, now).await;
    }
    report(
        "every etcd member killed under writers",
        &acked,
        now,
        clients.len(),
    );
}

/// A sidecar's local copy that fails its check (its acknowledged-state record zeroed):
/// with etcd up, the copy is moved aside whole (the log names where) and the sidecar
/// serves the fleet's registry once read; with etcd down too, the start is refused with
/// one line and the directory is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_damaged_local_copy_is_set_aside_and_the_fleet_read_again() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let mut clients = fleet.clients().await;
    register(&mut clients[0], "before").await.unwrap();
    let (revision, names) = converged(&mut clients).await;
    let dir = fleet.dirs.path().join("s2");
    let damage = |dir: &Path| {
        let record = dir.join("acknowledged");
        let len = std::fs::metadata(&record).unwrap().len() as usize;
        std::fs::write(&record, vec![0u8; len]).unwrap();
    };
    drop(fleet.sidecars.pop());
    clients.pop();
    damage(&dir);
    let damaged = common::files(&dir);

    let restarted = sidecar(&fleet.cluster, &dir, "s2", &[]);
    wait_for_line(&restarted, "moved aside");
    let mut client = ready(&restarted).await;
    assert_eq!(listed(&mut client).await, (revision, names.clone()));
    // The damaged copy is whole in one folder `damaged-*` of the directory.
    let aside: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("damaged-")
        })
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        common::files(&aside[0]),
        damaged,
        "moved aside, byte for byte"
    );
    // It takes writes, and the others see them.
    register(&mut client, "after").await.unwrap();
    clients.push(client);
    converged(&mut clients).await;

    // The same damage with every etcd member down: refused, nothing moved.
    drop(restarted);
    for i in 0..3 {
        fleet.cluster.kill(i);
    }
    damage(&dir);
    let before = common::files(&dir);
    let endpoints = fleet.cluster.endpoints();
    let output = common::process::serve_command(
        &dir,
        &[
            "--fleet-etcd-endpoints",
            &endpoints,
            "--fleet-timeout-ms",
            "500",
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("a2a-commands: cannot open data directory"),
        "{stderr}"
    );
    assert!(last.contains("the copy was kept as it is"), "{last}");
    assert_eq!(common::files(&dir), before, "left as it was");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_too_large_for_one_transaction_is_refused_whole() {
    let _one = ONE_AT_A_TIME.lock().await;
    if !etcd::available() {
        return;
    }
    let cluster = EtcdCluster::start(1).await;
    let dir = tempfile::tempdir().unwrap();
    let process = sidecar(
        &cluster,
        dir.path(),
        "s",
        &["--fleet-max-request-bytes", "8192"],
    );
    let mut client = ready(&process).await;
    // The built-ins are written once etcd answers.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (revision, names) = loop {
        let (revision, names) = listed(&mut client).await;
        if names.len() == 4 {
            break (revision, names);
        }
        assert!(Instant::now() < deadline, "no built-ins in 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let big = pb::RegisterRequest {
        spec: Some(spec("big", "a long prompt", "")),
        prompt: Some(pb::PromptBinding {
            source: Some(pb::prompt_binding::Source::Template("x".repeat(12_000))),
        }),
        ..Default::default()
    };
    let refused = client.register(big).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("--max-request-bytes"),
        "{refused:?}"
    );
    assert_eq!(listed(&mut client).await, (revision, names));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_pod_applies_the_same_commands_file_once() {
    let _one = ONE_AT_A_TIME.lock().await;
    if !etcd::available() {
        return;
    }
    let cluster = EtcdCluster::start(1).await;
    let dirs = tempfile::tempdir().unwrap();
    let file = dirs.path().join("commands.json");
    std::fs::write(
        &file,
        r#"{"commands": [{"name": "deploy", "description": "Deploy"}, {"name": "review", "description": "Review"}]}"#,
    )
    .unwrap();
    let file = file.to_str().unwrap().to_owned();
    let sidecars: Vec<_> = (0..3)
        .map(|i| {
            let dir = dirs.path().join(format!("s{i}"));
            sidecar(
                &cluster,
                &dir,
                &format!("s{i}"),
                &["--commands-file", &file],
            )
        })
        .collect();
    let mut clients = Vec::new();
    for s in &sidecars {
        clients.push(ready(s).await);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let (revision, names) = loop {
        let got = converged(&mut clients).await;
        if got.1.len() == 6 {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "the file was not applied: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        names,
        ["model", "effort", "sub-task", "status", "deploy", "review"]
    );
    // One change for the built-ins and the file together, made by one pod: the others
    // found it done.
    assert_eq!(revision, 1);
    // The API may not change the file's commands, on any pod.
    let refused = unregister(&mut clients[2], "deploy").await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sled_sidecar_joining_an_empty_fleet_serves_the_fleet_and_never_goes_back() {
    let _one = ONE_AT_A_TIME.lock().await;
    if !etcd::available() {
        return;
    }
    let dirs = tempfile::tempdir().unwrap();
    let dir = dirs.path().join("s");
    let sled_revision = {
        let process = ServeProcess::start(&dir, &[]);
        let mut client = client(&process).await;
        for name in ["alpha", "beta", "gamma"] {
            register(&mut client, name).await.unwrap();
        }
        listed(&mut client).await.0
    };
    assert_eq!(sled_revision, 4);
    let cluster = EtcdCluster::start(1).await;
    let process = sidecar(&cluster, &dir, "s", &[]);
    let mut client = ready(&process).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let (revision, names) = loop {
        let got = listed(&mut client).await;
        if got.1.len() == 4 {
            break got;
        }
        assert!(Instant::now() < deadline, "no built-ins: {got:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The fleet's registry (empty, then the built-ins) is served; the local commands
    // are not merged, and the revision moved on from the one this sidecar had served.
    assert_eq!(names, ["model", "effort", "sub-task", "status"]);
    assert!(revision > sled_revision, "{revision} after {sled_revision}");
    // Logged when it joined, before the fleet's registry was served.
    let line = wait_for_line(&process, "differs from the fleet");
    assert!(line.contains("alpha,beta,gamma"), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_etcd_with_users_is_reached_with_the_password_from_its_file() {
    let _one = ONE_AT_A_TIME.lock().await;
    if !etcd::available() {
        return;
    }
    let cluster = EtcdCluster::start(1).await;
    let etcdctl = |args: &[&str]| {
        let out = std::process::Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(cluster.endpoints())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "etcdctl {args:?}: {out:?}");
    };
    etcdctl(&["user", "add", "root:root-secret"]);
    etcdctl(&["user", "add", "sidecar:s3cret"]);
    etcdctl(&["role", "add", "a2a"]);
    etcdctl(&[
        "role",
        "grant-permission",
        "a2a",
        "readwrite",
        "/team/",
        "--prefix=true",
    ]);
    etcdctl(&["user", "grant-role", "sidecar", "a2a"]);
    etcdctl(&["auth", "enable"]);

    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("password");
    std::fs::write(&password, "s3cret\n").unwrap();
    let password = password.to_str().unwrap().to_owned();
    let auth = [
        "--fleet-prefix",
        "/team/",
        "--fleet-etcd-user",
        "sidecar",
        "--fleet-etcd-password-file",
        &password,
    ];
    let process = sidecar(&cluster, &dir.path().join("s"), "s", &auth);
    let mut allowed = ready(&process).await;
    let revision = register(&mut allowed, "deploy").await.unwrap();
    assert_eq!(listed(&mut allowed).await.0, revision);
    // Changing etcd's users makes every token issued before refused: the sidecar gets a
    // new one and goes on.
    etcdctl(&["--user", "root:root-secret", "user", "add", "another:pw"]);
    let after = register(&mut allowed, "review").await.unwrap();
    assert!(after > revision);

    // The password never reaches the printed configuration; its file does.
    let out = common::process::binary()
        .args([
            "serve",
            "--print-config",
            "--fleet-etcd-endpoints",
            &cluster.endpoints(),
        ])
        .args(auth)
        .output()
        .unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{printed}");
    assert!(!printed.contains("s3cret"), "{printed}");
    let config: serde_json::Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(config["fleet"]["etcd_user"], "sidecar");
    assert_eq!(config["fleet"]["etcd_password_file"], password.as_str());
    assert_eq!(config["fleet"]["prefix"], "/team/");

    // A user without rights on the prefix is never served a registry: the sidecar says
    // it cannot read the fleet.
    let other = sidecar(
        &cluster,
        &dir.path().join("other"),
        "other",
        &[
            "--fleet-etcd-user",
            "sidecar",
            "--fleet-etcd-password-file",
            &password,
        ],
    );
    wait_for_line(&other, "cannot read the fleet's registry");
    let mut other = client(&other).await;
    let status = other
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
}

#[test]
fn a_mistyped_endpoint_is_named_in_one_line() {
    for (endpoint, why) in [
        ("htp://127.0.0.1:2379", "is not an http:// or https:// URL"),
        ("http://127.0.0.1", "has no port"),
        ("http://127.0.0.1:2379/v3", "has a path"),
    ] {
        let out = common::process::binary()
            .args([
                "serve",
                "--print-config",
                "--fleet-etcd-endpoints",
                endpoint,
            ])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(endpoint) && stderr.contains(why),
            "{stderr}"
        );
    }
    // `ctl check` judges them as `serve` does, from the same flags and variables.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), r#"{"commands": []}"#).unwrap();
    let out = common::process::binary()
        .args(["ctl", "check"])
        .arg(file.path())
        .env("A2A_COMMANDS_FLEET_ETCD_ENDPOINTS", "htp://127.0.0.1:2379")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("htp://127.0.0.1:2379"), "{stderr}");
    // `host:port`, as etcdctl takes it, is plain http.
    let out = common::process::binary()
        .args([
            "serve",
            "--print-config",
            "--fleet-etcd-endpoints",
            "127.0.0.1:2379",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let config: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        config["fleet"]["etcd_endpoints"][0],
        "http://127.0.0.1:2379"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_etcd_served_over_tls_with_client_certificates_is_reached() {
    let _one = ONE_AT_A_TIME.lock().await;
    if !etcd::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = common::pki::pki();
    let write = |name: &str, pem: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    let ca = write("ca.pem", &pki.ca);
    let (server_cert, server_key) = (
        write("etcd.pem", &pki.server.0),
        write("etcd-key.pem", &pki.server.1),
    );
    let (client_cert, client_key) = (
        write("client.pem", &pki.client.0),
        write("client-key.pem", &pki.client.1),
    );
    let cluster = EtcdCluster::start_tls(server_cert, server_key, ca.clone());
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let (ca, client_cert, client_key) = (path(&ca), path(&client_cert), path(&client_key));
    let tls = [
        "--fleet-etcd-ca-file",
        ca.as_str(),
        "--fleet-etcd-cert-file",
        client_cert.as_str(),
        "--fleet-etcd-key-file",
        client_key.as_str(),
    ];
    let process = sidecar(&cluster, &dir.path().join("s"), "s", &tls);
    let mut client = ready(&process).await;
    let revision = register(&mut client, "deploy").await.unwrap();
    assert_eq!(listed(&mut client).await.0, revision);

    // Without a client certificate, etcd refuses the connection: the sidecar says it
    // cannot read the fleet, and serves nothing.
    let refused = sidecar(&cluster, &dir.path().join("t"), "t", &tls[..2]);
    wait_for_line(&refused, "cannot read the fleet's registry");
    let mut refused = client_of(&refused).await;
    let status = refused
        .list_specs(pb::ListSpecsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_etcd_recreated_from_nothing_is_followed_again_and_revisions_never_go_back() {
    let _one = ONE_AT_A_TIME.lock().await;
    if !etcd::available() {
        return;
    }
    let mut cluster = EtcdCluster::start(1).await;
    let dirs = tempfile::tempdir().unwrap();
    let sidecars: Vec<_> = (0..2)
        .map(|i| {
            sidecar(
                &cluster,
                &dirs.path().join(format!("s{i}")),
                &format!("s{i}"),
                &[],
            )
        })
        .collect();
    let mut clients = Vec::new();
    for s in &sidecars {
        clients.push(ready(s).await);
    }
    for name in ["one", "two", "three"] {
        register(&mut clients[0], name).await.unwrap();
    }
    let (before, _) = converged(&mut clients).await;
    let watched = watch_revisions(clients[1].clone());

    // etcd's data is lost: the cluster comes back empty, its revisions from 1 again.
    cluster.recreate().await;
    // Both sidecars find it out, take the fleet's (empty) registry with a revision past
    // theirs, and put the built-ins back; new changes reach both again.
    let deadline = Instant::now() + Duration::from_secs(30);
    let revision = register_once_writable(&mut clients[0], "after", deadline).await;
    assert!(revision > before, "{revision} after {before}");
    let (now, names) = loop {
        let got = converged(&mut clients).await;
        if got.1.len() == 5 {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "not converged after the reset: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(now >= revision);
    // The sidecar that did not write found out by itself.
    wait_for_line(
        &sidecars[1],
        "etcd's history is not the one this sidecar followed",
    );
    // The API's commands from before are gone with etcd's data (whether the built-ins
    // come back before or after "after" decides the order).
    let mut names = names;
    names.sort();
    assert_eq!(names, ["after", "effort", "model", "status", "sub-task"]);
    assert_increasing(&watched, now).await;
}

/// Traces in fleet mode: a Register's etcd transaction is a client span under the
/// Register's server span, itself under the caller's `traceparent` (the binary, with
/// the trace flag, exporting to a real OTLP receiver).
#[tokio::test]
async fn a_register_s_etcd_transaction_is_a_span_under_it() {
    if !etcd::available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let cluster = EtcdCluster::start(1).await;
    let receiver = common::otlp::Receiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let endpoint = receiver.endpoint();
    let process = sidecar(
        &cluster,
        dir.path(),
        "traced",
        &["--otlp-traces-endpoint", &endpoint],
    );
    let mut client = ready(&process).await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let mut request = tonic::Request::new(pb::RegisterRequest {
        spec: Some(spec("deploy", "Deploy", "")),
        ..Default::default()
    });
    request.metadata_mut().insert(
        "traceparent",
        format!("00-{trace}-00f067aa0ba902b7-01").parse().unwrap(),
    );
    client.register(request).await.unwrap();
    use common::otlp::{attribute, hex};
    let spans = receiver
        .wait_for("the Register's transaction", |spans| {
            spans
                .iter()
                .filter(|s| hex(&s.trace_id) == trace)
                .any(|s| s.name == "etcdserverpb.KV/Txn")
                && spans
                    .iter()
                    .any(|s| s.name == "a2a.commands.v1.CommandService/Register")
        })
        .await;
    let register = spans
        .iter()
        .find(|s| s.name == "a2a.commands.v1.CommandService/Register")
        .unwrap();
    assert_eq!(hex(&register.trace_id), trace);
    let txn = spans
        .iter()
        .find(|s| s.name == "etcdserverpb.KV/Txn" && hex(&s.trace_id) == trace)
        .unwrap();
    assert_eq!(txn.parent_span_id, register.span_id);
    assert_eq!(attribute(txn, "rpc.system").as_deref(), Some("grpc"));
    assert_eq!(attribute(txn, "db.system.name").as_deref(), Some("etcd"));
    assert_eq!(
        attribute(txn, "server.address").as_deref(),
        Some("127.0.0.1")
    );
    assert_eq!(
        attribute(register, "a2a.command.name").as_deref(),
        Some("deploy")
    );
}

/// One JSON-RPC call to a front; the answer's JSON.
async fn front_call(
    front: std::net::SocketAddr,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    // reqwest is built without a TLS provider of its own; plain HTTP needs none, but
    // its client wants one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let answer = reqwest::Client::new()
        .post(format!("http://{front}/"))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .expect("the front answers");
    serde_json::from_slice(&answer.bytes().await.unwrap()).expect("JSON")
}

/// In fleet mode the front's task records are in etcd: a task one sidecar's front made
/// for a command is listed, answered and canceled through another's. The agent behind
/// them holds no task (it answers every call with an empty list): a command needs no
/// agent, and the front's own tasks are listed from etcd.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_one_sidecar_s_front_made_is_answered_by_another() {
    let _one = ONE_AT_A_TIME.lock().await;
    if !etcd::available() {
        return;
    }
    let cluster = EtcdCluster::start(1).await;
    let dirs = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = format!("http://{}/", listener.local_addr().unwrap());
    let empty = axum::Router::new().fallback(|| async {
        axum::Json(serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
    });
    tokio::spawn(async move { axum::serve(listener, empty).await });
    let front = [
        "--front-upstream",
        &upstream,
        "--front-listen",
        "127.0.0.1:0",
    ];
    let a = sidecar(&cluster, &dirs.path().join("a"), "a", &front);
    let b = sidecar(&cluster, &dirs.path().join("b"), "b", &front);
    let mut clients = vec![ready(&a).await, ready(&b).await];
    let (_, names) = converged(&mut clients).await;
    assert!(names.contains(&"status".to_owned()), "{names:?}");
    let (front_a, front_b) = (a.front_addr.unwrap(), b.front_addr.unwrap());

    let message = serde_json::json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
                                                   "parts": [{"text": "/status"}]}});
    let made = front_call(front_a, "SendMessage", message).await;
    let task = &made["result"]["task"];
    let id = task["id"].as_str().unwrap_or_else(|| panic!("{made}"));
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{made}"
    );

    let read = front_call(front_b, "GetTask", serde_json::json!({"id": id})).await;
    assert_eq!(read["result"], *task, "{read}");
    let context = task["contextId"].clone();
    let listed = front_call(
        front_b,
        "ListTasks",
        serde_json::json!({"contextId": context}),
    )
    .await;
    assert_eq!(
        listed["result"]["tasks"],
        serde_json::json!([task]),
        "{listed}"
    );
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");

    let canceled = front_call(front_b, "CancelTask", serde_json::json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let read = front_call(front_a, "GetTask", serde_json::json!({"id": id})).await;
    assert_eq!(
        read["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{read}"
    );
    let again = front_call(front_a, "CancelTask", serde_json::json!({"id": id})).await;
    assert_eq!(again["error"]["code"], -32002, "{again}");
}

/// What every sidecar logs, once, when it finds etcd's history is not the one it followed.
const RESET_LINE: &str = "etcd's history is not the one this sidecar followed";

/// How long every sidecar may take to serve etcd's new history once it meets it: the
/// writer from etcd's return, the follower from being continued, or both from a deleted
/// prefix. (A watch that ended is opened again within 0.5 s of etcd answering; the rest
/// is a few reads and at most two transactions.)
const CONVERGE_BOUND: Duration = Duration::from_secs(30);

/// Two sidecars in fleet mode on a one-member cluster: `s0`, through which the test
/// writes, and `s1`, which only follows. `initial` is registered through `s0`, and both
/// have converged on it.
struct Pair {
    cluster: EtcdCluster,
    sidecars: Vec<ServeProcess>,
    clients: Vec<Client>,
    dirs: tempfile::TempDir,
}

impl Pair {
    async fn start(initial: &[&str]) -> Option<Self> {
        if !etcd::available() {
            return None;
        }
        let cluster = EtcdCluster::start(1).await;
        let dirs = tempfile::tempdir().unwrap();
        let sidecars: Vec<_> = (0..2)
            .map(|i| {
                sidecar(
                    &cluster,
                    &dirs.path().join(format!("s{i}")),
                    &format!("s{i}"),
                    &[],
                )
            })
            .collect();
        let mut clients = Vec::new();
        for s in &sidecars {
            clients.push(ready(s).await);
        }
        // The built-ins first (written by one of them), then the test's commands.
        until_converged(&mut clients, &["status"], &[], Duration::from_secs(30)).await;
        for name in initial {
            register(&mut clients[0], name).await.unwrap();
        }
        until_converged(&mut clients, initial, &[], Duration::from_secs(30)).await;
        Some(Self {
            cluster,
            sidecars,
            clients,
            dirs,
        })
    }

    /// Registers `pad-<k>` through `s0` until etcd's revision is past `revision` + 1: a
    /// watch resumed at or before `revision` + 1 then starts inside etcd's new history,
    /// where a revision below the one resumed at cannot show that it is another.
    async fn write_past(&mut self, revision: i64) -> Vec<String> {
        let mut names = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.cluster.revision().await <= revision + 1 {
            let name = format!("pad-{}", names.len());
            register_once_writable(&mut self.clients[0], &name, deadline).await;
            names.push(name);
        }
        names
    }

    /// Both sidecars serve the same registry, holding every one of `present` and none of
    /// `absent`, within [`CONVERGE_BOUND`] of `since`; each said once in its log that
    /// etcd's history was not the one it followed; and the revisions `s1`'s WatchSpecs
    /// streamed only went up, to the one served. Ends both sidecars; returns the line
    /// each said it in.
    async fn settle(
        mut self,
        scenario: &str,
        since: Instant,
        present: &[&str],
        absent: &[&str],
        watched: &Mutex<Vec<u64>>,
    ) -> Vec<String> {
        let (revision, names) = until_converged(
            &mut self.clients,
            present,
            absent,
            CONVERGE_BOUND.saturating_sub(since.elapsed()),
        )
        .await;
        let took = since.elapsed();
        assert_increasing(watched, revision).await;
        let mut said = Vec::new();
        for (i, process) in self.sidecars.iter_mut().enumerate() {
            let mut lines = process.before.clone();
            lines.extend(every_line(process));
            let resets: Vec<&String> = lines.iter().filter(|l| l.contains(RESET_LINE)).collect();
            assert_eq!(
                resets.len(),
                1,
                "s{i} said it {} times: {lines:#?}",
                resets.len()
            );
            said.push(resets[0].clone());
        }
        eprintln!(
            "fleet: {scenario}: both sidecars noticed (one line each) and served revision {revision} ({} commands) {took:?} after meeting it (bound {CONVERGE_BOUND:?})",
            names.len()
        );
        said
    }
}

/// Waits until every sidecar serves the same revision and list, holding every one of
/// `present` and none of `absent`; at most `within`.
async fn until_converged(
    clients: &mut [Client],
    present: &[&str],
    absent: &[&str],
    within: Duration,
) -> (u64, Vec<String>) {
    let deadline = Instant::now() + within;
    loop {
        let mut seen = Vec::new();
        for client in clients.iter_mut() {
            seen.push(listed(client).await);
        }
        let names = &seen[0].1;
        if seen.windows(2).all(|w| w[0] == w[1])
            && present.iter().all(|p| names.iter().any(|n| n == p))
            && !absent.iter().any(|a| names.iter().any(|n| n == a))
        {
            return seen.remove(0);
        }
        assert!(
            Instant::now() < deadline,
            "the sidecars did not converge on {present:?} without {absent:?} in {within:?}: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `s1`'s WatchSpecs has streamed its first state.
async fn first_state(watched: &Mutex<Vec<u64>>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while watched.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "WatchSpecs streamed nothing");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The issue's failure, made certain: etcd recreated with the same members and token
/// (the same cluster id) while the sidecar that does not write is stopped; the writer
/// re-registers until etcd's revision is past where the stopped one's watch resumes;
/// only then is it continued. It must find out by itself that the history is another.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_etcd_recreated_is_noticed_by_a_follower_that_resumes_after_the_writer_re_registered() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut pair) = Pair::start(&["one", "two", "three"]).await else {
        return;
    };
    let watched = watch_revisions(pair.clients[1].clone());
    first_state(&watched).await;
    let before = pair.cluster.revision().await;
    pair.sidecars[1].signal("STOP");

    pair.cluster.recreate().await;
    let since = Instant::now();
    let deadline = since + Duration::from_secs(30);
    register_once_writable(&mut pair.clients[0], "after", deadline).await;
    let pads = pair.write_past(before).await;
    pair.sidecars[1].signal("CONT");
    let since = Instant::now();

    let mut present = vec!["after", "model", "status"];
    present.extend(pads.iter().map(String::as_str));
    pair.settle(
        "etcd recreated, the follower resuming after the writer re-registered",
        since,
        &present,
        &["one", "two", "three"],
        &watched,
    )
    .await;
}

/// etcd restored from a snapshot older than both sidecars' registry (`three` and `four`
/// were made after it): the same ordering as above.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_etcd_restored_from_an_older_snapshot_is_noticed_by_every_sidecar() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut pair) = Pair::start(&["one", "two"]).await else {
        return;
    };
    let file = pair.dirs.path().join("snapshot.db");
    pair.cluster.snapshot(&file);
    for name in ["three", "four"] {
        register(&mut pair.clients[0], name).await.unwrap();
    }
    until_converged(
        &mut pair.clients,
        &["three", "four"],
        &[],
        Duration::from_secs(30),
    )
    .await;
    let watched = watch_revisions(pair.clients[1].clone());
    first_state(&watched).await;
    let before = pair.cluster.revision().await;
    pair.sidecars[1].signal("STOP");

    pair.cluster.restore(&file).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    register_once_writable(&mut pair.clients[0], "after", deadline).await;
    let pads = pair.write_past(before).await;
    pair.sidecars[1].signal("CONT");
    let since = Instant::now();

    let mut present = vec!["one", "two", "after", "status"];
    present.extend(pads.iter().map(String::as_str));
    pair.settle(
        "etcd restored from an older snapshot",
        since,
        &present,
        &["three", "four"],
        &watched,
    )
    .await;
}

/// etcd restored from a snapshot newer than the registry of the sidecar that does not
/// write (stopped meanwhile): nothing it applied is contradicted, yet it must find out,
/// from the writer, which did apply what was lost (`four`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_etcd_restored_from_a_snapshot_newer_than_a_follower_is_noticed_by_it() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut pair) = Pair::start(&["one"]).await else {
        return;
    };
    let watched = watch_revisions(pair.clients[1].clone());
    first_state(&watched).await;
    pair.sidecars[1].signal("STOP");
    // etcd restarted on its data, so that the stopped follower's watch ends before the
    // writes below: etcd would otherwise send it their events, which it reads when it is
    // continued if its socket was closed with a FIN rather than an RST. It would then
    // have applied `four`, and etcd's history would contradict it (another test's case).
    pair.cluster.kill(0);
    pair.cluster.restart(&[0]).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    for name in ["two", "three"] {
        register_once_writable(&mut pair.clients[0], name, deadline).await;
    }
    let file = pair.dirs.path().join("snapshot.db");
    pair.cluster.snapshot(&file);
    register(&mut pair.clients[0], "four").await.unwrap();
    let before = pair.cluster.revision().await;

    pair.cluster.restore(&file).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    register_once_writable(&mut pair.clients[0], "after", deadline).await;
    let pads = pair.write_past(before).await;
    pair.sidecars[1].signal("CONT");
    let since = Instant::now();

    let mut present = vec!["one", "two", "three", "after", "status"];
    present.extend(pads.iter().map(String::as_str));
    let said = pair
        .settle(
            "etcd restored from a snapshot newer than the follower",
            since,
            &present,
            &["four"],
            &watched,
        )
        .await;
    // The follower learnt it from the history's new name: etcd still held every change
    // it had applied.
    assert!(said[1].contains("named the history anew"), "{}", said[1]);
}

/// The fleet's prefix deleted by hand (`etcdctl del --prefix`) under two running
/// sidecars: both find the registry gone, read it whole (empty, its revision moved past
/// theirs), put the built-ins back, and take writes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_prefix_deleted_by_hand_is_noticed_by_every_sidecar() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut pair) = Pair::start(&["one", "two"]).await else {
        return;
    };
    let watched = watch_revisions(pair.clients[1].clone());
    first_state(&watched).await;

    pair.cluster.delete_prefix("/a2a-commands/");
    let since = Instant::now();
    // The built-ins come back after the reset, on whichever sidecar writes them first.
    until_converged(
        &mut pair.clients,
        &["status"],
        &["one", "two"],
        CONVERGE_BOUND,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    register_once_writable(&mut pair.clients[0], "after", deadline).await;
    pair.settle(
        "the fleet's prefix deleted by hand",
        since,
        &["after", "model", "status"],
        &["one", "two"],
        &watched,
    )
    .await;
}

/// A sidecar restarted while every etcd member is down serves its copy; when etcd comes
/// back it reads the fleet's registry, the same as its copy: its WatchSpecs streams no
/// state for that (a state is sent after a change, never twice for one revision), and
/// the next change once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sidecar_restarted_during_an_outage_streams_each_state_once() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut pair) = Pair::start(&["before"]).await else {
        return;
    };
    let (revision, _) = listed(&mut pair.clients[1]).await;
    pair.cluster.kill(0);
    let dir = pair.dirs.path().join("s1");
    drop(pair.sidecars.pop());
    pair.sidecars.push(sidecar(&pair.cluster, &dir, "s1", &[]));
    pair.clients[1] = ready(&pair.sidecars[1]).await;
    let watched = watch_revisions(pair.clients[1].clone());
    first_state(&watched).await;
    assert_eq!(*watched.lock().unwrap(), [revision]);

    pair.cluster.restart(&[0]).await;
    // It read the fleet's registry and found its copy current.
    wait_for_line(&pair.sidecars[1], "this sidecar's copy follows it");
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = register_once_writable(&mut pair.clients[0], "after", deadline).await;
    until_converged(&mut pair.clients, &["after"], &[], Duration::from_secs(30)).await;
    assert_increasing(&watched, after).await;
    assert_eq!(*watched.lock().unwrap(), [revision, after]);
}
