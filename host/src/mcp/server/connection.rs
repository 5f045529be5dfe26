//! One MCP connection (a 2025-11-25 session, or one stateless 2026-07-28
//! request): its token, its default context, the async-mode queue and its
//! worker; and the evaluation of a `repl` or registered-tool call in a
//! context, with progress routed to the outer call's token and questions
//! routed to the client (live) or into the request's [`Round`] (MRTR).

use super::hub::{self, Ctx, Hub, Link, Pending, Round};
use super::*;

/// How long a call waits for a context another server is serving (on a
/// shared store) before it is refused as busy.
pub(super) const SHARED_LEASE_WAIT: Duration = Duration::from_secs(30);

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

/// One MCP connection's state.
pub(super) struct Connection {
    pub(super) options: Arc<ServerOptions>,
    /// The session its default context records under, when one is named
    /// (`--session`, or `?session=` over HTTP until the context is made).
    pub(super) name: Mutex<Option<String>>,
    /// Over authenticated HTTP: the token the connection was first used
    /// with; every later request must carry the same one.
    pub(super) principal: Mutex<Option<Fingerprint>>,
    /// The connection's own context (2025-11-25 clients that name none).
    pub(super) default: Mutex<Option<Arc<Ctx>>>,
    pub(super) peer: Mutex<Option<Peer<RoleServer>>>,
    pub(super) book: Mutex<AsyncBook>,
    pub(super) queue: tokio::sync::mpsc::UnboundedSender<(String, String, Option<Duration>)>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Drop for Connection {
    /// The connection's own context ends with it (a recorded one can come
    /// back by replay, in a store that keeps it).
    fn drop(&mut self) {
        let default = lock(&self.default).take();
        if let (Some(ctx), Ok(hub)) = (default, self.options.hub()) {
            hub.forget(ctx);
        }
    }
}

/// Runs a connection's async evaluations one after another, in its
/// default context.
pub(super) async fn async_worker(
    conn: Weak<Connection>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(String, String, Option<Duration>)>,
) {
    while let Some((id, code, timeout)) = rx.recv().await {
        let Some(c) = conn.upgrade() else { return };
        if let Some(s) = lock(&c.book).states.get_mut(&id) {
            *s = AsyncState::Running;
        }
        let peer = lock(&c.peer).clone();
        let outcome = match (c.default_context(), peer) {
            (Ok(ctx), Some(peer)) => {
                let link = Link { peer, caps: Default::default(), round: None, progress: None };
                let opts = EvalOptions { timeout, ..EvalOptions::default() };
                let call = Call::Repl { code: code.clone() };
                serve_call(&c.options, &ctx, call, opts, link, None).await.map_err(|e| e.to_string())
            }
            (Err(e), _) => Err(e),
            (_, None) => Err("the MCP connection is gone".into()),
        };
        let (value, failed) = match outcome {
            Ok(Served::Done(out)) => {
                let failed = out.is_error == Some(true);
                (json!({"eval_id": id, "status": "done", "is_error": failed, "result": to_value(&out)}), failed)
            }
            Ok(Served::Input(_)) => (
                json!({"eval_id": id, "status": "done", "is_error": true,
                       "error": "the evaluation needs the client's input, which async mode cannot ask for"}),
                true,
            ),
            Err(e) => (json!({"eval_id": id, "status": "done", "is_error": true, "error": e}), true),
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
    }
}

impl Connection {
    /// The connection's own context, made on first use (named after its
    /// session when one was chosen).
    pub(super) fn default_context(&self) -> Result<Arc<Ctx>, String> {
        let mut d = lock(&self.default);
        if let Some(c) = d.as_ref() {
            return Ok(c.clone());
        }
        let hub = self.options.hub().map_err(|e| e.to_string())?;
        let owner = *lock(&self.principal);
        let name = lock(&self.name).clone();
        let ctx = hub.mint(owner, name)?;
        *d = Some(ctx.clone());
        Ok(ctx)
    }
}

/// What a call asks of a context.
pub(super) enum Call {
    /// The model's `repl` call.
    Repl {
        /// The code.
        code: String,
    },
    /// The model's call of a registered tool.
    Registered {
        /// The tool's name (without the prefix).
        name: String,
        /// Its input.
        input: Value,
    },
}

/// How a call ended.
pub(super) enum Served {
    /// With a result.
    Done(CallToolResult),
    /// Waiting for the client's answers (2026-07-28).
    Input(Box<rmcp::model::InputRequiredResult>),
}

/// A retry of a call that asked for input: its verified state and the
/// client's answers.
pub(super) struct Retry {
    pub(super) pending: Pending,
    pub(super) answers: std::collections::BTreeMap<String, Value>,
    /// The call's name and digest of its arguments, as the retry sent them.
    pub(super) tool: String,
    pub(super) args: String,
}

/// The call's own tool name and arguments digest, kept for the state of
/// a round that ends waiting for input.
pub(super) struct CallId {
    pub(super) tool: String,
    pub(super) args: String,
    pub(super) owner: Option<Fingerprint>,
}

/// Evaluate `call` in `ctx` for the request `link`. With a round in the
/// link (a client speaking 2026-07-28), a question without an answer ends
/// the call as `input_required`; `retry` continues such a call.
pub(super) async fn serve_call(
    options: &Arc<ServerOptions>,
    ctx: &Arc<Ctx>,
    call: Call,
    mut opts: EvalOptions,
    link: Link,
    mrtr: Option<(CallId, Option<Retry>)>,
) -> Result<Served, ReplError> {
    let hub = options.hub().map_err(|e| ReplError::InvalidInput(e.to_string()))?;
    let mut state = ctx.state.lock().await;
    let round = link.round.clone();
    if let Some(round) = &round {
        *lock(&round.cancel) = Some(opts.cancel.clone());
        opts.waiting = Some(round.waiting.clone());
    }
    if let Some((id, Some(retry))) = &mrtr {
        check_retry(hub, ctx, id, retry)?;
        if let Some(block) = retry.pending.block {
            // The context must be as the block found it: rebuilt from the
            // log, which skips the suspended block.
            if let Some(m) = state.as_mut() {
                m.remove(MAIN);
            }
            opts.continues = Some(crate::repl::Resumption { block, waiting: retry.pending.waiting.clone() });
        }
    }
    reclaim(hub, ctx, &mut state).await?;
    *lock(&ctx.link) = Some(link);
    let outcome = run_call(options, ctx, &mut state, call, opts).await;
    let served = match outcome {
        Ok(done) => match (&round, mrtr) {
            (Some(round), Some((id, retry))) if round.needs_input() => {
                let repl = ensure_repl(options, ctx, &mut state).await?;
                let r = input_required(hub, ctx, repl, round, id, retry.map(|r| r.pending));
                // The live context ran part of a block that will be
                // continued from the log: drop it (and its lease), so the
                // answer can come to any server sharing the store.
                if let Some(m) = state.as_mut() {
                    m.remove(MAIN);
                }
                r.map(|r| Served::Input(Box::new(r)))
            }
            _ => Ok(Served::Done(done)),
        },
        Err(e) => Err(e),
    };
    let link = lock(&ctx.link).take();
    let tools_now = state.as_ref().and_then(|c| c.live(MAIN)).map(|r| r.registered_tools());
    give_back(hub, &mut state).await;
    let memory = state.as_ref().map_or(0, |m| m.memory_bytes());
    ctx.memory.store(memory, std::sync::atomic::Ordering::Relaxed);
    drop(state);
    // This context grew: others may have to make room (it stays: it is
    // in use until the caller lets go of it).
    hub.evict();
    ctx.flush_progress().await;
    if let Some(now) = tools_now {
        if announce(hub, ctx, now) {
            // A client with a session hears it on that session too.
            if let Some(l) = link.filter(|l| l.round.is_none()) {
                let _ = l.peer.notify_tool_list_changed().await;
            }
        }
    }
    served
}

/// On a shared store, a warm context whose lease was given back takes it
/// again (waiting for another server that holds it), and is dropped to be
/// rebuilt from the log when another server wrote since. Elsewhere nothing.
pub(super) async fn reclaim(hub: &Hub, ctx: &Ctx, state: &mut Option<ContextManager>) -> Result<(), ReplError> {
    if !hub.store.shared() {
        return Ok(());
    }
    let Some(m) = state.as_mut() else { return Ok(()) };
    let Some(repl) = m.live_mut(MAIN) else { return Ok(()) };
    if !repl.reacquire_lease(Some(SHARED_LEASE_WAIT)).await? {
        m.remove(MAIN);
        ctx.released.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    Ok(())
}

/// On a shared store, give the live context's lease back so that another
/// server may continue it next, keeping the context warm (a context whose
/// lease cannot be given back cleanly is dropped). Elsewhere nothing.
pub(super) async fn give_back(hub: &Hub, state: &mut Option<ContextManager>) {
    if !hub.store.shared() {
        return;
    }
    if let Some(m) = state.as_mut() {
        // The next call may be served elsewhere: a snapshot first when the
        // blocks since the newest one would take longer to replay there
        // than the session allows (a failure only costs replay).
        if let Some(r) = m.live_mut(MAIN) {
            let _ = r.snapshot_if_worth().await;
        }
        if let Some(Err(_)) = m.live_mut(MAIN).map(|r| r.release_lease()) {
            m.remove(MAIN);
        }
    }
}

/// A retry must come from the same call, for the same context, with the
/// log where the round left it (so each state is used once).
fn check_retry(hub: &Hub, ctx: &Ctx, id: &CallId, retry: &Retry) -> Result<(), ReplError> {
    let p = &retry.pending;
    let bad = |m: String| Err(ReplError::InvalidInput(m));
    if p.ctx != ctx.id {
        return bad("the requestState belongs to another context".into());
    }
    if p.tool != id.tool || p.args != id.args || retry.tool != id.tool || retry.args != id.args {
        return bad(format!(
            "the requestState was issued for another call: a retry repeats the call's name ({}) and arguments \
             exactly",
            p.tool
        ));
    }
    let head = hub.store.head(&ctx.id)?.map(|h| h.hash).unwrap_or_default();
    if head != p.head {
        return bad(
            "the requestState is stale: it was already used, or the context has run other calls since; call the \
             tool again without it"
                .into(),
        );
    }
    Ok(())
}

/// The `input_required` result of a round that ended with questions.
fn input_required(
    hub: &Hub,
    ctx: &Ctx,
    repl: &Repl,
    round: &Round,
    id: CallId,
    previous: Option<Pending>,
) -> Result<rmcp::model::InputRequiredResult, ReplError> {
    let needed = lock(&round.needed).clone();
    let waiting: Vec<u32> = lock(&round.waiting).iter().copied().collect();
    let mut granted = previous.map(|p| p.granted).unwrap_or_default();
    granted.extend(lock(&round.granted_now).clone());
    let pending = Pending {
        v: 1,
        ctx: ctx.id.clone(),
        tool: id.tool,
        args: id.args,
        head: hub.store.head(&ctx.id)?.map(|h| h.hash).unwrap_or_default(),
        block: if waiting.is_empty() { None } else { repl.last_block() },
        waiting,
        asked: needed.iter().map(|(k, (_, d))| (k.clone(), d.clone())).collect(),
        granted,
    };
    let sealed = hub.seal_pending(&pending, id.owner).map_err(ReplError::InvalidInput)?;
    let mut requests = rmcp::model::InputRequests::new();
    for (key, (request, _)) in needed {
        let r = serde_json::from_value(request)
            .map_err(|e| ReplError::InvalidInput(format!("cannot build the input request {key}: {e}")))?;
        requests.insert(key, r);
    }
    Ok(rmcp::model::InputRequiredResult::new(Some(requests), Some(sealed)))
}

/// Tell listeners when a context's registered tools changed; true when
/// they did.
pub(super) fn announce(hub: &Hub, ctx: &Ctx, now: Vec<RegisteredTool>) -> bool {
    let changed = {
        let mut seen = lock(&ctx.registered);
        let same = seen.len() == now.len()
            && seen
                .iter()
                .zip(&now)
                .all(|(a, b)| a.name == b.name && a.description == b.description && a.input_schema == b.input_schema);
        if !same {
            *seen = now;
        }
        !same
    };
    if changed {
        let _ = hub.tools_changed.send(());
    }
    changed
}

/// The context's main REPL, built on first use (resuming its session from
/// the store); what resuming found waits in `ctx.restored` for the first
/// evaluation to report it.
pub(super) async fn ensure_repl<'a>(
    options: &Arc<ServerOptions>,
    ctx: &Arc<Ctx>,
    state: &'a mut Option<ContextManager>,
) -> Result<&'a mut Repl, ReplError> {
    let hub = options.hub().map_err(|e| ReplError::InvalidInput(e.to_string()))?;
    if state.is_none() {
        let me = Arc::downgrade(ctx);
        let sink_ctx = Arc::downgrade(ctx);
        let metrics = options.metrics.clone();
        let events: EventSink = Arc::new(move |e: &ProgressEvent| {
            let front = e.tool == REPL_TOOL || e.tool.starts_with(REGISTERED_PREFIX);
            match e.phase {
                Phase::Complete if !front => metrics.call(&e.tool, "ok", e.elapsed_ms / 1e3),
                Phase::Error if !front => metrics.call(&e.tool, e.failure.unwrap_or("failed"), e.elapsed_ms / 1e3),
                _ => {}
            }
            if let Some(c) = sink_ctx.upgrade() {
                progress_event(&c, e);
            }
        });
        let template = options
            .builder
            .clone()
            .sampler(Arc::new(McpSampler { ctx: me.clone() }))
            .approver(Arc::new(McpApprover { ctx: me }))
            .events(events)
            .session_id(ctx.id.clone());
        // On a shared store another server may be serving this context
        // right now: wait for it a little (calls are short) before saying busy.
        let wait = hub.store.shared().then_some(SHARED_LEASE_WAIT);
        *state = Some(ContextManager::named(template, Some(hub.store.clone()), ctx.id.clone()).lease_wait(wait));
    }
    let contexts = state.as_mut().expect("built above");
    let boundary = lock(&ctx.boundary).clone();
    let (repl, status) = contexts.get(MAIN, &boundary, Hydration::Resume).await?;
    if let ContextStatus::Built { .. } = status {
        if let Some(r) = repl.restore_report().filter(|r| !r.blocks.is_empty() || !r.notes.is_empty()) {
            options.metrics.replay(r.notes.iter().any(|n| n.starts_with("took the session over")));
        }
        if repl.restore_report().is_some_and(|r| r.snapshot.is_some()) {
            options.metrics.snapshot_resume();
        }
        let tools = repl.registered_tools();
        let restored = !tools.is_empty();
        *lock(&ctx.registered) = tools;
        if restored {
            // Tools came back with the session: listeners hear of them now.
            let _ = hub.tools_changed.send(());
        }
        *lock(&ctx.restored) = repl.restore_report().cloned();
    }
    Ok(repl)
}

fn progress_event(ctx: &Ctx, e: &ProgressEvent) {
    let mut link = lock(&ctx.link);
    let Some(t) = link.as_mut().and_then(|l| l.progress.as_mut()) else { return };
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
        let _ = ctx.progress_tx.send(hub::Progress::Note(t.peer.clone(), param));
    }
}

