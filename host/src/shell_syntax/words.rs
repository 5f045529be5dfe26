//! Words: quotes, escapes and tildes give a word's literal value; plain
//! variables and patterns are noted; parameter expansions, substitutions
//! and arithmetic are classified, and what runs inside them is walked.

use brush_parser::word::{Parameter, ParameterExpr, ParameterTransformOp, TildeExpr, WordPiece, WordPieceWithSource};

use super::model::{Construct, Word};
use super::walk::Walker;
use super::{guarded, parse_nested};

impl Walker {
    /// Classify a word and walk what runs inside it.
    pub(super) fn word(&mut self, raw: &str) -> Word {
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

    pub(super) fn pieces(&mut self, pieces: &[WordPieceWithSource], raw: &str, quoted: bool, acc: &mut Acc) {
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
    pub(super) fn arith(&mut self, expr: &str) {
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
pub(super) struct Acc {
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
