//! `wrepl eval`: evaluate snippets in order in one persistent context
//! (optionally a durable session), printing each result as text or JSON.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use wrepl::{timeout_from_ms, EvalOptions, SessionConfig};

use super::{builder, default_engine, downstream, PolicyArgs, StoreArgs};

/// The flags of `wrepl eval`.
#[derive(clap::Args)]
pub(crate) struct EvalArgs {
    /// A snippet to evaluate (repeatable). Without any, code is read from stdin.
    #[arg(short = 'e', long = "eval", value_name = "CODE")]
    snippets: Vec<String>,
    /// Script time budget per snippet in milliseconds (default 30000, max 600000).
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    timeout: Option<String>,
    /// Deterministic instruction budget per snippet (wasmtime fuel).
    #[arg(long, value_name = "UNITS")]
    fuel: Option<u64>,
    /// Print one JSON object per snippet instead of plain text.
    #[arg(long)]
    json: bool,
    /// Print control characters (ESC, CR, …) as they are. By default, text
    /// output shows them escaped (`\x1b`), so a result, console output or an
    /// error cannot drive the terminal (clipboard, title, clear screen).
    #[arg(long)]
    raw: bool,
    /// Tools, workspace and permissions.
    #[command(flatten)]
    policy: PolicyArgs,
    /// Durable session: resume it (replaying its log) and record into it.
    #[arg(long, value_name = "NAME")]
    session: Option<String>,
    /// When the session's log fails verification: `refuse` (the default: exit 2, nothing replayed)
    /// or `fresh` (move the log aside as NAME.tampered-<ms> and start the session fresh).
    #[arg(long = "on-tamper", value_name = "WHAT", default_value = "refuse")]
    on_tamper: wrepl::OnTamper,
    /// Wait up to SECONDS (default: as long as it takes) for another process using the session
    /// to finish, instead of failing at once.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "inf")]
    wait: Option<f64>,
    /// Where the session is stored.
    #[command(flatten)]
    store: StoreArgs,
}

/// Run `wrepl eval`: exit 1 when the last snippet failed.
pub(crate) async fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let EvalArgs { mut snippets, timeout, fuel, json, raw, policy, session, on_tamper, wait, store } = args;
    let safe = |s: &str| -> String {
        if raw {
            s.to_string()
        } else {
            wrepl::terminal_safe(s).into_owned()
        }
    };
    let wait = match wait {
        None => None,
        Some(w) if w.is_nan() || w < 0.0 => anyhow::bail!("invalid input: --wait must be a number of seconds"),
        Some(w) => Some(std::time::Duration::try_from_secs_f64(w).unwrap_or(std::time::Duration::MAX)),
    };
    let session = match session {
        Some(name) => Some(SessionConfig { on_tamper, wait, ..SessionConfig::new(name, store.open_store()?) }),
        None => None,
    };
    let timeout = match timeout {
        None => None,
        Some(t) => {
            let ms: f64 = t
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("invalid input: --timeout must be a number of milliseconds, got {t:?}"))?;
            Some(timeout_from_ms(ms)?)
        }
    };
    if snippets.is_empty() {
        let mut code = String::new();
        std::io::stdin().read_to_string(&mut code).context("reading code from stdin")?;
        snippets.push(code);
    }
    let mcp = downstream(&policy).await?;
    let mut template = builder(&policy, &mcp, default_engine(fuel.is_some())?)?;
    if let Some(file) = store.file() {
        template = template.protect_store(file);
    }
    let mut repl = template.session_config(session).build().await?;
    if let Some(r) = repl.restore_report() {
        for note in &r.notes {
            eprintln!("[wrepl] {}", safe(note));
        }
        if !r.blocks.is_empty() {
            eprintln!("[wrepl] {}", r.summary);
        }
        for b in r.blocks.iter().filter(|b| b.verdict == wrepl::Verdict::Drift || !b.outcome_unknown.is_empty()) {
            eprintln!(
                "[wrepl] block {}: {:?} {:?} outcome_unknown={:?}",
                b.block, b.verdict, b.divergence, b.outcome_unknown
            );
        }
    }
    let mut last_failed = false;
    let stdout = std::io::stdout();
    for code in &snippets {
        let r = repl.eval(code, EvalOptions { timeout, fuel, ..EvalOptions::default() }).await?;
        last_failed = r.failed();
        let mut out = stdout.lock();
        if json {
            serde_json::to_writer(
                &mut out,
                &serde_json::json!({
                    "result": r.result,
                    "text": r.text,
                    "stdout": r.stdout,
                    "stderr": r.stderr,
                    "error": r.error,
                    "timed_out": r.timed_out,
                    "context_reset": r.context_reset,
                }),
            )?;
            writeln!(out)?;
        } else {
            out.write_all(safe(&r.stdout).as_bytes())?;
            if !r.stderr.is_empty() {
                eprint!("{}", safe(&r.stderr));
            }
            match &r.error {
                Some(e) => {
                    let (name, message) = (safe(&e.name), safe(&e.message));
                    if !e.stack.is_empty() && !e.stack.contains(&e.message) {
                        eprintln!("{name}: {message}\n{}", safe(e.stack.trim_end()));
                    } else {
                        eprintln!("{name}: {message}");
                    }
                }
                None => writeln!(out, "{}", safe(&r.text))?,
            }
        }
        out.flush()?;
    }
    drop(repl);
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    Ok(if last_failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