/// Run `call` in the context (under its lock, held by the caller).
async fn run_call(
    options: &Arc<ServerOptions>,
    ctx: &Arc<Ctx>,
    state: &mut Option<ContextManager>,
    call: Call,
    opts: EvalOptions,
) -> Result<CallToolResult, ReplError> {
    let text_cap = options.text_cap();
    let repl = ensure_repl(options, ctx, state).await?;
    // A continuation's rebuild is part of the round, not news for the model.
    // Routine rebuilds are no news for the model: after this server gave
    // the context back, and any clean one on a shared store (where any
    // server may serve any call). A rebuild that found drift, unknown
    // outcomes or notes is always reported.
    let released = ctx.released.swap(false, std::sync::atomic::Ordering::SeqCst);
    let shared = options.hub().is_ok_and(|h| h.store.shared());
    let restore = lock(&ctx.restored).take().filter(|r| {
        let clean = r.notes.is_empty()
            && r.blocks
                .iter()
                .all(|b| b.verdict != crate::replay::player::Verdict::Drift && b.outcome_unknown.is_empty());
        opts.continues.is_none() && !released && !(shared && clean)
    });
    // The handle's text line is for clients that name contexts by handle
    // (2026-07-28); a 2025-11-25 connection continues its own context.
    let line = lock(&ctx.link).as_ref().is_some_and(|l| l.round.is_some());
    match call {
        Call::Repl { code } => run_repl(repl, restore, &code, opts, text_cap, (&ctx.handle, line)).await,
        Call::Registered { name, input } => {
            // A registered tool always asks first: over multi round-trip
            // requests the call stops for the answer, and its retry rebuilds
            // the context as it was before the call. A snapshot of that
            // state now lets the retry load it instead of replaying.
            let rounds = lock(&ctx.link).as_ref().is_some_and(|l| l.round.is_some());
            if rounds && opts.continues.is_none() {
                let _ = repl.snapshot_now().await;
            }
            let r = repl.call_registered(&name, input, opts).await?;
            let defs = new_definitions(repl, &r);
            let settled = Settled { result: r, restore, new_tools: defs };
            let mut out = outer_result(&format!("{REGISTERED_PREFIX}{name}"), &settled, text_cap);
            attach_handle(&mut out, &ctx.handle, line);
            Ok(out)
        }
    }
}

