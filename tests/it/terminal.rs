//! The interactive REPL driven like a person at a terminal, through tmux:
//! multi-line input, Ctrl-C stopping an evaluation and not the REPL, the
//! approval question answered yes and no (the file on disk says which), the
//! history file, Ctrl-D.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// `tmux` on a server socket of its own; `None` (with a note) when tmux is
/// missing and `WREPL_REQUIRE_TMUX` is not `1`.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(dir: &Path, command: &str) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            if std::env::var("WREPL_REQUIRE_TMUX").as_deref() == Ok("1") {
                panic!("tmux is not installed: scripts/test.sh installs it");
            }
            eprintln!("note: skipping a terminal test: tmux is not installed (scripts/test.sh installs it)");
            return None;
        }
        let socket = format!("wrepl-test-{}-{}", std::process::id(), dir.file_name().unwrap().to_string_lossy());
        let me = Self { socket };
        let ok = me
            .tmux(&["new-session", "-d", "-s", "t", "-x", "160", "-y", "60", "-c"])
            .arg(dir)
            .arg(command)
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session");
        assert!(me.tmux(&["set-option", "-t", "t", "remain-on-exit", "on"]).status().unwrap().success());
        Some(me)
    }

    fn tmux(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.socket).args(args);
        c
    }

    /// Type `keys` (tmux key names: `Enter`, `C-c`, …, or literal text).
    fn send(&self, keys: &[&str]) {
        assert!(self.tmux(&["send-keys", "-t", "t"]).args(keys).status().unwrap().success());
    }

    /// Type a line and Enter.
    fn line(&self, text: &str) {
        assert!(self.tmux(&["send-keys", "-t", "t", "-l", text]).status().unwrap().success());
        self.send(&["Enter"]);
    }

    /// The screen and its scrollback, with the escape sequences of its colours.
    fn screen_with_colours(&self) -> String {
        let o = self.tmux(&["capture-pane", "-p", "-e", "-J", "-S", "-500", "-t", "t"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The screen and its scrollback.
    fn screen(&self) -> String {
        let o = self.tmux(&["capture-pane", "-p", "-J", "-S", "-500", "-t", "t"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Wait (up to a minute) until the screen satisfies `done`.
    fn wait(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "waited a minute for {what}; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait until the screen holds `text` `n` times.
    fn wait_count(&self, text: &str, n: usize) -> String {
        self.wait(&format!("{n}× {text:?}"), |s| s.matches(text).count() >= n)
    }

    fn dead(&self) -> bool {
        let o = self.tmux(&["display-message", "-p", "-t", "t", "#{pane_dead}"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim() == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]).status();
    }
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

#[test]
fn the_interactive_repl_works_like_a_person_expects() {
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().canonicalize().unwrap();
    let settings = dir.join("settings.json");
    std::fs::write(&settings, r#"{"permissions": {"ask": ["Write"]}}"#).unwrap();
    let history = dir.join("state/history");
    // --progress shows on the screen when an evaluation has started.
    let command = format!(
        "env HOME={home} {wrepl} --root {root} --settings {settings} --history {history} --progress \
         --allow 'Bash(sleep 3)'",
        home = quote(&dir),
        wrepl = quote(Path::new(env!("CARGO_BIN_EXE_wrepl"))),
        root = quote(&dir),
        settings = quote(&settings),
        history = quote(&history),
    );
    let Some(t) = Tmux::start(&dir, &command) else { return };
    t.wait_count("Ctrl-D to leave", 1);

    // A line cut short continues on the next, at a `... ` prompt.
    t.line("let x = 41");
    t.wait_count("\nundefined\n", 1);
    t.line("x +");
    t.wait_count("\n... ", 1);
    t.line("1");
    t.wait(r#"the line "42""#, |s| s.lines().any(|l| l.trim() == "42"));

    // The history (written by now) is wrepl's own: out of the tools' reach.
    t.line("await cat('state/history').then(() => 'read', e => 'refused: ' + e.kind)");
    t.wait_count("refused: protected", 1);

    // Ctrl-C stops the running evaluation, not the REPL; x is still there.
    t.line("await gl('*.none'); while (true) {}");
    t.wait_count("Glob Complete", 1);
    t.send(&["C-c"]);
    t.wait_count("AbortError", 1);
    t.line("x");
    t.wait(r#"the line "41""#, |s| s.lines().any(|l| l.trim() == "41"));

    // While a call runs, the status line names it and its time; it is gone
    // once the evaluation ends.
    t.line("(await sh('sleep 3')).length + 1000");
    t.wait_count("1 call running: Bash", 1);
    let s = t.wait(r#"the line "1000""#, |s| s.lines().any(|l| l.trim() == "1000"));
    // No status line is left anywhere, Ctrl-C's evaluation included (the
    // terminal does not echo `^C` while an evaluation runs).
    assert!(!s.contains("call running") && !s.contains("evaluating "), "the status line is cleared:\n{s}");

    // An `ask` rule is a question: yes writes the file, no leaves it absent.
    t.line("await Write({file_path: 'yes.txt', content: 'written'})");
    t.wait_count("allow? [y] yes once", 1);
    let screen = t.screen();
    assert!(screen.contains(r#""file_path": "yes.txt""#), "the whole input is shown:\n{screen}");
    t.line("y");
    t.wait_count("created: true", 1);
    assert_eq!(std::fs::read_to_string(dir.join("yes.txt")).unwrap(), "written");
    t.line("await Write({file_path: 'no.txt', content: 'refused'})");
    t.wait_count("allow? [y] yes once", 2);
    t.line("n");
    t.wait_count("declined", 1);
    assert!(!dir.join("no.txt").exists(), "a refused call wrote nothing");

    // `.allow RULE` answers the questions that rule covers, for the rest of
    // the REPL; a malformed rule is refused, and deny rules still win.
    t.line(".allow Write(");
    t.wait_count("invalid rule", 1);
    t.line(".allow Write(./granted/**)");
    t.wait_count("allowed until the REPL ends", 1);
    t.line("await Write({file_path: 'granted/g.txt', content: 'no question'})");
    t.wait_count("created: true", 2);
    assert_eq!(std::fs::read_to_string(dir.join("granted/g.txt")).unwrap(), "no question");
    assert_eq!(t.screen().matches("allow? [y] yes once").count(), 2, "no third question");

    // Ctrl-D leaves; the history kept what was typed, privately.
    t.send(&["C-d"]);
    t.wait("the REPL to exit", |_| t.dead());
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(kept.contains("let x = 41") && kept.contains("x +"), "{kept}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&history).unwrap().permissions().mode() & 0o777, 0o600);
}

/// Values as node's REPL shows them (util.inspect, in colour), `_` and
/// `_error`, `Uncaught`, the `... ` prompt and Tab completion, on a real
/// terminal. The same values again after a restart: the session replays
/// the terminal view, `_` included.
#[test]
fn the_repl_shows_values_and_completes_names_as_node_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().canonicalize().unwrap();
    let store = dir.join("sessions.sqlite3");
    let command = format!(
        "env HOME={home} TERM=xterm-256color {wrepl} repl --root {root} --history '' --store {store} --session s",
        home = quote(&dir),
        wrepl = quote(Path::new(env!("CARGO_BIN_EXE_wrepl"))),
        root = quote(&dir),
        store = quote(&store),
    );
    let Some(t) = Tmux::start(&dir, &command) else { return };
    t.wait_count("Ctrl-D to leave", 1);
    // `input` gives one more line `expected` (and the prompt is back).
    let shows = |input: &str, expected: &str| {
        let count = |s: &str| s.lines().filter(|l| l.trim_end() == expected).count();
        let before = count(&t.screen());
        t.line(input);
        t.wait(&format!("{expected:?} after {input:?}"), |s| {
            count(s) > before && s.lines().rfind(|l| !l.trim().is_empty()).is_some_and(|l| l == "> ")
        });
    };
    shows("new Map([[1, {a: [1, 2, {b: {c: 3}}]}]])", "Map(1) { 1 => { a: [ 1, 2, [Object] ] } }");
    shows("_.size + 1", "2");
    shows("new Set(['a', 1])", "Set(2) { 'a', 1 }");
    shows("/ab+c/gi", "/ab+c/gi");
    shows("class Point { constructor() { this.x = 1 } }; new Point()", "Point { x: 1 }");
    shows("const o = {a: 1}; o.self = o; o", "<ref *1> { a: 1, self: [Circular *1] }");
    shows("[undefined, null, , 'it\\'s']", r#"[ undefined, null, <1 empty item>, "it's" ]"#);
    shows("({get g() { throw 1 }, f() {}})", "{ g: [Getter], f: [Function: f] }");
    shows("let y = 2", "undefined");
    shows("throw new TypeError('boom')", "Uncaught TypeError: boom");
    shows("_error.message", "'boom'");
    shows("_ = 5", "Expression assignment to _ now disabled.");
    shows("7; _", "5");
    // Numbers in colour (node's yellow); what the script's strings hold is
    // not a colour: it is escaped.
    t.line("[12345, '\\x1b[2J']");
    let s = t.wait("a coloured number", |s| s.lines().any(|l| l.starts_with("[ 12345")));
    let coloured = t.screen_with_colours();
    assert!(coloured.contains("\u{1b}[33m12345\u{1b}[39m"), "{coloured}");
    assert!(s.contains(r"'\x1B[2J'") || s.contains(r"'\x1b[2J'"), "{s}");

    // Code cut short continues at `... `.
    t.line("function add(a,");
    t.wait_count("\n... ", 1);
    t.line("b) { return a + b }");
    shows("add(2, 3)", "5");

    // Tab completes a global's property, and a global.
    t.send(&["-l", "Math.ma"]);
    t.send(&["Tab"]);
    t.wait("Math.max on the prompt line", |s| s.lines().any(|l| l.trim_end() == "> Math.max"));
    t.send(&["Enter"]);
    t.wait_count("[Function: max]", 1);
    t.send(&["-l", "ad"]);
    t.send(&["Tab"]);
    t.wait("add on the prompt line", |s| s.lines().any(|l| l.trim_end() == "> add"));
    t.send(&["C-u"]);

    // Ctrl-D; the session comes back with `_` as it was (replayed in the
    // terminal view).
    t.send(&["C-d"]);
    t.wait("the REPL to exit", |_| t.dead());
    drop(t);
    let Some(t) = Tmux::start(&dir, &command) else { return };
    t.wait_count("Ctrl-D to leave", 1);
    t.line("[_, y]");
    t.wait("the kept values", |s| s.lines().any(|l| l.trim_end() == "[ 5, 2 ]"));
    t.send(&["C-d"]);
    t.wait("the REPL to exit", |_| t.dead());
}
