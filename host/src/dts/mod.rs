//! TypeScript declarations (`.d.ts`) of the sandbox globals, for `wrepl types`.
//!
//! [`declarations`] writes one declaration file: the fixed sandbox API of the
//! guest prelude (`guest-js/src/prelude/`: `sh`, `cat`, `console`, timers,
//! `registerTool`, ...), one `declare function` per tool bound to a global,
//! with input and output types generated from the tools' JSON Schemas, and the
//! input types of script-registered tools in the `RegisteredTools` namespace.
//!
//! Schemas come from MCP servers and scripts, so they are hostile input: the
//! mapping never panics, stops at [`MAX_SCHEMA_DEPTH`] (deeper schemas become
//! `unknown`), collapses enums longer than [`MAX_ENUM_MEMBERS`], sanitizes every
//! name it turns into an identifier, escapes every string it writes into a
//! literal or a comment, breaks reference cycles that TypeScript would reject,
//! and keeps the whole file within [`MAX_OUTPUT_BYTES`] (a comment at the end
//! then says which tools were left out).
//!
//! The sandbox has no DOM: check the file with `tsc --lib es2023` (the
//! declarations of `console`, the timers, `atob` and `btoa` would clash with
//! the DOM library's).
//!
//! The parts: `schema` turns one JSON Schema into TypeScript types, `names`
//! makes identifiers and knows the reserved ones, `escape` writes string
//! literals and comments, `api` is the fixed sandbox API and `tools` the
//! declarations of each bound and registered tool; this module puts them
//! together into one bounded file.

mod api;
mod escape;
mod names;
mod schema;
mod tools;

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::call::REGISTERED_PREFIX;
use crate::pipeline::dispatcher::Dispatcher;
use crate::runtime::RegisteredTool;
use crate::tools::chdir::CHDIR;
use crate::tools::Tool;

use api::{fixed_api, ToolTypes, HEADER, RESERVED_TYPE_NAMES};
use escape::{cut, push_comment_text};
pub use names::is_ts_identifier;
use names::{ident_base, Names};
use tools::{registered_block, tool_block};

/// Schemas nested deeper than this are declared `unknown`.
pub const MAX_SCHEMA_DEPTH: usize = 32;
/// Upper bound of the whole declaration file, in bytes.
pub const MAX_OUTPUT_BYTES: usize = 4 << 20;
/// Enums with more members are declared by the kinds of their values
/// (`string | number`) instead of one literal per member.
pub const MAX_ENUM_MEMBERS: usize = 1024;
/// Room kept for the fixed API and the closing comment.
const RESERVE_BYTES: usize = 64 << 10;
/// Prefix of the globals the prelude wires without defining them.
const HIDDEN_GLOBAL_PREFIX: &str = "__wrepl_";

/// The output budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Full;

/// What the declarations need to know about one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSignature {
    /// Wire name (`Read`, `mcp__srv__tool`; for registered tools the name
    /// given to `registerTool`, with or without [`REGISTERED_PREFIX`]).
    pub name: String,
    /// The JavaScript global the tool is bound to, as `Dispatcher::bindings()`
    /// gives it; `None` when the tool is not bound. A global starting with
    /// `__wrepl_` is wired (its shorthand, e.g. `chdir`, exists) but not defined.
    pub global: Option<String>,
    /// Description for the model (becomes the JSDoc).
    pub description: String,
    /// JSON Schema of the input.
    pub input_schema: Value,
    /// JSON Schema of the output value, if declared (`unknown` otherwise).
    pub output_schema: Option<Value>,
}

impl ToolSignature {
    /// The signature of `tool`, bound to `global`.
    pub fn of_tool(tool: &dyn Tool, global: Option<String>) -> Self {
        Self {
            name: tool.name().to_string(),
            global,
            description: tool.description().to_string(),
            input_schema: tool.input_schema(),
            output_schema: tool.output_schema(),
        }
    }
}

impl From<&RegisteredTool> for ToolSignature {
    fn from(t: &RegisteredTool) -> Self {
        Self {
            name: t.name.clone(),
            global: None,
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            output_schema: None,
        }
    }
}

/// The signatures of a dispatcher's tools with the globals its
/// [`Dispatcher::bindings`] give them, including the built-in `chdir`.
pub fn dispatcher_signatures(dispatcher: &Dispatcher) -> Vec<ToolSignature> {
    let globals: HashMap<String, String> = dispatcher.bindings().into_iter().map(|b| (b.name, b.global)).collect();
    let mut out: Vec<ToolSignature> =
        dispatcher.tools().map(|t| ToolSignature::of_tool(t.as_ref(), globals.get(t.name()).cloned())).collect();
    // Sorted by name, with the built-in `chdir` (wired as a shorthand) last.
    out.sort_by(|a, b| (a.name == CHDIR, &a.name).cmp(&(b.name == CHDIR, &b.name)));
    out
}

