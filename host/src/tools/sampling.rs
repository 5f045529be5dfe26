//! Model sampling as a tool: `haiku(prompt, schema?)` (and its aliases) in a
//! script becomes a `Sample` call, so it passes the whole pipeline and is
//! recorded for replay like any other call. The model itself is reached
//! through a [`Sampler`] the front end provides (the MCP server asks its
//! client with `sampling/createMessage`); without one the call fails with a
//! clear error.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use schemars::{json_schema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::typed::{parse, schema_of};
use super::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// Wire name of the sampling tool.
pub const SAMPLE: &str = "Sample";
/// Native timeout of a sampling call (a human may review the request).
pub const SAMPLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Largest prompt, in bytes.
pub const MAX_PROMPT_BYTES: usize = 1 << 20;
/// Default and largest `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// Largest `max_tokens` a script may ask for.
pub const MAX_MAX_TOKENS: u32 = 64_000;

/// One sampling request.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    /// The user message.
    pub prompt: String,
    /// Optional system prompt.
    pub system: Option<String>,
    /// Model hint (`haiku`, `sonnet`, ...); the client chooses the model.
    pub model: String,
    /// Upper bound on the reply length.
    pub max_tokens: u32,
}

/// Why sampling failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SampleError {
    /// Nobody can sample (e.g. the MCP client lacks the capability).
    #[error("{0}")]
    Unsupported(String),
    /// The client refused or failed.
    #[error("{0}")]
    Failed(String),
}

/// Reaches a model (e.g. the MCP client through `sampling/createMessage`).
pub trait Sampler: Send + Sync + 'static {
    /// Ask for one reply; resolves to its text.
    fn sample(
        &self,
        request: SampleRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<String, SampleError>>;
}

/// The `Sample` tool.
#[derive(Clone, Default)]
pub struct Sample {
    sampler: Option<Arc<dyn Sampler>>,
}

impl Sample {
    /// A sampling tool over `sampler` (`None`: every call fails clearly).
    pub fn new(sampler: Option<Arc<dyn Sampler>>) -> Self {
        Self { sampler }
    }
}

/// The input of [`Sample`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SampleInput {
    /// The message to the model.
    #[schemars(length(max = MAX_PROMPT_BYTES))]
    prompt: String,
    /// Optional system prompt.
    #[schemars(length(max = MAX_PROMPT_BYTES))]
    system: Option<String>,
    /// Model hint; the client decides.
    model: Option<Model>,
    /// JSON Schema the reply must match; the reply is then returned parsed.
    // `schema_with` hides the `Option`; `default` keeps the field optional.
    #[serde(default)]
    #[schemars(schema_with = "any_object")]
    schema: Option<Map<String, Value>>,
    // Undocumented on purpose: the schema has never described it.
    #[schemars(range(min = 1, max = MAX_MAX_TOKENS))]
    max_tokens: Option<u32>,
}

/// The model hints a script may give.
#[derive(Debug, Clone, Copy, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Model {
    #[default]
    Haiku,
    Sonnet,
    Opus,
    Fable,
}

impl Model {
    fn as_str(self) -> &'static str {
        match self {
            Model::Haiku => "haiku",
            Model::Sonnet => "sonnet",
            Model::Opus => "opus",
            Model::Fable => "fable",
        }
    }
}

/// `{"type": "object"}`: any JSON object (a JSON Schema, checked at call time).
fn any_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object"})
}

/// Strip one surrounding Markdown code fence (```json ... ```), if present.
fn unfence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else { return t };
    let Some(body) = rest.strip_suffix("```") else { return t };
    // Drop the info string (e.g. `json`) on the fence line.
    match body.find('\n') {
        Some(nl) => body[nl + 1..].trim(),
        None => body.trim(),
    }
}

/// Parse a reply that must be JSON matching `schema`.
pub fn parse_structured(reply: &str, schema: &Value) -> Result<Value, ToolError> {
    let validator = jsonschema::validator_for(schema).map_err(|e| {
        ToolError::InvalidInput(format!("the schema given to the model call is not a valid JSON Schema: {e}"))
    })?;
    let value: Value = serde_json::from_str(unfence(reply)).map_err(|e| {
        let shown: String = reply.chars().take(300).collect();
        ToolError::Failed(format!("the model's reply is not JSON ({e}); it began: {shown:?}"))
    })?;
    let mut all = validator.iter_errors(&value);
    let mut errors: Vec<String> = all.by_ref().take(5).map(|e| format!("{e} at {}", e.instance_path())).collect();
    let more = all.take(10_000).count();
    if more > 0 {
        errors.push(format!("and {more} more error{}", if more == 1 { "" } else { "s" }));
    }
    if !errors.is_empty() {
        return Err(ToolError::Failed(format!("the model's reply does not match the schema: {}", errors.join("; "))));
    }
    Ok(value)
}

