//! Shell command lines as permission subjects, over the one parser in
//! `crate::shell_syntax`: the top-level commands allow and ask rules must
//! cover (or the construct that keeps any rule from covering them), and
//! every command deny rules are tried against — at every depth, with
//! assignments, wrappers (`nice`, `timeout`, `sudo`, …) and program paths
//! stripped, and the strings of `eval`, `bash -c`, `trap`, `watch`, … parsed
//! in turn. What this means for rules is described in the parent module's
//! documentation ([Shell commands](super#shell-commands)).
//!
//! This is where wrepl's knowledge of what bash builtins and common programs
//! run lives; it is a best effort over programs it knows (a copy of `rm`
//! under another name is not `rm`), which is why deny rules are a blocklist
//! and allow rules the boundary.

use crate::shell_syntax::{self, Command, Construct, Script, Word};

/// How deep wrappers and command strings are followed.
const MAX_DEPTH: usize = 8;

/// One symbol of a command as rules see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sym {
    /// A character of a word whose value is known.
    Ch(char),
    /// A boundary between words.
    Sep,
    /// A word known only when bash runs (an expansion, a pattern): any
    /// number of words.
    Unknown,
}

/// One command as rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Subject {
    /// Its words as symbols.
    pub(super) syms: Vec<Sym>,
    /// Its words as values (`None`: known only when it runs).
    pub(super) words: Vec<Option<String>>,
    /// As written.
    pub(super) text: String,
}

impl Subject {
    fn new(words: &[Word], program: Option<&str>) -> Subject {
        let mut values: Vec<Option<String>> = words.iter().map(|w| w.lit.clone()).collect();
        if let (Some(p), Some(first)) = (program, values.first_mut()) {
            *first = Some(p.to_string());
        }
        let mut syms = Vec::new();
        for (i, w) in values.iter().enumerate() {
            if i > 0 {
                syms.push(Sym::Sep);
            }
            match w {
                Some(v) => syms.extend(v.chars().map(Sym::Ch)),
                None => syms.push(Sym::Unknown),
            }
        }
        let text = words.iter().map(|w| w.raw.as_str()).collect::<Vec<_>>().join(" ");
        Subject { syms, words: values, text }
    }
}

/// Why no allow rule can cover a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    /// The construct.
    pub(super) construct: Construct,
    /// The command it is in, as written (empty when it is the line's structure).
    pub(super) part: String,
}

/// A shell command line prepared for matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShellSubject {
    /// The top-level commands allow and ask rules must cover, or why no
    /// rule can.
    pub(super) allow: Result<Vec<Subject>, Refusal>,
    /// Every command deny rules are tried against.
    pub(super) deny: Vec<Subject>,
    /// Why some command cannot be known, so that every deny rule matches.
    pub(super) unknown: Option<String>,
}

/// Analyse a command line for the rules.
pub(super) fn analyze(cmd: &str) -> ShellSubject {
    let script = shell_syntax::parse(cmd);
    let mut deny = Deny::default();
    deny.script(&script, 0);
    ShellSubject { allow: allow_view(&script), deny: deny.subjects, unknown: deny.unknown }
}

fn allow_view(script: &Script) -> Result<Vec<Subject>, Refusal> {
    if let Some(c) = &script.structure {
        return Err(Refusal { construct: c.clone(), part: String::new() });
    }
    script
        .top()
        .map(|c| match c.construct().or_else(|| refused_program(&c.words)) {
            Some(construct) => Err(Refusal { construct, part: c.text() }),
            None => Ok(Subject::new(&c.words, None)),
        })
        .collect()
}

/// The program a command word names (`/bin/rm` → `rm`).
pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// What a command runs besides itself.
enum Step {
    /// Nothing else (as far as wrepl knows).
    Plain,
    /// This command (a wrapper's).
    Runs(Vec<Word>),
    /// These commands (`find -exec … ;`).
    Each(Vec<Vec<Word>>),
    /// These command strings (`eval`, `bash -c`, `trap`).
    Strings(Vec<String>),
    /// Values that may be commands for a later program (`GIT_PAGER='…'`):
    /// deny rules see the commands in them; they are not run here.
    Data(Vec<String>),
    /// Something that cannot be known statically (why).
    Unknown(String),
}

/// Every command deny rules see.
#[derive(Default)]
struct Deny {
    subjects: Vec<Subject>,
    unknown: Option<String>,
}

impl Deny {
    fn unknown(&mut self, why: String) {
        if self.unknown.is_none() {
            self.unknown = Some(why);
        }
    }

    fn script(&mut self, s: &Script, depth: usize) {
        if let Some(c) = &s.opaque {
            self.unknown(format!("{c} hides what the command line runs"));
        }
        for c in &s.commands {
            self.command(c, depth);
        }
    }

    fn command(&mut self, c: &Command, depth: usize) {
        for a in &c.assignments {
            if let Some(why) = risky_variable(&a.name) {
                self.unknown(why);
            }
            if let Some(v) = a.value.as_ref().and_then(|v| v.lit.as_deref()) {
                self.data(v, depth);
            }
        }
        self.run(c.words.clone(), depth);
    }