/// One `.d.ts` text declaring the sandbox globals for `tools` (bound tools)
/// and `registered` (script-registered tools).
///
/// Bound tools get `declare function <global>(input: <Name>Input):
/// Promise<<Name>Output>;`; shorthands (`sh`, `cat`, `rg`, ...) are declared
/// only when their tool is wired, as in the prelude. Registered tools are not
/// globals (scripts call their own handlers), so they are declared as types:
/// `RegisteredTools.<Name>Input` and the handler shapes in
/// `RegisteredTools.Handlers` (keyed by the registered name; the model calls
/// them as [`REGISTERED_PREFIX`] and the name).
pub fn declarations(tools: &[ToolSignature], registered: &[ToolSignature]) -> String {
    let mut names = Names::new(RESERVED_TYPE_NAMES);
    let mut left_out: Vec<String> = Vec::new();
    let mut used = 0usize;
    let budget = MAX_OUTPUT_BYTES - RESERVE_BYTES;

    // Which globals the tool loop of the prelude defines, in order.
    let tool_globals: HashSet<&str> =
        tools.iter().filter_map(|t| t.global.as_deref()).filter(|g| !g.starts_with(HIDDEN_GLOBAL_PREFIX)).collect();
    let wired: HashSet<&str> = tools.iter().filter(|t| t.global.is_some()).map(|t| t.name.as_str()).collect();

    let mut blocks = String::new();
    let mut declared_globals: HashSet<String> = HashSet::new();
    let mut seen_tools: HashSet<&str> = HashSet::new();
    let mut emitted: HashMap<&str, ToolTypes> = HashMap::new();
    for (i, t) in tools.iter().enumerate() {
        if !seen_tools.insert(t.name.as_str()) {
            blocks.push_str("/* ");
            push_comment_text(&mut blocks, &t.name);
            blocks.push_str(": listed twice; the first one is declared. */\n\n");
            continue;
        }
        let shown = t.global.as_deref().filter(|g| is_ts_identifier(g) && !g.starts_with(HIDDEN_GLOBAL_PREFIX));
        let base = ident_base(shown.unwrap_or(&t.name));
        // After a `Full` nothing more is written, so `names` need not be rolled back.
        match tool_block(t, &base, &mut names, &mut declared_globals, budget.saturating_sub(used)) {
            Ok((text, types)) => {
                used += text.len();
                blocks.push_str(&text);
                emitted.insert(t.name.as_str(), types);
            }
            Err(Full) => {
                left_out.extend(tools[i..].iter().map(|t| t.name.clone()));
                break;
            }
        }
    }

    let mut reg = String::new();
    if left_out.is_empty() {
        match registered_block(registered, budget.saturating_sub(used)) {
            Ok(text) => reg = text,
            Err(Full) => left_out.extend(registered.iter().map(|t| format!("{REGISTERED_PREFIX}{}", t.name))),
        }
    } else {
        left_out.extend(registered.iter().map(|t| format!("{REGISTERED_PREFIX}{}", t.name)));
    }

    let mut out = String::with_capacity(blocks.len() + reg.len() + (16 << 10));
    out.push_str(HEADER);
    fixed_api(&mut out, &wired, &tool_globals, &emitted);
    out.push_str(&blocks);
    out.push_str(&reg);
    if !left_out.is_empty() {
        out.push_str("/* wrepl: this file reached its size limit (");
        out.push_str(&(MAX_OUTPUT_BYTES >> 20).to_string());
        out.push_str(" MiB); left out: ");
        for (k, n) in left_out.iter().take(50).enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            push_comment_text(&mut out, &cut(n, 120));
        }
        if left_out.len() > 50 {
            out.push_str(&format!(" and {} more", left_out.len() - 50));
        }
        out.push_str(". */\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sig(name: &str, global: Option<&str>, input: Value) -> ToolSignature {
        ToolSignature {
            name: name.into(),
            global: global.map(str::to_string),
            description: format!("The {name} tool."),
            input_schema: input,
            output_schema: None,
        }
    }

    #[test]
    fn tools_and_shorthands() {
        let tools = vec![
            sig(
                "Bash",
                Some("Bash"),
                json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
            ),
            sig("Read", None, json!({"type": "object"})),
            sig("chdir", Some("__wrepl_chdir"), json!({"type": "object"})),
            sig("mcp__s__a-b", Some("mcp__s__a_b"), json!({"type": "object"})),
        ];
        let d = declarations(&tools, &[]);
        assert!(d.contains("/** The Bash tool. */\ndeclare function Bash(input: BashInput): Promise<BashOutput>;\n"));
        assert!(d.contains("type BashOutput = unknown;"));
        assert!(d.contains(
            "declare function sh(command: string, options?: Omit<BashInput, \"command\">): Promise<string>;"
        ));
        assert!(d.contains("interface ShellError extends Error"));
        // Read is not bound: no global, no `cat`; its types are still there.
        assert!(!d.contains("declare function Read(") && !d.contains("declare function cat("));
        assert!(d.contains("/* Read: is not bound to a global; its types follow. */\ntype ReadInput"));
        // chdir is wired without a global.
        assert!(d.contains("declare function chdir(dir: string): Promise<string>;"));
        assert!(!d.contains("declare function __wrepl_chdir"));
        assert!(d.contains("declare function mcp__s__a_b(input?: mcp__s__a_bInput): Promise<mcp__s__a_bOutput>;"));
        for absent in
            ["declare function rg(", "declare function gl(", "declare function put(", "declare function haiku("]
        {
            assert!(!d.contains(absent), "{absent}");
        }
        let none = declarations(&[], &[]);
        assert!(!none.contains("declare function sh(") && !none.contains("ShellError"));
        assert!(none.contains("declare function registerTool(") && none.contains("declare var console: WreplConsole;"));
        assert!(none.contains("declare namespace RegisteredTools {\ninterface Handlers {\n}\n}\n"));
    }

    #[test]
    fn global_clashes_follow_the_prelude() {
        let tools = vec![
            sig("console", Some("console"), json!({})), // a tool replaces an early global
            sig("sh", Some("sh"), json!({})),           // a late global replaces the tool
            sig("JSON", Some("JSON"), json!({})),       // JavaScript built-in
            sig("delete", Some("delete"), json!({})),   // reserved word
            sig("x", Some("same"), json!({})),
            sig("y", Some("same"), json!({})),
            sig("x", Some("x"), json!({})),
        ];
        let d = declarations(&tools, &[]);
        assert!(d.contains("declare function console(input?: consoleInput)"));
        assert!(!d.contains("declare var console"));
        assert!(
            !d.contains("declare function sh(input")
                && d.contains("/* sh: has a global that a sandbox function replaces")
        );
        assert!(!d.contains("declare function JSON(") && !d.contains("declare function delete("));
        assert_eq!(d.matches("declare function same(").count(), 1);
        assert!(d.contains("/* y: has the global of another tool"));
        assert!(d.contains("/* x: listed twice; the first one is declared. */"));
    }

    #[test]
    fn registered_tools_are_types() {
        let reg = vec![
            ToolSignature {
                output_schema: Some(json!({"type": "number"})),
                ..sig(
                    "eval_registered__my-tool",
                    None,
                    json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}),
                )
            },
            sig("plain", None, json!({"type": "object"})),
        ];
        let d = declarations(&[], &reg);
        assert!(d.contains(
            "type my_toolInput = {\n  n: number;\n  [key: string]: unknown;\n};\ntype my_toolOutput = number;\n"
        ));
        assert!(d.contains("  /** eval_registered__my-tool: The eval_registered__my-tool tool. */\n  \"my-tool\": (input: my_toolInput) => my_toolOutput | Promise<my_toolOutput>;\n"));
        assert!(d.contains("  plain: (input: plainInput) => unknown;\n"));
    }

    #[test]
    fn output_is_bounded() {
        // 64 tools of about 150 KiB each: more than the limit.
        let big: Vec<Value> = (0..1000).map(|i| json!(format!("{i}-{}", "z".repeat(150)))).collect();
        let tools: Vec<ToolSignature> =
            (0..64).map(|i| sig(&format!("t{i}"), Some(&format!("t{i}")), json!({"enum": big}))).collect();
        let d = declarations(&tools, &[sig("r", None, json!({}))]);
        assert!(d.len() <= MAX_OUTPUT_BYTES, "{}", d.len());
        assert!(d.len() > MAX_OUTPUT_BYTES / 2);
        let tail = &d[d.len() - 400..];
        assert!(tail.contains("reached its size limit (4 MiB); left out: t"), "{tail}");
        assert!(tail.contains("t63, eval_registered__r. */\n"), "{tail}");
        // Every declared tool is complete: its types are there.
        for i in 0..64 {
            if d.contains(&format!("declare function t{i}(")) {
                assert!(d.contains(&format!("type t{i}Output = unknown;")));
            }
        }
        // One giant schema is left out alone.
        let huge = sig("huge", Some("huge"), json!({"const": "q".repeat(MAX_OUTPUT_BYTES)}));
        let d = declarations(&[huge, sig("after", Some("after"), json!({}))], &[]);
        assert!(!d.contains("declare function huge(") && d.len() < 64 << 10);
        assert!(d.contains("left out: huge, after. */"));
    }

    #[test]
    fn never_panics_on_odd_json() {
        let odd = [
            json!(null),
            json!([1, 2]),
            json!({"type": "object", "properties": 5, "required": "a"}),
            json!({"type": "array", "items": 5, "prefixItems": "x", "minItems": -1}),
            json!({"anyOf": {"a": 1}, "allOf": null, "oneOf": [5, null, "x"]}),
            json!({"$ref": "#/$defs/a/b/c/9999"}),
            json!({"$ref": "#%ZZ%"}),
            json!({"$ref": "#/properties/x", "properties": {"x": {"$ref": "#/properties/x"}}}),
            json!({"additionalProperties": 3, "patternProperties": []}),
        ];
        for s in odd {
            let d = declarations(&[ToolSignature { output_schema: Some(s.clone()), ..sig("t", Some("t"), s) }], &[]);
            assert!(d.contains("declare function t("));
        }
    }
}
