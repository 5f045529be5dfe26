//! The web-platform globals scripts written for browsers, Node and Deno
//! assume (`URL`, `TextEncoder`, `crypto`, `fetch`, `Intl`, ...).
//!
//! They are installed lazily: the prelude defines an accessor for each name,
//! and the first script that touches one loads its group — one of the
//! `platform/*.js` files, compiled then — so a context that never uses them
//! pays neither the time nor the memory (the booted heap every context maps
//! stays as it was). The group files are plain JavaScript over the natives
//! here, which do what JavaScript cannot do well: the WHATWG URL parser (the
//! `url` crate), UTF-8 and base64, SHA digests and HMAC (RustCrypto), and
//! random bytes for `crypto` (ChaCha20 keyed by the host's recorded random
//! draws, so a resumed session sees the same values).

use std::cell::Cell;

use rquickjs::function::Opt;
use rquickjs::{qjs, Array, ArrayBuffer, Ctx, Exception, Function, Object, TypedArray, Value};

thread_local! {
    /// The prelude's `lazyAccess(name, value, isSet)` (set once, at boot;
    /// a reference of its own, never released: it lives as long as the
    /// runtime, which is the instance's).
    static LAZY_HOOK: Cell<qjs::JSValue> = const { Cell::new(qjs::JS_UNDEFINED) };
}

/// The getter and setter of every lazy global: one native function object
/// per name (its data: the name), which calls the prelude's hook. Native,
/// with the name held inline, it is one small object per global in the
/// booted heap: closures cost several each (the function, its captured
/// variables), and every object of the booted heap is a page a context's
/// collections write to.
unsafe extern "C" fn lazy_accessor(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    argc: std::ffi::c_int,
    argv: *mut qjs::JSValue,
    _magic: std::ffi::c_int,
    data: *mut qjs::JSValue,
) -> qjs::JSValue {
    let hook = LAZY_HOOK.with(Cell::get);
    // SAFETY: QuickJS passes the function's one data value and `argc`
    // arguments; JS_Call borrows them and returns a new reference.
    unsafe {
        let set = argc > 0;
        let mut args = [*data, if set { *argv } else { qjs::JS_UNDEFINED }, if set { qjs::JS_TRUE } else { qjs::JS_FALSE }];
        qjs::JS_Call(ctx, hook, qjs::JS_UNDEFINED, 3, args.as_mut_ptr())
    }
}

/// `defineLazy(hook, names)`: an accessor on the global object for each of
/// `names` whose getter and setter call `hook(name, value, isSet)`; returns
/// the accessor functions, in order, so the hook can tell a global still
/// lazy from one a script replaced.
fn define_lazy<'js>(ctx: Ctx<'js>, hook: Function<'js>, names: Vec<String>) -> rquickjs::Result<Array<'js>> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: a new reference to the live hook, kept for the runtime's life.
    let old = LAZY_HOOK.with(|h| h.replace(unsafe { qjs::JS_DupValue(raw, hook.as_raw()) }));
    // One boot per instance sets it once; a value left by another runtime
    // is forgotten, not released (that runtime may be gone).
    let _ = old;
    let fns = Array::new(ctx.clone())?;
    let global = ctx.globals();
    for (i, name) in names.iter().enumerate() {
        let name_value = rquickjs::String::from_str(ctx.clone(), name)?;
        let mut data = [name_value.as_raw()];
        // SAFETY: `raw` is this live context; QuickJS copies (dups) the data.
        let f = unsafe { qjs::JS_NewCFunctionData(raw, Some(lazy_accessor), 1, 0, 1, data.as_mut_ptr()) };
        // SAFETY: takes the new function's reference (an exception is an error).
        let f = unsafe { Value::from_raw(ctx.clone(), f) };
        if f.is_exception() {
            return Err(rquickjs::Error::Exception);
        }
        let atom = crate::raw::new_atom(&ctx, name)?;
        // SAFETY: the global object, atom and function are alive; the call
        // takes the two function references given to it; the atom is
        // released after.
        let ok = unsafe {
            let ok = qjs::JS_DefinePropertyGetSet(
                raw,
                global.as_raw(),
                atom,
                qjs::JS_DupValue(raw, f.as_raw()),
                qjs::JS_DupValue(raw, f.as_raw()),
                qjs::JS_PROP_CONFIGURABLE as i32,
            );
            qjs::JS_FreeAtom(raw, atom);
            ok
        };
        if ok < 0 {
            return Err(rquickjs::Error::Exception);
        }
        fns.set(i, f)?;
    }
    Ok(fns)
}

