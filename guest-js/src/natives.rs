//! What Rust installs into the JavaScript runtime: the native bridge object
//! the prelude captures once at boot (inner tool calls, timers, console
//! output, randomness, tool registration, the managed-globals check) and the
//! module loader, which knows only the modules `import` loaded through the
//! `ImportModule` tool. Each native is a thin adapter onto one WIT import;
//! the prelude does the validation that needs JavaScript semantics.

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use std::cell::RefCell;

use rquickjs::function::Opt;
use rquickjs::{qjs, Ctx, Exception, Function, Module, Object, Persistent, Promise, Value};

use crate::eval::{note_armed, pending_call};
use crate::raw::with_str;
use crate::wrepl::sandbox::types::ConsoleStream as Stream;
use crate::wrepl::sandbox::{calls, host};

/// Message used wherever a module that was not loaded is imported.
const SEALED: &str = "modules are not available in the wrepl sealed sandbox: import/require cannot load anything; use the provided globals (tools, console, timers) instead";

/// A package's files as the `ImportModule` tool returned them.
struct Package {
    entry: String,
    files: std::collections::BTreeMap<String, String>,
    /// The files' bytes, held against the heap limit while registered.
    _charge: crate::heap::Charge,
}

thread_local! {
    /// The modules loaded so far, by the name scripts import them by.
    static MODULES: RefCell<std::collections::BTreeMap<String, Package>> =
        const { RefCell::new(std::collections::BTreeMap::new()) };
}

/// The module key of file `rel` of package `name` (what stack traces show).
fn module_key(name: &str, rel: &str) -> String {
    format!("{name}#{rel}")
}

/// `rel` joined to the directory of `from` inside a package (`.`, `..`
/// resolved); `None` when it leaves the package.
fn join_inside(from: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for c in rel.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// `registerModule(name, entry, files)`: the files (`[[path, text], ...]`)
/// the `ImportModule` tool loaded for `name`, which `import(name)` then
/// finds. Held against the heap limit (a RangeError when they do not fit).
fn register_module<'js>(
    ctx: Ctx<'js>,
    name: String,
    entry: String,
    files: Vec<Vec<String>>,
) -> rquickjs::Result<()> {
    let mut map = std::collections::BTreeMap::new();
    let mut bytes = 0usize;
    for f in files {
        let [path, text]: [String; 2] = f
            .try_into()
            .map_err(|_| Exception::throw_type(&ctx, "registerModule: each file is a [path, text] pair"))?;
        bytes = bytes.saturating_add(path.len() + text.len());
        map.insert(path, text);
    }
    if name.contains('#') || !map.contains_key(&entry) {
        return Err(Exception::throw_type(&ctx, &format!("registerModule: {name:?} has no file {entry:?}")));
    }
    let Some(charge) = crate::heap::charge(bytes) else {
        let (limit, used) = crate::heap::usage();
        return Err(Exception::throw_range(
            &ctx,
            &format!(
                "the module {name:?} is {bytes} bytes of source, more than the JavaScript heap has left ({} of its {limit} bytes are free)",
                limit.saturating_sub(used)
            ),
        ));
    };
    MODULES.with(|m| m.borrow_mut().insert(name, Package { entry, files: map, _charge: charge }));
    Ok(())
}

/// Resolves imports against the loaded modules only: a module's name (as
/// the settings configure it, loaded by `import` through the
/// `ImportModule` tool), or a relative path inside the importing package.
pub(crate) struct Modules;

