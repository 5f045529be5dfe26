//! The tools the server lists and the results it returns: the `repl` tool's
//! schema and description, tool definitions, and the outer result of an
//! evaluation (capped text, media blocks, `structuredContent`).

use super::*;

pub(super) fn to_value(r: &CallToolResult) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

pub(super) fn input_error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![Content::text(message.into())])
}

/// Input schema of the `repl` tool (SPEC §1).
pub(super) fn repl_schema() -> JsonObject {
    let v = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "JavaScript to evaluate in the persistent context (top-level await works; the value of the last expression is the result)."},
            "description": {"type": "string", "description": "What this code does, in a few words (shown to the user)."},
            "timeout": {"type": "number", "description": format!(
                "Script-time budget in milliseconds (default {}, max {}; time spent waiting for tools does not count).",
                crate::budget::DEFAULT_SCRIPT_BUDGET.as_millis(),
                crate::budget::hard_limit_ms()
            )},
            "context": {"type": "string", "description": "The context handle a previous result gave (its `context`), to continue that context; omit it to start a fresh one."},
            "boundary": {"type": "string", "description": "A session boundary id (a conversation segment's, say): the same id continues the context's variables; a new one starts them fresh (an earlier one continues where it was)."},
            "fork": {"type": "string", "description": "Instead of `context`: a context handle to copy. The call runs in a new context that starts with that context's variables and tools; the original is left unchanged."}
        },
        "required": ["code"],
        "additionalProperties": false
    });
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// Most characters of the `repl` tool's description: the tool and rule
/// lists in it are cut to fit, with a count of what was left out.
pub const MAX_REPL_DESCRIPTION: usize = 2000;

/// What the `repl` tool's description says about one connection: its
/// protocol revision, the tools its scripts can call and the rules that
/// allow calls without asking.
#[derive(Debug, Clone, Default)]
pub(super) struct DescriptionFacts {
    /// A client speaking 2026-07-28 (contexts named by handle).
    pub(super) modern: bool,
    /// Whether `repl` is async here (2025-11-25 with `--async`).
    pub(super) async_mode: bool,
    /// The tools' names.
    pub(super) tools: Vec<String>,
    /// The allow rules, as written.
    pub(super) rules: Vec<String>,
}

/// `items` joined with ", " within `room` characters; those left out are
/// counted (`… and 3 more`).
fn listed(items: &[String], room: usize) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        let more = format!(" … and {} more", items.len() - i);
        let sep = if out.is_empty() { "" } else { ", " };
        if out.chars().count() + sep.len() + item.chars().count() + more.len() > room && i + 1 < items.len() {
            out.push_str(&more);
            return out;
        }
        out.push_str(sep);
        out.push_str(item);
    }
    out
}

/// The `repl` tool's description for one connection (at most
/// [`MAX_REPL_DESCRIPTION`] characters).
pub(super) fn repl_description(f: &DescriptionFacts) -> String {
    let mut d =
        String::from("Run JavaScript in a sealed QuickJS sandbox (WebAssembly) that calls many tools in one step. ");
    let tools = if f.tools.is_empty() { "none".to_string() } else { listed(&f.tools, 500) };
    d.push_str(&format!(
        "Tools are async globals, each call passing the permission pipeline: {tools}. Shorthands: sh(cmd), \
         cat(path), rg(pattern, opts), rgf(pattern), gl(glob), put(path, text), chdir(dir); fetch() goes through \
         WebFetch; haiku(prompt, schema?) asks the model; registerTool(name, description, schema, handler) adds a \
         tool ({REGISTERED_PREFIX}<name>). Start independent calls together and await them with Promise.all. No \
         filesystem or network but through the tools. The result is the last expression's value. "
    ));
    let rules =
        if f.rules.is_empty() { String::new() } else { format!("; and by these rules: {}", listed(&f.rules, 600)) };
    d.push_str(&format!(
        "Allowed without asking: reading inside the workspace (Read, Glob, Grep){rules}. Any other call asks the \
         user when the client can be asked, and is refused otherwise. "
    ));
    d.push_str(match (f.modern, f.async_mode) {
        (true, _) => {
            "Each result names its context in a last line `[context: HANDLE]`: pass that HANDLE as `context` to \
             keep your variables (a call without `context` starts a fresh, empty context; `fork` copies one)."
        }
        (false, true) => {
            "Variables persist across calls on this connection. repl queues the evaluation and returns its \
             eval_id; get the result with repl_result."
        }
        (false, false) => "Variables persist across calls on this connection.",
    });
    if d.chars().count() > MAX_REPL_DESCRIPTION {
        d = d.chars().take(MAX_REPL_DESCRIPTION - 1).collect::<String>() + "…";
    }
    d
}

