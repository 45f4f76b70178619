//! What `ctl` prints: one line at a time to standard output, quietly ending when the
//! reader has gone (unless changes are being made).

use std::sync::atomic::{AtomicBool, Ordering};

/// Writes one line to standard output (see [`write_out`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::ctl::output::write_out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Set while `ctl` makes changes: a reader that goes away then does not stop them.
pub(super) static CHANGING: AtomicBool = AtomicBool::new(false);

/// Set once the reader has gone: nothing more is written.
static READER_GONE: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output. A reader that went away (`ctl list | head -1`)
/// ends the process quietly, as other command-line tools end, where `print!` would
/// panic. (Restoring SIGPIPE's default instead would also kill the process when a
/// server closes its socket.)
pub fn write_out(text: &str) {
    use std::io::Write as _;
    if READER_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            if CHANGING.load(Ordering::Relaxed) {
                // Stopping halfway would leave some changes unmade: finish them quietly.
                READER_GONE.store(true, Ordering::Relaxed);
                return;
            }
            std::process::exit(0);
        }
        eprintln!("a2a-commands: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

pub(super) use say;
