//! One MCP connection's state: its contexts (a [`ContextManager`] whose
//! main context records into the connection's session), progress routing
//! to the outer call's token, the async-mode queue and its worker, and the
//! evaluation of the model's `repl` and registered-tool calls.

use super::*;

/// Where the current outer call's progress goes.
pub(super) struct ProgressTarget {
    pub(super) peer: Peer<RoleServer>,
    pub(super) token: ProgressToken,
    pub(super) count: u64,
}

/// One async evaluation.
#[derive(Debug, Clone)]
pub(super) enum AsyncState {
    Queued,
    Running,
    Done(Box<Value>),
}

#[derive(Default)]
pub(super) struct AsyncBook {
    pub(super) next: u64,
    /// Queued or running ids, in order.
    pub(super) active: VecDeque<String>,
    pub(super) states: HashMap<String, AsyncState>,
    pub(super) finished: VecDeque<String>,
}

pub(super) struct ConnState {
    /// The connection's contexts (built on first use, once the session name
    /// is settled); the model's calls go to the main one.
    pub(super) contexts: Option<ContextManager>,
}

/// One MCP connection's state.
pub(super) struct Connection {
    pub(super) options: Arc<ServerOptions>,
    /// The session this connection records under; chosen (from `?session=`
    /// over HTTP) until the context is built.
    pub(super) name: Mutex<String>,
    /// True once `name` is claimed in `options.live_sessions`.
    pub(super) claimed: Mutex<bool>,
    /// Over authenticated HTTP: the token the connection was first used
    /// with; every later request must carry the same one.
    pub(super) principal: Mutex<Option<Fingerprint>>,
    pub(super) peer: Mutex<Option<Peer<RoleServer>>>,
    pub(super) progress: Mutex<Option<ProgressTarget>>,
    pub(super) progress_tx: tokio::sync::mpsc::UnboundedSender<(Peer<RoleServer>, ProgressNotificationParam)>,
    pub(super) state: tokio::sync::Mutex<ConnState>,
    pub(super) registered: Mutex<Vec<RegisteredTool>>,
    pub(super) book: Mutex<AsyncBook>,
    pub(super) queue: tokio::sync::mpsc::UnboundedSender<(String, String, Option<Duration>)>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Drop for Connection {
    fn drop(&mut self) {
        if *lock(&self.claimed) {
            let name = lock(&self.name).clone();
            lock(&self.options.live_sessions).remove(&name);
        }
    }
}

/// Runs a connection's async evaluations one after another.
pub(super) async fn async_worker(
    conn: Weak<Connection>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(String, String, Option<Duration>)>,
) {
    while let Some((id, code, timeout)) = rx.recv().await {
        let Some(c) = conn.upgrade() else { return };
        if let Some(s) = lock(&c.book).states.get_mut(&id) {
            *s = AsyncState::Running;
        }
        let opts = EvalOptions { timeout, ..EvalOptions::default() };
        let (value, failed) = match c.run_repl(&code, opts, None).await {
            Ok(out) => {
                let failed = out.is_error == Some(true);
                (json!({"eval_id": id, "status": "done", "is_error": failed, "result": to_value(&out)}), failed)
            }
            Err(e) => (json!({"eval_id": id, "status": "done", "is_error": true, "error": e.to_string()}), true),
        };
        {
            let mut book = lock(&c.book);
            book.active.retain(|x| x != &id);
            book.states.insert(id.clone(), AsyncState::Done(Box::new(value)));
            book.finished.push_back(id.clone());
            while book.finished.len() > MAX_FINISHED_EVALS {
                if let Some(old) = book.finished.pop_front() {
                    book.states.remove(&old);
                }
            }
        }
        let peer = lock(&c.peer).clone();
        if let Some(peer) = peer {
            let n = rmcp::model::CustomNotification::new(
                EVAL_NOTIFICATION,
                Some(json!({"eval_id": id, "status": "done", "is_error": failed})),
            );
            let _ = peer.send_notification(ServerNotification::CustomNotification(n)).await;
        }
        c.announce_tool_changes().await;
    }
}

impl Connection {
    /// This connection's main context, built on first use (resuming its
    /// session when one is stored); the restore report comes with the
    /// evaluation that built it.
    pub(super) async fn ensure_repl<'a>(
        self: &Arc<Self>,
        state: &'a mut ConnState,
    ) -> Result<(&'a mut Repl, Option<RestoreReport>), ReplError> {
        if state.contexts.is_none() {
            let name = lock(&self.name).clone();
            if !*lock(&self.claimed) {
                if !lock(&self.options.live_sessions).insert(name.clone()) {
                    return Err(ReplError::SessionBusy(name));
                }
                *lock(&self.claimed) = true;
            }
            let me = Arc::downgrade(self);
            let sink_conn = Arc::downgrade(self);
            let events: EventSink = Arc::new(move |e: &ProgressEvent| {
                if let Some(c) = sink_conn.upgrade() {
                    c.progress_event(e);
                }
            });
            let template = self
                .options
                .builder
                .clone()
                .sampler(Arc::new(McpSampler { conn: me.clone() }))
                .approver(Arc::new(McpApprover { conn: me }))
                .events(events)
                .session_id(name.clone());
            state.contexts = Some(ContextManager::named(template, self.options.store.clone(), name));
        }
        let contexts = state.contexts.as_mut().expect("built above");
        let (repl, status) = contexts.get(MAIN, MAIN, Hydration::Resume).await?;
        let restore = match status {
            ContextStatus::Built { .. } => {
                *lock(&self.registered) = repl.registered_tools();
                repl.restore_report().cloned()
            }
            ContextStatus::Reused => None,
        };
        Ok((repl, restore))
    }