    /// `words` run as a command: a subject, and what it runs in turn.
    fn run(&mut self, words: Vec<Word>, depth: usize) {
        let Some(first) = words.first() else { return };
        let Some(name) = first.lit.clone() else {
            self.unknown(format!("the command word `{}` is only known when it runs", first.raw));
            return;
        };
        let program = basename(&name);
        self.subjects.push(Subject::new(&words, None));
        if program != name {
            self.subjects.push(Subject::new(&words, Some(program)));
        }
        if depth >= MAX_DEPTH {
            self.unknown(format!("commands nested too deeply in `{}`", first.raw));
            return;
        }
        match step(program, &words[1..]) {
            Step::Plain => {}
            Step::Runs(inner) => self.run(inner, depth + 1),
            Step::Each(list) => {
                for inner in list {
                    self.run(inner, depth + 1);
                }
            }
            Step::Strings(list) => {
                for s in list {
                    let inner = shell_syntax::parse_nested(&s, depth + 1);
                    self.script(&inner, depth + 1);
                }
            }
            Step::Data(list) => {
                for s in list {
                    self.data(&s, depth);
                }
            }
            Step::Unknown(why) => self.unknown(why),
        }
    }

    /// A value that some program may later run as a command: its commands
    /// are subjects (what cannot be known in it is not held against it).
    fn data(&mut self, value: &str, depth: usize) {
        if depth >= MAX_DEPTH || value.is_empty() {
            return;
        }
        let inner = shell_syntax::parse_nested(value, depth + 1);
        let mut d = Deny::default();
        d.script(&inner, depth + 1);
        self.subjects.extend(d.subjects);
    }
}

/// A word known only when it runs (what `xargs` and `find` fill in).
fn filled_in(raw: &str) -> Word {
    Word { raw: raw.to_string(), lit: None, construct: None, expands: true, pattern: false }
}

/// What a word of `env`, `export`, `declare`, … assigns.
enum Assigned<'a> {
    /// This variable (the name without `+` or a subscript).
    Name(&'a str),
    /// Some variable, known only when it runs (`export "$n"=x`, `export $x`).
    Unknown,
    /// Not an assignment.
    No,
}

/// The variable a `NAME=value` word assigns, read from its value after quote
/// removal, or from its text when the value is known only at run time.
fn assigned(w: &Word) -> Assigned<'_> {
    let plain = |text: &str| -> Option<usize> {
        let (name, _) = text.split_once('=')?;
        let name = name.strip_suffix('+').unwrap_or(name);
        let base = name.split_once('[').map_or(name, |(b, _)| b);
        let mut chars = base.chars();
        let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        ok.then_some(base.len())
    };
    match &w.lit {
        Some(v) => match plain(v) {
            Some(n) => Assigned::Name(&v[..n]),
            None => Assigned::No,
        },
        None => match plain(&w.raw) {
            Some(n) => Assigned::Name(&w.raw[..n]),
            None => Assigned::Unknown,
        },
    }
}

fn lits(words: &[Word]) -> Option<Vec<&str>> {
    words.iter().map(|w| w.lit.as_deref()).collect()
}

/// How a wrapper's arguments read: options, then `operands`, then the command.
struct Spec {
    /// Options without an argument (`-v`, `--verbose`).
    flags: &'static [&'static str],
    /// Options with an argument (`-n 5`, `-n5`, `--adjustment=5`).
    with_arg: &'static [&'static str],
    /// Short options with an optional argument attached (`xargs -i{}`).
    attached: &'static [&'static str],
    /// Options after which no command runs (`chrt -p`).
    no_command: &'static [&'static str],
    /// Options whose argument is a shell command string (`flock -c`).
    string: &'static [&'static str],
    /// Operands before the command (`timeout DURATION`).
    operands: usize,
    /// `-NUMBER` is an option (`nice -10`).
    numeric: bool,
}

const SPEC: Spec =
    Spec { flags: &[], with_arg: &[], attached: &[], no_command: &[], string: &[], operands: 0, numeric: false };

/// Read a wrapper's options: the index of its command (or `None` when it runs
/// none), and the command strings its options hold.
fn read_options(program: &str, spec: &Spec, args: &[Word]) -> Result<(Option<usize>, Vec<String>), String> {
    let mut strings = Vec::new();
    let mut no_command = false;
    let mut i = 0;
    let unknown =
        |o: &str| format!("`{program}` with an option wrepl does not know (`{o}`), so what it runs is not known");
    while let Some(w) = args.get(i) {
        let Some(a) = w.lit.as_deref() else {
            return Err(format!("`{program}` with an argument known only when it runs (`{}`)", w.raw));
        };
        if a == "--" {
            i += 1;
            break;
        }
        if a == "-" && spec.flags.contains(&"-") {
            i += 1;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (a.to_string(), None),
            };
            let n = name.as_str();
            if spec.with_arg.contains(&n) || spec.string.contains(&n) {
                let value = match value {
                    Some(v) => v,
                    None => {
                        i += 1;
                        let v = args.get(i).ok_or_else(|| format!("`{program} {n}` without its argument"))?;
                        v.lit
                            .clone()
                            .ok_or_else(|| format!("`{program} {n}` with an argument known only when it runs"))?
                    }
                };
                if spec.string.contains(&n) {
                    strings.push(value);
                }
            } else if spec.flags.contains(&n) {
            } else if spec.no_command.contains(&n) {
                no_command = true;
            } else {
                return Err(unknown(a));
            }
            i += 1;
            continue;
        }
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) else { break };
        if spec.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            i += 1;
            continue;
        }
        let mut rest = cluster;
        while let Some(c) = rest.chars().next() {
            rest = &rest[c.len_utf8()..];
            let o = format!("-{c}");
            let o = o.as_str();
            if spec.attached.contains(&o) {
                rest = "";
            } else if spec.with_arg.contains(&o) || spec.string.contains(&o) {
                let value = if rest.is_empty() {
                    i += 1;
                    let v = args.get(i).ok_or_else(|| format!("`{program} {o}` without its argument"))?;
                    v.lit.clone().ok_or_else(|| format!("`{program} {o}` with an argument known only when it runs"))?
                } else {
                    rest.to_string()
                };
                if spec.string.contains(&o) {
                    strings.push(value);
                }
                rest = "";
            } else if spec.flags.contains(&o) {
            } else if spec.no_command.contains(&o) {
                no_command = true;
            } else {
                return Err(unknown(a));
            }
        }
        i += 1;
    }
    if no_command || !strings.is_empty() {
        return Ok((None, strings));
    }
    for _ in 0..spec.operands {
        match args.get(i) {
            Some(w) if w.lit.is_some() => i += 1,
            Some(w) => return Err(format!("`{program}` with an operand known only when it runs (`{}`)", w.raw)),
            None => return Ok((None, strings)),
        }
    }
    Ok(((i < args.len()).then_some(i), strings))
}