/// The `repl` tool: its input and output schemas and annotations (it runs
/// arbitrary code, so it is neither read-only nor idempotent), described
/// for one connection.
pub(super) fn repl_tool(facts: &DescriptionFacts) -> McpTool {
    let mut t = tool_def(REPL_TOOL, &repl_description(facts), repl_schema());
    if let Value::Object(o) = repl_output_schema() {
        t.output_schema = Some(Arc::new(o));
    }
    t.annotations =
        Some(rmcp::model::ToolAnnotations::new().read_only(false).idempotent(false).destructive(true).open_world(true));
    t
}

/// The `repl` tool of a connection in async mode: a call returns either
/// the queued evaluation's id and status or (a call naming a `context`)
/// the result itself, so its output schema describes both shapes.
pub(super) fn repl_tool_async(facts: &DescriptionFacts) -> McpTool {
    let mut t = repl_tool(facts);
    if let Value::Object(mut o) = repl_output_schema() {
        let result_required = o.remove("required").unwrap_or_else(|| json!([]));
        if let Some(Value::Object(props)) = o.get_mut("properties") {
            props.insert("eval_id".into(), json!({"type": "string", "description": "The queued evaluation's id."}));
            props.insert("status".into(), json!({"type": "string", "enum": ["queued", "running"]}));
            props.insert("position".into(), json!({"type": "integer", "description": "Its place in the queue."}));
        }
        o.insert("anyOf".into(), json!([{"required": ["eval_id", "status"]}, {"required": result_required}]));
        t.output_schema = Some(Arc::new(o));
    }
    t
}

/// A registered tool as listed: its own schema, plus the optional
/// `context` handle of the context that registered it.
pub(super) fn registered_tool(t: &RegisteredTool) -> McpTool {
    let description = match &t.display_name {
        Some(d) => format!("{d}: {}", t.description),
        None => t.description.clone(),
    };
    let mut schema = object_schema(&t.input_schema);
    let props = schema.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(p) = props {
        p.entry("context").or_insert_with(|| {
            json!({"type": "string", "description": "The handle of the context that registered this tool (from its results)."})
        });
    }
    tool_def(&format!("{REGISTERED_PREFIX}{}", t.name), &description, schema)
}

/// The schema of the `repl` tool's `structuredContent`.
pub(super) fn repl_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "context": {"type": "string", "description": "Handle of the context this call ran in."},
            "code": {"type": "string"},
            "result": {"description": "The result value (any JSON), capped like the text: a longer one is replaced by its first characters as a string, and result_truncated says so."},
            "result_truncated": {"type": ["object", "null"], "properties": {"shown": {"type": "integer"}, "total": {"type": "integer"}}},
            "stdout": {"type": "string", "description": "Console output, capped like the text; stdout_truncated says when."},
            "stdout_truncated": {"type": ["object", "null"], "properties": {"shown": {"type": "integer"}, "total": {"type": "integer"}}},
            "stderr": {"type": "string", "description": "Console errors and warnings, capped like the text; stderr_truncated says when."},
            "stderr_truncated": {"type": ["object", "null"], "properties": {"shown": {"type": "integer"}, "total": {"type": "integer"}}},
            "error": {"type": ["object", "null"]},
            "timed_out": {"type": "boolean"},
            "context_reset": {"type": ["string", "null"]},
            "abandoned_calls": {"type": "array", "items": {"type": "string"}},
            "calls": {"type": "array", "items": {"type": "object"}},
            "calls_omitted": {"type": ["object", "null"], "description": "The calls past the records' byte budget, counted by tool and outcome instead of listed."},
            "new_tools": {"type": "array", "items": {"type": "string"}},
            "new_tool_definitions": {"type": "array", "items": {"type": "object"}},
            "script_ms": {"type": "number"},
            "wall_ms": {"type": "number"},
            "cost": {
                "type": "object",
                "description": "What the evaluation cost: guest time (µs), wall time, the guest's peak memory, inner calls by tool, the bytes of their inputs and outcomes, and fuel when metered.",
                "properties": {
                    "guest_cpu_us": {"type": "integer"}, "wall_ms": {"type": "number"},
                    "peak_memory_bytes": {"type": "integer"},
                    "calls": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "bytes_in": {"type": "integer"}, "bytes_out": {"type": "integer"}, "fuel": {"type": "integer"}
                }
            },
            "replay": {"type": ["object", "null"]}
        },
        "required": ["code", "stdout", "stderr", "timed_out", "calls", "script_ms", "wall_ms"]
    })
}

