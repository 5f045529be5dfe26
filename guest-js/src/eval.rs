//! The runtime's lifecycle and the evaluation protocol: `boot` (the part that
//! is the same for every sandbox, captured in the pre-initialised snapshot),
//! `init` (one sandbox's limits and tools), and `eval` — run a script, drive
//! its promise through inner-call and timer completions until it settles,
//! stop on an interrupt or an exhausted heap, and render the outcome.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};

use rquickjs::promise::PromiseState;
use rquickjs::{
    qjs, CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Object, Persistent, Promise, Runtime, Value,
};

use crate::heap::{self, heap_exhausted, HeapLimit};
use crate::managed::{self, Managed};
use crate::natives::Modules;
use crate::wrepl::sandbox::types::{
    CallDone, Completion, Config, ConsoleStream as Stream, EvalOutcome, JsError, ShorthandForm,
};
use crate::wrepl::sandbox::{calls, host};

/// QuickJS stack limit while booting (bytes).
const BOOT_STACK_LIMIT: usize = 256 << 10;

/// Fields drop in order: the JavaScript values before the context, the
/// context before the runtime.
struct Js {
    stage: Stage,
    ctx: Context,
    rt: Runtime,
}

/// How far a runtime got: booted (the same for every sandbox, and what a
/// pre-initialised snapshot of the guest holds) or configured by `init`.
enum Stage {
    /// The prelude ran; `configure(tools, repoHint, prefix, shorthands)` installs one sandbox's tools.
    Booted(Persistent<Function<'static>>),
    /// `init` ran: the control functions that drive each evaluation, and
    /// the managed globals to refresh before each.
    Ready(Vec<Persistent<Function<'static>>>, Managed),
}

/// The control object's functions, looked up once by `init` (the object is
/// only reachable from here).
#[derive(Clone, Copy)]
pub(crate) enum Op {
    Finish,
    FinishValue,
    RenderValue,
    ToolError,
    FireTimer,
    EndEval,
    DescribeError,
    SetView,
}

/// Property names of [`Op`]s on the control object, in order.
const OPS: [&str; 8] =
    ["finish", "finishValue", "renderValue", "toolError", "fireTimer", "endEval", "describeError", "setView"];

/// A configured sandbox's control functions, in one context.
pub(crate) struct Control<'a, 'js> {
    ctx: &'a Ctx<'js>,
    fns: &'a [Persistent<Function<'static>>],
}

impl<'js> Control<'_, 'js> {
    /// The control function `op`, in this context.
    pub(crate) fn get(&self, op: Op) -> rquickjs::Result<Function<'js>> {
        self.fns[op as usize].clone().restore(self.ctx)
    }
}

thread_local! {
    static JS: RefCell<Option<Js>> = const { RefCell::new(None) };
    /// Latched once the host asked to stop; cleared at the start of each eval.
    static INTERRUPTED: Cell<bool> = const { Cell::new(false) };
    /// Set when a timer was armed or an inner call started since the last
    /// evaluation ended: only then can the prelude's timer table (cleared by
    /// `endEval`) or the pending calls hold anything.
    static ARMED: Cell<bool> = const { Cell::new(false) };
    /// The view the prelude was last told to use (`setView`): `None` the
    /// model's rendering, `Some(colors)` the terminal's.
    static VIEW: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Note that a timer was armed or an inner call started (see `ARMED`).
pub(crate) fn note_armed() {
    ARMED.with(|a| a.set(true));
}

/// An inner call the script awaits: its tool and how to settle its promise.
/// Raw values, each holding a reference of its own (released on drop): the
/// call's hot path creates and uses them with no handles to restore.
struct PendingCall {
    rt: *mut qjs::JSRuntime,
    /// The tool's name, a JavaScript string (for a failed call's error).
    tool: qjs::JSValue,
    resolve: qjs::JSValue,
    reject: qjs::JSValue,
    /// A number no other call of this runtime has, by which `abandon_call`
    /// finds the call (its id is the host's, and a queued call has none).
    seq: u64,
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        for v in [self.tool, self.resolve, self.reject] {
            // SAFETY: each reference is owned by this value and released
            // once; calls are pending only while their runtime is alive.
            unsafe { qjs::JS_FreeValueRT(self.rt, v) };
        }
    }
}

