//! `chdir(dir)`: the evaluation's working directory, as an ordinary tool.
//! It goes through every pipeline stage like any other call (schema, latch,
//! hooks, permission, events, records); its one effect is the new working
//! directory, which the pipeline applies after checking it against the roots.

use serde_json::{json, Value};

use super::{str_field, RuleKind, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// Wire name of the working-directory tool behind the `chdir()` shorthand.
pub const CHDIR: &str = "chdir";

/// The working-directory tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Chdir;

impl Tool for Chdir {
    fn name(&self) -> &str {
        CHDIR
    }

    fn description(&self) -> &str {
        "Change the evaluation's working directory (inside the workspace roots)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The new working directory."}},
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({"type": "string"}))
    }

    fn read_only(&self, _input: &Value) -> bool {
        true
    }

    fn rule_kind(&self) -> RuleKind {
        RuleKind::Path
    }

    fn input_paths(&self, input: &Value) -> Vec<String> {
        str_field(input, "path").map(|p| vec![p.to_string()]).unwrap_or_default()
    }

    fn global(&self) -> Option<&str> {
        Some("__wrepl_chdir")
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let path = str_field(&input, "path")
                .ok_or_else(|| ToolError::InvalidInput("chdir needs a directory path".into()))?;
            let r = ctx.workspace.resolve_dir(&ctx.cwd, path)?;
            let shown = r.abs.display().to_string();
            let mut out = ToolOutput::new(json!(shown), shown);
            out.cwd = Some(r.abs);
            Ok(out)
        })
    }
}
