//! The `wrepl` command definitions and their dispatch: the clap [`Cli`] and
//! [`Command`], the argument groups every subcommand shares ([`PolicyArgs`],
//! [`StoreArgs`]) and the one [`builder`] that turns policy flags into a
//! [`ReplBuilder`]. Each subcommand lives in its own module.

mod approve;
mod doctor;
mod eval;
mod log;
mod repl;
mod serve;
mod status;
mod store;
mod types;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use wrepl::mcp::downstream::{Downstream, DownstreamConfig};
use wrepl::replay::store::{default_store_path, LogStore, PostgresStore, SqliteStore};
use wrepl::{EngineOptions, ProgressEvent, Repl, ReplBuilder, SandboxEngine, Settings};

/// The command line.
#[derive(Parser)]
#[command(
    name = "wrepl",
    version,
    about = "A sealed JavaScript REPL for LLM agents (QuickJS in WebAssembly)",
    after_help = "Without a subcommand, on a terminal: the interactive REPL (the flags of `wrepl repl`).",
    args_conflicts_with_subcommands = true
)]
pub(crate) struct Cli {
    /// The subcommand to run (none: the interactive REPL).
    #[command(subcommand)]
    command: Option<Command>,
    /// The interactive REPL's flags, when there is no subcommand.
    #[command(flatten)]
    repl: repl::ReplArgs,
    /// Print no notes on stderr (where settings came from, what a resumed
    /// session restored, the REPL's banner); warnings, errors and what the
    /// scripts print still show.
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
}

/// Set by `--quiet`: [`note`] prints nothing.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A note for the person at the terminal, on stderr, unless `--quiet`.
pub(crate) fn note(text: impl std::fmt::Display) {
    if !QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("{text}");
    }
}

/// The subcommands.
#[derive(Subcommand)]
enum Command {
    /// Evaluate snippets in order, in ONE persistent context.
    Eval(eval::EvalArgs),
    /// The interactive REPL (line editing, history, Ctrl-C stops an evaluation, questions for `ask` rules).
    Repl(repl::ReplArgs),
    /// Serve the REPL to MCP clients: stdio by default, streamable HTTP with --http.
    #[command(after_help = "With --store, every connection's evaluations are recorded (HTTP clients pick a session \
        to resume with /mcp?session=NAME); without it, only --session opens a store (the default one).")]
    Serve(serve::ServeArgs),
    /// Print a TypeScript declaration file (.d.ts) for the sandbox globals: the built-in API, one
    /// function per tool (types from its JSON Schemas) and, with --session, the tools the session's
    /// scripts registered.
    Types(types::TypesArgs),
    /// Show what confinement Bash commands get on this machine (Landlock, namespaces, /proc,
    /// network, no_new_privs), whether wrepl is dumpable, and where its cache and store are.
    Doctor(doctor::DoctorArgs),
    /// Inspect session logs.
    Log {
        /// What to do with the logs.
        #[command(subcommand)]
        command: log::LogCommand,
    },
    /// Operate on a whole store (SQLite or PostgreSQL): migrate, verify, gc, copy.
    Store {
        /// What to do with the store.
        #[command(subcommand)]
        command: store::StoreCommand,
    },
    /// Print a shell completion script for wrepl, e.g.
    /// `wrepl completions bash > ~/.local/share/bash-completion/completions/wrepl`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print wrepl's manual page (roff), e.g. `wrepl man > ~/.local/share/man/man1/wrepl.1`.
    Man,
}

