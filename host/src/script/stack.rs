//! Running the parser on a stack deep enough for the code: in place for
//! small code, on a thread with a large, lazily committed stack otherwise;
//! a parser panic is caught.

/// What [`on_parse_stack`] gave.
pub(super) enum Parsed<T> {
    Done(T),
    Panicked,
    NoThread(std::io::Error),
}

/// Run `parse` on `code` with a stack deep enough for it: in place for
/// small code, else on a fresh thread with [`PARSE_STACK_BYTES`].
pub(super) fn on_parse_stack<T: Send + 'static>(
    code: &str,
    parse: impl FnOnce(&str) -> T + Send + 'static,
) -> Parsed<T> {
    if code.len() <= INLINE_MAX_BYTES {
        return match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parse(code))) {
            Ok(v) => Parsed::Done(v),
            Err(_) => Parsed::Panicked,
        };
    }
    let owned = code.to_string();
    let worker = std::thread::Builder::new()
        .name("wrepl-parse".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(move || parse(&owned));
    match worker {
        Ok(handle) => handle.join().map_or(Parsed::Panicked, Parsed::Done),
        Err(e) => Parsed::NoThread(e),
    }
}

/// Code up to this size is parsed on the caller's thread: even fully nested
/// it needs well under 1 MiB of stack (every Rust thread has 2 MiB unless
/// configured lower).
const INLINE_MAX_BYTES: usize = 256;
/// Stack of the parser thread for larger code: reserved virtual memory,
/// committed only as deep code touches it. The pre-scan is a heuristic (a
/// quote inside a regex literal can hide brackets from it), so this stack is
/// sized for the worst case at the size limit: every byte one nesting level.
const PARSE_STACK_BYTES: usize = 4 << 30;
