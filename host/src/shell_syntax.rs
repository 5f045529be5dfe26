//! The one shell parser: a Bash command line as the simple commands bash
//! would run, read with `brush-parser` and cross-checked so that where brush
//! and bash could disagree the result fails closed.
//!
//! [`parse`] gives a [`Script`]: every simple command at every depth (inside
//! subshells, groups, loops, functions, command and process substitutions,
//! here-document bodies and `${…}` operands), which of them are top-level,
//! what keeps the line from being a plain list of simple commands
//! ([`Script::structure`]) and what keeps some of its commands from being
//! known at all ([`Script::opaque`]). Words are classified ([`Word`]): a
//! literal value when the word is fully known before bash runs, and the first
//! construct in it that could hide code ([`Construct`]).
//!
//! # Cross-checks
//!
//! brush is a reimplementation of bash, not bash. Its tokenizer, for one,
//! reads `\$'` and `$$'` as the start of ANSI-C quoting where bash reads a
//! literal `$` and a plain single quote, so `echo \$'\'\'⏎rm f⏎'` is one word
//! to brush and runs `rm f` in bash. Every word token is therefore re-read by
//! brush's separate word parser, and the two readings must agree: the word
//! must parse completely, and no unquoted text in it may hold a blank, a
//! newline or an operator character (bash would have ended the word there).
//! A disagreement makes the line opaque. For the top level the source is also
//! checked byte for byte: between tokens only blanks, line continuations and
//! comments, and each token is its source text.
//!
//! Inputs longer than [`MAX_LEN`] or nested deeper than `MAX_NESTING` are not
//! parsed (they are opaque): the parser recurses on nesting. A parser panic is
//! caught and is opaque too. Extended globbing is off, as in `bash -c`.
//!
//! It is syntax only: which programs run other code, which rules match, and
//! what a construct means for permission are the callers' business.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use brush_parser::ast;
use brush_parser::word::{Parameter, ParameterExpr, ParameterTransformOp, TildeExpr, WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, Token};

/// Longest command line that is parsed, in bytes; a longer one is opaque.
pub(crate) const MAX_LEN: usize = 64 * 1024;
/// Deepest bracket / keyword nesting that is parsed.
const MAX_NESTING: usize = 32;
/// Deepest nesting of command substitutions (and the like) that is parsed.
const MAX_DEPTH: usize = 8;

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
    fn unknown(raw: &str, construct: Construct) -> Word {
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
    fn failed(c: Construct) -> Script {
        Script { commands: Vec::new(), structure: Some(c.clone()), opaque: Some(c) }
    }

    /// The top-level commands.
    pub(crate) fn top(&self) -> impl Iterator<Item = &Command> {
        self.commands.iter().filter(|c| c.top)
    }
}

/// Parse a command line (never panics).
pub(crate) fn parse(src: &str) -> Script {
    parse_at(src, 0)
}

/// Parse a command line that bash will run as a nested script (a
/// substitution body, an `eval` string), `depth` levels down; its commands
/// are not top-level.
pub(crate) fn parse_nested(src: &str, depth: usize) -> Script {
    let mut s = parse_at(src, depth.max(1));
    for c in &mut s.commands {
        c.top = false;
    }
    s
}

fn options() -> ParserOptions {
    ParserOptions { enable_extended_globbing: false, tilde_expansion_after_colon: false, ..ParserOptions::default() }
}

/// Run a brush function, a panic becoming an error.
fn guarded<T, E: fmt::Display>(f: impl FnOnce() -> Result<T, E>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the parser failed on it".into()),
    }
}