/// The group files, by the name `load(name)` takes.
const GROUPS: &[(&str, &str)] = &[
    ("url", include_str!("platform/url.js")),
    ("encoding", include_str!("platform/encoding.js")),
    ("crypto", include_str!("platform/crypto.js")),
    ("events", include_str!("platform/events.js")),
    ("clone", include_str!("platform/clone.js")),
    ("fetch", include_str!("platform/fetch.js")),
    ("intl", include_str!("platform/intl.js")),
    ("inspect", include_str!("platform/inspect.js")),
];

/// `platformGroup(name)`: the group's function (`(platform, load) => exports`),
/// compiled now. An unknown name is a TypeError.
fn platform_group<'js>(ctx: Ctx<'js>, name: String) -> rquickjs::Result<Value<'js>> {
    let Some((_, source)) = GROUPS.iter().find(|(n, _)| *n == name) else {
        return Err(Exception::throw_type(&ctx, &format!("no platform group named {name:?}")));
    };
    crate::raw::eval_without_source(&ctx, source)
}

/// `f` of the bytes of a Uint8Array, borrowed (a detached one is empty).
/// `f` runs no JavaScript, so the bytes cannot change or move meanwhile.
fn with_bytes<T>(view: &TypedArray<'_, u8>, f: impl FnOnce(&[u8]) -> T) -> T {
    // SAFETY: the view is alive for the call and no JavaScript runs while
    // the slice is used.
    f(unsafe { view.as_bytes() }.unwrap_or(&[]))
}

/// Hold `bytes` of working memory against the heap limit while a native
/// runs (its Rust buffers, which QuickJS does not count), or throw a
/// RangeError that says so: the native never takes the guest past its
/// memory cap.
fn working(ctx: &Ctx<'_>, bytes: usize, what: &str) -> rquickjs::Result<crate::heap::Charge> {
    crate::heap::charge(bytes).ok_or_else(|| {
        let (limit, used) = crate::heap::usage();
        Exception::throw_range(
            ctx,
            &format!(
                "{what} needs {bytes} bytes of working memory, more than the JavaScript heap has left ({} of its {limit} bytes are free): work on smaller pieces",
                limit.saturating_sub(used)
            ),
        )
    })
}

/// `f` of a JavaScript string's UTF-8 text (borrowed from QuickJS, which
/// counts it; the caller made the string well-formed).
fn with_text<'js, T>(ctx: &Ctx<'js>, s: &rquickjs::String<'js>, f: impl FnOnce(&str) -> T) -> rquickjs::Result<T> {
    crate::raw::with_str(ctx, s, f)
}

/// A new ArrayBuffer holding a copy of `bytes` (in the counted heap).
fn array_buffer<'js>(ctx: &Ctx<'js>, bytes: &[u8]) -> rquickjs::Result<ArrayBuffer<'js>> {
    ArrayBuffer::new_copy(ctx.clone(), bytes)
}

/// A new Uint8Array holding a copy of `bytes` (in the counted heap).
fn uint8_array<'js>(ctx: &Ctx<'js>, bytes: &[u8]) -> rquickjs::Result<TypedArray<'js, u8>> {
    TypedArray::new_copy(ctx.clone(), bytes)
}