/// An inner call waiting for a place among the calls in flight: its tool
/// (wire name, and the script's string), its input's JSON text (`None`:
/// `{}`), and how to settle its promise. Raw values, as in [`PendingCall`].
struct QueuedCall {
    name: String,
    input: Option<qjs::JSValue>,
    call: PendingCall,
}

impl Drop for QueuedCall {
    fn drop(&mut self) {
        if let Some(v) = self.input.take() {
            // SAFETY: the reference is owned by this value and released once.
            unsafe { qjs::JS_FreeValueRT(self.call.rt, v) };
        }
    }
}

thread_local! {
    /// The inner calls of the running evaluation whose promises are not
    /// settled yet, by call id. Emptied when the evaluation ends: calls still
    /// pending then are the host's to abort and report.
    static PENDING: RefCell<BTreeMap<u32, PendingCall>> = const { RefCell::new(BTreeMap::new()) };
    /// Calls started while [`CALL_LIMIT`] were in flight, in the order the
    /// script made them: each starts when a call in flight completes.
    /// Emptied (their promises never settle) when the evaluation ends.
    static QUEUED: RefCell<VecDeque<QueuedCall>> = const { RefCell::new(VecDeque::new()) };
    /// Most calls in flight at once, as the host's `init` says.
    static CALL_LIMIT: Cell<usize> = const { Cell::new(1024) };
    /// The `seq` of the newest call made (see [`PendingCall::seq`]).
    static LAST_SEQ: Cell<u64> = const { Cell::new(0) };
}

/// The `seq` of the call made last (in flight or queued).
pub(crate) fn last_call_seq() -> u64 {
    LAST_SEQ.with(Cell::get)
}

/// Abandon the call numbered `seq`: a call in flight is cancelled at the
/// host, a queued one never starts. Its promise never settles. False when
/// the call is no longer pending (it completed, or the evaluation ended).
pub(crate) fn abandon_call(seq: u64) -> bool {
    let id = PENDING.with(|t| t.borrow().iter().find(|(_, c)| c.seq == seq).map(|(id, _)| *id));
    if let Some(id) = id {
        PENDING.with(|t| t.borrow_mut().remove(&id));
        calls::cancel_call(id);
        return true;
    }
    QUEUED.with(|q| {
        let mut q = q.borrow_mut();
        let before = q.len();
        q.retain(|c| c.call.seq != seq);
        before != q.len()
    })
}

/// The host's limit on calls in flight (`config.calls-in-flight`; at least 1).
pub(crate) fn set_call_limit(limit: u32) {
    CALL_LIMIT.with(|l| l.set((limit as usize).max(1)));
}

/// Whether a new call must wait: as many calls as the host allows are in
/// flight, or earlier calls are already waiting (they keep their order).
pub(crate) fn must_queue() -> bool {
    let in_flight = PENDING.with(|t| t.borrow().len());
    in_flight >= CALL_LIMIT.with(Cell::get) || QUEUED.with(|q| !q.borrow().is_empty())
}

/// Queue a call of `tool` (wire name `name`) with `input` (a JavaScript
/// string of JSON, or `None`) until a call in flight completes: its promise.
pub(crate) fn queue_call<'js>(
    ctx: &Ctx<'js>,
    name: &str,
    input: Option<&Value<'js>>,
    tool: &rquickjs::String<'js>,
) -> rquickjs::Result<Promise<'js>> {
    let (call, promise) = new_pending(ctx, tool)?;
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: a new reference to the live input text.
    let input = input.map(|v| unsafe { qjs::JS_DupValue(raw, v.as_raw()) });
    QUEUED.with(|q| q.borrow_mut().push_back(QueuedCall { name: name.to_string(), input, call }));
    Ok(promise)
}

