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

/// The compiled schemas of front calls (`repl`, registered tools), keyed by
/// the schema's exact text, so a served evaluation does not compile the same
/// schema again. Bounded: a script that registers many tools empties it
/// rather than growing it, and a large schema is not kept.
#[derive(Default)]
pub(super) struct FrontValidators(std::sync::Mutex<std::collections::HashMap<String, Arc<jsonschema::Validator>>>);

/// At most this many schemas are kept compiled.
const MAX_FRONT_VALIDATORS: usize = 256;
/// Only schemas of at most this much text are kept (the `repl` tool's is
/// well under 1 KiB): the cache is shared by every context of a server, and
/// scripts may register schemas of up to 64 KiB, which it must not hold
/// 256 compiled copies of. A larger one is compiled for its call alone.
const MAX_CACHED_SCHEMA_BYTES: usize = 4 << 10;

impl FrontValidators {
    /// The validator of `schema` (whose text is `text`), compiled now if no
    /// schema with that exact text was.
    pub(super) fn get(
        &self,
        tool: &str,
        text: &str,
        schema: &Value,
    ) -> Result<Arc<jsonschema::Validator>, PipelineError> {
        if text.len() > MAX_CACHED_SCHEMA_BYTES {
            return compile(tool, schema).map(Arc::new);
        }
        if let Some(v) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(text) {
            return Ok(v.clone());
        }
        let v = Arc::new(compile(tool, schema)?);
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_FRONT_VALIDATORS {
            map.clear();
        }
        map.insert(text.to_string(), v.clone());
        Ok(v)
    }
}

/// Compile `tool`'s JSON Schema once.
pub(super) fn compile(tool: &str, schema: &Value) -> Result<jsonschema::Validator, PipelineError> {
    jsonschema::validator_for(schema).map_err(|e| PipelineError::Schema { tool: tool.into(), message: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_schemas_are_compiled_once_per_text_and_the_cache_is_bounded() {
        let cache = FrontValidators::default();
        let schema = serde_json::json!({"type": "object", "required": ["code"]});
        let text = serde_json::to_string(&schema).unwrap();
        let a = cache.get("repl", &text, &schema).unwrap();
        let b = cache.get("repl", &text, &schema).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the second call reuses the compiled schema");
        assert!(!a.is_valid(&serde_json::json!({})) && a.is_valid(&serde_json::json!({"code": "1"})));
        // Another text is another entry, compiled from its own schema.
        let other = serde_json::json!({"type": "string"});
        let o = cache.get("t", &serde_json::to_string(&other).unwrap(), &other).unwrap();
        assert!(o.is_valid(&serde_json::json!("x")) && !o.is_valid(&serde_json::json!({})));
        // A bad schema is the tool's error, and is not kept.
        let bad = serde_json::json!({"type": 5});
        let e = cache.get("bad", "bad", &bad).unwrap_err();
        assert!(e.to_string().contains("input schema of tool bad"), "{e}");
        // A large schema is compiled for its call and not kept.
        let large = serde_json::json!({"type": "object", "description": "d".repeat(MAX_CACHED_SCHEMA_BYTES)});
        let large_text = serde_json::to_string(&large).unwrap();
        let before = cache.0.lock().unwrap().len();
        let l = cache.get("t", &large_text, &large).unwrap();
        assert!(l.is_valid(&serde_json::json!({})) && !l.is_valid(&serde_json::json!(1)));
        assert_eq!(cache.0.lock().unwrap().len(), before, "not kept");
        for i in 0..MAX_FRONT_VALIDATORS * 2 {
            let s = serde_json::json!({"type": "object", "title": i.to_string()});
            cache.get("t", &serde_json::to_string(&s).unwrap(), &s).unwrap();
            assert!(cache.0.lock().unwrap().len() <= MAX_FRONT_VALIDATORS);
        }
    }
}
