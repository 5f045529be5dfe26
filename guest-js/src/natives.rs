//! What Rust installs into the JavaScript runtime: the native bridge object
//! the prelude captures once at boot (inner tool calls, timers, console
//! output, randomness, tool registration, the managed-globals check) and the
//! sealed module loader. Each native is a thin adapter onto one WIT import;
//! the prelude does the validation that needs JavaScript semantics.

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{qjs, Ctx, Exception, Function, Module, Object, Promise, Value};

use crate::eval::{note_armed, pending_call};
use crate::wrepl::sandbox::types::ConsoleStream as Stream;
use crate::wrepl::sandbox::{calls, host};

/// Message used wherever a module load is attempted.
const SEALED: &str = "modules are not available in the wrepl sealed sandbox: import/require cannot load anything; use the provided globals (tools, console, timers) instead";

/// Refuses every module: the sandbox is sealed.
pub(crate) struct Sealed;

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

/// Which built-in class `v` is an instance of, for rendering: 1 a Date, 2 a
/// Map, 3 a Set, 0 anything else (a Proxy included). Reads the object's
/// class natively, where calling a brand-checking getter (`Map.prototype.size`)
/// would throw, and build a stack trace, for every object that is not one.
fn brand_of(v: Value<'_>) -> i32 {
    if !v.is_object() {
        return 0;
    }
    let raw = v.as_raw();
    // SAFETY: `v` is alive for the calls; they only read its class id.
    unsafe {
        if qjs::JS_IsDate(raw) {
            1
        } else if qjs::JS_IsMap(raw) {
            2
        } else if qjs::JS_IsSet(raw) {
            3
        } else {
            0
        }
    }
}

fn stream_of(n: i32) -> Stream {
    if n == 2 {
        Stream::Stderr
    } else {
        Stream::Stdout
    }
}

/// `startCall(tool, input)`: start an inner call; its promise, or a thrown
/// `ToolCallError` when the host refuses to start it. The strings go to the
/// host as QuickJS's own UTF-8 copies, with no Rust copy in between.
fn start_call<'js>(
    ctx: Ctx<'js>,
    tool: rquickjs::String<'js>,
    input: rquickjs::String<'js>,
) -> rquickjs::Result<Promise<'js>> {
    match with_str(&ctx, &tool, |t| with_str(&ctx, &input, |i| calls::start_call(t, i)))?? {
        Ok(id) => pending_call(&ctx, id, &tool),
        Err(e) => {
            let err = Exception::from_message(ctx.clone(), &e.message)?;
            err.set("name", "ToolCallError")?;
            err.set("kind", e.kind)?;
            Err(ctx.throw(err.into_value()))
        }
    }
}

/// `f` of the UTF-8 text of `s`, borrowed from QuickJS for the call (a string
/// that is not valid UTF-8, one with a lone surrogate, is an error, as in
/// rquickjs's own conversion).
fn with_str<'js, T>(ctx: &Ctx<'js>, s: &rquickjs::String<'js>, f: impl FnOnce(&str) -> T) -> rquickjs::Result<T> {
    let raw = ctx.as_raw().as_ptr();
    let mut len = 0;
    // SAFETY: `raw` is this live context and `s` a live string; the text is
    // released below, after its last use.
    let ptr = unsafe { qjs::JS_ToCStringLen(raw, &mut len, s.as_raw()) };
    if ptr.is_null() {
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: QuickJS wrote `len` bytes at `ptr`, alive until freed.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize) };
    let result = std::str::from_utf8(bytes).map(f);
    // SAFETY: released once, after the last use of `bytes`.
    unsafe { qjs::JS_FreeCString(raw, ptr) };
    Ok(result?)
}

/// The native bridge object handed to the prelude (its `native` parameter).
pub(crate) fn install_natives<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let native = Object::new(ctx.clone())?;
    native.set("startCall", Function::new(ctx.clone(), start_call)?)?;
    native.set("cancelCall", Function::new(ctx.clone(), |id: u32| calls::cancel_call(id))?)?;
    native.set(
        "setTimer",
        Function::new(ctx.clone(), |id: u32, ms: f64| -> bool {
            let ms = if ms.is_finite() && ms > 0.0 { ms.min(i32::MAX as f64) as u32 } else { 0 };
            let armed = host::set_timer(id, ms);
            if armed {
                note_armed();
            }
            armed
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
    native.set("brandOf", Function::new(ctx.clone(), brand_of)?)?;
    native.set("sealed", SEALED)?;
    Ok(native)
}