/// Run the parsed command; the exit status on success, an error (exit 2) when
/// it could not run.
pub(crate) async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    let Some(command) = cli.command else {
        use clap::CommandFactory as _;
        use std::io::IsTerminal as _;
        if std::io::stdin().is_terminal() {
            return repl::run(cli.repl).await;
        }
        let _ = Cli::command().print_help();
        eprintln!("\nwrepl: no subcommand (and stdin is not a terminal, so no interactive REPL): try `wrepl eval`");
        return Ok(ExitCode::from(2));
    };
    // Commands that only print end quietly on a closed pipe (`| head`).
    // The others keep SIGPIPE ignored: a hook or an MCP server that exits
    // without reading its stdin must not end wrepl, nor a client a server.
    if matches!(command, Command::Log { .. } | Command::Store { .. } | Command::Types(_) | Command::Doctor(_)) {
        if let Err(e) = wrepl::confinement::default_sigpipe() {
            eprintln!("wrepl: warning: cannot restore SIGPIPE's default: {e}");
        }
    }
    match command {
        // A closed stdout ends `eval` quietly too, by its write error.
        Command::Eval(args) => match eval::run(args).await {
            Err(e) if broken_pipe(&e) => Ok(ExitCode::SUCCESS),
            other => other,
        },
        Command::Repl(args) => repl::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Types(args) => types::run(args).await,
        Command::Doctor(args) => doctor::run(args),
        Command::Log { command } => log::run(command).await,
        Command::Store { command } => store::run(command),
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "wrepl", &mut text);
            print_all(&text)
        }
        Command::Man => {
            use clap::CommandFactory as _;
            let mut text = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut text)?;
            print_all(&text)
        }
    }
}

/// Write `bytes` to stdout; a reader that stopped early (a closed pipe, as
/// with `| head`) is no error.
pub(crate) fn print_all(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Tools, workspace and permissions.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct PolicyArgs {
    /// Grant a permission rule, e.g. `Write`, `Bash(git status:*)`, `Edit(./src/**)` (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    allow: Vec<String>,
    /// Deny a permission rule (repeatable; deny beats allow).
    #[arg(long = "deny", value_name = "RULE")]
    deny: Vec<String>,
    /// Settings file (JSON: permissions, hooks, isolation, confine, allowNet). A Claude Code settings
    /// file (in a `.claude/` directory, or with its `$schema`) is read for what it means here: its rules,
    /// additional directories and hooks, with a warning for each key that is not applied. Default:
    /// `$XDG_CONFIG_HOME/wrepl/settings.json` (else `~/.config/wrepl/settings.json`), when it lies
    /// outside every root.
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// Also read the project's Claude Code settings (`.claude/settings.json` and
    /// `.claude/settings.local.json`): their rules are added to wrepl's (also: `"claudeSettings": true`).
    #[arg(long = "claude-settings")]
    claude_settings: bool,
    /// Workspace root the file tools may touch (repeatable; default: the current directory).
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// Print inner-call progress events to stderr.
    #[arg(long)]
    pub(crate) progress: bool,
    /// The sandbox global `repoHint` (default: derived from the git repository of the first root,
    /// e.g. `repo: /work/widget (main; origin github.com/acme/widget)`; `''` for none).
    #[arg(long = "repo-hint", value_name = "TEXT")]
    repo_hint: Option<String>,
    /// Downstream MCP servers (JSON `{"mcpServers": {...}}`, with `${VAR}` and `${VAR:-default}`
    /// expanded) whose tools scripts may call as `mcp__<server>__<tool>` (each must be granted, e.g.
    /// --allow mcp__srv__tool). `auto`: the project's `.mcp.json`, if there is one.
    #[arg(long = "mcp-config", value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// How Bash commands are confined.
    #[command(flatten)]
    confine: ConfineArgs,
}

/// How Bash commands are confined (merged over the settings file's `confine` and `allowNet`).
#[derive(clap::Args, Clone, Default)]
pub(crate) struct ConfineArgs {
    /// Confinement of Bash commands: `require` (refuse Bash when it cannot be fully set up), `prefer`
    /// (the default: confine as far as the machine allows, warn once about the rest) or `off`. Confined
    /// commands write only in the roots and their own TMPDIR, cannot read wrepl's own files, live in
    /// their own PID namespace and get no network.
    #[arg(long = "confine", value_name = "MODE")]
    mode: Option<wrepl::confinement::ConfineMode>,
    /// Let Bash commands use the host's network (no network namespace): they can then connect to any
    /// address and listen on any port the user can, local services included. Without it they have
    /// only a loopback interface of their own.
    #[arg(long = "allow-net")]
    allow_net: bool,
    /// Let fetch() (the WebFetch tool) reach loopback, private and link-local addresses, which it
    /// refuses by default (checked after DNS resolution, for every redirect hop). With
    /// `=NETS`, only those networks (comma-separated, e.g. `=127.0.0.1/32,10.0.0.0/8`). Rules must
    /// still allow the host: `--allow 'WebFetch(domain:localhost)'`
    #[arg(long = "allow-private-network", value_name = "NETS", num_args = 0..=1, require_equals = true, default_missing_value = "all")]
    allow_private_network: Option<String>,
}

impl ConfineArgs {
    /// Puts the flags over `settings`.
    pub(crate) fn apply(&self, settings: &mut Settings) {
        if let Some(mode) = self.mode {
            settings.confine = mode;
        }
        if self.allow_net {
            settings.allow_net = true;
        }
        match self.allow_private_network.as_deref() {
            None => {}
            Some("all") => settings.web_fetch.allow_private_network = wrepl::policy::PrivateNetworkSetting::Flag(true),
            Some(nets) => {
                settings.web_fetch.allow_private_network = wrepl::policy::PrivateNetworkSetting::Networks(
                    nets.split(',').map(|n| n.trim().to_string()).collect(),
                )
            }
        }
    }

    /// Checks the flags' values (the networks of `--allow-private-network`).
    pub(crate) fn check(&self) -> Result<(), String> {
        match self.allow_private_network.as_deref() {
            None | Some("all") => Ok(()),
            Some(nets) => nets
                .split(',')
                .try_for_each(|n| wrepl::policy::parse_network(n).map(drop))
                .map_err(|e| format!("--allow-private-network: {e}")),
        }
    }
}

/// The session store.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct StoreArgs {
    /// Session store: a SQLite file, or a PostgreSQL URL (postgres://…,
    /// shared by several servers). Default: $WREPL_STORE, else
    /// ~/.local/share/wrepl/sessions.sqlite3.
    #[arg(long = "store", value_name = "FILE|URL")]
    path: Option<PathBuf>,
}

