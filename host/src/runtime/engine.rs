//! The shared wasmtime engine: configuration, the compiled guest (cached on
//! disk), `InstancePre`, and the epoch ticker that drives budget checks.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig, Store, UpdateDeadline,
};

use super::bindings::{Guest, GuestPre};
use super::cache::*;
use super::host::{HostState, Killed};
use super::{boxed, RuntimeError};

/// The guest component, built from `guest-js/` (see `just guest`).
pub static GUEST_COMPONENT: &[u8] = include_bytes!("../../guest/wrepl-guest.wasm");

/// The guest compiled ahead of time ([`precompile_guest`], for
/// [`PRECOMPILED_TARGET`] CPUs with the [`PRECOMPILED_CPU`] features, no
/// fuel), behind a header naming the guest it was compiled from; empty on
/// other targets. Part of the binary, so trusted as the binary is: it
/// never comes from a writable place. An engine that cannot use it (fuel
/// on, an older CPU, another guest) compiles as before, through the cache.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub static PRECOMPILED_GUEST: &[u8] = include_bytes!("../../guest/wrepl-guest.x86_64-linux.cwasm");
/// The guest compiled ahead of time: none for this target.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub static PRECOMPILED_GUEST: &[u8] = &[];

/// The target [`PRECOMPILED_GUEST`] is compiled for.
pub const PRECOMPILED_TARGET: &str = "x86_64-unknown-linux-gnu";
/// The CPU features [`PRECOMPILED_GUEST`] may use: Cranelift's `haswell`
/// preset (x86-64-v3: AVX2, BMI1/2, FMA, LZCNT), which x86-64 servers
/// have had for a decade. A CPU without them compiles the guest instead.
pub const PRECOMPILED_CPU: &str = "haswell";

