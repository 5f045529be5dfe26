//! What a parse gives: the [`Script`] of simple [`Command`]s, their
//! [`Word`]s, [`Redirect`]s and [`Assignment`]s, and the [`Construct`]s that
//! keep allow rules from matching, with the classification of a command or
//! a redirection (`construct()`).

use std::fmt;

/// Something in a command line outside what allow rules match, or whose
/// commands cannot be known before bash runs it. `Display` names it, with
/// the shell syntax, for messages ("command substitution `$(…)` cannot match
/// an allow rule").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Construct {
    /// brush cannot parse it (the reason).
    Unparsable(String),
    /// Too long or nested too deeply to analyse.
    TooComplex,
    /// brush's reading could not be verified against bash's (what).
    Unverified(String),
    /// A control character other than tab and newline.
    ControlCharacter,
    /// No command at all.
    Empty,
    /// A `#` comment.
    Comment,
    /// `$(…)`.
    CommandSubstitution,
    /// `` `…` ``.
    Backticks,
    /// `<(…)` or `>(…)`.
    ProcessSubstitution,
    /// A `${…}` form beyond a plain variable (as written).
    Parameter(String),
    /// `$((…))` or `$[…]`.
    Arithmetic,
    /// Arithmetic whose value depends on variables (as written).
    ArithmeticOver(String),
    /// `<<` or `<<-`.
    HereDocument,
    /// `<<<`.
    HereString,
    /// `$'…'`.
    AnsiCQuote,
    /// `$"…"`.
    LocaleQuote,
    /// `name() { …; }`.
    Function,
    /// A compound command (its description).
    Compound(&'static str),
    /// `&`.
    Background,
    /// The `time` keyword.
    Time,
    /// An output redirection (as written).
    OutputRedirection(String),
    /// `<>` (as written).
    ReadWrite(String),
    /// An input duplication from something other than a descriptor (as written).
    Duplication(String),
    /// A variable assignment (as written).
    Assignment(String),
    /// Redirections or assignments without a command.
    NoCommand,
    /// A command word that contains an expansion (as written).
    VariableCommand(String),
    /// A command word that is a glob or brace pattern (as written).
    PatternCommand(String),
    /// A program that runs other code, or something else the callers know
    /// (a full description, e.g. "`eval`, which runs its arguments as a command").
    Runs(String),
}

impl fmt::Display for Construct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Construct::Unparsable(why) => write!(f, "a command line the parser cannot read ({why})"),
            Construct::TooComplex => write!(f, "a command line too long or nested too deeply to analyse"),
            Construct::Unverified(what) => write!(f, "shell syntax whose meaning could not be verified ({what})"),
            Construct::ControlCharacter => f.write_str("a control character"),
            Construct::Empty => f.write_str("an empty command"),
            Construct::Comment => f.write_str("a comment `#`"),
            Construct::CommandSubstitution => f.write_str("command substitution `$(…)`"),
            Construct::Backticks => f.write_str("command substitution with backticks `` `…` ``"),
            Construct::ProcessSubstitution => f.write_str("process substitution `<(…)` / `>(…)`"),
            Construct::Parameter(p) => write!(f, "the parameter expansion `{p}` (only a plain `$VAR` or `${{VAR}}`)"),
            Construct::Arithmetic => f.write_str("arithmetic expansion `$((…))`"),
            Construct::ArithmeticOver(e) => write!(f, "arithmetic over variables `{e}`"),
            Construct::HereDocument => f.write_str("a here-document `<<`"),
            Construct::HereString => f.write_str("a here-string `<<<`"),
            Construct::AnsiCQuote => f.write_str("ANSI-C quoting `$'…'`"),
            Construct::LocaleQuote => f.write_str("locale quoting `$\"…\"`"),
            Construct::Function => f.write_str("a function definition"),
            Construct::Compound(what) => f.write_str(what),
            Construct::Background => f.write_str("running in the background `&`"),
            Construct::Time => f.write_str("the `time` keyword"),
            Construct::OutputRedirection(r) => {
                write!(f, "the output redirection `{r}` (only to /dev/null or a file descriptor)")
            }
            Construct::ReadWrite(r) => write!(f, "the read-write redirection `{r}`"),
            Construct::Duplication(r) => write!(f, "the redirection `{r}`"),
            Construct::Assignment(a) => write!(f, "the variable assignment `{a}`"),
            Construct::NoCommand => f.write_str("redirections or assignments without a command"),
            Construct::VariableCommand(w) => write!(f, "the command word `{w}`, which is only known when it runs"),
            Construct::PatternCommand(w) => write!(f, "the command word `{w}`, a pattern bash expands"),
            Construct::Runs(what) => f.write_str(what),
        }
    }
}

/// One word of a command, as bash will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// As written.
    pub(crate) raw: String,
    /// Its value when it is known before bash runs: quotes and escapes
    /// removed, no expansion, no unquoted glob or brace pattern.
    pub(crate) lit: Option<String>,
    /// The first construct in it that allow rules cannot match (a plain
    /// `$VAR` or a pattern is not one: they are arguments an allow rule may
    /// cover with `*`).
    pub(crate) construct: Option<Construct>,
    /// It holds a plain variable expansion (`$x`, `${x}`).
    pub(crate) expands: bool,
    /// It holds an unquoted glob (`*`, `?`, `[`) or brace (`{…}`) pattern.
    pub(crate) pattern: bool,
}

impl Word {
    pub(super) fn unknown(raw: &str, construct: Construct) -> Word {
        Word { raw: raw.to_string(), lit: None, construct: Some(construct), expands: false, pattern: false }
    }
}

