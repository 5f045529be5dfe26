//! The wrepl guest: a persistent QuickJS runtime behind the `wrepl:sandbox`
//! WIT world. It owns the JavaScript side of the sandbox — managed globals,
//! the promise bridge for inner calls and timers, result rendering — and
//! nothing else: every capability is a WIT import answered by the host.

use std::cell::{Cell, RefCell};

use rquickjs::allocator::{Allocator, RustAllocator};
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Module, Object, Persistent, Promise, Runtime, Value,
};

wit_bindgen::generate!({ world: "guest", path: "../wit" });

use exports::wrepl::sandbox::repl::Guest;
use rquickjs::promise::PromiseState;
use wrepl::sandbox::calls;
use wrepl::sandbox::host;
use wrepl::sandbox::types::{Completion, Config, ConsoleStream as Stream, EvalOutcome, JsError};

/// The managed-globals prelude. Evaluated once per runtime; returns the control
/// object the Rust side drives.
const PRELUDE: &str = include_str!("prelude.js");

/// QuickJS stack limit while booting (bytes).
const BOOT_STACK_LIMIT: usize = 256 << 10;

/// Message used wherever a module load is attempted.
const SEALED: &str = "modules are not available in the wrepl sealed sandbox: import/require cannot load anything; use the provided globals (tools, console, timers) instead";

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
    /// The prelude ran; `configure(tools, repoHint)` installs one sandbox's tools.
    Booted(Persistent<Function<'static>>),
    /// `init` ran: the control functions that drive each evaluation.
    Ready(Vec<Persistent<Function<'static>>>),
}

/// The control object's functions, looked up once by `init` (the object is
/// only reachable from here).
#[derive(Clone, Copy)]
enum Op {
    BeginEval,
    Finish,
    RenderValue,
    Complete,
    FireTimer,
    EndEval,
    DescribeError,
}

/// Property names of [`Op`]s on the control object, in order.
const OPS: [&str; 7] = ["beginEval", "finish", "renderValue", "complete", "fireTimer", "endEval", "describeError"];

/// A configured sandbox's control functions, in one context.
struct Control<'a, 'js> {
    ctx: &'a Ctx<'js>,
    fns: &'a [Persistent<Function<'static>>],
}

impl<'js> Control<'_, 'js> {
    fn get(&self, op: Op) -> rquickjs::Result<Function<'js>> {
        self.fns[op as usize].clone().restore(self.ctx)
    }
}

