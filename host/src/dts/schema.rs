//! JSON Schema → TypeScript types: one schema document becomes `type <Name>
//! = ...;` plus one alias per local `$ref` target, within a byte budget, at
//! most [`MAX_SCHEMA_DEPTH`] deep, with reference cycles that TypeScript
//! would reject cut to `unknown`.
//!
//! (Length: the code is about 563 lines; the rest of the file is its unit
//! tests, kept next to what they test.)

use std::collections::{HashMap, VecDeque};

use serde_json::{Map, Value};

use super::escape::{push_doc, push_string_literal};
use super::names::{ident_base, push_prop_name, Names};
use super::{Full, MAX_ENUM_MEMBERS, MAX_SCHEMA_DEPTH};

/// Top-level shape of a written type, by binding strength: a weaker form is
/// parenthesized where a stronger one is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Form {
    Union,
    Intersection,
    Atom,
}

/// One named type of a schema document: the root or a `$ref` target.
struct Alias {
    name: String,
    /// JSON pointer of the target inside the document (`""` for the root).
    pointer: String,
    /// Byte range of the body in the buffer, once written.
    body: (usize, usize),
    /// References written outside any object, array or tuple: the target
    /// index and the byte range of the reference.
    direct: Vec<(usize, usize, usize)>,
}

/// Writes the types of one schema document.
struct SchemaWriter<'a> {
    root: &'a Value,
    prefix: String,
    names: &'a mut Names,
    buf: String,
    budget: usize,
    aliases: Vec<Alias>,
    by_pointer: HashMap<String, usize>,
    queue: VecDeque<usize>,
    current: usize,
    indent: &'static str,
    /// Object nesting, for indentation.
    level: usize,
}

/// `type <name> = ...;` for `schema` and every local `$ref` target it uses.
pub(super) fn schema_types(
    schema: &Value,
    name: &str,
    names: &mut Names,
    budget: usize,
    indent: &'static str,
) -> Result<String, Full> {
    let mut w = SchemaWriter {
        root: schema,
        prefix: name.to_string(),
        names,
        buf: String::new(),
        budget,
        aliases: vec![Alias { name: name.to_string(), pointer: String::new(), body: (0, 0), direct: Vec::new() }],
        by_pointer: HashMap::from([(String::new(), 0)]),
        queue: VecDeque::from([0]),
        current: 0,
        indent,
        level: 0,
    };
    while let Some(i) = w.queue.pop_front() {
        w.current = i;
        let target = if i == 0 { Some(w.root) } else { w.root.pointer(&w.aliases[i].pointer) };
        let alias_name = w.aliases[i].name.clone();
        w.push(indent)?;
        w.push("type ")?;
        w.push(&alias_name)?;
        w.push(" = ")?;
        let start = w.buf.len();
        match target {
            Some(s) => {
                w.node(s, 0, false)?;
            }
            None => w.push("unknown")?,
        }
        let end = w.buf.len();
        w.aliases[i].body = (start, end);
        w.push(";\n")?;
    }
    let text = w.break_cycles();
    if text.len() > budget {
        return Err(Full);
    }
    Ok(text)
}

