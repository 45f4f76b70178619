//! The load tool: measures each RPC against the cheapest call the server answers (the
//! floor, `grpc.health.v1.Health/Check`), on the same server, connections and
//! concurrency, in one run.
//!
//! ```sh
//! cargo run --release --bin a2a-commands-load -- --seconds 5
//! ```
//!
//! By default it starts the real `a2a-commands` binary (next to this one) on a
//! temporary directory; `--addr` targets a running server instead. Every call is
//! bounded in count and time, every response's status is checked, and the tool exits
//! non-zero if any call failed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_commands::pb::command_handler_server::{CommandHandler, CommandHandlerServer};
use a2a_commands::pb::command_service_client::CommandServiceClient;
use a2a_commands::pb::{self, part::Content};
use clap::Parser;
use tonic::transport::Channel;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

/// Drives every RPC of a2a-commands and compares it with the gRPC floor.
#[derive(Parser, Debug)]
#[command(name = "a2a-commands-load")]
struct Args {
    /// Target a running server instead of starting one (it must allow Register).
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// The server binary to start [default: a2a-commands next to this tool].
    #[arg(long)]
    server: Option<PathBuf>,
    /// Commands to register before measuring (the registry size for Classify and
    /// Execute; ListSpecs lists them all).
    #[arg(long, default_value_t = 100)]
    commands: usize,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// HTTP/2 connections the calls share.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Seconds each measurement runs.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Seconds of warm-up before each measurement.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Most calls one measurement makes, whatever the time.
    #[arg(long, default_value_t = 2_000_000)]
    max_calls: usize,
    /// The started server's log filter (its per-call lines are at info).
    #[arg(long, default_value = "info")]
    server_log: String,
    /// Also measure start-up time and memory with 10,000 commands (starts the server
    /// several times).
    #[arg(long)]
    startup: bool,
    /// Measure only the RPCs whose row name contains this text (the floor always runs).
    #[arg(long)]
    only: Option<String>,
    /// A quick run that checks every call works (CI): short measurements, no judging.
    #[arg(long)]
    smoke: bool,
}

/// One measured RPC.
struct Measured {
    name: String,
    calls: usize,
    failures: usize,
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

type CallFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), tonic::Status>> + Send>>;

/// Makes call number `i` for worker `w` on `channel`.
type MakeCall = Arc<dyn Fn(Channel, usize, usize) -> CallFuture + Send + Sync>;

async fn measure(
    name: &str,
    channels: &[Channel],
    concurrency: usize,
    args: &Args,
    make: MakeCall,
) -> Measured {
    let skipped = args
        .only
        .as_deref()
        .is_some_and(|only| !name.contains(only) && !name.starts_with("floor"));
    if skipped {
        return Measured {
            name: name.to_owned(),
            calls: 0,
            failures: 0,
            per_second: 0.0,
            p50: Duration::ZERO,
            p99: Duration::ZERO,
        };
    }
    let warmup = Duration::from_secs_f64(if args.smoke { 0.05 } else { args.warmup });
    let run = Duration::from_secs_f64(if args.smoke { 0.2 } else { args.seconds });
    let per_worker_cap = args.max_calls / concurrency.max(1) + 1;
    let mut workers = Vec::new();
    for w in 0..concurrency {
        let channel = channels[w % channels.len()].clone();
        let make = Arc::clone(&make);
        workers.push(tokio::spawn(async move {
            let warm_until = Instant::now() + warmup;
            let mut i = 0;
            while Instant::now() < warm_until && i < per_worker_cap {
                let _ = make(channel.clone(), w, i).await;
                i += 1;
            }
            let mut latencies = Vec::with_capacity(4096);
            let mut failures = 0;
            let started = Instant::now();
            let until = started + run;
            let mut calls = 0;
            while Instant::now() < until && calls < per_worker_cap {
                let t = Instant::now();
                if let Err(status) = make(channel.clone(), w, i).await {
                    if failures == 0 {
                        eprintln!("call failed: {status}");
                    }
                    failures += 1;
                }
                latencies.push(t.elapsed());
                i += 1;
                calls += 1;
            }
            (latencies, failures, started.elapsed())
        }));
    }
    let mut latencies = Vec::new();
    let mut failures = 0;
    let mut elapsed = Duration::ZERO;
    for worker in workers {
        let (l, f, e) = worker.await.expect("worker");
        latencies.extend(l);
        failures += f;
        elapsed = elapsed.max(e);
    }
    latencies.sort_unstable();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    Measured {
        name: name.to_owned(),
        calls: latencies.len(),
        failures,
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: pick(0.50),
        p99: pick(0.99),
    }
}