thread_local! {
    static JS: RefCell<Option<Js>> = const { RefCell::new(None) };
    /// Latched once the host asked to stop; cleared at the start of each eval.
    static INTERRUPTED: Cell<bool> = const { Cell::new(false) };
    /// Latched when the JavaScript heap is exhausted (see [`HeapLimit`]);
    /// never cleared: the context is unusable from then on.
    static HEAP_EXHAUSTED: Cell<bool> = const { Cell::new(false) };
    /// The JavaScript heap limit in bytes, set by `init` (unlimited while booting).
    static HEAP_LIMIT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// A refused allocation smaller than this means the heap is full to the
/// brim: QuickJS can no longer allocate even its own error objects (it then
/// throws `null`), and its state after such failures is not trustworthy.
/// Larger refusals (a huge string or array) leave room and stay catchable.
const EXHAUSTED_BELOW: usize = 16 << 10;

/// Bytes of bookkeeping counted per allocation (the allocator's header).
const ALLOC_OVERHEAD: usize = 8;

/// The QuickJS heap allocator: Rust's allocator with the heap limit enforced
/// here (instead of by QuickJS) so that a refusal can be told apart: a small
/// one latches [`HEAP_EXHAUSTED`].
struct HeapLimit {
    inner: RustAllocator,
    used: usize,
}

impl HeapLimit {
    fn admit(&mut self, extra: usize) -> bool {
        if self.used.saturating_add(extra) <= HEAP_LIMIT.with(|l| l.get()) {
            return true;
        }
        if extra < EXHAUSTED_BELOW {
            HEAP_EXHAUSTED.with(|h| h.set(true));
        }
        false
    }
}

unsafe impl Allocator for HeapLimit {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(size.saturating_add(ALLOC_OVERHEAD)) {
            return std::ptr::null_mut();
        }
        let p = self.inner.alloc(size);
        if !p.is_null() {
            // SAFETY: `p` was just returned by the inner allocator.
            self.used += unsafe { RustAllocator::usable_size(p) } + ALLOC_OVERHEAD;
        }
        p
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        if !self.admit(count.saturating_mul(size).saturating_add(ALLOC_OVERHEAD)) {
            return std::ptr::null_mut();
        }
        let p = self.inner.calloc(count, size);
        if !p.is_null() {
            // SAFETY: `p` was just returned by the inner allocator.
            self.used += unsafe { RustAllocator::usable_size(p) } + ALLOC_OVERHEAD;
        }
        p
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller passes a pointer from this allocator.
        let size = unsafe { RustAllocator::usable_size(ptr) } + ALLOC_OVERHEAD;
        self.used = self.used.saturating_sub(size);
        // SAFETY: as above.
        unsafe { self.inner.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a pointer from this allocator.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.admit(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; on failure the old block is left intact.
        let p = unsafe { self.inner.realloc(ptr, new_size) };
        if !p.is_null() {
            // SAFETY: `p` was just returned by the inner allocator.
            let new = unsafe { RustAllocator::usable_size(p) };
            self.used = self.used.saturating_sub(old).saturating_add(new);
        }
        p
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: forwarded contract.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}

fn heap_exhausted() -> bool {
    HEAP_EXHAUSTED.with(|h| h.get())
}

fn interrupted() -> bool {
    INTERRUPTED.with(|i| {
        if !i.get() && host::should_interrupt() {
            i.set(true);
        }
        i.get()
    })
}

/// Refuses every module: the sandbox is sealed.
struct Sealed;

impl Resolver for Sealed {
    fn resolve<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        _base: &str,
        _name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        Err(Exception::throw_type(ctx, SEALED))
    }
}

impl Loader for Sealed {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        _name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        Err(Exception::throw_type(ctx, SEALED))
    }
}

fn stream_of(n: i32) -> Stream {
    if n == 2 {
        Stream::Stderr
    } else {
        Stream::Stdout
    }
}

fn install_natives<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let native = Object::new(ctx.clone())?;
    native.set(
        "startCall",
        Function::new(ctx.clone(), |ctx: Ctx<'_>, tool: String, input: String| -> rquickjs::Result<u32> {
            match calls::start_call(&tool, &input) {
                Ok(id) => Ok(id),
                Err(e) => {
                    let err = Exception::from_message(ctx.clone(), &e.message)?;
                    err.set("name", "ToolCallError")?;
                    err.set("kind", e.kind)?;
                    Err(ctx.throw(err.into_value()))
                }
            }
        })?,
    )?;
    native.set("cancelCall", Function::new(ctx.clone(), |id: u32| calls::cancel_call(id))?)?;
    native.set(
        "setTimer",
        Function::new(ctx.clone(), |id: u32, ms: f64| -> bool {
            let ms = if ms.is_finite() && ms > 0.0 { ms.min(i32::MAX as f64) as u32 } else { 0 };
            host::set_timer(id, ms)
        })?,
    )?;
    native.set("clearTimer", Function::new(ctx.clone(), |id: u32| host::clear_timer(id))?)?;
    native.set(
        "write",
        Function::new(ctx.clone(), |stream: i32, text: String| host::console_write(stream_of(stream), &text))?,
    )?;
    native.set(
        "random",
        Function::new(ctx.clone(), || -> f64 {
            // 53 random bits -> [0, 1)
            (host::random_u64() >> 11) as f64 / (1u64 << 53) as f64
        })?,
    )?;
    native.set(
        "registerTool",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'_>,
             name: String,
             description: String,
             schema: String,
             display: String|
             -> rquickjs::Result<()> {
                host::register_tool(&name, &description, &schema, &display)
                    .map_err(|msg| Exception::throw_type(&ctx, &format!("registerTool: {msg}")))
            },
        )?,
    )?;
    native.set("unregisterTool", Function::new(ctx.clone(), |name: String| host::unregister_tool(&name))?)?;
    native.set("isPromise", Function::new(ctx.clone(), |v: Value<'_>| v.is_promise())?)?;
    native.set("staleManaged", Function::new(ctx.clone(), stale_managed)?)?;
    native.set("sealed", SEALED)?;
    Ok(native)
}

/// Create the runtime, its context and the managed globals: everything that
/// is the same for every sandbox. Runs either in `init` or, ahead of time, in
/// [`wizer_initialize`] when the guest is pre-initialised into a snapshot.
fn boot() -> Result<Js, String> {
    // The heap limit is enforced by the allocator, not by QuickJS (whose own
    // limit stays off), so an exhausted heap can be recognised.
    let rt = Runtime::new_with_alloc(HeapLimit { inner: RustAllocator, used: 0 })
        .map_err(|e| format!("cannot create the QuickJS runtime: {e}"))?;
    // `init` sets the sandbox's own stack limit; this one only has to fit
    // the prelude, well inside the guest's 1 MiB shadow stack.
    rt.set_max_stack_size(BOOT_STACK_LIMIT);
    rt.set_interrupt_handler(Some(Box::new(interrupted)));
    rt.set_loader(Sealed, Sealed);
    let ctx = Context::full(&rt).map_err(|e| format!("cannot create the QuickJS context: {e}"))?;
    let configure = ctx.with(|ctx| -> Result<Persistent<Function<'static>>, String> {
        let setup = || -> rquickjs::Result<Function<'_>> {
            let native = install_natives(&ctx)?;
            let f: Function = ctx.eval(PRELUDE)?;
            f.call((native,))
        };
        let configure = setup().catch(&ctx).map_err(|e| format!("prelude failed: {e}"))?;
        Ok(Persistent::save(&ctx, configure))
    })?;
    // Leave no garbage from the prelude in the snapshot.
    rt.run_gc();
    Ok(Js { stage: Stage::Booted(configure), ctx, rt })
}

