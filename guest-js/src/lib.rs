//! The wrepl guest: a persistent QuickJS runtime behind the `wrepl:sandbox`
//! WIT world. It owns the JavaScript side of the sandbox — managed globals,
//! the promise bridge for inner calls and timers, result rendering — and
//! nothing else: every capability is a WIT import answered by the host.

use std::cell::{Cell, RefCell};

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Module, Object,
    Persistent, Promise, Runtime, Value,
};

wit_bindgen::generate!({ world: "guest", path: "../wit" });

use exports::wrepl::sandbox::repl::Guest;
use wrepl::sandbox::calls;
use wrepl::sandbox::host;
use rquickjs::promise::PromiseState;
use wrepl::sandbox::types::{Completion, Config, ConsoleStream as Stream, EvalOutcome, JsError};

/// The managed-globals prelude. Evaluated once per runtime; returns the control
/// object the Rust side drives.
const PRELUDE: &str = include_str!("prelude.js");

/// Message used wherever a module load is attempted.
const SEALED: &str = "modules are not available in the wrepl sealed sandbox: import/require cannot load anything; use the provided globals (tools, console, timers) instead";

struct Js {
    rt: Runtime,
    ctx: Context,
    control: Persistent<Object<'static>>,
}

thread_local! {
    static JS: RefCell<Option<Js>> = const { RefCell::new(None) };
    /// Latched once the host asked to stop; cleared at the start of each eval.
    static INTERRUPTED: Cell<bool> = const { Cell::new(false) };
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
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'_>, tool: String, input: String| -> rquickjs::Result<u32> {
                match calls::start_call(&tool, &input) {
                    Ok(id) => Ok(id),
                    Err(e) => {
                        let err = Exception::from_message(ctx.clone(), &e.message)?;
                        err.set("name", "ToolCallError")?;
                        err.set("kind", e.kind)?;
                        Err(ctx.throw(err.into_value()))
                    }
                }
            },
        )?,
    )?;
    native.set(
        "cancelCall",
        Function::new(ctx.clone(), |id: u32| calls::cancel_call(id))?,
    )?;
    native.set(
        "setTimer",
        Function::new(ctx.clone(), |id: u32, ms: f64| -> bool {
            let ms = if ms.is_finite() && ms > 0.0 {
                ms.min(i32::MAX as f64) as u32
            } else {
                0
            };
            host::set_timer(id, ms)
        })?,
    )?;
    native.set(
        "clearTimer",
        Function::new(ctx.clone(), |id: u32| host::clear_timer(id))?,
    )?;
    native.set(
        "write",
        Function::new(ctx.clone(), |stream: i32, text: String| {
            host::console_write(stream_of(stream), &text)
        })?,
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
            |ctx: Ctx<'_>, name: String, description: String, schema: String, display: String| -> rquickjs::Result<()> {
                host::register_tool(&name, &description, &schema, &display)
                    .map_err(|msg| Exception::throw_type(&ctx, &format!("registerTool: {msg}")))
            },
        )?,
    )?;
    native.set("unregisterTool", Function::new(ctx.clone(), |name: String| host::unregister_tool(&name))?)?;
    native.set("sealed", SEALED)?;
    Ok(native)
}

fn init(config: Config) -> Result<(), String> {
    let rt = Runtime::new_with_alloc(rquickjs::allocator::RustAllocator)
        .map_err(|e| format!("cannot create the QuickJS runtime: {e}"))?;
    // RustAllocator: QuickJS's own malloc accounting does not work on this
    // target, so the limit would silently be off with the default allocator.
    rt.set_memory_limit(config.memory_limit.min(usize::MAX as u64) as usize);
    rt.set_max_stack_size(config.stack_limit as usize);
    rt.set_interrupt_handler(Some(Box::new(interrupted)));
    rt.set_loader(Sealed, Sealed);
    let ctx = Context::full(&rt).map_err(|e| format!("cannot create the QuickJS context: {e}"))?;
    let control = ctx.with(|ctx| -> Result<Persistent<Object<'static>>, String> {
        let setup = || -> rquickjs::Result<Object<'_>> {
            let native = install_natives(&ctx)?;
            let tools = rquickjs::Array::new(ctx.clone())?;
            for (i, t) in config.tools.iter().enumerate() {
                let b = Object::new(ctx.clone())?;
                b.set("name", t.name.as_str())?;
                b.set("global", t.global.as_str())?;
                tools.set(i, b)?;
            }
            let f: Function = ctx.eval(PRELUDE)?;
            f.call((native, tools, config.repo_hint.as_str()))
        };
        let control = setup()
            .catch(&ctx)
            .map_err(|e| format!("prelude failed: {e}"))?;
        Ok(Persistent::save(&ctx, control))
    })?;
    JS.with(|js| *js.borrow_mut() = Some(Js { rt, ctx, control }));
    Ok(())
}

fn js_error<'js>(ctx: &Ctx<'js>, control: &Object<'js>, err: CaughtError<'js>) -> JsError {
    let value = match err {
        CaughtError::Exception(e) => e.into_value(),
        CaughtError::Value(v) => v,
        CaughtError::Error(e) => {
            return JsError {
                name: "InternalError".into(),
                message: e.to_string(),
                stack: String::new(),
            }
        }
    };
    describe_error(ctx, control, value)
}

