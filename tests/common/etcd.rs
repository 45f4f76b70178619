//! A real etcd cluster on loopback for the fleet tests: members on free ports with
//! temporary data directories, stopped by PID when dropped (a failed test included).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use a2a_commands::pb::etcd::kv_client::KvClient;
use a2a_commands::pb::etcd::{CompactionRequest, RangeRequest};

/// One member's ports and process.
struct Member {
    name: String,
    client: u16,
    peer: u16,
    child: Option<Child>,
}

/// A running cluster.
pub struct EtcdCluster {
    members: Vec<Member>,
    dir: tempfile::TempDir,
    /// TLS for clients: the members' certificate and key, and the CA client certificates
    /// must be signed by (files).
    tls: Option<(PathBuf, PathBuf, PathBuf)>,
}

/// Whether etcd is installed; under CI its absence fails the test (`.ci/run` installs
/// it), elsewhere the test is skipped with one loud line.
pub fn available() -> bool {
    let found = Command::new("etcd")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "etcd is not installed, and CI must run the fleet tests (apt-get install etcd-server etcd-client)"
        );
        eprintln!("*** etcd is not installed: fleet test SKIPPED ***");
    }
    found
}

/// A free port below the kernel's ephemeral range. A member killed and started again
/// binds its ports a second time, and a port from the ephemeral range can be taken in
/// between by any outgoing connection on the machine (the sidecars retry their
/// connections to the dead member all the while): "address already in use". Below the
/// range the kernel hands out no port by itself; ports are taken in turn from a start
/// that differs by process, each checked free by binding it.
fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let low = 10_000;
    if ephemeral_low <= low + 1_000 {
        // No room below the range on this machine: the kernel's choice, said loudly,
        // since a restarted member may then find its port taken.
        eprintln!("*** the ephemeral port range starts at {ephemeral_low}: etcd's ports are the kernel's choice ***");
        return bound_port(0).expect("a free port");
    }
    let span = ephemeral_low - low;
    let start = std::process::id() * 97;
    for _ in 0..span {
        let candidate = low + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        if let Some(port) = bound_port(candidate as u16) {
            return port;
        }
    }
    panic!("no free port in {low}..{ephemeral_low}");
}

/// The port of a listener bound to 127.0.0.1:`port` and closed at once, if it binds.
fn bound_port(port: u16) -> Option<u16> {
    let listener = TcpListener::bind(("127.0.0.1", port)).ok()?;
    Some(listener.local_addr().ok()?.port())
}

impl EtcdCluster {
    /// Starts `n` members and waits until every one answers.
    pub async fn start(n: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let members: Vec<Member> = (0..n)
            .map(|i| Member {
                name: format!("m{i}"),
                client: free_port(),
                peer: free_port(),
                child: None,
            })
            .collect();
        let mut cluster = Self {
            members,
            dir,
            tls: None,
        };
        for i in 0..n {
            cluster.spawn(i);
        }
        for i in 0..n {
            cluster.wait_member(i).await;
        }
        cluster
    }