    pub(super) fn progress_event(&self, e: &ProgressEvent) {
        let mut target = lock(&self.progress);
        let Some(t) = target.as_mut() else { return };
        t.count += 1;
        let what = match e.phase {
            Phase::Start => "start".to_string(),
            Phase::Executing => "executing".to_string(),
            Phase::Progress => match e.progress {
                Some((p, Some(total))) => format!("progress {p}/{total}"),
                Some((p, None)) => format!("progress {p}"),
                None => "progress".to_string(),
            },
            Phase::Complete => format!("complete in {:.0} ms", e.elapsed_ms),
            Phase::Error => format!("error: {}", e.message.as_deref().unwrap_or("")),
        };
        let mut message = format!("{} {} {what}", e.tool, e.tool_use_id);
        if e.phase == Phase::Progress {
            if let Some(m) = &e.message {
                message.push_str(": ");
                message.push_str(m);
            }
        }
        let param = json!({"progressToken": t.token, "progress": t.count, "message": message});
        if let Ok(param) = serde_json::from_value::<ProgressNotificationParam>(param) {
            let _ = self.progress_tx.send((t.peer.clone(), param));
        }
    }

    /// The model's call of the `repl` tool: admitted by the pipeline like
    /// any call (a deny rule or a PreToolUse hook on `repl` stops it; a hook
    /// may rewrite the code), evaluated, and settled (PostToolUse hooks on
    /// `repl` see the structured result; one that blocks withholds it).
    /// Progress goes to `progress` (set once the context is ours, so
    /// concurrent calls do not mix tokens).
    pub(super) async fn run_repl(
        self: &Arc<Self>,
        code: &str,
        opts: EvalOptions,
        progress: Option<ProgressTarget>,
    ) -> Result<CallToolResult, ReplError> {
        let mut state = self.state.lock().await;
        *lock(&self.progress) = progress;
        let text_cap = self.options.text_cap();
        let outcome = async {
            let (repl, restore) = self.ensure_repl(&mut state).await?;
            let dispatcher = repl.dispatcher().clone();
            let call = FrontCall {
                tool: REPL_TOOL.into(),
                input: json!({"code": code}),
                schema: Value::Object(repl_schema()),
                default: FrontDefault::Allow,
            };
            let admission = match dispatcher.admit(call).await {
                Ok(a) => a,
                Err(refusal) => return Ok(input_error(format!("wrepl: {}", refusal.failure.message))),
            };
            let code = admission.input()["code"].as_str().unwrap_or_default().to_string();
            let mut r = match repl.eval(&code, opts).await {
                Ok(r) => r,
                Err(e) => {
                    // The call still ends in the pipeline (its error event and hooks).
                    dispatcher.settle(admission, Err(e.to_string())).await;
                    return Err(e);
                }
            };
            for w in &admission.warnings {
                r.stderr.push_str(&format!("[wrepl] {w}\n"));
            }
            let new_tools = new_definitions(repl, &r);
            let settled = Settled { result: r, restore, new_tools };
            let out = outer_result(&code, &settled, text_cap);
            let response = out.structured_content.clone().unwrap_or(Value::Null);
            let text = out.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<String>();
            let verdict = if settled.result.failed() { Err(text) } else { Ok((response, text)) };
            let settlement = dispatcher.settle(admission, verdict).await;
            for w in &settlement.warnings {
                // After the result was assembled: the server's log (stderr).
                eprintln!("wrepl: {w}");
            }
            Ok(match settlement.blocked {
                Some(reason) => {
                    input_error(format!("the result of {REPL_TOOL} was withheld by a PostToolUse hook: {reason}"))
                }
                None => out,
            })
        }
        .await;
        *lock(&self.progress) = None;
        outcome
    }

    /// Run a registered tool for the model.
    pub(super) async fn run_registered(
        self: &Arc<Self>,
        name: &str,
        input: Value,
        opts: EvalOptions,
    ) -> Result<Settled, ReplError> {
        let mut state = self.state.lock().await;
        let (repl, restore) = self.ensure_repl(&mut state).await?;
        let r = repl.call_registered(name, input, opts).await?;
        let defs = new_definitions(repl, &r);
        Ok(Settled { result: r, restore, new_tools: defs })
    }

    /// Tell the client when the registered tools changed.
    pub(super) async fn announce_tool_changes(self: &Arc<Self>) {
        let now = {
            let state = self.state.lock().await;
            state.contexts.as_ref().and_then(|c| c.live(MAIN)).map(|r| r.registered_tools()).unwrap_or_default()
        };
        let changed = {
            let mut seen = lock(&self.registered);
            let same = seen.len() == now.len()
                && seen.iter().zip(&now).all(|(a, b)| {
                    a.name == b.name && a.description == b.description && a.input_schema == b.input_schema
                });
            if !same {
                *seen = now.clone();
            }
            !same
        };
        if changed {
            let peer = lock(&self.peer).clone();
            if let Some(peer) = peer {
                let _ = peer.notify_tool_list_changed().await;
            }
        }
    }
}
