//! What an operator meets first, with the real binary: `ctl check` judging a file as
//! `serve` does, the address forms `ctl` accepts, imports that go on past a failure, a
//! closed pipe, overrides that never widen access, and errors that say what to do.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::process::{binary, serve_command, ServeProcess};
use serde_json::{json, Value};

/// `ctl` with none of the environment's settings, so only `args` count.
fn ctl(args: &[&str]) -> Command {
    let mut command = binary();
    command
        .arg("ctl")
        .args(args)
        .env_remove("A2A_COMMANDS_ADMIN_TOKEN_FILE")
        .env_remove("A2A_COMMANDS_ADMIN_TOKEN")
        .env_remove("A2A_COMMANDS_ADDR")
        .env_remove("A2A_COMMANDS_HANDLER_MAX_TIMEOUT_MS")
        .env_remove("A2A_COMMANDS_HANDLER_SECRETS_DIR")
        .env_remove("A2A_COMMANDS_HANDLER_ALLOWED_HOSTS");
    command
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write_file(path: &Path, commands: Value) {
    std::fs::write(path, json!({ "commands": commands }).to_string()).unwrap();
}

#[test]
fn check_judges_a_file_as_serve_does() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("commands.json");
    write_file(
        &file,
        json!([
            {"name": "slow", "description": "Slow", "handler": {"grpc": "http://127.0.0.1:7000", "timeout_ms": 60000}},
            {"name": "secret", "description": "Secret", "handler": {"json_rpc": "http://127.0.0.1:7001/c",
                "headers": [{"name": "authorization", "value_file": "token"}]}}
        ]),
    );
    let checked = ctl(&["check", file.to_str().unwrap()]).output().unwrap();
    assert!(!checked.status.success(), "{checked:?}");
    let problems = stderr(&checked);
    assert!(
        problems.contains("commands[0].handler.timeout_ms: must be at most 30000"),
        "{problems}"
    );
    assert!(
        problems.contains("commands[1].handler.headers"),
        "{problems}"
    );

    // serve refuses the same file, for the same reasons.
    let served = serve_command(
        &dir.path().join("data"),
        &["--commands-file", file.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(!served.status.success());
    let refused = stderr(&served);
    assert!(refused.contains("must be at most 30000"), "{refused}");

    // With the limits serve would be given, both pass.
    let secrets = dir.path().join("secrets");
    std::fs::create_dir(&secrets).unwrap();
    let limits = [
        "--handler-max-timeout-ms",
        "60000",
        "--handler-secrets-dir",
        secrets.to_str().unwrap(),
    ];
    let checked = ctl(&["check", file.to_str().unwrap()])
        .args(limits)
        .output()
        .unwrap();
    assert!(checked.status.success(), "{checked:?}");
    let process = ServeProcess::start(
        &dir.path().join("data"),
        &[&["--commands-file", file.to_str().unwrap()][..], &limits].concat(),
    );
    drop(process);
}

#[test]
fn ctl_takes_host_port_or_a_url_and_explains_connection_failures() {
    let dir = tempfile::tempdir().unwrap();
    let process = ServeProcess::start(&dir.path().join("data"), &[]);
    for addr in [process.addr.to_string(), process.url()] {
        let listed = ctl(&["--addr", &addr, "list", "--json"]).output().unwrap();
        assert!(listed.status.success(), "{addr}: {listed:?}");
        let listing: Value = serde_json::from_slice(&listed.stdout).unwrap();
        assert_eq!(
            listing["commands"].as_array().unwrap().len(),
            4,
            "the built-ins"
        );
    }
    let wrong = ctl(&["--addr", "ftp://127.0.0.1:1", "list"])
        .output()
        .unwrap();
    assert!(
        stderr(&wrong).contains("use host:port, http://host:port, or https://host:port"),
        "{wrong:?}"
    );

    // A port nothing listens on: the cause and what to do, not "transport error" alone.
    // Held bound, never listened on, so that no other test's server can take it.
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = held.local_addr().unwrap().port();
    let refused = ctl(&["--addr", &format!("127.0.0.1:{port}"), "list"])
        .output()
        .unwrap();
    let line = stderr(&refused);
    assert!(line.contains("Connection refused"), "{line}");
    assert!(line.contains("A2A_COMMANDS_ADDR"), "{line}");
}

#[test]
fn register_from_a_file_goes_on_past_a_failure_and_fails_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let process = ServeProcess::start(
        &dir.path().join("data"),
        &["--handler-allowed-hosts", "handlers.internal"],
    );
    let file = dir.path().join("commands.json");
    write_file(
        &file,
        json!([
            {"name": "first", "description": "First"},
            {"name": "blocked", "description": "Blocked", "handler": {"grpc": "http://127.0.0.1:7000"}},
            {"name": "third", "description": "Third"}
        ]),
    );
    let output = ctl(&[
        "--addr",
        &process.url(),
        "register",
        "--file",
        file.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(!output.status.success());
    assert_eq!(stdout(&output), "/first: created\n/third: created\n");
    let errors = stderr(&output);
    assert!(errors.contains("/blocked: INVALID_ARGUMENT"), "{errors}");
    assert!(
        errors.contains("1 of 3 commands were not registered"),
        "{errors}"
    );
}

/// A standard output whose reader has already gone, as in `ctl list | head -0`.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_reader_that_goes_away_ends_ctl_quietly_but_never_halfway_through_changes() {
    let dir = tempfile::tempdir().unwrap();
    let process = ServeProcess::start(&dir.path().join("data"), &[]);
    let listed = ctl(&["--addr", &process.url(), "list"])
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    assert!(listed.stderr.is_empty(), "{listed:?}");

    // Changes go on to the end, and the exit status says how they went.
    let many: Vec<Value> = (0..20)
        .map(|i| json!({"name": format!("c{i}"), "description": "x"}))
        .collect();
    let file = dir.path().join("commands.json");
    write_file(&file, Value::Array(many));
    let imported = ctl(&["--addr", &process.url(), "import", file.to_str().unwrap()])
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(imported.status.code(), Some(0), "{imported:?}");
    let listed = ctl(&["--addr", &process.url(), "list", "--json"])
        .output()
        .unwrap();
    let listing: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listing["commands"].as_array().unwrap().len(), 4 + 20);
}

#[test]
fn an_override_keeps_access_unless_told_to_replace_it() {
    let dir = tempfile::tempdir().unwrap();
    let process = ServeProcess::start(&dir.path().join("data"), &[]);
    let url = process.url();
    let register = |extra: &[&str]| {
        let output = ctl(&[
            "--addr",
            &url,
            "register",
            "--name",
            "deploy",
            "--description",
            "Deploy",
        ])
        .args(extra)
        .output()
        .unwrap();
        assert!(output.status.success(), "{output:?}");
    };
    let access = || {
        let listed = ctl(&["--addr", &url, "list", "--json"]).output().unwrap();
        let listing: Value = serde_json::from_slice(&listed.stdout).unwrap();
        let deploy = listing["commands"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "deploy")
            .unwrap()
            .clone();
        (deploy["roles"].clone(), deploy["hidden"].clone())
    };
    register(&["--role", "admin", "--hidden"]);
    let restricted = access();
    assert_eq!(restricted, (json!(["admin"]), json!(true)));
    // What a gateway does at every start: the same spec with override, no access.
    register(&["--override"]);
    assert_eq!(access(), restricted);
    register(&["--override", "--replace-access"]);
    assert_eq!(access(), (Value::Null, json!(false)));
}

#[test]
fn listen_errors_say_what_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let output = binary()
        .args(["serve", "--listen", "50051", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let line = stderr(&output);
    assert!(
        line.contains("127.0.0.1:50051 (loopback) or 0.0.0.0:50051"),
        "{line}"
    );
    let output = binary()
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .env("A2A_COMMANDS_LISTEN", "nowhere")
        .output()
        .unwrap();
    let line = stderr(&output);
    assert!(line.contains("A2A_COMMANDS_"), "{line}");
    assert!(line.contains("expected ip:port"), "{line}");
}

#[test]
fn a_port_in_use_names_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().to_string();
    let output = binary()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--health-listen",
            &port,
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let line = stderr(&output);
    assert!(
        line.contains(&format!("cannot listen on {port} (--health-listen)")),
        "{line}"
    );
    assert!(line.contains("another port"), "{line}");
}

#[test]
fn a_data_directory_that_is_a_file_and_an_empty_salvage_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, "").unwrap();
    let output = serve_command(&file, &[]).output().unwrap();
    assert!(stderr(&output).contains("is not a directory"), "{output:?}");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = binary()
        .args(["salvage", "--data-dir"])
        .arg(&empty)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(stderr(&output).contains("holds no store"), "{output:?}");
}

