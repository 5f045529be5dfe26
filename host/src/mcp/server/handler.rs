//! rmcp's `ServerHandler` for wrepl: the server's info, the tools a caller
//! sees, tool calls, the `tools/list_changed` subscription, and answers to
//! requests whose params did not parse.

use super::tool_call::{is_modern, token_of};
use super::*;

impl WreplServer {
    /// The tools this caller sees: `repl` (and `repl_result` in async
    /// mode), then the registered tools of its contexts (a 2025-11-25
    /// connection: its own context's, made now, so that tools restored
    /// from a session are listed at once).
    async fn tool_list(&self, context: &RequestContext<RoleServer>) -> Vec<McpTool> {
        let mut tools = Vec::new();
        if !self.conn.options.repl_enabled {
            return tools;
        }
        let modern = is_modern(context);
        // Async mode needs a session to poll in: 2026-07-28 calls run synchronously.
        let async_mode = self.conn.options.async_mode && !modern;
        let facts = match self.conn.options.builder.dispatcher() {
            Ok(d) => results::DescriptionFacts {
                modern,
                async_mode,
                tools: d.tools().map(|t| t.name().to_string()).collect(),
                rules: d.allow_rules(),
            },
            Err(_) => results::DescriptionFacts { modern, async_mode, ..Default::default() },
        };
        tools.push(if async_mode { results::repl_tool_async(&facts) } else { results::repl_tool(&facts) });
        if async_mode {
            let schema = json!({
                "type": "object",
                "properties": {
                    "eval_id": {"type": "string"},
                    "wait_ms": {"type": "number", "description": "Wait up to this long (max 60000) for it to finish."}
                },
                "required": ["eval_id"],
                "additionalProperties": false
            });
            tools.push(tool_def(
                RESULT_TOOL,
                "Poll an async evaluation started by repl: its status, or its result when done.",
                object_schema(&schema),
            ));
        }
        let Ok(hub) = self.conn.options.hub() else { return tools };
        let registered: Vec<RegisteredTool> = if modern {
            hub.registered_for(token_of(context)).into_iter().map(|(t, _)| t).collect()
        } else {
            let restored = self.conn.options.store.is_some() && lock(&self.conn.name).is_some();
            if restored && self.check_owner(context).is_ok() {
                if let Ok(ctx) = self.conn.default_context() {
                    let mut state = ctx.state.lock().await;
                    if connection::ensure_repl(&self.conn.options, &ctx, &mut state).await.is_ok() {
                        // Listing is no call: give the lease back at once.
                        connection::give_back(hub, &mut state).await;
                    }
                }
            }
            let default = lock(&self.conn.default).clone();
            default.map(|c| lock(&c.registered).clone()).unwrap_or_default()
        };
        for t in registered {
            tools.push(results::registered_tool(&t));
        }
        tools
    }
}

impl ServerHandler for WreplServer {
    fn get_info(&self) -> InitializeResult {
        let caps = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let mut info = InitializeResult::new(caps);
        info.server_info = rmcp::model::Implementation::new("wrepl", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Use the `repl` tool to run JavaScript that calls many tools in one step (see its description).".into(),
        );
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if let Some(cursor) = request.and_then(|r| r.cursor) {
            return Err(McpError::invalid_params(
                format!("invalid cursor {cursor:?}: this server lists every tool on one page"),
                None,
            ));
        }
        self.remember_peer(&context);
        Ok(ListToolsResult::with_all_items(self.tool_list(&context).await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.remember_peer(&context);
        self.call(request, context).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build().intersection(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let hub = self.conn.options.hub().map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let mut changes = hub.tools_changed.subscribe();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                r = changes.recv() => match r {
                    Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        if context.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // A known method whose params did not parse arrives here.
        // (Methods the newest revision removed, such as initialize and
        // ping in a 2026-07-28 request, are not found, as it asks.)
        let known = ["tools/call", "tools/list", "server/discover", "subscriptions/listen"];
        if known.contains(&request.method.as_str()) {
            return Err(McpError::invalid_params(
                format!(
                    "invalid params for {}: {}",
                    request.method,
                    match request.method.as_str() {
                        "tools/call" => "`name` must be a string and `arguments`, when given, an object",
                        _ => "they do not have the shape the protocol gives",
                    }
                ),
                None,
            ));
        }
        Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {}", request.method),
            None,
        ))
    }
}