/// Pre-initialisation entry point for the build's snapshot step (wizer): boots
/// the runtime so that instantiating the snapshot starts from a ready heap.
/// Calls no import but the clock, the interrupt poll and, to report a failed
/// boot, the console. The snapshot step removes this export again.
#[export_name = "wizer-initialize"]
pub extern "C" fn wizer_initialize() {
    let js = boot().unwrap_or_else(|e| {
        let msg = format!("wrepl guest boot failed: {e}\n");
        host::console_write(Stream::Stderr, &msg);
        panic!("{msg}")
    });
    JS.with(|slot| *slot.borrow_mut() = Some(js));
}

/// Indices of the managed globals (`names[i]` should hold `values[i]`) that
/// are no longer own, writable, configurable, non-enumerable data properties
/// of the global object holding exactly that value. Reads the properties
/// without creating descriptor objects or running any script code (the
/// global object is ordinary), so refreshing intact globals costs nothing.
fn stale_managed<'js>(
    ctx: Ctx<'js>,
    names: rquickjs::Array<'js>,
    values: rquickjs::Array<'js>,
) -> rquickjs::Result<Vec<u32>> {
    use rquickjs::qjs;
    const FLAGS: u32 =
        qjs::JS_PROP_GETSET | qjs::JS_PROP_ENUMERABLE | qjs::JS_PROP_WRITABLE | qjs::JS_PROP_CONFIGURABLE;
    const WANT: u32 = qjs::JS_PROP_WRITABLE | qjs::JS_PROP_CONFIGURABLE;
    let global = ctx.globals();
    let raw = ctx.as_raw().as_ptr();
    let mut stale = Vec::new();
    for i in 0..names.len() {
        let name: Value = names.get(i)?;
        let value: Value = values.get(i)?;
        // SAFETY: `raw` is this context; `name` is alive for the call.
        let atom = unsafe { qjs::JS_ValueToAtom(raw, name.as_raw()) };
        if atom == qjs::JS_ATOM_NULL {
            return Err(rquickjs::Error::Exception);
        }
        let mut desc = std::mem::MaybeUninit::<qjs::JSPropertyDescriptor>::uninit();
        // SAFETY: as above; `desc` is written when the property exists (1).
        let found = unsafe { qjs::JS_GetOwnProperty(raw, desc.as_mut_ptr(), global.as_raw(), atom) };
        // SAFETY: the atom was created above and is released once.
        unsafe { qjs::JS_FreeAtom(raw, atom) };
        match found {
            1 => {
                // SAFETY: `JS_GetOwnProperty` filled it; its values are owned here.
                let d = unsafe { desc.assume_init() };
                let intact = (d.flags as u32 & FLAGS) == WANT
                    // SAFETY: both values are alive.
                    && unsafe { qjs::JS_IsStrictEqual(raw, d.value, value.as_raw()) };
                // SAFETY: releases the references the descriptor holds.
                unsafe {
                    qjs::JS_FreeValue(raw, d.value);
                    qjs::JS_FreeValue(raw, d.getter);
                    qjs::JS_FreeValue(raw, d.setter);
                }
                if !intact {
                    stale.push(i as u32);
                }
            }
            0 => stale.push(i as u32),
            _ => return Err(rquickjs::Error::Exception),
        }
    }
    Ok(stale)
}

