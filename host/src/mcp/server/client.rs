//! What the server asks its client: model sampling for `haiku()`
//! (`sampling/createMessage`) and approvals for permission `ask`
//! (`elicitation/create`, a yes/no form).

use super::hub::{self, Ctx, Reply};
use super::*;

/// Answers `haiku(...)`: through the client's `sampling/createMessage`
/// (2025-11-25), or as an input request of the round (2026-07-28).
pub(super) struct McpSampler {
    pub(super) ctx: Weak<Ctx>,
}

/// The text of a `sampling/createMessage` result. A reply the client says
/// stopped at the token limit (`stopReason: "maxTokens"`) is an error that
/// names the limit, never a part passed off as the whole.
fn sampled_text(v: &Value, max_tokens: u32) -> Result<String, SampleError> {
    if v["stopReason"] == "maxTokens" {
        return Err(SampleError::Failed(format!(
            "the model's reply stopped at its token limit ({max_tokens} tokens) before it was complete, so none of it \
             is returned: ask for a shorter reply, or call Sample({{prompt, model, max_tokens}}) with a larger \
             max_tokens (at most 64000)"
        )));
    }
    let content = &v["content"];
    match content {
        Value::Array(items) => Ok(items
            .iter()
            .filter(|c| c["type"] == "text")
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("")),
        c if c["type"] == "text" => Ok(c["text"].as_str().unwrap_or_default().to_string()),
        _ => Err(SampleError::Failed(format!(
            "the client's reply has no text content (got {})",
            content.get("type").and_then(Value::as_str).unwrap_or("nothing")
        ))),
    }
}

impl Sampler for McpSampler {
    fn sample(
        &self,
        request: SampleRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<String, SampleError>> {
        let link = self
            .ctx
            .upgrade()
            .and_then(|c| lock(&c.link).as_ref().map(|l| (l.peer.clone(), l.caps.sampling.is_some(), l.round.clone())));
        let mut params = json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": request.prompt}}],
            "maxTokens": request.max_tokens,
            "modelPreferences": {"hints": [{"name": request.model}]},
        });
        if let Some(system) = request.system {
            params["systemPrompt"] = Value::String(system);
        }
        let max_tokens = request.max_tokens;
        Box::pin(async move {
            let Some((peer, can_sample, round)) = link else {
                return Err(SampleError::Unsupported("model sampling: no MCP request is being served".into()));
            };
            if !can_sample {
                return Err(SampleError::Unsupported(
                    "model sampling is not available: the MCP client did not declare the `sampling` capability \
                     (sampling/createMessage)"
                        .into(),
                ));
            }
            if let Some(round) = round {
                let call = crate::runtime::current_call_index();
                let key = match call {
                    Some(i) => format!("sample-{i}"),
                    None => "sample-front".to_string(),
                };
                let digest = hub::digest(&["sample", &params.to_string()]);
                let input = json!({"method": "sampling/createMessage", "params": params});
                return match round.ask(&key, &digest, input, call) {
                    Reply::Answer(v) => sampled_text(v, max_tokens),
                    Reply::Granted => Err(SampleError::Failed("a model sample cannot be granted in advance".into())),
                    // The evaluation stops here; the answer comes with the retry.
                    Reply::Asked if call.is_some() => std::future::pending().await,
                    Reply::Asked => Err(SampleError::Failed("waiting for the client's model sample".into())),
                };
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
            sampled_text(&serde_json::to_value(&result).unwrap_or(Value::Null), max_tokens)
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

/// Answers permission `ask`: through `elicitation/create` (2025-11-25), or
/// as an input request of the round (2026-07-28). Without client support
/// for elicitation the answer is no.
pub(super) struct McpApprover {
    pub(super) ctx: Weak<Ctx>,
}

/// The approval question: a yes/no form.
fn approval_request(tool: &str, input: &Value, reason: &str) -> Value {
    let whole = input.to_string();
    json!({
        "_meta": {
            APPROVAL_INPUT_META: whole,
            "wrepl/tool": tool,
            "wrepl/inputChars": whole.chars().count(),
        },
        "mode": "form",
        "message": approval_message(tool, &whole, reason),
        "requestedSchema": {
            "type": "object",
            "properties": {"approve": {"type": "boolean", "title": "Allow", "description": "Allow this call"}},
            "required": ["approve"]
        }
    })
}

/// Whether an elicitation result says yes.
fn approved(v: &Value) -> bool {
    v.get("action").and_then(Value::as_str) == Some("accept")
        && v.get("content").and_then(|c| c.get("approve")).and_then(Value::as_bool) == Some(true)
}

impl Approver for McpApprover {
    fn approve(&self, tool: &str, input: &Value, reason: &str) -> BoxFuture<'static, bool> {
        let link = self.ctx.upgrade().and_then(|c| {
            lock(&c.link).as_ref().map(|l| (l.peer.clone(), l.caps.elicitation.is_some(), l.round.clone()))
        });
        let params = approval_request(tool, input, reason);
        let digest = hub::digest(&["approve", tool, &input.to_string()]);
        Box::pin(async move {
            let Some((peer, can_elicit, round)) = link else { return false };
            if !can_elicit {
                return false;
            }
            if let Some(round) = round {
                let call = crate::runtime::current_call_index();
                let key = match call {
                    Some(i) => format!("approve-{i}"),
                    None => "approve-front".to_string(),
                };
                let input = json!({"method": "elicitation/create", "params": params});
                return match round.ask(&key, &digest, input, call) {
                    Reply::Answer(v) => {
                        let yes = approved(v);
                        if yes && call.is_none() {
                            round.grant(&key, &digest);
                        }
                        yes
                    }
                    Reply::Granted => true,
                    // The evaluation stops here; the answer comes with the retry.
                    Reply::Asked if call.is_some() => std::future::pending().await,
                    // A front call is refused for now; the request ends with the question.
                    Reply::Asked => false,
                };
            }
            let Ok(params) = serde_json::from_value::<ElicitRequestParams>(params) else { return false };
            let answer = tokio::time::timeout(APPROVAL_TIMEOUT, peer.create_elicitation(params)).await;
            match answer {
                Ok(Ok(r)) => approved(&serde_json::to_value(&r).unwrap_or(Value::Null)),
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
