//! Managed globals: the prelude that defines them (the `prelude/*.js`
//! fragments, joined in a fixed order) and its Rust half — the check that
//! finds globals a script replaced, deleted or reconfigured, and the refresh
//! at the start of every evaluation that restores them or, when that is
//! impossible, poisons the context so the host replaces it.

use rquickjs::{qjs, Array, CatchResultExt, Ctx, Function, Object, Persistent, Value};

use crate::eval::Control;
use crate::eval::{base_outcome, exhausted_outcome, interrupted, interrupted_outcome, js_error, outcome_of};
use crate::heap::heap_exhausted;
use crate::natives::install_natives;
use crate::raw::{eval_without_source, new_atom};
use crate::wrepl::sandbox::types::EvalOutcome;

/// The managed-globals prelude. Evaluated once per runtime; returns the control
/// object the Rust side drives.
///
/// The fragments are consecutive pieces of ONE function expression (each but
/// the first begins at a `// ---- section` comment), so they only make sense
/// joined, in this order. The text is captured in the pre-initialised
/// snapshot: keep it byte-for-byte stable unless behaviour is meant to change.
const PRELUDE: &str = concat!(
    include_str!("prelude/00-core.js"),
    include_str!("prelude/10-errors.js"),
    include_str!("prelude/20-render.js"),
    include_str!("prelude/30-web.js"),
    include_str!("prelude/35-platform.js"),
    include_str!("prelude/40-calls.js"),
    include_str!("prelude/50-registry.js"),
    include_str!("prelude/60-control.js"),
    include_str!("prelude/70-configure.js"),
);

/// Evaluate the prelude with the native bridge: defines the managed globals
/// that are the same for every sandbox and returns `configure(tools, repoHint, prefix, shorthands)`.
pub(crate) fn boot_prelude<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    let native = install_natives(ctx)?;
    crate::platform::install(ctx, &native)?;
    let f = Function::from_value(eval_without_source(ctx, PRELUDE)?)?;
    f.call((native,))
}

/// The managed globals of a configured sandbox, read once by `init`: the
/// value each must hold and its name's atom, so the check before every
/// evaluation runs no JavaScript and creates no atoms or descriptor
/// objects. Drops before its runtime (it lives in the runtime's `Stage`).
pub(crate) struct Managed {
    rt: *mut qjs::JSRuntime,
    names: Vec<String>,
    atoms: Vec<qjs::JSAtom>,
    /// The values, each holding a reference of its own (released on drop):
    /// raw, so the check compares bits with no handle to restore per global.
    values: Vec<qjs::JSValue>,
    /// `o`, the per-eval object's global.
    o_atom: qjs::JSAtom,
    /// `then`, which the realm's Object.prototype must not have.
    then_atom: qjs::JSAtom,
    object_proto: Persistent<Object<'static>>,
}

/// Flags of a managed global: writable, configurable, not enumerable.
const MANAGED_FLAGS: i32 = (qjs::JS_PROP_WRITABLE | qjs::JS_PROP_CONFIGURABLE) as i32;

