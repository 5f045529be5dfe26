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

/// Answers permission `ask` through `elicitation/create`; without client
/// support the answer is no.
pub(super) struct McpApprover {
    pub(super) conn: Weak<Connection>,
}

impl Approver for McpApprover {
    fn approve(&self, tool: &str, input: &Value, reason: &str) -> BoxFuture<'static, bool> {
        let peer = self.conn.upgrade().and_then(|c| lock(&c.peer).clone());
        let shown = {
            let s = input.to_string();
            if s.len() > 2000 {
                format!("{}…", crate::text::prefix(&s, 2000))
            } else {
                s
            }
        };
        let message = format!("wrepl asks permission to run {tool} ({reason}).\nInput: {shown}\nAllow this call?");
        Box::pin(async move {
            let Some(peer) = peer else { return false };
            if peer.peer_info().is_none_or(|i| i.capabilities.elicitation.is_none()) {
                return false;
            }
            let params = json!({
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