/// Start queued calls, in order, while there is room in flight. A call the
/// host refuses to start rejects its promise as a refused call does.
fn start_queued<'js>(ctx: &Ctx<'js>) {
    let raw = ctx.as_raw().as_ptr();
    loop {
        let room = PENDING.with(|t| t.borrow().len()) < CALL_LIMIT.with(Cell::get);
        let Some(mut q) = room.then(|| QUEUED.with(|q| q.borrow_mut().pop_front())).flatten() else { return };
        let started = match q.input {
            // SAFETY: a new reference to the queued input (released by `text`).
            Some(v) => match unsafe { Value::from_raw(ctx.clone(), qjs::JS_DupValue(raw, v)) }.into_string() {
                Some(text) => crate::raw::with_str(ctx, &text, |i| calls::start_call(&q.name, i)),
                None => Err(rquickjs::Error::Exception),
            },
            None => Ok(calls::start_call(&q.name, "{}")),
        };
        // The promise's functions move to the pending call, or settle it here.
        let (resolve, reject, tool) = (q.call.resolve, q.call.reject, q.call.tool);
        q.call.resolve = qjs::JS_UNDEFINED;
        q.call.reject = qjs::JS_UNDEFINED;
        q.call.tool = qjs::JS_UNDEFINED;
        let call = PendingCall { rt: q.call.rt, tool, resolve, reject, seq: q.call.seq };
        let refusal = match started {
            Ok(Ok(id)) => {
                PENDING.with(|t| t.borrow_mut().insert(id, call));
                continue;
            }
            Ok(Err(e)) => Exception::from_message(ctx.clone(), &e.message).and_then(|err| {
                err.set("name", "ToolCallError")?;
                err.set("kind", e.kind)?;
                Ok(err.into_value())
            }),
            Err(e) => Exception::from_message(ctx.clone(), &e.to_string()).map(Exception::into_value),
        };
        if let Ok(error) = refusal {
            // SAFETY: a new reference to the live reject function.
            let reject = unsafe { Value::from_raw(ctx.clone(), qjs::JS_DupValue(raw, call.reject)) };
            let _ = Function::from_value(reject).and_then(|f| f.call::<_, ()>((error,))).catch(ctx);
        }
    }
}

/// Inner call `id` of `tool` started: the promise the script gets, settled
/// when its completion arrives (a promise that cannot be made abandons the
/// call).
pub(crate) fn pending_call<'js>(
    ctx: &Ctx<'js>,
    id: u32,
    tool: &rquickjs::String<'js>,
) -> rquickjs::Result<Promise<'js>> {
    let (call, promise) = new_pending(ctx, tool).inspect_err(|_| calls::cancel_call(id))?;
    PENDING.with(|t| t.borrow_mut().insert(id, call));
    Ok(promise)
}

/// A new promise for a call of `tool`, and its resolving functions (with
/// the tool's name) to settle it by.
fn new_pending<'js>(ctx: &Ctx<'js>, tool: &rquickjs::String<'js>) -> rquickjs::Result<(PendingCall, Promise<'js>)> {
    note_armed();
    let raw = ctx.as_raw().as_ptr();
    let mut funcs = [qjs::JS_UNDEFINED; 2];
    // SAFETY: `raw` is this live context; on success the promise and the two
    // resolving functions are references owned here.
    let promise = unsafe { qjs::JS_NewPromiseCapability(raw, funcs.as_mut_ptr()) };
    // SAFETY: inspects the tag of the value just returned.
    if unsafe { qjs::JS_IsException(promise) } {
        return Err(rquickjs::Error::Exception);
    }
    let call = PendingCall {
        // SAFETY: `raw` is this live context.
        rt: unsafe { qjs::JS_GetRuntime(raw) },
        // SAFETY: a new reference to the live tool name.
        tool: unsafe { qjs::JS_DupValue(raw, tool.as_raw()) },
        resolve: funcs[0],
        reject: funcs[1],
        seq: LAST_SEQ.with(|s| {
            s.set(s.get() + 1);
            s.get()
        }),
    };
    // SAFETY: takes the promise's reference.
    let promise = unsafe { Value::from_raw(ctx.clone(), promise) };
    let promise = promise.into_promise().ok_or(rquickjs::Error::Exception)?;
    Ok((call, promise))
}

