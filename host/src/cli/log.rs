//! `wrepl log`: list the sessions of a store, verify a session's hash chain,
//! and show a session's blocks (rendered by [`wrepl::replay::render`]).

use std::io::Write;
use std::process::ExitCode;

use clap::Subcommand;
use wrepl::replay::render::render_log;
use wrepl::replay::store::LogStore;
use wrepl::text::terminal_safe;

use super::{builder, default_engine, PolicyArgs, StoreArgs};

/// The subcommands of `wrepl log`.
#[derive(Subcommand)]
pub(crate) enum LogCommand {
    /// Print a session's blocks and inner calls.
    Show {
        /// Session name.
        name: String,
        /// Where the session is stored.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Verify a session's hash chain and recorded head (exit 1 when broken, 2 when there is no such session).
    Verify {
        /// Session name.
        name: String,
        /// Also replay the whole log from nothing and check, at every snapshot the log names, that
        /// replay reaches the state the snapshot holds and that its stored row checks out (exit 1
        /// when one does not). Give the tool flags the session runs with: a snapshot is bound to them.
        #[arg(long)]
        replay: bool,
        /// Tools, workspace and permissions (with --replay: those the session runs with).
        #[command(flatten)]
        policy: PolicyArgs,
        /// Where the session is stored.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Write a session's blocks and inner calls as one self-contained HTML page (`--html FILE`:
    /// a timeline of each block's calls, with their inputs and outputs) or as JSON lines (`--format
    /// jsonl`, to stdout)
    Export {
        /// Session name.
        name: String,
        /// Write the HTML page to this file.
        #[arg(long, value_name = "FILE", conflicts_with = "format")]
        html: Option<std::path::PathBuf>,
        /// `jsonl`: one JSON record per line (session, blocks, calls, snapshots) on stdout.
        #[arg(long, value_name = "FORMAT")]
        format: Option<ExportFormat>,
        /// Where the session is stored.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List the sessions in the store.
    List {
        /// The store to list.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// The formats of `wrepl log export` on stdout.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum ExportFormat {
    /// JSON lines.
    Jsonl,
}

/// Run a `wrepl log` subcommand: exit 1 when `verify` finds the chain
/// broken; an error (exit 2) for a store or session that does not exist.
/// Output ends quietly when the reader goes away (`| head`).
pub(crate) async fn run(cmd: LogCommand) -> anyhow::Result<ExitCode> {
    let cmd = match cmd {
        LogCommand::Verify { name, replay: true, policy, store } => {
            let chain = print(LogCommand::Verify {
                name: name.clone(),
                replay: false,
                policy: policy.clone(),
                store: store.clone(),
            })?;
            if chain != ExitCode::SUCCESS {
                return Ok(chain);
            }
            return verify_replay(&name, &policy, &store).await;
        }
        other => other,
    };
    match print(cmd) {
        Err(e) if e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) => {
            Ok(ExitCode::SUCCESS)
        }
        other => other,
    }
}

/// The session `name` of `store`, which must exist.
fn existing(store: &dyn LogStore, name: &str) -> anyhow::Result<()> {
    // A session whose record was removed but whose events remain exists
    // too (and fails verification).
    if store.head(name)?.is_none() && store.verify(name)?.events == 0 {
        anyhow::bail!("no session named {name:?} in this store (wrepl log list shows them)");
    }
    Ok(())
}

fn print(cmd: LogCommand) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match cmd {
        LogCommand::List { store } => {
            for s in store.open_existing_store()?.sessions()? {
                writeln!(out, "{}\t{} blocks\t{} events", terminal_safe(&s.name), s.blocks, s.events)?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        LogCommand::Verify { name, store, .. } => {
            let store = store.open_existing_store()?;
            existing(&*store, &name)?;
            let r = store.verify(&name)?;
            if r.ok {
                writeln!(out, "session {name}: {} events, hash chain and head intact", r.events)?;
                Ok(ExitCode::SUCCESS)
            } else {
                match r.first_bad {
                    Some(b) => {
                        writeln!(out, "session {name}: TAMPERED at event {}: {}", b.seq, terminal_safe(&b.reason))?
                    }
                    None => writeln!(out, "session {name}: TAMPERED")?,
                }
                Ok(ExitCode::from(1))
            }
        }
        LogCommand::Export { name, html, format, store } => {
            let store = store.open_existing_store()?;
            existing(&*store, &name)?;
            let events = store.load(&name)?;
            match (html, format) {
                (Some(path), _) => {
                    std::fs::write(&path, wrepl::replay::export::export_html(&name, &events))
                        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
                    writeln!(out, "wrote {} ({} events of session {name})", path.display(), events.len())?;
                }
                (None, Some(ExportFormat::Jsonl)) => {
                    out.write_all(wrepl::replay::export::export_jsonl(&name, &events).as_bytes())?
                }
                (None, None) => anyhow::bail!("say what to export: --html FILE or --format jsonl"),
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        LogCommand::Show { name, store } => {
            let store = store.open_existing_store()?;
            existing(&*store, &name)?;
            let events = store.load(&name)?;
            if events.is_empty() {
                writeln!(out, "session {name} has no blocks")?;
            }
            // Recorded code and results may hold terminal control sequences.
            let mut text = Vec::new();
            render_log(&events, &mut text)?;
            out.write_all(terminal_safe(&String::from_utf8_lossy(&text)).as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `log verify --replay`: replay the whole log in a context with the
/// session's tools (recording nothing) and check every snapshot it names.
async fn verify_replay(name: &str, policy: &PolicyArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let log = store.open_existing_store()?;
    // The session's own calls are answered from its log: no downstream
    // server is connected, and nothing runs.
    let mut repl = builder(policy, &None, default_engine(false, Some(super::ONE_CONTEXT_SLOTS))?)?.build().await?;
    let (report, checks) = repl.verify_replay(&*log, name).await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "session {name}: replayed from nothing: {}", terminal_safe(&report.summary))?;
    for b in report.blocks.iter().filter(|b| b.verdict == wrepl::replay::player::Verdict::Drift) {
        writeln!(out, "  {}", terminal_safe(&b.describe()))?;
    }
    let mut bad = 0;
    for c in &checks {
        match &c.problem {
            None if c.note.is_some() => {
                writeln!(out, "  {}: {}", c.name, terminal_safe(c.note.as_deref().unwrap_or("")))?
            }
            None if c.stored => writeln!(out, "  {}: replay reaches the state it holds; its row checks out", c.name)?,
            None => writeln!(
                out,
                "  {}: replay reaches the state it holds (its row was removed: newer ones replace it)",
                c.name
            )?,
            Some(p) => {
                bad += 1;
                writeln!(out, "  {}: {}", c.name, terminal_safe(p))?;
            }
        }
    }
    writeln!(out, "{} snapshot(s) checked, {bad} with a problem", checks.len())?;
    out.flush()?;
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
