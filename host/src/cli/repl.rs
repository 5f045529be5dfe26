//! `wrepl repl` (and `wrepl` alone on a terminal): an interactive REPL on a
//! line editor (rustyline). Input continues over lines while the parser
//! says the code is cut short; Ctrl-C stops the running evaluation (the
//! context stays) or clears the line; Ctrl-D exits. Permission `ask`s are
//! questions at the prompt. History is kept in a file out of the tools'
//! reach.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use futures_util::FutureExt as _;
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Editor, Helper};
use wrepl::{CancellationToken, EvalOptions, Evaluation, SessionConfig};

use super::approve::{Answer, TerminalApprover, PROMPT};
use super::eval::{print_restore_report, print_result, Output};
use super::status::StatusLine;
use super::{builder, default_engine, downstream, PolicyArgs, SessionArgs, StoreArgs};

/// The flags of `wrepl repl` (also accepted by `wrepl` alone).
#[derive(clap::Args, Default)]
pub(crate) struct ReplArgs {
    #[arg(long, value_name = "MS", allow_negative_numbers = true, help = wrepl::budget::timeout_help("evaluation"))]
    timeout: Option<String>,
    /// Deterministic instruction budget per evaluation (wasmtime fuel).
    #[arg(long, value_name = "UNITS")]
    fuel: Option<u64>,
    /// Tools, workspace and permissions.
    #[command(flatten)]
    policy: PolicyArgs,
    /// The session (and context) to record into.
    #[command(flatten)]
    session: SessionArgs,
    /// Where the session is stored.
    #[command(flatten)]
    store: StoreArgs,
    /// The history file (default: $XDG_STATE_HOME/wrepl/history, else
    /// ~/.local/state/wrepl/history); `--history ''` keeps none.
    #[arg(long, value_name = "FILE")]
    history: Option<std::ffi::OsString>,
    /// Save the images and PDFs tool calls return into DIR, each named on
    /// stderr; without it they are only described.
    #[arg(long, value_name = "DIR")]
    media_dir: Option<PathBuf>,
}

/// The line editor's view of the code: more lines while it is cut short.
struct Lines;

impl Helper for Lines {}
impl Completer for Lines {
    type Candidate = String;
}
impl Hinter for Lines {
    type Hint = String;
}
impl Highlighter for Lines {}
impl Validator for Lines {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        if !input.trim_start().starts_with('.') && wrepl::source::needs_more_input(input) {
            return Ok(ValidationResult::Incomplete);
        }
        Ok(ValidationResult::Valid(None))
    }
}

/// Where the history is kept by default.
fn default_history() -> Option<PathBuf> {
    let var = |n| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(state) = var("XDG_STATE_HOME").filter(|p| p.is_absolute()) {
        return Some(state.join("wrepl/history"));
    }
    var("HOME").map(|h| h.join(".local/state/wrepl/history"))
}