/// `result` for `structuredContent`: as it is when its JSON text fits in
/// `cap` characters; else its first `cap` characters as a string, with
/// (shown, total).
pub(super) fn capped_result(result: &Option<Value>, cap: usize) -> (Value, Option<(usize, usize)>) {
    let Some(v) = result else { return (Value::Null, None) };
    let text = v.to_string();
    match text.char_indices().nth(cap) {
        None => (v.clone(), None),
        Some((cut, _)) => {
            let total = text.chars().count();
            let shown = format!("{}…[truncated: showing {cap} of {total} characters]", &text[..cut]);
            (Value::String(shown), Some((cap, total)))
        }
    }
}

pub(super) fn tool_def(name: &str, description: &str, schema: JsonObject) -> McpTool {
    let v = json!({"name": name, "description": description, "inputSchema": Value::Object(schema)});
    serde_json::from_value(v)
        .unwrap_or_else(|_| McpTool::new(name.to_string(), description.to_string(), JsonObject::new()))
}

pub(super) fn object_schema(v: &Value) -> JsonObject {
    match v {
        Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("object") => m.clone(),
        // MCP needs an object schema; wrap anything else so the listing stays valid.
        Value::Object(m) => {
            let mut o = m.clone();
            o.insert("type".into(), json!("object"));
            o
        }
        _ => match json!({"type": "object"}) {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        },
    }
}

/// A finished evaluation with what the outer result needs besides it.
#[derive(Debug)]
pub struct Settled {
    /// The evaluation.
    pub result: EvalResult,
    /// What resuming the session found, on the first evaluation after it.
    pub restore: Option<RestoreReport>,
    /// Definitions of the tools this evaluation registered.
    pub new_tools: Vec<RegisteredTool>,
}

pub(super) fn new_definitions(repl: &Repl, r: &EvalResult) -> Vec<RegisteredTool> {
    if r.new_tools.is_empty() {
        return Vec::new();
    }
    repl.registered_tools()
        .into_iter()
        .filter(|t| r.new_tools.iter().any(|w| w.strip_prefix(REGISTERED_PREFIX) == Some(t.name.as_str())))
        .collect()
}

/// Inner calls as the `tool_use`/`tool_result` pairs of a transcript.
pub fn transcript(calls: &[CallRecord]) -> Vec<Value> {
    calls
        .iter()
        .flat_map(|c| {
            [
                json!({"type": "tool_use", "id": c.id, "name": c.tool, "input": c.input}),
                json!({"type": "tool_result", "tool_use_id": c.id, "is_error": !c.ok, "content": c.text, "structured": c.output, "duration_ms": c.duration_ms}),
            ]
        })
        .collect()
}

/// Bytes one result carries in all, for a text cap of `text_cap`
/// characters: its text, then, from what is left, the result value, stdout,
/// stderr, the error and the call records, in that order, each also within
/// the text cap. Whatever is cut says so with its true total; the call
/// records past the budget are counted by tool and outcome
/// (`calls_omitted`), never dropped silently.
pub(super) fn response_budget(text_cap: usize) -> usize {
    text_cap.saturating_mul(5).max(320 << 10)
}

