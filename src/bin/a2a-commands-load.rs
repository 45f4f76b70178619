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
    /// Rounds per RPC, each right after its own floor measurement; the round with the
    /// median ratio is reported (the machine's speed drifts between rounds).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// A quick run that checks every call works (CI): short measurements, no judging.
    #[arg(long)]
    smoke: bool,
}

/// One measured RPC.
#[derive(Clone)]
struct Measured {
    /// The floor measured right before it: calls/s, p50 and p99.
    floor: (f64, Duration, Duration),
    /// Server CPU time (user + system, all threads) per call, when the tool started
    /// the server.
    server_cpu: Option<Duration>,
    /// Calls over every round (for the totals).
    calls_all_rounds: usize,
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
            floor: (0.0, Duration::ZERO, Duration::ZERO),
            server_cpu: None,
            calls_all_rounds: 0,
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
    // Server CPU over the measured window (after the warm-up), read beside the workers.
    let cpu_window = tokio::spawn(async move {
        let pid = SERVER_PID.get().copied()?;
        tokio::time::sleep(warmup).await;
        let before = cpu_time(pid)?;
        tokio::time::sleep(run).await;
        Some(cpu_time(pid)? - before)
    });
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
    let server_cpu = cpu_window
        .await
        .ok()
        .flatten()
        .map(|cpu| cpu / u32::try_from(latencies.len().max(1)).unwrap_or(u32::MAX));
    let per_second = latencies.len() as f64 / elapsed.as_secs_f64();
    let (p50, p99) = (pick(0.50), pick(0.99));
    Measured {
        floor: (per_second, p50, p99),
        server_cpu,
        calls_all_rounds: latencies.len(),
        name: name.to_owned(),
        calls: latencies.len(),
        failures,
        per_second,
        p50,
        p99,
    }
}

/// Measures `make` in `args.rounds` rounds, each right after a floor measurement at the
/// same concurrency, and reports the round whose ratio to its own floor is the median.
async fn against_floor(
    name: &str,
    channels: &[Channel],
    concurrency: usize,
    args: &Args,
    floor: &MakeCall,
    make: MakeCall,
) -> Measured {
    let mut rounds = Vec::new();
    for _ in 0..args.rounds.max(1) {
        let base = measure("floor", channels, concurrency, args, Arc::clone(floor)).await;
        let mut row = measure(name, channels, concurrency, args, Arc::clone(&make)).await;
        if row.calls == 0 {
            return row;
        }
        row.floor = (base.per_second, base.p50, base.p99);
        rounds.push(row);
    }
    rounds.sort_by(|a, b| (a.per_second / a.floor.0).total_cmp(&(b.per_second / b.floor.0)));
    let median = rounds.len() / 2;
    let failures = rounds.iter().map(|r| r.failures).sum();
    let calls = rounds.iter().map(|r| r.calls).sum::<usize>();
    let mut row = rounds.swap_remove(median);
    row.failures = failures;
    row.calls_all_rounds = calls;
    row
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
// The child is waited for by `Server`'s Drop; a panic here ends the tool, and the child
// with it (its stderr closes).
#[allow(clippy::zombie_processes)]
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
            "text",
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
    // The text line reads `... a2a_commands::server: serving addr=A health_addr=H ...`.
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
        if line.contains("a2a_commands::server: serving ") {
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
    println!("| rpc | calls | calls/s | p50 ms | p99 ms | calls/s ÷ floor | p99 ÷ floor | server CPU µs/call |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in rows.iter().filter(|r| r.calls > 0) {
        let cpu = row.server_cpu.map_or_else(
            || "n/a".to_owned(),
            |c| format!("{:.1}", c.as_secs_f64() * 1e6),
        );
        println!(
            "| {} | {} | {:.0} | {} | {} | {:.2} | {:.2} | {} |",
            row.name,
            row.calls,
            row.per_second,
            ms(row.p50),
            ms(row.p99),
            row.per_second / row.floor.0,
            row.p99.as_secs_f64() / row.floor.2.as_secs_f64(),
            cpu,
        );
    }
}

/// The started server's pid, for its CPU time and memory.
static SERVER_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// User plus system CPU time of all of `pid`'s threads so far.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // The kernel reports in USER_HZ, 100 per second on Linux.
    Some(Duration::from_millis(ticks * 10))
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
        .list_specs(pb::ListSpecsRequest::default())
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
    if let Some(server) = &server {
        let _ = SERVER_PID.set(server.child.id());
    }
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
    rows.push(
        measure(
            "floor: Health/Check",
            &channels,
            c,
            &args,
            Arc::clone(&health),
        )
        .await,
    );

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
        against_floor(
            "Classify, a command",
            &channels,
            c,
            &args,
            &health,
            classify("/cmd-00042 some arguments", true),
        )
        .await,
    );
    rows.push(
        against_floor(
            "Classify, ordinary",
            &channels,
            c,
            &args,
            &health,
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
        against_floor(
            "Execute, /status",
            &channels,
            c,
            &args,
            &health,
            execute("/status", Some(pb::Outcome::Ok)),
        )
        .await,
    );
    rows.push(
        against_floor(
            "Execute, ordinary",
            &channels,
            c,
            &args,
            &health,
            execute("hello there", None),
        )
        .await,
    );
    rows.push(
        against_floor(
            "Execute, gRPC handler",
            &channels,
            c,
            &args,
            &health,
            execute("/echo hi", Some(pb::Outcome::Ok)),
        )
        .await,
    );

    let list: MakeCall = Arc::new(move |ch, _, _| {
        Box::pin(async move {
            let listed = CommandServiceClient::new(ch)
                .list_specs(pb::ListSpecsRequest::default())
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
        against_floor(
            &format!("ListSpecs ({} commands)", commands + 5),
            &channels,
            c,
            &args,
            &health,
            list,
        )
        .await,
    );

    let register = |tag: &'static str| -> MakeCall {
        Arc::new(move |ch, w, i| {
            Box::pin(async move {
                // Unique across rounds: every call registers a new name.
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let name = format!("load-{tag}-{w}-{i}-{n}");
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
        against_floor(
            "Register, durable, 1 client",
            &channels,
            1,
            &args,
            &health,
            register("one"),
        )
        .await,
    );
    rows.push(
        against_floor(
            "Register, durable, 16 clients",
            &channels,
            16,
            &args,
            &health,
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
    let floor_p50 = rows
        .iter()
        .find(|r| r.name.contains("handler"))
        .map_or(Duration::ZERO, |r| r.floor.1);
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
        "\n{} calls (all rounds, floors not counted), 0 failed",
        rows.iter().map(|r| r.calls_all_rounds).sum::<usize>()
    );
    ExitCode::SUCCESS
}
