//! Tools the script registers (the `register-tool` and `unregister-tool`
//! imports), validated here, and a revision that changes with them.

use std::collections::BTreeMap;

use crate::call::REGISTERED_PREFIX;

/// Most registered tools per context.
pub const MAX_REGISTERED_TOOLS: usize = 100;

/// A tool defined by the script with `registerTool`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RegisteredTool {
    /// Name (the model sees it with [`REGISTERED_PREFIX`] before it).
    pub name: String,
    /// Description for the model.
    pub description: String,
    /// Input JSON Schema.
    pub input_schema: serde_json::Value,
    /// Optional display name.
    pub display_name: Option<String>,
}

/// The registered tools of one sandbox.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    /// By name.
    tools: BTreeMap<String, RegisteredTool>,
    /// Changes whenever `tools` does; unique across instances (0: none ever).
    revision: u64,
}

/// A process-wide counter, so revisions of different instances never collide.
fn next_revision() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Longest registered tool name: its MCP name (the registered prefix and
/// the name) must fit the protocol's 64 characters.
pub(crate) const MAX_REGISTERED_NAME: usize = 64 - REGISTERED_PREFIX.len();

fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_REGISTERED_NAME).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Registry {
    /// The registered tools, by name.
    pub(crate) fn tools(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.tools.values()
    }

    /// Changes whenever the registered tools do (0: none ever registered).
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// `register-tool`: validate (everything is untrusted) and register or
    /// replace; the error is the message the script sees.
    /// `check_schema` is the call handler's schema check.
    pub(super) fn register(
        &mut self,
        name: String,
        description: String,
        schema: String,
        display_name: String,
        check_schema: &dyn Fn(&serde_json::Value) -> Result<(), String>,
    ) -> Result<(), String> {
        if !valid_tool_name(&name) {
            return Err(format!(
                "the name must match ^[a-zA-Z0-9_-]{{1,{MAX_REGISTERED_NAME}}}$ (the model calls it as \
                 {REGISTERED_PREFIX}<name>, and an MCP tool name has at most 64 characters)"
            ));
        }
        if description.chars().count() > 10_000 {
            return Err("the description is longer than 10000 characters".into());
        }
        if display_name.chars().count() > 200 {
            return Err("the display name is longer than 200 characters".into());
        }
        if schema.len() > 64 << 10 {
            return Err("the schema is larger than 64 KiB".into());
        }
        let input_schema: serde_json::Value = match serde_json::from_str(&schema) {
            Ok(v @ serde_json::Value::Object(_)) => v,
            _ => return Err("the schema must be a JSON object".into()),
        };
        if let Err(e) = check_schema(&input_schema) {
            return Err(format!("the schema is not a valid JSON Schema: {e}"));
        }
        if !self.tools.contains_key(&name) && self.tools.len() >= MAX_REGISTERED_TOOLS {
            return Err(format!("at most {MAX_REGISTERED_TOOLS} tools may be registered"));
        }
        let display_name = (!display_name.is_empty()).then_some(display_name);
        self.tools.insert(name.clone(), RegisteredTool { name, description, input_schema, display_name });
        self.revision = next_revision();
        Ok(())
    }

    /// `unregister-tool`: whether a tool of that name was registered.
    pub(super) fn unregister(&mut self, name: &str) -> bool {
        let removed = self.tools.remove(name).is_some();
        if removed {
            self.revision = next_revision();
        }
        removed
    }
}
