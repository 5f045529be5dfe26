//! The transform: parse the code in the goal the guest evaluates it in
//! (with top-level await when it says `await`), fall back to stripped
//! TypeScript, and apply the REPL rewrite (top-level `let`/`const` become
//! `var`, classes `var C = class C {...};`) as splices at AST spans.

use oxc_allocator::Allocator;
use oxc_ast::ast::{Statement, VariableDeclarationKind};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType};

use super::sealed::{module_syntax, sealed_scan};
use super::typescript;
use super::{line_col, ScriptRejected};

struct Splice {
    at: usize,
    remove: usize,
    insert: String,
}

pub(super) fn transform(code: &str) -> Result<String, ScriptRejected> {
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