/// True when `p` is a PostgreSQL URL rather than a file.
fn is_postgres(p: &std::path::Path) -> bool {
    let s = p.to_string_lossy();
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

impl StoreArgs {
    /// The store at `path` (a file or a URL).
    pub(crate) fn at(path: &str) -> Self {
        Self { path: Some(PathBuf::from(path)) }
    }

    /// True when `--store` was given.
    pub(crate) fn given(&self) -> bool {
        self.path.is_some()
    }

    /// The store's file, when `--store` names one (not a database URL).
    pub(crate) fn file(&self) -> Option<&PathBuf> {
        self.path.as_ref().filter(|p| !is_postgres(p))
    }

    /// Open the store: `--store`, else the default ($WREPL_STORE, else the
    /// user's data directory); an error when there is neither.
    pub(crate) fn open_store(&self) -> anyhow::Result<Arc<dyn LogStore>> {
        let path = self.store_path()?;
        if is_postgres(&path) {
            return Ok(Arc::new(PostgresStore::open(&path.to_string_lossy())?));
        }
        Ok(Arc::new(SqliteStore::open(&path)?))
    }

    /// Open the store only if it exists (read-only commands never create a
    /// SQLite file; a PostgreSQL database must exist anyway).
    pub(crate) fn open_existing_store(&self) -> anyhow::Result<Arc<dyn LogStore>> {
        let path = self.store_path()?;
        if is_postgres(&path) {
            return Ok(Arc::new(PostgresStore::open(&path.to_string_lossy())?));
        }
        Ok(Arc::new(SqliteStore::open_existing(&path)?))
    }

    fn store_path(&self) -> anyhow::Result<PathBuf> {
        self.path
            .clone()
            .or_else(default_store_path)
            .ok_or_else(|| anyhow::anyhow!("no session store: pass --store FILE or set WREPL_STORE"))
    }
}

/// Which context of which session a run records into: `--session NAME`,
/// `--context KEY` and `--fork FROM` of `eval` and `repl`.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct SessionArgs {
    /// Durable session: resume it (replaying its log) and record into it.
    #[arg(long, value_name = "NAME")]
    pub(crate) session: Option<String>,
    /// A context of the session other than its main one (e.g. a sub-agent's id): each key has a log
    /// of its own, as the MCP server and the library keep them. Needs --session.
    #[arg(long, value_name = "KEY")]
    context: Option<String>,
    /// The session boundary (a conversation segment's id, say): the same id continues its context, a
    /// new one starts a fresh context with a log of its own (variables, timers and console start
    /// over), and going back to an earlier id continues that one. Default `main`. Needs --session.
    #[arg(long, value_name = "ID")]
    boundary: Option<String>,
    /// Start the session (or the context) as a copy of another one's log, `NAME` or `NAME:KEY`
    /// (verified first, left unchanged): the new context has its variables and tools, and records
    /// apart from it. Only for a session that has no log yet; later runs use --session alone.
    #[arg(long, value_name = "FROM")]
    fork: Option<String>,
    /// Snapshot the context once replaying the blocks since the last snapshot would take about MS
    /// milliseconds (default 20; 0: after every block), so that resuming loads the snapshot and
    /// replays only the blocks after it. `never`: no snapshots are taken or loaded.
    #[arg(long = "snapshot-after", value_name = "MS", value_parser = parse_snapshot_after)]
    snapshot_after: Option<SnapshotAfter>,
}

