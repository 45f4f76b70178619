//! The `a2a-commands` binary: parses flags, sets up logging, serves until a signal.

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use a2a_commands::config::{Cli, Command, LogFormat, SalvageArgs, ServeArgs, Settings};
use a2a_commands::registry::{commands_file, salvage};
use a2a_commands::telemetry::logs::WithSpanIds;
use a2a_commands::transport::{call_log, server};

/// mimalloc, not glibc's malloc: the service allocates small, short-lived values at
/// every request (JSON, headers, futures), where glibc's free lists cost more than the
/// work itself (BENCHMARKS.md, issue 50).
#[global_allocator]
static ALLOCATOR: Mimalloc = Mimalloc;

/// mimalloc's plain calls for what every block of it already satisfies (the `mimalloc`
/// crate asks for an aligned block at every call, a longer path, which for a block over
/// 1 KiB whose size is not a power of two over-allocates and then aligns).
struct Mimalloc;

/// The alignment every mimalloc block has: a word (its block sizes are whole words, its
/// pages' first blocks aligned further). Not so with mimalloc's guarded debug blocks
/// (the `debug` feature and `MIMALLOC_GUARDED_PRECISE`), which this build does not use.
const PLAIN_ALIGN: usize = std::mem::size_of::<usize>();

// SAFETY: each call hands mimalloc's pointer through unchanged; a layout aligned past a
// word goes to mimalloc's aligned calls, and every block comes back through `mi_free`,
// which takes either kind.
unsafe impl std::alloc::GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        if layout.align() <= PLAIN_ALIGN {
            mi::mi_malloc(layout.size()).cast()
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        if layout.align() <= PLAIN_ALIGN {
            mi::mi_zalloc(layout.size()).cast()
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        libmimalloc_sys::mi_free(ptr.cast());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        use libmimalloc_sys as mi;
        if layout.align() <= PLAIN_ALIGN {
            mi::mi_realloc(ptr.cast(), size).cast()
        } else {
            mi::mi_realloc_aligned(ptr.cast(), size, layout.align()).cast()
        }
    }
}

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_t` (the crate names no constant
/// for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Memory freed goes back to the system at once. mimalloc's default keeps it a second
/// and purges it on its later work: a burst of large requests (each up to 9 MiB of the
/// request budget, often freed on another thread than the one that made it) then peaked
/// 10-25 MiB higher than with memory given back at once, and once over the manifests'
/// memory limit. Small values, what every request allocates, are reused from pages kept
/// by their thread, so this costs the hot path nothing (no `madvise` under the front's
/// load). `MIMALLOC_PURGE_DELAY` (or its old name `MIMALLOC_RESET_DELAY`) in the
/// environment still wins.
fn return_freed_memory_promptly() {
    let set_outside = ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some());
    if !set_outside {
        // SAFETY: sets one of mimalloc's options (a plain store, read at each purge);
        // called first in `main`, before any other thread exists to read it.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

/// Sets up logging; the returned guard flushes the log when dropped.
fn init_logging(args: &ServeArgs) -> tracing_appender::non_blocking::WorkerGuard {
    let filter = EnvFilter::try_new(&args.log_filter).unwrap_or_else(|e| {
        eprintln!(
            "a2a-commands: invalid log filter {:?} ({e}); using info",
            args.log_filter
        );
        EnvFilter::new("info")
    });
    use std::io::IsTerminal as _;
    // Lines are written by a background thread, so a call never waits for stderr; under
    // an extreme burst, lines are dropped rather than calls slowed.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(true)
        .thread_name("log-writer")
        // Buffered: the writer thread flushes whenever its queue runs empty, so a burst
        // of lines costs a few system calls, not one each.
        .finish(std::io::BufWriter::with_capacity(
            64 * 1024,
            std::io::stderr(),
        ));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(writer);
    // Lines written while a span is current name it (traces on only).
    match args.log_format {
        LogFormat::Text => {
            let format = tracing_subscriber::fmt::format();
            builder.event_format(WithSpanIds(format)).init()
        }
        LogFormat::Json => {
            let format = tracing_subscriber::fmt::format().json().flatten_event(true);
            builder
                .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
                .event_format(WithSpanIds(format))
                .init()
        }
    }
    call_log::start(match args.log_format {
        LogFormat::Text => call_log::Format::Text,
        LogFormat::Json => call_log::Format::Json,
    });
    guard
}

/// Resolves when SIGTERM or SIGINT arrives. The handlers are installed when this is
/// called, not when it is first polled: before the server says it is serving, so a
/// signal right after that line drains instead of killing the process.
fn termination() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "stopping");
    }
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let settings = Settings::from_args(&args).map_err(|e| e.to_string())?;
    let stop = termination();
    let running = server::start(settings).await.map_err(|e| e.to_string())?;
    stop.await;
    let stopped = running.shutdown().await;
    // Every call has ended: their lines go out before the last ones.
    call_log::stop();
    stopped.map_err(|e| format!("server error: {e}"))?;
    tracing::info!("stopped cleanly");
    Ok(())
}

/// `salvage`: what a (damaged) data directory still holds, as a commands file; every
/// record that could not be read is named on stderr.
fn salvage_to_file(args: &SalvageArgs) -> Result<(), String> {
    let salvaged = salvage(&args.data_dir).map_err(|e| {
        format!(
            "cannot read data directory {}: {e}",
            args.data_dir.display()
        )
    })?;
    for problem in &salvaged.problems {
        eprintln!("a2a-commands: skipped: {problem}");
    }
    let text = commands_file::render_registered(&salvaged.commands);
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => a2a_commands::ctl::write_out(&text),
    }
    eprintln!(
        "a2a-commands: salvaged {} commands ({} records skipped); built-ins come from configuration and are not listed",
        salvaged.commands.iter().filter(|c| c.source != a2a_commands::registry::Source::Builtins).count(),
        salvaged.problems.len()
    );
    Ok(())
}

fn main() -> ExitCode {
    return_freed_memory_promptly();
    let cli = Cli::parse();
    let args = match cli.command {
        Command::Serve(args) => *args,
        Command::Ctl(args) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            return match runtime.block_on(a2a_commands::ctl::run(*args)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("a2a-commands ctl: {message}");
                    ExitCode::FAILURE
                }
            };
        }
        Command::Salvage(args) => {
            return match salvage_to_file(&args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("a2a-commands: {message}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    if args.print_config {
        return match Settings::from_args(&args) {
            Ok(settings) => {
                a2a_commands::ctl::write_out(&format!("{:#}\n", settings.describe()));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("a2a-commands: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let log = init_logging(&args);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(serve(args));
    drop(runtime);
    // Flush the log first, so that an error line below is the last thing printed.
    drop(log);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // One clear line for the operator; the log may be JSON or filtered.
            eprintln!("a2a-commands: {message}");
            ExitCode::FAILURE
        }
    }
}