impl Resolver for Modules {
    fn resolve<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        let found = MODULES.with(|m| {
            let m = m.borrow();
            if let Some(p) = m.get(name) {
                return Ok(module_key(name, &p.entry));
            }
            if name.starts_with("./") || name.starts_with("../") {
                if let Some((pkg, rel)) = base.split_once('#') {
                    let target = join_inside(rel, name)
                        .ok_or_else(|| format!("{base} imports {name:?}, which leaves its package"))?;
                    return match m.get(pkg) {
                        Some(p) if p.files.contains_key(&target) => Ok(module_key(pkg, &target)),
                        _ => Err(format!("{base} imports {name:?}, which is not a file of its package")),
                    };
                }
            }
            Err(format!(
                "cannot import {name:?}: this is a sealed sandbox; a script imports only the modules the settings' \
                 \"modules\" name, by name, with import or import() in its own code (which loads them first)"
            ))
        });
        found.map_err(|msg| Exception::throw_type(ctx, &msg))
    }
}

impl Loader for Modules {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        key: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        let source = MODULES.with(|m| {
            let m = m.borrow();
            let (pkg, rel) = key.split_once('#')?;
            m.get(pkg)?.files.get(rel).cloned()
        });
        match source {
            Some(text) => Module::declare(ctx.clone(), key, text),
            None => Err(Exception::throw_type(ctx, SEALED)),
        }
    }
}

/// Which built-in class `v` is an instance of, for rendering: 1 a Date, 2 a
/// Map, 3 a Set, 4 a RegExp, 5 a WeakMap, 6 a WeakSet, 7 a Proxy, 8 a WeakRef,
/// 9 an ArrayBuffer, 10 a DataView, 0 anything else (the class of a Proxy's
/// target is not looked at). Reads the object's
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
        } else if qjs::JS_IsRegExp(raw) {
            4
        } else if qjs::JS_IsWeakMap(raw) {
            5
        } else if qjs::JS_IsWeakSet(raw) {
            6
        } else if qjs::JS_IsProxy(raw) {
            7
        } else if qjs::JS_IsWeakRef(raw) {
            8
        } else if qjs::JS_IsArrayBuffer(raw) {
            9
        } else if qjs::JS_IsDataView(raw) {
            10
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

thread_local! {
    /// The prelude's `inputRejected(name, error)`: the rejected promise of a
    /// call whose input cannot be written as JSON (set once, at boot).
    static INPUT_REJECTED: RefCell<Option<Persistent<Function<'static>>>> = const { RefCell::new(None) };
}

/// An inner call of `tool` (its name as the script sees it, and as UTF-8)
/// with `input`: the call's promise. Never throws: an input that cannot be
/// written as JSON (a cycle, a BigInt, a throwing `toJSON`), and a call the
/// host refuses to start, give a rejected promise. `undefined`, and an input
/// JSON has no text for (a function), are `{}`.
fn call_tool<'js>(
    ctx: &Ctx<'js>,
    tool: &rquickjs::String<'js>,
    name: &str,
    input: Option<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    let json = match input.filter(|v| !v.is_undefined()) {
        None => None,
        Some(v) => {
            // SAFETY: `raw` is this live context and `v` a live value; the
            // result is a new reference (or an exception).
            let j = unsafe { qjs::JS_JSONStringify(raw, v.as_raw(), qjs::JS_UNDEFINED, qjs::JS_UNDEFINED) };
            // SAFETY: inspects the tag of the value just returned.
            if unsafe { qjs::JS_IsException(j) } {
                let error = ctx.catch();
                let rejected = INPUT_REJECTED.with(|f| f.borrow().clone());
                return match rejected {
                    Some(f) => f.restore(ctx)?.call((tool.clone(), error)),
                    None => rejected_with(ctx, error),
                };
            }
            // SAFETY: takes the reference just returned.
            Some(unsafe { Value::from_raw(ctx.clone(), j) })
        }
    };
    // As many calls as the host allows are in flight: this one waits its
    // turn (and starts, in order, when one completes).
    if crate::eval::must_queue() {
        return crate::eval::queue_call(ctx, name, json.as_ref().filter(|v| v.is_string()), tool)
            .map(Promise::into_value);
    }
    let started = match json.as_ref().and_then(Value::as_string) {
        Some(text) => with_str(ctx, text, |i| calls::start_call(name, i)),
        None => Ok(calls::start_call(name, "{}")),
    };
    let refused = match started {
        Ok(Ok(id)) => match pending_call(ctx, id, tool) {
            Ok(p) => return Ok(p.into_value()),
            Err(e) => e,
        },
        Ok(Err(e)) => {
            let err = Exception::from_message(ctx.clone(), &e.message)?;
            err.set("name", "ToolCallError")?;
            err.set("kind", e.kind)?;
            return rejected_with(ctx, err.into_value());
        }
        Err(e) => e,
    };
    let error = match refused {
        rquickjs::Error::Exception => ctx.catch(),
        other => Exception::from_message(ctx.clone(), &other.to_string())?.into_value(),
    };
    rejected_with(ctx, error)
}

