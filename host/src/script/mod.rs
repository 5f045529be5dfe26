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

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    CallExpression, ExportAllDeclaration, ExportDefaultDeclaration, ExportNamedDeclaration, Expression,
    ImportDeclaration, ImportExpression, ImportMeta, Statement, VariableDeclarationKind,
};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType};

mod typescript;

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
    #[error("{what} is not allowed: this is a sealed sandbox with no module loader (line {line}, column {column}). Use the provided globals instead (tools, console, timers)")]
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

/// What [`on_parse_stack`] gave.
enum Parsed<T> {
    Done(T),
    Panicked,
    NoThread(std::io::Error),
}

/// Run `parse` on `code` with a stack deep enough for it: in place for
/// small code, else on a fresh thread with [`PARSE_STACK_BYTES`].
fn on_parse_stack<T: Send + 'static>(code: &str, parse: impl FnOnce(&str) -> T + Send + 'static) -> Parsed<T> {
    if code.len() <= INLINE_MAX_BYTES {
        return match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parse(code))) {
            Ok(v) => Parsed::Done(v),
            Err(_) => Parsed::Panicked,
        };
    }
    let owned = code.to_string();
    let worker = std::thread::Builder::new()
        .name("wrepl-parse".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(move || parse(&owned));
    match worker {
        Ok(handle) => handle.join().map_or(Parsed::Panicked, Parsed::Done),
        Err(e) => Parsed::NoThread(e),
    }
}

/// Code up to this size is parsed on the caller's thread: even fully nested
/// it needs well under 1 MiB of stack (every Rust thread has 2 MiB unless
/// configured lower).
const INLINE_MAX_BYTES: usize = 256;
/// Stack of the parser thread for larger code: reserved virtual memory,
/// committed only as deep code touches it. The pre-scan is a heuristic (a
/// quote inside a regex literal can hide brackets from it), so this stack is
/// sized for the worst case at the size limit: every byte one nesting level.
const PARSE_STACK_BYTES: usize = 4 << 30;

fn parser_failed() -> ScriptRejected {
    ScriptRejected::Syntax { message: "the parser failed on this code".into(), line: 1, column: 1 }
}

/// What sends code to the parser (see [`prepare`]'s fast path).
const PARSER_WORDS: &[&str] = &[
    "let",
    "const",
    "class",
    "import",
    "export",
    "require",
    "\\",
    ":",
    "<",
    "!",
    " as ",
    "interface",
    "type",
    "enum",
    "namespace",
    "declare",
    "abstract",
    "satisfies",
];

/// Whether any of [`PARSER_WORDS`] occurs in `code`, in one pass over it
/// (every evaluation asks: one automaton instead of a scan per word).
fn mentions_parser_word(code: &str) -> bool {
    static AUTOMATON: std::sync::OnceLock<Option<aho_corasick::AhoCorasick>> = std::sync::OnceLock::new();
    match AUTOMATON.get_or_init(|| aho_corasick::AhoCorasick::new(PARSER_WORDS).ok()) {
        Some(a) => a.is_match(code),
        None => PARSER_WORDS.iter().any(|w| code.contains(w)),
    }
}