/// The model's call of the `repl` tool: admitted by the pipeline like any
/// call (a deny rule or a PreToolUse hook on `repl` stops it; a hook may
/// rewrite the code), evaluated, and settled (PostToolUse hooks on `repl`
/// see the structured result; one that blocks withholds it).
async fn run_repl(
    repl: &mut Repl,
    restore: Option<RestoreReport>,
    code: &str,
    opts: EvalOptions,
    text_cap: usize,
    (handle, line): (&str, bool),
) -> Result<CallToolResult, ReplError> {
    let dispatcher = repl.dispatcher().clone();
    let call = FrontCall {
        tool: REPL_TOOL.into(),
        input: json!({"code": code}),
        schema: Value::Object(repl_schema()),
        default: FrontDefault::Allow,
        trace: None,
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
    let mut out = outer_result(&code, &settled, text_cap);
    attach_handle(&mut out, handle, line);
    let response = out.structured_content.clone().unwrap_or(Value::Null);
    let text = out.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<String>();
    let verdict = if settled.result.failed() { Err(text) } else { Ok((response, text)) };
    let settlement = dispatcher.settle(admission, verdict).await;
    for w in &settlement.warnings {
        // After the result was assembled: the server's log (stderr).
        eprintln!("wrepl: {w}");
    }
    Ok(match settlement.blocked {
        Some(reason) => input_error(format!("the result of {REPL_TOOL} was withheld by a PostToolUse hook: {reason}")),
        None => out,
    })
}

/// Name the context in a result: `context` in `structuredContent`, and,
/// with `line` (a client that names contexts by handle), a last text line
/// the model can copy.
pub(super) fn attach_handle(out: &mut CallToolResult, handle: &str, line: bool) {
    if let Some(Value::Object(m)) = out.structured_content.as_mut() {
        m.insert("context".into(), Value::String(handle.to_string()));
    }
    if !line {
        return;
    }
    let line = format!("\n[context: {handle}]");
    match out.content.first_mut().and_then(|c| c.as_text().map(|t| t.text.clone())) {
        Some(text) => {
            out.content[0] = Content::text(format!("{text}{line}"));
        }
        None => out.content.insert(0, Content::text(line.trim_start().to_string())),
    }
}
