//! TypeScript declarations (`.d.ts`) of the sandbox globals, for `wrepl types`.
//!
//! [`declarations`] writes one declaration file: the fixed sandbox API of the
//! guest prelude (`guest-js/src/prelude.js`: `sh`, `cat`, `console`, timers,
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

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

use crate::pipeline::dispatcher::Dispatcher;
use crate::repl::REGISTERED_PREFIX;
use crate::runtime::RegisteredTool;
use crate::tools::chdir::CHDIR;
use crate::tools::Tool;

/// Schemas nested deeper than this are declared `unknown`.
pub const MAX_SCHEMA_DEPTH: usize = 32;
/// Upper bound of the whole declaration file, in bytes.
pub const MAX_OUTPUT_BYTES: usize = 4 << 20;
/// Enums with more members are declared by the kinds of their values
/// (`string | number`) instead of one literal per member.
pub const MAX_ENUM_MEMBERS: usize = 1024;
/// Descriptions are cut to this many bytes in comments.
const MAX_DOC_BYTES: usize = 8 << 10;
/// Generated identifiers are cut to this many characters (before a `_N`
/// suffix that keeps them unique).
const MAX_NAME_CHARS: usize = 96;
/// Room kept for the fixed API and the closing comment.
const RESERVE_BYTES: usize = 64 << 10;
/// Prefix of the globals the prelude wires without defining them.
const HIDDEN_GLOBAL_PREFIX: &str = "__wrepl_";

/// What the declarations need to know about one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSignature {
    /// Wire name (`Read`, `mcp__srv__tool`; for registered tools the name
    /// given to `registerTool`, with or without the `eval_registered__` prefix).
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
/// them as `eval_registered__<name>`).
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

// ---- the fixed API ----------------------------------------------------------

const HEADER: &str = "\
/*
 * wrepl sandbox globals (generated by `wrepl types`).
 * Scripts run in QuickJS with top-level await, no modules and no DOM: check with `tsc --lib es2023`.
 */

";

/// Type names the fixed API uses; generated names avoid them.
const RESERVED_TYPE_NAMES: &[&str] = &[
    "SandboxError",
    "UnawaitedPromiseError",
    "ShellError",
    "ToolError",
    "WreplConsole",
    "RegisteredTools",
    "RegisteredToolInfo",
    "RegisterToolOptions",
    "JsonSchema",
];

/// Globals the prelude defines before the tool globals (a tool of the same
/// global replaces them).
const EARLY_GLOBALS: &[&str] = &[
    "SandboxError",
    "UnawaitedPromiseError",
    "require",
    "str",
    "console",
    "setTimeout",
    "setInterval",
    "clearTimeout",
    "clearInterval",
    "queueMicrotask",
    "btoa",
    "atob",
];

/// Globals the prelude defines after the tool globals (they replace a tool of
/// the same global).
const LATE_GLOBALS: &[&str] = &[
    "shQuote",
    "sh",
    "cat",
    "rg",
    "rgf",
    "gl",
    "put",
    "haiku",
    "sonnet",
    "opus",
    "fable",
    "chdir",
    "registerTool",
    "unregisterTool",
    "listTools",
    "getTool",
    "repoHint",
    "o",
];