/// The call records that fit in `budget` bytes, and a count by tool and
/// outcome of those that do not (`None` when all fit).
fn bounded_transcript(calls: &[CallRecord], budget: usize) -> (Vec<Value>, Option<Value>) {
    let mut kept = Vec::new();
    let mut used = 0usize;
    let mut rest: &[CallRecord] = &[];
    for (i, c) in calls.iter().enumerate() {
        let pair = transcript(std::slice::from_ref(c));
        let bytes: usize = pair.iter().map(|v| v.to_string().len()).sum();
        if used + bytes > budget {
            rest = &calls[i..];
            break;
        }
        used += bytes;
        kept.extend(pair);
    }
    let count = rest.len() as u64;
    let mut omitted: std::collections::BTreeMap<&str, (u64, u64)> = std::collections::BTreeMap::new();
    for c in rest {
        let e = omitted.entry(c.tool.as_str()).or_default();
        if c.ok {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    let summary = (count > 0).then(|| {
        let by_tool: serde_json::Map<String, Value> =
            omitted.into_iter().map(|(t, (ok, failed))| (t.to_string(), json!({"ok": ok, "failed": failed}))).collect();
        json!({"count": count, "shown": calls.len() as u64 - count, "total": calls.len(), "by_tool": by_tool,
               "why": format!("the call records past {budget} bytes are counted here instead of listed")})
    });
    (kept, summary)
}

/// The result value a structured result carries, and its truncation
/// (`shown`, `total`): the value as it is, or, when its JSON is longer than
/// `text_cap` characters, its first characters as a string; a value too big
/// to carry as JSON at all is its display text, marked, never a bare `null`.
pub fn result_value(r: &EvalResult, text_cap: usize) -> (Value, Option<(usize, usize)>) {
    if r.result.is_none() && r.error.is_none() && r.text_chars > 0 {
        let shown = r.text.chars().count().min(text_cap);
        let text = crate::text::cap_text_of(r.text.clone(), text_cap, r.text_chars);
        return (Value::String(text), Some((shown, r.text_chars)));
    }
    capped_result(&r.result, text_cap)
}

/// `text` capped at `cap` characters with the marker, and the truncation
/// record (`shown`, `total`) when it was cut.
fn capped_stream(text: &str, cap: usize) -> (String, Option<Value>) {
    let total = text.chars().count();
    if total <= cap {
        return (text.to_string(), None);
    }
    (crate::text::cap_text_of(text.to_string(), cap, total), Some(json!({"shown": cap, "total": total})))
}

/// The outer result of one evaluation (SPEC §1): capped text, then media
/// blocks; `structuredContent` with everything else. The text and the
/// structured parts share one byte budget ([`response_budget`]), each part
/// also within the text cap, and every cut is marked with its true total.
pub fn outer_result(code: &str, settled: &Settled, text_cap: usize) -> CallToolResult {
    let r = &settled.result;
    let restore = settled.restore.as_ref();
    let mut text = String::new();
    if let Some(reset) = &r.context_reset {
        text.push_str(&format!("[context reset: {reset}]\n"));
    }
    if let Some(rr) = restore.filter(|rr| !rr.blocks.is_empty()) {
        text.push_str(&format!("[session restored: {}]\n", rr.summary));
    }
    if !r.stdout.is_empty() {
        text.push_str(&r.stdout);
        if !r.stdout.ends_with('\n') {
            text.push('\n');
        }
    }
    if !r.stderr.is_empty() {
        text.push_str("[stderr]\n");
        text.push_str(&r.stderr);
        if !r.stderr.ends_with('\n') {
            text.push('\n');
        }
    }
    match &r.error {
        Some(e) => {
            if !e.stack.is_empty() && !e.stack.contains(&e.message) {
                text.push_str(&format!("{}: {}\n{}", e.name, e.message, e.stack.trim_end()));
            } else {
                text.push_str(&format!("{}: {}", e.name, e.message));
            }
        }
        None => text.push_str(&r.text),
    }
    if !r.new_tools.is_empty() {
        text.push_str(&format!("\n[new tools: {}]", r.new_tools.join(", ")));
    }
    // The result's own text may have been capped already: the marker gives
    // the length of the whole, uncapped.
    let shown = r.text.chars().count();
    let total = text.chars().count() - shown + r.text_chars.max(shown);
    let text = crate::text::cap_text_of(text, text_cap, total);
    // One budget for the whole response: the text first, then the parts of
    // `structuredContent` from what is left.
    let mut left = response_budget(text_cap).saturating_sub(text.len());
    let mut content = vec![Content::text(text)];
    for (i, m) in r.media.iter().enumerate() {
        let block = match m {
            Media::Image { mime, data } => json!({"type": "image", "data": data, "mimeType": mime}),
            Media::Pdf { data } => json!({"type": "resource", "resource": {
                "uri": format!("wrepl://media/{i}.pdf"), "mimeType": "application/pdf", "blob": data}}),
        };
        if let Ok(c) = serde_json::from_value::<Content>(block) {
            content.push(c);
        }
    }
    let definitions: Vec<Value> = settled
        .new_tools
        .iter()
        .map(|t| {
            json!({"name": format!("{REGISTERED_PREFIX}{}", t.name), "description": t.description,
                   "inputSchema": t.input_schema, "displayName": t.display_name})
        })
        .collect();
    let (result, truncated) = result_value(r, text_cap.min(left));
    left = left.saturating_sub(result.to_string().len());
    let (stdout, stdout_truncated) = capped_stream(&r.stdout, text_cap.min(left));
    left = left.saturating_sub(stdout.len());
    let (stderr, stderr_truncated) = capped_stream(&r.stderr, text_cap.min(left));
    left = left.saturating_sub(stderr.len());
    let error = r.error.as_ref().map(|e| {
        let cap = text_cap.min(left);
        let total = |t: &str| t.chars().count();
        json!({
            "name": crate::text::cap_text_of(e.name.clone(), cap.min(200), total(&e.name)),
            "message": crate::text::cap_text_of(e.message.clone(), cap, total(&e.message)),
            "stack": crate::text::cap_text_of(e.stack.clone(), cap, total(&e.stack)),
        })
    });
    left = left.saturating_sub(error.as_ref().map_or(0, |e| e.to_string().len()));
    let (calls, calls_omitted) = bounded_transcript(&r.calls, left);
    let structured = json!({
        "code": code,
        "result": result,
        "result_truncated": truncated.map(|(shown, total)| json!({"shown": shown, "total": total})),
        "stdout": stdout,
        "stdout_truncated": stdout_truncated,
        "stderr": stderr,
        "stderr_truncated": stderr_truncated,
        "error": error,
        "timed_out": r.timed_out,
        "context_reset": r.context_reset,
        "abandoned_calls": r.abandoned_calls,
        "calls": calls,
        "calls_omitted": calls_omitted,
        "new_tools": r.new_tools,
        "new_tool_definitions": definitions,
        "script_ms": r.script_ms,
        "wall_ms": r.wall_ms,
        "cost": r.cost,
        "replay": restore.map(|rr| json!({"summary": rr.summary, "blocks": rr.blocks})),
    });
    let mut out = if r.failed() { CallToolResult::error(content) } else { CallToolResult::success(content) };
    out.structured_content = Some(structured);
    // The cost also in `_meta`, under wrepl's prefix, for clients that
    // account for tool calls without reading structured content.
    if let Ok(Value::Object(cost)) = serde_json::to_value(&r.cost) {
        let mut meta = serde_json::Map::new();
        meta.insert("wrepl/cost".into(), Value::Object(cost));
        out.meta = Some(rmcp::model::MetaObject(meta));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_says_what_this_connection_has_within_its_size() {
        let facts = DescriptionFacts {
            modern: false,
            async_mode: false,
            tools: vec!["Bash".into(), "Read".into(), "mcp__gh__search".into()],
            rules: vec!["Bash(git status:*)".into(), "Write(./src/**)".into()],
        };
        let d = repl_description(&facts);
        for want in ["Bash, Read, mcp__gh__search", "Bash(git status:*), Write(./src/**)", "on this connection"] {
            assert!(d.contains(want), "{want:?} in {d}");
        }
        assert!(!d.contains("[context:") && !d.contains("fresh, empty context"), "{d}");
        let modern = repl_description(&DescriptionFacts { modern: true, ..facts.clone() });
        assert!(modern.contains("[context: HANDLE]") && modern.contains("fresh, empty context"), "{modern}");
        let queued = repl_description(&DescriptionFacts { async_mode: true, ..facts });
        assert!(queued.contains("repl_result"), "{queued}");
        // Many tools and rules: cut to fit, with a count of the rest.
        let many = DescriptionFacts {
            modern: true,
            async_mode: false,
            tools: (0..300).map(|i| format!("mcp__server__tool_{i}")).collect(),
            rules: (0..300).map(|i| format!("Bash(command-{i}:*)")).collect(),
        };
        let d = repl_description(&many);
        assert!(d.chars().count() <= MAX_REPL_DESCRIPTION, "{} characters", d.chars().count());
        assert!(d.contains("more") && d.contains("[context: HANDLE]"), "{d}");
        // Without rules, only the read-only defaults are named.
        let none = repl_description(&DescriptionFacts::default());
        assert!(none.contains("reading inside the workspace (Read, Glob, Grep). Any other call"), "{none}");
    }
}
