//! A tool call: the session and the owner it runs for, the context it runs
//! in (named by a handle, a retry's request state, or the connection), and
//! the evaluation itself, with its progress, cancellation and metrics.

use super::*;

/// A cancel token for an evaluation, triggered when the request is
/// cancelled; abort the returned task when done.
fn cancel_on(context: &RequestContext<RoleServer>) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let (ct, c) = (context.ct.clone(), cancel.clone());
    let watcher = tokio::spawn(async move {
        ct.cancelled().await;
        c.cancel();
    });
    (cancel, watcher)
}

/// True when the request speaks a revision without an initialize
/// handshake (2026-07-28 or later): stateless, questions through MRTR.
pub(super) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// The bearer token of an authenticated HTTP request.
pub(super) fn token_of(context: &RequestContext<RoleServer>) -> Option<Fingerprint> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<http::Authenticated>())
        .map(|a| a.0)
}

/// Digest of a call's arguments (a retry must repeat them).
fn args_digest(args: &JsonObject) -> String {
    hub::digest(&[&Value::Object(args.clone()).to_string()])
}

impl WreplServer {
    pub(super) fn remember_peer(&self, context: &RequestContext<RoleServer>) {
        let mut p = lock(&self.conn.peer);
        if p.is_none() {
            *p = Some(context.peer.clone());
        }
    }

    /// Over HTTP, `/mcp?session=NAME` picks the session the connection's
    /// own context resumes and records into (needs a store). Read until
    /// the context is made.
    fn choose_session(&self, context: &RequestContext<RoleServer>) -> Result<(), String> {
        let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else { return Ok(()) };
        let Some(query) = parts.uri.query() else { return Ok(()) };
        let Some(wanted) = query.split('&').find_map(|kv| kv.strip_prefix("session=")) else { return Ok(()) };
        if crate::replay::store::validate_session_name(wanted).is_err() {
            return Err(format!("invalid session name {wanted:?}: use 1-128 characters of [A-Za-z0-9._-]"));
        }
        if self.conn.options.store.is_none() {
            return Err("?session= needs a session store: start wrepl serve with --store FILE".into());
        }
        if let Some(current) = lock(&self.conn.default).as_ref().map(|c| c.id.clone()) {
            return if current == wanted {
                Ok(())
            } else {
                Err(format!("this connection already records session {current:?}"))
            };
        }
        *lock(&self.conn.name) = Some(wanted.to_string());
        Ok(())
    }

    /// Over authenticated HTTP, the token of the request: every request of
    /// a connection must carry the same one (the middleware sees to it),
    /// and a named session the connection records into must be that token's.
    pub(super) fn check_owner(&self, context: &RequestContext<RoleServer>) -> Result<Option<Fingerprint>, String> {
        let who = token_of(context);
        let mut principal = lock(&self.conn.principal);
        match (*principal, who) {
            (None, None) => return Ok(None),
            (None, Some(w)) => *principal = Some(w),
            (Some(p), Some(w)) if p == w => {}
            _ => return Err("this MCP connection belongs to another token".into()),
        }
        drop(principal);
        let Some(who) = who else { return Ok(None) };
        if lock(&self.conn.default).is_none() {
            if let Some(name) = lock(&self.conn.name).clone() {
                self.conn.options.claim_session(&name, who)?;
            }
        }
        Ok(Some(who))
    }