    /// Starts one member serving clients over TLS (`https://localhost:<port>`) with
    /// `cert` and `key`, requiring client certificates signed by `client_ca`. Not waited
    /// on: the test's own client shows when it answers.
    pub fn start_tls(cert: PathBuf, key: PathBuf, client_ca: PathBuf) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let members = vec![Member {
            name: "m0".into(),
            client: free_port(),
            peer: free_port(),
            child: None,
        }];
        let mut cluster = Self {
            members,
            dir,
            tls: Some((cert, key, client_ca)),
        };
        cluster.spawn(0);
        cluster
    }

    fn initial_cluster(&self) -> String {
        let peers: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer))
            .collect();
        peers.join(",")
    }

    fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(&self.members[i].name)
    }

    fn spawn(&mut self, i: usize) {
        let initial = self.initial_cluster();
        let data = self.data_dir(i);
        let m = &self.members[i];
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let client = format!("{scheme}://127.0.0.1:{}", m.client);
        let peer = format!("http://127.0.0.1:{}", m.peer);
        let log = std::fs::File::create(self.dir.path().join(format!("{}.log", m.name))).unwrap();
        let mut command = Command::new("etcd");
        if let Some((cert, key, ca)) = &self.tls {
            command
                .arg("--cert-file")
                .arg(cert)
                .arg("--key-file")
                .arg(key)
                .arg("--trusted-ca-file")
                .arg(ca)
                .arg("--client-cert-auth");
        }
        let child = command
            .args(["--name", &m.name, "--data-dir"])
            .arg(&data)
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
                "--initial-cluster",
                &initial,
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                "a2a-commands-test",
                // Loopback: elections in tens of milliseconds keep the tests short.
                "--heartbeat-interval",
                "50",
                "--election-timeout",
                "500",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd starts");
        self.members[i].child = Some(child);
    }

    /// Client URLs, comma-separated, as `--fleet-etcd-endpoints` takes them.
    pub fn endpoints(&self) -> String {
        let urls: Vec<String> = (0..self.members.len()).map(|i| self.endpoint(i)).collect();
        urls.join(",")
    }

    /// Member `i`'s client URL (`https://localhost:...` with TLS: the name its
    /// certificate holds).
    pub fn endpoint(&self, i: usize) -> String {
        match self.tls {
            Some(_) => format!("https://localhost:{}", self.members[i].client),
            None => format!("http://127.0.0.1:{}", self.members[i].client),
        }
    }

    async fn kv(&self, i: usize) -> Option<KvClient<tonic::transport::Channel>> {
        let channel = tonic::transport::Endpoint::from_shared(self.endpoint(i))
            .unwrap()
            .connect_timeout(Duration::from_millis(500))
            .connect()
            .await
            .ok()?;
        Some(KvClient::new(channel))
    }

    /// Waits until member `i` answers a linearizable read (so it has a leader).
    async fn wait_member(&self, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(mut kv) = self.kv(i).await {
                let mut request = tonic::Request::new(RangeRequest {
                    key: b"probe".to_vec(),
                    ..Default::default()
                });
                request.set_timeout(Duration::from_secs(2));
                if kv.range(request).await.is_ok() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "etcd member {i} did not answer within 60 s; its log: {}",
                self.log(i)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(
            self.dir
                .path()
                .join(format!("{}.log", self.members[i].name)),
        )
        .unwrap_or_default()
    }

    /// The index of the current leader, asked again while an election leaves none (or
    /// a member does not answer), for at most 30 s.
    pub fn leader(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let output = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args(["endpoint", "status", "-w", "json", "--endpoints"])
                .arg(self.endpoints())
                .output()
                .expect("etcdctl runs");
            let statuses: serde_json::Value =
                serde_json::from_slice(&output.stdout).unwrap_or_default();
            let leader = statuses
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|status| {
                    let s = &status["Status"];
                    (s["leader"] == s["header"]["member_id"]).then(|| {
                        let endpoint = status["Endpoint"].as_str().unwrap_or_default();
                        (0..self.members.len()).find(|&i| self.endpoint(i) == endpoint)
                    })?
                });
            if let Some(leader) = leader {
                return leader;
            }
            assert!(Instant::now() < deadline, "no leader: {output:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills member `i` with SIGKILL.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts `members` again on their data directories, and waits until each answers
    /// (which needs a quorum back).
    pub async fn restart(&mut self, members: &[usize]) {
        for &i in members {
            self.spawn(i);
        }
        for &i in members {
            self.wait_member(i).await;
        }
    }

    /// Stops every member, deletes their data and starts them again: a cluster recreated
    /// from nothing, whose revisions start again (as after losing etcd's data).
    pub async fn recreate(&mut self) {
        let all: Vec<usize> = (0..self.members.len()).collect();
        for &i in &all {
            self.kill(i);
            let _ = std::fs::remove_dir_all(self.data_dir(i));
        }
        self.restart(&all).await;
    }

    /// Saves a snapshot of the cluster's data to `file` (`etcdctl snapshot save`, the
    /// documented backup).
    pub fn snapshot(&self, file: &std::path::Path) {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(self.endpoint(0))
            .arg("snapshot")
            .arg("save")
            .arg(file)
            .output()
            .expect("etcdctl runs");
        assert!(out.status.success(), "etcdctl snapshot save: {out:?}");
    }

    /// Stops every member and restores each from `file` into a new data directory
    /// (`etcdctl snapshot restore`, the documented disaster recovery, with the same
    /// names, peer URLs and token: the same cluster id, its revisions those of the
    /// snapshot), then starts them again and waits until each answers.
    pub async fn restore(&mut self, file: &std::path::Path) {
        let all: Vec<usize> = (0..self.members.len()).collect();
        let initial = self.initial_cluster();
        for &i in &all {
            self.kill(i);
            let data = self.data_dir(i);
            let _ = std::fs::remove_dir_all(&data);
            let m = &self.members[i];
            let out = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .arg("snapshot")
                .arg("restore")
                .arg(file)
                .args(["--name", &m.name, "--data-dir"])
                .arg(&data)
                .args([
                    "--initial-cluster",
                    &initial,
                    "--initial-cluster-token",
                    "a2a-commands-test",
                    "--initial-advertise-peer-urls",
                    &format!("http://127.0.0.1:{}", m.peer),
                ])
                .output()
                .expect("etcdctl runs");
            assert!(out.status.success(), "etcdctl snapshot restore: {out:?}");
        }
        self.restart(&all).await;
    }

    /// Deletes every key under `prefix` (`etcdctl del --prefix`, by hand).
    pub fn delete_prefix(&self, prefix: &str) {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(self.endpoints())
            .args(["del", "--prefix", prefix])
            .output()
            .expect("etcdctl runs");
        assert!(out.status.success(), "etcdctl del: {out:?}");
    }

    /// The cluster's current revision (a linearizable read of any member that answers).
    pub async fn revision(&self) -> i64 {
        for i in 0..self.members.len() {
            let Some(mut kv) = self.kv(i).await else {
                continue;
            };
            if let Ok(answer) = kv
                .range(RangeRequest {
                    key: b"probe".to_vec(),
                    ..Default::default()
                })
                .await
            {
                return answer.into_inner().header.unwrap().revision;
            }
        }
        panic!("no member answered");
    }

    /// Compacts the history up to the newest revision; returns it.
    pub async fn compact(&self) -> i64 {
        for i in 0..self.members.len() {
            let Some(mut kv) = self.kv(i).await else {
                continue;
            };
            let Ok(answer) = kv
                .range(RangeRequest {
                    key: b"probe".to_vec(),
                    ..Default::default()
                })
                .await
            else {
                continue;
            };
            let revision = answer.into_inner().header.unwrap().revision;
            kv.compact(CompactionRequest {
                revision,
                physical: true,
            })
            .await
            .expect("compacts");
            return revision;
        }
        panic!("no member answered");
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}