impl SchemaWriter<'_> {
    fn push(&mut self, s: &str) -> Result<(), Full> {
        if self.buf.len() + s.len() > self.budget {
            return Err(Full);
        }
        self.buf.push_str(s);
        Ok(())
    }

    fn check(&self) -> Result<(), Full> {
        if self.buf.len() > self.budget {
            Err(Full)
        } else {
            Ok(())
        }
    }

    /// Write `s` where `need` is required, in parentheses if it is weaker.
    fn operand(&mut self, s: &Value, depth: usize, guarded: bool, need: Form) -> Result<(), Full> {
        let start = self.buf.len();
        let got = self.node(s, depth, guarded)?;
        self.wrap(start, got, need)
    }

    /// Write the type of schema `s`. `guarded`: inside an object, array or
    /// tuple, where TypeScript allows a type to refer to itself.
    fn node(&mut self, s: &Value, depth: usize, guarded: bool) -> Result<Form, Full> {
        if depth > MAX_SCHEMA_DEPTH {
            self.push("unknown")?;
            return Ok(Form::Atom);
        }
        let m = match s {
            Value::Bool(false) => {
                self.push("never")?;
                return Ok(Form::Atom);
            }
            Value::Object(m) => m,
            _ => {
                self.push("unknown")?;
                return Ok(Form::Atom);
            }
        };
        if let Some(r) = m.get("$ref") {
            let Some(r) = r.as_str() else {
                self.push("unknown")?;
                return Ok(Form::Atom);
            };
            self.reference(r, guarded)?;
            return Ok(Form::Atom);
        }
        let nullable = m.get("nullable") == Some(&Value::Bool(true));
        // Intersection operands: the schema's own type, anyOf, oneOf, each allOf member.
        let has_base = ["const", "enum", "type"].iter().any(|k| m.contains_key(*k)) || inferred_kind(m).is_some();
        let any_of = m.get("anyOf").and_then(Value::as_array);
        let one_of = m.get("oneOf").and_then(Value::as_array);
        let all_of = m.get("allOf").and_then(Value::as_array);
        let count = usize::from(has_base)
            + usize::from(any_of.is_some())
            + usize::from(one_of.is_some())
            + all_of.map_or(0, Vec::len);
        let need = if count > 1 { Form::Intersection } else { Form::Union };
        let mut parts = 0usize;
        let mut last = Form::Atom;
        if has_base {
            let start = self.buf.len();
            last = self.base(m, depth)?;
            self.wrap(start, last, need)?;
            parts += 1;
        }
        for alts in [any_of, one_of].into_iter().flatten() {
            if parts > 0 {
                self.push(" & ")?;
            }
            let start = self.buf.len();
            last = self.union_of(alts, depth, guarded)?;
            self.wrap(start, last, need)?;
            parts += 1;
        }
        for part in all_of.into_iter().flatten() {
            if parts > 0 {
                self.push(" & ")?;
            }
            let start = self.buf.len();
            last = self.node(part, depth + 1, guarded)?;
            self.wrap(start, last, need)?;
            parts += 1;
        }
        if parts == 0 {
            self.push("unknown")?;
        }
        let mut form = if parts > 1 { Form::Intersection } else { last };
        if nullable && parts > 0 {
            self.push(" | null")?;
            form = Form::Union;
        }
        Ok(form)
    }

    /// Parenthesize what was written from `start` when its form `got` is
    /// weaker than `need`.
    fn wrap(&mut self, start: usize, got: Form, need: Form) -> Result<(), Full> {
        if got < need {
            self.buf.insert(start, '(');
            self.push(")")?;
        }
        Ok(())
    }

    /// `A | B | ...` of the alternatives.
    fn union_of(&mut self, alts: &[Value], depth: usize, guarded: bool) -> Result<Form, Full> {
        if alts.is_empty() {
            self.push("never")?;
            return Ok(Form::Atom);
        }
        for (i, a) in alts.iter().enumerate() {
            if i > 0 {
                self.push(" | ")?;
            }
            self.operand(a, depth + 1, guarded, Form::Intersection)?;
        }
        Ok(if alts.len() > 1 { Form::Union } else { Form::Intersection })
    }

    /// The schema's own type: `const`, `enum` or `type` (or what its keywords imply).
    fn base(&mut self, m: &Map<String, Value>, depth: usize) -> Result<Form, Full> {
        if let Some(c) = m.get("const") {
            return self.literal(c);
        }
        if let Some(e) = m.get("enum") {
            let Some(values) = e.as_array() else {
                self.push("unknown")?;
                return Ok(Form::Atom);
            };
            return self.enumeration(values);
        }
        let kinds: Vec<&str> = match m.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => {
                let mut v: Vec<&str> = Vec::new();
                for t in ts.iter().filter_map(Value::as_str) {
                    if !v.contains(&t) {
                        v.push(t);
                    }
                }
                v
            }
            Some(_) => vec![],
            None => inferred_kind(m).into_iter().collect(),
        };
        if kinds.is_empty() {
            self.push("unknown")?;
            return Ok(Form::Atom);
        }
        for (i, k) in kinds.iter().enumerate() {
            if i > 0 {
                self.push(" | ")?;
            }
            match *k {
                "string" => self.push("string")?,
                "number" | "integer" => self.push("number")?,
                "boolean" => self.push("boolean")?,
                "null" => self.push("null")?,
                "object" => self.object(m, depth)?,
                "array" => self.array(m, depth)?,
                _ => self.push("unknown")?,
            }
        }
        Ok(if kinds.len() > 1 { Form::Union } else { Form::Atom })
    }

    /// A literal type of a JSON value (`unknown` for objects and arrays).
    fn literal(&mut self, v: &Value) -> Result<Form, Full> {
        match v {
            Value::String(s) => {
                let mut lit = String::new();
                push_string_literal(&mut lit, s);
                self.push(&lit)?;
            }
            Value::Number(n) => {
                let t = n.to_string();
                self.push(&t)?;
                if t.starts_with('-') {
                    // `-1[]` does not parse: a negative literal is not an atom.
                    return Ok(Form::Intersection);
                }
            }
            Value::Bool(b) => self.push(if *b { "true" } else { "false" })?,
            Value::Null => self.push("null")?,
            Value::Array(_) | Value::Object(_) => self.push("unknown")?,
        }
        Ok(Form::Atom)
    }

    fn enumeration(&mut self, values: &[Value]) -> Result<Form, Full> {
        if values.is_empty() {
            self.push("never")?;
            return Ok(Form::Atom);
        }
        if values.iter().any(|v| v.is_array() || v.is_object()) {
            self.push("unknown")?;
            return Ok(Form::Atom);
        }
        if values.len() > MAX_ENUM_MEMBERS {
            // Too many members to list: the kinds of the values.
            let mut kinds: Vec<&str> = Vec::new();
            for v in values {
                let k = match v {
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    Value::Bool(_) => "boolean",
                    _ => "null",
                };
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            self.push(&kinds.join(" | "))?;
            return Ok(if kinds.len() > 1 { Form::Union } else { Form::Atom });
        }
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                self.push(" | ")?;
            }
            self.literal(v)?;
        }
        Ok(if values.len() > 1 {
            Form::Union
        } else if values[0].as_f64().is_some_and(|n| n.is_sign_negative()) {
            Form::Intersection
        } else {
            Form::Atom
        })
    }

    fn object(&mut self, m: &Map<String, Value>, depth: usize) -> Result<(), Full> {
        self.level += 1;
        let r = self.object_body(m, depth);
        self.level -= 1;
        r
    }

    fn object_body(&mut self, m: &Map<String, Value>, depth: usize) -> Result<(), Full> {
        let props = m.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = m
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let pad = "  ".repeat(self.level);
        let pad = format!("{}{pad}", self.indent);
        let close_pad = &pad[2..];
        let mut members = 0usize;
        self.push("{\n")?;
        if let Some(props) = props {
            for (k, v) in props {
                if let Some(d) = v.get("description").and_then(Value::as_str) {
                    let mut doc = String::new();
                    push_doc(&mut doc, d, &pad);
                    self.push(&doc)?;
                }
                self.push(&pad)?;
                let mut key = String::new();
                push_prop_name(&mut key, k);
                self.push(&key)?;
                self.push(if required.contains(&k.as_str()) { ": " } else { "?: " })?;
                self.node(v, depth + 1, true)?;
                self.push(";\n")?;
                members += 1;
            }
        }
        for r in &required {
            if props.is_some_and(|p| p.contains_key(*r)) {
                continue;
            }
            self.push(&pad)?;
            let mut key = String::new();
            push_prop_name(&mut key, r);
            self.push(&key)?;
            self.push(": unknown;\n")?;
            members += 1;
        }
        // Other properties: an index signature unless additionalProperties is false.
        let extra = m.get("additionalProperties");
        let patterns: Vec<&Value> =
            m.get("patternProperties").and_then(Value::as_object).map(|p| p.values().collect()).unwrap_or_default();
        let closed = extra == Some(&Value::Bool(false)) && patterns.is_empty();
        if !closed {
            self.push(&pad)?;
            self.push("[key: string]: ")?;
            let typed: Vec<&Value> =
                extra.filter(|e| **e != Value::Bool(false)).into_iter().chain(patterns.iter().copied()).collect();
            if members > 0 || typed.is_empty() || typed.iter().any(|t| **t == Value::Bool(true)) {
                // Named properties must fit the index signature: keep it open.
                self.push("unknown")?;
            } else {
                for (i, t) in typed.iter().enumerate() {
                    if i > 0 {
                        self.push(" | ")?;
                    }
                    self.operand(t, depth + 1, true, Form::Intersection)?;
                }
            }
            self.push(";\n")?;
        } else if members == 0 {
            self.push(&pad)?;
            self.push("[key: string]: never;\n")?;
        }
        self.push(close_pad)?;
        self.push("}")?;
        self.check()
    }

    fn array(&mut self, m: &Map<String, Value>, depth: usize) -> Result<(), Full> {
        let (tuple, rest) = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(p)), rest) => (Some(p), rest),
            (_, Some(Value::Array(p))) => (Some(p), m.get("additionalItems")),
            (_, items) => (None, items),
        };
        let Some(tuple) = tuple else {
            match rest {
                Some(Value::Bool(false)) => self.push("[]")?,
                None | Some(Value::Bool(true)) => self.push("unknown[]")?,
                Some(items) => {
                    self.operand(items, depth + 1, true, Form::Atom)?;
                    self.push("[]")?;
                }
            }
            return Ok(());
        };
        let min = m.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        self.push("[")?;
        for (i, item) in tuple.iter().enumerate() {
            if i > 0 {
                self.push(", ")?;
            }
            let optional = (i as u64) >= min;
            self.operand(item, depth + 1, true, if optional { Form::Atom } else { Form::Union })?;
            if optional {
                self.push("?")?;
            }
        }
        match rest {
            Some(Value::Bool(false)) => {}
            None | Some(Value::Bool(true)) => {
                self.push(if tuple.is_empty() { "...unknown[]" } else { ", ...unknown[]" })?;
            }
            Some(r) => {
                self.push(if tuple.is_empty() { "..." } else { ", ..." })?;
                self.operand(r, depth + 1, true, Form::Atom)?;
                self.push("[]")?;
            }
        }
        self.push("]")
    }

    /// A `$ref`: local references become named aliases, anything else `unknown`.
    fn reference(&mut self, r: &str, guarded: bool) -> Result<(), Full> {
        let Some(pointer) = r.strip_prefix('#').map(percent_decode) else {
            return self.push("unknown");
        };
        let index = match self.by_pointer.get(&pointer) {
            Some(i) => *i,
            None => {
                if self.root.pointer(&pointer).is_none() {
                    return self.push("unknown");
                }
                let last = pointer.rsplit('/').next().unwrap_or("").replace("~1", "/").replace("~0", "~");
                let name = self.names.claim(&ident_base(&format!("{}_{last}", self.prefix)));
                let i = self.aliases.len();
                self.aliases.push(Alias { name, pointer: pointer.clone(), body: (0, 0), direct: Vec::new() });
                self.by_pointer.insert(pointer, i);
                self.queue.push_back(i);
                i
            }
        };
        let start = self.buf.len();
        let name = self.aliases[index].name.clone();
        self.push(&name)?;
        if !guarded {
            let cur = self.current;
            self.aliases[cur].direct.push((index, start, self.buf.len()));
        }
        Ok(())
    }

    /// TypeScript rejects aliases that refer to themselves outside an object,
    /// array or tuple (`type A = B | string; type B = A;`): replace the
    /// references that close such a cycle with `unknown`.
    fn break_cycles(self) -> String {
        let n = self.aliases.len();
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut state = vec![0u8; n];
        let mut cut: Vec<(usize, usize)> = Vec::new();
        for s in 0..n {
            if state[s] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(s, 0)];
            state[s] = 1;
            while let Some(top) = stack.last_mut() {
                let (v, next) = *top;
                if let Some(&(to, a, b)) = self.aliases[v].direct.get(next) {
                    top.1 += 1;
                    match state[to] {
                        0 => {
                            state[to] = 1;
                            stack.push((to, 0));
                        }
                        1 => cut.push((a, b)),
                        _ => {}
                    }
                } else {
                    state[v] = 2;
                    stack.pop();
                }
            }
        }
        if cut.is_empty() {
            return self.buf;
        }
        cut.sort_unstable();
        let mut out = String::with_capacity(self.buf.len() + cut.len() * 8);
        let mut at = 0;
        for (a, b) in cut {
            out.push_str(&self.buf[at..a]);
            out.push_str("unknown");
            at = b;
        }
        out.push_str(&self.buf[at..]);
        out
    }
}

