//! Typed tool inputs: one Rust type per tool is both the input's JSON Schema
//! (through `schemars`, doc comments becoming descriptions) and its parser
//! (through `serde`), and [`BlockingTool`] is the shared `Tool` boilerplate
//! of the file and search tools (blocking work on tokio's blocking pool with
//! cancellation, path-scoped permission rules).
//!
//! [`schema_of`] normalises what `schemars` generates into the plain schemas
//! the model and the `.d.ts` writer see: no `$schema`, `title`, `format`,
//! `$defs` or `$ref`, and an `Option` field is simply not required (its type
//! carries no `null`).

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::files::run_blocking;
use super::{str_field, Media, RuleKind, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// The JSON Schema of `T`, normalised (see the module documentation).
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.inline_subschemas = true;
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut schema {
        // The tool's description lives in `Tool::description`; the input
        // type's own doc comment is for readers of the code.
        for key in ["$schema", "$defs", "title", "description"] {
            root.remove(key);
        }
    }
    normalise(&mut schema);
    schema
}

/// Strip what `schemars` adds beyond a plain schema from `schema` and its
/// subschemas: `format` and `title` go, and a `null` alternative (how
/// `schemars` renders `Option`) is dropped from `type` arrays, `enum`s and
/// `anyOf`/`oneOf`, as is a `null` `default` (`#[serde(default)]` on an
/// `Option`). Only schema positions are visited, so a property that
/// happens to be called `format` survives.
fn normalise(schema: &mut Value) {
    let Value::Object(obj) = schema else { return };
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alts)) = obj.get_mut(key) else { continue };
        alts.retain(|a| a.get("type").is_none_or(|t| t != "null"));
        if alts.len() == 1 && alts[0].is_object() {
            // One alternative left: it is the schema (metadata beside it,
            // such as the field's description, wins).
            if let Some(Value::Array(mut alts)) = obj.remove(key) {
                if let Some(Value::Object(only)) = alts.pop() {
                    for (k, v) in only {
                        obj.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
    obj.remove("format");
    obj.remove("title");
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = &types[..] {
            let only = only.clone();
            obj.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if obj.get("default").is_some_and(Value::is_null) {
        obj.remove("default");
    }
    for key in ["properties", "patternProperties", "$defs"] {
        if let Some(Value::Object(props)) = obj.get_mut(key) {
            props.values_mut().for_each(normalise);
        }
    }
    for key in ["items", "additionalProperties", "not", "contains"] {
        if let Some(sub) = obj.get_mut(key) {
            normalise(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = obj.get_mut(key) {
            subs.iter_mut().for_each(normalise);
        }
    }
}

/// Parse `input` as the input type `T` of tool `tool`.
///
/// Numbers with a zero fraction (`3.0`) count as integers, as they do for
/// the schema. A failure is [`ToolError::InvalidInput`] naming the tool and,
/// where the schema can tell, the field.
pub(crate) fn parse<T: DeserializeOwned + JsonSchema>(tool: &str, input: &Value) -> Result<T, ToolError> {
    let input = integral_floats_as_integers(input);
    T::deserialize(&input).map_err(|e| {
        // serde names missing and unknown fields, not the field of a bad
        // value; the schema's first complaint points at it.
        let at = jsonschema::validator_for(&schema_of::<T>())
            .ok()
            .and_then(|v| v.iter_errors(&input).next().map(|err| err.instance_path().to_string()))
            .map(|p| p.trim_start_matches('/').to_string())
            .filter(|p| !p.is_empty());
        match at {
            Some(field) => ToolError::InvalidInput(format!("{tool}: invalid input at `{field}`: {e}")),
            None => ToolError::InvalidInput(format!("{tool}: invalid input: {e}")),
        }
    })
}

/// `input` with its top-level integral floats (`3.0`) made integers, which
/// serde reads as unsigned integers while JSON Schema's `integer` already
/// accepts them. Nested values (e.g. `Sample`'s `schema`) are left alone.
fn integral_floats_as_integers(input: &Value) -> Value {
    let Value::Object(obj) = input else { return input.clone() };
    let fixed: Map<String, Value> = obj
        .iter()
        .map(|(k, v)| {
            let v = match v.as_f64() {
                Some(f) if v.is_f64() && f.fract() == 0.0 && (0.0..1.8e19).contains(&f) => Value::from(f as u64),
                Some(f) if v.is_f64() && f.fract() == 0.0 && (-9.2e18..0.0).contains(&f) => Value::from(f as i64),
                _ => v.clone(),
            };
            (k.clone(), v)
        })
        .collect();
    Value::Object(fixed)
}

/// What a [`BlockingTool`] returns: its typed value (whose schema is the
/// tool's output schema, so the declared type and the value cannot drift
/// apart), the text for the transcript, and media.
#[derive(Debug)]
pub(crate) struct Out<T> {
    /// The value the script receives.
    pub(crate) value: T,
    /// Text for the transcript and the model.
    pub(crate) text: String,
    /// Media attachments.
    pub(crate) media: Vec<Media>,
}

impl<T: Serialize> Out<T> {
    /// A value and its text, no media.
    pub(crate) fn new(value: T, text: impl Into<String>) -> Self {
        Self { value, text: text.into(), media: Vec::new() }
    }

    /// The same output with `media` attached.
    pub(crate) fn with_media(mut self, media: Vec<Media>) -> Self {
        self.media = media;
        self
    }

    /// The untyped output the pipeline carries.
    pub(crate) fn into_output(self, tool: &str) -> Result<ToolOutput, ToolError> {
        let value = serde_json::to_value(&self.value)
            .map_err(|e| ToolError::Failed(format!("{tool}: its result could not be encoded: {e}")))?;
        Ok(ToolOutput::new(value, self.text).with_media(self.media))
    }
}

/// A built-in file or search tool: a typed input, blocking filesystem work,
/// path-scoped permission rules. Every `BlockingTool` is a [`Tool`].
pub(crate) trait BlockingTool: Send + Sync + 'static {
    /// The input; its schema is [`Tool::input_schema`].
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// The value the script receives; its schema is [`Tool::output_schema`].
    type Output: Serialize + JsonSchema + Send + 'static;
    /// Wire name.
    const NAME: &'static str;
    /// Description for the model.
    const DESCRIPTION: &'static str;
    /// True when the tool never changes anything.
    const READ_ONLY: bool;
    /// The input field holding the path permission rules match.
    const PATH_FIELD: &'static str;
    /// Another tool whose deny rules also cover this tool's paths.
    const ALSO_CHECKED_AS: Option<&'static str> = None;

    /// Do the work (on the blocking pool; check `ctx.cancel` in loops).
    fn run(input: Self::Input, ctx: &ToolContext) -> Result<Out<Self::Output>, ToolError>;

    /// Do the work at once, on the caller's thread, when it is small and
    /// cannot block for long (a read of a small regular file); `None` hands
    /// it to the blocking pool ([`BlockingTool::run`]). A call answered here
    /// costs no thread hand-over.
    fn run_inline(_input: &Self::Input, _ctx: &ToolContext) -> Option<Result<Out<Self::Output>, ToolError>> {
        None
    }
}

impl<T: BlockingTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<T::Input>()
    }

    fn output_schema(&self) -> Option<Value> {
        Some(schema_of::<T::Output>())
    }

    fn read_only(&self, _input: &Value) -> bool {
        T::READ_ONLY
    }

    fn rule_kind(&self) -> RuleKind {
        RuleKind::Path
    }

    fn also_checked_as(&self) -> Option<&str> {
        T::ALSO_CHECKED_AS
    }

    fn input_paths(&self, input: &Value) -> Vec<String> {
        str_field(input, T::PATH_FIELD).map(|s| vec![s.to_string()]).unwrap_or_default()
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let input = parse::<T::Input>(T::NAME, &input)?;
            let cancel = ctx.cancel.clone();
            if cancel.is_cancelled() {
                return Err(super::files::cancelled());
            }
            if let Some(done) = T::run_inline(&input, &ctx) {
                return done?.into_output(T::NAME);
            }
            run_blocking(&cancel, move || T::run(input, &ctx)?.into_output(T::NAME)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// The keywords of `schema` and of all its subschemas (a property's
    /// name is not a keyword; `enum`, `const` and `default` hold values).
    fn keywords<'a>(schema: &'a Value, out: &mut Vec<(&'a str, &'a Value)>) {
        let Value::Object(m) = schema else { return };
        for (k, v) in m {
            out.push((k, v));
            match (k.as_str(), v) {
                ("enum" | "const" | "default" | "examples", _) => {}
                ("properties" | "patternProperties" | "$defs", Value::Object(props)) => {
                    props.values().for_each(|p| keywords(p, out))
                }
                (_, Value::Array(subs)) => subs.iter().for_each(|s| keywords(s, out)),
                (_, sub) => keywords(sub, out),
            }
        }
    }

    #[test]
    fn builtin_schemas_are_plain() {
        for t in crate::tools::builtin_tools() {
            let s = t.input_schema();
            let name = t.name();
            jsonschema::meta::validate(&s).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s["type"], "object", "{name}");
            assert_eq!(s["additionalProperties"], false, "{name}");
            let mut keys = Vec::new();
            keywords(&s, &mut keys);
            for (k, v) in keys {
                assert!(!["$schema", "$defs", "$ref", "format", "title"].contains(&k), "{name}: {k} in {s}");
                if k == "type" {
                    assert!(v.is_string(), "{name}: type {v} in {s}");
                    assert_ne!(v, "null", "{name}: {s}");
                }
                if k == "enum" {
                    assert!(v.as_array().unwrap().iter().all(|e| !e.is_null()), "{name}: {s}");
                }
            }
        }
    }

    /// A test input with every shape the built-in tools use.
    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        /// A name.
        #[schemars(length(min = 1))]
        name: String,
        /// At least one.
        count: Option<NonZeroU64>,
        /// Any size.
        #[serde(rename = "-n")]
        size: Option<u64>,
        /// A colour.
        colour: Option<Colour>,
    }

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Colour {
        Red,
        Blue,
    }

    #[test]
    fn schemas_are_normalised() {
        assert_eq!(
            schema_of::<Probe>(),
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "description": "A name."},
                    "count": {"type": "integer", "minimum": 1, "description": "At least one."},
                    "-n": {"type": "integer", "minimum": 0, "description": "Any size."},
                    "colour": {"type": "string", "enum": ["red", "blue"], "description": "A colour."}
                },
                "required": ["name"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn inputs_parse_and_failures_name_the_tool_and_field() {
        let p: Probe = parse("T", &json!({"name": "a", "count": 3.0, "-n": 0, "colour": "red"})).unwrap();
        assert_eq!(p, Probe { name: "a".into(), count: NonZeroU64::new(3), size: Some(0), colour: Some(Colour::Red) });
        let p: Probe = parse("T", &json!({"name": "a", "count": null})).unwrap();
        assert_eq!(p.count, None);
        for (input, field) in [
            (json!({"name": "a", "count": 0}), "count"),
            (json!({"name": "a", "-n": "x"}), "-n"),
            (json!({"name": "a", "-n": 1.5}), "-n"),
            (json!({"name": "a", "colour": "green"}), "colour"),
            (json!({"count": 1}), "name"),
            (json!({"name": "a", "bogus": 1}), "bogus"),
            (json!({"name": 7}), "name"),
        ] {
            let err = parse::<Probe>("T", &input).unwrap_err();
            let ToolError::InvalidInput(m) = &err else { panic!("{input}: {err:?}") };
            assert!(m.starts_with("T: invalid input") && m.contains(&format!("`{field}`")), "{input}: {m}");
        }
        let err = parse::<Probe>("T", &json!([1])).unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput(_)), "{err:?}");
    }
}