fn describe_error<'js>(ctx: &Ctx<'js>, control: &Object<'js>, value: Value<'js>) -> JsError {
    let described = control
        .get::<_, Function>("describeError")
        .and_then(|f| f.call::<_, Object>((value,)))
        .catch(ctx);
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

fn run_jobs(ctx: &Ctx<'_>) {
    while ctx.execute_pending_job() {
        if interrupted() {
            return;
        }
    }
}

fn interrupted_outcome() -> EvalOutcome {
    EvalOutcome {
        value_json: None,
        text: String::new(),
        error: Some(JsError {
            name: "InternalError".into(),
            message: "interrupted".into(),
            stack: String::new(),
        }),
        interrupted: true,
        poisoned: None,
    }
}

fn eval_in<'js>(ctx: &Ctx<'js>, control: &Object<'js>, script: String) -> EvalOutcome {
    let call = |name: &str| -> rquickjs::Result<Function<'js>> { control.get(name) };
    match call("beginEval").and_then(|f| f.call::<_, Vec<String>>(())).catch(ctx) {
        Err(e) => {
            return EvalOutcome {
                value_json: None,
                text: String::new(),
                error: Some(js_error(ctx, control, e)),
                interrupted: false,
                poisoned: Some("the managed globals could not be refreshed".into()),
            }
        }
        Ok(bad) if !bad.is_empty() => {
            return EvalOutcome {
                value_json: None,
                text: String::new(),
                error: None,
                interrupted: false,
                poisoned: Some(bad.join(", ")),
            }
        }
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
        let started = ctx
            .eval_with_options::<Value, _>(script, opts)
            .and_then(|p| call("finish").and_then(|f| f.call::<_, Promise>((p,))))
            .catch(ctx);
        let promise = match started {
            Ok(p) => p,
            Err(e) => {
                if interrupted() {
                    return interrupted_outcome();
                }
                return EvalOutcome {
                    value_json: None,
                    text: String::new(),
                    error: Some(js_error(ctx, control, e)),
                    interrupted: false,
        poisoned: None,
                };
            }
        };
        loop {
            run_jobs(ctx);
            if interrupted() {
                return interrupted_outcome();
            }
            match promise.state() {
                PromiseState::Resolved => {
                    let v: rquickjs::Result<Object> = promise.result().unwrap_or_else(|| {
                        Err(rquickjs::Error::new_from_js("pending", "settled result"))
                    });
                    return match v {
                        Ok(o) => EvalOutcome {
                            value_json: o.get::<_, Option<String>>("json").ok().flatten(),
                            text: o.get("text").unwrap_or_default(),
                            error: None,
                            interrupted: false,
        poisoned: None,
                        },
                        Err(e) => EvalOutcome {
                            value_json: None,
                            text: String::new(),
                            error: Some(JsError {
                                name: "InternalError".into(),
                                message: format!("result could not be read: {e}"),
                                stack: String::new(),
                            }),
                            interrupted: false,
        poisoned: None,
                        },
                    };
                }
                PromiseState::Rejected => {
                    let reason: Value = match promise.result::<Value>() {
                        Some(Err(rquickjs::Error::Exception)) => ctx.catch(),
                        Some(Ok(v)) => v,
                        _ => ctx.catch(),
                    };
                    return EvalOutcome {
                        value_json: None,
                        text: String::new(),
                        error: Some(describe_error(ctx, control, reason)),
                        interrupted: false,
        poisoned: None,
                    };
                }
                PromiseState::Pending => {}
            }
            match calls::next_completion() {
                None => {
                    return EvalOutcome {
                        value_json: None,
                        text: String::new(),
                        error: Some(JsError {
                            name: "Error".into(),
                            message: "the script's promise can never settle: it awaits something that nothing will resolve (no inner call or timer is pending)".into(),
                            stack: String::new(),
                        }),
                        interrupted: false,
        poisoned: None,
                    }
                }
                Some(Completion::Interrupted) => {
                    INTERRUPTED.with(|i| i.set(true));
                    return interrupted_outcome();
                }
                Some(Completion::Timer(id)) => {
                    let _ = call("fireTimer")
                        .and_then(|f| f.call::<_, ()>((id,)))
                        .catch(ctx);
                }
                Some(Completion::Call(done)) => {
                    let (ok, payload, kind) = match done.outcome {
                        Ok(json) => (true, json, String::new()),
                        Err(e) => (false, e.message, e.kind),
                    };
                    let _ = call("complete")
                        .and_then(|f| f.call::<_, ()>((done.id, ok, payload, kind)))
                        .catch(ctx);
                }
            }
        }
    })();
    // Timers and pending calls do not outlive the eval.
    let _ = call("endEval").and_then(|f| f.call::<_, ()>(())).catch(ctx);
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

struct Component;

impl Guest for Component {
    fn init(config: Config) -> Result<(), String> {
        if JS.with(|js| js.borrow().is_some()) {
            return Err("the sandbox is already initialised".into());
        }
        init(config)
    }

    fn eval(script: String) -> EvalOutcome {
        INTERRUPTED.with(|i| i.set(false));
        JS.with(|js| {
            let js = js.borrow();
            let Some(js) = js.as_ref() else {
                return EvalOutcome {
                    value_json: None,
                    text: String::new(),
                    error: Some(JsError {
                        name: "InternalError".into(),
                        message: "the sandbox was not initialised".into(),
                        stack: String::new(),
                    }),
                    interrupted: false,
        poisoned: None,
                };
            };
            let _keep_runtime_alive = &js.rt;
            js.ctx.with(|ctx| {
                let control = match js.control.clone().restore(&ctx) {
                    Ok(c) => c,
                    Err(e) => {
                        return EvalOutcome {
                            value_json: None,
                            text: String::new(),
                            error: Some(JsError {
                                name: "InternalError".into(),
                                message: format!("sandbox control object lost: {e}"),
                                stack: String::new(),
                            }),
                            interrupted: false,
        poisoned: None,
                        }
                    }
                };
                eval_in(&ctx, &control, script)
            })
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

