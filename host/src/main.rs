//! The `wrepl` command line.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use wrepl::mcp::downstream::{Downstream, DownstreamConfig};
use wrepl::mcp::server::{serve_http, serve_stdio, ServerOptions};
use wrepl::replay::log::Event;
use wrepl::replay::store::{default_store_path, LogStore, SqliteStore};
use wrepl::{
    timeout_from_ms, EngineOptions, EvalOptions, ProgressEvent, Repl, ReplBuilder, SandboxEngine, SessionConfig,
    Settings,
};

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
        /// Durable session: resume it (replaying its log) and record into it.
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// Session store (default: $WREPL_STORE, else ~/.local/share/wrepl/sessions.sqlite3).
        #[arg(long, value_name = "FILE")]
        store: Option<std::path::PathBuf>,
    },
    /// Serve the REPL to MCP clients: stdio by default, streamable HTTP with --http.
    Serve {
        /// Listen for streamable HTTP at this address (path /mcp), e.g. 127.0.0.1:8931.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        #[command(flatten)]
        policy: PolicyArgs,
        /// Durable session (stdio only): resume it from the store and record into it.
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// Session store; with it, every connection's evaluations are recorded (HTTP clients pick
        /// a session to resume with /mcp?session=NAME). Default with --session: $WREPL_STORE,
        /// else ~/.local/share/wrepl/sessions.sqlite3.
        #[arg(long, value_name = "FILE")]
        store: Option<std::path::PathBuf>,
        /// Async mode: `repl` returns an eval id at once; poll `repl_result`.
        #[arg(long = "async")]
        async_mode: bool,
        /// List no `repl` tool (the REPL is disabled by configuration).
        #[arg(long)]
        no_repl: bool,
        /// Script budget default and fuel are per call; this caps the result text (characters).
        #[arg(long, value_name = "CHARS", default_value_t = wrepl::DEFAULT_TEXT_CAP)]
        text_cap: usize,
    },
    /// Print a TypeScript declaration file (.d.ts) for the sandbox globals: the built-in API, one
    /// function per tool (types from its JSON Schemas) and, with --session, the tools the session's
    /// scripts registered.
    Types {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Include the registered tools of this session (restored from the store, nothing re-runs).
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// Session store file.
        #[arg(long, value_name = "FILE")]
        store: Option<std::path::PathBuf>,
    },
    /// Inspect session logs.
    Log {
        #[command(subcommand)]
        command: LogCommand,
    },
}

#[derive(Subcommand)]
enum LogCommand {
    /// Print a session's blocks and inner calls.
    Show {
        /// Session name.
        name: String,
        /// Session store file.
        #[arg(long, value_name = "FILE")]
        store: Option<std::path::PathBuf>,
    },
    /// Verify a session's hash chain (exit 1 when it is broken).
    Verify {
        /// Session name.
        name: String,
        /// Session store file.
        #[arg(long, value_name = "FILE")]
        store: Option<std::path::PathBuf>,
    },
    /// List the sessions in the store.
    List {
        /// Session store file.
        #[arg(long, value_name = "FILE")]
        store: Option<std::path::PathBuf>,
    },
}

fn open_store(path: Option<std::path::PathBuf>) -> anyhow::Result<std::sync::Arc<SqliteStore>> {
    let path = path
        .or_else(default_store_path)
        .ok_or_else(|| anyhow::anyhow!("no session store: pass --store FILE or set WREPL_STORE"))?;
    Ok(std::sync::Arc::new(SqliteStore::open(&path)?))
}

fn clip(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', "\\n");
    if one_line.chars().count() > n {
        format!("{}…", one_line.chars().take(n).collect::<String>())
    } else {
        one_line
    }
}

