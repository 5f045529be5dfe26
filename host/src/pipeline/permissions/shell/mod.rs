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
//!
//! The command line is viewed twice: `allow` finds the top-level commands
//! allow and ask rules must cover (or the construct that refuses them),
//! `deny` every command deny rules are tried against. What builtins and
//! programs run besides themselves is in `programs`, the option tables of
//! the wrappers wrepl sees through in `wrappers`.

mod allow;
mod deny;
mod options;
mod programs;
mod wrappers;

#[cfg(test)]
mod tests;

use crate::shell_syntax::{self, Construct, Word};

use allow::allow_view;
use deny::Deny;

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
    /// Where the command the wrappers run starts (`nice sort -o x`: 1, the
    /// `sort`): tables of read-only options judge that command.
    pub(super) command_at: usize,
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
        Subject { syms, words: values, text, command_at: 0 }
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

/// Whether the words of a command an allow rule's `*` covers are all
/// read-only, for a command with a table of read-only options (see
/// `options`), behind any wrappers (`nice`, `timeout`, …); `named` are the
/// words the rule spells out (exempt). `Err` says which word is not.
pub(super) fn read_only_words(c: &Subject, named: &[String]) -> Result<(), String> {
    let words = &c.words[c.command_at.min(c.words.len())..];
    match options::table_for(words) {
        None => Ok(()),
        Some(t) => options::check(t, &words[t.command.len()..], named),
    }
}

/// The program a command word names (`/bin/rm` → `rm`).
pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}
