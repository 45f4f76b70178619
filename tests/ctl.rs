//! `a2a-commands ctl`, the real binary against a real server: every verb, the admin
//! token from a file, one-line errors, and `check` on good and bad files offline.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::process::{binary, ServeProcess};
use serde_json::{json, Value};

fn ctl(addr: &str, token: Option<&Path>, args: &[&str]) -> Output {
    let mut command = binary();
    command
        .arg("ctl")
        .args(["--addr", &format!("http://{addr}")])
        .args(args)
        .env_remove("A2A_COMMANDS_ADMIN_TOKEN_FILE")
        .env_remove("A2A_COMMANDS_ADMIN_TOKEN")
        .env_remove("A2A_COMMANDS_ADDR");
    if let Some(token) = token {
        command.env("A2A_COMMANDS_ADMIN_TOKEN_FILE", token);
    }
    command.output().unwrap()
}

fn ok(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn failed(output: &Output) -> String {
    assert!(!output.status.success(), "{output:?}");
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn every_verb_against_a_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let process = ServeProcess::start(
        &dir.path().join("data"),
        &["--admin-token-file", token.to_str().unwrap()],
    );
    let addr = process.addr.to_string();

    // Without the token: one clear line, non-zero.
    let refused = ctl(
        &addr,
        None,
        &["register", "--name", "deploy", "--description", "Deploy"],
    );
    let line = failed(&refused);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with("a2a-commands ctl: /deploy: UNAUTHENTICATED: "),
        "{line}"
    );

    let out = ok(&ctl(
        &addr,
        Some(&token),
        &[
            "register",
            "--name",
            "deploy",
            "--description",
            "Deploy it",
            "--hint",
            "<env>",
            "--grpc",
            "http://127.0.0.1:7000",
            "--role",
            "admin",
            "--hidden",
        ],
    ));
    assert_eq!(out, "/deploy: created\n");

    let table = ok(&ctl(&addr, None, &["list"]));
    assert!(table.contains("/deploy"), "{table}");
    assert!(table
        .lines()
        .any(|l| l.starts_with("/deploy") && l.contains("admin") && l.contains("(hidden)")));
    let listed: Value = serde_json::from_str(&ok(&ctl(&addr, None, &["list", "--json"]))).unwrap();
    let deploy = listed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "deploy")
        .unwrap();
    assert_eq!(deploy["handler"], json!({"grpc": "http://127.0.0.1:7000"}));
    assert_eq!(deploy["roles"], json!(["admin"]));

    // Export, then import into a second server: the same commands.
    let exported = dir.path().join("exported.json");
    ok(&ctl(
        &addr,
        None,
        &["export", "--output", exported.to_str().unwrap()],
    ));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    assert_eq!(
        file["commands"].as_array().unwrap().len(),
        1,
        "built-ins are not exported"
    );
    assert_eq!(file["commands"][0]["hidden"], true);
    ok(&ctl(&addr, None, &["check", exported.to_str().unwrap()]));

    let other = ServeProcess::start(&dir.path().join("other"), &[]);
    let other_addr = other.addr.to_string();
    let imported = ok(&ctl(
        &other_addr,
        None,
        &["import", exported.to_str().unwrap()],
    ));
    assert_eq!(imported, "/deploy: created\n");
    let again: Value =
        serde_json::from_str(&ok(&ctl(&other_addr, None, &["list", "--json"]))).unwrap();
    let names = |v: &Value| -> Vec<String> {
        v["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&again), names(&listed));

    // register --file, watch, unregister.
    let more = dir.path().join("more.json");
    std::fs::write(
        &more,
        json!({"commands": [{"name": "review", "description": "Review"}]}).to_string(),
    )
    .unwrap();
    let mut watch = binary()
        .args(["ctl", "--addr", &format!("http://{addr}"), "watch"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.starts_with("revision ") && first.contains("/deploy"),
        "{first}"
    );
    ok(&ctl(
        &addr,
        Some(&token),
        &["register", "--file", more.to_str().unwrap()],
    ));
    let second = lines.next().unwrap().unwrap();
    assert!(second.ends_with("/deploy /review"), "{second}");
    watch.kill().unwrap();
    watch.wait().unwrap();
    let out = ok(&ctl(
        &addr,
        Some(&token),
        &["unregister", "review", "deploy"],
    ));
    assert_eq!(out.lines().count(), 2, "{out}");
    let missing = failed(&ctl(&addr, Some(&token), &["unregister", "review"]));
    assert!(missing.contains("NOT_FOUND"), "{missing}");
}

#[test]
fn check_reports_every_problem_offline() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        json!({"commands": [
            {"name": "Bad", "description": "x"},
            {"name": "ok", "description": "Fine", "handler": {"grpc": "ftp://h"}},
            {"name": "ok", "description": "Twice"},
            {"name": "role", "description": "R", "roles": ["owner"]}
        ]})
        .to_string(),
    )
    .unwrap();
    // No server: check never connects.
    let output = Command::new(env!("CARGO_BIN_EXE_a2a-commands"))
        .args(["ctl", "--addr", "http://127.0.0.1:1", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    let stderr = failed(&output);
    assert!(stderr.contains("commands[0].name: must match"), "{stderr}");
    assert!(
        stderr.contains("commands[1].handler.grpc: must be an http"),
        "{stderr}"
    );
    assert!(
        stderr.contains("commands[2].name: \"ok\" is listed twice"),
        "{stderr}"
    );
    assert!(stderr.contains("owner"), "{stderr}");
    let good = dir.path().join("good.json");
    std::fs::write(
        &good,
        r#"{"commands": [{"name": "ok", "description": "Fine"}]}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_a2a-commands"))
        .args(["ctl", "check"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(ok(&output).contains("valid"));
}

/// `ctl check` judges the front's settings as `serve` would: valid ones are said, a
/// mistyped one is named in one line.
#[test]
fn check_judges_the_front_settings() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, r#"{"commands": []}"#).unwrap();
    let check = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_a2a-commands"))
            .args(["ctl", "check"])
            .arg(&good)
            .args(extra)
            .env_remove("A2A_COMMANDS_FRONT_UPSTREAM")
            .output()
            .unwrap()
    };
    let valid = check(&["--front-upstream", "http://127.0.0.1:9999/agent"]);
    assert!(ok(&valid).contains("front settings: valid"));
    let wrong = check(&["--front-upstream", "ftp://agent"]);
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("front-upstream"), "{stderr}");
    let role = check(&[
        "--front-upstream",
        "http://a:1",
        "--front-default-role",
        "root",
    ]);
    assert!(String::from_utf8_lossy(&role.stderr).contains("front-default-role"));
    // Verified callers: a key set needs an issuer and an audience, and a key set file
    // must hold a usable key.
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#).unwrap();
    let jwt = |extra: &[&str]| {
        let mut args = vec!["--front-upstream", "http://a:1"];
        args.extend_from_slice(extra);
        let output = check(&args);
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (passed, stderr) = jwt(&["--front-jwt-jwks-url", "https://issuer.test/jwks"]);
    assert!(!passed && stderr.contains("front-jwt-issuer"), "{stderr}");
    let (passed, stderr) = jwt(&[
        "--front-jwt-jwks-url",
        "https://issuer.test/jwks",
        "--front-jwt-issuer",
        "https://issuer.test",
    ]);
    assert!(!passed && stderr.contains("front-jwt-audience"), "{stderr}");
    let (passed, stderr) = jwt(&[
        "--front-jwt-jwks-file",
        jwks.to_str().unwrap(),
        "--front-jwt-issuer",
        "https://issuer.test",
        "--front-jwt-audience",
        "front",
    ]);
    assert!(
        !passed && stderr.contains("no usable signing key"),
        "{stderr}"
    );
    let (passed, stderr) = jwt(&[
        "--front-jwt-jwks-url",
        "https://issuer.test/jwks",
        "--front-jwt-issuer",
        "https://issuer.test",
        "--front-jwt-audience",
        "front",
    ]);
    assert!(passed, "{stderr}");
}

/// `--version` names the version and the commit the binary was built from (or says it
/// is unknown, for a build without git and without A2A_COMMANDS_COMMIT).
#[test]
fn version_names_the_commit() {
    let output = binary().arg("--version").output().unwrap();
    assert!(output.status.success());
    let line = String::from_utf8(output.stdout).unwrap();
    let pattern = format!(
        r"^a2a-commands {} \(commit ([0-9a-f]{{7,40}}|unknown)\)\n$",
        regex::escape(env!("CARGO_PKG_VERSION"))
    );
    assert!(
        regex::Regex::new(&pattern).unwrap().is_match(&line),
        "{line:?}"
    );
}
