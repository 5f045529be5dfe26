//! What is decided before any parser runs: whether code needs the parser
//! at all (the fast path's words) and the conservative nesting bound that
//! keeps hostile input from exhausting the parser's stack.

use super::ScriptRejected;

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
pub(super) fn mentions_parser_word(code: &str) -> bool {
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
pub(super) fn check_nesting(code: &str, limit: usize) -> Result<(), ScriptRejected> {
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
