//! Snapshots of a sandbox between evaluations: its linear memory as the
//! pages that differ from a fresh instance's, plus the host state of the
//! context (the tools the script registered), compressed with zstd.
//!
//! The guest's `snapshot` export copies memory out and in (see
//! `wit/sandbox.wit`); its stack and scratch area are dead between
//! evaluations and left out. A snapshot names the guest build, the wasmtime
//! version and the configuration it was taken under, and is only restored
//! under the same three. Its `state` digest is the SHA-256 of its
//! uncompressed encoding: two sandboxes in the same state give the same
//! digest, which is how replay checks a snapshot (`log verify --replay`).
//!
//! The encoding (then zstd):
//!
//! ```text
//! "WREPLSN1" | guest sha256 (32) | config sha256 (32) | wasmtime version (u8 length, bytes)
//! | stack low, high (u32 LE each) | scratch low, high | memory bytes (u64 LE)
//! | registered tools (u32 length, JSON) | runs* | 0xFFFFFFFF
//! run = first page (u32) | page count (u32) | the pages (4096 bytes each, XOR the fresh instance's)
//! ```

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::bindings::exports::wrepl::sandbox::snapshot::Layout as GuestLayout;
use super::bindings::wrepl::sandbox::types;
use super::budget::Budget;
use super::engine::WASMTIME_VERSION;
use super::host::RegisteredTool;
use super::tape::Tape;
use super::{boxed, BoxError, RuntimeError, Sandbox, SandboxEngine, SandboxOptions};

/// Granularity of the diff against a fresh instance.
const PAGE: usize = 4096;
const MAGIC: &[u8; 8] = b"WREPLSN1";
/// Marks the end of the runs.
const END: u32 = u32::MAX;
/// zstd's fast end (level 1): about 400 MB/s of changed pages per thread.
const LEVEL: i32 = 1;
/// Memory above which two threads compress.
const PARALLEL_ABOVE: u64 = 8 << 20;
/// Most bytes of registered tools a snapshot may carry (100 tools of at
/// most 64 KiB of schema and 10,000 characters of description each).
const MAX_REGISTRY_BYTES: usize = 16 << 20;
/// The budget of one snapshot or restore (the guest only copies memory).
const BUDGET: Budget = Budget { script: Duration::from_secs(30), wall: Duration::from_secs(60) };

/// Errors of taking or restoring a snapshot.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The sandbox is in no state to be snapshotted (it faulted).
    #[error("the context cannot be snapshotted: {0}")]
    Unavailable(String),
    /// The guest refused a step.
    #[error("the guest refused the snapshot: {0}")]
    Guest(String),
    /// The guest trapped while copying.
    #[error("the guest trapped during the snapshot: {0}")]
    Trap(#[source] BoxError),
    /// The bytes are not a snapshot this code wrote.
    #[error("the snapshot is malformed: {0}")]
    Malformed(String),
    /// Taken under another guest build, wasmtime or configuration.
    #[error("the snapshot was taken under {0}")]
    Mismatch(String),
    /// The restored state is not the one recorded.
    #[error("the snapshot's state digest is not the one the log records")]
    Digest,
    /// A fresh instance could not be made.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// Where the guest's memory lies (the parts that do not change with its state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    stack: (u32, u32),
    scratch: (u32, u32),
    chunk: u32,
}

impl Layout {
    fn of(l: &GuestLayout) -> Result<Self, SnapshotError> {
        let layout =
            Self { stack: (l.stack_low, l.stack_high), scratch: (l.scratch_low, l.scratch_high), chunk: l.chunk };
        let aligned =
            |(lo, hi): (u32, u32)| (lo as usize).is_multiple_of(PAGE) && (hi as usize).is_multiple_of(PAGE) && lo <= hi;
        if !aligned(layout.stack)
            || !aligned(layout.scratch)
            || !(layout.chunk as usize).is_multiple_of(PAGE)
            || layout.chunk == 0
        {
            return Err(SnapshotError::Guest(format!("the guest's memory layout is not page-aligned: {layout:?}")));
        }
        Ok(layout)
    }

    /// Whether page `p` is dead between evaluations (stack or scratch).
    fn skipped(&self, p: usize) -> bool {
        let at = p * PAGE;
        [self.stack, self.scratch].iter().any(|&(lo, hi)| (lo as usize..hi as usize).contains(&at))
    }
}