/// Deepest `(`/`{`/`[` nesting, quotes ignored (an over-estimate).
fn bracket_depth(src: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in src.bytes() {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Deepest keyword / operator nesting over the tokens (an over-estimate).
fn token_depth(tokens: &[Token]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for t in tokens {
        match t.to_str() {
            "(" | "{" | "if" | "while" | "until" | "for" | "case" | "select" | "[[" | "function" | "coproc" => {
                depth += 1;
                max = max.max(depth);
            }
            ")" | "}" | "fi" | "done" | "esac" | "]]" => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn parse_at(src: &str, depth: usize) -> Script {
    if src.len() > MAX_LEN || depth > MAX_DEPTH || bracket_depth(src) > MAX_NESTING {
        return Script::failed(Construct::TooComplex);
    }
    if src.contains('\0') {
        return Script::failed(Construct::Unparsable("a NUL byte".into()));
    }
    let opts = options();
    let tokens = match guarded(|| brush_parser::uncached_tokenize_str(src, &opts.tokenizer_options())) {
        Ok(t) => t,
        Err(e) => return Script::failed(Construct::Unparsable(e)),
    };
    if token_depth(&tokens) > MAX_NESTING {
        return Script::failed(Construct::TooComplex);
    }
    let program = match guarded(|| brush_parser::parse_tokens(&tokens, &opts)) {
        Ok(p) => p,
        Err(e) => return Script::failed(Construct::Unparsable(e)),
    };
    let mut w = Walker { opts, depth, script: Script::default(), here_docs: Vec::new() };
    if src.chars().any(|c| c.is_control() && c != '\t' && c != '\n') {
        w.structure(Construct::ControlCharacter);
    }
    for list in &program.complete_commands {
        w.list(list, true);
    }
    w.check_tokens(src, &tokens);
    let mut script = w.script;
    if script.structure.is_none() && script.top().next().is_none() {
        script.structure = Some(Construct::Empty);
    }
    script
}

/// Character index → byte offset of `src`.
fn char_offsets(src: &str) -> Vec<usize> {
    let mut v: Vec<usize> = src.char_indices().map(|(i, _)| i).collect();
    v.push(src.len());
    v
}

/// A word token's text is one bash word: brush's word parser reads all of
/// it, and none of its unquoted text holds what would end a word in bash.
fn token_is_one_word(pieces: &[WordPieceWithSource]) -> bool {
    pieces.iter().all(|p| match &p.piece {
        WordPiece::Text(t) => !t.contains([' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')']),
        _ => true,
    })
}

/// Walks the AST, collecting commands and constructs.
struct Walker {
    opts: ParserOptions,
    depth: usize,
    script: Script,
    /// Spans (character indices) of here-document bodies and end tags: not
    /// words.
    here_docs: Vec<(usize, usize)>,
}

impl Walker {
    fn structure(&mut self, c: Construct) {
        if self.script.structure.is_none() {
            self.script.structure = Some(c);
        }
    }

    fn opaque(&mut self, c: Construct) {
        if self.script.opaque.is_none() {
            self.script.opaque = Some(c.clone());
        }
        self.structure(c);
    }

    /// Every word token is one bash word; at the top level, every byte of the
    /// source is a token, a blank, a line continuation or a comment.
    fn check_tokens(&mut self, src: &str, tokens: &[Token]) {
        let offsets = char_offsets(src);
        let byte = |i: usize| offsets.get(i).copied();
        let mut prev_end = 0usize;
        let mut bytes_ok = self.here_docs.is_empty();
        for t in tokens {
            let span = t.location();
            let (start, end) = (span.start.index, span.end.index);
            if let Token::Word(w, _) = t {
                if !self.here_docs.contains(&(start, end)) {
                    match guarded(|| brush_parser::word::parse(w, &self.opts)) {
                        Ok(pieces) if token_is_one_word(&pieces) => {}
                        Ok(_) => self.opaque(Construct::Unverified(format!("bash may split the word `{w}`"))),
                        Err(e) => self.opaque(Construct::Unverified(format!("the word `{w}`: {e}"))),
                    }
                }
            }
            if !bytes_ok {
                continue;
            }
            let (Some(s), Some(e), Some(p)) = (byte(start), byte(end), byte(prev_end)) else {
                self.opaque(Construct::Unverified("a token outside the command".into()));
                bytes_ok = false;
                continue;
            };
            if s < p || e < s {
                self.structure(Construct::Unverified("tokens out of order".into()));
                bytes_ok = false;
                continue;
            }
            self.check_gap(&src[p..s]);
            let text = &src[s..e];
            if let (Token::Operator(op, _), Some(before)) = (t, text.strip_suffix('\n')) {
                // A newline token's span starts where a comment before it does.
                if op == "\n" && !before.is_empty() {
                    self.check_gap(before);
                    prev_end = end;
                    continue;
                }
            }
            if text != t.to_str() && text.replace("\\\n", "") != t.to_str() {
                self.structure(Construct::Unverified(format!("the token `{}`", t.to_str())));
            }
            prev_end = end;
        }
        if bytes_ok {
            match byte(prev_end) {
                Some(p) => self.check_gap(&src[p..]),
                None => self.structure(Construct::Unverified("the end of the command".into())),
            }
        }
    }

    /// Between tokens: blanks, line continuations, or a comment (to the
    /// newline, which is a token).
    fn check_gap(&mut self, gap: &str) {
        let mut rest = gap;
        while let Some(c) = rest.chars().next() {
            if c == ' ' || c == '\t' {
                rest = &rest[1..];
            } else if let Some(r) = rest.strip_prefix("\\\n") {
                rest = r;
            } else if c == '#' && !rest.contains('\n') {
                self.structure(Construct::Comment);
                return;
            } else {
                let shown: String = rest.chars().take(20).collect();
                self.structure(Construct::Unverified(format!("`{shown}` between words")));
                return;
            }
        }
    }

    fn list(&mut self, list: &ast::CompoundList, top: bool) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            if top && matches!(sep, ast::SeparatorOperator::Async) {
                self.structure(Construct::Background);
            }
            self.pipeline(&and_or.first, top);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, top),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, top: bool) {
        if top && p.timed.is_some() {
            self.structure(Construct::Time);
        }
        for c in &p.seq {
            self.command(c, top);
        }
    }

    fn redirect_list(&mut self, list: &Option<ast::RedirectList>) {
        for r in list.iter().flat_map(|l| l.0.iter()) {
            self.redirect(r);
        }
    }

    fn command(&mut self, c: &ast::Command, top: bool) {
        match c {
            ast::Command::Simple(s) => self.simple(s, top),
            ast::Command::Compound(cc, redirects) => {
                if top {
                    let what = compound_name(cc);
                    self.structure(Construct::Compound(what));
                }
                self.compound(cc);
                self.redirect_list(redirects);
            }
            ast::Command::Function(f) => {
                if top {
                    self.structure(Construct::Function);
                }
                self.word(&f.fname.value);
                self.compound(&f.body.0);
                self.redirect_list(&f.body.1);
            }
            ast::Command::ExtendedTest(t, redirects) => {
                if top {
                    self.structure(Construct::Compound("a `[[ … ]]` test"));
                }
                self.test(&t.expr);
                self.redirect_list(redirects);
            }
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match cc {
            C::Arithmetic(a) => self.arith(&a.expr.value),
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    self.arith(&e.value);
                }
                self.list(&f.body.list, false);
            }
            C::BraceGroup(b) => self.list(&b.list, false),
            C::Subshell(s) => self.list(&s.list, false),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value);
                }
                self.list(&f.body.list, false);
            }
            C::CaseClause(c) => {
                self.word(&c.value.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value);
                    }
                    if let Some(l) = &item.cmd {
                        self.list(l, false);
                    }
                }
            }
            C::IfClause(i) => {
                self.list(&i.condition, false);
                self.list(&i.then, false);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c, false);
                    }
                    self.list(&e.body, false);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, false);
                self.list(&w.1.list, false);
            }
            C::Coprocess(c) => self.command(&c.body, false),
        }
    }

    fn test(&mut self, e: &ast::ExtendedTestExpr) {
        use ast::BinaryPredicate as B;
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.test(a);
                self.test(b);
            }
            E::Not(a) | E::Parenthesized(a) => self.test(a),
            E::UnaryTest(pred, w) => {
                let w = self.word(&w.value);
                let names_variable = matches!(
                    pred,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                );
                if names_variable && w.lit.as_deref().is_none_or(|v| v.contains('[')) {
                    self.opaque(Construct::ArithmeticOver(format!("-v {}", w.raw)));
                }
            }
            E::BinaryTest(pred, l, r) => {
                let l = self.word(&l.value);
                let r = self.word(&r.value);
                let arithmetic = matches!(
                    pred,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic {
                    for w in [&l, &r] {
                        match &w.lit {
                            Some(v) => self.arith(v),
                            None => self.opaque(Construct::ArithmeticOver(w.raw.clone())),
                        }
                    }
                }
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, top: bool) {
        use ast::CommandPrefixOrSuffixItem as I;
        let mut cmd = Command { assignments: Vec::new(), words: Vec::new(), redirects: Vec::new(), top };
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                I::IoRedirect(r) => {
                    let r = self.redirect(r);
                    cmd.redirects.push(r);
                }
                I::AssignmentWord(a, _) => {
                    let a = self.assignment(a);
                    cmd.assignments.push(a);
                }
                I::Word(w) => {
                    let w = self.word(&w.value);
                    cmd.words.push(w);
                }
                I::ProcessSubstitution(_, sub) => {
                    self.list(&sub.list, false);
                    cmd.words.push(Word::unknown("<(…)", Construct::ProcessSubstitution));
                }
            }
        }
        if let Some(w) = &s.word_or_name {
            let w = self.word(&w.value);
            cmd.words.push(w);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            match item {
                I::IoRedirect(r) => {
                    let r = self.redirect(r);
                    cmd.redirects.push(r);
                }
                // After the command word an assignment is an ordinary word.
                I::AssignmentWord(_, w) | I::Word(w) => {
                    let w = self.word(&w.value);
                    cmd.words.push(w);
                }
                I::ProcessSubstitution(_, sub) => {
                    self.list(&sub.list, false);
                    cmd.words.push(Word::unknown("<(…)", Construct::ProcessSubstitution));
                }
            }
        }
        self.script.commands.push(cmd);
    }

    fn assignment(&mut self, a: &ast::Assignment) -> Assignment {
        let name = match &a.name {
            ast::AssignmentName::VariableName(n) => n.clone(),
            ast::AssignmentName::ArrayElementName(n, index) => {
                self.arith(index);
                format!("{n}[{index}]")
            }
        };
        let value = match &a.value {
            ast::AssignmentValue::Scalar(w) => Some(self.word(&w.value)),
            ast::AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(k) = key {
                        self.arith(&k.value);
                    }
                    self.word(&value.value);
                }
                None
            }
        };
        Assignment { name, value }
    }

    fn redirect(&mut self, r: &ast::IoRedirect) -> Redirect {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match r {
            ast::IoRedirect::File(_, kind, target) => {
                let target = match target {
                    T::Filename(w) | T::Duplicate(w) => self.word(&w.value),
                    T::Fd(n) => self.word(&n.to_string()),
                    T::ProcessSubstitution(_, sub) => {
                        self.list(&sub.list, false);
                        return Redirect::Process;
                    }
                };
                match kind {
                    K::Read => Redirect::Input(target),
                    K::Write => Redirect::Output(">", target),
                    K::Append => Redirect::Output(">>", target),
                    K::Clobber => Redirect::Output(">|", target),
                    K::ReadAndWrite => Redirect::ReadWrite(target),
                    K::DuplicateInput => Redirect::Duplicate { output: false, target },
                    K::DuplicateOutput => Redirect::Duplicate { output: true, target },
                }
            }
            ast::IoRedirect::HereDocument(_, h) => {
                for w in [&h.doc, &h.here_end] {
                    if let Some(loc) = &w.loc {
                        self.here_docs.push((loc.start.index, loc.end.index));
                    }
                }
                if h.requires_expansion {
                    match guarded(|| brush_parser::word::parse_heredoc(&h.doc.value, &self.opts)) {
                        Ok(pieces) => {
                            let mut acc = Acc::default();
                            self.pieces(&pieces, &h.doc.value, true, &mut acc);
                        }
                        Err(e) => self.opaque(Construct::Unverified(format!("a here-document body: {e}"))),
                    }
                }
                Redirect::HereDocument
            }
            ast::IoRedirect::HereString(_, w) => Redirect::HereString(self.word(&w.value)),
            ast::IoRedirect::OutputAndError(w, append) => {
                let w = self.word(&w.value);
                Redirect::Output(if *append { "&>>" } else { "&>" }, w)
            }
        }
    }

    /// Classify a word and walk what runs inside it.
    fn word(&mut self, raw: &str) -> Word {
        let pieces = match guarded(|| brush_parser::word::parse(raw, &self.opts)) {
            Ok(p) => p,
            Err(e) => {
                let c = Construct::Unverified(format!("the word `{raw}`: {e}"));
                self.opaque(c.clone());
                return Word::unknown(raw, c);
            }
        };
        let mut acc = Acc { known: true, ..Acc::default() };
        self.pieces(&pieces, raw, false, &mut acc);
        let brace = brace_like(&acc.unquoted);
        let pattern = acc.pattern || brace;
        Word {
            raw: raw.to_string(),
            lit: (acc.known && !pattern).then_some(acc.lit),
            construct: acc.construct,
            expands: acc.expands,
            pattern,
        }
    }

    fn pieces(&mut self, pieces: &[WordPieceWithSource], raw: &str, quoted: bool, acc: &mut Acc) {
        for p in pieces {
            let excerpt = || raw.get(p.start_index..p.end_index).unwrap_or(raw).to_string();
            match &p.piece {
                WordPiece::Text(t) => {
                    acc.lit.push_str(t);
                    if !quoted {
                        acc.unquoted.push_str(t);
                        if t.contains(['*', '?', '[']) {
                            acc.pattern = true;
                        }
                    }
                }
                WordPiece::SingleQuotedText(t) => acc.lit.push_str(t),
                WordPiece::AnsiCQuotedText(_) => acc.unknown(Construct::AnsiCQuote),
                WordPiece::DoubleQuotedSequence(inner) => self.pieces(inner, raw, true, acc),
                WordPiece::GettextDoubleQuotedSequence(inner) => {
                    acc.unknown(Construct::LocaleQuote);
                    self.pieces(inner, raw, true, acc);
                }
                WordPiece::TildeExpansion(t) => acc.lit.push_str(&tilde(t)),
                WordPiece::ParameterExpansion(e) => {
                    acc.known = false;
                    if is_plain(e) {
                        acc.expands = true;
                    } else {
                        acc.unknown(Construct::Parameter(excerpt()));
                        self.parameter(e);
                    }
                }
                WordPiece::CommandSubstitution(body) => {
                    acc.unknown(Construct::CommandSubstitution);
                    self.nested(body);
                }
                WordPiece::BackquotedCommandSubstitution(body) => {
                    acc.unknown(Construct::Backticks);
                    self.nested(&unbackquote(body, quoted));
                }
                WordPiece::EscapeSequence(s) => acc.lit.push_str(s.strip_prefix('\\').unwrap_or(s)),
                WordPiece::ArithmeticExpression(e) => {
                    acc.unknown(Construct::Arithmetic);
                    self.arith(&e.value);
                }
            }
        }
    }

    /// What a `${…}` form beyond a plain variable may run.
    fn parameter(&mut self, e: &ParameterExpr) {
        use ParameterExpr as P;
        let (parameter, indirect) = match e {
            P::Parameter { parameter, indirect }
            | P::ParameterLength { parameter, indirect }
            | P::Transform { parameter, indirect, .. } => (parameter, *indirect),
            P::UseDefaultValues { parameter, indirect, default_value: w, .. }
            | P::AssignDefaultValues { parameter, indirect, default_value: w, .. }
            | P::IndicateErrorIfNullOrUnset { parameter, indirect, error_message: w, .. }
            | P::UseAlternativeValue { parameter, indirect, alternative_value: w, .. }
            | P::RemoveSmallestSuffixPattern { parameter, indirect, pattern: w }
            | P::RemoveLargestSuffixPattern { parameter, indirect, pattern: w }
            | P::RemoveSmallestPrefixPattern { parameter, indirect, pattern: w }
            | P::RemoveLargestPrefixPattern { parameter, indirect, pattern: w }
            | P::UppercaseFirstChar { parameter, indirect, pattern: w }
            | P::UppercasePattern { parameter, indirect, pattern: w }
            | P::LowercaseFirstChar { parameter, indirect, pattern: w }
            | P::LowercasePattern { parameter, indirect, pattern: w } => {
                if let Some(w) = w {
                    self.sub_word(w);
                }
                (parameter, *indirect)
            }
            P::Substring { parameter, indirect, offset, length } => {
                self.arith(&offset.value);
                if let Some(l) = length {
                    self.arith(&l.value);
                }
                (parameter, *indirect)
            }
            P::ReplaceSubstring { parameter, indirect, pattern, replacement, .. } => {
                self.sub_word(pattern);
                if let Some(r) = replacement {
                    self.sub_word(r);
                }
                (parameter, *indirect)
            }
            P::VariableNames { .. } | P::MemberKeys { .. } => return,
        };
        if let P::Transform { op: ParameterTransformOp::PromptExpand, .. } = e {
            // `${x@P}` runs the command substitutions in x's value.
            self.opaque(Construct::Runs("prompt expansion `${…@P}` (it runs what a variable holds)".into()));
        }
        if indirect {
            // `${!x}`: x may name `a[$(cmd)]`, whose subscript bash evaluates.
            self.opaque(Construct::Runs("indirect expansion `${!…}` (it can evaluate what a variable holds)".into()));
        }
        if let Parameter::NamedWithIndex { index, .. } = parameter {
            self.arith(index);
        }
    }

    /// An operand of `${…}` (a default value, a pattern): a word of its own.
    fn sub_word(&mut self, w: &str) {
        match guarded(|| brush_parser::word::parse(w, &self.opts)) {
            Ok(pieces) => {
                let mut acc = Acc::default();
                self.pieces(&pieces, w, false, &mut acc);
            }
            Err(e) => self.opaque(Construct::Unverified(format!("`{w}` in a parameter expansion: {e}"))),
        }
    }

    /// Arithmetic bash evaluates: opaque unless it is numbers and operators
    /// only (a variable's value is itself evaluated, and an array subscript
    /// in it runs `$(…)`).
    fn arith(&mut self, expr: &str) {
        if !arith_is_constant(expr) {
            self.opaque(Construct::ArithmeticOver(expr.to_string()));
        }
    }

    /// A nested script (a substitution body): its commands join this one's.
    fn nested(&mut self, body: &str) {
        let inner = parse_nested(body, self.depth + 1);
        if let Some(c) = inner.opaque {
            self.opaque(c);
        }
        self.script.commands.extend(inner.commands);
    }
}

