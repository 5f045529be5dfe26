//! The server's REPL contexts, addressed by handles: the state that
//! outlives one MCP request. A client speaking the stateless revision
//! (2026-07-28) names its context in each `repl` call (`context`); a
//! client with a session (2025-11-25) gets one per connection by default.
//!
//! A handle is minted by the server and sealed (HMAC-SHA-256, rmcp's
//! [`RequestStateCodec`]) to the token of the caller that created it, so
//! it is useless to anyone else. Every context records into the session
//! store (a private in-memory one when the server has none) under its id,
//! which is what lets a context come back by replay (after an eviction, a
//! restart, or on another server sharing the store) and what multi
//! round-trip requests continue from.
//!
//! The [`Round`] of a request speaking 2026-07-28 is where its approvals
//! and model samples go: an answer the client sent with the request
//! (`inputResponses`) is used; a question without one stops the evaluation
//! at that call and becomes an `inputRequests` entry of the
//! `input_required` result, with a sealed `requestState` ([`Pending`]) that
//! names the context, the log's head, the suspended block, the waiting
//! calls and a digest of each question.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rmcp::model::{ClientCapabilities, RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::*;

/// How long an unused context lives, by default.
pub const DEFAULT_CONTEXT_TTL: Duration = Duration::from_secs(3600);
/// How long an unused context stays in memory, by default, before it is
/// hibernated (snapshotted and dropped, its handle kept).
pub const DEFAULT_HIBERNATE_AFTER: Duration = Duration::from_secs(300);
/// How long an `input_required` answer may take.
pub const REQUEST_STATE_TTL: Duration = Duration::from_secs(900);
/// Most contexts kept live (in memory) at once; the least recently used
/// idle one is evicted past it (a recorded one comes back by replay).
pub const MAX_LIVE_CONTEXTS: usize = 64;
/// Default bound on the guest memory of a server's live contexts together
/// (2 GiB): past it, the least recently used idle ones are dropped.
pub const DEFAULT_MAX_LIVE_MEMORY: u64 = 2 << 30;

/// How many contexts a server keeps live, and how much guest memory they
/// may hold together. A dropped context is not lost: its handle brings it
/// back by replaying its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveLimits {
    /// At most this many live contexts.
    pub contexts: usize,
    /// At most this many bytes of guest linear memory in all of them.
    pub memory: u64,
}

impl Default for LiveLimits {
    fn default() -> Self {
        Self { contexts: MAX_LIVE_CONTEXTS, memory: DEFAULT_MAX_LIVE_MEMORY }
    }
}
/// How often a context's use is written to the store, at most.
pub const TOUCH_EVERY: Duration = Duration::from_secs(10);
/// Name of the store secret that seals handles and request states.
const KEY_NAME: &str = "mcp-request-state";

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Lower-case hex SHA-256 of `parts`, each length-prefixed.
pub(super) fn digest(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn associated(purpose: &str, owner: Option<Fingerprint>) -> Vec<u8> {
    let mut ad = format!("wrepl/{purpose}\0").into_bytes();
    match owner {
        Some(fp) => ad.extend_from_slice(fp.bytes()),
        None => ad.extend_from_slice(b"no-token"),
    }
    ad
}

/// The one message for a handle that does not open (forged, another
/// token's, or from a server with another key): never says which.
fn unknown_handle() -> String {
    "unknown context handle: it was not issued to this token by this server (or a server sharing its store); \
     call repl without `context` to start a fresh context"
        .into()
}

/// Why a context that cannot come back is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gone {
    /// Unused for longer than its lifetime.
    Expired,
    /// Dropped to stay within the live limits (count or memory).
    Evicted,
    /// Its connection (a 2025-11-25 session) ended: closed or disconnected.
    Closed,
}

/// How many gone contexts' reasons are remembered.
const MAX_GONE: usize = 4096;