/// A redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `< file`.
    Input(Word),
    /// `n>&m`, `n<&m`, `>&-` (`output`: `>&`); with a target that is not a
    /// descriptor, `>&file` writes the file.
    Duplicate {
        /// `>&` rather than `<&`.
        output: bool,
        /// The target as written.
        target: Word,
    },
    /// `>`, `>>`, `>|`, `&>`, `&>>` (the operator and the target).
    Output(&'static str, Word),
    /// `<>`.
    ReadWrite(Word),
    /// `<<`, `<<-`.
    HereDocument,
    /// `<<<`.
    HereString(Word),
    /// `< <(…)`, `> >(…)`.
    Process,
}

impl Redirect {
    /// As written, roughly (the operator and the target).
    pub(crate) fn text(&self) -> String {
        match self {
            Redirect::Input(w) => format!("<{}", w.raw),
            Redirect::Duplicate { output, target } => format!("{}&{}", if *output { ">" } else { "<" }, target.raw),
            Redirect::Output(op, w) => format!("{op}{}", w.raw),
            Redirect::ReadWrite(w) => format!("<>{}", w.raw),
            Redirect::HereDocument => "<<…".into(),
            Redirect::HereString(w) => format!("<<<{}", w.raw),
            Redirect::Process => "<(…)".into(),
        }
    }

    /// The construct that keeps an allow rule from matching a command with
    /// this redirection: anything but input from a file, descriptor
    /// duplication and output to `/dev/null`.
    pub(crate) fn construct(&self) -> Option<Construct> {
        let descriptor = |w: &Word| {
            w.lit.as_deref().is_some_and(|t| {
                let digits = t.strip_suffix('-').unwrap_or(t);
                t == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            })
        };
        match self {
            Redirect::Input(w) => w.construct.clone(),
            Redirect::Duplicate { target, .. } if descriptor(target) => None,
            Redirect::Duplicate { output: true, target } => {
                Some(Construct::OutputRedirection(format!(">&{}", target.raw)))
            }
            Redirect::Duplicate { output: false, target } => Some(Construct::Duplication(format!("<&{}", target.raw))),
            Redirect::Output(_, w) if w.lit.as_deref() == Some("/dev/null") => None,
            Redirect::Output(op, w) => Some(Construct::OutputRedirection(format!("{op}{}", w.raw))),
            Redirect::ReadWrite(w) => Some(Construct::ReadWrite(format!("<>{}", w.raw))),
            Redirect::HereDocument => Some(Construct::HereDocument),
            Redirect::HereString(_) => Some(Construct::HereString),
            Redirect::Process => Some(Construct::ProcessSubstitution),
        }
    }
}

/// A prefix assignment of a simple command (`NAME=value cmd`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assignment {
    /// The variable (with its subscript, as written: `a[1]`).
    pub(crate) name: String,
    /// The value (`None` for an array `(…)`).
    pub(crate) value: Option<Word>,
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// Its prefix assignments.
    pub(crate) assignments: Vec<Assignment>,
    /// The command word and its arguments.
    pub(crate) words: Vec<Word>,
    /// Its redirections, in order.
    pub(crate) redirects: Vec<Redirect>,
    /// Part of the top-level list (not inside a compound command, a function
    /// or a substitution).
    pub(crate) top: bool,
}

impl Command {
    /// The command as written, roughly (assignments, words, redirections).
    pub(crate) fn text(&self) -> String {
        let mut parts: Vec<String> = self
            .assignments
            .iter()
            .map(|a| format!("{}={}", a.name, a.value.as_ref().map_or("(…)", |v| v.raw.as_str())))
            .collect();
        parts.extend(self.words.iter().map(|w| w.raw.clone()));
        parts.extend(self.redirects.iter().map(Redirect::text));
        parts.join(" ")
    }

    /// The first syntax in this command that keeps an allow rule from
    /// matching it: an assignment, a command word that is not a literal, a
    /// construct in a word, a redirection other than input, descriptor
    /// duplication or output to `/dev/null`.
    pub(crate) fn construct(&self) -> Option<Construct> {
        if let Some(a) = self.assignments.first() {
            let value = a.value.as_ref().map_or("(…)", |v| v.raw.as_str());
            return Some(Construct::Assignment(format!("{}={value}", a.name)));
        }
        let Some(first) = self.words.first() else { return Some(Construct::NoCommand) };
        if first.lit.is_none() {
            return Some(match (&first.construct, first.expands, first.pattern) {
                (Some(c), _, _) => c.clone(),
                (None, true, _) => Construct::VariableCommand(first.raw.clone()),
                (None, false, true) => Construct::PatternCommand(first.raw.clone()),
                (None, false, false) => Construct::Unverified(format!("the command word `{}`", first.raw)),
            });
        }
        self.words
            .iter()
            .find_map(|w| w.construct.clone())
            .or_else(|| self.redirects.iter().find_map(Redirect::construct))
    }
}

/// A parsed command line (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Script {
    /// Every simple command bash may run, at every depth, in source order.
    pub(crate) commands: Vec<Command>,
    /// The first thing that makes the line more than simple commands joined
    /// by `;`, `&&`, `||`, `|` and newlines (`None`: it is such a list).
    pub(crate) structure: Option<Construct>,
    /// The first thing whose commands cannot be known before bash runs it
    /// (a parse error, a disagreement with bash, arithmetic over variables,
    /// an indirect expansion, …); `None`: [`Script::commands`] is all of them.
    pub(crate) opaque: Option<Construct>,
}

impl Script {
    pub(super) fn failed(c: Construct) -> Script {
        Script { commands: Vec::new(), structure: Some(c.clone()), opaque: Some(c) }
    }

    /// The top-level commands.
    pub(crate) fn top(&self) -> impl Iterator<Item = &Command> {
        self.commands.iter().filter(|c| c.top)
    }
}