/// Settle the promise of a finished inner call: fulfilled with its parsed
/// result, or rejected with a `ToolError` (the prelude's `toolError`).
/// Completions of calls no longer pending are ignored.
fn settle_call<'js>(ctx: &Ctx<'js>, control: &Control<'_, 'js>, done: CallDone) {
    let Some(p) = PENDING.with(|t| t.borrow_mut().remove(&done.id)) else { return };
    let raw = ctx.as_raw().as_ptr();
    let (kind, message) = match done.outcome {
        Ok(json) => {
            let bytes = json.len();
            match parse_json(raw, json) {
                Some(mut value) => {
                    // SAFETY: `resolve` and `value` are live references owned
                    // here; the call's result (or exception) is released.
                    unsafe {
                        let r = qjs::JS_Call(raw, p.resolve, qjs::JS_UNDEFINED, 1, &mut value);
                        qjs::JS_FreeValue(raw, value);
                        if qjs::JS_IsException(r) {
                            let _ = ctx.catch();
                        } else {
                            qjs::JS_FreeValue(raw, r);
                        }
                    }
                    return;
                }
                None => unparsed(ctx, &p, bytes),
            }
        }
        Err(e) => (e.kind, e.message),
    };
    let reject = || -> rquickjs::Result<()> {
        // SAFETY: new references to the live tool name and reject function.
        let (tool, reject) = unsafe {
            (
                Value::from_raw(ctx.clone(), qjs::JS_DupValue(raw, p.tool)),
                Value::from_raw(ctx.clone(), qjs::JS_DupValue(raw, p.reject)),
            )
        };
        let error: Value = control.get(Op::ToolError)?.call((tool, kind.as_str(), message))?;
        Function::from_value(reject)?.call((error,))
    };
    let _ = reject().catch(ctx);
}

/// Why the result of call `p` (`bytes` of JSON) could not be parsed, as the
/// script's error kind and message. Whatever the parser threw is replaced,
/// by an error that says what ran out when it was the script's heap.
fn unparsed<'js>(ctx: &Ctx<'js>, p: &PendingCall, bytes: usize) -> (String, String) {
    let raw = ctx.as_raw().as_ptr();
    let thrown = ctx.catch();
    let out_of_memory = heap_exhausted()
        || thrown.as_exception().and_then(Exception::message).is_some_and(|m| m.contains("out of memory"));
    // SAFETY: a new reference to the live tool name.
    let tool = unsafe { Value::from_raw(ctx.clone(), qjs::JS_DupValue(raw, p.tool)) };
    let name = tool.as_string().and_then(|s| s.to_string().ok()).unwrap_or_default();
    if out_of_memory {
        let message = format!(
            "the script's JavaScript heap has no room for the result of {name} ({bytes} bytes of JSON): keep fewer \
             results alive at once (process them in smaller batches, or drop references to earlier ones), or ask \
             for less (a range of lines, a narrower search)"
        );
        ("limit".to_string(), message)
    } else {
        ("invalid-output".to_string(), format!("the host returned invalid JSON for {name}"))
    }
}

/// Parse a call's result, JSON text from the host: the value (a reference
/// owned by the caller), or `None` with the parser's exception pending (or
/// none, for text holding a NUL byte, which JSON never does).
fn parse_json(raw: *mut qjs::JSContext, json: String) -> Option<qjs::JSValue> {
    let mut text = json.into_bytes();
    if text.contains(&0) {
        return None;
    }
    let len = text.len();
    // The parser reads up to a NUL.
    text.push(0);
    // SAFETY: `raw` is a live context; `text` is NUL-terminated and outlives
    // the call.
    let v = unsafe { qjs::JS_ParseJSON(raw, text.as_ptr().cast(), len as _, c"<input>".as_ptr()) };
    // SAFETY: inspects the tag of the value just returned.
    (!unsafe { qjs::JS_IsException(v) }).then_some(v)
}

/// Whether the host asked to stop (polled; latched until the next eval).
/// Also QuickJS's interrupt handler.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.with(|i| {
        if !i.get() && host::should_interrupt() {
            i.set(true);
        }
        i.get()
    })
}

/// Create the runtime, its context and the managed globals: everything that
/// is the same for every sandbox. Runs either in `init` or, ahead of time, in
/// [`preinitialize`] when the guest is pre-initialised into a snapshot.
fn boot() -> Result<Js, String> {
    // The heap limit is enforced by the allocator, not by QuickJS (whose own
    // limit stays off), so an exhausted heap can be recognised.
    let rt =
        Runtime::new_with_alloc(HeapLimit::new()).map_err(|e| format!("cannot create the QuickJS runtime: {e}"))?;
    // `init` sets the sandbox's own stack limit; this one only has to fit
    // the prelude, well inside the guest's 1 MiB shadow stack.
    rt.set_max_stack_size(BOOT_STACK_LIMIT);
    rt.set_interrupt_handler(Some(Box::new(interrupted)));
    rt.set_loader(Modules, Modules);
    let ctx = Context::full(&rt).map_err(|e| format!("cannot create the QuickJS context: {e}"))?;
    let configure = ctx.with(|ctx| -> Result<Persistent<Function<'static>>, String> {
        let configure = managed::boot_prelude(&ctx).catch(&ctx).map_err(|e| format!("prelude failed: {e}"))?;
        Ok(Persistent::save(&ctx, configure))
    })?;
    // Leave no garbage from the prelude in the snapshot.
    rt.run_gc();
    Ok(Js { stage: Stage::Booted(configure), ctx, rt })
}