/// The memory of a fresh, never-initialised instance: what snapshots are
/// diffs against.
pub(crate) struct Baseline {
    layout: Layout,
    memory: Vec<u8>,
}

impl Baseline {
    fn page(&self, p: usize) -> &[u8] {
        const ZERO: [u8; PAGE] = [0; PAGE];
        self.memory.get(p * PAGE..(p + 1) * PAGE).unwrap_or(&ZERO)
    }
}

/// A sandbox's state between evaluations, encoded.
#[derive(Clone)]
pub struct SnapshotImage {
    /// The compressed encoding (see the module documentation).
    pub bytes: Vec<u8>,
    /// SHA-256 of the uncompressed encoding: equal states, equal digests.
    pub state: [u8; 32],
    /// Bytes of linear memory.
    pub memory_bytes: u64,
    /// Pages (4 KiB) that differ from a fresh instance.
    pub pages: u64,
}

impl std::fmt::Debug for SnapshotImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotImage")
            .field("bytes", &self.bytes.len())
            .field("memory_bytes", &self.memory_bytes)
            .field("pages", &self.pages)
            .finish_non_exhaustive()
    }
}

/// SHA-256 of the configuration `init` would get: a snapshot is only
/// restored under the configuration it was taken under.
pub(crate) fn config_digest(c: &types::Config) -> [u8; 32] {
    let form = |f: types::ShorthandForm| format!("{f:?}");
    let text = serde_json::json!({
        "memory_limit": c.memory_limit,
        "stack_limit": c.stack_limit,
        "tools": c.tools.iter().map(|t| [&t.name, &t.global]).collect::<Vec<_>>(),
        "repo_hint": c.repo_hint,
        "registered_prefix": c.registered_prefix,
        "shorthands": c.shorthands.iter().map(|s| [s.global.clone(), form(s.form), s.tool.clone()]).collect::<Vec<_>>(),
        "calls_in_flight": c.calls_in_flight,
    })
    .to_string();
    Sha256::digest(text.as_bytes()).into()
}

/// Writes the encoding into zstd and the state digest at once.
struct Sink {
    zstd: zstd::stream::write::Encoder<'static, Vec<u8>>,
    hash: Sha256,
}

impl Sink {
    fn put(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        self.hash.update(bytes);
        self.zstd.write_all(bytes).map_err(|e| SnapshotError::Malformed(format!("compression failed: {e}")))
    }
}

/// Reads the encoding out of zstd, hashing what it reads.
struct Source<'a> {
    zstd: zstd::stream::read::Decoder<'a, std::io::BufReader<&'a [u8]>>,
    hash: Sha256,
}