/// Format tag of [`PRECOMPILED_GUEST`]: then the SHA-256 of the guest
/// component it was compiled from, then wasmtime's artifact.
const PRECOMPILED_MAGIC: &[u8; 8] = b"WREPLPC1";

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
    /// Use the guest compiled ahead of time ([`PRECOMPILED_GUEST`]) when it
    /// fits this engine and CPU, instead of compiling (or the cache).
    pub precompiled: bool,
    /// When a budget runs out, first ask the guest to stop at its next
    /// interrupt check (the context and its variables survive). When false,
    /// the instance is killed at once and the next evaluation starts fresh.
    pub graceful_stop: bool,
    /// Write `/tmp/perf-<pid>.map` naming the guest's compiled functions,
    /// so `perf report` can attribute samples in guest code (for
    /// profiling; names appear when the guest keeps its name section).
    pub perf_map: bool,
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
            precompiled: true,
            graceful_stop: true,
            perf_map: false,
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
    /// SHA-256 of the guest component (snapshots are bound to it).
    guest_digest: [u8; 32],
    /// The memory of a fresh instance, which snapshots are diffs against
    /// (taken once, the first time a snapshot needs it).
    baseline: tokio::sync::OnceCell<Arc<super::snapshot::Baseline>>,
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
        let mut c = compile_config(options.fuel);
        if options.perf_map {
            c.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
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
            // Nor where memory can be swapped out: the scan misses dirty
            // pages that were (wasmtime #14357), and a reused slot could
            // show them to the next sandbox.
            if PoolingAllocationConfig::is_pagemap_scan_available() && !paging_out_possible() {
                p.pagemap_scan(Enabled::Yes)
                    .linear_memory_keep_resident(KEEP_RESIDENT)
                    .table_keep_resident(KEEP_RESIDENT);
            }
            c.allocation_strategy(InstanceAllocationStrategy::Pooling(p));
        }
        let engine = Engine::new(&c).map_err(|e| RuntimeError::Engine(boxed(e)))?;
        let guest_digest = match <[u8; 32]>::try_from(EMBEDDED_GUEST_SHA256) {
            Ok(d) if std::ptr::eq(component, GUEST_COMPONENT) => d,
            _ => sha256(component),
        };
        let ready = if options.precompiled { embedded(&engine, component) } else { None };
        let component = match ready {
            Some(c) => c,
            None => load_component(&engine, component, options.cache_dir.as_ref())?,
        };
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
        Ok(Self { engine, pre, options, guest_digest, baseline: Default::default(), _ticker: Ticker { stop } })
    }

    /// SHA-256 of the guest component this engine runs.
    pub fn guest_digest(&self) -> [u8; 32] {
        self.guest_digest
    }

    pub(crate) fn baseline_cell(&self) -> &tokio::sync::OnceCell<Arc<super::snapshot::Baseline>> {
        &self.baseline
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

/// Whether this machine may page guest memory out: an active swap device
/// (zswap too needs one) or an unreadable `/proc/swaps` (fail closed).
pub fn paging_out_possible() -> bool {
    swap_listed(std::fs::read_to_string("/proc/swaps").ok().as_deref())
}

/// [`paging_out_possible`] from the text of `/proc/swaps` (`None`: unreadable).
fn swap_listed(swaps: Option<&str>) -> bool {
    match swaps {
        // The first line is the header; any other names a swap area.
        Some(text) => text.lines().skip(1).any(|l| !l.trim().is_empty()),
        None => true,
    }
}

/// Whether freed pool slots are reset in place with `PAGEMAP_SCAN` (and
/// kept resident): on Linux >= 6.7 without swap.
pub fn slots_reset_in_place() -> bool {
    PoolingAllocationConfig::is_pagemap_scan_available() && !paging_out_possible()
}

/// The settings that shape compiled code, the same for the runtime's
/// engine and for [`precompile_guest`] (which must produce what the runtime
/// would): the rest of the runtime's settings (stacks, pooling) do not
/// change compiled code.
fn compile_config(fuel: bool) -> Config {
    let mut c = Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    c.consume_fuel(fuel);
    c.cranelift_opt_level(OptLevel::Speed);
    // Pinned, not read from WASMTIME_BACKTRACE_DETAILS: the environment
    // must not change what is compiled.
    c.wasm_backtrace_details(wasmtime::WasmBacktraceDetails::Disable);
    c
}

/// Compile `component` ahead of time as [`PRECOMPILED_GUEST`] holds it: for
/// [`PRECOMPILED_TARGET`] with the [`PRECOMPILED_CPU`] features, whatever
/// CPU this runs on (the same input gives the same bytes), behind the
/// header naming `component`.
pub fn precompile_guest(component: &[u8]) -> Result<Vec<u8>, RuntimeError> {
    let mut c = compile_config(false);
    c.target(PRECOMPILED_TARGET).map_err(|e| RuntimeError::Engine(boxed(e)))?;
    cpu_preset(&mut c);
    let engine = Engine::new(&c).map_err(|e| RuntimeError::Engine(boxed(e)))?;
    let artifact = engine.precompile_component(component).map_err(|e| RuntimeError::Component(boxed(e)))?;
    let mut out = Vec::with_capacity(PRECOMPILED_MAGIC.len() + 32 + artifact.len());
    out.extend_from_slice(PRECOMPILED_MAGIC);
    out.extend_from_slice(&sha256(component));
    out.extend_from_slice(&artifact);
    Ok(out)
}

#[allow(unsafe_code)] // Config::cranelift_flag_enable: see the SAFETY note
fn cpu_preset(c: &mut Config) {
    // SAFETY: the preset only enables CPU features in the code compiled
    // here; wasmtime refuses to load that code on a CPU that lacks them
    // (it checks every enabled feature against the host when loading).
    unsafe {
        c.cranelift_flag_enable(PRECOMPILED_CPU);
    }
}

pub(super) fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// The guest compiled ahead of time, when `component` is the embedded
/// guest it was compiled from and `engine` can run it; `None` otherwise.
fn embedded(engine: &Engine, component: &[u8]) -> Option<Component> {
    let artifact = embedded_artifact(component)?;
    // A CPU without the features, or an engine with other settings (fuel),
    // is refused here (wasmtime checks the artifact against both).
    deserialize_embedded(engine, artifact).ok()
}

include!(concat!(env!("OUT_DIR"), "/embedded_pair.rs"));

/// The artifact in [`PRECOMPILED_GUEST`] when it was compiled from
/// `component`. For exactly the embedded [`GUEST_COMPONENT`] (the same
/// bytes in this binary, not an equal copy), the build checked the pair
/// (`build.rs`), so the component is not hashed at every start.
fn embedded_artifact(component: &[u8]) -> Option<&'static [u8]> {
    let rest = PRECOMPILED_GUEST.strip_prefix(PRECOMPILED_MAGIC.as_slice())?;
    let (digest, artifact) = rest.split_at_checked(32)?;
    let ours = EMBEDDED_PAIR_VERIFIED && std::ptr::eq(component, GUEST_COMPONENT);
    (ours || digest == sha256(component)).then_some(artifact)
}

