//! What a call is checked against: its input schema (compiled once, with
//! the [`PipelineError`] a bad one gives), and for the model's calls of the
//! tools wrepl serves itself, who decides when no rule or hook does
//! ([`FrontDefault`]).

use std::sync::Arc;

use serde_json::Value;

use super::settings::SettingsError;
use crate::tools::Tool;

/// Errors building a dispatcher.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// The settings are invalid.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// A tool's schema does not compile.
    #[error("the input schema of tool {tool} is invalid: {message}")]
    Schema {
        /// The tool.
        tool: String,
        /// Why.
        message: String,
    },
    /// Two tools share a name.
    #[error("two tools are named {0}")]
    Duplicate(String),
}

/// How a call the model makes of a tool wrepl serves itself is decided when
/// no rule or hook decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontDefault {
    /// Allowed (the `repl` tool itself: whoever started the server offered it).
    Allow,
    /// Always put to the approver with this question, even when an allow
    /// rule or hook matches (script-registered tools); deny rules and hooks
    /// still refuse first.
    AlwaysAsk(String),
}

/// Which policy a call is checked under.
pub(super) enum Gate<'a> {
    /// An inner call of a pipeline tool, checked against its schema.
    Tool { tool: &'a Arc<dyn Tool>, validator: &'a jsonschema::Validator },
    /// A front call.
    Front { validator: &'a jsonschema::Validator, default: &'a FrontDefault },
}

impl Gate<'_> {
    pub(super) fn validator(&self) -> &jsonschema::Validator {
        match self {
            Gate::Tool { validator, .. } | Gate::Front { validator, .. } => validator,
        }
    }
}

/// Compile `tool`'s JSON Schema once.
pub(super) fn compile(tool: &str, schema: &Value) -> Result<jsonschema::Validator, PipelineError> {
    jsonschema::validator_for(schema).map_err(|e| PipelineError::Schema { tool: tool.into(), message: e.to_string() })
}