/// `--snapshot-after`: a number of milliseconds, or `never`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SnapshotAfter(Option<std::time::Duration>);

fn parse_snapshot_after(s: &str) -> Result<SnapshotAfter, String> {
    if s == "never" {
        return Ok(SnapshotAfter(None));
    }
    match s.parse::<u64>() {
        Ok(ms) if ms <= 3_600_000 => Ok(SnapshotAfter(Some(std::time::Duration::from_millis(ms)))),
        _ => Err(format!("{s:?} is not a number of milliseconds from 0 to 3600000, nor `never`")),
    }
}

impl SessionArgs {
    /// The session boundary recorded with new blocks (`main` by default).
    pub(crate) fn boundary(&self) -> String {
        self.boundary.clone().unwrap_or_else(|| wrepl::context::MAIN.to_string())
    }

    /// The session's snapshot policy ([`wrepl::SessionConfig::snapshot_after`]).
    pub(crate) fn snapshot_after(&self) -> Option<std::time::Duration> {
        match self.snapshot_after {
            Some(SnapshotAfter(after)) => after,
            None => Some(wrepl::SessionConfig::DEFAULT_SNAPSHOT_AFTER),
        }
    }

    /// The log to record into (forking it first when asked), or `None`
    /// without `--session`.
    pub(crate) fn log(&self, store: &StoreArgs) -> anyhow::Result<Option<(String, Arc<dyn LogStore>)>> {
        let Some(session) = &self.session else {
            if self.context.is_some() || self.fork.is_some() || self.boundary.is_some() {
                anyhow::bail!(
                    "invalid input: --context, --boundary and --fork name a context of a session: give --session NAME"
                );
            }
            return Ok(None);
        };
        let key = match self.context.as_deref() {
            Some("") => anyhow::bail!("invalid input: --context must not be empty"),
            Some(key) => key,
            None => wrepl::context::MAIN,
        };
        let boundary = match self.boundary.as_deref() {
            Some("") => anyhow::bail!("invalid input: --boundary must not be empty"),
            Some(b) => b,
            None => wrepl::context::MAIN,
        };
        let log = wrepl::context::boundary_log_name(session, key, boundary);
        let store = store.open_store()?;
        if let Some(from) = &self.fork {
            let parent = match from.split_once(':') {
                Some((name, key)) if !key.is_empty() => wrepl::context::context_log_name(name, key),
                _ => from.clone(),
            };
            let n = wrepl::context::fork_log(&*store, &parent, &log)?;
            note(format!("wrepl: forked {from:?} into {log:?} ({n} events)"));
        }
        Ok(Some((log, store)))
    }
}

/// Connect the downstream MCP servers of `--mcp-config` (warnings to stderr).
/// The MCP config file the flags name: `--mcp-config FILE`, or with
/// `--mcp-config auto` the project's `.mcp.json` when there is one.
fn mcp_config_file(p: &PolicyArgs) -> anyhow::Result<Option<PathBuf>> {
    match &p.mcp_config {
        Some(f) if f.as_os_str() == "auto" => {
            let project = match p.roots.first() {
                Some(r) => r.clone(),
                None => std::env::current_dir()?,
            };
            let found = project.join(".mcp.json");
            if found.is_file() {
                note(format!("wrepl: MCP servers from {}", found.display()));
                Ok(Some(found))
            } else {
                note(format!("wrepl: --mcp-config auto: no .mcp.json in {}", project.display()));
                Ok(None)
            }
        }
        other => Ok(other.clone()),
    }
}

