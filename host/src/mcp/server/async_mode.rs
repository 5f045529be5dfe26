//! Async mode: `repl` queues an evaluation and returns its id at once;
//! `repl_result` polls for its status or result.

use super::*;

impl WreplServer {
    pub(super) fn enqueue(&self, code: String, timeout: Duration) -> CallToolResult {
        let id = {
            let mut book = lock(&self.conn.book);
            if book.active.len() >= MAX_ASYNC_EVALS {
                return input_error(format!(
                    "async queue full: {MAX_ASYNC_EVALS} evaluations are already queued or running in this context; \
                     poll {RESULT_TOOL} and try again when one has finished"
                ));
            }
            book.next += 1;
            let id = format!("eval-{}", book.next);
            book.active.push_back(id.clone());
            book.states.insert(id.clone(), AsyncState::Queued);
            id
        };
        if self.conn.queue.send((id.clone(), code, Some(timeout))).is_err() {
            return input_error("wrepl: the async evaluation worker has stopped");
        }
        let position = lock(&self.conn.book).active.len();
        let v = json!({"eval_id": id, "status": "queued", "position": position});
        let mut r = CallToolResult::success(vec![Content::text(format!(
            "queued as {id}; poll {RESULT_TOOL} with {{\"eval_id\": \"{id}\"}} or wait for {EVAL_NOTIFICATION}"
        ))]);
        r.structured_content = Some(v);
        r
    }

    pub(super) async fn poll(&self, args: JsonObject) -> CallToolResult {
        let Some(id) = args.get("eval_id").and_then(Value::as_str) else {
            return input_error("invalid input: `eval_id` is required");
        };
        let wait = args.get("wait_ms").and_then(Value::as_f64).unwrap_or(0.0).clamp(0.0, 60_000.0);
        let deadline = tokio::time::Instant::now() + Duration::from_millis(wait as u64);
        loop {
            let state = lock(&self.conn.book).states.get(id).cloned();
            match state {
                None => {
                    return input_error(format!(
                    "unknown eval id {id:?} (finished results are kept for the last {MAX_FINISHED_EVALS} evaluations)"
                ))
                }
                Some(AsyncState::Done(v)) => {
                    let failed = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    let mut r = match v.get("result").cloned().map(serde_json::from_value::<CallToolResult>) {
                        Some(Ok(r)) => r,
                        _ => input_error(
                            v.get("error").and_then(Value::as_str).unwrap_or("evaluation failed").to_string(),
                        ),
                    };
                    if failed {
                        r.is_error = Some(true);
                    }
                    return r;
                }
                Some(s) if tokio::time::Instant::now() >= deadline => {
                    let status = if matches!(s, AsyncState::Queued) { "queued" } else { "running" };
                    let mut r = CallToolResult::success(vec![Content::text(format!("{id} is {status}"))]);
                    r.structured_content = Some(json!({"eval_id": id, "status": status}));
                    return r;
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
}
