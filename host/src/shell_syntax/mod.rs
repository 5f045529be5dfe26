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
//!
//! # Layout
//!
//! This module parses (the entry points and the bounds on what is parsed);
//! [`model`] holds what a parse gives and classifies commands and
//! redirections; [`walk`] walks brush's AST into commands; [`words`]
//! classifies words (quotes, expansions, substitutions and arithmetic);
//! [`verify`] cross-checks brush's tokens against bash's reading.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use brush_parser::{ParserOptions, Token};

mod model;
#[cfg(test)]
mod tests;
mod verify;
mod walk;
mod words;

pub(crate) use model::{Command, Construct, Script, Word};
use walk::Walker;
pub(crate) use words::arith_is_constant;

/// Longest command line that is parsed, in bytes; a longer one is opaque.
pub(crate) const MAX_LEN: usize = 64 * 1024;
/// Deepest bracket / keyword nesting that is parsed.
const MAX_NESTING: usize = 32;
/// Deepest nesting of command substitutions (and the like) that is parsed.
const MAX_DEPTH: usize = 8;

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
