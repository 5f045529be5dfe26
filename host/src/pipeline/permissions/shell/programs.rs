//! What bash builtins and common programs run besides themselves: command
//! strings (`eval`, `bash -c`, `trap`, `alias`), wrapped commands,
//! `find -exec`, assignments whose values later programs may run, and what
//! cannot be known statically.

use crate::shell_syntax::{self, Word};

use super::wrappers::{read_options, wrapper, Spec};

/// What a command runs besides itself.
pub(super) enum Step {
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

/// A word known only when it runs (what `xargs` and `find` fill in).
fn filled_in(raw: &str) -> Word {
    Word { raw: raw.to_string(), lit: None, construct: None, expands: true, pattern: false }
}

/// What a word of `env`, `export`, `declare`, … assigns.
pub(super) enum Assigned<'a> {
    /// This variable (the name without `+` or a subscript).
    Name(&'a str),
    /// Some variable, known only when it runs (`export "$n"=x`, `export $x`).
    Unknown,
    /// Not an assignment.
    No,
}

/// The variable a `NAME=value` word assigns, read from its value after quote
/// removal, or from its text when the value is known only at run time.
pub(super) fn assigned(w: &Word) -> Assigned<'_> {
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

/// Shells whose command strings are bash syntax.
pub(super) const BASH_LIKE: &[&str] = &["sh", "bash", "dash", "ash", "rbash"];
/// Other shells: what they run is not parsed.
pub(super) const OTHER_SHELLS: &[&str] = &[
    "zsh", "ksh", "ksh93", "mksh", "oksh", "pdksh", "lksh", "yash", "posh", "fish", "csh", "tcsh", "nu", "elvish",
    "xonsh",
];
/// Builtins that evaluate array subscripts in the names they are given.
const NAME_BUILTINS: &[&str] =
    &["declare", "typeset", "local", "export", "readonly", "unset", "read", "getopts", "wait", "mapfile", "readarray"];
/// Declaration builtins (their `NAME=VALUE` arguments are assignments).
pub(super) const DECLARATIONS: &[&str] = &["declare", "typeset", "local", "export", "readonly"];

/// What `program args…` runs besides itself.
pub(super) fn step(program: &str, args: &[Word]) -> Step {
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
pub(super) const FIND_ACTIONS: &[&str] =
    &["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];

/// Why setting this variable changes what runs, for deny rules: startup
/// files, preloaded libraries, evaluated prompts.
pub(super) fn risky_variable(name: &str) -> Option<String> {
    let risky = matches!(name, "BASH_ENV" | "ENV" | "PS4" | "PROMPT_COMMAND" | "SHELLOPTS" | "BASHOPTS" | "GCONV_PATH")
        || name.starts_with("LD_")
        || name.starts_with("BASH_FUNC_");
    risky.then(|| format!("setting `{name}` makes later programs run code wrepl cannot see"))
}

/// Variables an allowed command may not set for the commands after it
/// (`export PATH=…`): they change which program a later word runs or make
/// programs run commands.
pub(super) fn steers_later_commands(name: &str) -> bool {
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
                // Options the commands with read-only tables read from the
                // environment (`--to-command`, `--pre` could come this way).
                | "TAR_OPTIONS"
                | "RIPGREP_CONFIG_PATH"
                | "GREP_OPTIONS"
                | "AWKPATH"
                | "AWKLIBPATH"
        )
        || name.starts_with("GIT_")
}
