//! One downstream tool as the pipeline sees it (`mcp__<server>__<tool>`):
//! its listing checked and capped, the [`Tool`] implementation that calls it
//! on its server, and the conversion of the `tools/call` result (content
//! blocks, structured content, media, errors) into a [`ToolOutput`].

use std::io;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::Value;

use super::config::{is_wire_part, MAX_DESCRIPTION_BYTES, MAX_RESULT_BYTES, MAX_SCHEMA_BYTES};
use super::connection::ServerConn;
use super::{cap_text, shown};
use crate::tools::{Media, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// Checks a schema from a server: a JSON object of bounded size that compiles.
fn check_schema(schema: &Value, what: &str) -> Result<(), String> {
    let Value::Object(map) = schema else { return Err(format!("its {what} is not a JSON object")) };
    let size = serialized_len(schema);
    if size > MAX_SCHEMA_BYTES {
        return Err(format!("its {what} is {size} bytes (at most {MAX_SCHEMA_BYTES})"));
    }
    if let Some(t) = map.get("type") {
        if t != "object" {
            return Err(format!("its {what} does not describe an object (type {})", cap_text(t.to_string(), 80)));
        }
    }
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| format!("its {what} does not compile: {}", cap_text(e.to_string(), 200)))
}

/// Serialized size of a value, without building the string.
fn serialized_len<T: serde::Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    match serde_json::to_writer(&mut c, value) {
        Ok(()) => c.0,
        Err(_) => usize::MAX,
    }
}

// ---------------------------------------------------------------------------
// Tools

/// One downstream tool, as the pipeline sees it.
pub(super) struct McpTool {
    wire: String,
    /// The tool's name on its server.
    pub(super) tool: String,
    server_name: String,
    server: Weak<ServerConn>,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    timeout: Duration,
}

impl McpTool {
    /// The tool of one `tools/list` entry, or why it is skipped.
    pub(super) fn from_listing(conn: &Arc<ServerConn>, raw: Value) -> Result<Self, String> {
        let Value::Object(mut raw) = raw else { return Err("skipped a tool entry that is not an object".into()) };
        let name = match raw.get("name") {
            Some(Value::String(n)) if is_wire_part(n) => n.clone(),
            Some(Value::String(n)) => {
                return Err(format!("skipped tool {}: names must be 1-64 characters from A-Z a-z 0-9 _ -", shown(n)))
            }
            _ => return Err("skipped a tool without a string name".into()),
        };
        let description = match raw.remove("description") {
            Some(Value::String(d)) => cap_text(d, MAX_DESCRIPTION_BYTES),
            _ => String::new(),
        };
        let input_schema = raw.remove("inputSchema").unwrap_or(Value::Null);
        check_schema(&input_schema, "inputSchema").map_err(|e| format!("skipped tool {}: {e}", shown(&name)))?;
        let output_schema = match raw.remove("outputSchema") {
            None | Some(Value::Null) => None,
            Some(s) => {
                check_schema(&s, "outputSchema").map_err(|e| format!("skipped tool {}: {e}", shown(&name)))?;
                Some(s)
            }
        };
        Ok(Self {
            wire: format!("mcp__{}__{}", conn.name, name),
            tool: name,
            server_name: conn.name.clone(),
            server: Arc::downgrade(conn),
            description,
            input_schema,
            output_schema,
            timeout: conn.timeout,
        })
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.wire
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }

    fn output_schema(&self) -> Option<Value> {
        self.output_schema.clone()
    }

    fn native_timeout(&self, _input: &Value) -> Duration {
        self.timeout
    }

    /// Never: a server's `readOnlyHint` is an unverified claim, and
    /// deny-by-default permission must not auto-allow its tools.
    fn read_only(&self, _input: &Value) -> bool {
        false
    }

    fn concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        let server = self.server.upgrade();
        let (tool, server_name) = (self.tool.clone(), self.server_name.clone());
        Box::pin(async move {
            let Some(server) = server else {
                return Err(ToolError::Failed(format!("MCP server {server_name:?} has been shut down")));
            };
            call_remote(&server, tool, input, ctx).await
        })
    }
}

async fn call_remote(conn: &ServerConn, tool: String, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let what = format!("the call to {tool:?}");
    let Value::Object(arguments) = input else {
        return Err(ToolError::InvalidInput(format!("{} takes an object", tool)));
    };
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled(format!("{what} was cancelled before it started")));
    }
    let result = conn.call_tool(&tool, arguments, &ctx, &what).await?;
    let size = serialized_len(&result);
    if size > MAX_RESULT_BYTES {
        return Err(ToolError::Failed(format!(
            "MCP server {:?} returned {size} bytes for {what}; at most {MAX_RESULT_BYTES} are accepted",
            conn.name
        )));
    }
    let mut texts = Vec::new();
    let mut media = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text),
            ContentBlock::Image(i) => {
                if is_image_mime(&i.mime_type) {
                    media.push(Media::Image { mime: i.mime_type, data: i.data });
                } else {
                    texts.push(format!("[image with unsupported type {} omitted]", shown(&i.mime_type)));
                }
            }
            ContentBlock::Audio(a) => texts.push(format!("[audio ({}) omitted]", cap_text(a.mime_type, 80))),
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents { text, .. } => texts.push(text),
                ResourceContents::BlobResourceContents { uri, .. } => {
                    texts.push(format!("[binary resource {} omitted]", shown(&uri)))
                }
                _ => texts.push("[resource of an unknown kind omitted]".into()),
            },
            ContentBlock::ResourceLink(l) => texts.push(format!("[resource link {}]", shown(&l.uri))),
            _ => texts.push("[content of an unknown kind omitted]".into()),
        }
    }
    let text = texts.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::Failed(if text.is_empty() {
            format!("MCP tool {tool:?} on server {:?} reported an error without a message", conn.name)
        } else {
            text
        }));
    }
    let value = result.structured_content.unwrap_or_else(|| Value::String(text.clone()));
    Ok(ToolOutput::new(value, text).with_media(media))
}

/// `image/<subtype>` with a plain subtype.
fn is_image_mime(m: &str) -> bool {
    m.strip_prefix("image/").is_some_and(|s| {
        (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    })
}
