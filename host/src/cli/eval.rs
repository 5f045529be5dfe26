//! `wrepl eval`: evaluate snippets in order in one persistent context
//! (optionally a durable session), printing each result as text or JSON.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use wrepl::{EvalOptions, Evaluation, SessionConfig};

use super::approve::{answer_from_stdin, TerminalApprover};
use super::{builder, default_engine, downstream, PolicyArgs, SessionArgs, StoreArgs};

/// The flags of `wrepl eval`.
#[derive(clap::Args)]
pub(crate) struct EvalArgs {
    /// A snippet to evaluate (repeatable). Without any, and without FILEs, code is read from stdin.
    #[arg(short = 'e', long = "eval", value_name = "CODE")]
    snippets: Vec<String>,
    /// Files whose code to evaluate, each as one snippet, in order (after any -e snippets).
    #[arg(value_name = "FILE")]
    files: Vec<std::path::PathBuf>,
    #[arg(long, value_name = "MS", allow_negative_numbers = true, help = wrepl::budget::timeout_help("snippet"))]
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
    /// The session (and context) to record into.
    #[command(flatten)]
    session: SessionArgs,
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
    /// Cap on each result's text, in characters (the rest is cut, saying so).
    /// Default 100000, or what CLAUDE_REPL_VARIANT=trim<N>k asks (N thousand).
    #[arg(long, value_name = "CHARS")]
    text_cap: Option<usize>,
    /// Never ask: a permission `ask` is refused (on a terminal, it is
    /// otherwise a question on stdin, when the code does not come from it).
    #[arg(long)]
    no_ask: bool,
    /// Save the images and PDFs tool calls return into DIR (created if
    /// missing), as `snippet<N>-<M>.<ext>`, each named on stderr (and in
    /// `--json`'s `media`). Without it they are only described.
    #[arg(long, value_name = "DIR")]
    media_dir: Option<std::path::PathBuf>,
}

