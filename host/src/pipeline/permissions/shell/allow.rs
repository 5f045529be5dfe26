//! The allow view of a command line: its top-level commands, or the
//! construct or program that keeps any allow (or ask) rule from covering it.

use crate::shell_syntax::{Construct, Script, Word};

use super::programs::{
    assigned, steers_later_commands, step, Assigned, Step, BASH_LIKE, DECLARATIONS, FIND_ACTIONS, OTHER_SHELLS,
};
use super::wrappers::wrapper;
use super::{basename, Refusal, Subject, MAX_DEPTH};

pub(super) fn allow_view(script: &Script) -> Result<Vec<Subject>, Refusal> {
    if let Some(c) = &script.structure {
        return Err(Refusal { construct: c.clone(), part: String::new() });
    }
    script
        .top()
        .map(|c| match c.construct().or_else(|| refused_program(&c.words)) {
            Some(construct) => Err(Refusal { construct, part: c.text() }),
            None => Ok(Subject { command_at: wrapped_at(&c.words), ..Subject::new(&c.words, None) }),
        })
        .collect()
}

/// Where the command that wrappers (`nice`, `timeout`, `stdbuf`, …) run
/// starts among `words` (0 without wrappers): the command tables of
/// read-only options judge (`Bash(nice sort:*)` covers `nice sort -o x` only
/// as far as `sort -o x` is read-only).
fn wrapped_at(words: &[Word]) -> usize {
    let mut at = 0;
    for _ in 0..MAX_DEPTH {
        let Some(program) = words.get(at).and_then(|w| w.lit.as_deref()).map(basename) else { return at };
        if wrapper(program).is_none() {
            return at;
        }
        match step(program, &words[at + 1..]) {
            Step::Runs(inner) => at = words.len() - inner.len(),
            _ => return at,
        }
    }
    at
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
