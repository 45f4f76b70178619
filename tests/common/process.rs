//! The real `a2a-commands` binary as a child process.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running `a2a-commands serve`.
pub struct ServeProcess {
    pub child: Child,
    pub addr: SocketAddr,
    /// Every log line after the "serving" one, as it arrives.
    pub lines: mpsc::Receiver<String>,
    /// The log lines before the "serving" one.
    pub before: Vec<String>,
    /// The health-only listener's address, when it has one.
    pub health_addr: Option<SocketAddr>,
    /// The front's address, when the front is on.
    pub front_addr: Option<SocketAddr>,
}

pub fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_a2a-commands"))
}

/// `serve` on `data_dir` and 127.0.0.1:0 with JSON logs, plus `extra` flags.
pub fn serve_command(data_dir: &Path, extra: &[&str]) -> Command {
    let mut command = binary();
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--health-listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--data-dir",
        ])
        .arg(data_dir)
        .args(extra)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn forward_lines(stderr: ChildStderr) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl ServeProcess {
    /// Starts the binary and waits for its "serving" log line, which carries the
    /// bound address. Panics with the output if it exits first.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Self {
        let mut child = serve_command(data_dir, extra).spawn().expect("spawns");
        let lines = forward_lines(child.stderr.take().unwrap());
        let mut seen = Vec::new();
        loop {
            // A generous bound that only guards against a hang; readiness is the line.
            let line = match lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => line,
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("no serving line; output so far: {seen:#?}");
                }
            };
            if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) {
                if event["message"] == "serving" {
                    let addr = event["addr"].as_str().unwrap().parse().unwrap();
                    let health_addr = event["health_addr"].as_str().and_then(|a| a.parse().ok());
                    let front_addr = event["front_addr"].as_str().and_then(|a| a.parse().ok());
                    return Self {
                        child,
                        addr,
                        lines,
                        before: seen,
                        health_addr,
                        front_addr,
                    };
                }
            }
            seen.push(line);
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sends signal `name` (`kill -<name>`); after `STOP`, returns once the process is
    /// stopped (`T` in `/proc/<pid>/stat`), since delivery is asynchronous.
    pub fn signal(&self, name: &str) {
        let pid = self.child.id();
        let status = Command::new("kill")
            .args([&format!("-{name}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        if name == "STOP" {
            let stat = format!("/proc/{pid}/stat");
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            // The state is the field after the command's closing parenthesis.
            while !std::fs::read_to_string(&stat).is_ok_and(|s| {
                s.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('T'))
            }) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "pid {pid} not stopped"
                );
                std::thread::yield_now();
            }
        }
    }

    /// Waits for exit and returns the status with the remaining log lines, every one
    /// of them: the thread that forwards them may still be delivering the last.
    pub fn wait(mut self) -> (ExitStatus, Vec<String>) {
        let status = self.child.wait().unwrap();
        (status, self.rest_of_lines())
    }

    /// Every line not yet received, up to the log's end (the process has exited, or is
    /// about to); panics if the log has not ended within 30 s.
    pub fn rest_of_lines(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => return lines,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("the log did not end within 30 s: {lines:#?}")
                }
            }
        }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