pub(crate) async fn downstream(p: &PolicyArgs) -> anyhow::Result<Option<Downstream>> {
    let Some(path) = mcp_config_file(p)? else { return Ok(None) };
    let config = DownstreamConfig::load(&path)?;
    let d = Downstream::connect(config).await?;
    for w in d.warnings() {
        eprintln!("wrepl: {w}");
    }
    Ok(Some(d))
}

/// The REPL template of the policy flags: roots, settings, rules, progress
/// printing and the downstream servers' tools.
pub(crate) fn builder(
    p: &PolicyArgs,
    mcp: &Option<Downstream>,
    engine: Arc<SandboxEngine>,
) -> anyhow::Result<ReplBuilder> {
    let project = match p.roots.first() {
        Some(r) => r.clone(),
        None => std::env::current_dir()?,
    };
    let loaded = load_settings(p, &project)?;
    let mut settings = loaded.settings;
    let claude_key = settings.claude_settings;
    p.confine.check().map_err(anyhow::Error::msg)?;
    p.confine.apply(&mut settings);
    if settings.bash_default_timeout_ms.is_none() {
        // Often inherited from another agent's environment: a value wrepl
        // cannot use is said and set aside, never a reason not to start.
        if let Some(v) = std::env::var_os("BASH_DEFAULT_TIMEOUT_MS") {
            let max = wrepl::budget::hard_limit_ms();
            match v.to_str().and_then(|v| v.trim().parse::<u64>().ok()) {
                Some(ms) if (1..=max).contains(&ms) => settings.bash_default_timeout_ms = Some(ms),
                Some(ms) if ms > max => {
                    eprintln!("wrepl: BASH_DEFAULT_TIMEOUT_MS={ms} is more than Bash's {max} ms maximum: using {max}");
                    settings.bash_default_timeout_ms = Some(max);
                }
                _ => eprintln!(
                    "wrepl: BASH_DEFAULT_TIMEOUT_MS={} is not a whole number of milliseconds from 1 to {max}: ignored",
                    wrepl::text::terminal_safe(&v.to_string_lossy())
                ),
            }
        }
    }
    let grants_bash = |r: &String| r == "Bash" || r.starts_with("Bash(");
    if p.allow.iter().chain(&settings.permissions.allow).chain(&settings.permissions.ask).any(grants_bash) {
        // Say it once, at startup, when Bash may run and cannot be fully confined.
        wrepl::confinement::warn_if_incomplete(wrepl::confinement::Confinement {
            mode: settings.confine,
            allow_net: settings.allow_net,
        });
    }
    let mut roots = if p.roots.is_empty() { vec![std::env::current_dir()?] } else { p.roots.clone() };
    roots.extend(loaded.roots);
    let repo_hint = match &p.repo_hint {
        Some(h) => h.clone(),
        None => wrepl::repo_hint_for(&project).unwrap_or_default(),
    };
    let mut b = Repl::builder()
        .engine(engine)
        .repo_hint(repo_hint)
        .roots(roots)
        .settings(settings)
        .allow(p.allow.iter().cloned())
        .deny(p.deny.iter().cloned())
        .session_id(format!("cli-{}", std::process::id()));
    if let Some(d) = mcp {
        b = b.tools(d.tools());
    }
    // wrepl's own files only the command line knows: out of the tools' reach.
    let mcp_file = match &p.mcp_config {
        Some(f) if f.as_os_str() == "auto" => Some(project.join(".mcp.json")),
        other => other.clone(),
    };
    // Also what wrepl would read on its own if it existed: the tools must
    // not create it for a later run.
    let claude_dir = (p.claude_settings || claude_key).then(|| project.join(".claude"));
    for f in loaded.files.iter().chain(&mcp_file).chain(&user_settings_file()).chain(&claude_dir) {
        b = b.protect(f);
    }
    if let Some(store) = default_store_path() {
        b = b.protect_store(store);
    }
    if p.progress {
        b = b.events(Arc::new(print_progress));
    }
    Ok(b)
}

/// Print a progress event on stderr (`--progress`).
pub(crate) fn print_progress(e: &ProgressEvent) {
    // A downstream MCP server writes the message: it may hold terminal
    // control sequences.
    let line = format!(
        "[progress] {} {} {:?} {:.1}ms{}",
        e.tool_use_id,
        e.tool,
        e.phase,
        e.elapsed_ms,
        e.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
    );
    eprintln!("{}", wrepl::text::terminal_safe(&line));
}

