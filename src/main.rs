//! The `a2a-commands` binary: parses flags, sets up logging, serves until a signal.

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use a2a_commands::config::{Cli, Command, LogFormat, ServeArgs, Settings};
use a2a_commands::server;

fn init_logging(args: &ServeArgs) {
    let filter = EnvFilter::try_new(&args.log_filter).unwrap_or_else(|e| {
        eprintln!(
            "a2a-commands: invalid log filter {:?} ({e}); using info",
            args.log_filter
        );
        EnvFilter::new("info")
    });
    use std::io::IsTerminal as _;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// Resolves when SIGTERM or SIGINT arrives.
async fn termination() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    tracing::info!(signal = name, "stopping");
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let settings = Settings::from_args(&args).map_err(|e| e.to_string())?;
    let running = server::start(settings).await.map_err(|e| e.to_string())?;
    termination().await;
    running
        .shutdown()
        .await
        .map_err(|e| format!("server error: {e}"))?;
    tracing::info!("stopped cleanly");
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Command::Serve(args) = cli.command;
    init_logging(&args);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // One clear line for the operator; the log may be JSON or filtered.
            eprintln!("a2a-commands: {message}");
            ExitCode::FAILURE
        }
    }
}
