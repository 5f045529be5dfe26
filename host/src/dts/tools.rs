//! The declarations of each tool: a bound tool's input and output types and
//! its `declare function` (or a comment saying why no global is declared),
//! and the `RegisteredTools` namespace of script-registered tools.

use std::collections::HashSet;

use serde_json::Value;

use super::api::{is_late_global, ToolTypes};
use super::escape::{cut, push_comment_text, push_doc};
use super::names::{ident_base, is_ts_identifier, push_prop_name, Names, ES_GLOBALS};
use super::schema::{inferred_kind, schema_types};
use super::{Full, ToolSignature, HIDDEN_GLOBAL_PREFIX};
use crate::call::REGISTERED_PREFIX;

/// The declarations of one bound tool: types, then the function (or a comment
/// saying why no global is declared).
pub(super) fn tool_block(
    t: &ToolSignature,
    base: &str,
    names: &mut Names,
    declared: &mut HashSet<String>,
    budget: usize,
) -> Result<(String, ToolTypes), Full> {
    let (input, output) = names.claim_pair(base);
    let mut text = String::new();
    let global = t.global.as_deref().filter(|g| !g.starts_with(HIDDEN_GLOBAL_PREFIX));
    let why_not = match global {
        None => Some("is not bound to a global"),
        Some(g) if !is_ts_identifier(g) => {
            Some("has a global that cannot be declared (not an identifier, or a reserved word)")
        }
        Some(g) if is_late_global(g) => Some("has a global that a sandbox function replaces"),
        Some(g) if ES_GLOBALS.contains(&g) => Some("has a global that clashes with a JavaScript built-in"),
        Some(g) if declared.contains(g) => Some("has the global of another tool"),
        Some(_) => None,
    };
    match (why_not, global) {
        (None, Some(g)) => {
            push_doc(&mut text, &t.description, "");
            let optional = accepts_empty_object(&t.input_schema);
            text.push_str(&format!(
                "declare function {g}(input{}: {input}): Promise<{output}>;\n",
                if optional { "?" } else { "" }
            ));
            declared.insert(g.to_string());
        }
        (reason, _) => {
            text.push_str("/* ");
            push_comment_text(&mut text, &cut(&t.name, 200));
            text.push_str(": ");
            text.push_str(reason.unwrap_or("is not declared"));
            text.push_str("; its types follow. */\n");
        }
    }
    if text.len() > budget {
        return Err(Full);
    }
    let room = budget - text.len();
    let types_in = schema_types(&t.input_schema, &input, names, room, "")?;
    text.push_str(&types_in);
    let room = budget.checked_sub(text.len()).ok_or(Full)?;
    match &t.output_schema {
        Some(s) => text.push_str(&schema_types(s, &output, names, room, "")?),
        None => text.push_str(&format!("type {output} = unknown;\n")),
    }
    text.push('\n');
    if text.len() > budget {
        return Err(Full);
    }
    Ok((text, ToolTypes { input, output }))
}

/// The `RegisteredTools` namespace.
pub(super) fn registered_block(registered: &[ToolSignature], budget: usize) -> Result<String, Full> {
    let mut names = Names::new(&["Handlers"]);
    let mut text = format!(
        "/**\n * Tools registered by scripts with registerTool. The model calls them as `{REGISTERED_PREFIX}<name>`; scripts\n \
         * call their own handlers, so they are types only: `Handlers[name]` is the shape of a handler.\n */\n\
         declare namespace RegisteredTools {{\n",
    );
    let mut handlers = String::from("interface Handlers {\n");
    let mut seen = HashSet::new();
    for t in registered {
        let name = t.name.strip_prefix(REGISTERED_PREFIX).unwrap_or(&t.name);
        if !seen.insert(name) {
            continue;
        }
        let (input, output) = names.claim_pair(&ident_base(name));
        let room = budget.checked_sub(text.len() + handlers.len()).ok_or(Full)?;
        text.push_str(&schema_types(&t.input_schema, &input, &mut names, room, "")?);
        let ret = match &t.output_schema {
            Some(s) => {
                let room = budget.checked_sub(text.len() + handlers.len()).ok_or(Full)?;
                text.push_str(&schema_types(s, &output, &mut names, room, "")?);
                format!("{output} | Promise<{output}>")
            }
            None => "unknown".into(),
        };
        let mut doc = format!("{REGISTERED_PREFIX}{name}");
        if !t.description.is_empty() {
            doc.push_str(": ");
            doc.push_str(&t.description);
        }
        push_doc(&mut handlers, &doc, "  ");
        handlers.push_str("  ");
        push_prop_name(&mut handlers, name);
        handlers.push_str(&format!(": (input: {input}) => {ret};\n"));
        if text.len() + handlers.len() > budget {
            return Err(Full);
        }
    }
    handlers.push_str("}\n");
    text.push_str(&handlers);
    text.push_str("}\n");
    if text.len() > budget {
        return Err(Full);
    }
    Ok(text)
}

/// True when `{}` is a valid input (an object schema with nothing required).
fn accepts_empty_object(schema: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        Value::Object(m) => {
            let object = match m.get("type") {
                Some(Value::String(t)) => t == "object",
                None => inferred_kind(m) != Some("array"),
                _ => false,
            };
            let required = m.get("required").and_then(Value::as_array).is_some_and(|r| !r.is_empty());
            let composite =
                ["$ref", "const", "enum", "anyOf", "oneOf", "allOf", "not"].iter().any(|k| m.contains_key(*k));
            object && !required && !composite
        }
        _ => false,
    }
}
