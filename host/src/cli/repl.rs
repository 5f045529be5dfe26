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

/// The names Tab completes: the context's globals and, for each global
/// holding an object, its properties (the guest lists them after every
/// evaluation: see `View::Terminal`), and the REPL's dot commands.
#[derive(Default)]
struct Names {
    globals: Vec<String>,
    members: std::collections::HashMap<String, Vec<String>>,
}

impl Names {
    /// The names from an evaluation's completion table; `None` when it has none.
    fn from_table(table: &serde_json::Value) -> Option<Self> {
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
        };
        let globals = strings(table.get("globals")?);
        let members = table
            .get("members")
            .and_then(|m| m.as_object())
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default();
        Some(Self { globals, members })
    }
}

/// The line editor's helper: Tab completion from [`Names`].
struct Lines {
    names: std::sync::Arc<std::sync::Mutex<Names>>,
}

/// Words Tab completes before any evaluation listed the globals.
const KEYWORDS: &[&str] = &[
    "await",
    "async",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "delete",
    "do",
    "else",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "in",
    "instanceof",
    "let",
    "new",
    "null",
    "return",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
];

const COMMANDS: &[&str] = &[".allow", ".exit", ".help", ".session", ".types"];

/// What Tab offers at byte `pos` of `line`: where the word being completed
/// starts, and the candidates (sorted, without repeats).
fn complete_at(names: &Names, line: &str, pos: usize) -> (usize, Vec<String>) {
    let before = &line[..pos];
    if before.trim_start().starts_with('.') && !before.contains(char::is_whitespace) {
        let start = before.len() - before.trim_start().len();
        let found = COMMANDS.iter().filter(|c| c.starts_with(&before[start..])).map(|c| c.to_string()).collect();
        return (start, found);
    }
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let word_start =
        before.rfind(|c: char| !ident(c)).map_or(0, |i| i + before[i..].chars().next().map_or(1, char::len_utf8));
    let word = &before[word_start..];
    let mut found: Vec<String> = if before[..word_start].ends_with('.') && !before[..word_start].ends_with("..") {
        // A property of a global: `name.wo`.
        let head = &before[..word_start - 1];
        let object_start = head.rfind(|c: char| !ident(c)).map_or(0, |i| i + 1);
        let object = &head[object_start..];
        if object.is_empty() || (object_start > 0 && head[..object_start].ends_with('.')) {
            return (pos, Vec::new());
        }
        names
            .members
            .get(object)
            .map(|m| m.iter().filter(|n| n.starts_with(word)).cloned().collect())
            .unwrap_or_default()
    } else {
        names
            .globals
            .iter()
            .map(String::as_str)
            .chain(KEYWORDS.iter().copied())
            .filter(|n| n.starts_with(word))
            .map(str::to_string)
            .collect()
    };
    // Names that start with `__` (wrepl's own among them) only when asked for.
    if !word.starts_with("__") {
        found.retain(|n| !n.starts_with("__"));
    }
    found.retain(|n| !n.starts_with("__wrepl"));
    found.sort();
    found.dedup();
    (word_start, found)
}

impl Helper for Lines {}
impl Completer for Lines {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        Ok(complete_at(&names, line, pos))
    }
}
impl Hinter for Lines {
    type Hint = String;
}
impl Highlighter for Lines {}
impl Validator for Lines {
    fn validate(&self, _ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        // Code cut short continues at a `... ` prompt (see `read_entry`).
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
  Values are shown as node's util.inspect shows them; _ is the last value, _error the
  last error. A line that is cut short (an open bracket, a trailing operator) continues
  at a ... prompt. Tab completes globals, their properties, tools and commands.
  Ctrl-C stops a running evaluation (the context stays) or clears the input; Ctrl-D exits.
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

/// Read one entry: a line at `> `, and more at `... ` while the code is cut
/// short (as node's REPL does). `Ok(None)`: Ctrl-C dropped the entry.
async fn read_entry(mut editor: LineEditor) -> anyhow::Result<(LineEditor, rustyline::Result<Option<String>>)> {
    let mut code = String::new();
    loop {
        let prompt = if code.is_empty() { "> " } else { "... " };
        let (ed, line) = read(editor, prompt).await?;
        editor = ed;
        let line = match line {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => return Ok((editor, Ok(None))),
            // Ctrl-D inside an entry drops it (node does the same).
            Err(ReadlineError::Eof) if !code.is_empty() => return Ok((editor, Ok(None))),
            Err(e) => return Ok((editor, Err(e))),
        };
        if !code.is_empty() {
            code.push('\n');
        }
        code.push_str(&line);
        let command = code.trim_start().starts_with('.');
        if command || code.trim().is_empty() || !wrepl::source::needs_more_input(&code) {
            return Ok((editor, Ok(Some(code))));
        }
    }
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

    // Tab completes what all candidates share, a second Tab lists them (as in node and bash).
    let config = rustyline::Config::builder()
        .auto_add_history(false)
        .max_history_size(10_000)?
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut editor: LineEditor = Editor::with_config(config)?;
    // Evaluations so far (names the media files of each).
    let mut evaluated = 0usize;
    let names = std::sync::Arc::new(std::sync::Mutex::new(Names::default()));
    editor.set_helper(Some(Lines { names: names.clone() }));
    // Values in colour on a colour terminal (as node does; NO_COLOR turns it off).
    let colors = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let view = if colors { wrepl::View::TerminalColors } else { wrepl::View::Terminal };
    let out = out.with_value_colors(colors);
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
        let (ed, entry) = read_entry(editor).await?;
        editor = ed;
        let code = match entry {
            Ok(Some(code)) => code,
            Ok(None) => continue,
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
        let opts = EvalOptions { timeout, fuel, cancel: cancel.clone(), view, ..EvalOptions::default() };
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
                if let Some(n) = r.result.as_ref().and_then(Names::from_table) {
                    *names.lock().unwrap_or_else(|p| p.into_inner()) = n;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        let table = serde_json::json!({
            "globals": ["Math", "console", "counter", "__wrepl_import", "__proto__"],
            "members": {"Math": ["max", "min", "PI"], "console": ["log", "error"]},
        });
        Names::from_table(&table).unwrap()
    }

    #[test]
    fn tab_completes_globals_members_and_commands() {
        let n = names();
        assert_eq!(
            complete_at(&n, "co", 2),
            (0, vec!["console".into(), "const".into(), "continue".into(), "counter".into()])
        );
        assert_eq!(complete_at(&n, "x = Math.m", 10), (9, vec!["max".into(), "min".into()]));
        assert_eq!(complete_at(&n, "console.", 8), (8, vec!["error".into(), "log".into()]));
        assert_eq!(complete_at(&n, ".he", 3), (0, vec![".help".into()]));
        // wrepl's own names never; other `__` names only when typed.
        assert_eq!(complete_at(&n, "__", 2), (0, vec!["__proto__".into()]));
        assert!(complete_at(&n, "", 0).1.iter().all(|c| !c.starts_with("__")));
        // No members of what is not a global name.
        assert_eq!(complete_at(&n, "a.b.m", 5).1, Vec::<String>::new());
        assert_eq!(complete_at(&n, "nothing.m", 9).1, Vec::<String>::new());
    }
}