/// What a word's pieces add up to.
#[derive(Default)]
struct Acc {
    lit: String,
    known: bool,
    construct: Option<Construct>,
    expands: bool,
    pattern: bool,
    unquoted: String,
}

impl Acc {
    fn unknown(&mut self, c: Construct) {
        self.known = false;
        if self.construct.is_none() {
            self.construct = Some(c);
        }
    }
}

fn compound_name(cc: &ast::CompoundCommand) -> &'static str {
    use ast::CompoundCommand as C;
    match cc {
        C::Arithmetic(_) => "an arithmetic command `((…))`",
        C::ArithmeticForClause(_) => "an arithmetic `for ((…))` loop",
        C::BraceGroup(_) => "a group `{ …; }`",
        C::Subshell(_) => "a subshell `( … )`",
        C::ForClause(_) => "a `for` loop",
        C::CaseClause(_) => "a `case` statement",
        C::IfClause(_) => "an `if` statement",
        C::WhileClause(_) => "a `while` loop",
        C::UntilClause(_) => "an `until` loop",
        C::Coprocess(_) => "a coprocess `coproc`",
    }
}

/// Unquoted text bash may brace-expand: a `{` with a `,` or `..` before the
/// next `}` (`{a,b}`, `{1..3}`; `{}` alone is literal).
fn brace_like(unquoted: &str) -> bool {
    unquoted.match_indices('{').any(|(i, _)| {
        let rest = &unquoted[i + 1..];
        rest.find('}').is_some_and(|j| rest[..j].contains(',') || rest[..j].contains(".."))
    })
}