/// The `--timeout MS` flag of `eval` and `repl`, checked.
/// The cap on a result's text: `--text-cap` when given, else what
/// `CLAUDE_REPL_VARIANT=trim<N>k` asks (N thousand characters, as the agent
/// CLI whose REPL wrepl follows reads it), else the default. Another
/// variant, or a cap of 0, is an error that says what is understood.
pub(crate) fn text_cap(flag: Option<usize>) -> anyhow::Result<usize> {
    let cap = match flag {
        Some(n) => n,
        None => match std::env::var("CLAUDE_REPL_VARIANT").ok().filter(|v| !v.trim().is_empty()) {
            None => wrepl::text::DEFAULT_TEXT_CAP,
            Some(v) => {
                let n = v
                    .trim()
                    .strip_prefix("trim")
                    .and_then(|r| r.strip_suffix('k'))
                    .and_then(|n| n.parse::<usize>().ok())
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "CLAUDE_REPL_VARIANT={v:?} is not understood: the one variant wrepl knows is trim<N>k \
                             (cap each result's text at N thousand characters, e.g. trim25k); unset it, or give \
                             --text-cap"
                        )
                    })?;
                n.saturating_mul(1000)
            }
        },
    };
    if cap == 0 {
        anyhow::bail!("invalid input: the text cap (--text-cap or CLAUDE_REPL_VARIANT) must be at least 1 character");
    }
    Ok(cap)
}

/// Whether `CLAUDE_CODE_REPL` turns the REPL tool off (`0`, `false`, `no`,
/// `off`, in any case), as `--no-repl` does. Another non-empty value that
/// is not a yes (`1`, `true`, `yes`, `on`) is an error.
pub(crate) fn repl_disabled_by_env() -> anyhow::Result<bool> {
    let Some(v) = std::env::var("CLAUDE_CODE_REPL").ok().filter(|v| !v.trim().is_empty()) else { return Ok(false) };
    match v.trim().to_ascii_lowercase().as_str() {
        "0" | "false" | "no" | "off" => Ok(true),
        "1" | "true" | "yes" | "on" => Ok(false),
        _ => anyhow::bail!("CLAUDE_CODE_REPL={v:?} is not understood: give true or false (or unset it)"),
    }
}

pub(crate) fn timeout_flag(t: Option<&str>) -> anyhow::Result<Option<std::time::Duration>> {
    let Some(t) = t else { return Ok(None) };
    let budget = wrepl::budget::Budget::from_flag(t).map_err(|e| anyhow::anyhow!("invalid input: {e}"))?;
    Ok(Some(budget))
}

/// Whether `e` comes from writing to a closed pipe.
fn broken_pipe(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == BrokenPipe)
            || c.downcast_ref::<serde_json::Error>().and_then(|j| j.io_error_kind()) == Some(BrokenPipe)
    })
}

/// `$XDG_CONFIG_HOME/wrepl/settings.json`, else `~/.config/wrepl/settings.json`.
fn user_settings_file() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".config")))
        .map(|c| c.join("wrepl/settings.json"))
}

/// Whether `file` lies inside one of the workspace roots (as given, and
/// with symbolic links resolved).
fn inside_a_root(file: &std::path::Path, p: &PolicyArgs, project: &std::path::Path) -> bool {
    let roots: Vec<PathBuf> = if p.roots.is_empty() { vec![project.to_path_buf()] } else { p.roots.clone() };
    let real = |x: &std::path::Path| x.canonicalize().unwrap_or_else(|_| x.to_path_buf());
    let f = real(file);
    roots.iter().any(|r| f.starts_with(real(r)) || file.starts_with(r))
}

/// Settings as the command line and the project give them.
struct LoadedSettings {
    settings: Settings,
    /// The files read (protected from the tools).
    files: Vec<PathBuf>,
    /// More roots (a Claude settings file's additional directories).
    roots: Vec<PathBuf>,
}

/// Whether `path` holds Claude Code settings rather than wrepl's: it lives
/// in a `.claude/` directory, or names Claude Code's schema.
fn is_claude_settings(path: &std::path::Path, text: &str) -> bool {
    let in_claude_dir = path.parent().and_then(|d| d.file_name()).is_some_and(|n| n == ".claude");
    let schema = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("$schema").and_then(|s| s.as_str()).map(|s| s.contains("claude")))
        .unwrap_or(false);
    in_claude_dir || schema
}

