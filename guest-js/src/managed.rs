//! Managed globals: the prelude that defines them (the `prelude/*.js`
//! fragments, joined in a fixed order) and its Rust half — the check that
//! finds globals a script replaced, deleted or reconfigured, and the refresh
//! at the start of every evaluation that restores them or, when that is
//! impossible, poisons the context so the host replaces it.

use rquickjs::{CatchResultExt, Ctx, Function, Value};

use crate::eval::{base_outcome, exhausted_outcome, interrupted, interrupted_outcome, js_error, outcome_of};
use crate::eval::{Control, Op};
use crate::heap::heap_exhausted;
use crate::natives::install_natives;
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
    include_str!("prelude/40-calls.js"),
    include_str!("prelude/50-registry.js"),
    include_str!("prelude/60-control.js"),
    include_str!("prelude/70-configure.js"),
);

/// Evaluate the prelude with the native bridge: defines the managed globals
/// that are the same for every sandbox and returns `configure(tools, repoHint)`.
pub(crate) fn boot_prelude<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    let native = install_natives(ctx)?;
    let f: Function = ctx.eval(PRELUDE)?;
    f.call((native,))
}

/// Refresh the managed globals before an evaluation (the prelude's
/// `beginEval`). `None` when the script may run; otherwise the outcome that
/// ends the evaluation: interrupted, heap exhausted, or poisoned (a global
/// could not be restored, or the refresh itself failed).
pub(crate) fn refresh<'js>(ctx: &Ctx<'js>, control: &Control<'_, 'js>) -> Option<EvalOutcome> {
    match control.get(Op::BeginEval).and_then(|f| f.call::<_, Vec<String>>(())).catch(ctx) {
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

/// Indices of the managed globals (`names[i]` should hold `values[i]`) that
/// are no longer own, writable, configurable, non-enumerable data properties
/// of the global object holding exactly that value. Reads the properties
/// without creating descriptor objects or running any script code (the
/// global object is ordinary), so refreshing intact globals costs nothing.
pub(crate) fn stale_managed<'js>(
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