/// `$x`, `${x}`, `$1`, `$?`: a plain parameter, nothing evaluated.
fn is_plain(e: &ParameterExpr) -> bool {
    matches!(
        e,
        ParameterExpr::Parameter {
            parameter: Parameter::Named(_) | Parameter::Positional(_) | Parameter::Special(_),
            indirect: false
        }
    )
}

fn tilde(t: &TildeExpr) -> String {
    match t {
        TildeExpr::Home => "~".into(),
        TildeExpr::UserHome(u) => format!("~{u}"),
        TildeExpr::WorkingDir => "~+".into(),
        TildeExpr::OldWorkingDir => "~-".into(),
        TildeExpr::NthDirFromTopOfDirStack { n, plus_used: true } => format!("~+{n}"),
        TildeExpr::NthDirFromTopOfDirStack { n, plus_used: false } => format!("~{n}"),
        TildeExpr::NthDirFromBottomOfDirStack { n } => format!("~-{n}"),
    }
}

/// The command inside backquotes, as bash reads it: a backslash keeps its
/// meaning only before `$`, `` ` ``, `\` (and `"` inside double quotes).
/// brush has already turned `` \` `` into `` ` ``.
fn unbackquote(body: &str, quoted: bool) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('$' | '\\')) => out.extend(chars.next()),
            ('\\', Some('"')) if quoted => out.extend(chars.next()),
            _ => out.push(c),
        }
    }
    out
}

