//! The REPL transform and the sealed-sandbox scan, done with a real
//! JavaScript parser (oxc) on the host before any code reaches the guest.
//!
//! - `import`/`export` declarations, `import(...)`, `import.meta` and calls
//!   of `require(...)` are rejected before evaluation.
//! - Top-level `let`/`const` become `var` and top-level classes become
//!   `var C = class C {...};`, so every top-level binding lives on the global
//!   object and can be re-declared by a later evaluation, like a REPL.
//!   Function declarations are already global and re-declarable.
//! - The guest evaluates the result as a sloppy global script, with
//!   top-level await when the code holds the word `await`; its completion
//!   value is the last expression's value. The code is parsed in that same
//!   goal here, so the rewrite sees the statements the guest will run.
//!
//! Edits are splices at AST spans, so line numbers in errors stay right.
//!
//! # Layout
//!
//! This module holds the limits, the refusals and [`prepare`]; [`prescan`]
//! is what is decided without a parser (the fast path, the nesting bound);
//! [`stack`] runs the parser on a stack deep enough for the code;
//! [`rewrite`] parses in the guest's goal and applies the REPL rewrite;
//! [`sealed`] is the scan for module syntax; [`incomplete`] tells whether
//! code is cut short ([`needs_more_input`]); [`typescript`] strips types.

mod imports;
mod incomplete;
mod prescan;
mod rewrite;
mod sealed;
mod stack;
#[cfg(test)]
mod tests;
mod typescript;

pub use imports::ModuleDigests;
pub use incomplete::needs_more_input;
use prescan::{check_nesting, mentions_parser_word};
use rewrite::transform;
use stack::{on_parse_stack, Parsed};

/// Limits on the code the transform accepts.
#[derive(Debug, Clone, Copy)]
pub struct ScriptLimits {
    /// Largest accepted source, in bytes.
    pub max_bytes: usize,
    /// Deepest accepted nesting (brackets and chained operators).
    pub max_nesting: usize,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        Self { max_bytes: 512 << 10, max_nesting: 1000 }
    }
}

/// Why code was refused before evaluation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptRejected {
    /// The source is larger than the limit.
    #[error("the code is {len} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// Size of the code.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The source nests deeper than the limit.
    #[error("the code nests {depth} levels deep at line {line}; the limit is {limit}")]
    TooDeep {
        /// Depth reached.
        depth: usize,
        /// Where.
        line: usize,
        /// The limit.
        limit: usize,
    },
    /// The parser rejected the code.
    #[error("{message} (line {line}, column {column})")]
    Syntax {
        /// Parser message.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The code tries to load a module.
    #[error("{what} is not allowed: this is a sealed sandbox with no module loader but for the modules the settings' \"modules\" name (line {line}, column {column}). Use the provided globals instead (tools, console, timers, fetch)")]
    Sealed {
        /// What was found (`import declaration`, `require()`, ...).
        what: &'static str,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
}

impl ScriptRejected {
    /// The JavaScript error class this rejection is reported as.
    pub fn js_name(&self) -> &'static str {
        match self {
            ScriptRejected::Syntax { .. } => "SyntaxError",
            ScriptRejected::Sealed { .. } => "SandboxError",
            ScriptRejected::TooLarge { .. } | ScriptRejected::TooDeep { .. } => "RangeError",
        }
    }
}

/// Transform REPL input into the script the guest evaluates, with imports
/// of the configured modules (`modules`) rewritten into loads through the
/// `ImportModule` tool (see `imports.rs`); without modules, module syntax is
/// refused as sealed.
pub fn prepare_with(
    code: &str,
    limits: &ScriptLimits,
    modules: Option<&std::sync::Arc<dyn ModuleDigests>>,
) -> Result<String, ScriptRejected> {
    let Some(modules) = modules.cloned() else { return prepare(code, limits) };
    if code.len() > limits.max_bytes {
        return Err(ScriptRejected::TooLarge { len: code.len(), limit: limits.max_bytes });
    }
    check_nesting(code, limits.max_nesting)?;
    if !code.contains("import") {
        return prepare(code, limits);
    }
    match on_parse_stack(code, move |c| imports::rewrite_imports(c, modules.as_ref())) {
        Parsed::Done(Ok(Some(rewritten))) => prepare(&rewritten, &ScriptLimits { max_bytes: usize::MAX, ..*limits }),
        Parsed::Done(Ok(None)) => prepare(code, limits),
        Parsed::Done(Err(e)) => Err(e),
        Parsed::Panicked => Err(parser_failed()),
        Parsed::NoThread(e) => {
            Err(ScriptRejected::Syntax { message: format!("cannot start the parser: {e}"), line: 1, column: 1 })
        }
    }
}

/// Transform REPL input into the script the guest evaluates.
pub fn prepare(code: &str, limits: &ScriptLimits) -> Result<String, ScriptRejected> {
    if code.len() > limits.max_bytes {
        return Err(ScriptRejected::TooLarge { len: code.len(), limit: limits.max_bytes });
    }
    // The nesting limit holds on both paths, so deep code is refused with
    // the same message whether or not it needs rewriting (the guest's own
    // parser would otherwise stop it with an unrelated syntax error).
    check_nesting(code, limits.max_nesting)?;
    // Fast path: nothing to rewrite and nothing that could load a module.
    // A backslash may spell any of these words with unicode escapes
    // (`\u0072equire`), so such code always takes the parser path.
    // TypeScript's marks (`:`, `<`, `!`, `as`, declarations) take the
    // parser path too, where type syntax is stripped.
    if !mentions_parser_word(code) {
        return Ok(code.to_string());
    }
    // Parsing and walking recurse with the code's nesting. Constructs the
    // pre-scan cannot bound (long `a ? b : c ? ...`, `x => y => ...` or
    // `a = b = ...` chains) need up to ~256 bytes of stack per byte of code
    // (measured), so the code's size picks a stack that is large enough:
    // small code is parsed in place, medium code on a long-lived parser
    // thread, large code on a fresh thread with a huge (lazily committed) stack.
    match on_parse_stack(code, transform) {
        Parsed::Done(r) => r,
        // A parser panic (oxc has debug assertions that some inputs trip,
        // e.g. a `/* #__PURE__ */` comment in an odd place) is a refusal
        // of the code, never a crash of the caller.
        Parsed::Panicked => Err(parser_failed()),
        Parsed::NoThread(e) => {
            Err(ScriptRejected::Syntax { message: format!("cannot start the parser: {e}"), line: 1, column: 1 })
        }
    }
}

fn parser_failed() -> ScriptRejected {
    ScriptRejected::Syntax { message: "the parser failed on this code".into(), line: 1, column: 1 }
}

fn line_col(code: &str, offset: u32) -> (usize, usize) {
    let off = (offset as usize).min(code.len());
    let before = &code[..crate::text::floor_char_boundary(code, off)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}
