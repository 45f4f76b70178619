//! Damaged data directories: for every file of a real store, bytes flipped at many
//! offsets, the file cut at many lengths, or deleted. Every start must either serve
//! exactly the registry that was acknowledged, or refuse with one line and leave the
//! directory byte for byte as it was found. `A2A_COMMANDS_CORRUPTION_OFFSETS` (default
//! 64 per file) runs a longer matrix.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use a2a_commands::pb;
use a2a_commands::registry::{Options, Registry};
use common::process::serve_command;
use common::*;

fn lay(dir: &Path, files: &BTreeMap<PathBuf, Vec<u8>>) {
    for (rel, bytes) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// What a reader of the registry sees: the revision and every command, in order.
type Seen = (u64, Vec<(String, String, String)>);

fn seen_in(registry: &Registry) -> Seen {
    let snapshot = registry.snapshot();
    let commands = snapshot
        .commands()
        .map(|c| {
            (
                c.spec.name.to_string(),
                c.spec.description.clone(),
                format!("{:?}/{:?}", c.body, c.source),
            )
        })
        .collect();
    (snapshot.revision(), commands)
}

/// A store with history (registrations, an override, removals that damage could undo),
/// stopped cleanly; returns its files and what it acknowledged last.
async fn build_store() -> (BTreeMap<PathBuf, Vec<u8>>, Seen) {
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    for i in 0..12 {
        let name = format!("cmd-{i}");
        register(&mut client, spec(&name, "A command", "<x>"), false)
            .await
            .unwrap();
    }
    register(&mut client, spec("cmd-3", "Replaced", ""), true)
        .await
        .unwrap();
    for name in ["cmd-1", "cmd-7", "effort"] {
        client
            .unregister(pb::UnregisterRequest { name: name.into() })
            .await
            .unwrap();
    }
    let dir = server.data_dir();
    server.server.take().unwrap().shutdown().await.unwrap();
    let options = options(&dir);
    let registry = Registry::open(&options).expect("the clean store opens");
    let acknowledged = seen_in(&registry);
    registry.close().await;
    (files(&dir), acknowledged)
}

fn options(dir: &Path) -> Options {
    Options {
        data_dir: dir.to_owned(),
        cache_bytes: 1 << 20,
        max_commands: 10_000,
    }
}

/// Offsets spread over a file of `len` bytes: its first bytes (headers) densely, then
/// pseudo-random ones from a fixed seed, so a failure replays.
fn offsets(len: usize, count: usize, seed: u64) -> Vec<usize> {
    if len == 0 {
        return Vec::new();
    }
    let mut out: Vec<usize> = [0, 1, 4, 8, 12, 16, 24, 32, 64, len - 1]
        .into_iter()
        .filter(|&o| o < len)
        .collect();
    let mut state = seed | 1;
    while out.len() < count {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.push((state % len as u64) as usize);
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[derive(Debug)]
enum Damage {
    Flip(usize),
    Cut(usize),
    Delete,
}

fn damaged(pristine: &[u8], damage: &Damage) -> Option<Vec<u8>> {
    match *damage {
        Damage::Flip(at) => {
            let mut bytes = pristine.to_vec();
            bytes[at] ^= 0x5A;
            Some(bytes)
        }
        Damage::Cut(len) => Some(pristine[..len].to_vec()),
        Damage::Delete => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_damaged_start_serves_the_acknowledged_registry_or_refuses_untouched() {
    let (pristine, acknowledged) = build_store().await;
    let per_file: usize = std::env::var("A2A_COMMANDS_CORRUPTION_OFFSETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    assert!(pristine.keys().any(|p| p == Path::new("acknowledged")));
    assert!(pristine.keys().any(|p| p == Path::new("db")));

    let (mut served, mut refused) = (0, 0);
    for (rel, bytes) in &pristine {
        let len = bytes.len();
        let mut cases: Vec<Damage> = offsets(len, per_file, len as u64 ^ 0x9E37_79B9)
            .into_iter()
            .map(Damage::Flip)
            .collect();
        let cuts = [
            0,
            1,
            len / 4,
            len / 2,
            len.saturating_sub(16),
            len.saturating_sub(1),
        ];
        cases.extend(cuts.into_iter().filter(|&c| c < len).map(Damage::Cut));
        cases.push(Damage::Delete);
        for damage in cases {
            let scratch = tempfile::tempdir().unwrap();
            let dir = scratch.path().join("data");
            let mut laid = pristine.clone();
            match damaged(bytes, &damage) {
                Some(b) => {
                    laid.insert(rel.clone(), b);
                }
                None => {
                    laid.remove(rel);
                }
            }
            lay(&dir, &laid);
            let before = files(&dir);
            match Registry::open(&options(&dir)) {
                Ok(registry) => {
                    let seen = seen_in(&registry);
                    registry.close().await;
                    assert_eq!(
                        seen, acknowledged,
                        "{rel:?} {damage:?}: served a registry that was not acknowledged"
                    );
                    served += 1;
                }
                Err(e) => {
                    let line = e.to_string();
                    assert!(!line.contains('\n'), "one line: {line}");
                    assert!(line.contains(dir.to_str().unwrap()), "{line}");
                    assert_eq!(
                        files(&dir),
                        before,
                        "{rel:?} {damage:?}: a refused start changed the directory ({line})"
                    );
                    refused += 1;
                }
            }
        }
    }
    eprintln!("damaged starts: {served} served the acknowledged registry, {refused} refused");
    assert!(refused > 0 && served + refused > 50);
}

/// The binary's side of a refusal: exit non-zero, one line naming the directory and
/// what disagrees.
#[tokio::test]
async fn a_store_older_than_acknowledged_stops_the_binary_with_one_line() {
    let (pristine, _) = build_store().await;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("data");
    let mut laid = pristine.clone();
    // The record of a store that went further than this one did.
    let older = tempfile::tempdir().unwrap();
    {
        let server = TestServer::start_with(|s| s.registry.data_dir = older.path().join("d"));
        let server = server.await;
        let mut client = server.client().await;
        register(&mut client, spec("only", "x", ""), false)
            .await
            .unwrap();
        let mut server = server;
        server.server.take().unwrap().shutdown().await.unwrap();
        let theirs = files(&older.path().join("d"));
        laid.insert(
            "acknowledged".into(),
            theirs[Path::new("acknowledged")].clone(),
        );
    }
    lay(&dir, &laid);
    let before = files(&dir);
    let output = serve_command(&dir, &[]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("a2a-commands: cannot open data directory"),
        "{stderr}"
    );
    assert!(last.contains(dir.to_str().unwrap()), "{last}");
    assert!(last.contains("acknowledged, the store holds"), "{last}");
    assert_eq!(files(&dir), before, "left as found");
}

/// A store that lost only the last group it acknowledged (one Register) is refused: the
/// record was confirmed with the new state alone once sled had it.
#[tokio::test]
async fn a_store_that_lost_only_its_last_acknowledged_change_is_refused() {
    let (pristine, _) = build_store().await;
    let scratch = tempfile::tempdir().unwrap();
    let went_on = scratch.path().join("went-on");
    lay(&went_on, &pristine);
    let start = || TestServer::start_with(|s| s.registry.data_dir = went_on.clone());
    // A start and a clean stop (a start applies its built-ins), then one Register.
    let mut server = start().await;
    server.server.take().unwrap().shutdown().await.unwrap();
    let older = files(&went_on);
    let registry = Registry::open(&options(&went_on)).expect("the clean store opens");
    let (revision, _) = seen_in(&registry);
    registry.close().await;
    let mut server = start().await;
    let mut client = server.client().await;
    register(&mut client, spec("one-more", "x", ""), false)
        .await
        .unwrap();
    server.server.take().unwrap().shutdown().await.unwrap();

    // The older store's files with the newer record: sled lost exactly that Register.
    let dir = scratch.path().join("data");
    let mut laid = older.clone();
    let record = Path::new("acknowledged");
    laid.insert(record.into(), files(&went_on)[record].clone());
    lay(&dir, &laid);
    let before = files(&dir);
    let err = Registry::open(&options(&dir)).err().expect("refused");
    let line = err.to_string();
    assert!(
        line.contains(&format!(
            "revision {} acknowledged, the store holds revision {revision}",
            revision + 1
        )),
        "{line}"
    );
    assert!(line.contains("it was left untouched"), "{line}");
    assert_eq!(files(&dir), before, "left as found");
}

/// A store with no record (deleted, or written by a version without one) is refused; a
/// record whose store lost its files (sled's `db`, or all of them) is refused too.
#[tokio::test]
async fn a_missing_record_or_a_missing_store_is_refused() {
    let (pristine, _) = build_store().await;
    let all_of_sled: Vec<&str> = pristine
        .keys()
        .filter_map(|path| path.to_str())
        .filter(|name| *name != "acknowledged")
        .collect();
    for missing in [
        vec!["acknowledged"],
        vec!["db", "conf"],
        vec!["db"],
        all_of_sled,
    ] {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("data");
        let mut laid = pristine.clone();
        for name in &missing {
            laid.remove(Path::new(name));
        }
        lay(&dir, &laid);
        let before = files(&dir);
        let err = Registry::open(&options(&dir)).err().expect("refused");
        assert_eq!(files(&dir), before, "{missing:?}");
        let line = err.to_string();
        assert!(line.contains("it was left untouched"), "{line}");
        if missing == ["acknowledged"] {
            assert!(line.contains("no acknowledged-state record"), "{line}");
        }
        if missing.len() > 2 {
            assert!(line.contains("it holds no store"), "{line}");
        }
    }
}

/// A first start that stopped after writing its record and before sled wrote anything
/// (nothing was acknowledged) starts again.
#[tokio::test]
async fn a_record_of_nothing_acknowledged_without_a_store_opens() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    a2a_commands::registry::seal::create(&dir).unwrap();
    let registry = Registry::open(&options(&dir)).expect("opens");
    assert_eq!(registry.snapshot().revision(), 0);
    registry.close().await;
}

/// A first start cut by a power loss while it wrote its first record leaves only the
/// record's temporary file (whole, torn or empty): that is no store, and it starts.
#[tokio::test]
async fn a_first_record_never_renamed_into_place_is_written_over() {
    for leftover in [&b""[..], &b"A2ACACK1 torn"[..]] {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("data");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(a2a_commands::registry::seal::TEMPORARY_NAME),
            leftover,
        )
        .unwrap();
        let registry = Registry::open(&options(&dir)).expect("opens");
        assert_eq!(registry.snapshot().revision(), 0);
        registry.close().await;
        assert!(dir.join(a2a_commands::registry::seal::FILE_NAME).exists());
    }
}

/// A snapshot sled began and never finished (left by a start on a full disk, or a kill)
/// is removed at open instead of bricking the store.
#[tokio::test]
async fn an_unfinished_snapshot_is_removed_and_the_store_opens() {
    let (pristine, acknowledged) = build_store().await;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("data");
    lay(&dir, &pristine);
    std::fs::write(dir.join("snap.00000000000A1B2C.generating"), b"").unwrap();
    let registry = Registry::open(&options(&dir)).expect("opens");
    assert_eq!(seen_in(&registry), acknowledged);
    registry.close().await;
    assert!(!dir.join("snap.00000000000A1B2C.generating").exists());
}

/// The way back: `salvage` writes what a refused directory still holds as a commands
/// file, without changing the directory, and a fresh directory starts from that file.
#[tokio::test]
async fn salvage_exports_a_refused_store_and_a_fresh_start_takes_the_file() {
    let (pristine, acknowledged) = build_store().await;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("data");
    let mut laid = pristine.clone();
    laid.remove(Path::new("acknowledged"));
    lay(&dir, &laid);
    assert!(
        Registry::open(&options(&dir)).is_err(),
        "refused without its record"
    );
    let before = files(&dir);

    let file = scratch.path().join("commands.json");
    let output = common::process::binary()
        .args(["salvage", "--data-dir"])
        .arg(&dir)
        .arg("--output")
        .arg(&file)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(files(&dir), before, "salvage never writes the directory");

    let fresh = scratch.path().join("fresh");
    let process =
        common::process::ServeProcess::start(&fresh, &["--commands-file", file.to_str().unwrap()]);
    let mut client = pb::command_service_client::CommandServiceClient::connect(process.url())
        .await
        .unwrap();
    let listed = list(&mut client).await;
    let got: Vec<(String, String)> = listed
        .commands
        .iter()
        .map(|c| {
            let spec = c.spec.as_ref().unwrap();
            (spec.name.clone(), spec.description.clone())
        })
        .collect();
    let want: Vec<(String, String)> = acknowledged
        .1
        .iter()
        .map(|(name, description, _)| (name.clone(), description.clone()))
        .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    let mut want_sorted = want;
    // The unregistered built-in `effort` is configuration: a fresh start offers it.
    want_sorted.push((
        "effort".into(),
        "Show or set this task's reasoning effort".into(),
    ));
    want_sorted.sort();
    assert_eq!(got_sorted, want_sorted);
}

/// A store the size the fault injection used: about 400 commands with long
/// descriptions, some overridden and some removed, one change at a time (so sled's
/// pages carry chains of updates) over three runs of the server, stopped cleanly.
async fn build_large_store() -> (BTreeMap<PathBuf, Vec<u8>>, Seen) {
    let mut server = TestServer::start().await;
    let long = "a description long enough to make the store grow; ".repeat(18);
    for run in 0..3 {
        if run > 0 {
            server.restart().await;
        }
        let mut client = server.client().await;
        for i in (run * 134)..((run + 1) * 134).min(400) {
            let name = format!("cmd-{i:03}");
            register(
                &mut client,
                spec(&name, &format!("{i} {long}"), "<x>"),
                false,
            )
            .await
            .unwrap();
            if i % 7 == 0 {
                let over = spec(&name, &format!("over {i} {long}"), "");
                register(&mut client, over, true).await.unwrap();
            }
            if i % 6 == 0 {
                let name = format!("cmd-{:03}", i / 2);
                let _ = client.unregister(pb::UnregisterRequest { name }).await;
            }
        }
    }
    let dir = server.data_dir();
    server.server.take().unwrap().shutdown().await.unwrap();
    let registry = Registry::open(&options(&dir)).expect("the clean store opens");
    let acknowledged = seen_in(&registry);
    registry.close().await;
    (files(&dir), acknowledged)
}

/// xorshift64: a damage matrix that replays from its printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One damage to one file: bytes XORed with a mask (never 0, so each byte changes).
#[derive(Debug, Clone)]
struct Xor {
    file: PathBuf,
    at: usize,
    masks: Vec<u8>,
}

impl Xor {
    fn apply(&self, bytes: &mut [u8]) {
        for (i, mask) in self.masks.iter().enumerate() {
            if let Some(b) = bytes.get_mut(self.at + i) {
                *b ^= mask;
            }
        }
    }
}

/// The damages to try: the two the fault injection found (0xFF at 44.08 % and 45.36 %
/// of `db`), then for `db` and every `snap.*` single-byte flips and short runs (2 to 16
/// bytes) at seeded places.
fn damages(pristine: &BTreeMap<PathBuf, Vec<u8>>, seed: u64, per_file: usize) -> Vec<Xor> {
    let mut rng = Rng(seed | 1);
    let db = pristine[Path::new("db")].len();
    let mut out: Vec<Xor> = [0.4408, 0.4536]
        .into_iter()
        .map(|share| Xor {
            file: "db".into(),
            at: (db as f64 * share) as usize,
            masks: vec![0xFF],
        })
        .collect();
    for (file, bytes) in pristine {
        let name = file.to_string_lossy();
        if name != "db" && !name.starts_with("snap.") {
            continue;
        }
        let count = if name == "db" { per_file } else { per_file / 4 };
        for n in 0..count {
            let len = if n % 3 == 2 { 2 + rng.below(15) } else { 1 };
            let masks = (0..len)
                .map(|_| match rng.below(3) {
                    0 => 0xFF,
                    _ => (rng.below(255) + 1) as u8,
                })
                .collect();
            out.push(Xor {
                file: file.clone(),
                at: rng.below(bytes.len()),
                masks,
            });
        }
    }
    out
}

/// Hundreds of seeded damages to a large store's `db` and snapshots, opened in process:
/// each start serves exactly the acknowledged registry, or refuses with one line naming
/// the directory and leaves every file as it was (no check copy left behind). sled
/// panics on some of these while reading (not opening); none may reach the caller.
/// `A2A_COMMANDS_CORRUPTION_SEED` replays a run; `A2A_COMMANDS_CORRUPTION_DAMAGES`
/// (default 240 for `db`, a quarter of it per snapshot) runs a longer one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_store_under_hundreds_of_seeded_damages_serves_or_refuses_untouched() {
    let seed = std::env::var("A2A_COMMANDS_CORRUPTION_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let per_file: usize = std::env::var("A2A_COMMANDS_CORRUPTION_DAMAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240);
    eprintln!("corruption matrix: A2A_COMMANDS_CORRUPTION_SEED={seed} replays this run");
    let (pristine, acknowledged) = build_large_store().await;
    let db = pristine[Path::new("db")].len();
    eprintln!(
        "store: {:?}",
        pristine
            .iter()
            .map(|(p, b)| (p, b.len()))
            .collect::<Vec<_>>()
    );
    assert!(
        db > 500_000,
        "the store is large enough to matter: db is {db} bytes"
    );
    let cases = damages(&pristine, seed, per_file);
    let (mut served, mut refused) = (0, 0);
    // Refusals also run through the binary: (sled panicked, other).
    let mut by_binary = (0, 0);
    for (n, damage) in cases.iter().enumerate() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("data");
        let mut laid = pristine.clone();
        damage.apply(laid.get_mut(&damage.file).unwrap());
        lay(&dir, &laid);
        let before = files(&dir);
        let case = format!("seed {seed}, case {n}: {damage:?}");
        match Registry::open(&options(&dir)) {
            Ok(registry) => {
                let seen = seen_in(&registry);
                registry.close().await;
                assert!(
                    seen == acknowledged,
                    "{case}: served a registry that was not acknowledged"
                );
                served += 1;
            }
            Err(e) => {
                let line = e.to_string();
                assert!(!line.contains('\n'), "{case}: one line: {line}");
                assert!(line.contains(dir.to_str().unwrap()), "{case}: {line}");
                assert!(
                    files(&dir) == before,
                    "{case}: a refused start changed the directory ({line})"
                );
                assert!(!dir.join(".open-check").exists(), "{case}: check copy left");
                // The binary too, on a few of them: sled's panics first.
                let panicked = line.contains("panicked");
                if (panicked && by_binary.0 < 3) || (!panicked && by_binary.1 < 2) {
                    binary_refuses(&dir, &case);
                    if panicked {
                        by_binary.0 += 1;
                    } else {
                        by_binary.1 += 1;
                    }
                }
                refused += 1;
            }
        }
    }
    eprintln!(
        "corruption matrix (seed {seed}): {} damages, {served} served the acknowledged \
         registry, {refused} refused untouched; the binary refused {} where sled panicked \
         and {} others with one line",
        cases.len(),
        by_binary.0,
        by_binary.1
    );
    assert!(served + refused >= 200);
}

/// The binary on a damaged directory: exits non-zero with one line naming the directory
/// (no panic message, no backtrace), the directory left as it was.
fn binary_refuses(dir: &Path, case: &str) {
    let before = files(dir);
    let output = serve_command(dir, &[])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{case}: {stderr}");
    assert!(!stderr.contains("panicked"), "{case}: {stderr}");
    assert!(!stderr.contains("backtrace"), "{case}: {stderr}");
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("a2a-commands: cannot open data directory"),
        "{case}: {stderr}"
    );
    assert!(last.contains(dir.to_str().unwrap()), "{case}: {last}");
    assert!(files(dir) == before, "{case}: left as found");
}