const HELP: &str = "\
  JavaScript, evaluated in one persistent sandboxed context (top-level await works).
  A line that is cut short (an open bracket, a trailing operator) continues on the next.
  Ctrl-C stops a running evaluation (the context stays) or clears the line; Ctrl-D exits.
  .help      this text
  .session   the session this context records into
  .allow R   allow what rule R covers until the REPL ends (e.g. .allow Write(./src/**),
             .allow Bash(git log:*)); deny rules still win, hooks still decide
  .types     TypeScript declarations of the globals (tools included)
  .exit      leave";

type LineEditor = Editor<Lines, DefaultHistory>;

/// Read one entry (several lines while the code is cut short) off the
/// async runtime's threads.
async fn read(mut editor: LineEditor, prompt: &'static str) -> anyhow::Result<(LineEditor, rustyline::Result<String>)> {
    Ok(tokio::task::spawn_blocking(move || {
        let line = editor.readline(prompt);
        (editor, line)
    })
    .await?)
}

/// Run the interactive REPL until Ctrl-D or `.exit`.
pub(crate) async fn run(args: ReplArgs) -> anyhow::Result<ExitCode> {
    let ReplArgs { timeout, fuel, policy, session, store, history, media_dir } = args;
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("the interactive REPL needs a terminal on stdin; to run code from a pipe, use `wrepl eval`");
    }
    let timeout = super::timeout_flag(timeout.as_deref())?;
    // (An OsString, not a PathBuf: clap refuses an empty path, and `''` means none.)
    let history = match history {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(PathBuf::from(p)),
        None => default_history(),
    };
    let snapshot_after = session.snapshot_after();
    let session_config = session.log(&store)?.map(|(name, store)| SessionConfig {
        snapshot_after,
        boundary: session.boundary(),
        ..SessionConfig::new(name, store)
    });
    let mcp = downstream(&policy).await?;
    let (approver, mut asks) = TerminalApprover::new();
    let mut template =
        builder(&policy, &mcp, default_engine(fuel.is_some(), Some(super::ONE_CONTEXT_SLOTS))?)?.approver(approver);
    // The running calls, live on a terminal's stderr.
    let status = std::io::stderr().is_terminal().then(StatusLine::new);
    if let Some(s) = &status {
        template = template.events(s.sink(policy.progress));
    }
    if let Some(file) = store.file() {
        template = template.protect_store(file);
    }
    // The history holds past code: wrepl's own state, out of the tools' reach.
    if let Some(h) = &history {
        template = template.protect(h);
    }
    // SIGINT is wrepl's from now on (it never ends the process): Ctrl-C
    // during an evaluation stops the evaluation.
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut repl = template.session_config(session_config).build().await?;
    let out = Output::for_terminal(false);
    print_restore_report(&repl, &out);

    let config = rustyline::Config::builder().auto_add_history(false).max_history_size(10_000)?.build();
    let mut editor: LineEditor = Editor::with_config(config)?;
    // Evaluations so far (names the media files of each).
    let mut evaluated = 0usize;
    editor.set_helper(Some(Lines));
    if let Some(h) = &history {
        if h.exists() {
            if let Err(e) = editor.load_history(h) {
                eprintln!("wrepl: history {}: {e}", h.display());
            }
        }
    }
    super::note(format!(
        "wrepl {}: JavaScript in a sealed sandbox. .help for help, Ctrl-D to leave.",
        env!("CARGO_PKG_VERSION")
    ));
    loop {
        let (ed, line) = read(editor, "> ").await?;
        editor = ed;
        let code = match line {
            Ok(code) => code,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        if code.trim().is_empty() {
            continue;
        }
        editor.add_history_entry(code.as_str())?;
        if let Some(h) = &history {
            save_history(&mut editor, h);
        }
        if let Some(command) = code.trim().strip_prefix('.').filter(|c| !c.is_empty() && !c.starts_with('.')) {
            let (name, rest) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
            match name {
                "exit" | "quit" => break,
                "allow" if rest.trim().is_empty() => {
                    eprintln!("  .allow RULE: e.g. .allow Write, .allow Bash(npm test)")
                }
                "allow" => match repl.dispatcher().grant(rest.trim()) {
                    Ok(()) => eprintln!("  allowed until the REPL ends: {}", wrepl::text::terminal_safe(rest.trim())),
                    Err(e) => {
                        eprintln!("{}", out.paint_error(&format!("  {}", wrepl::text::terminal_safe(&e.to_string()))))
                    }
                },
                "help" => eprintln!("{HELP}"),
                "session" => match (&session.session, repl.session_name()) {
                    (Some(_), Some(name)) => eprintln!("  recording into session {name:?}"),
                    _ => eprintln!("  not recorded: start with --session NAME to keep this context"),
                },
                "types" => {
                    let tools = wrepl::dts::dispatcher_signatures(repl.dispatcher());
                    let registered: Vec<_> = repl.registered_tools().iter().map(Into::into).collect();
                    // Descriptions come from downstream servers and scripts.
                    print!("{}", wrepl::text::terminal_safe(&wrepl::dts::declarations(&tools, &registered)));
                    let _ = std::io::stdout().flush();
                }
                other => eprintln!("  unknown command .{other}: .help lists them"),
            }
            continue;
        }
        // Ctrl-C now stops the evaluation (the terminal is out of the
        // editor's raw mode, so it is a SIGINT). One that came while no
        // evaluation ran is forgotten.
        while sigint.recv().now_or_never().is_some() {}
        let cancel = CancellationToken::new();
        let opts = EvalOptions { timeout, fuel, cancel: cancel.clone(), ..EvalOptions::default() };
        let no_echo = status.is_some().then(NoEcho::new);
        let evaluation = match Evaluation::new(code.as_str(), &opts, repl.limits()) {
            Ok(ev) => repl.run(ev),
            Err(e) => {
                eprintln!("wrepl: {e}");
                continue;
            }
        };
        tokio::pin!(evaluation);
        if let Some(s) = &status {
            s.start();
        }
        let result = loop {
            tokio::select! {
                r = &mut evaluation => break r,
                _ = sigint.recv() => cancel.cancel(),
                Some(ask) = asks.recv() => {
                    // A question whose call stopped waiting is not asked.
                    if ask.reply.is_closed() {
                        continue;
                    }
                    // The question goes through the editor: Ctrl-C there
                    // means no. The status line waits meanwhile.
                    if let Some(s) = &status {
                        s.pause();
                    }
                    eprint!("{}", ask.text);
                    let (ed, line) = read(editor, PROMPT).await?;
                    editor = ed;
                    let answer = line.map(|l| Answer::parse(&l)).unwrap_or(Answer::No);
                    let _ = ask.reply.send(answer);
                    if let Some(s) = &status {
                        s.start();
                    }
                }
            }
        };
        if let Some(s) = &status {
            s.stop();
        }
        drop(no_echo);
        match result {
            Ok(r) => {
                if cancel.is_cancelled() && r.failed() {
                    eprintln!("{}", out.paint_error("interrupted"));
                }
                print_result(&r, &out)?;
                evaluated += 1;
                match super::eval::media_of(&r, evaluated, media_dir.as_deref()) {
                    Ok(media) => super::eval::note_media(&media),
                    Err(e) => eprintln!("{}", out.paint_error(&format!("wrepl: {e:#}"))),
                }
            }
            Err(e) => {
                eprintln!("{}", out.paint_error(&format!("wrepl: {}", wrepl::text::terminal_safe(&e.to_string()))))
            }
        }
    }
    drop(repl);
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// While it lives, the terminal does not echo what is typed: an evaluation
/// is running, with the status line drawn on the line the cursor is on, and
/// an echoed `^C` (or typed-ahead text) would move the cursor off it, leaving
/// a stale status line behind. Typed-ahead text still reaches the next
/// prompt. The terminal's settings come back when it is dropped.
struct NoEcho {
    saved: Option<rustix::termios::Termios>,
}

impl NoEcho {
    fn new() -> Self {
        use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions};
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok();
        if let Some(t) = &saved {
            let mut quiet = t.clone();
            quiet.local_modes.remove(LocalModes::ECHO | LocalModes::ECHOCTL);
            let _ = tcsetattr(&stdin, OptionalActions::Now, &quiet);
        }
        Self { saved }
    }
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        if let Some(t) = &self.saved {
            let _ = rustix::termios::tcsetattr(std::io::stdin(), rustix::termios::OptionalActions::Now, t);
        }
    }
}

/// Keep the history in a private file (it holds past code).
fn save_history(editor: &mut LineEditor, path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() && std::fs::create_dir_all(dir).is_err() {
            return;
        }
    }
    if editor.history().is_empty() {
        return;
    }
    // Private from its first byte (it holds past code).
    use std::os::unix::fs::OpenOptionsExt;
    if let Err(e) = std::fs::OpenOptions::new().append(true).create(true).mode(0o600).open(path) {
        eprintln!("wrepl: history {}: {e}", path.display());
        return;
    }
    if let Err(e) = editor.save_history(path) {
        eprintln!("wrepl: history {}: {e}", path.display());
        return;
    }
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}
