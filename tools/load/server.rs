//! Starting the real `a2a-commands` binary and connecting to it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use tonic::transport::Channel;

use crate::cli::Args;

/// A started server process and where it listens.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) health_addr: SocketAddr,
    pub(crate) started: Instant,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn server_binary(args: &Args) -> PathBuf {
    args.server.clone().unwrap_or_else(|| {
        let me = std::env::current_exe().expect("current exe");
        me.with_file_name("a2a-commands")
    })
}

/// Starts `a2a-commands serve` on `data_dir` and waits for its "serving" line.
// The child is waited for by `Server`'s Drop; a panic here ends the tool, and the child
// with it (its stderr closes).
#[allow(clippy::zombie_processes)]
pub(crate) fn start_server(
    args: &Args,
    data_dir: &std::path::Path,
    log_file: &std::path::Path,
) -> Server {
    use std::io::{BufRead, BufReader};
    let started = Instant::now();
    let mut child = Command::new(server_binary(args))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--health-listen",
            "127.0.0.1:0",
            "--log-format",
            "text",
        ])
        .args([
            "--max-commands",
            "1000000",
            "--log",
            // The "serving" line is info from the server module: keep it whatever the
            // filter.
            &format!("{},a2a_commands::transport::server=info", args.server_log),
            "--data-dir",
        ])
        .arg(data_dir)
        .args(&args.server_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts (build it first: cargo build --release)");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    // The text line reads `... a2a_commands::transport::server: serving addr=A health_addr=H ...`.
    let field = |line: &str, key: &str| -> SocketAddr {
        line.split_whitespace()
            .find_map(|word| word.strip_prefix(key))
            .and_then(|value| value.parse().ok())
            .expect("an address in the serving line")
    };
    loop {
        let line = lines
            .next()
            .expect("the server printed its serving line")
            .expect("stderr");
        if line.contains("a2a_commands::transport::server: serving ") {
            let addr = field(&line, "addr=");
            let health_addr = field(&line, "health_addr=");
            // Keep draining its log into a file, off the measuring threads' way.
            let log_file = log_file.to_owned();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut out =
                    std::io::BufWriter::new(std::fs::File::create(log_file).expect("log file"));
                for line in lines.map_while(Result::ok) {
                    let _ = writeln!(out, "{line}");
                }
            });
            return Server {
                child,
                addr,
                health_addr,
                started,
            };
        }
    }
}

pub(crate) async fn connect(addr: SocketAddr, n: usize) -> Vec<Channel> {
    let mut channels = Vec::new();
    for _ in 0..n.max(1) {
        let channel = Channel::from_shared(format!("http://{addr}"))
            .expect("uri")
            .tcp_nodelay(true)
            .connect()
            .await
            .expect("connects");
        channels.push(channel);
    }
    channels
}

pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