#[allow(unsafe_code)] // Component::deserialize: see the SAFETY note
fn deserialize_embedded(engine: &Engine, artifact: &'static [u8]) -> wasmtime::Result<Component> {
    // SAFETY: the artifact is part of this binary (read-only, static), made
    // by `precompile_guest` from the guest component whose digest matched,
    // and checked in CI to be exactly what `precompile_guest` makes from
    // the committed guest; wasmtime re-checks its header, version, settings
    // and the CPU features it needs.
    unsafe { Component::deserialize(engine, artifact) }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use std::path::Path;

    /// The smallest component: the preamble of an empty one.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\x00\x01\x00";

    fn engine(fuel: bool) -> Engine {
        let mut c = Config::new();
        c.wasm_component_model(true);
        c.consume_fuel(fuel);
        Engine::new(&c).unwrap()
    }

    fn load(e: &Engine, dir: &Path) -> CacheOutcome {
        load_component_traced(e, EMPTY_COMPONENT, Some(dir)).unwrap().1
    }

    fn artifact(e: &Engine, dir: &Path) -> PathBuf {
        dir.join(cache_key(e, EMPTY_COMPONENT))
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    /// Whether this CPU has what the embedded artifact may use.
    fn cpu_has_the_preset() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("bmi1")
                && std::is_x86_feature_detected!("bmi2")
                && std::is_x86_feature_detected!("fma")
                && std::is_x86_feature_detected!("lzcnt")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn the_embedded_artifact_is_the_guest_compiled_and_used_only_where_it_fits() {
        // It names the embedded guest (CI also checks it is byte for byte
        // what precompile_guest makes of it: wrepl-precompile --check).
        assert!(
            embedded_artifact(GUEST_COMPONENT).is_some(),
            "guest-js/dist/*.cwasm is stale: run scripts/build-guest.sh"
        );
        assert!(std::hint::black_box(EMBEDDED_PAIR_VERIFIED), "build.rs found the embedded pair mismatched");
        // An equal copy elsewhere in memory is hashed, and gets it too.
        let copy = GUEST_COMPONENT.to_vec();
        assert!(!std::ptr::eq(copy.as_slice(), GUEST_COMPONENT));
        assert!(embedded_artifact(&copy).is_some(), "an equal copy of the guest gets it by its digest");
        let mut changed = copy;
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert!(embedded_artifact(&changed).is_none(), "a changed copy does not");
        assert!(embedded_artifact(EMPTY_COMPONENT).is_none(), "another component never gets it");
        let runtime = Engine::new(&compile_config(false)).unwrap();
        assert_eq!(
            embedded(&runtime, GUEST_COMPONENT).is_some(),
            cpu_has_the_preset(),
            "loaded exactly when the CPU has the features it was compiled for"
        );
        // An engine with other settings refuses it (and compiles instead).
        let fuel = Engine::new(&compile_config(true)).unwrap();
        assert!(embedded(&fuel, GUEST_COMPONENT).is_none());
    }

    #[test]
    fn swap_disables_the_in_place_slot_reset() {
        let header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        assert!(!swap_listed(Some(header)), "no swap area: the scan is safe");
        assert!(!swap_listed(Some("")), "an empty file lists no area");
        let one = format!("{header}/swapfile                               file\t\t4194300\t\t0\t\t-2\n");
        assert!(swap_listed(Some(&one)), "a swap file: pages can be swapped out");
        assert!(swap_listed(None), "unreadable: assume they can");
        // This machine: the engine follows what /proc/swaps says.
        assert_eq!(
            slots_reset_in_place(),
            PoolingAllocationConfig::is_pagemap_scan_available() && !paging_out_possible()
        );
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 of RFC 4231.
        let tag = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        // Test case 6: a key longer than the block is hashed first.
        let tag = hmac_sha256(&[0xaa; 131], &[b"Test Using Larger Than Block-Size Key - Hash Key First"]);
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    }

    #[test]
    fn the_cache_is_private_and_reused() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/cache");
        let e = engine(false);
        assert!(matches!(load(&e, &dir), CacheOutcome::Stored(_)));
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(KEY_FILE)), 0o600);
        assert_eq!(std::fs::metadata(dir.join(KEY_FILE)).unwrap().len(), KEY_LEN as u64);
        let art = artifact(&e, &dir);
        assert_eq!(mode(&art), 0o600);
        assert!(std::fs::read(&art).unwrap().starts_with(CACHE_MAGIC));
        assert_eq!(load(&e, &dir), CacheOutcome::Hit);
        // No temporary files are left behind.
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|d| d.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // A group/world-accessible existing directory is made private.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(load(&e, &dir), CacheOutcome::Hit);
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_forged_artifact_is_never_loaded_and_is_replaced() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cache");
        let (a, b) = (engine(false), engine(true));
        assert!(matches!(load(&a, &dir), CacheOutcome::Stored(_)));
        assert!(matches!(load(&b, &dir), CacheOutcome::Stored(_)));
        let (art_a, art_b) = (artifact(&a, &dir), artifact(&b, &dir));
        assert_ne!(art_a, art_b);
        let good = std::fs::read(&art_a).unwrap();
        let n = good.len();
        let mut flipped = good.clone();
        flipped[n - 1] ^= 1;
        let mut flipped_tag = good.clone();
        flipped_tag[CACHE_MAGIC.len()] ^= 0x80;
        let mut garbage = vec![0x5a_u8; n];
        garbage[..CACHE_MAGIC.len()].copy_from_slice(CACHE_MAGIC);
        let forgeries: Vec<(&str, Vec<u8>)> = vec![
            ("a flipped payload byte", flipped),
            ("a flipped tag byte", flipped_tag),
            ("truncated to half", good[..n / 2].to_vec()),
            ("truncated to the header", good[..CACHE_MAGIC.len() + TAG_LEN].to_vec()),
            ("empty", Vec::new()),
            ("same-length garbage", garbage),
            ("a raw wasmtime artifact", good[CACHE_MAGIC.len() + TAG_LEN..].to_vec()),
            ("a valid artifact of another configuration", std::fs::read(&art_b).unwrap()),
        ];
        for (what, bytes) in forgeries {
            std::fs::write(&art_a, &bytes).unwrap();
            let outcome = load(&a, &dir);
            assert!(matches!(outcome, CacheOutcome::Stored(_)), "{what}: {outcome:?}");
            let now = std::fs::read(&art_a).unwrap();
            assert_ne!(now, bytes, "{what}: the forged file was not replaced");
            assert!(read_verified(&art_a, &cache_key(&a, EMPTY_COMPONENT), &cache_mac_key(&dir).unwrap()).is_ok());
            assert_eq!(load(&a, &dir), CacheOutcome::Hit, "{what}: the replacement is not valid");
        }
        // A symlink in place of the artifact is not followed.
        let elsewhere = t.path().join("elsewhere");
        std::fs::write(&elsewhere, std::fs::read(&art_a).unwrap()).unwrap();
        std::fs::remove_file(&art_a).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &art_a).unwrap();
        assert!(matches!(load(&a, &dir), CacheOutcome::Stored(_)));
        assert!(!std::fs::symlink_metadata(&art_a).unwrap().file_type().is_symlink());
    }

    #[test]
    fn an_untrusted_key_means_no_cache() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cache");
        let e = engine(false);
        assert!(matches!(load(&e, &dir), CacheOutcome::Stored(_)));
        let key = dir.join(KEY_FILE);
        let art = artifact(&e, &dir);
        let before = std::fs::read(&art).unwrap();
        let real_key = std::fs::read(&key).unwrap();

        // Readable by others.
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&art, b"forged").unwrap();
        assert!(matches!(load(&e, &dir), CacheOutcome::Untrusted(_)));
        assert_eq!(std::fs::read(&art).unwrap(), b"forged", "nothing is cached under an untrusted key");

        // A symlink to a 0600 key file elsewhere.
        std::fs::remove_file(&key).unwrap();
        let other = t.path().join("other.key");
        std::fs::write(&other, &real_key).unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&other, &key).unwrap();
        assert!(matches!(load(&e, &dir), CacheOutcome::Untrusted(_)));

        // A directory, or a key of the wrong length.
        std::fs::remove_file(&key).unwrap();
        std::fs::create_dir(&key).unwrap();
        assert!(matches!(load(&e, &dir), CacheOutcome::Untrusted(_)));
        std::fs::remove_dir(&key).unwrap();
        std::fs::write(&key, [7u8; 16]).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(load(&e, &dir), CacheOutcome::Untrusted(_)));

        // Back to the real key: the original artifact verifies again.
        std::fs::write(&key, &real_key).unwrap();
        std::fs::write(&art, &before).unwrap();
        assert_eq!(load(&e, &dir), CacheOutcome::Hit);
        // A new key (the old one lost): the old artifact no longer verifies.
        std::fs::remove_file(&key).unwrap();
        assert!(matches!(load(&e, &dir), CacheOutcome::Stored(_)));
        assert_ne!(std::fs::read(&key).unwrap(), real_key);
    }

    #[test]
    fn a_concurrent_truncation_during_load_cannot_fault() {
        use std::sync::atomic::AtomicBool;
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cache");
        let e = engine(false);
        assert!(matches!(load(&e, &dir), CacheOutcome::Stored(_)));
        let art = artifact(&e, &dir);
        let good = std::fs::read(&art).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        // Truncate and restore the file in place (the same inode, as a live
        // mmap would see it) as fast as possible while loads run.
        let hammer = {
            let (stop, art, good) = (stop.clone(), art.clone(), good.clone());
            std::thread::spawn(move || {
                use std::io::Write as _;
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&art) {
                        let _ = f.set_len(0);
                        let _ = f.set_len(good.len() as u64 / 3);
                        let _ = f.set_len(0);
                        let _ = f.write_all(&good);
                    }
                    rounds += 1;
                }
                rounds
            })
        };
        let mut hits = 0;
        for _ in 0..300 {
            let (c, outcome) = load_component_traced(&e, EMPTY_COMPONENT, Some(&dir)).unwrap();
            drop(c);
            if outcome == CacheOutcome::Hit {
                hits += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        let rounds = hammer.join().unwrap();
        assert!(rounds > 0);
        // Every load returned a component (a hit or a recompile), and the
        // process is still here: no SIGBUS from a mapping that shrank.
        eprintln!("{hits} of 300 loads were cache hits during {rounds} truncations");
    }
}