/// A conservative nesting estimate that needs no parser: the depth of
/// brackets plus runs of prefix/right-associative operators, ignoring
/// comments and string contents. It bounds the parser's recursion, so
/// hostile input cannot exhaust the host's stack.
fn check_nesting(code: &str, limit: usize) -> Result<(), ScriptRejected> {
    let b = code.as_bytes();
    let mut depth = 0usize;
    let mut run = 0usize; // consecutive operator-ish tokens without an operand
    let mut line = 1usize;
    let mut i = 0usize;
    let too_deep = |d: usize, line: usize| ScriptRejected::TooDeep { depth: d, line, limit };
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 2;
            }
            b'"' | b'\'' => {
                i += 1;
                while i < b.len() && b[i] != c && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                run = 0;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth + run > limit {
                    return Err(too_deep(depth + run, line));
                }
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                run = 0;
                i += 1;
            }
            b'!' | b'~' | b'-' | b'+' | b'?' | b':' | b'=' | b'*' | b'>' | b'<' | b'&' | b'|' | b'^' | b'%' | b'/' => {
                run += 1;
                if depth + run > limit {
                    return Err(too_deep(depth + run, line));
                }
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                    i += 1;
                }
                // Prefix keywords chain like operators (`typeof typeof x`,
                // `new new X`, `await await p`, `else if` ladders).
                match &code[start..i] {
                    "typeof" | "void" | "delete" | "await" | "new" | "yield" | "if" | "else" | "async" => {
                        run += 1;
                        if depth + run > limit {
                            return Err(too_deep(depth + run, line));
                        }
                    }
                    _ => run = 0,
                }
            }
            _ => {
                run = 0;
                i += 1;
            }
        }
    }
    Ok(())
}

fn line_col(code: &str, offset: u32) -> (usize, usize) {
    let off = (offset as usize).min(code.len());
    let before = &code[..crate::text::floor_char_boundary(code, off)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

struct SealedScan<'s> {
    code: &'s str,
    /// Where `code` starts in the text that was parsed.
    shift: u32,
    found: Option<ScriptRejected>,
}

impl SealedScan<'_> {
    fn report(&mut self, what: &'static str, offset: u32) {
        if self.found.is_none() {
            let (line, column) = line_col(self.code, offset.saturating_sub(self.shift));
            self.found = Some(ScriptRejected::Sealed { what, line, column });
        }
    }
}

impl<'a> Visit<'a> for SealedScan<'_> {
    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        self.report("import()", it.span.start);
        walk::walk_import_expression(self, it);
    }
    // The parser leaves a declaration in the wrong place (`import` in a
    // function body) to a later pass: every one of them is refused here.
    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        self.report("an import declaration", it.span.start);
    }
    fn visit_export_named_declaration(&mut self, it: &ExportNamedDeclaration<'a>) {
        self.report("an export declaration", it.span.start);
    }
    fn visit_export_default_declaration(&mut self, it: &ExportDefaultDeclaration<'a>) {
        self.report("an export declaration", it.span.start);
    }
    fn visit_export_all_declaration(&mut self, it: &ExportAllDeclaration<'a>) {
        self.report("an export declaration", it.span.start);
    }
    fn visit_import_meta(&mut self, it: &ImportMeta) {
        self.report("import.meta", it.span.start);
    }
    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        if let Expression::Identifier(id) = &it.callee {
            if id.name == "require" {
                self.report("require()", it.span.start);
            }
        }
        walk::walk_call_expression(self, it);
    }
}

struct Splice {
    at: usize,
    remove: usize,
    insert: String,
}

/// True when `code` is the start of a longer snippet: the parser (the one
/// [`prepare`] runs) fails only where the code ends (an open bracket, an
/// operator with nothing after it, an unterminated template or comment),
/// so more lines would complete it. Code that parses, or fails anywhere
/// before its end, is complete (evaluating it reports the error). An
/// interactive REPL reads more lines while this holds.
pub fn needs_more_input(code: &str) -> bool {
    let end = code.trim_end().len();
    if end == 0 || code.len() > 1 << 20 {
        return false;
    }
    // As JavaScript, then (typed code fails early as JavaScript) as
    // TypeScript: cut short in either is cut short. On a stack deep enough
    // for the code, as `prepare` parses it; code too deep, or a parser
    // failure, counts as complete (evaluating it says more).
    let parse = move |c: &str| cut_short(c, end, SourceType::unambiguous()) || cut_short(c, end, SourceType::ts());
    check_nesting(code, ScriptLimits::default().max_nesting).is_ok()
        && matches!(on_parse_stack(code, parse), Parsed::Done(true))
}