fn message(id: String, text: &str) -> pb::Message {
    pb::Message {
        message_id: id,
        context_id: "c-load".into(),
        task_id: "t-load".into(),
        role: pb::Role::User.into(),
        parts: vec![pb::Part {
            content: Some(Content::Text(text.into())),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn execute_request(text: &str, i: usize) -> pb::ExecuteRequest {
    pb::ExecuteRequest {
        message: Some(message(format!("m-{i}"), text)),
        task: Some(pb::TaskSnapshot {
            id: "t-load".into(),
            context_id: "c-load".into(),
            name: "Load".into(),
            state: pb::TaskState::Working.into(),
            plan: Some(pb::PlanProgress {
                steps_done: 1,
                steps_total: 3,
            }),
            ..Default::default()
        }),
        sender: Some(pb::Sender {
            id: "load".into(),
            role: pb::ParticipantRole::Assignee.into(),
        }),
        ..Default::default()
    }
}

fn spec(name: String) -> pb::CommandSpec {
    pb::CommandSpec {
        name,
        description: "A command registered by the load tool".into(),
        argument_hint: "[<arg>]".into(),
    }
}

/// A handler that answers at once, to measure what a handler call adds.
struct Echo;

#[tonic::async_trait]
impl CommandHandler for Echo {
    async fn handle(
        &self,
        request: tonic::Request<pb::Invocation>,
    ) -> Result<tonic::Response<pb::HandlerResult>, tonic::Status> {
        let reply = format!("echo {}", request.get_ref().arguments);
        Ok(tonic::Response::new(pb::HandlerResult {
            result: Some(pb::handler_result::Result::Reply(pb::HandlerReply {
                reply,
                ..Default::default()
            })),
        }))
    }
}

async fn start_echo_handler() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CommandHandlerServer::new(Echo))
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            ),
    );
    url
}