fn log_command(cmd: LogCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        LogCommand::List { store } => {
            for s in open_store(store)?.sessions()? {
                println!("{}\t{} blocks\t{} events", s.name, s.blocks, s.events);
            }
            Ok(ExitCode::SUCCESS)
        }
        LogCommand::Verify { name, store } => {
            let r = open_store(store)?.verify(&name)?;
            if r.ok {
                println!("session {name}: {} events, hash chain intact", r.events);
                Ok(ExitCode::SUCCESS)
            } else {
                match r.first_bad {
                    Some(b) => println!("session {name}: TAMPERED at event {}: {}", b.seq, b.reason),
                    None => println!("session {name}: TAMPERED"),
                }
                Ok(ExitCode::from(1))
            }
        }
        LogCommand::Show { name, store } => {
            let events = open_store(store)?.load(&name)?;
            if events.is_empty() {
                println!("session {name} has no blocks");
            }
            let mut calls: Vec<(String, String)> = Vec::new();
            let mut pending: Vec<bool> = Vec::new();
            let mut open = false;
            let incomplete = |calls: &[(String, String)], pending: &[bool]| {
                for (i, p) in pending.iter().enumerate() {
                    if *p {
                        println!("  call #{i} {} -> outcome_unknown (the process ended while it ran)", calls[i].0);
                    }
                }
                println!("  => incomplete (the process ended during this block)");
            };
            for e in &events {
                match &e.event {
                    Event::Begin { code, boundary } => {
                        if open {
                            incomplete(&calls, &pending);
                        }
                        open = true;
                        calls.clear();
                        pending.clear();
                        println!("block {} (boundary {boundary}):", e.block);
                        for line in code.lines() {
                            println!("  | {line}");
                        }
                    }
                    Event::Call { tool, input, .. } => {
                        calls.push((tool.clone(), input.clone()));
                        pending.push(true);
                    }
                    Event::Done { call, ok, payload, error_kind } => {
                        let (tool, input) = calls.get(*call as usize).cloned().unwrap_or_default();
                        if let Some(p) = pending.get_mut(*call as usize) {
                            *p = false;
                        }
                        let out = if *ok {
                            clip(payload, 160)
                        } else {
                            format!("error {error_kind}: {}", clip(payload, 160))
                        };
                        println!("  call #{call} {tool} {} -> {out}", clip(&input, 120));
                    }
                    Event::Refused { call, error_kind, message } => {
                        let (tool, input) = calls.get(*call as usize).cloned().unwrap_or_default();
                        if let Some(p) = pending.get_mut(*call as usize) {
                            *p = false;
                        }
                        println!(
                            "  call #{call} {tool} {} -> refused {error_kind}: {}",
                            clip(&input, 120),
                            clip(message, 160)
                        );
                    }
                    Event::End { threw, error, .. } => {
                        open = false;
                        for (i, p) in pending.iter().enumerate() {
                            if *p {
                                println!("  call #{i} {} -> (not delivered before the block ended)", calls[i].0);
                            }
                        }
                        match (threw, error) {
                            (true, Some(e)) => println!("  => threw {e}"),
                            (true, None) => println!("  => threw"),
                            _ => println!("  => ok"),
                        }
                    }
                    _ => {}
                }
            }
            if open {
                incomplete(&calls, &pending);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
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
    /// Downstream MCP servers (JSON `{"mcpServers": {...}}`) whose tools scripts may call as
    /// `mcp__<server>__<tool>` (each must be granted, e.g. --allow mcp__srv__tool).
    #[arg(long = "mcp-config", value_name = "FILE")]
    mcp_config: Option<std::path::PathBuf>,
}

/// Connect the downstream MCP servers of `--mcp-config` (warnings to stderr).
async fn downstream(p: &PolicyArgs) -> anyhow::Result<Option<Downstream>> {
    let Some(path) = &p.mcp_config else { return Ok(None) };
    let config = DownstreamConfig::load(path)?;
    let d = Downstream::connect(config).await?;
    for w in d.warnings() {
        eprintln!("wrepl: {w}");
    }
    Ok(Some(d))
}

/// The REPL template of the policy flags: roots, settings, rules, progress
/// printing and the downstream servers' tools.
fn builder(
    p: &PolicyArgs,
    mcp: &Option<Downstream>,
    engine: std::sync::Arc<SandboxEngine>,
) -> anyhow::Result<ReplBuilder> {
    let settings = match &p.settings {
        Some(f) => Settings::load(f)?,
        None => Settings::default(),
    };
    let roots = if p.roots.is_empty() { vec![std::env::current_dir()?] } else { p.roots.clone() };
    let mut b = Repl::builder()
        .engine(engine)
        .roots(roots)
        .settings(settings)
        .allow(p.allow.iter().cloned())
        .deny(p.deny.iter().cloned())
        .session_id(format!("cli-{}", std::process::id()));
    if let Some(d) = mcp {
        b = b.tools(d.tools());
    }
    if p.progress {
        b = b.events(std::sync::Arc::new(|e: &ProgressEvent| {
            eprintln!(
                "[progress] {} {} {:?} {:.1}ms{}",
                e.tool_use_id,
                e.tool,
                e.phase,
                e.elapsed_ms,
                e.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
            );
        }));
    }
    Ok(b)
}

fn default_engine(fuel: bool) -> anyhow::Result<std::sync::Arc<SandboxEngine>> {
    Ok(std::sync::Arc::new(SandboxEngine::new(EngineOptions { fuel, ..EngineOptions::default() })?))
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
        Command::Eval { snippets, timeout, fuel, json, policy, session, store } => {
            let session = match session {
                Some(name) => Some(SessionConfig { name, store: open_store(store)?, boundary: "main".into() }),
                None => None,
            };
            eval(snippets, timeout, fuel, json, policy, session).await
        }
        Command::Log { command } => log_command(command),
        Command::Types { policy, session, store } => {
            let mcp = downstream(&policy).await?;
            let b = builder(&policy, &mcp, default_engine(false)?)?;
            let d = b.dispatcher()?;
            let registered = match session {
                Some(name) => {
                    let repl = b.session(open_store(store)?, name).build().await?;
                    repl.registered_tools().iter().map(Into::into).collect()
                }
                None => Vec::new(),
            };
            print!("{}", wrepl::dts::declarations(&wrepl::dts::dispatcher_signatures(&d), &registered));
            if let Some(m) = mcp {
                m.shutdown().await;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve { http, policy, session, store, async_mode, no_repl, text_cap } => {
            if http.is_some() && session.is_some() {
                anyhow::bail!("--session works with stdio only (each HTTP connection records its own session)");
            }
            let store: Option<std::sync::Arc<dyn LogStore>> =
                if session.is_some() || store.is_some() { Some(open_store(store)?) } else { None };
            let mcp = downstream(&policy).await?;
            let template = builder(&policy, &mcp, default_engine(false)?)?.with_limits(|l| l.text_cap = text_cap);
            let mut options = ServerOptions::new(template)?;
            options.store = store;
            options.session = session;
            options.async_mode = async_mode;
            options.repl_enabled = !no_repl;
            let options = std::sync::Arc::new(options);
            match http {
                None => serve_stdio(options).await?,
                Some(addr) => {
                    // Runs until the process is stopped (the store is crash-safe).
                    let shutdown = tokio_util::sync::CancellationToken::new();
                    serve_http(options, addr, shutdown, |a| eprintln!("wrepl: serving MCP at http://{a}/mcp")).await?;
                }
            }
            if let Some(m) = mcp {
                m.shutdown().await;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn eval(
    mut snippets: Vec<String>,
    timeout: Option<String>,
    fuel: Option<u64>,
    json: bool,
    policy: PolicyArgs,
    session: Option<SessionConfig>,
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
    let mcp = downstream(&policy).await?;
    let mut repl = builder(&policy, &mcp, default_engine(fuel.is_some())?)?.session_config(session).build().await?;
    if let Some(r) = repl.restore_report() {
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
    drop(repl);
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    Ok(if last_failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