/// Whether `code`, parsed as `source`, fails only where it ends (`end`:
/// its length without trailing whitespace).
fn cut_short(code: &str, end: usize, source: SourceType) -> bool {
    let allocator = Allocator::default();
    let options = ParseOptions { allow_return_outside_function: false, ..ParseOptions::default() };
    let parsed = Parser::new(&allocator, code, source).with_options(options).parse();
    let Some(d) = parsed.diagnostics.first() else { return false };
    let at = d.labels.iter().map(|l| l.offset() as usize).max().unwrap_or(0);
    let message = d.message.to_ascii_lowercase();
    // A template literal may span lines: the parser calls an open one an
    // unterminated string, at its backtick or at the `}` after its last
    // substitution (a quoted string cannot span lines).
    let open_template = message.contains("unterminated string")
        && code.get(at..).is_some_and(|rest| rest.starts_with('`') || rest.starts_with('}'));
    at >= end || open_template || message.contains("unterminated multiline comment")
}

fn transform(code: &str) -> Result<String, ScriptRejected> {
    let error = match transform_in_goal(code) {
        Ok(out) => return Ok(out),
        Err(e @ ScriptRejected::Syntax { .. }) => e,
        Err(e) => return Err(e),
    };
    // Not JavaScript in the guest's goal. Module syntax is refused as
    // sealed, whatever else is wrong with the code.
    if let Some(sealed) = module_syntax(code) {
        return Err(sealed);
    }
    // Perhaps TypeScript: then its types become spaces, and the JavaScript
    // left (at the same positions) goes on.
    match typescript::strip(code) {
        Ok(Some(js)) => transform_js(&js),
        Err((message, offset)) => {
            let (line, column) = line_col(code, offset);
            Err(ScriptRejected::Syntax { message, line, column })
        }
        Ok(None) => Err(error),
    }
}

/// [`transform`] of code known to be JavaScript (stripped TypeScript).
fn transform_js(code: &str) -> Result<String, ScriptRejected> {
    match transform_in_goal(code) {
        Err(e @ ScriptRejected::Syntax { .. }) => Err(module_syntax(code).unwrap_or(e)),
        other => other,
    }
}

/// Whether the guest evaluates `code` with top-level await: exactly the
/// guest's own rule (`eval_in` in guest-js), which looks for the word.
/// The rewrite keeps the answer: it adds no `await` and removes none.
fn has_top_level_await(code: &str) -> bool {
    code.contains("await")
}

/// The opening of the async function that code with top-level await is
/// parsed in, so `await` is a keyword at its top level, as in the guest's
/// async global script (sloppy mode, like the script itself). No line break:
/// the code keeps its line numbers.
const TLA_OPEN: &str = "async function wrepl_top_level_await(){";
/// The wrapper's end; the line break ends a trailing `//` comment.
const TLA_CLOSE: &str = "\n}";

/// Parse `code` in the goal the guest evaluates it in (a sloppy global
/// script; with top-level await when the code says `await`), check the
/// sealed scan and apply the REPL rewrite. oxc's `unambiguous` goal is not
/// that goal: it takes `await` then a line break as an identifier, and its
/// later re-parse as a keyword can leave the statement that followed in the
/// tree as well, so the rewrite would edit code that is part of an `await`.
fn transform_in_goal(code: &str) -> Result<String, ScriptRejected> {
    let allocator = Allocator::default();
    let options = ParseOptions { allow_return_outside_function: false, ..ParseOptions::default() };
    if !has_top_level_await(code) {
        let parsed = Parser::new(&allocator, code, SourceType::script()).with_options(options).parse();
        first_error(code, &parsed, 0)?;
        return rewrite(code, &parsed.program, &parsed.program.body, 0);
    }
    // A hashbang is allowed only at the start of the text: inside the
    // wrapper it becomes spaces (of the same length, so offsets hold).
    let body = match code.strip_prefix("#!") {
        Some(rest) => {
            let line = rest.find(['\n', '\r', '\u{2028}', '\u{2029}']).unwrap_or(rest.len()) + 2;
            format!("{}{}", " ".repeat(line), &code[line..])
        }
        None => code.to_string(),
    };
    let wrapped = allocator.alloc_str(&format!("{TLA_OPEN}{body}{TLA_CLOSE}"));
    let shift = TLA_OPEN.len() as u32;
    let parsed = Parser::new(&allocator, wrapped, SourceType::script()).with_options(options).parse();
    first_error(code, &parsed, shift)?;
    // The code must be the function's whole body: a `}` of its own that
    // closes the wrapper early is an error, as it is in the guest.
    let statements = match parsed.program.body.as_slice() {
        [Statement::FunctionDeclaration(f)] if f.span.end as usize == wrapped.len() => {
            f.body.as_ref().map(|b| b.statements.as_slice())
        }
        _ => None,
    };
    let Some(statements) = statements else {
        let at = match parsed.program.body.first() {
            Some(Statement::FunctionDeclaration(f)) => f.span.end.saturating_sub(1 + shift),
            _ => 0,
        };
        let (line, column) = line_col(code, at);
        return Err(ScriptRejected::Syntax { message: "Unexpected token `}`".into(), line, column });
    };
    rewrite(code, &parsed.program, statements, shift)
}