/// `setInputRejected(f)`: keep the prelude's `inputRejected` (see
/// [`INPUT_REJECTED`]).
fn set_input_rejected<'js>(ctx: Ctx<'js>, f: Function<'js>) {
    let saved = Persistent::save(&ctx, f);
    // One boot per instance sets it once. A value left by another runtime
    // is forgotten, not released: that runtime may be gone.
    if let Some(old) = INPUT_REJECTED.with(|slot| slot.borrow_mut().replace(saved)) {
        std::mem::forget(old);
    }
}

/// A promise rejected with `reason`.
fn rejected_with<'js>(ctx: &Ctx<'js>, reason: Value<'js>) -> rquickjs::Result<Value<'js>> {
    let (promise, _, reject) = Promise::new(ctx)?;
    reject.call::<_, ()>((reason,))?;
    Ok(promise.into_value())
}

/// `callTool(tool, input)`: an inner call by the tool's name (the prelude's
/// shorthands); see [`call_tool`].
fn call_tool_named<'js>(
    ctx: Ctx<'js>,
    tool: rquickjs::String<'js>,
    input: Opt<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let name = tool.to_string()?;
    call_tool(&ctx, &tool, &name, input.0)
}

/// `startCall(tool, input)`: an inner call as `callTool` makes it, and a
/// function that abandons it: `[promise, cancel]`. `cancel()` stops the
/// call at the host (or keeps a queued call from starting); the promise
/// then never settles, so the caller settles its own.
pub(crate) fn start_call<'js>(
    ctx: Ctx<'js>,
    tool: rquickjs::String<'js>,
    input: Opt<Value<'js>>,
) -> rquickjs::Result<rquickjs::Array<'js>> {
    let before = crate::eval::last_call_seq();
    let promise = call_tool_named(ctx.clone(), tool, input)?;
    let seq = crate::eval::last_call_seq();
    // A call refused before it was made has nothing to abandon.
    let made = seq != before;
    let cancel = Function::new(ctx.clone(), move || made && crate::eval::abandon_call(seq))?;
    let pair = rquickjs::Array::new(ctx)?;
    pair.set(0, promise)?;
    pair.set(1, cancel)?;
    Ok(pair)
}

/// `toolFunction(tool, global)`: the global function of one tool, named
/// `global`, that calls it with its one argument as the input. Native, so
/// an inner call runs no JavaScript of the prelude.
fn tool_function<'js>(ctx: Ctx<'js>, tool: rquickjs::String<'js>, global: String) -> rquickjs::Result<Function<'js>> {
    let name = tool.to_string()?;
    Function::new(ctx, move |ctx: Ctx<'js>, input: Opt<Value<'js>>| call_tool(&ctx, &tool, &name, input.0))?
        .with_length(1)?
        .with_name(global)
}


/// The native bridge object handed to the prelude (its `native` parameter).
pub(crate) fn install_natives<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let native = Object::new(ctx.clone())?;
    native.set("callTool", Function::new(ctx.clone(), call_tool_named)?)?;
    native.set("toolFunction", Function::new(ctx.clone(), tool_function)?)?;
    native.set("setInputRejected", Function::new(ctx.clone(), set_input_rejected)?)?;
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
    native.set("registerModule", Function::new(ctx.clone(), register_module)?)?;
    Ok(native)
}