fn init(config: Config) -> Result<(), String> {
    let mut js = match JS.with(|js| js.borrow_mut().take()) {
        Some(js) => js,
        None => boot()?,
    };
    let configure = match &js.stage {
        Stage::Booted(f) => f.clone(),
        Stage::Ready(_) => {
            JS.with(|slot| *slot.borrow_mut() = Some(js));
            return Err("the sandbox is already initialised".into());
        }
    };
    HEAP_LIMIT.with(|l| {
        l.set(match config.memory_limit {
            0 => usize::MAX,
            n => n.min(usize::MAX as u64) as usize,
        })
    });
    js.rt.set_max_stack_size(config.stack_limit as usize);
    let control = js.ctx.with(|ctx| -> Result<Vec<Persistent<Function<'static>>>, String> {
        let setup = || -> rquickjs::Result<Object<'_>> {
            let tools = rquickjs::Array::new(ctx.clone())?;
            for (i, t) in config.tools.iter().enumerate() {
                let b = Object::new(ctx.clone())?;
                b.set("name", t.name.as_str())?;
                b.set("global", t.global.as_str())?;
                tools.set(i, b)?;
            }
            configure.restore(&ctx)?.call((tools, config.repo_hint.as_str()))
        };
        let control = setup().catch(&ctx).map_err(|e| format!("sandbox setup failed: {e}"))?;
        OPS.iter()
            .map(|name| {
                let f: Function = control.get(*name).map_err(|e| format!("sandbox control {name} missing: {e}"))?;
                Ok(Persistent::save(&ctx, f))
            })
            .collect()
    })?;
    js.stage = Stage::Ready(control);
    JS.with(|slot| *slot.borrow_mut() = Some(js));
    Ok(())
}

fn js_error<'js>(ctx: &Ctx<'js>, control: &Control<'_, 'js>, err: CaughtError<'js>) -> JsError {
    let value = match err {
        CaughtError::Exception(e) => e.into_value(),
        CaughtError::Value(v) => v,
        CaughtError::Error(e) => return internal_error(e.to_string()),
    };
    describe_error(ctx, control, value)
}

fn internal_error(message: String) -> JsError {
    JsError { name: "InternalError".into(), message, stack: String::new() }
}

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
        if heap_exhausted() || (n % JOBS_PER_INTERRUPT_CHECK == 0 && interrupted()) {
            return;
        }
    }
}

/// How many queued jobs run between two stop-request checks in [`run_jobs`].
const JOBS_PER_INTERRUPT_CHECK: u32 = 16;

fn base_outcome() -> EvalOutcome {
    EvalOutcome {
        value_json: None,
        text: String::new(),
        error: None,
        interrupted: false,
        poisoned: None,
        heap_exhausted: false,
    }
}

fn outcome_of(error: JsError) -> EvalOutcome {
    EvalOutcome { error: Some(error), ..base_outcome() }
}

fn interrupted_outcome() -> EvalOutcome {
    EvalOutcome { interrupted: true, ..outcome_of(internal_error("interrupted".into())) }
}