/// What an object or array schema without `type` implies.
pub(super) fn inferred_kind(m: &Map<String, Value>) -> Option<&'static str> {
    if ["properties", "additionalProperties", "patternProperties", "required"].iter().any(|k| m.contains_key(*k)) {
        Some("object")
    } else if m.contains_key("items") || m.contains_key("prefixItems") {
        Some("array")
    } else {
        None
    }
}

/// Decode `%XX` escapes of a URI fragment (invalid UTF-8 is kept lossy).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(v) = hex {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The type declarations of one schema, named `T` (for tests).
#[cfg(test)]
pub(super) fn ts(schema: Value) -> String {
    let mut names = Names::new(&[]);
    schema_types(&schema, "T", &mut names, super::MAX_OUTPUT_BYTES, "").unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn primitives_and_unknowns() {
        assert_eq!(ts(json!({"type": "string", "format": "uri"})), "type T = string;\n");
        assert_eq!(ts(json!({"type": "integer"})), "type T = number;\n");
        assert_eq!(ts(json!({"type": "boolean"})), "type T = boolean;\n");
        assert_eq!(ts(json!({"type": "null"})), "type T = null;\n");
        assert_eq!(ts(json!({"type": "banana"})), "type T = unknown;\n");
        assert_eq!(ts(json!({})), "type T = unknown;\n");
        assert_eq!(ts(json!(true)), "type T = unknown;\n");
        assert_eq!(ts(json!(false)), "type T = never;\n");
        assert_eq!(ts(json!("not a schema")), "type T = unknown;\n");
        assert_eq!(ts(json!({"type": ["string", "null", "string"]})), "type T = string | null;\n");
        assert_eq!(ts(json!({"type": "string", "nullable": true})), "type T = string | null;\n");
        assert_eq!(ts(json!({"type": 7})), "type T = unknown;\n");
    }

    #[test]
    fn objects() {
        let t = ts(json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "description": "First."},
                "b-c": {"type": "number"},
                "class": {"type": "boolean"}
            },
            "required": ["a", "missing"],
            "additionalProperties": false
        }));
        assert_eq!(
            t,
            "type T = {\n  /** First. */\n  a: string;\n  \"b-c\"?: number;\n  class?: boolean;\n  missing: unknown;\n};\n"
        );
        // Open objects get an index signature; typed only without named properties.
        assert_eq!(ts(json!({"type": "object"})), "type T = {\n  [key: string]: unknown;\n};\n");
        assert_eq!(
            ts(json!({"type": "object", "additionalProperties": {"type": "integer"}})),
            "type T = {\n  [key: string]: number;\n};\n"
        );
        assert_eq!(
            ts(json!({"properties": {"x": {}}, "additionalProperties": {"type": "integer"}})),
            "type T = {\n  x?: unknown;\n  [key: string]: unknown;\n};\n"
        );
        assert_eq!(
            ts(json!({"type": "object", "additionalProperties": false})),
            "type T = {\n  [key: string]: never;\n};\n"
        );
        // Nested objects are indented by nesting.
        assert_eq!(
            ts(
                json!({"type": "object", "properties": {"o": {"type": "object", "additionalProperties": false, "properties": {"k": {"type": "null"}}}}, "additionalProperties": false})
            ),
            "type T = {\n  o?: {\n    k?: null;\n  };\n};\n"
        );
    }

    #[test]
    fn arrays_and_tuples() {
        assert_eq!(ts(json!({"type": "array", "items": {"type": "string"}})), "type T = string[];\n");
        assert_eq!(ts(json!({"type": "array"})), "type T = unknown[];\n");
        assert_eq!(
            ts(json!({"type": "array", "items": {"type": ["string", "number"]}})),
            "type T = (string | number)[];\n"
        );
        assert_eq!(
            ts(
                json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false, "minItems": 1})
            ),
            "type T = [string, number?];\n"
        );
        assert_eq!(
            ts(
                json!({"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "boolean"}, "minItems": 1})
            ),
            "type T = [string, ...boolean[]];\n"
        );
        assert_eq!(
            ts(json!({"prefixItems": [{"enum": ["a", "b"]}], "minItems": 0})),
            "type T = [(\"a\" | \"b\")?, ...unknown[]];\n"
        );
    }

    #[test]
    fn enums_and_consts_are_escaped_literals() {
        assert_eq!(ts(json!({"enum": ["a", 1, -2.5, true, null]})), "type T = \"a\" | 1 | -2.5 | true | null;\n");
        assert_eq!(
            ts(json!({"const": "say \"hi\"\\\n\u{2028}\u{2029}\t\u{1}"})),
            "type T = \"say \\\"hi\\\"\\\\\\n\\u2028\\u2029\\t\\u0001\";\n"
        );
        assert_eq!(ts(json!({"const": {"an": "object"}})), "type T = unknown;\n");
        assert_eq!(ts(json!({"enum": []})), "type T = never;\n");
        assert_eq!(ts(json!({"enum": "nope"})), "type T = unknown;\n");
        assert_eq!(ts(json!({"type": "array", "items": {"const": -1}})), "type T = (-1)[];\n");
    }

    #[test]
    fn huge_enum_collapses_to_kinds() {
        let many: Vec<Value> = (0..MAX_ENUM_MEMBERS + 1).map(|i| json!(format!("v{i}"))).collect();
        assert_eq!(ts(json!({"enum": many})), "type T = string;\n");
        let mut mixed: Vec<Value> = (0..MAX_ENUM_MEMBERS + 1).map(|i| json!(i)).collect();
        mixed.push(json!("x"));
        assert_eq!(ts(json!({"enum": mixed})), "type T = number | string;\n");
        let fits: Vec<Value> = (0..MAX_ENUM_MEMBERS).map(|i| json!(i)).collect();
        assert!(ts(json!({"enum": fits})).contains(" | 1023;"));
    }

    #[test]
    fn combinators() {
        assert_eq!(ts(json!({"anyOf": [{"type": "string"}, {"type": "number"}]})), "type T = string | number;\n");
        assert_eq!(ts(json!({"oneOf": [{"type": "string"}, {"type": "null"}]})), "type T = string | null;\n");
        assert_eq!(
            ts(
                json!({"allOf": [{"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}, {"anyOf": [{"const": 1}, {"const": 2}]}]})
            ),
            "type T = {\n  a?: string;\n} & (1 | 2);\n"
        );
        assert_eq!(
            ts(json!({"type": "string", "anyOf": [{"const": "a"}, {"const": "b"}], "nullable": true})),
            "type T = string & (\"a\" | \"b\") | null;\n"
        );
        assert_eq!(ts(json!({"anyOf": []})), "type T = never;\n");
        assert_eq!(ts(json!({"allOf": [{"type": "string"}]})), "type T = string;\n");
    }

    #[test]
    fn refs_become_aliases() {
        let t = ts(json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/Item"}, "b": {"$ref": "#/definitions/Item"}, "c": {"$ref": "#/$defs/Item"}},
            "additionalProperties": false,
            "$defs": {"Item": {"type": "string"}},
            "definitions": {"Item": {"type": "number"}}
        }));
        assert_eq!(t, "type T = {\n  a?: T_Item;\n  b?: T_Item_2;\n  c?: T_Item;\n};\ntype T_Item = string;\ntype T_Item_2 = number;\n");
        // Remote and dangling references are unknown; a non-string $ref too.
        assert_eq!(ts(json!({"$ref": "https://example.com/s.json"})), "type T = unknown;\n");
        assert_eq!(ts(json!({"$ref": "#/$defs/none"})), "type T = unknown;\n");
        assert_eq!(ts(json!({"$ref": 5})), "type T = unknown;\n");
        // Pointer escapes and percent-encoding.
        assert_eq!(
            ts(json!({"$ref": "#/$defs/a~1b%20c", "$defs": {"a/b c": {"type": "boolean"}}})),
            "type T = T_a_b_c;\ntype T_a_b_c = boolean;\n"
        );
    }

    #[test]
    fn recursive_refs_are_cycle_safe() {
        // Recursion through an object or array stays named.
        let t = ts(json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "additionalProperties": false, "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}, "up": {"$ref": "#"}}}}
        }));
        assert_eq!(t, "type T = T_Node;\ntype T_Node = {\n  kids?: T_Node[];\n  up?: T;\n};\n");
        // Direct cycles (which TypeScript rejects) are cut.
        let t = ts(
            json!({"$ref": "#/$defs/A", "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "string"}]}, "B": {"$ref": "#/$defs/A"}}}),
        );
        assert_eq!(t, "type T = T_A;\ntype T_A = T_B | string;\ntype T_B = unknown;\n");
        assert_eq!(ts(json!({"$ref": "#"})), "type T = unknown;\n");
        assert_eq!(ts(json!({"allOf": [{"$ref": "#"}]})), "type T = unknown;\n");
    }

    #[test]
    fn depth_bomb_is_unknown() {
        // serde_json parses at most 128 levels: a schema from the wire is no deeper.
        let mut s = json!({"type": "string"});
        for i in 0..120 {
            s = match i % 4 {
                0 => json!({"type": "array", "items": s}),
                1 => json!({"type": "object", "properties": {"p": s}, "additionalProperties": false}),
                2 => json!({"anyOf": [s, {"type": "null"}]}),
                _ => json!({"allOf": [s]}),
            };
        }
        let t = ts(s);
        assert!(t.contains("unknown") && !t.contains("string"), "{t}");
        assert!(t.len() < 10_000);
    }

    #[test]
    fn schema_budget_is_enforced() {
        let mut names = Names::new(&[]);
        let big = json!({"const": "x".repeat(1000)});
        assert_eq!(schema_types(&big, "T", &mut names, 500, ""), Err(Full));
        assert!(schema_types(&big, "U", &mut names, 2000, "").is_ok());
    }
}
