//! The wrepl guest: a persistent QuickJS runtime behind the `wrepl:sandbox`
//! WIT world. It owns the JavaScript side of the sandbox — managed globals,
//! the promise bridge for inner calls and timers, result rendering — and
//! nothing else: every capability is a WIT import answered by the host.
//!
//! This root holds the WIT bindings and the exports; the work is split by concept:
//! - [`alloc`]: the global allocator (dlmalloc, using the initial memory's unused tail);
//! - [`heap`]: the allocator that enforces the heap limit and latches heap exhaustion;
//! - [`natives`]: what Rust installs into the runtime — the native bridge object
//!   the prelude captures (host calls, timers, console, tool registration) and the
//!   sealed module loader;
//! - [`managed`]: the managed-globals prelude (`prelude/*.js`) and its Rust half:
//!   the refresh at the start of every evaluation, tamper detection and poisoning;
//! - [`eval`]: the runtime's lifecycle (boot, `init`) and the evaluation protocol,
//!   down to the rendered outcome;
//! - [`platform`]: the web-platform globals (`URL`, `TextEncoder`, `crypto`, `fetch`,
//!   `Intl`, ...), loaded on first use from `platform/*.js` over natives of their own;
//! - [`raw`]: small helpers over QuickJS's C API (source-free evaluation, atoms, string text);
//! - [`snapshot`]: the guest's memory copied out between evaluations and into a
//!   fresh instance (with the scratch area the allocator uses meanwhile).

mod alloc;
mod eval;
mod heap;
mod managed;
mod natives;
mod platform;
mod raw;
mod snapshot;

wit_bindgen::generate!({ world: "guest", path: "../wit" });

use exports::wrepl::sandbox::repl::Guest;
use wrepl::sandbox::host;
use wrepl::sandbox::types::{Config, EvalOutcome};

/// Pre-initialisation entry point for the build's snapshot step (wizer): boots
/// the runtime so that instantiating the snapshot starts from a ready heap.
/// Calls no import but the clock, the interrupt poll and, to report a failed
/// boot, the console. The snapshot step removes this export again.
#[export_name = "wizer-initialize"]
pub extern "C" fn wizer_initialize() {
    eval::preinitialize();
}

struct Component;

impl Guest for Component {
    fn init(config: Config) -> Result<(), String> {
        snapshot::leave();
        eval::init(config)
    }

    fn eval(script: String) -> EvalOutcome {
        snapshot::leave();
        eval::eval(script, None)
    }

    fn eval_inspect(script: String, colors: bool) -> EvalOutcome {
        snapshot::leave();
        eval::eval(script, Some(colors))
    }
}

impl exports::wrepl::sandbox::snapshot::Guest for Component {
    fn begin(restore: bool) -> Result<exports::wrepl::sandbox::snapshot::Layout, String> {
        snapshot::begin(restore)
    }

    fn read(offset: u32, len: u32) -> Vec<u8> {
        snapshot::read(offset, len)
    }

    fn grow(bytes: u64) -> bool {
        snapshot::grow(bytes)
    }

    fn write(offset: u32, bytes: Vec<u8>) -> bool {
        snapshot::write(offset, bytes)
    }

    fn end() {
        snapshot::leave();
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