    /// The context a call runs in: the one its `context` handle names; for
    /// a retry, the one its request state names; else the connection's own
    /// (2025-11-25) or a fresh one (2026-07-28). A registered tool named
    /// without a handle runs in the context that registered it; when
    /// several of the caller's contexts registered that name, the call must
    /// name one (a tool never runs in a context the caller did not mean).
    fn context_for(
        &self,
        handle: Option<&str>,
        pending: Option<&hub::Pending>,
        registered: Option<&str>,
        owner: Option<Fingerprint>,
        modern: bool,
    ) -> Result<Arc<hub::Ctx>, String> {
        let hub = self.conn.options.hub().map_err(|e| e.to_string())?;
        if let Some(h) = handle {
            return hub.resolve(h, owner);
        }
        if let Some(p) = pending {
            return hub.by_id(&p.ctx, owner);
        }
        if !modern {
            return self.conn.default_context();
        }
        if let Some(name) = registered {
            let mut holders = hub.contexts_registering(owner, name);
            return match holders.len() {
                0 => Err(format!("unknown tool {REGISTERED_PREFIX}{name:?}")),
                1 => Ok(holders.remove(0)),
                n => {
                    let handles: Vec<&str> = holders.iter().map(|c| c.handle.as_str()).collect();
                    Err(format!(
                        "{REGISTERED_PREFIX}{name} is registered in {n} of your contexts; name the one to run it in \
                         with its `context` argument: {}",
                        handles.join(", ")
                    ))
                }
            };
        }
        hub.mint(owner, None)
    }

    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let modern = is_modern(&context);
        let owner = if modern {
            token_of(&context)
        } else {
            match self.choose_session(&context).and_then(|()| self.check_owner(&context)) {
                Ok(o) => o,
                Err(e) => return Ok(input_error(e).into()),
            }
        };
        let name = request.name.to_string();
        let mut args = request.arguments.clone().unwrap_or_default();
        let digest = args_digest(&args);
        let handle = match args.remove("context") {
            None | Some(Value::Null) => None,
            Some(Value::String(h)) => Some(h),
            Some(_) => return Ok(input_error("invalid input: `context` must be a string (a context handle)").into()),
        };
        // `fork` is the repl tool's own argument; a registered tool's input
        // may have a property of that name, which stays its own.
        let fork = match (name == REPL_TOOL).then(|| args.remove("fork")).flatten() {
            None | Some(Value::Null) => None,
            Some(Value::String(h)) => Some(h),
            Some(_) => return Ok(input_error("invalid input: `fork` must be a string (a context handle)").into()),
        };
        let enabled = self.conn.options.repl_enabled;
        let registered = name.strip_prefix(REGISTERED_PREFIX).filter(|_| enabled);
        let is_repl = enabled && name == REPL_TOOL;
        if enabled && name == RESULT_TOOL && self.conn.options.async_mode && !modern {
            return Ok(self.poll(args).await.into());
        }
        if !is_repl && registered.is_none() {
            return Err(McpError::invalid_params(format!("unknown tool {name:?}"), None));
        }
        // A retry of a call that asked for input.
        let hub = self.conn.options.hub().map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let retry = match &request.request_state {
            Some(state) if modern => match hub.open_pending(state, owner) {
                Ok(pending) => Some(Retry {
                    pending,
                    answers: request.input_responses.clone().unwrap_or_default().into_iter().collect(),
                    tool: name.clone(),
                    args: digest.clone(),
                }),
                Err(e) => return Ok(input_error(e).into()),
            },
            Some(_) => {
                return Ok(input_error("requestState is only accepted from clients speaking protocol 2026-07-28").into())
            }
            None => None,
        };
        let ctx = match &fork {
            Some(_) if !modern => {
                return Ok(input_error(
                    "invalid input: `fork` takes a context handle, which clients speaking protocol 2026-07-28 get",
                )
                .into())
            }
            Some(_) if handle.is_some() || retry.is_some() => {
                return Ok(input_error(
                    "invalid input: `fork` starts a new context: give it instead of `context`, on a new repl call",
                )
                .into())
            }
            Some(parent) => hub.fork(parent, owner).await,
            None => self.context_for(handle.as_deref(), retry.as_ref().map(|r| &r.pending), registered, owner, modern),
        };
        let ctx = match ctx {
            Ok(c) => c,
            Err(e) => return Ok(input_error(e).into()),
        };
        let call = if is_repl {
            let Some(code) = args.get("code").and_then(Value::as_str).map(str::to_string) else {
                return Ok(input_error("invalid input: `code` (a string of JavaScript) is required").into());
            };
            if let Some(k) =
                args.keys().find(|k| !matches!(k.as_str(), "code" | "description" | "timeout" | "boundary"))
            {
                return Ok(input_error(format!(
                    "invalid input: unknown field {k:?} (expected code, description, timeout, boundary, context, fork)"
                ))
                .into());
            }
            match args.get("boundary") {
                None | Some(Value::Null) => {}
                Some(Value::String(b)) if !b.is_empty() && b.len() <= 128 => *lock(&ctx.boundary) = b.clone(),
                Some(_) => {
                    return Ok(input_error(
                        "invalid input: `boundary` must be a non-empty string of at most 128 characters",
                    )
                    .into())
                }
            }
            if self.conn.options.async_mode && !modern && handle.is_none() {
                let timeout = match Budget::from_json(args.get("timeout")).map_err(ReplError::from) {
                    Ok(t) => t,
                    Err(e) => return Ok(input_error(e.to_string()).into()),
                };
                return Ok(self.enqueue(code, timeout).into());
            }
            Call::Repl { code }
        } else {
            let reg = registered.unwrap_or_default();
            let mut known = lock(&ctx.registered).iter().any(|t| t.name == reg);
            if !known {
                // A context that is not live here yet (another server made
                // it, or it was evicted), or whose warm copy is stale (on a
                // shared store, another server wrote since), comes back by
                // replay, with its tools.
                let mut state = ctx.state.lock().await;
                let rebuilt = match connection::reclaim(hub, &ctx, &mut state).await {
                    Ok(()) => connection::ensure_repl(&self.conn.options, &ctx, &mut state).await.map(|_| ()),
                    Err(e) => Err(e),
                };
                if let Err(e) = rebuilt {
                    return Ok(input_error(format!("wrepl: {e}")).into());
                }
                known = lock(&ctx.registered).iter().any(|t| t.name == reg);
                // The call itself takes the lease again when it runs.
                connection::give_back(hub, &mut state).await;
            }
            if !known {
                return Err(McpError::invalid_params(format!("unknown tool {name:?}"), None));
            }
            Call::Registered { name: reg.to_string(), input: Value::Object(args.clone()) }
        };
        let timeout = match (&call, Budget::from_json(args.get("timeout")).map_err(ReplError::from)) {
            (Call::Repl { .. }, Ok(t)) => Some(t),
            (Call::Repl { .. }, Err(e)) => return Ok(input_error(e.to_string()).into()),
            _ => None,
        };
        let (cancel, watcher) = cancel_on(&context);
        let progress = context.meta.get_progress_token().map(|token| ProgressTarget {
            peer: context.peer.clone(),
            token,
            count: 0,
        });
        let round = modern.then(|| {
            let answers = retry.as_ref().map(|r| r.answers.clone()).unwrap_or_default();
            Arc::new(hub::Round::new(answers, retry.as_ref().map(|r| &r.pending)))
        });
        let link = hub::Link {
            peer: context.peer.clone(),
            caps: context.client_capabilities().unwrap_or_default(),
            round,
            progress,
        };
        // A client's W3C trace context (`_meta.traceparent`, SEP-414): the
        // evaluation's span continues it.
        // Else the W3C headers of the HTTP request that carried it.
        let trace = context
            .meta
            .get_traceparent()
            .map(|tp| crate::call::TraceContext {
                traceparent: tp.to_string(),
                tracestate: context.meta.get_tracestate().map(str::to_string),
            })
            .or_else(|| {
                let parts = context.extensions.get::<axum::http::request::Parts>()?;
                let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
                Some(crate::call::TraceContext {
                    traceparent: header("traceparent")?,
                    tracestate: header("tracestate"),
                })
            });
        let opts = EvalOptions { timeout, cancel, trace, mcp_tool: Some(name.clone()), ..EvalOptions::default() };
        let id = CallId { tool: name.clone(), args: digest, owner };
        let mrtr = modern.then_some((id, retry));
        let started = std::time::Instant::now();
        let outcome = connection::serve_call(&self.conn.options, &ctx, call, opts, link, mrtr).await;
        watcher.abort();
        let what = match &outcome {
            Ok(Served::Done(r)) if r.is_error == Some(true) => "error",
            Ok(Served::Done(_)) => "ok",
            Ok(Served::Input(_)) => "input_required",
            Err(ReplError::Session(crate::replay::store::StoreError::SessionBusy { .. })) => "busy",
            Err(_) => "error",
        };
        self.conn.options.metrics.eval(&name, what, started.elapsed().as_secs_f64());
        if let Ok(Served::Done(r)) = &outcome {
            if r.structured_content.as_ref().is_some_and(|s| s["timed_out"] == true) {
                self.conn.options.metrics.budget_stop();
            }
        }
        Ok(match outcome {
            Ok(Served::Done(r)) => r.into(),
            Ok(Served::Input(r)) => CallToolResponse::InputRequired(*r),
            Err(ReplError::Session(crate::replay::store::StoreError::SessionBusy { holder, .. })) => {
                // Another server (or connection) is serving this context: nothing ran here.
                let mut r = input_error(format!(
                    "busy: this context is being served by {holder}; nothing was run; retry the call in a few seconds"
                ));
                r.structured_content = Some(json!({"busy": true, "retry_after_ms": BUSY_RETRY_AFTER_MS}));
                connection::attach_handle(&mut r, &ctx.handle, modern);
                r.into()
            }
            Err(e) => {
                let mut r = input_error(format!("wrepl: {e}"));
                connection::attach_handle(&mut r, &ctx.handle, modern);
                r.into()
            }
        })
    }
}