/// The server's contexts.
pub(super) struct Hub {
    codec: RequestStateCodec,
    /// Where every context records (the server's store, or a private
    /// in-memory one).
    pub(super) store: Arc<dyn LogStore>,
    /// True when `store` is the server's own (shared, durable) store.
    pub(super) durable: bool,
    ttl: Duration,
    limits: LiveLimits,
    contexts: Arc<Mutex<HashMap<String, Arc<Ctx>>>>,
    /// Why recently dropped contexts that cannot come back (no durable
    /// store) are gone, by id: at most [`MAX_GONE`], oldest first out.
    gone: Mutex<(HashMap<String, Gone>, std::collections::VecDeque<String>)>,
    /// Fires when some context's registered tools changed.
    pub(super) tools_changed: tokio::sync::broadcast::Sender<()>,
}

impl Hub {
    /// The hub of a server: its key is `key` (at least 32 bytes), else the
    /// store's secret, else (no store) a random one for this process.
    pub(super) fn new(
        store: Option<Arc<dyn LogStore>>,
        key: Option<Vec<u8>>,
        ttl: Duration,
        limits: LiveLimits,
    ) -> Result<Self, ServeError> {
        let durable = store.is_some();
        let store: Arc<dyn LogStore> = match store {
            Some(s) => s,
            None => Arc::new(
                crate::replay::store::SqliteStore::in_memory().map_err(|e| ServeError::Transport(e.to_string()))?,
            ),
        };
        let key = match key {
            Some(k) => k,
            None => store.secret(KEY_NAME).map_err(|e| ServeError::Transport(format!("session store: {e}")))?,
        };
        let codec = RequestStateCodec::try_new(key)
            .map_err(|e| ServeError::Transport(format!("the request-state key is unusable: {e}")))?;
        let (tools_changed, _) = tokio::sync::broadcast::channel(16);
        Ok(Self {
            codec,
            store,
            durable,
            ttl,
            limits,
            contexts: Arc::default(),
            gone: Default::default(),
            tools_changed,
        })
    }

    /// Counts the live contexts (their instance in memory; a busy one
    /// counts as live) and the hibernated ones (a handle and a snapshot),
    /// for as long as the hub exists.
    pub(super) fn context_counter(&self) -> super::metrics::ContextCounter {
        let contexts = Arc::downgrade(&self.contexts);
        Box::new(move || {
            let contexts = contexts.upgrade()?;
            let all: Vec<Arc<Ctx>> = lock(&contexts).values().cloned().collect();
            let hibernated = all.iter().filter(|c| c.state.try_lock().is_ok_and(|s| s.is_none())).count() as u64;
            Some((all.len() as u64 - hibernated, hibernated))
        })
    }

    fn seal_handle(&self, id: &str, owner: Option<Fingerprint>) -> String {
        let ad = associated("context", owner);
        self.codec.seal_with(id.as_bytes(), &SealOptions::new().associated_data(&ad))
    }