// ---- URL ---------------------------------------------------------------------

/// The parts of a URL the JavaScript `URL` reads: href, origin, protocol,
/// username, password, host, hostname, port, pathname, search, hash.
fn url_parts<'js>(ctx: &Ctx<'js>, url: &url::Url) -> rquickjs::Result<Array<'js>> {
    use url::quirks as q;
    let parts = Array::new(ctx.clone())?;
    let texts: [&str; 11] = [
        q::href(url),
        &q::origin(url),
        q::protocol(url),
        q::username(url),
        q::password(url),
        q::host(url),
        q::hostname(url),
        q::port(url),
        q::pathname(url),
        q::search(url),
        q::hash(url),
    ];
    for (i, t) in texts.iter().enumerate() {
        parts.set(i, *t)?;
    }
    Ok(parts)
}

/// Working memory of parsing `n` bytes of URL text: the serialization the
/// parser builds (percent-encoding may triple a part; the buffer grows by
/// doubling), bounded generously.
fn url_work(n: usize) -> usize {
    n.saturating_mul(4).saturating_add(4096)
}

/// `urlParse(input, base?)`: the parts of the URL, or `null` when `input`
/// (against `base`, when given) is not a valid URL.
fn url_parse<'js>(
    ctx: Ctx<'js>,
    input: rquickjs::String<'js>,
    base: Opt<rquickjs::String<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let parsed = with_text(&ctx, &input, |input| -> rquickjs::Result<Option<url::Url>> {
        let base_len = match &base.0 {
            Some(b) => with_text(&ctx, b, str::len)?,
            None => 0,
        };
        let _work = working(&ctx, url_work(input.len() + base_len), "URL")?;
        Ok(match &base.0 {
            None => url::Url::parse(input).ok(),
            Some(b) => with_text(&ctx, b, |b| {
                url::Url::parse(b).ok().and_then(|base| url::Url::options().base_url(Some(&base)).parse(input).ok())
            })?,
        })
    })??;
    match parsed {
        Some(url) => Ok(url_parts(&ctx, &url)?.into_value()),
        None => Ok(Value::new_null(ctx)),
    }
}

/// `urlSet(href, part, value)`: the parts after setting `part` (the name of a
/// URL attribute) of the URL `href`, as the WHATWG setters do: a value a
/// setter cannot take leaves the URL unchanged; for `href` it is `null`.
fn url_set<'js>(
    ctx: Ctx<'js>,
    href: rquickjs::String<'js>,
    part: String,
    value: rquickjs::String<'js>,
) -> rquickjs::Result<Value<'js>> {
    use url::quirks as q;
    let url = with_text(&ctx, &href, |href| {
        with_text(&ctx, &value, |value| -> rquickjs::Result<Option<url::Url>> {
            let _work = working(&ctx, url_work(href.len() + value.len()), "URL")?;
            let Ok(mut url) = url::Url::parse(href) else {
                return Ok(None);
            };
            // Each setter but href's ignores a value it cannot take, as the
            // standard's setters do.
            match part.as_str() {
                "href" => {
                    if q::set_href(&mut url, value).is_err() {
                        return Ok(None);
                    }
                }
                "protocol" => {
                    let _ = q::set_protocol(&mut url, value);
                }
                "username" => {
                    let _ = q::set_username(&mut url, value);
                }
                "password" => {
                    let _ = q::set_password(&mut url, value);
                }
                "host" => {
                    let _ = q::set_host(&mut url, value);
                }
                "hostname" => {
                    let _ = q::set_hostname(&mut url, value);
                }
                "port" => {
                    let _ = q::set_port(&mut url, value);
                }
                "pathname" => q::set_pathname(&mut url, value),
                "search" => q::set_search(&mut url, value),
                "hash" => q::set_hash(&mut url, value),
                other => return Err(Exception::throw_type(&ctx, &format!("URL has no settable part {other:?}"))),
            }
            Ok(Some(url))
        })
    })???;
    match url {
        Some(url) => Ok(url_parts(&ctx, &url)?.into_value()),
        None => Ok(Value::new_null(ctx)),
    }
}

