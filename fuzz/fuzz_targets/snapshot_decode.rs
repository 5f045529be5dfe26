//! Snapshot decoding. A session of one block is recorded with a snapshot
//! after it; each input edits that snapshot's uncompressed encoding (byte
//! changes, a cut, an insertion), which the harness compresses again and
//! stores as a correctly sealed row named by a chain event, as a writer
//! holding the store's key would. Invariants: resuming never panics or
//! fails; a snapshot whose encoding changed is never loaded (the context is
//! rebuilt by replay and a line names the snapshot), so the restored value
//! is always the recorded one; an unchanged encoding is loaded.
#![no_main]

use std::io::{Read, Write};
use std::sync::{Arc, OnceLock};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use wrepl::replay::log::Event;
use wrepl::replay::snapshots::{self, Taken};
use wrepl::replay::store::{LogStore, SqliteStore};
use wrepl::{EvalOptions, Repl, SessionConfig};
use wrepl_fuzz::{engine, runtime};

#[derive(Debug, Arbitrary)]
enum Edit {
    /// XOR the byte at this offset (modulo the length) with a non-zero value.
    Flip(u32, u8),
    /// Cut the encoding at this offset (modulo the length).
    Cut(u32),
    /// Insert bytes at this offset.
    Insert(u32, Vec<u8>),
    /// Overwrite four bytes at this offset with a little-endian number (a
    /// page index, a count, a length).
    Number(u32, u32),
}

/// The recorded snapshot: its uncompressed encoding and its chain event.
struct Recorded {
    raw: Vec<u8>,
    event: Event,
}

const CODE: &str = "globalThis.kept = {n: 41, s: 'x'.repeat(3000)}; registerTool('t', 'd', {type: 'object'}, () => 1); 1";

fn builder() -> wrepl::ReplBuilder {
    Repl::builder().engine(engine()).roots([std::env::temp_dir()]).without_builtin_tools()
}

fn cfg(store: Arc<dyn LogStore>) -> SessionConfig {
    SessionConfig { snapshot_after: Some(std::time::Duration::ZERO), ..SessionConfig::new("s", store) }
}

fn recorded() -> &'static Recorded {
    static R: OnceLock<Recorded> = OnceLock::new();
    R.get_or_init(|| {
        runtime().block_on(async {
            let store: Arc<dyn LogStore> = Arc::new(SqliteStore::in_memory().expect("store"));
            let mut r = builder().session_config(Some(cfg(store.clone()))).build().await.expect("repl");
            r.eval(CODE, EvalOptions::default()).await.expect("eval");
            drop(r);
            let events = store.load("s").expect("load");
            let event = events.iter().rev().find(|e| matches!(e.event, Event::Snapshot { .. })).expect("a snapshot");
            let r = &snapshots::refs(&events)[0];
            let bytes = snapshots::load(&*store, "s", r).expect("the snapshot loads");
            let mut raw = Vec::new();
            zstd::stream::read::Decoder::new(&bytes[..]).expect("zstd").read_to_end(&mut raw).expect("zstd");
            Recorded { raw, event: event.event.clone() }
        })
    })
}

fn hex32(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
    }
    out
}

fuzz_target!(|edits: Vec<Edit>| {
    let rec = recorded();
    let mut raw = rec.raw.clone();
    for e in edits.iter().take(8) {
        let at = |o: u32, len: usize| if len == 0 { 0 } else { o as usize % len };
        match e {
            Edit::Flip(o, x) => {
                let i = at(*o, raw.len());
                if let Some(b) = raw.get_mut(i) {
                    *b ^= (*x).max(1);
                }
            }
            Edit::Cut(o) => raw.truncate(at(*o, raw.len())),
            Edit::Insert(o, bytes) => {
                let i = at(*o, raw.len() + 1);
                raw.splice(i..i, bytes.iter().copied().take(64));
            }
            Edit::Number(o, n) => {
                let i = at(*o, raw.len());
                for (k, b) in n.to_le_bytes().iter().enumerate() {
                    if let Some(slot) = raw.get_mut(i + k) {
                        *slot = *b;
                    }
                }
            }
        }
    }
    let changed = raw != rec.raw;
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).expect("zstd");
    enc.write_all(&raw).expect("zstd");
    let bytes = enc.finish().expect("zstd");
    let Event::Snapshot { state, guest, wasmtime, config, .. } = &rec.event else { unreachable!() };
    runtime().block_on(async {
        // A session whose log names the edited snapshot, sealed correctly.
        let store: Arc<dyn LogStore> = Arc::new(SqliteStore::in_memory().expect("store"));
        let mut r = builder().session_config(Some(cfg(store.clone()))).build().await.expect("repl");
        r.eval(CODE, EvalOptions::default()).await.expect("eval");
        drop(r);
        let taken = Taken { bytes, state: hex32(state), guest: hex32(guest), wasmtime, config: hex32(config) };
        let event = snapshots::store(&*store, "s", 0, taken).expect("store the snapshot");
        store.append("s", &[(0, event)]).expect("append");
        let mut r = builder().session_config(Some(cfg(store))).build().await.expect("resume never fails");
        let report = r.restore_report().expect("a restore report").clone();
        if changed {
            assert!(report.notes.iter().any(|n| n.contains("was not loaded")), "an edited snapshot was loaded: {report:?}");
        } else {
            assert!(report.snapshot.is_some(), "the unchanged snapshot was not loaded: {report:?}");
        }
        let v = r.eval("[kept.n + 1, kept.s.length, listTools().length]", EvalOptions::default()).await.expect("eval");
        assert_eq!(v.result, Some(serde_json::json!([42, 3000, 1])), "{v:?}");
    });
});
