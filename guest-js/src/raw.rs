//! Small helpers over QuickJS's C API that several parts of the guest use:
//! evaluating trusted script text from bytecode that keeps no source, new
//! atoms, and borrowing a string's UTF-8 text.

use rquickjs::{qjs, Ctx, Value};

/// Evaluate `script` (a strict global script) from bytecode that keeps no
/// source text. QuickJS keeps the text of every function it parses, for
/// `Function.prototype.toString`: for the prelude, its whole text and again
/// each nested function's, all in the booted heap that every sandbox maps.
/// Compiled, written without source and read back, the prelude's functions
/// keep their line numbers for stack traces and print as `[native code]`.
pub(crate) fn eval_without_source<'js>(ctx: &Ctx<'js>, script: &str) -> rquickjs::Result<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    let source = std::ffi::CString::new(script)?;
    let flags = (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32;
    // SAFETY: `raw` is this live context; the source is NUL-terminated as
    // JS_Eval requires and outlives the call.
    let compiled = unsafe { qjs::JS_Eval(raw, source.as_ptr(), script.len() as _, c"eval_script".as_ptr(), flags) };
    // SAFETY: takes ownership of the returned value (an exception is an error).
    let compiled = unsafe { Value::from_raw(ctx.clone(), compiled) };
    if compiled.is_exception() {
        return Err(rquickjs::Error::Exception);
    }
    let mut len = 0;
    let write_flags = (qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE) as i32;
    // SAFETY: the compiled script is alive; the buffer is freed below.
    let bytes = unsafe { qjs::JS_WriteObject(raw, &mut len, compiled.as_raw(), write_flags) };
    drop(compiled);
    if bytes.is_null() {
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: `bytes` holds `len` bytes this context just wrote: trusted
    // bytecode, as JS_READ_OBJ_BYTECODE requires. The buffer is then freed.
    let read = unsafe {
        let v = qjs::JS_ReadObject(raw, bytes, len, qjs::JS_READ_OBJ_BYTECODE as i32);
        qjs::js_free(raw, bytes.cast());
        v
    };
    // SAFETY: inspects the tag of a value owned here.
    if unsafe { qjs::JS_IsException(read) } {
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: JS_EvalFunction takes ownership of the function; the result
    // is owned here.
    let result = unsafe { Value::from_raw(ctx.clone(), qjs::JS_EvalFunction(raw, read)) };
    if result.is_exception() {
        return Err(rquickjs::Error::Exception);
    }
    Ok(result)
}

/// The atom of `name` (a reference owned by the caller).
pub(crate) fn new_atom(ctx: &Ctx<'_>, name: &str) -> rquickjs::Result<qjs::JSAtom> {
    // SAFETY: the context is alive; the bytes are read for the call only.
    let atom = unsafe { qjs::JS_NewAtomLen(ctx.as_raw().as_ptr(), name.as_ptr().cast(), name.len() as _) };
    if atom == qjs::JS_ATOM_NULL {
        return Err(rquickjs::Error::Exception);
    }
    Ok(atom)
}

/// `f` of the UTF-8 text of `s`, borrowed from QuickJS for the call (a string
/// that is not valid UTF-8, one with a lone surrogate, is an error, as in
/// rquickjs's own conversion).
pub(crate) fn with_str<'js, T>(
    ctx: &Ctx<'js>,
    s: &rquickjs::String<'js>,
    f: impl FnOnce(&str) -> T,
) -> rquickjs::Result<T> {
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