/// `formParse(text)`: the name/value pairs of an
/// `application/x-www-form-urlencoded` string, flat (`[n0, v0, n1, v1, ...]`).
fn form_parse<'js>(ctx: Ctx<'js>, text: rquickjs::String<'js>) -> rquickjs::Result<Array<'js>> {
    let out = Array::new(ctx.clone())?;
    with_text(&ctx, &text, |text| -> rquickjs::Result<()> {
        let _work = working(&ctx, text.len().saturating_mul(2), "URLSearchParams")?;
        let mut i = 0;
        for (k, v) in url::form_urlencoded::parse(text.as_bytes()) {
            out.set(i, k.as_ref())?;
            out.set(i + 1, v.as_ref())?;
            i += 2;
        }
        Ok(())
    })??;
    Ok(out)
}

/// `formSerialize(pairs)`: the `application/x-www-form-urlencoded` text of
/// flat name/value pairs (strings).
fn form_serialize<'js>(ctx: Ctx<'js>, pairs: Array<'js>) -> rquickjs::Result<rquickjs::String<'js>> {
    let mut texts: Vec<rquickjs::String<'js>> = Vec::with_capacity(pairs.len());
    let mut total = 0usize;
    for item in pairs.iter::<rquickjs::String<'js>>() {
        let item = item?;
        total = total.saturating_add(with_text(&ctx, &item, str::len)?);
        texts.push(item);
    }
    // Percent-encoding at most triples the text; the serializer grows.
    let _work = working(&ctx, total.saturating_mul(6).saturating_add(64), "URLSearchParams")?;
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for pair in texts.chunks(2) {
        with_text(&ctx, &pair[0], |name| match pair.get(1) {
            Some(v) => with_text(&ctx, v, |value| {
                s.append_pair(name, value);
            }),
            None => {
                s.append_pair(name, "");
                Ok(())
            }
        })??;
    }
    rquickjs::String::from_str(ctx, &s.finish())
}

// ---- encoding ----------------------------------------------------------------

/// `utf8Encode(text)`: the UTF-8 bytes (the caller made `text` well-formed).
fn utf8_encode<'js>(ctx: Ctx<'js>, text: rquickjs::String<'js>) -> rquickjs::Result<TypedArray<'js, u8>> {
    with_text(&ctx, &text, |t| uint8_array(&ctx, t.as_bytes()))?
}

/// `utf8EncodeInto(text, dest)`: as much of `text` as fits into `dest`, whole
/// characters only: `[UTF-16 code units read, bytes written]`.
fn utf8_encode_into<'js>(
    ctx: Ctx<'js>,
    text: rquickjs::String<'js>,
    dest: TypedArray<'js, u8>,
) -> rquickjs::Result<Array<'js>> {
    let (read, written) = with_text(&ctx, &text, |text| {
        let (mut read, mut written) = (0usize, 0usize);
        if let Some(raw) = dest.as_raw() {
            // SAFETY: the view's bytes are alive for the call, and nothing else
            // touches them while this native runs.
            let out = unsafe { &mut *raw.as_ptr() };
            for c in text.chars() {
                let n = c.len_utf8();
                if written + n > out.len() {
                    break;
                }
                c.encode_utf8(&mut out[written..written + n]);
                written += n;
                read += c.len_utf16();
            }
        }
        (read, written)
    })?;
    let result = Array::new(ctx)?;
    result.set(0, read as f64)?;
    result.set(1, written as f64)?;
    Ok(result)
}