/// Read one settings file, wrepl's or Claude Code's; warnings on stderr.
fn read_settings(path: &std::path::Path, project: &std::path::Path) -> anyhow::Result<(Settings, Vec<PathBuf>)> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("settings {}: {e}", path.display()))?;
    if !is_claude_settings(path, &text) {
        return Ok((Settings::load(path)?, Vec::new()));
    }
    // A file in .claude/ belongs to the directory holding it.
    let base = match path.parent() {
        Some(d) if d.file_name().is_some_and(|n| n == ".claude") => d.parent().unwrap_or(project).to_path_buf(),
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => project.to_path_buf(),
    };
    let c = Settings::from_claude_json(&text, &base)
        .map_err(|e| anyhow::anyhow!("settings {} (Claude Code format): {e}", path.display()))?;
    for w in &c.warnings {
        eprintln!("wrepl: settings {}: {}", path.display(), wrepl::text::terminal_safe(w));
    }
    Ok((c.settings, c.roots))
}

/// `--settings`, else the user's `~/.config/wrepl/settings.json` when it lies
/// outside every root (a file the tools could have written, in this run or
/// an earlier one, is never read on wrepl's own initiative); then, when
/// asked (`--claude-settings` or the key), the project's Claude Code
/// settings, whose rules and hooks are added. A file found without being
/// named is announced on stderr.
fn load_settings(p: &PolicyArgs, project: &std::path::Path) -> anyhow::Result<LoadedSettings> {
    let mut files = Vec::new();
    let mut roots = Vec::new();
    let found = match &p.settings {
        Some(f) => Some(f.clone()),
        None => match user_settings_file().filter(|f| f.is_file()) {
            Some(f) if inside_a_root(&f, p, project) => {
                eprintln!(
                    "wrepl: settings {} not read: it lies inside a workspace root, where the tools could have \
                     written it; name it with --settings to use it",
                    f.display()
                );
                None
            }
            Some(f) => {
                note(format!("wrepl: settings from {}", f.display()));
                Some(f)
            }
            None => None,
        },
    };
    let mut settings = match &found {
        Some(f) => {
            let (s, r) = read_settings(f, project)?;
            files.push(f.clone());
            roots.extend(r);
            s
        }
        None => Settings::default(),
    };
    if p.claude_settings || settings.claude_settings {
        for name in ["settings.json", "settings.local.json"] {
            let f = project.join(".claude").join(name);
            if !f.is_file() {
                continue;
            }
            note(format!("wrepl: settings from {}", f.display()));
            let (s, r) = read_settings(&f, project)?;
            settings.permissions.allow.extend(s.permissions.allow);
            settings.permissions.ask.extend(s.permissions.ask);
            settings.permissions.deny.extend(s.permissions.deny);
            settings.hooks.pre_tool_use.extend(s.hooks.pre_tool_use);
            settings.hooks.post_tool_use.extend(s.hooks.post_tool_use);
            settings.hooks.post_tool_use_failure.extend(s.hooks.post_tool_use_failure);
            // The later file's value wins, as Claude Code's local file does.
            settings.env.extend(s.env);
            files.push(f);
            roots.extend(r);
        }
        settings.validate()?;
    }
    Ok(LoadedSettings { settings, files, roots })
}

/// Instance slots of the engine of a command that runs one context at a
/// time (`eval`, `repl`, `types`): the context, the one that replaces it
/// after a fault, and room to spare. A pool of the default size (for `serve`)
/// sets up a guard page per slot's stack when the process starts, which was
/// the largest part of `wrepl eval -e 1` (see bench/README.md).
pub(crate) const ONE_CONTEXT_SLOTS: u32 = 8;

/// A sandbox engine with the default options, fuel metering on or off, and
/// `slots` instance slots (`None`: the default pool, for many contexts).
pub(crate) fn default_engine(fuel: bool, slots: Option<u32>) -> anyhow::Result<Arc<SandboxEngine>> {
    let defaults = EngineOptions::default();
    let pool_slots = slots.unwrap_or(defaults.pool_slots);
    Ok(Arc::new(SandboxEngine::new(EngineOptions { fuel, pool_slots, ..defaults })?))
}