    /// A new context for `owner`: named `name` (a stored session to resume
    /// and record into), or with a fresh random id.
    /// A named context already held by another connection is refused
    /// (one connection per named session).
    pub(super) fn mint(&self, owner: Option<Fingerprint>, name: Option<String>) -> Result<Arc<Ctx>, String> {
        self.evict();
        let named = name.is_some();
        let id = match name {
            Some(n) => n,
            None => {
                let mut b = [0u8; 12];
                getrandom::fill(&mut b).map_err(|e| format!("no randomness for a context id: {e}"))?;
                format!("ctx-{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>())
            }
        };
        let mut contexts = lock(&self.contexts);
        if let Some(c) = contexts.get(&id) {
            if c.owner != owner {
                return Err(format!("session {id:?} belongs to another token"));
            }
            if named && Arc::strong_count(c) > 1 {
                return Err(format!("session {id:?} is in use by another connection of this server"));
            }
            c.touch(&*self.store);
            return Ok(c.clone());
        }
        let ctx = Arc::new(Ctx::new(id.clone(), self.seal_handle(&id, owner), owner));
        ctx.touch(&*self.store);
        contexts.insert(id, ctx.clone());
        Ok(ctx)
    }

    /// A new context for `owner` that starts as a copy of the one `handle`
    /// names: its log (verified) is copied, so the new context rebuilds the
    /// parent's variables and tools on first use and records apart from it.
    /// The parent is not mid-call while it is copied (its lock is held).
    pub(super) async fn fork(&self, handle: &str, owner: Option<Fingerprint>) -> Result<Arc<Ctx>, String> {
        let parent = self.resolve(handle, owner)?;
        let _quiet = parent.state.lock().await;
        let child = self.mint(owner, None)?;
        crate::context::fork_log(&*self.store, &parent.id, &child.id)
            .map_err(|e| format!("cannot fork the context: {e}"))?;
        Ok(child)
    }

    /// The context `handle` names, for `owner`: the live one, or (when its
    /// log is in the store and it has not expired) one that comes back by
    /// replay on first use.
    pub(super) fn resolve(&self, handle: &str, owner: Option<Fingerprint>) -> Result<Arc<Ctx>, String> {
        self.evict();
        let handle = handle.trim();
        let ad = associated("context", owner);
        let id = self.codec.open_with(handle, &ad).map_err(|_| unknown_handle())?;
        let id = String::from_utf8(id).map_err(|_| unknown_handle())?;
        self.by_id(&id, owner)
    }

    /// The context `id` of `owner` (the id came from a sealed handle or
    /// request state, so it is `owner`'s): the live one, or one that comes
    /// back by replay.
    pub(super) fn by_id(&self, id: &str, owner: Option<Fingerprint>) -> Result<Arc<Ctx>, String> {
        let id = id.to_string();
        let mut contexts = lock(&self.contexts);
        if let Some(c) = contexts.get(&id) {
            if c.owner != owner {
                return Err(unknown_handle());
            }
            c.touch(&*self.store);
            return Ok(c.clone());
        }
        let expired = || {
            format!(
                "context expired: it was unused for longer than its lifetime ({} s), so it is gone; call repl \
                 without `context` to start a fresh context",
                self.ttl.as_secs()
            )
        };
        if !self.durable {
            let why = lock(&self.gone).0.get(&id).copied().unwrap_or(Gone::Expired);
            return Err(match why {
                Gone::Expired => expired(),
                Gone::Evicted => "context evicted: the server keeps a limited number of contexts in memory \
                                  (--max-contexts, --max-context-memory) and, without a session store (--store), \
                                  one it drops cannot come back; call repl without `context` to start a fresh \
                                  context"
                    .into(),
                Gone::Closed => "context closed: the MCP session it belonged to ended (the client closed or lost \
                                 its connection), and without a session store (--store) its state went with it; \
                                 call repl without `context` to start a fresh context"
                    .into(),
            });
        }
        let exists = self.store.head(&id).map_err(|e| format!("session store: {e}"))?.is_some();
        let used = self.store.touched(&id).map_err(|e| format!("session store: {e}"))?;
        match used {
            _ if !exists => {
                return Err("context gone: its log is not in this server's store (it expired, was deleted, or was \
                            made by a server with another store); call repl without `context` to start a fresh \
                            context"
                    .into())
            }
            Some(at) if now_ms().saturating_sub(at) > self.ttl.as_millis() as u64 => return Err(expired()),
            _ => {}
        }
        let ctx = Arc::new(Ctx::new(id.clone(), self.seal_handle(&id, owner), owner));
        ctx.touch(&*self.store);
        contexts.insert(id, ctx.clone());
        Ok(ctx)
    }

    /// Drop contexts idle for longer than the lifetime, and the least
    /// recently used idle ones while there are more than the limits allow
    /// (count, or guest memory together). A busy context (evaluating, or
    /// waiting for its lock) is never dropped. Without a durable store a
    /// dropped context's log is deleted with it (it could not come back).
    pub(super) fn evict(&self) {
        let now = Instant::now();
        let mut dropped = Vec::new();
        {
            let mut contexts = lock(&self.contexts);
            let idle = |c: &Arc<Ctx>| Arc::strong_count(c) == 1 && c.state.try_lock().is_ok();
            let expired: Vec<String> = contexts
                .iter()
                .filter(|(_, c)| now.duration_since(*lock(&c.last_used)) > self.ttl && idle(c))
                .map(|(k, _)| k.clone())
                .collect();
            for k in expired {
                dropped.extend(contexts.remove(&k).map(|c| (c, Gone::Expired)));
            }
            let memory = |c: &Arc<Ctx>| c.memory.load(std::sync::atomic::Ordering::Relaxed);
            let mut held: u64 = contexts.values().map(memory).sum();
            while contexts.len() > self.limits.contexts || held > self.limits.memory {
                // Past the count, any idle context goes; past the memory
                // only, one that holds memory (busy ones never go).
                let by_count = contexts.len() > self.limits.contexts;
                let oldest = contexts
                    .iter()
                    .filter(|(_, c)| idle(c) && (by_count || memory(c) > 0))
                    .min_by_key(|(_, c)| *lock(&c.last_used))
                    .map(|(k, _)| k.clone());
                let Some(c) = oldest.and_then(|k| contexts.remove(&k)) else { break };
                held = held.saturating_sub(memory(&c));
                dropped.push((c, Gone::Evicted));
            }
        }
        for (c, why) in dropped {
            let id = c.id.clone();
            drop(c);
            if !self.durable {
                let _ = self.store.delete(&id);
                self.remember_gone(id, why);
            }
        }
    }

    /// Remember why the context `id` is gone (for the message its handle
    /// gets), within [`MAX_GONE`].
    fn remember_gone(&self, id: String, why: Gone) {
        let mut gone = lock(&self.gone);
        let (reasons, order) = &mut *gone;
        if reasons.insert(id.clone(), why).is_none() {
            order.push_back(id);
        }
        while order.len() > MAX_GONE {
            if let Some(old) = order.pop_front() {
                reasons.remove(&old);
            }
        }
    }

    /// Hibernate the contexts unused for longer than `after`: snapshot each
    /// (when it changed since its newest snapshot) and drop its instance,
    /// keeping its handle; the next call wakes it from the snapshot. A busy
    /// context, or one whose snapshot fails, stays live. How many went.
    pub(super) async fn hibernate_idle(&self, after: Duration) -> usize {
        let now = Instant::now();
        let idle: Vec<Arc<Ctx>> = lock(&self.contexts)
            .values()
            .filter(|c| now.duration_since(*lock(&c.last_used)) > after)
            .cloned()
            .collect();
        let mut hibernated = 0;
        for c in idle {
            let Ok(mut state) = c.state.try_lock() else { continue };
            let Some(manager) = state.as_mut() else { continue };
            if manager.snapshot_all().await.is_empty() {
                *state = None;
                c.memory.store(0, std::sync::atomic::Ordering::Relaxed);
                hibernated += 1;
            }
        }
        hibernated
    }

    /// Snapshot every live context that changed since its newest snapshot
    /// (a graceful stop), waiting for busy ones up to `wait` in all; one
    /// line per context that could not be.
    pub(super) async fn snapshot_all(&self, wait: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + wait;
        let all: Vec<Arc<Ctx>> = lock(&self.contexts).values().cloned().collect();
        let mut failed = Vec::new();
        for c in all {
            match tokio::time::timeout_at(deadline, c.state.lock()).await {
                Ok(mut state) => {
                    if let Some(m) = state.as_mut() {
                        failed.extend(m.snapshot_all().await);
                    }
                }
                Err(_) => failed.push(format!("context {}: still busy; it comes back by replay", c.id)),
            }
        }
        failed
    }

    /// Drop `ctx` from the live contexts unless something else holds it
    /// (its log is deleted with it when the store is the private one).
    pub(super) fn forget(&self, ctx: Arc<Ctx>) {
        let gone = {
            let mut contexts = lock(&self.contexts);
            // Held here and by the caller only: nobody else uses it.
            if Arc::strong_count(&ctx) == 2 && contexts.get(&ctx.id).is_some_and(|c| Arc::ptr_eq(c, &ctx)) {
                contexts.remove(&ctx.id);
                true
            } else {
                false
            }
        };
        let id = ctx.id.clone();
        drop(ctx);
        if gone && !self.durable {
            let _ = self.store.delete(&id);
            self.remember_gone(id, Gone::Closed);
        }
    }

    /// Registered tools of the live contexts of `owner`, each with the
    /// context that registered it (first registration of a name wins).
    pub(super) fn registered_for(&self, owner: Option<Fingerprint>) -> Vec<(RegisteredTool, Arc<Ctx>)> {
        let contexts: Vec<Arc<Ctx>> = lock(&self.contexts).values().filter(|c| c.owner == owner).cloned().collect();
        let mut out: Vec<(RegisteredTool, Arc<Ctx>)> = Vec::new();
        for c in contexts {
            for t in lock(&c.registered).iter() {
                if !out.iter().any(|(o, _)| o.name == t.name) {
                    out.push((t.clone(), c.clone()));
                }
            }
        }
        out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        out
    }

    /// `owner`'s contexts that registered the tool `name`, oldest id first.
    pub(super) fn contexts_registering(&self, owner: Option<Fingerprint>, name: &str) -> Vec<Arc<Ctx>> {
        let mut out: Vec<Arc<Ctx>> = lock(&self.contexts)
            .values()
            .filter(|c| c.owner == owner && lock(&c.registered).iter().any(|t| t.name == name))
            .cloned()
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// Seal `pending` for `owner`.
    pub(super) fn seal_pending(&self, pending: &Pending, owner: Option<Fingerprint>) -> Result<String, String> {
        let ad = associated("request-state", owner);
        self.codec
            .seal_json_with(pending, &SealOptions::new().associated_data(&ad).ttl(REQUEST_STATE_TTL))
            .map_err(|e| format!("cannot seal the request state: {e}"))
    }

    /// Open a `requestState` sent back by `owner`.
    pub(super) fn open_pending(&self, state: &str, owner: Option<Fingerprint>) -> Result<Pending, String> {
        let ad = associated("request-state", owner);
        self.codec.open_json_with::<Pending>(state, &ad).map_err(|e| match e {
            rmcp::model::RequestStateError::Expired => format!(
                "the requestState has expired (answers are accepted for {} s); call the tool again",
                REQUEST_STATE_TTL.as_secs()
            ),
            _ => "invalid requestState: it was not issued to this token by this server (or a server sharing its \
                  store), or it was altered; call the tool again without it"
                .to_string(),
        })
    }
}

/// What a `requestState` carries (sealed: integrity-protected, readable).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct Pending {
    /// Format version.
    pub(super) v: u32,
    /// The context id.
    pub(super) ctx: String,
    /// The tool called (`repl` or a registered tool's wire name).
    pub(super) tool: String,
    /// Digest of the call's arguments: the retry must repeat them.
    pub(super) args: String,
    /// The context log's head hash when the round ended: the retry must
    /// find it unchanged (so a state is used once).
    pub(super) head: String,
    /// The suspended block, when the evaluation stopped at calls.
    pub(super) block: Option<u64>,
    /// The calls it stopped at.
    pub(super) waiting: Vec<u32>,
    /// Every question asked (input-request key → digest of the question).
    pub(super) asked: BTreeMap<String, String>,
    /// Front approvals (of the tool call itself) given in earlier rounds.
    pub(super) granted: BTreeMap<String, String>,
}

/// The request a context serves now.
pub(super) struct Link {
    /// The client of the request.
    pub(super) peer: Peer<RoleServer>,
    /// The capabilities it declared (per request on 2026-07-28).
    pub(super) caps: ClientCapabilities,
    /// Set for a client speaking 2026-07-28: questions go through MRTR.
    pub(super) round: Option<Arc<Round>>,
    /// Where the request's progress goes.
    pub(super) progress: Option<ProgressTarget>,
}

/// One multi round-trip: the answers a request brought and the questions
/// its evaluation asked.
#[derive(Default)]
pub(super) struct Round {
    /// The client's answers (`inputResponses`).
    pub(super) answers: BTreeMap<String, Value>,
    /// What was asked under each key in the previous round (from the
    /// request state): an answer only applies to the same question.
    pub(super) asked: BTreeMap<String, String>,
    /// Front approvals granted in earlier rounds (key → digest).
    pub(super) granted: BTreeMap<String, String>,
    /// Questions without an answer: key → (the input request, its digest).
    pub(super) needed: Mutex<BTreeMap<String, (Value, String)>>,
    /// Front approvals answered yes in this round (key → digest).
    pub(super) granted_now: Mutex<BTreeMap<String, String>>,
    /// Calls stopped to wait for an answer.
    pub(super) waiting: Arc<Mutex<BTreeSet<u32>>>,
    /// The evaluation's cancel token: a question without an answer stops it.
    pub(super) cancel: Mutex<Option<CancellationToken>>,
}

/// What a [`Round`] says to a question.
pub(super) enum Reply<'a> {
    /// The client's answer.
    Answer(&'a Value),
    /// Granted in an earlier round.
    Granted,
    /// None yet: it was added to the questions (and a call waiting for it
    /// stops the evaluation).
    Asked,
}

impl Round {
    /// The round for a request with `answers`, continuing `pending` when
    /// it is a retry.
    pub(super) fn new(answers: BTreeMap<String, Value>, pending: Option<&Pending>) -> Self {
        let (asked, granted) = pending.map(|p| (p.asked.clone(), p.granted.clone())).unwrap_or_default();
        Self { answers, asked, granted, ..Self::default() }
    }