/// A started server process and where it listens.
struct Server {
    child: Child,
    addr: SocketAddr,
    health_addr: SocketAddr,
    started: Instant,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_binary(args: &Args) -> PathBuf {
    args.server.clone().unwrap_or_else(|| {
        let me = std::env::current_exe().expect("current exe");
        me.with_file_name("a2a-commands")
    })
}

/// Starts `a2a-commands serve` on `data_dir` and waits for its "serving" line.
fn start_server(args: &Args, data_dir: &std::path::Path, log_file: &std::path::Path) -> Server {
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
            "json",
        ])
        .args([
            "--max-commands",
            "1000000",
            "--log",
            // The "serving" line is info from the server module: keep it whatever the
            // filter.
            &format!("{},a2a_commands::server=info", args.server_log),
            "--data-dir",
        ])
        .arg(data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts (build it first: cargo build --release)");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let parse = |v: &serde_json::Value, key: &str| -> SocketAddr {
        v[key]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("an address")
    };
    loop {
        let line = lines
            .next()
            .expect("the server printed its serving line")
            .expect("stderr");
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if event["message"] == "serving" {
            let addr = parse(&event, "addr");
            let health_addr = parse(&event, "health_addr");
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

async fn connect(addr: SocketAddr, n: usize) -> Vec<Channel> {
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

async fn prepare(channel: &Channel, count: usize, handler_url: &str) {
    let mut client = CommandServiceClient::new(channel.clone());
    // Concurrent registrations share flushes, so preparing 10,000 is quick.
    let mut batch = Vec::new();
    for i in 0..count {
        let mut client = client.clone();
        batch.push(tokio::spawn(async move {
            client
                .register(pb::RegisterRequest {
                    spec: Some(spec(format!("cmd-{i:05}"))),
                    ..Default::default()
                })
                .await
        }));
        if batch.len() == 256 || i + 1 == count {
            for call in batch.drain(..) {
                call.await.expect("task").expect("register");
            }
        }
    }
    client
        .register(pb::RegisterRequest {
            spec: Some(spec("echo".into())),
            handler: Some(pb::HandlerBinding {
                endpoint: Some(pb::handler_binding::Endpoint::Grpc(handler_url.into())),
                timeout_ms: 5_000,
            }),
            ..Default::default()
        })
        .await
        .expect("register the echo handler");
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn print_table(rows: &[Measured]) {
    let floor = &rows[0];
    println!("| rpc | calls | calls/s | p50 ms | p99 ms | calls/s ÷ floor | p99 ÷ floor |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in rows.iter().filter(|r| r.calls > 0) {
        println!(
            "| {} | {} | {:.0} | {} | {} | {:.2} | {:.2} |",
            row.name,
            row.calls,
            row.per_second,
            ms(row.p50),
            ms(row.p99),
            row.per_second / floor.per_second,
            row.p99.as_secs_f64() / floor.p99.as_secs_f64(),
        );
    }
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Start-up time to SERVING and resident memory, empty and with 10,000 commands.
async fn startup(args: &Args) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let log = dir.path().join("server.log");
    let empty = start_server(args, &data, &log);
    let channels = connect(empty.addr, 1).await;
    // Idle: a few calls so the runtime has warmed up, then nothing.
    let mut health = HealthClient::new(channels[0].clone());
    for _ in 0..10 {
        health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .expect("health");
    }
    let idle_empty = rss_kib(empty.child.id());
    prepare(&channels[0], 10_000, "http://127.0.0.1:1").await;
    let loaded_after_registering = rss_kib(empty.child.id());
    drop(channels);
    drop(empty);

    let server = start_server(args, &data, &log);
    // SERVING as a probe sees it: poll the health listener from the spawn.
    let health_channel = Channel::from_shared(format!("http://{}", server.health_addr))
        .expect("uri")
        .connect_lazy();
    let mut health = HealthClient::new(health_channel);
    let to_serving = loop {
        if let Ok(r) = health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
        {
            if r.into_inner().status == 1 {
                break server.started.elapsed();
            }
        }
    };
    let mut api = CommandServiceClient::new(connect(server.addr, 1).await.remove(0));
    let listed = api
        .list_specs(pb::ListSpecsRequest {})
        .await
        .expect("list")
        .into_inner();
    let idle_loaded = rss_kib(server.child.id());
    println!();
    println!("| start-up and memory | value |");
    println!("| --- | ---: |");
    println!("| commands after restart | {} |", listed.commands.len());
    println!(
        "| spawn to SERVING (health listener), 10,000 commands | {} ms |",
        ms(to_serving)
    );
    let mib = |k: Option<u64>| {
        k.map_or("n/a".to_owned(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        })
    };
    println!(
        "| resident memory, idle, empty registry | {} |",
        mib(idle_empty)
    );
    println!(
        "| resident memory, after registering 10,000 | {} |",
        mib(loaded_after_registering)
    );
    println!(
        "| resident memory, idle, restarted with 10,000 | {} |",
        mib(idle_loaded)
    );
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(args))
}

async fn run(args: Args) -> ExitCode {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = match args.addr {
        Some(_) => None,
        None => Some(start_server(
            &args,
            &dir.path().join("data"),
            &dir.path().join("server.log"),
        )),
    };
    let addr = args
        .addr
        .or(server.as_ref().map(|s| s.addr))
        .expect("an address");
    let channels = connect(addr, args.connections).await;
    let handler_url = start_echo_handler().await;
    let commands = if args.smoke {
        args.commands.min(100)
    } else {
        args.commands
    };
    prepare(&channels[0], commands, &handler_url).await;
    println!(
        "a2a-commands load: {} commands registered, {} calls in flight over {} connections, {} s per RPC",
        commands,
        args.concurrency,
        args.connections,
        if args.smoke { 0.2 } else { args.seconds }
    );

    let c = args.concurrency;
    let mut rows = Vec::new();
    let health: MakeCall = Arc::new(|ch, _, _| {
        Box::pin(async move {
            let status = HealthClient::new(ch)
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await?
                .into_inner()
                .status;
            if status == 1 {
                Ok(())
            } else {
                Err(tonic::Status::unavailable("not SERVING"))
            }
        })
    });
    rows.push(measure("floor: Health/Check", &channels, c, &args, health).await);

    let classify = |text: &'static str, want_command: bool| -> MakeCall {
        Arc::new(move |ch, _, i| {
            Box::pin(async move {
                let response = CommandServiceClient::new(ch)
                    .classify(pb::ClassifyRequest {
                        message: Some(message(format!("m-{i}"), text)),
                    })
                    .await?
                    .into_inner();
                let is_command = matches!(
                    response.result,
                    Some(pb::classify_response::Result::Command(_))
                );
                if is_command == want_command {
                    Ok(())
                } else {
                    Err(tonic::Status::internal("wrong classification"))
                }
            })
        })
    };
    rows.push(
        measure(
            "Classify, a command",
            &channels,
            c,
            &args,
            classify("/cmd-00042 some arguments", true),
        )
        .await,
    );
    rows.push(
        measure(
            "Classify, ordinary",
            &channels,
            c,
            &args,
            classify("Please summarise the thread so far.", false),
        )
        .await,
    );

    let execute = |text: &'static str, want: Option<pb::Outcome>| -> MakeCall {
        Arc::new(move |ch, _, i| {
            Box::pin(async move {
                let response = CommandServiceClient::new(ch)
                    .execute(execute_request(text, i))
                    .await?
                    .into_inner();
                let got = match response.result {
                    Some(pb::execute_response::Result::Command(outcome)) => Some(outcome.outcome()),
                    _ => None,
                };
                if got == want {
                    Ok(())
                } else {
                    Err(tonic::Status::internal(format!(
                        "unexpected outcome {got:?}"
                    )))
                }
            })
        })
    };
    rows.push(
        measure(
            "Execute, /status",
            &channels,
            c,
            &args,
            execute("/status", Some(pb::Outcome::Ok)),
        )
        .await,
    );
    rows.push(
        measure(
            "Execute, ordinary",
            &channels,
            c,
            &args,
            execute("hello there", None),
        )
        .await,
    );
    rows.push(
        measure(
            "Execute, gRPC handler",
            &channels,
            c,
            &args,
            execute("/echo hi", Some(pb::Outcome::Ok)),
        )
        .await,
    );

    let list: MakeCall = Arc::new(move |ch, _, _| {
        Box::pin(async move {
            let listed = CommandServiceClient::new(ch)
                .list_specs(pb::ListSpecsRequest {})
                .await?
                .into_inner();
            if listed.commands.len() > commands {
                Ok(())
            } else {
                Err(tonic::Status::internal("too few commands"))
            }
        })
    });
    rows.push(
        measure(
            &format!("ListSpecs ({} commands)", commands + 5),
            &channels,
            c,
            &args,
            list,
        )
        .await,
    );

    let register = |tag: &'static str| -> MakeCall {
        Arc::new(move |ch, w, i| {
            Box::pin(async move {
                let name = format!("load-{tag}-{w}-{i}");
                let response = CommandServiceClient::new(ch)
                    .register(pb::RegisterRequest {
                        spec: Some(spec(name)),
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                if response.outcome() == pb::RegisterOutcome::Created {
                    Ok(())
                } else {
                    Err(tonic::Status::internal("not created"))
                }
            })
        })
    };
    rows.push(
        measure(
            "Register, durable, 1 client",
            &channels,
            1,
            &args,
            register("one"),
        )
        .await,
    );
    rows.push(
        measure(
            "Register, durable, 16 clients",
            &channels,
            16,
            &args,
            register("many"),
        )
        .await,
    );

    print_table(&rows);
    let one = &rows[rows.len() - 2];
    let many = &rows[rows.len() - 1];
    println!();
    println!(
        "Register, 16 clients ÷ 1 client: {:.2}",
        many.per_second / one.per_second
    );
    let floor_p50 = rows[0].p50;
    let handler = rows
        .iter()
        .find(|r| r.name.contains("handler"))
        .expect("handler row");
    println!(
        "Execute with a gRPC handler adds {} ms at p50 over the floor",
        ms(handler.p50.saturating_sub(floor_p50))
    );

    if args.startup && args.addr.is_none() {
        startup(&args).await;
    }
    drop(server);
    let failures: usize = rows.iter().map(|r| r.failures).sum();
    if failures > 0 {
        eprintln!("{failures} calls failed");
        return ExitCode::FAILURE;
    }
    println!(
        "\n{} calls, 0 failed",
        rows.iter().map(|r| r.calls).sum::<usize>()
    );
    ExitCode::SUCCESS
}