/// `utf8Decode(bytes, fatal, ignoreBOM)`: the text of UTF-8 `bytes`; invalid
/// sequences become U+FFFD (maximal subparts, as the Encoding standard
/// says), or, with `fatal`, throw a TypeError. A leading BOM is dropped
/// unless `ignoreBOM`.
fn utf8_decode<'js>(
    ctx: Ctx<'js>,
    bytes: TypedArray<'js, u8>,
    fatal: Opt<bool>,
    ignore_bom: Opt<bool>,
) -> rquickjs::Result<rquickjs::String<'js>> {
    with_bytes(&bytes, |bytes| {
        let body = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
            Some(rest) if !ignore_bom.0.unwrap_or(false) => rest,
            _ => bytes,
        };
        match std::str::from_utf8(body) {
            Ok(s) => rquickjs::String::from_str(ctx.clone(), s),
            Err(e) if fatal.0.unwrap_or(false) => Err(Exception::throw_type(
                &ctx,
                &format!("The encoded data was not valid for encoding utf-8 (at byte {})", e.valid_up_to()),
            )),
            Err(_) => {
                // The exact size first, so the one buffer is all there is.
                let size: usize =
                    body.utf8_chunks().map(|c| c.valid().len() + if c.invalid().is_empty() { 0 } else { 3 }).sum();
                let _work = working(&ctx, size, "TextDecoder.decode")?;
                let mut out = String::new();
                if out.try_reserve_exact(size).is_err() {
                    return Err(Exception::throw_range(&ctx, "TextDecoder.decode: out of memory"));
                }
                for c in body.utf8_chunks() {
                    out.push_str(c.valid());
                    if !c.invalid().is_empty() {
                        out.push('\u{FFFD}');
                    }
                }
                rquickjs::String::from_str(ctx.clone(), &out)
            }
        }
    })
}

/// `utf8Incomplete(bytes)`: how many bytes at the end of `bytes` begin a
/// UTF-8 sequence that more bytes could complete (0 to 3), for streaming.
fn utf8_incomplete(bytes: TypedArray<'_, u8>) -> u32 {
    with_bytes(&bytes, |bytes| {
        for back in 1..=3.min(bytes.len()) {
            let b = bytes[bytes.len() - back];
            if b & 0xC0 == 0x80 {
                continue; // a continuation byte: look further back
            }
            let need = match b {
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF4 => 4,
                _ => return 0,
            };
            if back >= need {
                return 0;
            }
            // The tail must be a valid prefix (e.g. E0 needs A0..BF next).
            let tail = &bytes[bytes.len() - back..];
            let second_ok = tail.get(1).is_none_or(|&c| match b {
                0xE0 => (0xA0..=0xBF).contains(&c),
                0xED => (0x80..=0x9F).contains(&c),
                0xF0 => (0x90..=0xBF).contains(&c),
                0xF4 => (0x80..=0x8F).contains(&c),
                _ => (0x80..=0xBF).contains(&c),
            });
            return if second_ok { back as u32 } else { 0 };
        }
        0
    })
}

/// `base64Encode(bytes)`: standard, padded base64.
fn base64_encode<'js>(ctx: Ctx<'js>, bytes: TypedArray<'js, u8>) -> rquickjs::Result<rquickjs::String<'js>> {
    use base64::Engine;
    with_bytes(&bytes, |bytes| {
        let size = bytes.len().div_ceil(3).saturating_mul(4);
        let _work = working(&ctx, size, "base64")?;
        let mut out = String::new();
        if out.try_reserve_exact(size).is_err() {
            return Err(Exception::throw_range(&ctx, "base64: out of memory"));
        }
        base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut out);
        rquickjs::String::from_str(ctx.clone(), &out)
    })
}

