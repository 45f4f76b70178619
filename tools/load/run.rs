//! The run: every RPC against the floor, in order, then the table and the totals.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use a2a_commands::pb::{self, command_service_client::CommandServiceClient};
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

use crate::cli::Args;
use crate::measure::{against_floor, measure, MakeCall, SERVER_PID};
use crate::report::{ms, print_table};
use crate::server::{connect, start_server};
use crate::startup::startup;
use crate::workload::{
    complete_request, execute_request, message, prepare, spec, start_echo_handler, write_bodies,
};

pub(crate) async fn run(args: Args) -> ExitCode {
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
    if let Some(dir) = &args.write_bodies {
        let revision = CommandServiceClient::new(channels[0].clone())
            .list_specs(pb::ListSpecsRequest::default())
            .await
            .expect("list")
            .into_inner()
            .revision;
        write_bodies(dir, revision).expect("write the bodies");
        println!("request bodies written to {}", dir.display());
        return ExitCode::SUCCESS;
    }
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

    let current: MakeCall = Arc::new(move |ch, _, _| {
        Box::pin(async move {
            let mut client = CommandServiceClient::new(ch);
            // One full answer to learn the revision, then polls that cost a few bytes.
            static KNOWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let known = KNOWN.load(std::sync::atomic::Ordering::Relaxed);
            let listed = client
                .list_specs(pb::ListSpecsRequest {
                    known_revision: Some(known),
                    ..Default::default()
                })
                .await?
                .into_inner();
            if !listed.unchanged {
                KNOWN.store(listed.revision, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(())
        })
    });
    rows.push(
        against_floor(
            "ListSpecs, current revision",
            &channels,
            c,
            &args,
            &health,
            current,
        )
        .await,
    );

    let complete = |text: &'static str, want: usize| -> MakeCall {
        Arc::new(move |ch, _, _| {
            Box::pin(async move {
                let answer = CommandServiceClient::new(ch)
                    .complete(complete_request(text))
                    .await?
                    .into_inner();
                if answer.values.len() == want {
                    Ok(())
                } else {
                    Err(tonic::Status::internal("wrong suggestions"))
                }
            })
        })
    };
    rows.push(
        against_floor(
            "Complete, names (/cmd-0004)",
            &channels,
            c,
            &args,
            &health,
            complete("/cmd-0004", 10),
        )
        .await,
    );
    rows.push(
        against_floor(
            "Complete, /model values",
            &channels,
            c,
            &args,
            &health,
            complete("/model g", 2),
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