/// The wrappers wrepl knows: programs that run the command after their
/// options (and operands).
fn wrapper(program: &str) -> Option<Spec> {
    Some(match program {
        "nice" => Spec { with_arg: &["-n", "--adjustment"], numeric: true, ..SPEC },
        "nohup" => SPEC,
        "setsid" => Spec { flags: &["-c", "-f", "-w", "--ctty", "--fork", "--wait"], ..SPEC },
        "stdbuf" => Spec { with_arg: &["-i", "-o", "-e", "--input", "--output", "--error"], ..SPEC },
        "timeout" => Spec {
            flags: &["-v", "--verbose", "--preserve-status", "--foreground"],
            with_arg: &["-s", "-k", "--signal", "--kill-after"],
            operands: 1,
            ..SPEC
        },
        "ionice" => Spec {
            flags: &["-t", "--ignore"],
            with_arg: &["-c", "-n", "--class", "--classdata"],
            no_command: &["-p", "-P", "-u", "--pid", "--pgid", "--uid"],
            ..SPEC
        },
        "chrt" => Spec {
            flags: &[
                "-a",
                "-b",
                "-d",
                "-e",
                "-f",
                "-i",
                "-o",
                "-r",
                "-R",
                "-v",
                "--all-tasks",
                "--batch",
                "--deadline",
                "--ext",
                "--fifo",
                "--idle",
                "--other",
                "--rr",
                "--reset-on-fork",
                "--verbose",
            ],
            with_arg: &["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"],
            no_command: &["-p", "-m", "--pid", "--max"],
            operands: 1,
            ..SPEC
        },
        "taskset" => Spec {
            flags: &["-a", "-c", "--all-tasks", "--cpu-list"],
            no_command: &["-p", "--pid"],
            operands: 1,
            ..SPEC
        },
        "sudo" => Spec {
            flags: &[
                "-A",
                "-b",
                "-E",
                "-H",
                "-n",
                "-P",
                "-S",
                "-B",
                "-N",
                "-k",
                "--askpass",
                "--background",
                "--preserve-env",
                "--set-home",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
                "--bell",
                "--reset-timestamp",
            ],
            with_arg: &[
                "-C",
                "-D",
                "-g",
                "-h",
                "-p",
                "-R",
                "-r",
                "-T",
                "-t",
                "-U",
                "-u",
                "--close-from",
                "--chdir",
                "--group",
                "--host",
                "--prompt",
                "--chroot",
                "--role",
                "--command-timeout",
                "--type",
                "--other-user",
                "--user",
            ],
            no_command: &["-K", "-l", "-v", "-V", "--remove-timestamp", "--list", "--validate", "--version"],
            ..SPEC
        },
        "doas" => Spec { flags: &["-n", "-L"], with_arg: &["-u"], no_command: &["-C"], ..SPEC },
        "unbuffer" => Spec { flags: &["-p"], ..SPEC },
        "flock" => Spec {
            flags: &[
                "-s",
                "-e",
                "-x",
                "-u",
                "-n",
                "-o",
                "-F",
                "--shared",
                "--exclusive",
                "--unlock",
                "--nonblock",
                "--nb",
                "--close",
                "--no-fork",
                "--verbose",
            ],
            with_arg: &["-w", "-E", "--wait", "--timeout", "--conflict-exit-code"],
            string: &["-c", "--command"],
            operands: 1,
            ..SPEC
        },
        "time" => Spec {
            flags: &["-p", "-v", "-a", "-q", "--portability", "--verbose", "--append", "--quiet"],
            with_arg: &["-f", "-o", "--format", "--output"],
            ..SPEC
        },
        "exec" => Spec { flags: &["-c", "-l"], with_arg: &["-a"], ..SPEC },
        "builtin" => SPEC,
        "command" => Spec { flags: &["-p"], no_command: &["-v", "-V"], ..SPEC },
        "xargs" => Spec {
            flags: &[
                "-0",
                "-r",
                "-t",
                "-p",
                "-x",
                "-o",
                "--null",
                "--no-run-if-empty",
                "--verbose",
                "--interactive",
                "--exit",
                "--open-tty",
            ],
            with_arg: &[
                "-a",
                "-d",
                "-E",
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            attached: &["-e", "-i", "-l"],
            no_command: &["--help", "--version", "--show-limits"],
            ..SPEC
        },
        "env" => Spec {
            flags: &["-i", "-0", "-v", "--ignore-environment", "--null", "--debug", "-"],
            with_arg: &["-u", "-C", "--unset", "--chdir"],
            string: &["-S", "--split-string"],
            no_command: &["--help", "--version"],
            ..SPEC
        },
        "chroot" => Spec { with_arg: &["--userspec", "--groups"], flags: &["--skip-chdir"], operands: 1, ..SPEC },
        "catchsegv" => SPEC,
        "busybox" | "toybox" => SPEC,
        "watch" => Spec {
            flags: &[
                "-b",
                "-c",
                "-d",
                "-e",
                "-g",
                "-p",
                "-r",
                "-t",
                "-w",
                "-x",
                "--beep",
                "--color",
                "--no-color",
                "--differences",
                "--errexit",
                "--chgexit",
                "--precise",
                "--no-rerun",
                "--no-title",
                "--no-wrap",
                "--exec",
            ],
            with_arg: &["-n", "-q", "--interval", "--equexit"],
            ..SPEC
        },
        "su" | "runuser" => Spec {
            flags: &["-", "-l", "-m", "-p", "-P", "-f", "--login", "--preserve-environment", "--pty"],
            with_arg: &["-g", "-G", "-s", "-w", "-u", "--group", "--supp-group", "--shell", "--whitelist-environment"],
            string: &["-c", "--command", "--session-command"],
            ..SPEC
        },
        "script" => Spec {
            flags: &["-a", "-e", "-f", "-q", "-t", "-E", "--append", "--return", "--flush", "--quiet"],
            with_arg: &["-B", "-I", "-O", "-T", "-m", "-o", "--log-io", "--log-in", "--log-out", "--log-timing"],
            string: &["-c", "--command"],
            ..SPEC
        },
        _ => return None,
    })
}

/// Shells whose command strings are bash syntax.
const BASH_LIKE: &[&str] = &["sh", "bash", "dash", "ash", "rbash"];
/// Other shells: what they run is not parsed.
const OTHER_SHELLS: &[&str] = &[
    "zsh", "ksh", "ksh93", "mksh", "oksh", "pdksh", "lksh", "yash", "posh", "fish", "csh", "tcsh", "nu", "elvish",
    "xonsh",
];
/// Builtins that evaluate array subscripts in the names they are given.
const NAME_BUILTINS: &[&str] =
    &["declare", "typeset", "local", "export", "readonly", "unset", "read", "getopts", "wait", "mapfile", "readarray"];
/// Declaration builtins (their `NAME=VALUE` arguments are assignments).
const DECLARATIONS: &[&str] = &["declare", "typeset", "local", "export", "readonly"];

/// What `program args…` runs besides itself.
fn step(program: &str, args: &[Word]) -> Step {
    let has = |opt: &str| {
        args.iter().any(|w| {
            w.lit.as_deref().is_some_and(|a| {
                a == opt || (opt.len() == 2 && a.starts_with('-') && !a.starts_with("--") && a.contains(&opt[1..]))
            })
        })
    };
    let subscript = args.iter().any(|w| w.lit.as_deref().is_none_or(|a| a.contains('[')) && w.raw.contains('['));
    match program {
        "eval" => match lits(args) {
            Some(parts) => Step::Strings(vec![parts.join(" ")]),
            None => Step::Unknown("`eval` with an argument known only when it runs".into()),
        },
        "source" | "." => Step::Unknown(format!("`{program}` runs the commands of a file")),
        p if BASH_LIKE.contains(&p) => shell(p, args),
        p if OTHER_SHELLS.contains(&p) => Step::Unknown(format!("`{p}` runs commands wrepl does not parse")),
        "trap" => {
            let operands: Vec<&Word> = args.iter().skip_while(|w| w.lit.as_deref() == Some("--")).collect();
            match operands.first().map(|w| w.lit.as_deref()) {
                None => Step::Plain,
                Some(Some("-p" | "-l" | "-P" | "-" | "")) => Step::Plain,
                Some(Some(action)) if operands.len() > 1 => Step::Strings(vec![action.to_string()]),
                Some(Some(_)) => Step::Plain,
                Some(None) => Step::Unknown("`trap` with an action known only when it runs".into()),
            }
        }
        "alias" => {
            let mut strings = Vec::new();
            for w in args {
                match w.lit.as_deref() {
                    Some(a) => strings.extend(a.split_once('=').map(|(_, v)| v.to_string())),
                    None => return Step::Unknown("`alias` with a definition known only when it runs".into()),
                }
            }
            Step::Strings(strings)
        }
        "let" => match lits(args) {
            Some(exprs) if exprs.iter().all(|e| shell_syntax::arith_is_constant(e)) => Step::Plain,
            _ => Step::Unknown("`let` evaluates arithmetic over variables, which can run what they hold".into()),
        },
        "enable" if has("-f") => Step::Unknown("`enable -f` loads a builtin from a shared object".into()),
        "fc" => Step::Unknown("`fc` runs commands from the history or an editor".into()),
        "set" if has("-k") || has("+k") || (has("-o") && has_option(args, &["keyword"])) => {
            Step::Unknown("`set -k` makes later arguments environment assignments, which programs may run".into())
        }
        p if DECLARATIONS.contains(&p) && has("-n") => {
            Step::Unknown(format!("`{p} -n` makes a name refer to what a variable holds, which bash can evaluate"))
        }
        "hash" if has("-p") => Step::Unknown("`hash -p` makes a name run another program".into()),
        "mapfile" | "readarray" if has("-C") => Step::Unknown(format!("`{program} -C` runs a callback")),
        "compgen" | "complete" => {
            let at = args.iter().position(|w| w.lit.as_deref() == Some("-C"));
            match at.map(|i| args.get(i + 1).and_then(|w| w.lit.clone())) {
                None => Step::Plain,
                Some(Some(cmd)) => Step::Strings(vec![cmd]),
                Some(None) => Step::Unknown(format!("`{program} -C` with a command known only when it runs")),
            }
        }
        p if NAME_BUILTINS.contains(&p) && subscript => Step::Unknown(format!(
            "`{p}` with `[` in an argument (bash evaluates the array subscript, which can run `$(…)`)"
        )),
        "printf" if has("-v") && subscript => Step::Unknown(
            "`printf -v` with `[` in an argument (bash evaluates the array subscript, which can run `$(…)`)".into(),
        ),
        "test" | "[" if (has("-v") || has("-R")) && subscript => Step::Unknown(format!(
            "`{program} -v` with `[` in an argument (bash evaluates the array subscript, which can run `$(…)`)"
        )),
        p if DECLARATIONS.contains(&p) => {
            let mut values = Vec::new();
            for w in args {
                match assigned(w) {
                    Assigned::Name(name) => {
                        if let Some(why) = risky_variable(name) {
                            return Step::Unknown(why);
                        }
                    }
                    Assigned::Unknown => {
                        return Step::Unknown(format!("`{p} {}` assigns a variable known only when it runs", w.raw))
                    }
                    Assigned::No => continue,
                }
                values.extend(w.lit.as_deref().and_then(|a| a.split_once('=')).map(|(_, v)| v.to_string()));
            }
            Step::Data(values)
        }
        "find" => find(args),
        p => match wrapper(p) {
            None => Step::Plain,
            Some(spec) => wrapped(p, &spec, args),
        },
    }
}

/// A wrapper's command.
fn wrapped(program: &str, spec: &Spec, args: &[Word]) -> Step {
    let (at, strings) = match read_options(program, spec, args) {
        Ok(r) => r,
        Err(why) => return Step::Unknown(why),
    };
    if !strings.is_empty() {
        return Step::Strings(strings);
    }
    let rest = at.map_or(&[][..], |i| &args[i..]);
    match program {
        "env" => {
            let mut rest = rest;
            let mut values = Vec::new();
            while let Some((w, tail)) = rest.split_first() {
                match assigned(w) {
                    Assigned::Name(name) => {
                        if let Some(why) = risky_variable(name) {
                            return Step::Unknown(why);
                        }
                    }
                    Assigned::Unknown => {
                        return Step::Unknown(format!(
                            "`env {}`: an assignment or a command, known only when it runs",
                            w.raw
                        ))
                    }
                    Assigned::No => break,
                }
                values.extend(w.lit.as_deref().and_then(|a| a.split_once('=')).map(|(_, v)| v.to_string()));
                rest = tail;
            }
            if rest.is_empty() {
                Step::Data(values)
            } else {
                Step::Runs(rest.to_vec())
            }
        }
        "xargs" if at.is_none() && !has_option(args, &["--help", "--version", "--show-limits"]) => {
            let echo = Word { lit: Some("echo".into()), expands: false, ..filled_in("echo") };
            Step::Runs(vec![echo, filled_in("…")])
        }
        "xargs" if at.is_some() => {
            let mut inner: Vec<Word> = rest.to_vec();
            inner.push(filled_in("…"));
            Step::Runs(inner)
        }
        "watch" if at.is_some() && !has_option(args, &["-x", "--exec"]) => match lits(rest) {
            Some(parts) => Step::Strings(vec![parts.join(" ")]),
            None => Step::Unknown("`watch` with a command known only when it runs".into()),
        },
        "su" | "runuser" => Step::Unknown(format!("`{program}` starts a shell")),
        "script" => Step::Unknown("`script` starts a shell".into()),
        _ if at.is_some() => Step::Runs(rest.to_vec()),
        _ => Step::Plain,
    }
}

fn has_option(args: &[Word], opts: &[&str]) -> bool {
    args.iter().any(|w| w.lit.as_deref().is_some_and(|a| opts.contains(&a)))
}

/// `bash -c 'string'` is that string; a shell reading a file or its input
/// runs what cannot be known.
fn shell(program: &str, args: &[Word]) -> Step {
    let mut i = 0;
    let mut string = false;
    let mut info = false;
    while let Some(w) = args.get(i) {
        let Some(a) = w.lit.as_deref() else {
            return Step::Unknown(format!("`{program}` with an argument known only when it runs (`{}`)", w.raw));
        };
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            match long {
                "norc" | "noprofile" | "posix" | "noediting" | "verbose" | "debugger" | "restricted" => {}
                "version" | "help" => info = true,
                _ => {
                    return Step::Unknown(format!("`{program} {a}` reads startup files or options wrepl does not know"))
                }
            }
            i += 1;
            continue;
        }
        let Some(cluster) = a.strip_prefix(['-', '+']).filter(|c| !c.is_empty()) else { break };
        let mut takes_arg = false;
        for c in cluster.chars() {
            match c {
                'c' => string = true,
                'o' | 'O' => takes_arg = true,
                'e' | 'x' | 'u' | 'v' | 'n' | 'f' | 'a' | 'b' | 'h' | 'k' | 'm' | 'p' | 't' | 'B' | 'C' | 'E' | 'H'
                | 'P' | 'T' | 'r' => {}
                _ => return Step::Unknown(format!("`{program} {a}` reads commands from its input or startup files")),
            }
        }
        i += if takes_arg { 2 } else { 1 };
    }
    match (string, args.get(i)) {
        (true, Some(w)) => match &w.lit {
            Some(s) => Step::Strings(vec![s.clone()]),
            None => Step::Unknown(format!("`{program} -c` with a command string known only when it runs")),
        },
        (true, None) | (false, None) if info => Step::Plain,
        (true, None) => Step::Plain,
        (false, None) => Step::Unknown(format!("`{program}` reading commands from its input")),
        (false, Some(w)) => Step::Unknown(format!("`{program}` running the script `{}`", w.raw)),
    }
}