#[test]
fn a_full_registry_names_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let process = ServeProcess::start(&dir.path().join("data"), &["--max-commands", "4"]);
    let output = ctl(&[
        "--addr",
        &process.url(),
        "register",
        "--name",
        "more",
        "--description",
        "More",
    ])
    .output()
    .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("raise --max-commands"),
        "{output:?}"
    );
}

#[test]
fn print_config_shows_the_effective_settings() {
    let dir = tempfile::tempdir().unwrap();
    let output = binary()
        .args([
            "serve",
            "--print-config",
            "--builtins",
            "status,model",
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .env("A2A_COMMANDS_MAX_COMMANDS", "77")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let config: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(config["builtins"], json!(["status", "model"]));
    assert_eq!(config["max_commands"], 77);
    assert_eq!(config["listen"], "127.0.0.1:50051");
    assert_eq!(config["handler_max_timeout_ms"], 30000);
    assert!(
        !dir.path().join("data").exists(),
        "printing serves nothing and opens nothing"
    );
}

#[test]
fn tls_failures_say_which_flag_is_missing() {
    let pki = common::pki::pki();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (cert, key, ca) = (
        write("server.pem", &pki.server.0),
        write("server.key", &pki.server.1),
        write("ca.pem", &pki.ca),
    );
    let (client_cert, client_key) = (
        write("client.pem", &pki.client.0),
        write("client.key", &pki.client.1),
    );
    let process = ServeProcess::start(
        &dir.path().join("data"),
        &[
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--tls-client-ca",
            &ca,
        ],
    );
    let url = format!("https://localhost:{}", process.addr.port());
    let unknown_ca = ctl(&["--addr", &url, "list"]).output().unwrap();
    assert!(!unknown_ca.status.success());
    assert!(stderr(&unknown_ca).contains("--tls-ca"), "{unknown_ca:?}");

    let no_client_cert = ctl(&["--addr", &url, "--tls-ca", &ca, "list"])
        .output()
        .unwrap();
    assert!(!no_client_cert.status.success());
    assert!(
        stderr(&no_client_cert).contains("--tls-cert and --tls-key"),
        "{no_client_cert:?}"
    );

    let served = ctl(&[
        "--addr",
        &url,
        "--tls-ca",
        &ca,
        "--tls-cert",
        &client_cert,
        "--tls-key",
        &client_key,
        "list",
    ])
    .output()
    .unwrap();
    assert!(served.status.success(), "{served:?}");
}

/// The log lines a server prints up to and including its "serving" line, parsed.
fn start_lines(data_dir: &Path, extra: &[&str]) -> (std::process::Child, Vec<Value>) {
    use std::io::BufRead as _;
    let mut child = serve_command(data_dir, extra).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap_or(Value::Null);
        let serving = event["message"] == "serving";
        lines.push(event);
        if serving {
            return (child, lines);
        }
    }
    let _ = child.wait();
    panic!("no serving line: {lines:#?}");
}

#[test]
fn the_start_line_names_the_effective_configuration_and_raised_limits_are_warned() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (mut child, lines) = start_lines(
        &data,
        &[
            "--builtins",
            "status",
            "--models",
            "a,b",
            "--default-model",
            "b",
            "--max-request-memory-mib",
            "1",
        ],
    );
    let _ = child.kill();
    let _ = child.wait();
    let serving = lines.last().unwrap();
    assert_eq!(serving["data_dir"], data.display().to_string());
    assert_eq!(serving["builtins"], "status");
    assert_eq!(serving["models"], "a,b");
    assert_eq!(serving["default_model"], "b");
    assert_eq!(serving["commands_file"], "none");
    assert_eq!(serving["admin_token"], false);
    let warned = lines.iter().any(|l| {
        l["level"] == "WARN"
            && l["message"]
                .as_str()
                .unwrap_or("")
                .contains("--max-request-memory-mib")
    });
    assert!(warned, "{lines:#?}");
}

#[test]
fn an_unreadable_token_file_refuses_changes_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret").unwrap();
    let process = ServeProcess::start(
        &dir.path().join("data"),
        &["--admin-token-file", token.to_str().unwrap()],
    );
    std::fs::write(&token, "").unwrap();
    let output = ctl(&[
        "--addr",
        &process.url(),
        "--token",
        "s3cret",
        "register",
        "--name",
        "x",
        "--description",
        "X",
    ])
    .output()
    .unwrap();
    assert!(!output.status.success());
    let line = stderr(&output);
    assert!(line.contains("UNAVAILABLE"), "{line}");
    assert!(
        line.contains("changes are refused until the server can read its admin token file"),
        "{line}"
    );
    // Why, with the path, only in the server's log: the caller is not known yet.
    assert!(!line.contains(token.to_str().unwrap()), "{line}");
    // The line is logged before the call is answered; the bound only stops a hang.
    let logged = std::iter::from_fn(|| {
        process
            .lines
            .recv_timeout(std::time::Duration::from_secs(30))
            .ok()
    })
    .any(|l| l.contains("is empty") && l.contains("admin token"));
    assert!(logged, "the log names the cause");
}
