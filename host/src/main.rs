//! The `wrepl` command line.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use wrepl::pipeline::dispatcher::{Dispatcher, PipelineConfig};
use wrepl::pipeline::events::{EventSink, ProgressEvent};
use wrepl::pipeline::settings::Settings;
use wrepl::repl::{timeout_from_ms, EvalOptions, Repl, ReplOptions};
use wrepl::runtime::{EngineOptions, SandboxEngine};
use wrepl::tools::{builtin_tools, Workspace};

#[derive(Parser)]
#[command(name = "wrepl", version, about = "A sealed JavaScript REPL for LLM agents (QuickJS in WebAssembly)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate snippets in order, in ONE persistent context.
    Eval {
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
        #[command(flatten)]
        policy: PolicyArgs,
    },
}

/// Tools, workspace and permissions.
#[derive(clap::Args, Clone, Default)]
struct PolicyArgs {
    /// Grant a permission rule, e.g. `Write`, `Bash(git status:*)`, `Edit(./src/**)` (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    allow: Vec<String>,
    /// Deny a permission rule (repeatable; deny beats allow).
    #[arg(long = "deny", value_name = "RULE")]
    deny: Vec<String>,
    /// Settings file (JSON: permissions, hooks, isolation).
    #[arg(long, value_name = "FILE")]
    settings: Option<std::path::PathBuf>,
    /// Workspace root the file tools may touch (repeatable; default: the current directory).
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<std::path::PathBuf>,
    /// Print inner-call progress events to stderr.
    #[arg(long)]
    progress: bool,
}

fn dispatcher(p: &PolicyArgs) -> anyhow::Result<std::sync::Arc<Dispatcher>> {
    let settings = match &p.settings {
        Some(f) => Settings::load(f)?,
        None => Settings::default(),
    };
    let roots = if p.roots.is_empty() { vec![std::env::current_dir()?] } else { p.roots.clone() };
    let workspace = std::sync::Arc::new(Workspace::new(&roots)?);
    let events: Option<EventSink> = if p.progress {
        Some(std::sync::Arc::new(|e: &ProgressEvent| {
            eprintln!(
                "[progress] {} {} {:?} {:.1}ms{}",
                e.tool_use_id,
                e.tool,
                e.phase,
                e.elapsed_ms,
                e.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
            );
        }))
    } else {
        None
    };
    let config = PipelineConfig {
        settings,
        allow: p.allow.clone(),
        deny: p.deny.clone(),
        workspace,
        approver: None,
        events,
        session_id: format!("cli-{}", std::process::id()),
    };
    Ok(std::sync::Arc::new(Dispatcher::new(config, builtin_tools())?))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("wrepl: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wrepl: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Eval { snippets, timeout, fuel, json, policy } => eval(snippets, timeout, fuel, json, policy).await,
    }
}

async fn eval(
    mut snippets: Vec<String>,
    timeout: Option<String>,
    fuel: Option<u64>,
    json: bool,
    policy: PolicyArgs,
) -> anyhow::Result<ExitCode> {
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
    let engine = SandboxEngine::new(EngineOptions { fuel: fuel.is_some(), ..EngineOptions::default() })?;
    let options = ReplOptions { dispatcher: Some(dispatcher(&policy)?), ..ReplOptions::default() };
    let mut repl = Repl::with_engine(std::sync::Arc::new(engine), options).await?;
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
            out.write_all(r.stdout.as_bytes())?;
            if !r.stderr.is_empty() {
                eprint!("{}", r.stderr);
            }
            match &r.error {
                Some(e) => {
                    if !e.stack.is_empty() && !e.stack.contains(&e.message) {
                        eprintln!("{}: {}\n{}", e.name, e.message, e.stack.trim_end());
                    } else {
                        eprintln!("{}: {}", e.name, e.message);
                    }
                }
                None => writeln!(out, "{}", r.text)?,
            }
        }
        out.flush()?;
    }
    Ok(if last_failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
