//! `wrepl-snapshot IN.wasm OUT.wasm`: pre-initialise the guest's core module.
//!
//! Runs the guest's `wizer-initialize` export (which boots QuickJS, its
//! context and the managed-globals prelude) in a throw-away instance, then
//! writes a module whose memory and globals start in that booted state
//! (wasmtime-wizer). Instantiating the result is a copy-on-write memory image
//! instead of a QuickJS boot, and every sandbox shares the clean pages.
//!
//! The boot must be deterministic so the build stays reproducible: every
//! import traps except three: the console (a failed boot reports why), the
//! clock reads 0 here (QuickJS seeds state it
//! does not use from it; `Math.random` and `Date.now()` go to the host) and
//! the interrupt poll answers "keep running".

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use wasmtime::error::Context as _;
use wasmtime::{bail, Result};
use wasmtime::{Caller, Config, Engine, Extern, Instance, Linker, Module, Store, Val};
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};

/// The guest's boot entry point (removed from the output).
const INIT_FUNC: &str = "wizer-initialize";

/// The guest's host interface (core-module import name).
const HOST: &str = "wrepl:sandbox/host@0.3.0";

struct Booted<'a> {
    store: &'a mut Store<()>,
    instance: Instance,
}

impl InstanceState for Booted<'_> {
    async fn global_get(&mut self, name: &str, _: ValType) -> SnapshotVal {
        let global = self.instance.get_global(&mut *self.store, name).expect("wizer names an exported global");
        match global.get(&mut *self.store) {
            Val::I32(x) => SnapshotVal::I32(x),
            Val::I64(x) => SnapshotVal::I64(x),
            Val::F32(x) => SnapshotVal::F32(x),
            Val::F64(x) => SnapshotVal::F64(x),
            Val::V128(x) => SnapshotVal::V128(x.as_u128()),
            other => panic!("global {name} has a value wizer cannot snapshot: {other:?}"),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        let memory = self.instance.get_memory(&mut *self.store, name).expect("wizer names an exported memory");
        contents(memory.data(&*self.store))
    }
}

/// Drive a future that never waits on anything external (wizer's snapshot
/// only reads the instance).
fn run_ready<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn snapshot(wasm: &[u8]) -> Result<Vec<u8>> {
    let mut wizer = Wizer::new();
    wizer.init_func(INIT_FUNC).keep_init_func(false);
    let (cx, instrumented) = wizer.instrument(wasm).context("instrumenting the guest")?;
    let engine = Engine::new(&Config::new())?;
    let module = Module::new(&engine, &instrumented).context("compiling the instrumented guest")?;
    if module.get_export(INIT_FUNC).is_none() {
        bail!("the guest does not export `{INIT_FUNC}`");
    }
    let mut linker = Linker::new(&engine);
    linker.func_wrap(HOST, "now-us", || 0.0f64)?;
    linker.func_wrap(HOST, "should-interrupt", || 0i32)?;
    // A failed boot explains itself on the console before it traps.
    linker.func_wrap(HOST, "console-write", |mut caller: Caller<'_, ()>, _stream: i32, ptr: i32, len: i32| {
        if let Some(Extern::Memory(m)) = caller.get_export("memory") {
            let data = m.data(&caller);
            let (start, len) = (ptr as u32 as usize, len as u32 as usize);
            if let Some(bytes) = data.get(start..start.saturating_add(len)) {
                eprint!("guest: {}", String::from_utf8_lossy(bytes));
            }
        }
    })?;
    linker.define_unknown_imports_as_traps(&module)?;
    let mut store = Store::new(&engine, ());
    let instance = linker.instantiate(&mut store, &module).context("instantiating the guest")?;
    if let Some(f) = instance.get_func(&mut store, "_initialize") {
        f.typed::<(), ()>(&store)?.call(&mut store, ()).context("the guest's _initialize trapped")?;
    }
    instance
        .get_typed_func::<(), ()>(&mut store, INIT_FUNC)?
        .call(&mut store, ())
        .with_context(|| format!("the guest's `{INIT_FUNC}` trapped"))?;
    let out = run_ready(wizer.snapshot(&cx, &mut Booted { store: &mut store, instance }))?;
    Ok(out)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        bail!("usage: wrepl-snapshot IN.wasm OUT.wasm");
    };
    let wasm = std::fs::read(input).with_context(|| format!("reading {input}"))?;
    let out = snapshot(&wasm)?;
    std::fs::write(output, &out).with_context(|| format!("writing {output}"))?;
    eprintln!("wrepl-snapshot: {input} ({} bytes) -> {output} ({} bytes)", wasm.len(), out.len());
    Ok(())
}
