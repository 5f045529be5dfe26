//! The deny view of a command line: every command it runs, at every depth —
//! through assignments, wrappers and program paths, and into the command
//! strings of `eval`, `bash -c`, `trap`, … — and whatever keeps a command
//! from being known.

use crate::shell_syntax::{self, Command, Script, Word};

use super::programs::{risky_variable, step, Step};
use super::{basename, Subject, MAX_DEPTH};

/// Every command deny rules see.
#[derive(Default)]
pub(super) struct Deny {
    pub(super) subjects: Vec<Subject>,
    pub(super) unknown: Option<String>,
}

impl Deny {
    fn unknown(&mut self, why: String) {
        if self.unknown.is_none() {
            self.unknown = Some(why);
        }
    }

    pub(super) fn script(&mut self, s: &Script, depth: usize) {
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