impl Source<'_> {
    fn take(&mut self, buf: &mut [u8]) -> Result<(), SnapshotError> {
        self.zstd.read_exact(buf).map_err(|e| SnapshotError::Malformed(format!("cut short or corrupt: {e}")))?;
        self.hash.update(&*buf);
        Ok(())
    }
    fn u32(&mut self) -> Result<u32, SnapshotError> {
        let mut b = [0; 4];
        self.take(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn u64(&mut self) -> Result<u64, SnapshotError> {
        let mut b = [0; 8];
        self.take(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn digest(&mut self) -> Result<[u8; 32], SnapshotError> {
        let mut b = [0; 32];
        self.take(&mut b)?;
        Ok(b)
    }
}

impl SandboxEngine {
    /// The memory of a fresh instance (taken once per engine).
    pub(crate) async fn baseline(&self) -> Result<Arc<Baseline>, SnapshotError> {
        self.baseline_cell()
            .get_or_try_init(|| async {
                let mut sandbox = Sandbox::instantiate(self, &SandboxOptions::default()).await?;
                let layout = sandbox.begin(false).await?;
                let l = Layout::of(&layout)?;
                let mut memory = vec![0u8; usize::try_from(layout.memory_bytes).unwrap_or(usize::MAX)];
                let mut at = 0usize;
                while at < memory.len() {
                    let len = (l.chunk as usize).min(memory.len() - at);
                    let bytes = sandbox.read(at, len).await?;
                    memory[at..at + len].copy_from_slice(&bytes);
                    at += len;
                }
                sandbox.end().await?;
                Ok(Arc::new(Baseline { layout: l, memory }))
            })
            .await
            .cloned()
    }
}

impl Sandbox {
    async fn guarded<T>(&mut self, f: impl AsyncFnOnce(&mut Self) -> wasmtime::Result<T>) -> Result<T, SnapshotError> {
        self.store.set_epoch_deadline(1);
        self.store.data_mut().begin_eval(BUDGET, CancellationToken::new(), Tape::Off);
        let r = f(self).await;
        self.store.data_mut().end_eval();
        r.map_err(|e| {
            // A trapped instance cannot be entered again: the context is lost,
            // and the next evaluation says so instead of trapping.
            self.poisoned = Some(super::Fault::Trap(format!("during a snapshot: {e}")));
            SnapshotError::Trap(boxed(e))
        })
    }

    async fn begin(&mut self, restore: bool) -> Result<GuestLayout, SnapshotError> {
        self.guarded(async |s: &mut Self| s.guest.wrepl_sandbox_snapshot().call_begin(&mut s.store, restore).await)
            .await?
            .map_err(SnapshotError::Guest)
    }

    async fn read(&mut self, offset: usize, len: usize) -> Result<Vec<u8>, SnapshotError> {
        let (o, l) = (offset as u32, len as u32);
        let bytes = self
            .guarded(async |s: &mut Self| s.guest.wrepl_sandbox_snapshot().call_read(&mut s.store, o, l).await)
            .await?;
        if bytes.len() != len {
            return Err(SnapshotError::Guest(format!("asked for {len} bytes at {offset}, got {}", bytes.len())));
        }
        Ok(bytes)
    }

    async fn end(&mut self) -> Result<(), SnapshotError> {
        self.guarded(async |s: &mut Self| s.guest.wrepl_sandbox_snapshot().call_end(&mut s.store).await).await
    }

    /// Take a snapshot of this sandbox (between evaluations). The sandbox
    /// goes on as it was.
    pub async fn snapshot(&mut self, engine: &SandboxEngine) -> Result<SnapshotImage, SnapshotError> {
        if let Some(f) = &self.poisoned {
            return Err(SnapshotError::Unavailable(f.to_string()));
        }
        let baseline = engine.baseline().await?;
        let guest_layout = self.begin(false).await?;
        let result = self.snapshot_begun(engine, &baseline, &guest_layout).await;
        let ended = self.end().await;
        let image = result?;
        ended?;
        Ok(image)
    }

    async fn snapshot_begun(
        &mut self,
        engine: &SandboxEngine,
        baseline: &Baseline,
        guest_layout: &GuestLayout,
    ) -> Result<SnapshotImage, SnapshotError> {
        let layout = Layout::of(guest_layout)?;
        if layout != baseline.layout {
            return Err(SnapshotError::Guest("the guest's layout differs from a fresh instance's".into()));
        }
        let memory_bytes = guest_layout.memory_bytes;
        let mut zstd = zstd::stream::write::Encoder::new(Vec::new(), LEVEL)
            .map_err(|e| SnapshotError::Malformed(format!("compression failed: {e}")))?;
        // A large memory is compressed by two threads (half the time on two
        // cores); a small one is not worth starting them.
        if memory_bytes > PARALLEL_ABOVE {
            let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(2) as u32;
            if workers > 1 {
                zstd.multithread(workers).map_err(|e| SnapshotError::Malformed(format!("compression failed: {e}")))?;
            }
        }
        let mut sink = Sink { zstd, hash: Sha256::new() };
        sink.put(MAGIC)?;
        sink.put(&engine.guest_digest())?;
        sink.put(&self.config_digest_now())?;
        sink.put(&[WASMTIME_VERSION.len() as u8])?;
        sink.put(WASMTIME_VERSION.as_bytes())?;
        for v in [layout.stack.0, layout.stack.1, layout.scratch.0, layout.scratch.1] {
            sink.put(&v.to_le_bytes())?;
        }
        sink.put(&memory_bytes.to_le_bytes())?;
        let registry = serde_json::to_vec(&self.registered_tools())
            .map_err(|e| SnapshotError::Malformed(format!("registered tools: {e}")))?;
        sink.put(&(registry.len() as u32).to_le_bytes())?;
        sink.put(&registry)?;
        let total_pages = usize::try_from(memory_bytes).unwrap_or(usize::MAX) / PAGE;
        let chunk_pages = layout.chunk as usize / PAGE;
        let mut pages = 0u64;
        // The run being gathered: its first page and its bytes.
        let mut run: Option<(usize, Vec<u8>)> = None;
        let mut chunk_start = 0usize;
        while chunk_start < total_pages {
            let n = chunk_pages.min(total_pages - chunk_start);
            let dead = (chunk_start..chunk_start + n).all(|p| layout.skipped(p));
            let bytes = if dead { Vec::new() } else { self.read(chunk_start * PAGE, n * PAGE).await? };
            for i in 0..n {
                let p = chunk_start + i;
                let changed = !layout.skipped(p) && bytes[i * PAGE..(i + 1) * PAGE] != *baseline.page(p);
                if changed {
                    pages += 1;
                    // The bytes that did not change become zeros, which
                    // compress to next to nothing.
                    // Runs are cut at a chunk, so that what is held
                    // uncompressed stays one chunk however large the heap.
                    let extends = matches!(&run, Some((first, data))
                        if *first + data.len() / PAGE == p && data.len() < chunk_pages * PAGE);
                    if !extends {
                        if let Some((first, data)) = run.take() {
                            put_run(&mut sink, first, &data)?;
                        }
                        run = Some((p, Vec::with_capacity(chunk_pages * PAGE)));
                    }
                    if let Some((_, data)) = run.as_mut() {
                        let at = data.len();
                        data.extend_from_slice(&bytes[i * PAGE..(i + 1) * PAGE]);
                        data[at..].iter_mut().zip(baseline.page(p)).for_each(|(a, b)| *a ^= b);
                    }
                }
            }
            chunk_start += n;
        }
        if let Some((first, data)) = run.take() {
            put_run(&mut sink, first, &data)?;
        }
        sink.put(&END.to_le_bytes())?;
        let state: [u8; 32] = sink.hash.finalize().into();
        let bytes = sink.zstd.finish().map_err(|e| SnapshotError::Malformed(format!("compression failed: {e}")))?;
        Ok(SnapshotImage { bytes, state, memory_bytes, pages })
    }

    /// A sandbox in the state `bytes` holds: a fresh instance of `engine`
    /// configured by `options` (which must be the configuration the
    /// snapshot was taken under), its memory and registered tools restored.
    /// `expected` is the state digest the log records for it.
    pub async fn restore(
        engine: &SandboxEngine,
        options: &SandboxOptions,
        bytes: &[u8],
        expected: &[u8; 32],
    ) -> Result<Self, SnapshotError> {
        let baseline = engine.baseline().await?;
        let mut sandbox = Self::instantiate(engine, options).await?;
        let guest_layout = sandbox.begin(true).await?;
        let restored = sandbox.restore_begun(engine, &baseline, &guest_layout, bytes, expected).await;
        let ended = sandbox.end().await;
        restored?;
        ended?;
        Ok(sandbox)
    }

    async fn restore_begun(
        &mut self,
        engine: &SandboxEngine,
        baseline: &Baseline,
        guest_layout: &GuestLayout,
        bytes: &[u8],
        expected: &[u8; 32],
    ) -> Result<(), SnapshotError> {
        let layout = Layout::of(guest_layout)?;
        if layout != baseline.layout {
            return Err(SnapshotError::Guest("the guest's layout differs from a fresh instance's".into()));
        }
        let zstd =
            zstd::stream::read::Decoder::new(bytes).map_err(|e| SnapshotError::Malformed(format!("not zstd: {e}")))?;
        let mut src = Source { zstd, hash: Sha256::new() };
        let mut magic = [0u8; 8];
        src.take(&mut magic)?;
        if &magic != MAGIC {
            return Err(SnapshotError::Malformed("not a wrepl snapshot".into()));
        }
        if src.digest()? != engine.guest_digest() {
            return Err(SnapshotError::Mismatch("another guest build".into()));
        }
        if src.digest()? != self.config_digest_now() {
            return Err(SnapshotError::Mismatch(
                "another configuration (tools, limits or repository hint differ)".into(),
            ));
        }
        let mut len = [0u8; 1];
        src.take(&mut len)?;
        let mut version = vec![0u8; len[0] as usize];
        src.take(&mut version)?;
        if version != WASMTIME_VERSION.as_bytes() {
            return Err(SnapshotError::Mismatch(format!("wasmtime {}", String::from_utf8_lossy(&version))));
        }
        let recorded =
            Layout { stack: (src.u32()?, src.u32()?), scratch: (src.u32()?, src.u32()?), chunk: layout.chunk };
        if recorded != layout {
            return Err(SnapshotError::Mismatch("another memory layout".into()));
        }
        let memory_bytes = src.u64()?;
        if !memory_bytes.is_multiple_of(PAGE as u64) || memory_bytes > engine.options().max_linear_memory as u64 {
            return Err(SnapshotError::Malformed(format!("{memory_bytes} bytes of memory")));
        }
        let registry_len = src.u32()? as usize;
        if registry_len > MAX_REGISTRY_BYTES {
            return Err(SnapshotError::Malformed(format!("{registry_len} bytes of registered tools")));
        }
        let mut registry = vec![0u8; registry_len];
        src.take(&mut registry)?;
        let tools: Vec<RegisteredTool> = serde_json::from_slice(&registry)
            .map_err(|e| SnapshotError::Malformed(format!("registered tools: {e}")))?;
        let grown = self
            .guarded(async |s: &mut Self| s.guest.wrepl_sandbox_snapshot().call_grow(&mut s.store, memory_bytes).await)
            .await?;
        if !grown {
            return Err(SnapshotError::Guest(format!("cannot grow memory to {memory_bytes} bytes")));
        }
        let total_pages = (memory_bytes / PAGE as u64) as usize;
        let chunk_pages = layout.chunk as usize / PAGE;
        let mut next_free = 0usize;
        loop {
            let first = src.u32()?;
            if first == END {
                break;
            }
            let count = src.u32()? as usize;
            let first = first as usize;
            let end = first.checked_add(count).filter(|&e| count > 0 && e <= total_pages && first >= next_free);
            let Some(end) = end else {
                return Err(SnapshotError::Malformed(format!("a run of {count} page(s) at page {first}")));
            };
            if (first..end).any(|p| layout.skipped(p)) {
                return Err(SnapshotError::Malformed(format!(
                    "a run at page {first} covers the stack or scratch area"
                )));
            }
            let mut p = first;
            while p < end {
                let n = chunk_pages.min(end - p);
                let mut data = vec![0u8; n * PAGE];
                src.take(&mut data)?;
                for (i, page) in data.chunks_exact_mut(PAGE).enumerate() {
                    page.iter_mut().zip(baseline.page(p + i)).for_each(|(a, b)| *a ^= b);
                }
                let offset = (p * PAGE) as u32;
                let ok = self
                    .guarded(async |s: &mut Self| {
                        s.guest.wrepl_sandbox_snapshot().call_write(&mut s.store, offset, &data).await
                    })
                    .await?;
                if !ok {
                    return Err(SnapshotError::Guest(format!("refused to write page {p}")));
                }
                p += n;
            }
            next_free = end;
        }
        let state: [u8; 32] = src.hash.finalize().into();
        if &state != expected {
            return Err(SnapshotError::Digest);
        }
        self.store
            .data_mut()
            .restore_tools(tools)
            .map_err(|e| SnapshotError::Malformed(format!("a registered tool: {e}")))?;
        Ok(())
    }
}

fn put_run(sink: &mut Sink, first: usize, data: &[u8]) -> Result<(), SnapshotError> {
    sink.put(&(first as u32).to_le_bytes())?;
    sink.put(&((data.len() / PAGE) as u32).to_le_bytes())?;
    sink.put(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{EngineOptions, EvalRequest};

    fn engine() -> SandboxEngine {
        SandboxEngine::new(EngineOptions { cache_dir: None, pool_slots: 4, ..Default::default() }).unwrap()
    }

    async fn eval(s: &mut Sandbox, code: &str) -> String {
        let r = s
            .eval(EvalRequest {
                script: code.into(),
                budget: Budget { script: Duration::from_secs(10), wall: Duration::from_secs(20) },
                fuel: None,
                cancel: CancellationToken::new(),
                tape: Tape::Off,
                view: crate::runtime::View::Model,
            })
            .await;
        assert!(r.error.is_none() && r.fault.is_none(), "{code}: {:?} {:?}", r.error, r.fault);
        r.text
    }

    #[tokio::test]
    async fn a_restored_sandbox_has_the_state_it_was_snapshotted_in() {
        let engine = engine();
        let options = SandboxOptions::default();
        let mut a = Sandbox::new(&engine, options.clone()).await.unwrap();
        eval(
            &mut a,
            "globalThis.big = Array.from({length: 200000}, (_, i) => i * 2); globalThis.m = new Map([[1, 'one']]); 1",
        )
        .await;
        let image = a.snapshot(&engine).await.unwrap();
        // The source goes on as it was.
        assert_eq!(eval(&mut a, "big[12345] + m.get(1)").await, "24690one");
        let mut b = Sandbox::restore(&engine, &options, &image.bytes, &image.state).await.unwrap();
        assert_eq!(eval(&mut b, "big[12345] + m.get(1)").await, "24690one");
        // Equal states give equal digests; a changed state another.
        let again = a.snapshot(&engine).await.unwrap();
        let restored = b.snapshot(&engine).await.unwrap();
        assert_eq!(again.state, restored.state, "the same evaluations from the same state give the same state");
        eval(&mut b, "globalThis.x = 5").await;
        assert_ne!(b.snapshot(&engine).await.unwrap().state, restored.state);
        // A fresh sandbox's snapshot is small.
        let mut fresh = Sandbox::new(&engine, options.clone()).await.unwrap();
        eval(&mut fresh, "1 + 1").await;
        let small = fresh.snapshot(&engine).await.unwrap();
        eprintln!(
            "fresh snapshot: {} bytes, {} pages; big: {} bytes, {} pages",
            small.bytes.len(),
            small.pages,
            image.bytes.len(),
            image.pages
        );
        assert!(
            small.bytes.len() < 64 << 10,
            "a fresh context snapshot is {} bytes ({} pages)",
            small.bytes.len(),
            small.pages
        );
    }

    /// Every byte of `s`'s linear memory (stack and scratch area included).
    async fn memory_of(s: &mut Sandbox) -> Vec<u8> {
        let layout = s.begin(false).await.unwrap();
        let mut memory = Vec::new();
        while (memory.len() as u64) < layout.memory_bytes {
            let len = (layout.chunk as u64).min(layout.memory_bytes - memory.len() as u64) as usize;
            memory.extend(s.read(memory.len(), len).await.unwrap());
        }
        s.end().await.unwrap();
        memory
    }

    #[tokio::test]
    async fn a_freed_slot_never_shows_the_previous_contexts_bytes() {
        let engine = engine();
        let options = SandboxOptions::default();
        let secret = b"wrepl-freed-slot-secret-";
        let mut a = Sandbox::new(&engine, options.clone()).await.unwrap();
        eval(&mut a, "globalThis.s = 'wrepl-freed-slot-secret-'.repeat(40000); s.length").await;
        let seen = |m: &[u8]| {
            m.windows(secret.len() * 2).any(|w| w[..secret.len()] == *secret && w[secret.len()..] == *secret)
        };
        assert!(seen(&memory_of(&mut a).await), "the secret is in the first context's memory");
        drop(a);
        // Every slot of the pool, held at once (one is the freed one).
        let mut next = Vec::new();
        for _ in 0..engine.options().pool_slots {
            next.push(Sandbox::instantiate(&engine, &options).await.unwrap());
        }
        for (i, b) in next.iter_mut().enumerate() {
            assert!(!seen(&memory_of(b).await), "instance {i} shows the previous context's bytes");
        }
    }

    #[tokio::test]
    async fn a_damaged_or_foreign_snapshot_is_refused() {
        let engine = engine();
        let options = SandboxOptions::default();
        let mut a = Sandbox::new(&engine, options.clone()).await.unwrap();
        eval(&mut a, "globalThis.v = 'x'.repeat(100000)").await;
        let image = a.snapshot(&engine).await.unwrap();
        // A flipped byte anywhere: refused (never a wrong state).
        for at in [0, image.bytes.len() / 3, image.bytes.len() / 2, image.bytes.len() - 1] {
            let mut bad = image.bytes.clone();
            bad[at] ^= 0x40;
            let r = Sandbox::restore(&engine, &options, &bad, &image.state).await;
            assert!(r.is_err(), "a flipped byte at {at} was restored");
        }
        // Cut short.
        let r = Sandbox::restore(&engine, &options, &image.bytes[..image.bytes.len() / 2], &image.state).await;
        assert!(matches!(r, Err(SnapshotError::Malformed(_))), "{r:?}");
        // Another digest recorded.
        let r = Sandbox::restore(&engine, &options, &image.bytes, &[0; 32]).await;
        assert!(matches!(r, Err(SnapshotError::Digest)), "{r:?}");
        // Another configuration.
        let other = SandboxOptions { js_memory_limit: 32 << 20, ..options.clone() };
        let r = Sandbox::restore(&engine, &other, &image.bytes, &image.state).await;
        assert!(matches!(r, Err(SnapshotError::Mismatch(_))), "{r:?}");
        // Not a snapshot at all.
        let r = Sandbox::restore(&engine, &options, b"hello", &image.state).await;
        assert!(matches!(r, Err(SnapshotError::Malformed(_))), "{r:?}");
    }
}