impl Managed {
    /// Read the managed globals from the control object (`managedNames`,
    /// `managedValues`, `objectProto`) once `configure` completed them.
    pub(crate) fn new<'js>(ctx: &Ctx<'js>, control: &Object<'js>) -> rquickjs::Result<Self> {
        let raw = ctx.as_raw().as_ptr();
        // SAFETY: `raw` is this live context.
        let rt = unsafe { qjs::JS_GetRuntime(raw) };
        let mut m = Managed {
            rt,
            names: Vec::new(),
            atoms: Vec::new(),
            values: Vec::new(),
            o_atom: new_atom(ctx, "o")?,
            then_atom: qjs::JS_ATOM_NULL,
            object_proto: Persistent::save(ctx, control.get::<_, Object>("objectProto")?),
        };
        m.then_atom = new_atom(ctx, "then")?;
        let names: Array = control.get("managedNames")?;
        let values: Array = control.get("managedValues")?;
        for i in 0..names.len() {
            let name: String = names.get(i)?;
            let value: Value = values.get(i)?;
            let atom = new_atom(ctx, &name)?;
            m.names.push(name);
            m.atoms.push(atom);
            // SAFETY: `raw` is this live context; the reference is owned by
            // `m` and released in its `Drop`.
            m.values.push(unsafe { qjs::JS_DupValue(raw, value.as_raw()) });
        }
        Ok(m)
    }

    /// Restore every managed global a script replaced, deleted or
    /// reconfigured, and install a fresh per-eval `o`. Returns what could
    /// not be restored (the context must then be replaced).
    fn refresh<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<Vec<String>> {
        const FLAGS: u32 =
            qjs::JS_PROP_GETSET | qjs::JS_PROP_ENUMERABLE | qjs::JS_PROP_WRITABLE | qjs::JS_PROP_CONFIGURABLE;
        const WANT: u32 = qjs::JS_PROP_WRITABLE | qjs::JS_PROP_CONFIGURABLE;
        let global = ctx.globals();
        let raw = ctx.as_raw().as_ptr();
        let mut bad = Vec::new();
        for ((name, &atom), &value) in self.names.iter().zip(&self.atoms).zip(&self.values) {
            let mut desc = std::mem::MaybeUninit::<qjs::JSPropertyDescriptor>::uninit();
            // SAFETY: `raw` is this context, the global object and the atom
            // are alive; `desc` is written when the property exists (1).
            let found = unsafe { qjs::JS_GetOwnProperty(raw, desc.as_mut_ptr(), global.as_raw(), atom) };
            let intact = match found {
                1 => {
                    // SAFETY: `JS_GetOwnProperty` filled it; its values are owned here.
                    let d = unsafe { desc.assume_init() };
                    // The same bits are the same value (an object, the usual
                    // case, is its pointer); other bits may still be a strictly
                    // equal value (a string with the same text elsewhere).
                    let intact = (d.flags as u32 & FLAGS) == WANT
                        // SAFETY: both values are alive.
                        && (d.value == value || unsafe { qjs::JS_IsStrictEqual(raw, d.value, value) });
                    // SAFETY: releases the references the descriptor holds
                    // (a data property's getter and setter are `undefined`,
                    // which holds none).
                    unsafe {
                        release(raw, d.value);
                        release(raw, d.getter);
                        release(raw, d.setter);
                    }
                    intact
                }
                0 => false,
                _ => return Err(rquickjs::Error::Exception),
            };
            if !intact {
                // SAFETY: a new reference to the value `self` holds.
                let value = unsafe { Value::from_raw(ctx.clone(), qjs::JS_DupValue(raw, value)) };
                if !define(ctx, &global, atom, value)? {
                    bad.push(name.clone());
                }
            }
        }
        let o = Object::new(ctx.clone())?;
        if !define(ctx, &global, self.o_atom, o.into_value())? {
            bad.push("o".into());
        }
        let proto = self.object_proto.clone().restore(ctx)?;
        // SAFETY: as above; no descriptor is asked for.
        match unsafe { qjs::JS_GetOwnProperty(raw, std::ptr::null_mut(), proto.as_raw(), self.then_atom) } {
            0 => {}
            1 => bad.push("Object.prototype.then".into()),
            _ => return Err(rquickjs::Error::Exception),
        }
        Ok(bad)
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        for &value in &self.values {
            // SAFETY: the reference `new` took, released once; the runtime
            // outlives this value.
            unsafe { qjs::JS_FreeValueRT(self.rt, value) };
        }
        for &atom in self.atoms.iter().chain([&self.o_atom, &self.then_atom]) {
            if atom != qjs::JS_ATOM_NULL {
                // SAFETY: each atom was created by `new_atom` in this
                // runtime, which outlives this value, and is released once.
                unsafe { qjs::JS_FreeAtomRT(self.rt, atom) };
            }
        }
    }
}

/// Release `v`'s reference, if it holds one (no call for `undefined` and
/// the other values without a count).
///
/// # Safety
/// `raw` is a live context and `v` a value owned by the caller.
unsafe fn release(raw: *mut qjs::JSContext, v: qjs::JSValue) {
    // SAFETY: the caller's contract.
    unsafe {
        if qjs::JS_VALUE_HAS_REF_COUNT(v) {
            qjs::JS_FreeValue(raw, v);
        }
    }
}


/// Define `atom` on the global object as a managed global holding `value`
/// (writable, configurable, not enumerable), like `Reflect.defineProperty`:
/// false when the object refuses (a non-configurable property).
fn define<'js>(ctx: &Ctx<'js>, global: &Object<'js>, atom: qjs::JSAtom, value: Value<'js>) -> rquickjs::Result<bool> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: the value's reference is handed to QuickJS (duplicated first,
    // so `value` still owns its own); the object and atom are alive.
    let r = unsafe {
        let v = qjs::JS_DupValue(raw, value.as_raw());
        qjs::JS_DefinePropertyValue(raw, global.as_raw(), atom, v, MANAGED_FLAGS)
    };
    match r {
        r if r < 0 => Err(rquickjs::Error::Exception),
        r => Ok(r != 0),
    }
}

/// Refresh the managed globals before an evaluation. `None` when the script
/// may run; otherwise the outcome that ends the evaluation: interrupted,
/// heap exhausted, or poisoned (a global could not be restored, or the
/// refresh itself failed).
pub(crate) fn refresh<'js>(ctx: &Ctx<'js>, control: &Control<'_, 'js>, managed: &Managed) -> Option<EvalOutcome> {
    match managed.refresh(ctx).catch(ctx) {
        Err(e) => {
            if interrupted() {
                return Some(interrupted_outcome());
            }
            if heap_exhausted() {
                return Some(exhausted_outcome());
            }
            Some(EvalOutcome {
                poisoned: Some("the managed globals could not be refreshed".into()),
                ..outcome_of(js_error(ctx, control, e))
            })
        }
        Ok(bad) if !bad.is_empty() => Some(EvalOutcome { poisoned: Some(bad.join(", ")), ..base_outcome() }),
        Ok(_) => None,
    }
}
