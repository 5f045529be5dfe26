//! Identifier rules: which names can be declared (reserved words, the
//! ECMAScript library's globals), making an identifier of any text, unique
//! generated type names, and property names.

use std::collections::HashSet;

use super::escape::push_string_literal;

/// Generated identifiers are cut to this many characters (before a `_N`
/// suffix that keeps them unique).
const MAX_NAME_CHARS: usize = 96;

/// Value globals of the ECMAScript library: a tool global with one of these
/// names cannot be declared next to the library's declaration.
pub(super) const ES_GLOBALS: &[&str] = &[
    "globalThis",
    "Object",
    "Function",
    "Array",
    "Number",
    "Boolean",
    "String",
    "Symbol",
    "BigInt",
    "Math",
    "JSON",
    "Reflect",
    "Proxy",
    "Promise",
    "Date",
    "RegExp",
    "Error",
    "EvalError",
    "RangeError",
    "ReferenceError",
    "SyntaxError",
    "TypeError",
    "URIError",
    "AggregateError",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "WeakRef",
    "FinalizationRegistry",
    "ArrayBuffer",
    "SharedArrayBuffer",
    "DataView",
    "Atomics",
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
    "Intl",
    "NaN",
    "Infinity",
    "undefined",
    "eval",
    "isFinite",
    "isNaN",
    "parseFloat",
    "parseInt",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "unescape",
];
/// Unique identifiers.
#[derive(Debug, Clone)]
pub(super) struct Names {
    used: HashSet<String>,
}

impl Names {
    pub(super) fn new(reserved: &[&str]) -> Self {
        Self { used: reserved.iter().map(|s| s.to_string()).collect() }
    }

    /// `base` (already an identifier) or `base_N`, unused so far.
    pub(super) fn claim(&mut self, base: &str) -> String {
        if self.used.insert(base.to_string()) {
            return base.to_string();
        }
        let mut n = 2u64;
        loop {
            let c = format!("{base}_{n}");
            if self.used.insert(c.clone()) {
                return c;
            }
            n += 1;
        }
    }

    /// `<base>Input` and `<base>Output` with the same suffix.
    pub(super) fn claim_pair(&mut self, base: &str) -> (String, String) {
        let mut n = 1u64;
        loop {
            let b = if n == 1 { base.to_string() } else { format!("{base}_{n}") };
            let (i, o) = (format!("{b}Input"), format!("{b}Output"));
            if !self.used.contains(&i) && !self.used.contains(&o) {
                self.used.insert(i.clone());
                self.used.insert(o.clone());
                return (i, o);
            }
            n += 1;
        }
    }
}

/// Words that cannot name a declared function or variable.
const RESERVED_WORDS: &[&str] = &[
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "new",
    "null",
    "return",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "implements",
    "interface",
    "let",
    "package",
    "private",
    "protected",
    "public",
    "static",
    "yield",
    "await",
    "arguments",
    "eval",
    "async",
    "declare",
    "type",
    "namespace",
    "module",
    "any",
    "unknown",
    "never",
    "object",
    "string",
    "number",
    "boolean",
    "symbol",
    "bigint",
];

/// An ASCII identifier that can be declared (`declare function <s>`).
pub fn is_ts_identifier(s: &str) -> bool {
    is_ascii_identifier(s) && !RESERVED_WORDS.contains(&s)
}

fn is_ascii_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else { return false };
    (first.is_ascii_alphabetic() || first == '_' || first == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// An identifier made from any text: other characters become `_`, a leading
/// digit gets a `_` before it, and it is cut to [`MAX_NAME_CHARS`].
pub(super) fn ident_base(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(MAX_NAME_CHARS)
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '$' { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if RESERVED_WORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// A property name: bare when it is an identifier, else a string literal.
pub(super) fn push_prop_name(out: &mut String, name: &str) {
    if is_ascii_identifier(name) {
        out.push_str(name);
    } else {
        push_string_literal(out, name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dts::schema::ts;
    use serde_json::json;

    #[test]
    fn hostile_names_become_identifiers() {
        let t = ts(json!({"$ref": "#/$defs/*~1 9x", "$defs": {"*/ 9x": {"type": "string"}}}));
        assert_eq!(t, "type T = T____9x;\ntype T____9x = string;\n");
        assert_eq!(ident_base("9lives"), "_9lives");
        assert_eq!(ident_base(""), "_");
        assert_eq!(ident_base("class"), "class_");
        assert_eq!(ident_base("ünï-code"), "_n__code");
        assert_eq!(ident_base(&"x".repeat(500)).len(), MAX_NAME_CHARS);
        let mut out = String::new();
        push_prop_name(&mut out, "a\"b\\c\n");
        assert_eq!(out, "\"a\\\"b\\\\c\\n\"");
        assert!(is_ts_identifier("Read") && is_ts_identifier("$x") && is_ts_identifier("_9"));
        assert!(
            !is_ts_identifier("9a") && !is_ts_identifier("class") && !is_ts_identifier("a-b") && !is_ts_identifier("")
        );
    }
}