/// The body of the `wizer-initialize` export: boot and keep the runtime (a
/// failed boot is reported on the console, then aborts the snapshot step).
pub(crate) fn preinitialize() {
    let js = boot().unwrap_or_else(|e| {
        let msg = format!("wrepl guest boot failed: {e}\n");
        host::console_write(Stream::Stderr, &msg);
        panic!("{msg}")
    });
    JS.with(|slot| *slot.borrow_mut() = Some(js));
}

/// The `init` export: boot (unless the snapshot already did), apply the
/// sandbox's limits and install its tool globals.
pub(crate) fn init(config: Config) -> Result<(), String> {
    let mut js = match JS.with(|js| js.borrow_mut().take()) {
        Some(js) => js,
        None => boot()?,
    };
    let configure = match &js.stage {
        Stage::Booted(f) => f.clone(),
        Stage::Ready(..) => {
            JS.with(|slot| *slot.borrow_mut() = Some(js));
            return Err("the sandbox is already initialised".into());
        }
    };
    heap::set_limit(config.memory_limit);
    set_call_limit(config.calls_in_flight);
    js.rt.set_max_stack_size(config.stack_limit as usize);
    let (control, managed) = js.ctx.with(|ctx| -> Result<(Vec<Persistent<Function<'static>>>, Managed), String> {
        let setup = || -> rquickjs::Result<Object<'_>> {
            let tools = rquickjs::Array::new(ctx.clone())?;
            for (i, t) in config.tools.iter().enumerate() {
                let b = Object::new(ctx.clone())?;
                b.set("name", t.name.as_str())?;
                b.set("global", t.global.as_str())?;
                tools.set(i, b)?;
            }
            let shorthands = rquickjs::Array::new(ctx.clone())?;
            for (i, s) in config.shorthands.iter().enumerate() {
                let o = Object::new(ctx.clone())?;
                o.set("global", s.global.as_str())?;
                o.set("form", form_name(s.form))?;
                o.set("tool", s.tool.as_str())?;
                shorthands.set(i, o)?;
            }
            configure.restore(&ctx)?.call((tools, config.repo_hint.as_str(), config.registered_prefix.as_str(), shorthands))
        };
        let control = setup().catch(&ctx).map_err(|e| format!("sandbox setup failed: {e}"))?;
        let fns = OPS
            .iter()
            .map(|name| {
                let f: Function = control.get(*name).map_err(|e| format!("sandbox control {name} missing: {e}"))?;
                Ok(Persistent::save(&ctx, f))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let managed = Managed::new(&ctx, &control).catch(&ctx).map_err(|e| format!("managed globals: {e}"))?;
        Ok((fns, managed))
    })?;
    js.stage = Stage::Ready(control, managed);
    JS.with(|slot| *slot.borrow_mut() = Some(js));
    Ok(())
}

/// The key of a shorthand form in the prelude's `forms` table.
fn form_name(form: ShorthandForm) -> &'static str {
    match form {
        ShorthandForm::Shell => "shell",
        ShorthandForm::Read => "read",
        ShorthandForm::GrepContent => "grep-content",
        ShorthandForm::GrepFiles => "grep-files",
        ShorthandForm::Glob => "glob",
        ShorthandForm::Write => "write",
        ShorthandForm::Sample => "sample",
        ShorthandForm::Chdir => "chdir",
    }
}

/// Whether `init` ran (the runtime is configured).
pub(crate) fn initialised() -> bool {
    JS.with(|js| matches!(js.borrow().as_ref(), Some(Js { stage: Stage::Ready(..), .. })))
}