/// `base64Decode(text)`: the bytes of standard base64 (padding optional).
fn base64_decode<'js>(ctx: Ctx<'js>, text: rquickjs::String<'js>) -> rquickjs::Result<TypedArray<'js, u8>> {
    use base64::Engine;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    with_text(&ctx, &text, |text| {
        let size = text.len() / 4 * 3 + 3;
        let _work = working(&ctx, size, "base64")?;
        let mut out = Vec::new();
        if out.try_reserve_exact(size).is_err() {
            return Err(Exception::throw_range(&ctx, "base64: out of memory"));
        }
        match engine.decode_vec(text.as_bytes(), &mut out) {
            Ok(()) => uint8_array(&ctx, &out),
            Err(e) => Err(Exception::throw_type(&ctx, &format!("invalid base64: {e}"))),
        }
    })?
}

// ---- crypto ------------------------------------------------------------------

/// The digest algorithms `crypto.subtle` knows, by their WebCrypto names.
fn digest_bytes(alg: &str, data: &[u8]) -> Option<Vec<u8>> {
    use sha2::Digest;
    Some(match alg {
        "SHA-1" => sha1::Sha1::digest(data).to_vec(),
        "SHA-256" => sha2::Sha256::digest(data).to_vec(),
        "SHA-384" => sha2::Sha384::digest(data).to_vec(),
        "SHA-512" => sha2::Sha512::digest(data).to_vec(),
        _ => return None,
    })
}

/// `digest(alg, bytes)`: the digest as an ArrayBuffer.
fn digest<'js>(ctx: Ctx<'js>, alg: String, data: TypedArray<'js, u8>) -> rquickjs::Result<ArrayBuffer<'js>> {
    match with_bytes(&data, |d| digest_bytes(&alg, d)) {
        Some(d) => array_buffer(&ctx, &d),
        None => Err(Exception::throw_type(&ctx, &format!("unknown digest {alg:?}"))),
    }
}

/// The HMAC of `data` under `key` with `alg`.
fn hmac_bytes(alg: &str, key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    use hmac::{KeyInit, Mac};
    fn run<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
        // HMAC takes keys of any length.
        let mut mac = <M as KeyInit>::new_from_slice(key).ok()?;
        mac.update(data);
        Some(mac.finalize().into_bytes().to_vec())
    }
    match alg {
        "SHA-1" => run::<hmac::Hmac<sha1::Sha1>>(key, data),
        "SHA-256" => run::<hmac::Hmac<sha2::Sha256>>(key, data),
        "SHA-384" => run::<hmac::Hmac<sha2::Sha384>>(key, data),
        "SHA-512" => run::<hmac::Hmac<sha2::Sha512>>(key, data),
        _ => None,
    }
}

/// `hmac(alg, key, data)`: the HMAC as an ArrayBuffer.
fn hmac_sign<'js>(
    ctx: Ctx<'js>,
    alg: String,
    key: TypedArray<'js, u8>,
    data: TypedArray<'js, u8>,
) -> rquickjs::Result<ArrayBuffer<'js>> {
    match with_bytes(&key, |k| with_bytes(&data, |d| hmac_bytes(&alg, k, d))) {
        Some(d) => array_buffer(&ctx, &d),
        None => Err(Exception::throw_type(&ctx, &format!("unknown HMAC hash {alg:?}"))),
    }
}

/// `hmacVerify(alg, key, signature, data)`: whether `signature` is the HMAC
/// (compared in constant time).
fn hmac_verify<'js>(
    ctx: Ctx<'js>,
    alg: String,
    key: TypedArray<'js, u8>,
    signature: TypedArray<'js, u8>,
    data: TypedArray<'js, u8>,
) -> rquickjs::Result<bool> {
    let Some(expected) = with_bytes(&key, |k| with_bytes(&data, |d| hmac_bytes(&alg, k, d))) else {
        return Err(Exception::throw_type(&ctx, &format!("unknown HMAC hash {alg:?}")));
    };
    Ok(with_bytes(&signature, |given| {
        if given.len() != expected.len() {
            return false;
        }
        let diff = given.iter().zip(&expected).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }))
}