/// The commands of `find -exec … ;` (`{}` is filled in).
fn find(args: &[Word]) -> Step {
    let mut each = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let is_exec = matches!(args[i].lit.as_deref(), Some("-exec" | "-execdir" | "-ok" | "-okdir"));
        i += 1;
        if !is_exec {
            continue;
        }
        let mut inner = Vec::new();
        while let Some(w) = args.get(i) {
            i += 1;
            match w.lit.as_deref() {
                Some(";" | "+") => break,
                Some(a) if a.contains("{}") => inner.push(filled_in(&w.raw)),
                _ => inner.push(w.clone()),
            }
        }
        each.push(inner);
    }
    if each.is_empty() {
        Step::Plain
    } else {
        Step::Each(each)
    }
}

/// `find` predicates that act (run, delete, write).
const FIND_ACTIONS: &[&str] =
    &["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];

/// Why setting this variable changes what runs, for deny rules: startup
/// files, preloaded libraries, evaluated prompts.
fn risky_variable(name: &str) -> Option<String> {
    let risky = matches!(name, "BASH_ENV" | "ENV" | "PS4" | "PROMPT_COMMAND" | "SHELLOPTS" | "BASHOPTS" | "GCONV_PATH")
        || name.starts_with("LD_")
        || name.starts_with("BASH_FUNC_");
    risky.then(|| format!("setting `{name}` makes later programs run code wrepl cannot see"))
}

/// Variables an allowed command may not set for the commands after it
/// (`export PATH=…`): they change which program a later word runs or make
/// programs run commands.
fn steers_later_commands(name: &str) -> bool {
    risky_variable(name).is_some()
        || matches!(
            name,
            "PATH"
                | "IFS"
                | "CDPATH"
                | "PS1"
                | "PS2"
                | "PS3"
                | "HOME"
                | "PAGER"
                | "MANPAGER"
                | "EDITOR"
                | "VISUAL"
                | "LESSOPEN"
                | "LESSCLOSE"
                | "BROWSER"
                | "SHELL"
        )
        || name.starts_with("GIT_")
}

/// Why an allow rule can never cover this command, whatever it says: it
/// runs other code (`eval`, `bash -c`, `xargs`, `find -exec`, `env cmd`, …),
/// also behind wrappers (`nice eval …`), or changes what later commands run.
fn refused_program(words: &[Word]) -> Option<Construct> {
    let runs = |s: &str| Some(Construct::Runs(s.to_string()));
    let mut words = words;
    for _ in 0..MAX_DEPTH {
        let name = words.first()?.lit.as_deref()?;
        let program = basename(name);
        let args = &words[1..];
        match program {
            "eval" => return runs("`eval` (it runs its arguments as a command)"),
            "exec" => return runs("`exec` (it replaces the shell with a command)"),
            "source" | "." => return runs("`source` / `.` (it runs the commands of a file)"),
            "xargs" => return runs("`xargs` (it runs a command built from its input)"),
            "env" if !matches!(step(program, args), Step::Plain | Step::Data(_)) => {
                return runs("`env` running a command")
            }
            "find" => {
                if let Some(a) = args.iter().find_map(|w| w.lit.as_deref().filter(|a| FIND_ACTIONS.contains(a))) {
                    return Some(Construct::Runs(format!("`find {a}` (it runs commands or changes files)")));
                }
                if let Some(w) = args.iter().find(|w| w.lit.is_none()) {
                    return Some(Construct::Runs(format!(
                        "`find` with an argument known only when it runs (`{}`, which could be `-exec`)",
                        w.raw
                    )));
                }
                return None;
            }
            p if DECLARATIONS.contains(&p) => {
                for w in args {
                    match assigned(w) {
                        Assigned::Name(n) if steers_later_commands(n) => {
                            return Some(Construct::Runs(format!("`{p} {n}=…` (it changes what later commands run)")))
                        }
                        Assigned::Unknown => {
                            return Some(Construct::Runs(format!(
                                "`{p} {}` (it assigns a variable known only when it runs)",
                                w.raw
                            )))
                        }
                        _ => {}
                    }
                }
            }
            p if BASH_LIKE.contains(&p) || OTHER_SHELLS.contains(&p) => {
                return match step(p, args) {
                    Step::Plain => None,
                    Step::Strings(_) => Some(Construct::Runs(format!("`{p} -c` (a shell running a command string)"))),
                    _ => Some(Construct::Runs(format!("`{p}` reading commands from its input or a file"))),
                };
            }
            _ => {}
        }
        match step(program, args) {
            Step::Plain | Step::Data(_) => return None,
            Step::Runs(inner) if wrapper(program).is_some() => {
                // The wrapped command is judged the same way.
                let at = words.len() - inner.len();
                words = &words[at..];
            }
            Step::Runs(_) | Step::Each(_) | Step::Strings(_) => {
                return Some(Construct::Runs(format!("`{program}` (it runs other commands)")));
            }
            Step::Unknown(why) => return Some(Construct::Runs(why)),
        }
    }
    Some(Construct::Runs("wrappers nested too deeply".into()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::testing::{bash, rules, ROOT};
    use super::super::{Decision::*, Matched, PermissionRequest};
    use super::*;

    #[test]
    fn compound_commands_need_every_part() {
        let r = rules(&["Bash(git status:*)", "Bash(ls:*)"], &[], &[]);
        for cmd in [
            "git status && rm -rf /",
            "git status || rm -rf /",
            "git status; rm -rf /",
            "git status | rm -rf /",
            "git status |& rm -rf /",
            "git status & rm -rf /",
            "git status\nrm -rf /",
            "git status &",
        ] {
            assert_eq!(bash(&r, cmd), None, "{cmd:?}");
        }
        let m = r
            .evaluate(&PermissionRequest {
                tool: "Bash",
                command: Some("git status && ls -la | git status -s;ls"),
                paths: &[],
                project_root: Path::new(ROOT),
            })
            .unwrap();
        assert_eq!(m, Matched { decision: Allow, rule: "Bash(git status:*), Bash(ls:*)".into(), part: None });
        // Separators inside quotes or escaped do not split.
        let r = rules(&["Bash(git commit:*)"], &[], &[]);
        assert_eq!(bash(&r, "git commit -m \"a && b; c | d\""), Some(Allow));
        assert_eq!(bash(&r, "git commit -m 'a; rm -rf /'"), Some(Allow));
        assert_eq!(bash(&r, "git commit -m a\\;b"), Some(Allow));
        assert_eq!(bash(&r, "git commit -m 'a; rm -rf /"), None, "unterminated quote");
    }

    #[test]
    fn only_fully_understood_commands_match_allow_rules() {
        let r = rules(&["Bash(git status:*)", "Bash(echo:*)"], &[], &[]);
        for cmd in [
            "git status $(rm -rf /)",
            "git status \"$(rm -rf /)\"",
            "git status `rm -rf /`",
            "git status <(rm -rf /)",
            "git status ${x:-$(rm f)}",
            "git status $((1+$(rm f)))",
            "git status $'\\x3b rm f'",
            "git status # it's a comment\nrm f",
            "git status <<EOF\n$(rm f)\nEOF",
            "git status <<< x",
            "echo x > ~/.bashrc",
            "echo x >> log",
            "echo x &> log",
            "echo x >| log",
            "echo x <> log",
            "echo x >&log",
            "echo a\rrm",
            "FOO=1 git status",
            "GIT_DIR=/x git status",
            "(git status)",
            "{ git status; }",
            "f() { rm f; }; git status",
            "$x status",
            "git\\ status",
        ] {
            assert_eq!(bash(&r, cmd), None, "{cmd:?}");
        }
        for cmd in [
            "git status '$(literal)'",
            "git status 2>&1",
            "git status >&2",
            "git status > /dev/null 2>&1",
            "git status 2>/dev/null",
            "git status < input.txt",
            "echo \"a > b\"",
            "echo $HOME \"${USER}\" *.rs",
            "! git status",
            "git  status  -s",
            "git \"status\"",
        ] {
            assert_eq!(bash(&r, cmd), Some(Allow), "{cmd:?}");
        }
    }

    #[test]
    fn programs_that_run_code_never_match_allow_rules() {
        let r = rules(
            &[
                "Bash(eval:*)",
                "Bash(exec:*)",
                "Bash(source:*)",
                "Bash(.:*)",
                "Bash(bash:*)",
                "Bash(sh:*)",
                "Bash(xargs:*)",
                "Bash(find:*)",
                "Bash(env:*)",
                "Bash(echo:*)",
                "Bash(nice:*)",
                "Bash(timeout:*)",
                "Bash(printf:*)",
                "Bash(export:*)",
                "Bash(trap:*)",
                "Bash(let:*)",
                "Bash(declare:*)",
                "Bash(set:*)",
                "Bash(fc:*)",
            ],
            &[],
            &[],
        );
        for cmd in [
            "eval echo hi",
            "exec echo hi",
            "source ./x.sh",
            ". ./x.sh",
            "bash -c 'echo hi'",
            "sh -ec 'echo hi'",
            "bash",
            "echo echo hi | sh",
            "bash ./script.sh",
            "echo f | xargs rm",
            "find . -exec rm {} ;",
            "find . -delete",
            "find . $x",
            "env rm f",
            "env -i X=1 rm f",
            "env -S 'rm f'",
            "nice eval rm f",
            "timeout 5 bash -c 'rm f'",
            "timeout --bogus 5 echo",
            "printf -v 'a[$(touch pwn)]' x",
            "declare 'a[$(touch pwn)]=1'",
            "export PATH=/tmp/evil:/bin",
            "export GIT_SSH_COMMAND='touch pwn'",
            "export PATH=.:$PATH",
            "export \"$n\"=x",
            "export $assignment",
            "trap 'touch pwn' EXIT",
            "let x",
            "declare -n r=x",
            "set -k",
            "set -o keyword",
            "fc -s",
        ] {
            assert_eq!(bash(&r, cmd), None, "{cmd:?}");
        }
        for cmd in [
            "find . -name '*.rs'",
            "env",
            "env -i X=1",
            "nice -n 5 echo hi",
            "timeout 5 echo hi",
            "printf '[%s]' x",
            "export FOO=1",
            "bash --version",
            "env -u HOME",
        ] {
            assert_eq!(bash(&r, cmd), Some(Allow), "{cmd:?}");
        }
    }

    #[test]
    fn deny_sees_through_wrappers_and_unknown_words() {
        let r = rules(&["Bash"], &[], &["Bash(rm:*)", "Bash(git push --force)"]);
        assert_eq!(bash(&r, "ls"), Some(Allow));
        assert_eq!(bash(&r, "rm -rf /"), Some(Deny));
        assert_eq!(bash(&r, "rm"), Some(Deny));
        assert_eq!(bash(&r, "rmdir x"), Some(Allow));
        for evasion in [
            "ls && rm -rf /",
            "ls; rm x",
            "ls | rm x",
            "ls\nrm x",
            "FOO=1 rm -rf /",
            "A=1 B='x y' rm -rf /",
            "/bin/rm -rf /",
            "./rm x",
            "~/bin/rm x",
            "sudo rm x",
            "sudo -E -u root env X=1 rm x",
            "\"rm\" x",
            "r'm' x",
            "\\rm f",
            "\"r\"\"m\" f",
            "$'rm' f",
            "x=rm; $x f",
            "${x} f",
            "r* f",
            "{rm,f}",
            "echo $(rm x)",
            "echo \"$(rm x)\"",
            "echo `rm x`",
            "echo \"`rm x`\"",
            "echo ${x:-$(rm x)}",
            "cat <(rm x)",
            "cat <<EOF\n$(rm x)\nEOF",
            "(rm x)",
            "{ rm x; }",
            "if true; then rm x; fi",
            "for i in 1; do rm x; done",
            "while rm x; do :; done",
            "case x in x) rm x;; esac",
            "f() { rm x; }",
            "coproc rm x",
            "xargs rm < list",
            "echo f | xargs rm",
            "echo f | xargs -n1 -I{} rm {}",
            "find . -exec rm {} \\;",
            "find . -name x -execdir rm -f {} +",
            "nice rm f",
            "nice -n 5 rm f",
            "nice -10 rm f",
            "timeout 5 rm f",
            "timeout -s KILL 5s rm f",
            "env rm f",
            "env -i PATH=/bin rm f",
            "env \"X\"=1 rm f",
            "env - rm f",
            "env $x rm f",
            "env -S 'rm f'",
            "command rm f",
            "command -p rm f",
            "builtin rm f",
            "exec rm f",
            "exec -a x rm f",
            "nohup rm f",
            "stdbuf -o0 rm f",
            "time rm f",
            "ionice -c 3 rm f",
            "chrt -f 10 rm f",
            "taskset 0x1 rm f",
            "taskset -c 0 rm f",
            "setsid -f rm f",
            "unbuffer rm f",
            "flock /tmp/l rm f",
            "flock -c 'rm f' /tmp/l",
            "doas -u root rm f",
            "busybox rm f",
            "watch -n 1 rm f",
            "nice timeout 5 sudo rm f",
            "eval rm f",
            "eval 'rm f'",
            "eval \"$cmd\"",
            "bash -c 'rm f'",
            "sh -c \"rm f\"",
            "bash -xec 'ls; rm f'",
            "bash -c \"$cmd\"",
            "echo rm f | sh",
            "echo rm f | bash -s",
            "bash script.sh",
            "zsh -c 'rm f'",
            "source script.sh",
            ". ./script.sh",
            "trap 'rm f' EXIT",
            "alias ls='rm f'",
            "GIT_PAGER='rm f' git log",
            "export EDITOR='rm f'",
            "BASH_ENV=./x bash -c true",
            "LD_PRELOAD=./x.so ls",
            "x='a[$(rm f)]'; echo $((x))",
            "echo ${!x}",
            "printf -v 'a[$(rm f)]' x",
            "declare 'a[$(rm f)]=1'",
            "x='a[$(rm f)]'; declare -n r=$x; echo $r",
            "set -k; git log GIT_PAGER='rm f'",
            "fc -e 'rm f' -1",
            "echo \\$'\\'\\'\nrm f\n'",
            "  rm  -rf  /  ",
        ] {
            assert_eq!(bash(&r, evasion), Some(Deny), "{evasion:?}");
        }
        assert_eq!(bash(&r, "git push --force"), Some(Deny));
        assert_eq!(bash(&r, "git  push   '--force'"), Some(Deny));
        assert_eq!(bash(&r, "git push $opts"), Some(Deny), "an unknown word could be `--force`");
        assert_eq!(bash(&r, "git push 'origin'"), Some(Allow));
        assert_eq!(bash(&r, "echo rm"), Some(Allow));
        assert_eq!(bash(&r, "echo $HOME"), Some(Allow));
        assert_eq!(bash(&r, "ls *.rs"), Some(Allow));
        assert_eq!(bash(&r, "bash -c 'ls -la'"), Some(Allow));
        assert_eq!(bash(&r, "find . -name '*.rs' -exec grep -l x {} +"), Some(Allow));
        assert_eq!(bash(&r, "echo a | xargs"), Some(Allow), "xargs alone runs echo");
        assert_eq!(bash(&r, "find . -exec {} \\;"), Some(Deny), "the found file is the command");
    }

    #[test]
    fn deny_messages_name_the_part() {
        let r = rules(&["Bash"], &[], &["Bash(rm:*)"]);
        let req =
            |cmd| PermissionRequest { tool: "Bash", command: Some(cmd), paths: &[], project_root: Path::new(ROOT) };
        let m = r.evaluate(&req("ls; nice rm -f x")).unwrap();
        assert_eq!((m.decision, m.rule.as_str()), (Deny, "Bash(rm:*)"));
        assert_eq!(m.part.as_deref(), Some("it matches `rm -f x`"));
        let m = r.evaluate(&req("x=rm; $x f")).unwrap();
        assert!(m.part.as_deref().unwrap().contains("`$x` is only known when it runs"), "{m:?}");
    }

    #[test]
    fn wrapper_options() {
        let w = |s: &str| shell_syntax::parse(s).commands.remove(0).words;
        let inner = |s: &str| match step("timeout", &w(s)[1..]) {
            Step::Runs(v) => v.iter().map(|w| w.raw.clone()).collect::<Vec<_>>().join(" "),
            Step::Plain => "plain".into(),
            Step::Unknown(why) => format!("unknown: {why}"),
            _ => "other".into(),
        };
        assert_eq!(inner("timeout 5 rm f"), "rm f");
        assert_eq!(inner("timeout -k 1 -s9 --preserve-status 5 rm f"), "rm f");
        assert_eq!(inner("timeout --signal=KILL 5 rm f"), "rm f");
        assert_eq!(inner("timeout 5"), "plain");
        assert!(inner("timeout -Z 5 rm f").starts_with("unknown"));
        assert!(inner("timeout $t rm f").starts_with("unknown"));
    }
}