/// The `eval` export: run one script in the configured sandbox.
/// Evaluate `script`, its result shown for the model (`view` `None`) or for
/// a terminal (`Some(colors)`: see `eval-inspect`).
pub(crate) fn eval(script: String, view: Option<bool>) -> EvalOutcome {
    INTERRUPTED.with(|i| i.set(false));
    JS.with(|js| {
        let js = js.borrow();
        let Some(Js { rt: _keep_runtime_alive, ctx, stage: Stage::Ready(fns, managed) }) = js.as_ref() else {
            return outcome_of(internal_error("the sandbox was not initialised".into()));
        };
        ctx.with(|ctx| {
            let control = Control { ctx: &ctx, fns };
            // The prelude is told only when the view changes (never in a
            // context that only serves `eval`).
            if VIEW.with(|v| v.get()) != view {
                let arg = match view {
                    Some(colors) => Value::new_bool(ctx.clone(), colors),
                    None => Value::new_null(ctx.clone()),
                };
                if let Err(e) = control.get(Op::SetView).and_then(|f| f.call::<_, ()>((arg,))).catch(&ctx) {
                    return outcome_of(js_error(&ctx, &control, e));
                }
                VIEW.with(|v| v.set(view));
            }
            eval_in(&ctx, &control, managed, script, view.is_some())
        })
    })
}

/// The [`JsError`] for a caught error (a thrown value is described by the prelude).
pub(crate) fn js_error<'js>(ctx: &Ctx<'js>, control: &Control<'_, 'js>, err: CaughtError<'js>) -> JsError {
    let value = match err {
        CaughtError::Exception(e) => e.into_value(),
        CaughtError::Value(v) => v,
        CaughtError::Error(e) => return internal_error(e.to_string()),
    };
    describe_error(ctx, control, value)
}

/// An error of the guest itself (not thrown by the script).
fn internal_error(message: String) -> JsError {
    JsError { name: "InternalError".into(), message, stack: String::new() }
}

/// Describe a thrown value with the prelude's `describeError`.
fn describe_error<'js>(ctx: &Ctx<'js>, control: &Control<'_, 'js>, value: Value<'js>) -> JsError {
    let described = control.get(Op::DescribeError).and_then(|f| f.call::<_, Object>((value,))).catch(ctx);
    match described {
        Ok(o) => JsError {
            name: o.get("name").unwrap_or_else(|_| "Error".into()),
            message: o.get("message").unwrap_or_default(),
            stack: o.get("stack").unwrap_or_default(),
        },
        Err(e) => JsError {
            name: "Error".into(),
            message: format!("(the thrown value could not be described: {e})"),
            stack: String::new(),
        },
    }
}

/// Run queued jobs until none is left, the heap is exhausted or the host
/// asks to stop. The host is asked every [`JOBS_PER_INTERRUPT_CHECK`] jobs
/// (a long job is stopped by QuickJS's own interrupt checks); callers check
/// [`interrupted`] when this returns.
fn run_jobs(ctx: &Ctx<'_>) {
    let mut n = 0u32;
    while ctx.execute_pending_job() {
        n = n.wrapping_add(1);
        if heap_exhausted() || (n.is_multiple_of(JOBS_PER_INTERRUPT_CHECK) && interrupted()) {
            return;
        }
    }
}

/// How many queued jobs run between two stop-request checks in [`run_jobs`].
const JOBS_PER_INTERRUPT_CHECK: u32 = 16;

/// An outcome with nothing in it: no value, no error, not interrupted.
pub(crate) fn base_outcome() -> EvalOutcome {
    EvalOutcome {
        value_json: None,
        text: String::new(),
        text_total: 0,
        error: None,
        interrupted: false,
        poisoned: None,
        heap_exhausted: false,
    }
}

/// The outcome of an evaluation that failed with `error`.
pub(crate) fn outcome_of(error: JsError) -> EvalOutcome {
    EvalOutcome { error: Some(error), ..base_outcome() }
}

/// The outcome of an evaluation the host stopped.
pub(crate) fn interrupted_outcome() -> EvalOutcome {
    EvalOutcome { interrupted: true, ..outcome_of(internal_error("interrupted".into())) }
}

/// The heap is full: report it without running any more JavaScript (the
/// host replaces the context).
pub(crate) fn exhausted_outcome() -> EvalOutcome {
    EvalOutcome { heap_exhausted: true, ..outcome_of(internal_error("out of memory".into())) }
}

/// The script failed with `error`, unless describing the thrown value was cut
/// short by a stop request or the heap ran out on the way.
fn failure(error: impl FnOnce() -> JsError) -> EvalOutcome {
    if heap_exhausted() {
        return exhausted_outcome();
    }
    let error = error();
    if interrupted() {
        return interrupted_outcome();
    }
    if heap_exhausted() {
        return exhausted_outcome();
    }
    outcome_of(error)
}