/// Numbers (including `0x1f`, `2#101`) and operators only.
pub(crate) fn arith_is_constant(expr: &str) -> bool {
    let mut in_number = false;
    for c in expr.chars() {
        if c.is_ascii_digit() {
            in_number = true;
        } else if c.is_ascii_alphabetic() || c == '_' || c == '#' || c == '@' {
            if !in_number {
                return false;
            }
        } else if matches!(c, '$' | '`' | '[' | ']' | '\\' | '\'' | '"' | '{' | '}') {
            return false;
        } else {
            in_number = false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(cmd: &Command) -> Vec<Option<&str>> {
        cmd.words.iter().map(|w| w.lit.as_deref()).collect()
    }

    #[test]
    fn plain_lists_of_simple_commands() {
        let s = parse("git status --short && git diff | head -5; ls 'a b' \"c\"\\ d\nwc -l < f 2>&1 >/dev/null");
        assert_eq!(s.structure, None, "{s:?}");
        assert_eq!(s.opaque, None);
        let top: Vec<_> = s.top().collect();
        assert_eq!(top.len(), 5);
        assert_eq!(lits(top[0]), [Some("git"), Some("status"), Some("--short")]);
        assert_eq!(lits(top[3]), [Some("ls"), Some("a b"), Some("c d")]);
        assert_eq!(lits(top[4]), [Some("wc"), Some("-l")]);
        assert!(top.iter().all(|c| c.construct().is_none()), "{top:?}");
        // quotes and escapes are removed; a variable is known only as "some value"
        let s = parse("\"r\"\"m\" \\rm $x \"${y}\" ~/bin *.rs");
        let c = &s.commands[0];
        assert_eq!(lits(c), [Some("rm"), Some("rm"), None, None, Some("~/bin"), None]);
        assert!(c.words[2].expands && c.words[3].expands && c.words[5].pattern);
        assert_eq!(c.construct(), None, "variables and patterns are arguments allow rules may cover");
        let s = parse("$x f");
        assert_eq!(s.commands[0].construct(), Some(Construct::VariableCommand("$x".into())));
    }

    #[test]
    fn constructs_are_named() {
        for (cmd, want) in [
            ("git status $(rm f)", Construct::CommandSubstitution),
            ("git status \"`rm f`\"", Construct::Backticks),
            ("git status ${x:-$(rm f)}", Construct::Parameter("${x:-$(rm f)}".into())),
            ("git status $((1+2))", Construct::Arithmetic),
            ("git status $'\\x41'", Construct::AnsiCQuote),
            ("git status <(rm f)", Construct::ProcessSubstitution),
            ("git status > out", Construct::OutputRedirection(">out".into())),
            ("git status >> out", Construct::OutputRedirection(">>out".into())),
            ("git status &> out", Construct::OutputRedirection("&>out".into())),
            ("git status >& out", Construct::OutputRedirection(">&out".into())),
            ("git status <> out", Construct::ReadWrite("<>out".into())),
            ("git status <<< x", Construct::HereString),
            ("X=1 git status", Construct::Assignment("X=1".into())),
            ("> f", Construct::NoCommand),
            ("cat <<EOF\nx\nEOF", Construct::HereDocument),
        ] {
            let s = parse(cmd);
            let got = s.structure.clone().or_else(|| s.top().find_map(Command::construct));
            assert_eq!(got, Some(want), "{cmd:?}: {s:?}");
        }
        for (cmd, want) in [
            ("git status # it's fine", Construct::Comment),
            ("git status &", Construct::Background),
            ("(git status)", Construct::Compound("a subshell `( … )`")),
            ("{ git status; }", Construct::Compound("a group `{ …; }`")),
            ("f() { git status; }", Construct::Function),
            ("time git status", Construct::Time),
            ("git status\r", Construct::ControlCharacter),
            ("", Construct::Empty),
            ("  \n ", Construct::Empty),
        ] {
            assert_eq!(parse(cmd).structure, Some(want), "{cmd:?}");
        }
    }

    #[test]
    fn nested_commands_are_found() {
        let s =
            parse("echo $(a; b `c`) \"${x:-$(d)}\" <(e) >(f) && (g) && { h; } && if i; then j; fi\ncat <<E\n$(k)\nE");
        let names: Vec<&str> = s.commands.iter().filter_map(|c| c.words.first()?.lit.as_deref()).collect();
        for n in ["echo", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "cat"] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        assert_eq!(s.top().count(), 2, "only echo and cat are top-level");
        // a quoted here-document tag: the body is text
        let s = parse("cat <<'E'\n$(k)\nE");
        assert_eq!(s.commands.len(), 1);
    }

    #[test]
    fn what_cannot_be_known_is_opaque() {
        for cmd in [
            "x='a[$(rm f)]'; echo $((x))",
            "echo ${!x}",
            "echo ${x@P}",
            "echo ${a[i]}",
            "((x))",
            "[[ $x -eq 1 ]]",
            "a[$i]=1 cmd",
            "echo 'unterminated",
            "echo $(",
            "ls ~+99999999999999999999999",
            "if then fi",
        ] {
            assert!(parse(cmd).opaque.is_some(), "{cmd:?}: {:?}", parse(cmd));
        }
        for cmd in ["echo $((1 + 0x1f * 2#10))", "[[ 1 -eq 1 ]]", "echo ${x:-default}"] {
            assert_eq!(parse(cmd).opaque, None, "{cmd:?}");
        }
    }

    #[test]
    fn brush_and_bash_disagreements_fail_closed() {
        // brush reads `\$'` / `$$'` as ANSI-C quoting; bash does not, and runs `rm f`.
        for cmd in ["echo \\$'\\'\\'\nrm f\n'", "echo $$'\\'' ; rm f ; '", "echo \\$'\\' ; rm f ; '\\''"] {
            let s = parse(cmd);
            assert!(s.opaque.is_some(), "{cmd:?}: {s:?}");
            assert!(s.structure.is_some());
        }
        // brush reads `( ( true ) )` (two subshells to bash) as an arithmetic command: opaque.
        assert!(parse("( ( true ) )").opaque.is_some());
        // A comment that brush and bash both end at the newline: the next line is a command.
        let s = parse("git status # ' \nrm f");
        assert_eq!(s.structure, Some(Construct::Comment));
        assert!(s.commands.iter().any(|c| c.words[0].lit.as_deref() == Some("rm")));
    }

    #[test]
    fn deep_or_huge_input_is_refused_not_crashed() {
        let deep = format!("echo {}x{}", "$(".repeat(200), ")".repeat(200));
        assert_eq!(parse(&deep).opaque, Some(Construct::TooComplex));
        let ifs = format!("{}true{}", "if true; then ".repeat(100), "; fi".repeat(100));
        assert_eq!(parse(&ifs).opaque, Some(Construct::TooComplex));
        let long = "a ".repeat(MAX_LEN);
        assert_eq!(parse(&long).opaque, Some(Construct::TooComplex));
        assert!(parse("echo a\0b").opaque.is_some());
    }

    #[test]
    fn the_deepest_accepted_input_parses_on_a_small_stack() {
        // Runtime worker threads have 2 MiB stacks; nesting just under the
        // limits must parse there (in a debug build, the worst case).
        let inputs = [
            format!("echo {}x{}", "\"$(echo ".repeat(MAX_DEPTH), ")\"".repeat(MAX_DEPTH)),
            format!("echo {}x{}", "${x:-".repeat(MAX_NESTING - 1), "}".repeat(MAX_NESTING - 1)),
            format!("{}true{}", "if true; then ".repeat(MAX_NESTING - 1), "; fi".repeat(MAX_NESTING - 1)),
            format!("{}true{}", "{ ".repeat(MAX_NESTING - 1), "; }".repeat(MAX_NESTING - 1)),
        ];
        let handle = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || inputs.iter().map(|i| parse(i).opaque.is_none()).collect::<Vec<_>>())
            .unwrap();
        assert_eq!(handle.join().unwrap(), [true, true, true, true]);
    }

    #[test]
    fn arithmetic_constants() {
        assert!(arith_is_constant("1 + 2 * (3 - 0x1f) % 2#101"));
        for e in ["x", "1+y", "$x", "a[1]", "`c`", "_", "1 + $(c)"] {
            assert!(!arith_is_constant(e), "{e}");
        }
    }
}