    /// The question `key` (an input request `request`, identified by
    /// `digest`), for inner call `call` when it is one.
    pub(super) fn ask(&self, key: &str, digest: &str, request: Value, call: Option<u32>) -> Reply<'_> {
        if self.granted.get(key).is_some_and(|d| d == digest) {
            return Reply::Granted;
        }
        if self.asked.get(key).is_some_and(|d| d == digest) {
            if let Some(a) = self.answers.get(key) {
                return Reply::Answer(a);
            }
        }
        lock(&self.needed).insert(key.to_string(), (request, digest.to_string()));
        if let Some(i) = call {
            lock(&self.waiting).insert(i);
            if let Some(c) = lock(&self.cancel).as_ref() {
                c.cancel();
            }
        }
        Reply::Asked
    }

    /// Remember that the front question `key` was answered yes: later
    /// rounds of the same call need not ask it again.
    pub(super) fn grant(&self, key: &str, digest: &str) {
        lock(&self.granted_now).insert(key.to_string(), digest.to_string());
    }

    /// True when some question has no answer.
    pub(super) fn needs_input(&self) -> bool {
        !lock(&self.needed).is_empty()
    }
}

/// An item of a context's progress queue.
pub(super) enum Progress {
    /// A notification for the request's client.
    Note(Peer<RoleServer>, ProgressNotificationParam),
    /// Answered when every notification queued before it was sent.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// One context of the server.
pub(super) struct Ctx {
    /// The context's id: its session name in the store.
    pub(super) id: String,
    /// The handle the client names it by.
    pub(super) handle: String,
    /// The token that created it (`None`: no authentication).
    pub(super) owner: Option<Fingerprint>,
    /// The context itself, built on first use (resumed from the store).
    pub(super) state: tokio::sync::Mutex<Option<ContextManager>>,
    /// Its registered tools as last seen.
    pub(super) registered: Mutex<Vec<RegisteredTool>>,
    /// The request it serves now.
    pub(super) link: Mutex<Option<Link>>,
    /// What resuming found, until the first evaluation reports it.
    pub(super) restored: Mutex<Option<RestoreReport>>,
    /// Set when this server gave the context back after a call (a shared
    /// store): its rebuild by replay is no news for the model.
    pub(super) released: std::sync::atomic::AtomicBool,
    pub(super) progress_tx: tokio::sync::mpsc::UnboundedSender<Progress>,
    last_used: Mutex<Instant>,
    /// Its guest memory after its last call, in bytes.
    pub(super) memory: std::sync::atomic::AtomicU64,
    /// The session boundary its calls run under (`main` until a call names
    /// another): a new one starts a fresh context with a log of its own.
    pub(super) boundary: Mutex<String>,
    /// When the store last heard that it was used.
    stored_touch: Mutex<Option<Instant>>,
}

impl Ctx {
    fn new(id: String, handle: String, owner: Option<Fingerprint>) -> Self {
        let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
        // One forwarding task keeps a context's progress notifications in
        // order; a flush is answered once everything before it was sent.
        tokio::spawn(async move {
            while let Some(item) = progress_rx.recv().await {
                match item {
                    Progress::Note(peer, p) => {
                        let _ = peer.notify_progress(p).await;
                    }
                    Progress::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Self {
            id,
            handle,
            owner,
            state: tokio::sync::Mutex::new(None),
            registered: Mutex::new(Vec::new()),
            link: Mutex::new(None),
            restored: Mutex::new(None),
            released: std::sync::atomic::AtomicBool::new(false),
            progress_tx,
            last_used: Mutex::new(Instant::now()),
            memory: std::sync::atomic::AtomicU64::new(0),
            boundary: Mutex::new(crate::context::MAIN.to_string()),
            stored_touch: Mutex::new(None),
        }
    }

    /// Wait (at most 10 s) until every progress notification queued so far
    /// was sent: the call's result must not overtake them (a client drops
    /// progress of a finished request, and a stateless response stream
    /// ends with the result).
    pub(super) async fn flush_progress(&self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.progress_tx.send(Progress::Flush(tx)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(10), rx).await;
        }
    }

    /// Mark the context used now: in memory always; in the store at most
    /// every [`TOUCH_EVERY`] (idle lifetimes are minutes or hours, and a
    /// write per call would cost a round trip on a database).
    fn touch(&self, store: &dyn LogStore) {
        *lock(&self.last_used) = Instant::now();
        let mut stored = lock(&self.stored_touch);
        if stored.is_none_or(|t| t.elapsed() >= TOUCH_EVERY) && store.touch(&self.id, now_ms()).is_ok() {
            *stored = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub() -> Hub {
        Hub::new(None, Some(vec![7u8; 32]), Duration::from_secs(60), LiveLimits::default()).unwrap()
    }

    #[tokio::test]
    async fn handles_open_only_for_their_token() {
        let h = hub();
        let a = Some(Fingerprint::of("token-a"));
        let b = Some(Fingerprint::of("token-b"));
        let ctx = h.mint(a, None).unwrap();
        assert!(ctx.id.starts_with("ctx-"), "{}", ctx.id);
        assert_eq!(h.resolve(&ctx.handle, a).unwrap().id, ctx.id);
        let other = h.resolve(&ctx.handle, b).err().unwrap();
        assert!(other.contains("unknown context handle"), "{other}");
        assert!(h.resolve(&ctx.handle, None).is_err());
        // One flipped character anywhere is refused the same way.
        let mut forged = ctx.handle.clone().into_bytes();
        let i = forged.len() / 2;
        forged[i] = if forged[i] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(forged).unwrap();
        assert_eq!(h.resolve(&forged, a).err().unwrap(), unknown_handle());
        // Another server's key does not open it.
        let other_hub = Hub::new(None, Some(vec![8u8; 32]), Duration::from_secs(60), LiveLimits::default()).unwrap();
        assert!(other_hub.resolve(&ctx.handle, a).is_err());
    }

    #[tokio::test]
    async fn request_states_are_bound_to_the_token_and_not_altered() {
        let h = hub();
        let a = Some(Fingerprint::of("token-a"));
        let p = Pending {
            v: 1,
            ctx: "ctx-1".into(),
            tool: "repl".into(),
            args: digest(&["{}"]),
            head: "abc".into(),
            block: Some(3),
            waiting: vec![1],
            asked: [("approve-1".to_string(), "d".to_string())].into(),
            granted: BTreeMap::new(),
        };
        let sealed = h.seal_pending(&p, a).unwrap();
        assert_eq!(h.open_pending(&sealed, a).unwrap(), p);
        assert!(h.open_pending(&sealed, Some(Fingerprint::of("token-b"))).unwrap_err().contains("invalid"));
        let cut = &sealed[..sealed.len() - 2];
        assert!(h.open_pending(cut, a).unwrap_err().contains("invalid"));
    }

    #[test]
    fn a_round_answers_only_the_question_it_asked() {
        let mut answers = BTreeMap::new();
        answers.insert("approve-2".to_string(), json!({"action": "accept", "content": {"approve": true}}));
        let pending = Pending {
            v: 1,
            ctx: "c".into(),
            tool: "repl".into(),
            args: String::new(),
            head: String::new(),
            block: Some(0),
            waiting: vec![2],
            asked: [("approve-2".to_string(), "same".to_string())].into(),
            granted: BTreeMap::new(),
        };
        let round = Round::new(answers, Some(&pending));
        assert!(matches!(round.ask("approve-2", "same", Value::Null, Some(2)), Reply::Answer(_)));
        assert!(!round.needs_input());
        // The same key for another question is asked again, and stops the call.
        let cancel = CancellationToken::new();
        *lock(&round.cancel) = Some(cancel.clone());
        assert!(matches!(round.ask("approve-2", "other", Value::Null, Some(2)), Reply::Asked));
        assert!(round.needs_input());
        assert!(cancel.is_cancelled());
        assert_eq!(lock(&round.waiting).iter().copied().collect::<Vec<_>>(), vec![2]);
    }

    #[tokio::test]
    async fn the_least_recently_used_idle_contexts_go_past_the_memory_bound() {
        let limits = LiveLimits { contexts: 3, memory: 100 };
        let h = Hub::new(None, Some(vec![7u8; 32]), Duration::from_secs(60), limits).unwrap();
        let a = Some(Fingerprint::of("token-a"));
        let mint = |bytes: u64| {
            let c = h.mint(a, None).unwrap();
            c.memory.store(bytes, std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(2));
            c.id.clone()
        };
        let (first, second) = (mint(40), mint(40));
        let live = |h: &Hub| lock(&h.contexts).keys().cloned().collect::<std::collections::BTreeSet<_>>();
        h.evict();
        assert_eq!(live(&h).len(), 2, "80 bytes are within the bound");
        let third = mint(40);
        h.evict();
        assert_eq!(live(&h), [second.clone(), third.clone()].into(), "the oldest went for the memory");
        // A busy context stays: the oldest idle one goes instead.
        let busy = h.by_id(&second, a).unwrap();
        let fourth = mint(40);
        h.evict();
        assert_eq!(live(&h), [second.clone(), fourth.clone()].into());
        drop(busy);
        // The count bound holds as before.
        let (fifth, sixth) = (mint(0), mint(0));
        h.evict();
        assert_eq!(live(&h).len(), 3, "{:?}", live(&h));
        assert!(live(&h).contains(&fifth) && live(&h).contains(&sixth) && !live(&h).contains(&first));
    }

    #[test]
    fn digests_separate_their_parts() {
        assert_ne!(digest(&["ab", "c"]), digest(&["a", "bc"]));
        assert_eq!(digest(&["x"]).len(), 64);
    }
}