/// `randomFill(bytes)`: fill `bytes` with random bytes. The key is four of
/// the host's 64-bit random draws (recorded, so replay gives the same
/// bytes); ChaCha20 stretches it to the length asked for.
fn random_fill(bytes: TypedArray<'_, u8>) {
    use rand_core::Rng;
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_mut(8) {
        chunk.copy_from_slice(&crate::wrepl::sandbox::host::random_u64().to_le_bytes());
    }
    let mut rng = <chacha20::ChaCha20Rng as rand_core::SeedableRng>::from_seed(seed);
    if let Some(raw) = bytes.as_raw() {
        // SAFETY: the view's bytes are alive for the call, and nothing else
        // touches them while this native runs.
        rng.fill_bytes(unsafe { &mut *raw.as_ptr() });
    }
}

/// `promiseState(p)`: `[0]` while `p` (a native promise) is pending, `[1,
/// value]` once fulfilled, `[2, reason]` once rejected (the terminal view
/// shows promises as node does). Reading the state runs no JavaScript.
fn promise_state<'js>(ctx: Ctx<'js>, p: rquickjs::Promise<'js>) -> rquickjs::Result<Array<'js>> {
    use rquickjs::promise::PromiseState;
    let out = Array::new(ctx.clone())?;
    // SAFETY: `p` is a live promise of this context; JS_PromiseResult returns
    // a new reference to its settled value.
    let result = || unsafe { Value::from_raw(ctx.clone(), qjs::JS_PromiseResult(ctx.as_raw().as_ptr(), p.as_raw())) };
    match p.state() {
        PromiseState::Pending => out.set(0, 0)?,
        PromiseState::Resolved => {
            out.set(0, 1)?;
            out.set(1, result())?;
        }
        PromiseState::Rejected => {
            out.set(0, 2)?;
            out.set(1, result())?;
        }
    }
    Ok(out)
}

/// The `platform` object the group files receive.
pub(crate) fn platform_natives<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let p = Object::new(ctx.clone())?;
    p.set("urlParse", Function::new(ctx.clone(), url_parse)?)?;
    p.set("urlSet", Function::new(ctx.clone(), url_set)?)?;
    p.set("formParse", Function::new(ctx.clone(), form_parse)?)?;
    p.set("formSerialize", Function::new(ctx.clone(), form_serialize)?)?;
    p.set("utf8Encode", Function::new(ctx.clone(), utf8_encode)?)?;
    p.set("utf8EncodeInto", Function::new(ctx.clone(), utf8_encode_into)?)?;
    p.set("utf8Decode", Function::new(ctx.clone(), utf8_decode)?)?;
    p.set("utf8Incomplete", Function::new(ctx.clone(), utf8_incomplete)?)?;
    p.set("base64Encode", Function::new(ctx.clone(), base64_encode)?)?;
    p.set("base64Decode", Function::new(ctx.clone(), base64_decode)?)?;
    p.set("digest", Function::new(ctx.clone(), digest)?)?;
    p.set("hmac", Function::new(ctx.clone(), hmac_sign)?)?;
    p.set("hmacVerify", Function::new(ctx.clone(), hmac_verify)?)?;
    p.set("randomFill", Function::new(ctx.clone(), random_fill)?)?;
    p.set("startCall", Function::new(ctx.clone(), crate::natives::start_call)?)?;
    p.set("promiseState", Function::new(ctx.clone(), promise_state)?)?;
    Ok(p)
}

/// Install `platformGroup`, `defineLazy` and `makePlatform` on the native bridge.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, native: &Object<'js>) -> rquickjs::Result<()> {
    native.set("platformGroup", Function::new(ctx.clone(), platform_group)?)?;
    native.set("defineLazy", Function::new(ctx.clone(), define_lazy)?)?;
    native.set("makePlatform", Function::new(ctx.clone(), |ctx: Ctx<'js>| platform_natives(&ctx))?)?;
    Ok(())
}
