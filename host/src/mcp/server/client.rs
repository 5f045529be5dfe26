//! What the server asks its client: model sampling for `haiku()`
//! (`sampling/createMessage`) and approvals for permission `ask`
//! (`elicitation/create`, a yes/no form).

use super::*;

/// Answers `haiku(...)` through the client's `sampling/createMessage`.
pub(super) struct McpSampler {
    pub(super) conn: Weak<Connection>,
}

impl Sampler for McpSampler {
    fn sample(
        &self,
        request: SampleRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<String, SampleError>> {
        let peer = self.conn.upgrade().and_then(|c| lock(&c.peer).clone());
        Box::pin(async move {
            let Some(peer) = peer else {
                return Err(SampleError::Unsupported("model sampling: the MCP connection is gone".into()));
            };
            if peer.peer_info().is_none_or(|i| i.capabilities.sampling.is_none()) {
                return Err(SampleError::Unsupported(
                    "model sampling is not available: the MCP client did not declare the `sampling` capability \
                     (sampling/createMessage)"
                        .into(),
                ));
            }
            let mut params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": request.prompt}}],
                "maxTokens": request.max_tokens,
                "modelPreferences": {"hints": [{"name": request.model}]},
            });
            if let Some(system) = request.system {
                params["systemPrompt"] = Value::String(system);
            }
            #[allow(deprecated)]
            let params: CreateMessageRequestParams = serde_json::from_value(params)
                .map_err(|e| SampleError::Failed(format!("cannot build the sampling request: {e}")))?;
            #[allow(deprecated)]
            let call = peer.create_message(params);
            let result = tokio::select! {
                r = call => r.map_err(|e| SampleError::Failed(e.to_string()))?,
                _ = cancel.cancelled() => return Err(SampleError::Failed("cancelled".into())),
            };
            let v = serde_json::to_value(&result).unwrap_or(Value::Null);
            let content = &v["content"];
            let text = match content {
                Value::Array(items) => items
                    .iter()
                    .filter(|c| c["type"] == "text")
                    .filter_map(|c| c["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                c if c["type"] == "text" => c["text"].as_str().unwrap_or_default().to_string(),
                _ => {
                    return Err(SampleError::Failed(format!(
                        "the client's reply has no text content (got {})",
                        content.get("type").and_then(Value::as_str).unwrap_or("nothing")
                    )))
                }
            };
            Ok(text)
        })
    }
}

/// Longest input an approval question shows whole, in characters. A longer
/// one is shown in part, the question saying how long it is; the request
/// always carries the whole input in `_meta` ([`APPROVAL_INPUT_META`]).
pub const APPROVAL_SHOWN_CHARS: usize = 8000;
/// `_meta` key of an approval question (`elicitation/create`) that holds the
/// exact input the call will run with, whole.
pub const APPROVAL_INPUT_META: &str = "wrepl/input";

/// The text of an approval question: the tool, the reason and the input,
/// whole when it fits in [`APPROVAL_SHOWN_CHARS`]; otherwise its length and
/// where the whole text is. Never a silent cut.
pub(super) fn approval_message(tool: &str, input: &str, reason: &str) -> String {
    let n = input.chars().count();
    let shown = match input.char_indices().nth(APPROVAL_SHOWN_CHARS) {
        None => format!("Input: {input}"),
        Some((cut, _)) => format!(
            "Input ({n} characters, too long to show whole: the first {APPROVAL_SHOWN_CHARS} are shown, and the \
             whole input is in this request's _meta[\"{APPROVAL_INPUT_META}\"]): {}…[{} more characters]",
            &input[..cut],
            n - APPROVAL_SHOWN_CHARS
        ),
    };
    format!("wrepl asks permission to run {tool} ({reason}).\n{shown}\nAllow this call?")
}

/// Answers permission `ask` through `elicitation/create`; without client
/// support the answer is no.
pub(super) struct McpApprover {
    pub(super) conn: Weak<Connection>,
}

impl Approver for McpApprover {
    fn approve(&self, tool: &str, input: &Value, reason: &str) -> BoxFuture<'static, bool> {
        let peer = self.conn.upgrade().and_then(|c| lock(&c.peer).clone());
        let whole = input.to_string();
        let message = approval_message(tool, &whole, reason);
        let meta = json!({
            APPROVAL_INPUT_META: whole,
            "wrepl/tool": tool,
            "wrepl/inputChars": whole.chars().count(),
        });
        Box::pin(async move {
            let Some(peer) = peer else { return false };
            if peer.peer_info().is_none_or(|i| i.capabilities.elicitation.is_none()) {
                return false;
            }
            let params = json!({
                "_meta": meta,
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {"approve": {"type": "boolean", "title": "Allow", "description": "Allow this call"}},
                    "required": ["approve"]
                }
            });
            let Ok(params) = serde_json::from_value::<ElicitRequestParams>(params) else { return false };
            let answer = tokio::time::timeout(APPROVAL_TIMEOUT, peer.create_elicitation(params)).await;
            match answer {
                Ok(Ok(r)) => {
                    matches!(r.action, ElicitationAction::Accept)
                        && r.content.as_ref().and_then(|c| c.get("approve")).and_then(Value::as_bool) == Some(true)
                }
                _ => false,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_message_shows_short_input_whole_and_says_how_long_a_long_one_is() {
        let m = approval_message("Bash", r#"{"command":"ls"}"#, "ask rule");
        assert!(m.contains(r#"Input: {"command":"ls"}"#), "{m}");
        let long = format!("{{\"command\":\"{}END\"}}", "é".repeat(APPROVAL_SHOWN_CHARS));
        let m = approval_message("Bash", &long, "ask rule");
        let total = long.chars().count();
        assert!(m.contains(&format!("Input ({total} characters")), "{}", &m[..200]);
        assert!(m.contains(APPROVAL_INPUT_META), "{}", &m[..200]);
        assert!(m.contains(&format!("[{} more characters]", total - APPROVAL_SHOWN_CHARS)));
        assert!(!m.contains("END"));
    }
}
