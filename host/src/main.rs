//! The `wrepl` command line: makes the process non-dumpable, starts the
//! async runtime, runs the parsed command (see [`cli`]) and maps its outcome
//! to the exit status — the command's own status, or 2 when it could not run.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than glibc's malloc: an inner call and an evaluation
/// allocate and free many small objects across the runtime's threads, where
/// glibc spent 12-15 % of an inner call's time and trimmed and re-faulted
/// pages (measured in bench/README.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

fn main() -> ExitCode {
    // First of all: no core dumps, and no other process of the user may
    // ptrace wrepl or read its memory or /proc/<pid>/environ (API keys).
    if let Err(e) = wrepl::confinement::set_not_dumpable() {
        eprintln!("wrepl: warning: cannot make the process non-dumpable (PR_SET_DUMPABLE): {e}");
    }
    // A panic that is caught (a tool's, turned into a tool error) still goes
    // through the hook: print one capped line, not a megabyte of message.
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!(
            "wrepl: internal panic{at}: {}",
            wrepl::text::terminal_safe(&wrepl::text::panic_line(info.payload()))
        );
    }));
    let cli = cli::Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("wrepl: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // Traces, when the standard OTEL_* variables ask for them: set up
    // before the command, flushed (within a short bound) after it.
    if let Err(e) = wrepl::telemetry::init_from_env() {
        eprintln!("wrepl: warning: traces are not exported: {}", wrepl::text::terminal_safe(&e.to_string()));
    }
    let code = match rt.block_on(cli::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            // Messages may quote stored or configured text (a forged log,
            // a settings key): nothing in them may drive the terminal.
            eprintln!("wrepl: {}", wrepl::text::terminal_safe(&report(&e)));
            ExitCode::from(2)
        }
    };
    wrepl::telemetry::shutdown(std::time::Duration::from_secs(2));
    code
}

/// An error and its causes on one line, each cause once: a cause whose text
/// an outer message already includes is not repeated.
fn report(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}