/// Evaluate `script` in a configured context: refresh the managed globals, run
/// it, settle its promise and render the value.
fn eval_in<'js>(
    ctx: &Ctx<'js>,
    control: &Control<'_, 'js>,
    managed: &Managed,
    script: String,
    inspect: bool,
) -> EvalOutcome {
    if heap_exhausted() {
        return exhausted_outcome();
    }
    if let Some(stopped) = managed::refresh(ctx, control, managed) {
        return stopped;
    }
    let call = |op: Op| control.get(op);
    // Without the word `await` anywhere in it, the script cannot have a
    // top-level await: it is evaluated as a plain global script, and its
    // completion value is the value (no async function, no promise of a
    // `{ value }` record to unwrap). With it, as an async global script.
    let top_level_await = script.contains("await");
    let opts = {
        let mut o = rquickjs::context::EvalOptions::default();
        o.global = true;
        o.strict = false;
        o.backtrace_barrier = true;
        o.promise = top_level_await;
        o.filename = Some("<repl>".into());
        o
    };
    let outcome = (|| {
        let evaluated = ctx.eval_with_options::<Value, _>(script, opts).catch(ctx);
        // Fast path: the script finished synchronously with a primitive
        // value (nothing to await or deep-resolve). Its queued jobs still
        // run first, as on the general path. (The terminal view shows and
        // keeps every value in the prelude.)
        if let (Ok(v), false) = (&evaluated, inspect) {
            let primitive = if top_level_await { settled_primitive(v) } else { plain_primitive(v) };
            if let Some(value) = primitive {
                run_jobs(ctx);
                if interrupted() {
                    return interrupted_outcome();
                }
                if heap_exhausted() {
                    return exhausted_outcome();
                }
                if let Some(outcome) = rendered_natively(&value) {
                    return outcome;
                }
                return match call(Op::RenderValue).and_then(|f| f.call::<_, Object>((value,))).catch(ctx) {
                    Ok(o) => rendered(&o),
                    Err(e) => failure(|| js_error(ctx, control, e)),
                };
            }
        }
        let finish = if top_level_await { Op::Finish } else { Op::FinishValue };
        let started = evaluated.and_then(|p| call(finish).and_then(|f| f.call::<_, Promise>((p,))).catch(ctx));
        let promise = match started {
            Ok(p) => p,
            Err(e) => {
                // What the script queued before it threw runs now, as it
                // does before an async script's rejection is reported.
                if !top_level_await {
                    run_jobs(ctx);
                }
                if interrupted() {
                    return interrupted_outcome();
                }
                return failure(|| js_error(ctx, control, e));
            }
        };
        loop {
            run_jobs(ctx);
            // The latch only: asking the host here would cost a call per
            // completion, and the host answers the same question in
            // `next-completion` (interrupted) before the script waits again.
            if INTERRUPTED.with(|i| i.get()) {
                return interrupted_outcome();
            }
            if heap_exhausted() {
                return exhausted_outcome();
            }
            match promise.state() {
                PromiseState::Resolved => {
                    let v: rquickjs::Result<Object> = promise
                        .result()
                        .unwrap_or_else(|| Err(rquickjs::Error::new_from_js("pending", "settled result")));
                    return match v {
                        Ok(o) => rendered(&o),
                        Err(e) => failure(|| internal_error(format!("result could not be read: {e}"))),
                    };
                }
                PromiseState::Rejected => {
                    let reason: Value = match promise.result::<Value>() {
                        Some(Err(rquickjs::Error::Exception)) => ctx.catch(),
                        Some(Ok(v)) => v,
                        _ => ctx.catch(),
                    };
                    return failure(|| describe_error(ctx, control, reason));
                }
                PromiseState::Pending => {}
            }
            match calls::next_completion() {
                None => {
                    return outcome_of(JsError {
                        name: "Error".into(),
                        message: "the script's promise can never settle: it awaits something that nothing will resolve (no inner call or timer is pending)".into(),
                        stack: String::new(),
                    })
                }
                Some(Completion::Interrupted) => {
                    INTERRUPTED.with(|i| i.set(true));
                    return interrupted_outcome();
                }
                Some(Completion::Timer(id)) => {
                    let _ = call(Op::FireTimer)
                        .and_then(|f| f.call::<_, ()>((id,)))
                        .catch(ctx);
                }
                Some(Completion::Call(done)) => {
                    settle_call(ctx, control, done);
                    start_queued(ctx);
                }
            }
        }
    })();
    if outcome.heap_exhausted || heap_exhausted() {
        // No more JavaScript in this context; the host replaces it (and with
        // it every timer and pending call).
        return if outcome.interrupted { EvalOutcome { heap_exhausted: true, ..outcome } } else { exhausted_outcome() };
    }
    // Timers and pending calls do not outlive the eval.
    if ARMED.with(|a| a.replace(false)) {
        let _ = call(Op::EndEval).and_then(|f| f.call::<_, ()>(())).catch(ctx);
        PENDING.with(|t| t.borrow_mut().clear());
        // Calls still waiting for a place in flight never started: said,
        // not dropped silently (the host reports those it had started).
        let queued = QUEUED.with(|q| std::mem::take(&mut *q.borrow_mut()));
        if !queued.is_empty() {
            host::console_write(
                Stream::Stderr,
                &format!(
                    "[wrepl] warning: {} more inner call(s) were waiting for a place among the calls in flight when the \
                     script ended; they never started. Await every call (e.g. `await Promise.all([...])`).\n",
                    queued.len()
                ),
            );
        }
    }
    if outcome.interrupted {
        // Jobs queued by the interrupted script would otherwise run at the
        // start of the next eval, on its budget. With the interrupt latched,
        // each one is stopped at its first interrupt check, so draining the
        // queue only unwinds what was queued (a stopped promise chain
        // rejects link by link). The queue is drained completely: a flood
        // that outlasts the host's grace period after the stop gets the
        // instance replaced, which also ends everything it queued.
        while ctx.execute_pending_job() {}
    }
    outcome
}