/// The parser's first complaint about `code` (parsed `shift` bytes into
/// the text the parser saw), as a refusal at its place in `code`.
fn first_error(code: &str, parsed: &oxc_parser::ParserReturn<'_>, shift: u32) -> Result<(), ScriptRejected> {
    if let Some(d) = parsed.diagnostics.first() {
        let offset = d.labels.first().map(|l| l.offset()).unwrap_or(0).saturating_sub(shift);
        let (line, column) = line_col(code, offset);
        return Err(ScriptRejected::Syntax { message: d.message.to_string(), line, column });
    }
    if parsed.panicked {
        return Err(ScriptRejected::Syntax { message: "the code could not be parsed".into(), line: 1, column: 1 });
    }
    Ok(())
}

/// Module syntax in `code` (an `import`/`export` declaration, `import()`,
/// `import.meta`, `require()`), found by parsing it as a script or a module,
/// whichever it is: code the guest's goal refused gets the sealed message
/// when it is module code.
fn module_syntax(code: &str) -> Option<ScriptRejected> {
    let allocator = Allocator::default();
    let options = ParseOptions { allow_return_outside_function: false, ..ParseOptions::default() };
    let parsed = Parser::new(&allocator, code, SourceType::unambiguous()).with_options(options).parse();
    if !parsed.diagnostics.is_empty() || parsed.panicked {
        return None;
    }
    sealed_scan(code, &parsed.program, 0).err()
}

/// The sealed scan of a parsed program (`shift`: where `code` starts in the
/// text that was parsed).
fn sealed_scan(code: &str, program: &oxc_ast::ast::Program<'_>, shift: u32) -> Result<(), ScriptRejected> {
    let mut scan = SealedScan { code, shift, found: None };
    for stmt in &program.body {
        if stmt.is_module_declaration() {
            let what = match stmt {
                Statement::ImportDeclaration(_) => "an import declaration",
                _ => "an export declaration",
            };
            scan.report(what, stmt.span().start);
        }
    }
    scan.visit_program(program);
    scan.found.map_or(Ok(()), Err)
}

