//! Whether code is cut short ([`needs_more_input`]): an interactive REPL
//! reads more lines while the parser fails only where the code ends.

use oxc_allocator::Allocator;
use oxc_parser::{ParseOptions, Parser};
use oxc_span::SourceType;

use super::prescan::check_nesting;
use super::stack::{on_parse_stack, Parsed};
use super::ScriptLimits;

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

#[cfg(test)]
mod tests {
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