/// The heap is full: report it without running any more JavaScript (the
/// host replaces the context).
fn exhausted_outcome() -> EvalOutcome {
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

fn eval_in<'js>(ctx: &Ctx<'js>, control: &Control<'_, 'js>, script: String) -> EvalOutcome {
    if heap_exhausted() {
        return exhausted_outcome();
    }
    let call = |op: Op| control.get(op);
    match call(Op::BeginEval).and_then(|f| f.call::<_, Vec<String>>(())).catch(ctx) {
        Err(e) => {
            if interrupted() {
                return interrupted_outcome();
            }
            if heap_exhausted() {
                return exhausted_outcome();
            }
            return EvalOutcome {
                poisoned: Some("the managed globals could not be refreshed".into()),
                ..outcome_of(js_error(ctx, control, e))
            };
        }
        Ok(bad) if !bad.is_empty() => return EvalOutcome { poisoned: Some(bad.join(", ")), ..base_outcome() },
        Ok(_) => {}
    }
    let opts = {
        let mut o = rquickjs::context::EvalOptions::default();
        o.global = true;
        o.strict = false;
        o.backtrace_barrier = true;
        o.promise = true;
        o.filename = Some("<repl>".into());
        o
    };
    let outcome = (|| {
        let evaluated = ctx.eval_with_options::<Value, _>(script, opts).catch(ctx);
        // Fast path: the script finished synchronously with a primitive
        // value (nothing to await or deep-resolve). Its queued jobs still
        // run first, as on the general path.
        if let Ok(v) = &evaluated {
            if let Some(value) = settled_primitive(v) {
                run_jobs(ctx);
                if interrupted() {
                    return interrupted_outcome();
                }
                if heap_exhausted() {
                    return exhausted_outcome();
                }
                return match call(Op::RenderValue).and_then(|f| f.call::<_, Object>((value,))).catch(ctx) {
                    Ok(o) => rendered(&o),
                    Err(e) => failure(|| js_error(ctx, control, e)),
                };
            }
        }
        let started = evaluated.and_then(|p| call(Op::Finish).and_then(|f| f.call::<_, Promise>((p,))).catch(ctx));
        let promise = match started {
            Ok(p) => p,
            Err(e) => {
                if interrupted() {
                    return interrupted_outcome();
                }
                return failure(|| js_error(ctx, control, e));
            }
        };
        loop {
            run_jobs(ctx);
            if interrupted() {
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
                    let (ok, payload, kind) = match done.outcome {
                        Ok(json) => (true, json, String::new()),
                        Err(e) => (false, e.message, e.kind),
                    };
                    let _ = call(Op::Complete)
                        .and_then(|f| f.call::<_, ()>((done.id, ok, payload, kind)))
                        .catch(ctx);
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
    let _ = call(Op::EndEval).and_then(|f| f.call::<_, ()>(())).catch(ctx);
    if outcome.interrupted {
        // Jobs queued by the interrupted script would otherwise run at the
        // start of the next eval. With the interrupt latched, each one is
        // stopped at its first interrupt check; bounded in case of a flood.
        let mut n = 0;
        while n < 100_000 && ctx.execute_pending_job() {
            n += 1;
        }
    }
    outcome
}

/// The outcome of a completed evaluation from the prelude's rendering of its
/// value (`renderValue`: `{ json, text }`).
fn rendered(o: &Object<'_>) -> EvalOutcome {
    EvalOutcome {
        value_json: o.get::<_, Option<String>>("json").ok().flatten(),
        text: o.get("text").unwrap_or_default(),
        ..base_outcome()
    }
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
    let primitive = !(value.is_object() || value.is_function() || value.is_undefined());
    primitive.then_some(value)
}

struct Component;

impl Guest for Component {
    fn init(config: Config) -> Result<(), String> {
        init(config)
    }

    fn eval(script: String) -> EvalOutcome {
        INTERRUPTED.with(|i| i.set(false));
        JS.with(|js| {
            let js = js.borrow();
            let Some(Js { rt: _keep_runtime_alive, ctx, stage: Stage::Ready(fns) }) = js.as_ref() else {
                return outcome_of(internal_error("the sandbox was not initialised".into()));
            };
            ctx.with(|ctx| eval_in(&ctx, &Control { ctx: &ctx, fns }, script))
        })
    }
}

export!(Component);

/// rquickjs-sys's shim for `wasm32-unknown-unknown` reads the clock through
/// this symbol; answer it from the host's clock import so `Date.now()` works
/// and the module keeps no non-WIT imports.
#[no_mangle]
pub extern "C" fn __rquickjs_host_now_us() -> f64 {
    host::now_us()
}