impl Tool for Sample {
    fn name(&self) -> &str {
        SAMPLE
    }
    fn description(&self) -> &str {
        "Ask a language model (through the MCP client's sampling) for a reply. With `schema`, the reply must be JSON \
         matching it and is returned parsed. Scripts call it as haiku(prompt, schema?) (aliases sonnet, opus, fable)."
    }
    fn input_schema(&self) -> Value {
        schema_of::<SampleInput>()
    }
    fn native_timeout(&self, _input: &Value) -> Duration {
        SAMPLE_TIMEOUT
    }
    fn read_only(&self, _input: &Value) -> bool {
        // No effect on the machine or the workspace; the client governs sampling.
        true
    }
    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        let sampler = self.sampler.clone();
        Box::pin(async move {
            let input: SampleInput = parse(SAMPLE, &input)?;
            let Some(sampler) = sampler else {
                return Err(ToolError::Failed(
                    "model sampling is not available here: it needs an MCP client that supports sampling \
                     (sampling/createMessage), e.g. `wrepl serve` used from such a client"
                        .into(),
                ));
            };
            let schema = input.schema.map(Value::Object);
            if let Some(s) = &schema {
                // Fail on a bad schema before asking the model.
                jsonschema::validator_for(s).map_err(|e| {
                    ToolError::InvalidInput(format!(
                        "the schema given to the model call is not a valid JSON Schema: {e}"
                    ))
                })?;
            }
            let mut system = input.system;
            if let Some(s) = &schema {
                let rule = format!(
                    "Reply with one JSON value only, no prose and no code fence. It must match this JSON Schema:\n{s}"
                );
                system = Some(match system {
                    Some(sys) => format!("{sys}\n\n{rule}"),
                    None => rule,
                });
            }
            let request = SampleRequest {
                prompt: input.prompt,
                system,
                model: input.model.unwrap_or_default().as_str().to_string(),
                max_tokens: input.max_tokens.map_or(DEFAULT_MAX_TOKENS, |n| n.min(MAX_MAX_TOKENS)),
            };
            let reply = tokio::select! {
                r = sampler.sample(request, ctx.cancel.clone()) => r.map_err(|e| match e {
                    SampleError::Unsupported(m) => ToolError::Failed(m),
                    SampleError::Failed(m) => ToolError::Failed(format!("model sampling failed: {m}")),
                })?,
                _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled("the model call was cancelled".into())),
            };
            match schema {
                Some(s) => {
                    let value = parse_structured(&reply, &s)?;
                    Ok(ToolOutput::new(value, reply))
                }
                None => Ok(ToolOutput::new(Value::String(reply.clone()), reply)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_replies_are_parsed_and_validated() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        assert_eq!(parse_structured("{\"n\": 3}", &schema).unwrap(), json!({"n": 3}));
        assert_eq!(parse_structured("```json\n{\"n\": 4}\n```", &schema).unwrap(), json!({"n": 4}));
        let e = parse_structured("{\"n\": \"x\"}", &schema).unwrap_err();
        assert!(e.to_string().contains("does not match the schema"), "{e}");
        let e = parse_structured("sure! here it is", &schema).unwrap_err();
        assert!(e.to_string().contains("not JSON"), "{e}");
        let e = parse_structured("{}", &json!({"type": 12})).unwrap_err();
        assert!(matches!(e, ToolError::InvalidInput(_)), "{e}");
    }

    #[tokio::test]
    async fn without_a_sampler_the_call_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Arc::new(super::super::Workspace::new([dir.path()]).unwrap());
        let ctx = ToolContext {
            workspace: ws.clone(),
            cwd: ws.default_cwd().to_path_buf(),
            cancel: CancellationToken::new(),
            timeout: SAMPLE_TIMEOUT,
            progress: None,
            confinement: Default::default(),
            trace: None,
            tasks: Default::default(),
        };
        let e = Sample::new(None).call(json!({"prompt": "hi"}), ctx).await.unwrap_err();
        assert!(e.to_string().contains("sampling/createMessage"), "{e}");
    }
}