/// The outcome of a completed evaluation from the prelude's rendering of its
/// value (`renderValue`: `{ json, text }`).
fn rendered(o: &Object<'_>) -> EvalOutcome {
    EvalOutcome {
        value_json: o.get::<_, Option<String>>("json").ok().flatten(),
        text: o.get("text").unwrap_or_default(),
        text_total: o.get::<_, f64>("total").map(|t| t as u64).unwrap_or(0),
        ..base_outcome()
    }
}

/// The completion value of a plain (not async) evaluation when it is a
/// primitive other than `undefined` (which stands for the per-eval `o`).
fn plain_primitive<'js>(evaluated: &Value<'js>) -> Option<Value<'js>> {
    let primitive = !(evaluated.is_object() || evaluated.is_function() || evaluated.is_undefined());
    primitive.then(|| evaluated.clone())
}

/// The outcome for a number, boolean or `null`, rendered without running
/// JavaScript: exactly what the prelude's `renderValue` gives for them (the
/// JSON text and the display text are the same, except that a non-finite
/// number renders as the string of its name). `None` for other values.
fn rendered_natively(value: &Value<'_>) -> Option<EvalOutcome> {
    let (json, text) = if let Some(i) = value.as_int() {
        let t = i.to_string();
        (t.clone(), t)
    } else if let Some(f) = value.as_float() {
        if f.is_finite() {
            // JavaScript's own number-to-string (shortest round trip, `1e+21`).
            let t = value.get::<rquickjs::convert::Coerced<String>>().ok()?.0;
            (t.clone(), t)
        } else {
            let t = if f.is_nan() {
                "NaN"
            } else if f > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            };
            (format!("\"{t}\""), t.to_string())
        }
    } else if let Some(b) = value.as_bool() {
        let t = b.to_string();
        (t.clone(), t)
    } else if value.is_null() {
        ("null".to_string(), "null".to_string())
    } else {
        return None;
    };
    Some(EvalOutcome { value_json: Some(json), text, ..base_outcome() })
}

/// The value of an evaluation's promise when it is already fulfilled with a
/// primitive other than `undefined` (which stands for the per-eval `o`).
/// QuickJS fulfils it with a plain `{ value }` object of its own.
fn settled_primitive<'js>(evaluated: &Value<'js>) -> Option<Value<'js>> {
    let promise = evaluated.as_promise()?;
    if promise.state() != PromiseState::Resolved {
        return None;
    }
    let completion: Object = promise.result::<Object>()?.ok()?;
    let value: Value = completion.get("value").ok()?;
    plain_primitive(&value)
}