/// Value globals of the ECMAScript library: a tool global with one of these
/// names cannot be declared next to the library's declaration.
const ES_GLOBALS: &[&str] = &[
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

/// The generated type names of one emitted tool.
#[derive(Debug, Clone)]
struct ToolTypes {
    input: String,
    output: String,
}

/// The options type of a shorthand: the tool's input without the fields the
/// shorthand sets itself, or any object when the tool's types are missing.
fn options_type(emitted: &HashMap<&str, ToolTypes>, tool: &str, omit: &str) -> String {
    match emitted.get(tool) {
        Some(t) => format!("Omit<{}, {omit}>", t.input),
        None => "{ [key: string]: unknown }".into(),
    }
}

fn fixed_api(
    out: &mut String,
    wired: &HashSet<&str>,
    tool_globals: &HashSet<&str>,
    emitted: &HashMap<&str, ToolTypes>,
) {
    // An early global is replaced by a tool of the same global.
    let early = |name: &str| !(EARLY_GLOBALS.contains(&name) && tool_globals.contains(name));
    if early("SandboxError") {
        out.push_str(
            "/** Thrown by the sandbox itself (e.g. `require`, which is not available). */\n\
             declare class SandboxError extends Error {\n  constructor(message?: string);\n}\n",
        );
    }
    if early("UnawaitedPromiseError") {
        out.push_str(
            "/** Thrown when a Promise is used as a string or number: it was not awaited. */\n\
             declare class UnawaitedPromiseError extends TypeError {\n  constructor(hint?: string);\n}\n",
        );
    }
    out.push_str(
        "/** How a failed tool call rejects: `kind` is e.g. \"invalid-input\", \"not-found\", \"timeout\", \"denied\". */\n\
         interface ToolError extends Error {\n  name: \"ToolError\";\n  /** The tool's wire name. */\n  tool: string;\n  kind: string;\n}\n",
    );
    if early("require") {
        out.push_str("/** Always throws SandboxError: the sandbox has no modules. */\ndeclare function require(...args: unknown[]): never;\n");
    }
    if early("str") {
        out.push_str("/** Render any value as text (JSON for data, bounded depth and size; cycles marked). */\ndeclare function str(value: unknown): string;\n");
    }
    if early("console") {
        out.push_str(
            "/** Output goes to the evaluation's stdout (log, info, debug, dir, table, count) or stderr (warn, error, trace, assert). */\n\
             interface WreplConsole {\n  log(...data: unknown[]): void;\n  info(...data: unknown[]): void;\n  debug(...data: unknown[]): void;\n  \
             trace(...data: unknown[]): void;\n  warn(...data: unknown[]): void;\n  error(...data: unknown[]): void;\n  dir(value?: unknown): void;\n  \
             table(value?: unknown): void;\n  assert(condition?: unknown, ...data: unknown[]): void;\n  count(label?: string): void;\n}\n\
             declare var console: WreplConsole;\n",
        );
    }
    let timers: [(&str, &str); 5] = [
        (
            "setTimeout",
            "/** Run `callback` once after `ms` milliseconds (at most 10000 timers; all are cleared when the evaluation ends). */\n\
             declare function setTimeout<A extends unknown[]>(callback: (...args: A) => void, ms?: number, ...args: A): number;\n",
        ),
        (
            "setInterval",
            "/** Run `callback` every `ms` milliseconds until cleared or the evaluation ends. */\n\
             declare function setInterval<A extends unknown[]>(callback: (...args: A) => void, ms?: number, ...args: A): number;\n",
        ),
        ("clearTimeout", "declare function clearTimeout(id?: number): void;\n"),
        ("clearInterval", "declare function clearInterval(id?: number): void;\n"),
        ("queueMicrotask", "declare function queueMicrotask(callback: () => void): void;\n"),
    ];
    for (name, text) in timers {
        if early(name) {
            out.push_str(text);
        }
    }
    if early("btoa") {
        out.push_str("/** Base64 of a Latin-1 string. */\ndeclare function btoa(data: string): string;\n");
    }
    if early("atob") {
        out.push_str("/** Decode base64 to a Latin-1 string. */\ndeclare function atob(data: string): string;\n");
    }
    out.push_str(
        "/** Quote a value for a POSIX shell command line (single quotes). */\n\
         declare function shQuote(s: string | number | bigint | boolean): string;\n",
    );
    if wired.contains("Bash") {
        out.push_str(
            "/** How `sh` rejects when the command exits non-zero or is killed. */\n\
             interface ShellError extends Error {\n  name: \"ShellError\";\n  exitCode: number | null;\n  signal: number | null | undefined;\n  \
             stdout: string;\n  stderr: string;\n}\n",
        );
        out.push_str(&format!(
            "/** Run a shell command (Bash tool); resolves to its stdout, rejects with a ShellError on a non-zero exit. */\n\
             declare function sh(command: string, options?: {}): Promise<string>;\n",
            options_type(emitted, "Bash", "\"command\"")
        ));
    }
    if wired.contains("Read") {
        out.push_str(&format!(
            "/**\n * Read a file (Read tool); resolves to its text, with line numbers (cat -n style).\n \
             * For an image or a PDF it resolves to the Read result object instead.\n */\n\
             declare function cat(path: string, options?: {}): Promise<string>;\n",
            options_type(emitted, "Read", "\"file_path\"")
        ));
    }
    if wired.contains("Grep") {
        out.push_str(&format!(
            "/** Search file contents (Grep tool, content mode with line numbers); resolves to the matching lines. */\n\
             declare function rg(pattern: string, options?: {}): Promise<string>;\n\
             /** Search file contents (Grep tool); resolves to the paths of the files that match. */\n\
             declare function rgf(pattern: string, options?: {}): Promise<string[]>;\n",
            options_type(emitted, "Grep", "\"pattern\" | \"output_mode\""),
            options_type(emitted, "Grep", "\"pattern\" | \"output_mode\"")
        ));
    }
    if wired.contains("Glob") {
        out.push_str(&format!(
            "/** Find files by glob pattern (Glob tool); resolves to their paths, most recently modified first. */\n\
             declare function gl(pattern: string, options?: {}): Promise<string[]>;\n",
            options_type(emitted, "Glob", "\"pattern\"")
        ));
    }
    if wired.contains("Write") {
        let output = emitted.get("Write").map_or("unknown", |t| t.output.as_str());
        out.push_str(&format!(
            "/** Write a file (Write tool); a value that is not a string is written as `str(value)`. */\n\
             declare function put(path: string, text: unknown): Promise<{output}>;\n"
        ));
    }
    if wired.contains("Sample") {
        for name in ["haiku", "sonnet", "opus", "fable"] {
            out.push_str(&format!(
                "/** Ask a language model (Sample tool; the client picks the model); resolves to its reply. A prompt that is not a string is sent as `str(prompt)`. */\n\
                 declare function {name}(prompt: unknown, schema?: null): Promise<string>;\n\
                 /** With a JSON Schema the reply must be JSON matching it, and resolves parsed. */\n\
                 declare function {name}(prompt: unknown, schema: JsonSchema): Promise<unknown>;\n"
            ));
        }
    }
    if wired.contains(CHDIR) {
        out.push_str(
            "/** Change the working directory for the rest of this evaluation; resolves to the new absolute path. */\n\
             declare function chdir(dir: string): Promise<string>;\n",
        );
    }
    out.push_str(
        "/** A JSON Schema object. */\n\
         type JsonSchema = { [keyword: string]: unknown };\n\
         interface RegisterToolOptions {\n  /** Name shown to people instead of the tool name. */\n  displayName?: string;\n}\n\
         /** A tool registered by this session's scripts. */\n\
         interface RegisteredToolInfo {\n  name: string;\n  /** The name the model calls: `eval_registered__<name>`. */\n  wireName: string;\n  \
         description: string;\n  inputSchema: unknown;\n  displayName: string;\n}\n\
         /**\n * Offer `handler` to the model as the tool `eval_registered__<name>` (`name` matches ^[a-zA-Z0-9_-]{1,111}$ and\n \
         * is not a built-in global). The handler receives the validated input. Returns the wire name.\n */\n\
         declare function registerTool(name: string, description: string, schema: JsonSchema, handler: (input: any) => unknown, \
         options?: RegisterToolOptions): string;\n\
         /** Remove a registered tool; true when it was registered here. */\n\
         declare function unregisterTool(name: string): boolean;\n\
         declare function listTools(): RegisteredToolInfo[];\n\
         declare function getTool(name: string): RegisteredToolInfo | undefined;\n\
         /** Defined only when the session has a repository hint: test with `typeof repoHint === \"string\"`. */\n\
         declare var repoHint: string | undefined;\n\
         /** A fresh object per evaluation: when the last expression is undefined, `o` is the result. */\n\
         declare var o: { [key: string]: unknown };\n\n",
    );
}

// ---- tools --------------------------------------------------------------------

/// The declarations of one bound tool: types, then the function (or a comment
/// saying why no global is declared).
fn tool_block(
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
        Some(g) if LATE_GLOBALS.contains(&g) => Some("has a global that a sandbox function replaces"),
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
fn registered_block(registered: &[ToolSignature], budget: usize) -> Result<String, Full> {
    let mut names = Names::new(&["Handlers"]);
    let mut text = String::from(
        "/**\n * Tools registered by scripts with registerTool. The model calls them as `eval_registered__<name>`; scripts\n \
         * call their own handlers, so they are types only: `Handlers[name]` is the shape of a handler.\n */\n\
         declare namespace RegisteredTools {\n",
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

// ---- schema → TypeScript ----------------------------------------------------

/// The output budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Full;

/// Top-level shape of a written type, by binding strength: a weaker form is
/// parenthesized where a stronger one is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Form {
    Union,
    Intersection,
    Atom,
}

/// Unique identifiers.
#[derive(Debug, Clone)]
struct Names {
    used: HashSet<String>,
}

impl Names {
    fn new(reserved: &[&str]) -> Self {
        Self { used: reserved.iter().map(|s| s.to_string()).collect() }
    }

    /// `base` (already an identifier) or `base_N`, unused so far.
    fn claim(&mut self, base: &str) -> String {
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
    fn claim_pair(&mut self, base: &str) -> (String, String) {
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
fn schema_types(
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
fn inferred_kind(m: &Map<String, Value>) -> Option<&'static str> {
    if ["properties", "additionalProperties", "patternProperties", "required"].iter().any(|k| m.contains_key(*k)) {
        Some("object")
    } else if m.contains_key("items") || m.contains_key("prefixItems") {
        Some("array")
    } else {
        None
    }
}

// ---- names, literals, comments ------------------------------------------------

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
fn ident_base(s: &str) -> String {
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
fn push_prop_name(out: &mut String, name: &str) {
    if is_ascii_identifier(name) {
        out.push_str(name);
    } else {
        push_string_literal(out, name);
    }
}

/// A double-quoted TypeScript string literal.
fn push_string_literal(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `s` cut to at most `max` bytes (on a character boundary), marked with `…`.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Text safe inside a block comment on one line: no `*/`, no line breaks,
/// no control characters.
fn push_comment_text(out: &mut String, s: &str) {
    let mut prev_star = out.ends_with('*');
    for c in s.chars() {
        let c = if c.is_control() || c == '\u{2028}' || c == '\u{2029}' { ' ' } else { c };
        if c == '/' && prev_star {
            out.push('\\');
        }
        out.push(c);
        prev_star = c == '*';
    }
    if prev_star {
        out.push(' ');
    }
}

/// A JSDoc comment, one ` * ` line per line of `text`; nothing for empty text.
fn push_doc(out: &mut String, text: &str, pad: &str) {
    let text = cut(text.trim(), MAX_DOC_BYTES);
    if text.is_empty() {
        return;
    }
    let lines: Vec<&str> = text.split(['\n', '\r', '\u{2028}', '\u{2029}']).collect();
    if lines.len() == 1 {
        out.push_str(pad);
        out.push_str("/** ");
        push_comment_text(out, lines[0]);
        out.push_str(" */\n");
        return;
    }
    out.push_str(pad);
    out.push_str("/**\n");
    for line in lines {
        out.push_str(pad);
        out.push_str(" * ");
        push_comment_text(out, line.trim_end());
        out.push('\n');
    }
    out.push_str(pad);
    out.push_str(" */\n");
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The type declarations of one schema, named `T`.
    fn ts(schema: Value) -> String {
        let mut names = Names::new(&[]);
        schema_types(&schema, "T", &mut names, MAX_OUTPUT_BYTES, "").unwrap()
    }

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

    #[test]
    fn comments_cannot_be_closed_early() {
        let mut out = String::new();
        push_doc(&mut out, "a */ b **/ c\u{2028}d\r\ne*", "");
        assert_eq!(out, "/**\n * a *\\/ b **\\/ c\n * d\n * \n * e* \n */\n");
        let mut out = String::new();
        push_doc(&mut out, "  ", "");
        assert_eq!(out, "");
        let long = "y".repeat(MAX_DOC_BYTES * 2);
        let mut out = String::new();
        push_doc(&mut out, &long, "");
        assert!(out.len() < MAX_DOC_BYTES + 32 && out.contains('…'));
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
