//! The shared wasmtime engine: configuration, the compiled guest (cached on
//! disk), `InstancePre`, and the epoch ticker that drives budget checks.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig, Store, UpdateDeadline,
};

use super::bindings::{Guest, GuestPre};
use super::host::{HostState, Killed};
use super::{boxed, RuntimeError};

/// The guest component, built from `guest-js/` (see `just guest`).
pub static GUEST_COMPONENT: &[u8] = include_bytes!("../../../guest-js/dist/wrepl-guest.wasm");

/// Bytes of a freed pool slot's memory (and table) kept resident and reset
/// in place for the next sandbox, at most.
const KEEP_RESIDENT: usize = 4 << 20;

/// Native wasm stack of a guest (wasmtime `max_wasm_stack`).
const MAX_WASM_STACK: usize = 16 << 20;

/// The largest QuickJS stack limit a sandbox may set (1/64 of the native
/// stack, and well inside the guest's 1 MiB shadow stack).
pub const MAX_JS_STACK_LIMIT: u32 = (MAX_WASM_STACK / 64) as u32;

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Cap on each guest's linear memory in bytes (default 256 MiB).
    pub max_linear_memory: usize,
    /// Instance slots in the pooling allocator; 0 disables pooling.
    pub pool_slots: u32,
    /// Enable wasmtime fuel so evaluations can carry an instruction budget.
    pub fuel: bool,
    /// How often budgets are checked while guest code runs.
    pub epoch_tick: Duration,
    /// How long a guest may keep running after it was asked to stop before
    /// the host kills the instance.
    pub kill_grace: Duration,
    /// Where the compiled guest is cached (`None`: compile every time).
    pub cache_dir: Option<PathBuf>,
    /// When a budget runs out, first ask the guest to stop at its next
    /// interrupt check (the context and its variables survive). When false,
    /// the instance is killed at once and the next evaluation starts fresh.
    pub graceful_stop: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            max_linear_memory: 256 << 20,
            pool_slots: 1000,
            fuel: false,
            epoch_tick: Duration::from_millis(5),
            kill_grace: Duration::from_millis(500),
            cache_dir: default_cache_dir(),
            graceful_stop: true,
        }
    }
}

/// `$WREPL_CACHE_DIR`, else `$XDG_CACHE_HOME/wrepl`, else `$HOME/.cache/wrepl`.
/// `WREPL_CACHE_DIR=""` disables the cache.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("WREPL_CACHE_DIR") {
        return if d.is_empty() { None } else { Some(PathBuf::from(d)) };
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("wrepl"));
    }
    std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|h| PathBuf::from(h).join(".cache/wrepl"))
}

struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A configured engine with the guest compiled and pre-linked. Cheap to share
/// (`Arc`); one per process is enough.
pub struct SandboxEngine {
    engine: Engine,
    pre: GuestPre<HostState>,
    options: EngineOptions,
    _ticker: Ticker,
}

impl std::fmt::Debug for SandboxEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxEngine").field("options", &self.options).finish_non_exhaustive()
    }
}

impl SandboxEngine {
    /// Build the engine and load the embedded guest.
    pub fn new(options: EngineOptions) -> Result<Self, RuntimeError> {
        Self::with_component(options, GUEST_COMPONENT)
    }