/// The images and PDFs of snippet `index`'s result: saved into `dir` when
/// given, and described (kind, type, size, file) for stderr and `--json`.
pub(crate) fn media_of(
    r: &wrepl::EvalResult,
    index: usize,
    dir: Option<&std::path::Path>,
) -> anyhow::Result<Vec<serde_json::Value>> {
    use base64::Engine as _;
    let mut out = Vec::new();
    for (n, m) in r.media.iter().enumerate() {
        let (kind, mime, data) = match m {
            wrepl::Media::Image { mime, data } => ("image", mime.as_str(), data),
            wrepl::Media::Pdf { data } => ("pdf", "application/pdf", data),
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .with_context(|| format!("the {kind} of snippet {index} is not valid base64"))?;
        let ext = match mime {
            "image/png" => "png",
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            "application/pdf" => "pdf",
            _ => "bin",
        };
        let file = match dir {
            Some(d) => {
                std::fs::create_dir_all(d).with_context(|| format!("--media-dir {}", d.display()))?;
                let f = d.join(format!("snippet{index}-{}.{ext}", n + 1));
                std::fs::write(&f, &bytes).with_context(|| format!("writing {}", f.display()))?;
                Some(f.display().to_string())
            }
            None => None,
        };
        out.push(serde_json::json!({"type": kind, "mime": mime, "bytes": bytes.len(), "file": file}));
    }
    Ok(out)
}

/// One line per image or PDF on stderr: where it was saved, or that it was
/// not shown and how to keep it.
pub(crate) fn note_media(media: &[serde_json::Value]) {
    for m in media {
        let kind = if m["type"] == "pdf" { "a PDF" } else { "an image" };
        let what = format!("{kind} ({}, {} bytes)", m["mime"].as_str().unwrap_or(""), m["bytes"]);
        match m["file"].as_str() {
            Some(f) => eprintln!("[wrepl] {what} saved to {}", wrepl::text::terminal_safe(f)),
            None => {
                eprintln!("[wrepl] the result holds {what}, which a terminal cannot show: --media-dir DIR saves it")
            }
        }
    }
}

/// How results are printed: escaped or raw, errors in colour or not.
pub(crate) struct Output {
    raw: bool,
    color: bool,
    /// The terminal REPL's: values keep their colours, errors say `Uncaught`.
    repl_values: Option<bool>,
}

impl Output {
    /// Escaped unless `raw`; errors in red when stderr is a terminal (and
    /// `NO_COLOR` is not set).
    pub(crate) fn for_terminal(raw: bool) -> Self {
        let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Self { raw, color, repl_values: None }
    }

    /// The same, printing values as the terminal REPL shows them: with
    /// their colours (and nothing else a terminal would act on) when
    /// `colors`, and thrown errors as `Uncaught …`, as node does.
    pub(crate) fn with_value_colors(self, colors: bool) -> Self {
        Self { repl_values: Some(colors), ..self }
    }

    /// A value's text as it may reach the terminal.
    fn safe_value(&self, s: &str) -> String {
        match self.repl_values {
            Some(true) if !self.raw => wrepl::text::terminal_safe_colors(s),
            _ => self.safe(s),
        }
    }

    /// `s` as it may reach the terminal.
    pub(crate) fn safe(&self, s: &str) -> String {
        if self.raw {
            s.to_string()
        } else {
            wrepl::text::terminal_safe(s).into_owned()
        }
    }

    /// An error line, in red on a colour terminal.
    pub(crate) fn paint_error(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[31m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// Say what restoring a session found (on stderr).
pub(crate) fn print_restore_report(repl: &wrepl::Repl, out: &Output) {
    let Some(r) = repl.restore_report() else { return };
    for note in &r.notes {
        eprintln!("[wrepl] {}", out.safe(note));
    }
    if !r.blocks.is_empty() || r.snapshot.is_some() {
        super::note(format!("[wrepl] {}", r.summary));
    }
    for b in
        r.blocks.iter().filter(|b| b.verdict == wrepl::replay::player::Verdict::Drift || !b.outcome_unknown.is_empty())
    {
        eprintln!("[wrepl] {}", out.safe(&b.describe()));
    }
}

/// Print one result as text: console output and the value on stdout, the
/// console's stderr and any error on stderr.
pub(crate) fn print_result(r: &wrepl::EvalResult, o: &Output) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(o.safe(&r.stdout).as_bytes())?;
    if !r.stderr.is_empty() {
        eprint!("{}", o.safe(&r.stderr));
    }
    match &r.error {
        Some(e) => {
            let (name, message) = (o.safe(&e.name), o.safe(&e.message));
            let uncaught = if o.repl_values.is_some() { "Uncaught " } else { "" };
            let head = o.paint_error(&format!("{uncaught}{name}: {message}"));
            if !e.stack.is_empty() && !e.stack.contains(&e.message) {
                eprintln!("{head}\n{}", o.safe(e.stack.trim_end()));
            } else {
                eprintln!("{head}");
            }
        }
        None => writeln!(out, "{}", o.safe_value(&r.text))?,
    }
    out.flush()
}

/// Run `wrepl eval`: every snippet runs, in order; exit 1 when any of them
/// threw or was stopped (a failure in the middle of a list of operations
/// must not look like success).
pub(crate) async fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let EvalArgs {
        mut snippets,
        files,
        timeout,
        fuel,
        json,
        raw,
        policy,
        session,
        on_tamper,
        wait,
        store,
        text_cap,
        no_ask,
        media_dir,
    } = args;
    let o = Output::for_terminal(raw);
    let wait = match wait {
        None => None,
        Some(w) if w.is_nan() || w < 0.0 => anyhow::bail!("invalid input: --wait must be a number of seconds"),
        Some(w) => Some(std::time::Duration::try_from_secs_f64(w).unwrap_or(std::time::Duration::MAX)),
    };
    let snapshot_after = session.snapshot_after();
    let boundary = session.boundary();
    let session = session.log(&store)?.map(|(name, store)| SessionConfig {
        boundary,
        on_tamper,
        wait,
        snapshot_after,
        ..SessionConfig::new(name, store)
    });
    let timeout = super::timeout_flag(timeout.as_deref())?;
    let text_cap = super::text_cap(text_cap)?;
    for f in &files {
        let code = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        snippets.push(code);
    }
    let code_from_stdin = snippets.is_empty();
    if code_from_stdin {
        let mut code = String::new();
        std::io::stdin().read_to_string(&mut code).context("reading code from stdin")?;
        snippets.push(code);
    }
    let mcp = downstream(&policy).await?;
    let mut template = builder(&policy, &mcp, default_engine(fuel.is_some(), Some(super::ONE_CONTEXT_SLOTS))?)?
        .with_limits(|l| l.text_cap = text_cap);
    if let Some(file) = store.file() {
        template = template.protect_store(file);
    }
    // On a terminal whose stdin is free, an `ask` is a question there.
    let asking = !no_ask && !code_from_stdin && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let answering = if asking {
        let (approver, asks) = TerminalApprover::new();
        template = template.approver(approver);
        Some(tokio::spawn(answer_from_stdin(asks)))
    } else {
        None
    };
    let mut repl = template.session_config(session).build().await?;
    print_restore_report(&repl, &o);
    let mut failed = 0usize;
    for (index, code) in snippets.iter().enumerate() {
        let opts = EvalOptions { timeout, fuel, ..EvalOptions::default() };
        let r = repl.run(Evaluation::new(code.as_str(), &opts, repl.limits())?).await?;
        failed += usize::from(r.failed());
        let media = media_of(&r, index, media_dir.as_deref())?;
        if json {
            // A value too big to carry as JSON is its marked text, never a
            // bare null; any other value is printed whole.
            let (result, truncated) = match &r.result {
                Some(v) => (v.clone(), None),
                None => wrepl::mcp::server::result_value(&r, text_cap),
            };
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            serde_json::to_writer(
                &mut out,
                &serde_json::json!({
                    "snippet": index,
                    "failed_calls": failed_calls(&r),
                    "result": result,
                    "result_truncated": truncated.map(|(shown, total)| serde_json::json!({"shown": shown, "total": total})),
                    "text": r.text,
                    "stdout": r.stdout,
                    "stderr": r.stderr,
                    "error": r.error,
                    "timed_out": r.timed_out,
                    "context_reset": r.context_reset,
                    "abandoned_calls": r.abandoned_calls,
                    "calls": wrepl::mcp::server::transcript(&r.calls),
                    "new_tools": r.new_tools,
                    "script_ms": r.script_ms,
                    "wall_ms": r.wall_ms,
                    "cost": r.cost,
                    "media": media,
                }),
            )?;
            writeln!(out)?;
            out.flush()?;
        } else {
            print_result(&r, &o)?;
            note_media(&media);
        }
    }
    drop(repl);
    if let Some(a) = answering {
        a.abort();
    }
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    if failed > 0 && snippets.len() > 1 && !json {
        eprintln!("wrepl: {failed} of {} snippets failed", snippets.len());
    }
    Ok(if failed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The inner calls of `r` that failed or were refused, for `--json`: which
/// call it was (id, tool) and why (kind, message, capped).
fn failed_calls(r: &wrepl::EvalResult) -> Vec<serde_json::Value> {
    r.calls
        .iter()
        .filter(|c| !c.ok)
        .map(|c| {
            let out = c.output.value();
            let whole = out["message"].as_str().unwrap_or(&c.text);
            let mut message: String = whole.chars().take(500).collect();
            if message.len() < whole.len() {
                message
                    .push_str(&format!("…[cut: {} characters; the whole message is in calls]", whole.chars().count()));
            }
            serde_json::json!({"id": c.id, "tool": c.tool, "kind": out["kind"], "message": message})
        })
        .collect()
}
