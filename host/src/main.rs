//! The `wrepl` command line.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use wrepl::repl::{timeout_from_ms, EvalOptions, Repl, ReplOptions};
use wrepl::runtime::{EngineOptions, SandboxEngine};

#[derive(Parser)]
#[command(
    name = "wrepl",
    version,
    about = "A sealed JavaScript REPL for LLM agents (QuickJS in WebAssembly)"
)]
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
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
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
        Command::Eval {
            snippets,
            timeout,
            fuel,
            json,
        } => eval(snippets, timeout, fuel, json).await,
    }
}

async fn eval(
    mut snippets: Vec<String>,
    timeout: Option<String>,
    fuel: Option<u64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let timeout = match timeout {
        None => None,
        Some(t) => {
            let ms: f64 = t.trim().parse().map_err(|_| {
                anyhow::anyhow!(
                    "invalid input: --timeout must be a number of milliseconds, got {t:?}"
                )
            })?;
            Some(timeout_from_ms(ms)?)
        }
    };
    if snippets.is_empty() {
        let mut code = String::new();
        std::io::stdin()
            .read_to_string(&mut code)
            .context("reading code from stdin")?;
        snippets.push(code);
    }
    let engine = SandboxEngine::new(EngineOptions {
        fuel: fuel.is_some(),
        ..EngineOptions::default()
    })?;
    let mut repl = Repl::with_engine(std::sync::Arc::new(engine), ReplOptions::default()).await?;
    let mut last_failed = false;
    let stdout = std::io::stdout();
    for code in &snippets {
        let r = repl
            .eval(
                code,
                EvalOptions {
                    timeout,
                    fuel,
                    ..EvalOptions::default()
                },
            )
            .await?;
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
    Ok(if last_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