/// The REPL rewrite of parsed JavaScript (see [`prepare`]): `statements`
/// are the code's top-level statements in `program`, whose text has `code`
/// at offset `shift`.
fn rewrite(
    code: &str,
    program: &oxc_ast::ast::Program<'_>,
    statements: &[Statement<'_>],
    shift: u32,
) -> Result<String, ScriptRejected> {
    sealed_scan(code, program, shift)?;
    let at = |offset: u32| offset.saturating_sub(shift) as usize;
    let mut splices: Vec<Splice> = Vec::new();
    for stmt in statements {
        match stmt {
            Statement::VariableDeclaration(decl) => {
                let keyword = match decl.kind {
                    VariableDeclarationKind::Let => 3,
                    VariableDeclarationKind::Const => 5,
                    _ => continue,
                };
                let start = at(decl.span.start);
                splices.push(Splice { at: start, remove: keyword, insert: "var".into() });
                if decl.kind == VariableDeclarationKind::Let {
                    // `let x;` in a later eval re-declares x as undefined.
                    // A declaration that ended by automatic semicolon
                    // insertion (`let x` then a line break, or a comment
                    // holding one, before `/`, `(`, `[`…) must still end
                    // there once `x` has an initializer that those tokens
                    // could continue: its last declarator gets the `;`.
                    let asi_ended = !code.as_bytes()[..at(decl.span.end)].ends_with(b";");
                    let last = decl.declarations.len().saturating_sub(1);
                    for (i, d) in decl.declarations.iter().enumerate() {
                        if d.init.is_none() {
                            let insert = if i == last && asi_ended { " = void 0;" } else { " = void 0" };
                            splices.push(Splice { at: at(d.id.span().end), remove: 0, insert: insert.into() });
                        }
                    }
                }
            }
            Statement::ClassDeclaration(class) => {
                let Some(id) = &class.id else { continue };
                let start = at(class.span.start);
                splices.push(Splice { at: start, remove: 0, insert: format!("var {} = ", id.name) });
                splices.push(Splice { at: at(class.span.end), remove: 0, insert: ";".into() });
            }
            _ => {}
        }
    }
    if splices.is_empty() {
        return Ok(code.to_string());
    }
    splices.sort_by_key(|s| s.at);
    let mut out = String::with_capacity(code.len() + splices.len() * 12);
    let mut pos = 0usize;
    for s in splices {
        out.push_str(&code[pos..s.at]);
        out.push_str(&s.insert);
        pos = s.at + s.remove;
    }
    out.push_str(&code[pos..]);
    Ok(out)
}

#[cfg(test)]
mod incomplete_tests {
    use super::needs_more_input;

    #[test]
    fn more_lines_are_read_only_where_the_code_is_cut_short() {
        for cut in [
            "x +",
            "function f() {",
            "let a = [1,",
            "if (x)",
            "`a\n${1}",
            "`abc",
            "/* note",
            "foo(",
            "{",
            "a = {b: ",
            "function f(a: number) {",
        ] {
            assert!(needs_more_input(cut), "{cut:?} needs more");
        }
        // Long input is parsed on the parser's own deep stack, as `prepare`
        // does it, never on the caller's.
        let long = format!("x = {}", "a ? b : ".repeat(40_000));
        assert!(needs_more_input(&long));
        for whole in
            ["", "  ", "let x = 41", "x + 1", "await f()", "}", "1 +* 2", "'unterminated", "let let = 1", "f(1))"]
        {
            assert!(!needs_more_input(whole), "{whole:?} is complete (or wrong before its end)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(code: &str) -> Result<String, ScriptRejected> {
        prepare(code, &ScriptLimits::default())
    }

    #[test]
    fn lexical_declarations_become_var() {
        assert_eq!(p("let x = 41").unwrap(), "var x = 41");
        assert_eq!(p("const a = 1; a").unwrap(), "var a = 1; a");
        assert_eq!(p("let y;").unwrap(), "var y = void 0;");
        assert_eq!(p("let {a, b: [c]} = o, d").unwrap(), "var {a, b: [c]} = o, d = void 0;");
        // A declaration ended by a line break keeps ending there.
        assert_eq!(p("let x /*\n*/ /re/g.test('e')").unwrap(), "var x = void 0; /*\n*/ /re/g.test('e')");
        assert_eq!(p("let a, b\n(f)()").unwrap(), "var a = void 0, b = void 0;\n(f)()");
        assert_eq!(p("class A { m() { return 1 } }\n(1)").unwrap(), "var A = class A { m() { return 1 } };\n(1)");
    }

    #[test]
    fn nested_declarations_are_untouched() {
        let code = "for (let i = 0; i < 3; i++) { const j = i }\n{ let k = 1 }\nfunction f() { let z = 2; class Q {} }";
        assert_eq!(p(code).unwrap(), code);
    }

    #[test]
    fn modules_are_sealed() {
        for code in [
            "import fs from 'fs'",
            "import('x')",
            "const m = await import('x')",
            "export const a = 1",
            "require('fs')",
            "const fs = require('fs')",
            "function f() { return require('child_process') }",
            "import.meta.url",
            "\\u0072equire('fs')",
            "x = 1; \\u0072equ\\u0069re('fs')",
        ] {
            match p(code) {
                Err(ScriptRejected::Sealed { .. }) => {}
                other => panic!("{code:?} should be sealed, got {other:?}"),
            }
        }
        // An escaped keyword is a syntax error, not a way around the seal.
        assert!(p("\\u{69}mport('x')").is_err());
        // The word alone is fine.
        assert!(p("const s = 'import x from y; require(z)'; s").is_ok());
        assert!(p("let imports = 1, required = 2").is_ok());
    }

    #[test]
    fn syntax_errors_have_positions() {
        match p("let x = ;\n") {
            Err(ScriptRejected::Syntax { line: 1, .. }) => {}
            other => panic!("{other:?}"),
        }
        match p("const a = 1\nconst b = (") {
            Err(ScriptRejected::Syntax { line, .. }) => assert!(line >= 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn top_level_await_parses() {
        assert_eq!(p("const r = await f(); r").unwrap(), "var r = await f(); r");
    }

    #[test]
    fn code_with_await_is_parsed_as_the_guest_runs_it() {
        // `await` then a line break is a keyword in the guest's async script:
        // the class below is its operand, an expression, not a declaration
        // (found by fuzzing: the rewrite used to make it `await var D = …`).
        let code = "await\n\nclass D {}\nawait 1";
        assert_eq!(p(code).unwrap(), code);
        assert_eq!(p("let a = await f()\nclass B {}").unwrap(), "var a = await f()\nvar B = class B {};");
        // Sloppy mode stays: `with` is fine in either goal.
        assert!(p("let o = {x: 1}; with (o) { x }; await 0").is_ok());
        assert!(p("let o = {x: 1}; with (o) { x }").is_ok());
        // Module syntax is still sealed, whatever the goal.
        for code in
            ["import fs from 'fs'; await 1", "await import('x')", "await 0; import.meta.url", "export {}; await 0"]
        {
            assert!(matches!(p(code), Err(ScriptRejected::Sealed { .. })), "{code:?}: {:?}", p(code));
        }
        // The code is the wrapper's whole body: closing it early is an error.
        for code in ["}; class A {}; {", "await 0 }\nasync function g() { let y = 1;"] {
            let code = format!("{code} await 1");
            assert!(matches!(p(&code), Err(ScriptRejected::Syntax { .. })), "{code:?}: {:?}", p(&code));
        }
        // Errors point into the code itself, not into the wrapper.
        match p("await 1\nlet x = ;") {
            Err(ScriptRejected::Syntax { line: 2, column, .. }) => assert!(column > 1),
            other => panic!("{other:?}"),
        }
        match p("let x = ; await 1") {
            Err(ScriptRejected::Syntax { line: 1, column: 9, .. }) => {}
            other => panic!("{other:?}"),
        }
        // A hashbang line stays where it is.
        assert_eq!(p("#!/usr/bin/env wrepl\nconst v = await 2").unwrap(), "#!/usr/bin/env wrepl\nvar v = await 2");
        // TypeScript with top-level await.
        assert_eq!(p("const n: number = await f()").unwrap(), "var n         = await f()");
    }

    #[test]
    fn fuzz_input_with_await_is_refused_in_the_guests_goal() {
        // The input that found the bug: oxc's `unambiguous` re-parse of the
        // `await` lines used to accept it, lose the error at the U+FFFD and
        // rewrite the class.
        let code =
            "cons\n\n\n\n\n\nawait\n\nclass D {}\nD\n\nz\n\nx\nt\n\n\n\n\n\n\n await i\r\r awai\u{fffd}t import('x')";
        match p(code) {
            Err(ScriptRejected::Syntax { .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hostile_nesting_is_refused_not_overflowed() {
        let limits = ScriptLimits::default();
        for code in [
            format!("let a = {}1{}", "(".repeat(200_000), ")".repeat(200_000)),
            format!("let a = {}1", "!".repeat(500_000)),
            format!("let a = {}1", "-".repeat(500_000)),
            format!("let a = {}1", "typeof ".repeat(50_000)),
            format!("let a = {}1{}", "[".repeat(100_000), "]".repeat(100_000)),
            format!("let a = {}1{}", "{a:".repeat(100_000), "}".repeat(100_000)),
        ] {
            match prepare(&code, &limits) {
                Err(ScriptRejected::TooDeep { .. }) => {}
                other => panic!("expected TooDeep, got {:?}", other.map(|s| s.len())),
            }
        }
        // Code that needs no rewriting gets the same limit and message.
        for code in [format!("{}1{}", "[".repeat(5000), "]".repeat(5000)), format!("x = {}1}}", "{a:".repeat(5000))] {
            let err = prepare(&code, &limits).unwrap_err();
            assert!(err.to_string().contains("nests") && err.to_string().contains("limit is 1000"), "{err}");
        }
    }

    #[test]
    fn deep_chains_at_the_size_limit_do_not_overflow_the_host() {
        // Chains the pre-scan cannot bound: the parser thread's stack must hold
        // them at the largest accepted size.
        let limits = ScriptLimits::default();
        let max = limits.max_bytes - 16;
        for (unit, tail) in
            [("a ? b : ", "c"), ("x => ", "1"), ("a + ", "1"), ("a = ", "1"), ("a ** ", "2"), ("a.b", "")]
        {
            let code = format!("let v = {}{tail}", unit.repeat(max / unit.len()));
            assert!(code.len() <= limits.max_bytes);
            // Accepted or refused, but never a crash.
            let _ = prepare(&code, &limits);
        }
    }

    #[test]
    fn parser_panics_are_refusals() {
        // oxc's debug assertion `comment.is_pure()` fires on this input (found by fuzzing).
        let code = "/* #__PURE__$cs\u{fffd}\u{0}requiexport\u{0}\u{0}\u{10}t\u{a}let/ le* *A\u{0}/* le\u{fffd}\u{fffd}\u{fffd}\u{d}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd} */ x :::::::::::::::::::::::::::::::::::::::::::::::::::::::/* d */ %$ \u{fffd}\u{fffd}\u{fffd}\u{fffd}//m()   { rele% */stte(e1)";
        let limits = ScriptLimits::default();
        let first = prepare(code, &limits);
        assert_eq!(first, prepare(code, &limits));
        if let Err(e) = &first {
            assert!(!e.js_name().is_empty());
        }
    }

    #[test]
    fn long_flat_code_is_fine() {
        let code = format!("let a = 0{}; a", " + 1".repeat(50_000));
        assert!(p(&code).is_ok());
        let code = format!("const xs = [{}]; xs.length", "1,".repeat(100_000));
        assert!(p(&code).is_ok());
    }

    #[test]
    fn prescan_bypass_at_the_size_limit_does_not_overflow() {
        // A quote inside a regex literal makes the pre-scan skip the rest of
        // the line; the parser thread's stack must still hold the nesting.
        let limits = ScriptLimits::default();
        let n = (limits.max_bytes - 64) / 2;
        for (open, close) in [("[", "]"), ("(", ")"), ("{a:", "}")] {
            let k = n / (open.len() + close.len()) * 2 / 2;
            let code = format!("let r = /'/, a = {}1{}; ''", open.repeat(k / 2), close.repeat(k / 2));
            assert!(code.len() <= limits.max_bytes);
            let _ = prepare(&code, &limits);
        }
    }

    #[test]
    fn size_limit() {
        let code = "1;".repeat(300_000);
        assert!(matches!(p(&code), Err(ScriptRejected::TooLarge { .. })));
    }
}