    /// Build the engine around a specific guest component binary.
    pub fn with_component(options: EngineOptions, component: &[u8]) -> Result<Self, RuntimeError> {
        let mut c = Config::new();
        c.wasm_component_model(true);
        c.epoch_interruption(true);
        c.consume_fuel(options.fuel);
        c.cranelift_opt_level(OptLevel::Speed);
        // QuickJS checks its own limit on the guest's shadow stack (in linear
        // memory); the native wasm stack must be deep enough that this limit is
        // always hit first, so deep recursion is a catchable RangeError and not
        // a trap. Native frames per shadow byte vary a lot by C function (deep
        // JSON.stringify needs over 16 native bytes per shadow byte), so the
        // native stack is 64x the largest QuickJS limit. Fibers also run host
        // calls, hence the extra async stack.
        c.max_wasm_stack(MAX_WASM_STACK);
        c.async_stack_size(MAX_WASM_STACK + (2 << 20));
        if options.pool_slots > 0 {
            let mut p = PoolingAllocationConfig::default();
            let n = options.pool_slots;
            p.total_component_instances(n)
                .total_core_instances(n * 4)
                .total_memories(n)
                .total_tables(n * 2)
                .total_stacks(n)
                .max_memory_size(options.max_linear_memory);
            // A freed slot is reset to the guest's (pre-initialised) image by
            // copying back only the pages the sandbox dirtied, found with the
            // PAGEMAP_SCAN ioctl, instead of unmapping them: the next sandbox
            // in the slot takes no page faults. Without the ioctl (Linux < 6.7)
            // the low bytes would be copied blindly, so keep nothing resident.
            if PoolingAllocationConfig::is_pagemap_scan_available() {
                p.pagemap_scan(Enabled::Yes)
                    .linear_memory_keep_resident(KEEP_RESIDENT)
                    .table_keep_resident(KEEP_RESIDENT);
            }
            c.allocation_strategy(InstanceAllocationStrategy::Pooling(p));
        }
        let engine = Engine::new(&c).map_err(|e| RuntimeError::Engine(boxed(e)))?;
        let component = load_component(&engine, component, options.cache_dir.as_ref())?;
        let mut linker = Linker::<HostState>::new(&engine);
        Guest::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(|e| RuntimeError::Component(boxed(e)))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(GuestPre::new)
            .map_err(|e| RuntimeError::Component(boxed(e)))?;
        let stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.clone();
            let stop = stop.clone();
            let tick = options.epoch_tick.max(Duration::from_millis(1));
            std::thread::Builder::new()
                .name("wrepl-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(tick);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| RuntimeError::Engine(Box::new(e)))?;
        }
        Ok(Self { engine, pre, options, _ticker: Ticker { stop } })
    }

    pub(crate) fn pre(&self) -> &GuestPre<HostState> {
        &self.pre
    }

    /// The engine's settings.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    pub(crate) fn new_store(&self, state: HostState) -> Store<HostState> {
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        let grace = self.options.kill_grace;
        store.epoch_deadline_callback(move |mut ctx| {
            let s = ctx.data_mut();
            if let Some(reason) = s.overdue(grace) {
                return Err(wasmtime::Error::new(Killed(reason)));
            }
            // Check budgets (sets the interrupt flag the guest polls), then
            // let other tasks run before continuing.
            s.poll_budget();
            Ok(UpdateDeadline::Yield(1))
        });
        store
    }
}

fn cache_key(engine: &Engine, component: &[u8]) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    component.hash(&mut h);
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("guest-{}-{:016x}.cwasm", env!("CARGO_PKG_VERSION"), h.finish())
}

#[allow(unsafe_code)] // Component::deserialize_file: see the SAFETY note
fn load_component(engine: &Engine, bytes: &[u8], cache: Option<&PathBuf>) -> Result<Component, RuntimeError> {
    let path = cache.map(|d| d.join(cache_key(engine, bytes)));
    if let Some(p) = &path {
        if p.is_file() {
            // SAFETY: the file was written by `Component::serialize` of this
            // same engine configuration (the name carries its compatibility
            // hash); wasmtime re-checks the header and rejects mismatches.
            if let Ok(c) = unsafe { Component::deserialize_file(engine, p) } {
                return Ok(c);
            }
        }
    }
    let component = Component::new(engine, bytes).map_err(|e| RuntimeError::Component(boxed(e)))?;
    if let Some(p) = &path {
        // Best effort: a read-only or missing cache directory only costs time.
        if let Ok(ser) = component.serialize() {
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
                let tmp = p.with_extension(format!("tmp{}", std::process::id()));
                if std::fs::write(&tmp, ser).is_ok() {
                    let _ = std::fs::rename(&tmp, p);
                }
                let _ = std::fs::remove_file(&tmp);
            }
        }
    }
    Ok(component)
}
