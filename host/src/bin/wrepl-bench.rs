//! Peer-benchmark adapter: runs the shared workloads (`shared/peers/workloads.json`)
//! through the real wrepl sandbox and the real inner-call pipeline.
//!
//! ```text
//! wrepl-bench <workloads.json> <WID> [<WID> ...]
//! ```
//!
//! The last stdout line is one JSON object
//! `{"peer","engine","results":{WID:{value,unit,check,extra|error}}}`.
//!
//! Host functions `t` and `sleep` are [`Tool`]s registered in a [`Dispatcher`]
//! (schema validation, permission rules, hooks and call records all run), and
//! every sandbox is a [`Repl`] on one shared [`SandboxEngine`]: a fresh `Repl`
//! means a fresh component instance plus guest initialisation.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value as J};
use wrepl::{EngineOptions, EvalOptions, Repl, ReplBuilder, SandboxEngine, Settings};

const ENGINE: &str = "wrepl: QuickJS-ng via rquickjs 0.14.0 (disable-assertions, opt-level 3) in a wasm32 \
                      component on wasmtime 48.0.8 (Cranelift, pooling allocator), host functions as Tools \
                      through the wrepl Dispatcher (schema validation + permissions), tokio multi-thread";

/// The allocator the `wrepl` binary uses (see `main.rs`), so the figures are its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type R<T> = Result<T, String>;

#[derive(Clone)]
struct Bench {
    engine: Arc<SandboxEngine>,
    /// The template every sandbox is built from (its pipeline compiled once).
    builder: ReplBuilder,
    /// JS heap limit for new sandboxes (`None`: wrepl's default, 64 MiB).
    js_memory_limit: Option<u64>,
}

/// JS heap limit used when a workload does not fit wrepl's default 64 MiB heap
/// (W5 builds 200k objects plus a 7.5 MB JSON string and its parsed copy).
const RAISED_JS_HEAP: u64 = 224 << 20;

/// The sandbox template: the test tools `t` and `sleep` (wrepl's own, shared
/// with its tests) granted, the given settings, a temporary-directory root.
fn builder(engine: &Arc<SandboxEngine>, settings: &str) -> R<ReplBuilder> {
    let settings = Settings::from_json(settings).map_err(|e| format!("settings: {e}"))?;
    let b = Repl::builder()
        .engine(engine.clone())
        .roots([std::env::temp_dir()])
        .settings(settings)
        .without_builtin_tools()
        .tool(Arc::new(wrepl::testing::echo()))
        .tool(Arc::new(wrepl::testing::sleep()))
        .allow(["t", "sleep"])
        .session_id("wrepl-bench");
    // Compile the pipeline now, so the first sandbox does not pay for it.
    b.dispatcher().map_err(|e| format!("dispatcher: {e}"))?;
    Ok(b)
}

impl Bench {
    async fn repl_with(&self, b: &ReplBuilder) -> R<Repl> {
        let b = match self.js_memory_limit {
            Some(limit) => b.clone().with_limits(|l| l.js_memory = limit),
            None => b.clone(),
        };
        b.build().await.map_err(|e| format!("new repl: {e}"))
    }

    async fn repl(&self) -> R<Repl> {
        self.repl_with(&self.builder).await
    }
}

async fn eval(repl: &mut Repl, code: &str) -> R<J> {
    let r = repl.eval(code, EvalOptions::default()).await.map_err(|e| format!("eval: {e}"))?;
    if let Some(e) = r.error {
        return Err(format!("script error: {}: {}", e.name, e.message));
    }
    Ok(r.result.unwrap_or(J::Null))
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `/proc/self/smaps_rollup`: each field in KiB (`Rss`, `Pss`,
/// `Private_Dirty`, `Shared_Clean`, ...).
fn smaps_kib() -> Vec<(String, u64)> {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    s.lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let kib = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
            Some((name.to_string(), kib))
        })
        .collect()
}

/// A page of this machine's memory, in bytes and in KiB (the page census).
const PAGE: u64 = 4096;
const PAGE_KIB: u64 = PAGE / 1024;

/// Where the resident pages of this process are, from `/proc/self/maps` and
/// `/proc/self/pagemap`: per kind of mapping (its path, or `[anon]`), how many
/// mappings there are, their pages present, and how many of those are the
/// process's own (anonymous: written, or copied on write). For the guest's
/// copy-on-write image (the `memfd` mappings, one per sandbox), also which of
/// its pages are private in how many sandboxes, in 64 KiB rows of the image,
/// so a census tells which part of the booted image a sandbox writes to.
/// Inaccessible reservations (`---p`) are skipped.
fn page_census() -> J {
    use std::collections::BTreeMap;
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let Ok(mut pagemap) = std::fs::File::open("/proc/self/pagemap") else {
        return json!("error: /proc/self/pagemap is not readable");
    };
    let mut kinds: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    let mut image_rows: Vec<u64> = Vec::new();
    let mut images = 0u64;
    let mut first_image = None;
    let lines: Vec<Vec<&str>> = maps.lines().map(|l| l.split_whitespace().collect()).collect();
    let bounds = |f: &[&str]| {
        let (lo, hi) = f.first()?.split_once('-')?;
        Some((u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?))
    };
    let is_image = |f: &[&str]| f.get(5).is_some_and(|n| n.contains("memfd:"));
    for (k, f) in lines.iter().enumerate() {
        let (Some(range), Some(perms)) = (f.first(), f.get(1)) else { continue };
        if perms.starts_with("---") {
            continue;
        }
        let Some((lo, hi)) = bounds(f) else { continue };
        // An anonymous mapping right below or above a sandbox's image is the
        // rest of its linear memory: the shadow stack below, the heap grown
        // past the image above. Other anonymous memory is the host's.
        let touches_image = |j: Option<usize>, touching: &dyn Fn((u64, u64)) -> bool| {
            j.and_then(|j| lines.get(j)).is_some_and(|g| is_image(g) && bounds(g).is_some_and(touching))
        };
        let name = match f.get(5..).map(|p| p.join(" ")).filter(|p| !p.is_empty()) {
            Some(n) => n,
            None if touches_image(Some(k + 1), &|(image_lo, _)| image_lo == hi) => {
                "[linear memory below the image]".into()
            }
            None if touches_image(k.checked_sub(1), &|(_, image_hi)| image_hi == lo) => {
                "[linear memory above the image]".into()
            }
            None => "[anon]".into(),
        };
        let pages = (hi - lo) / PAGE;
        let Ok(raw) = read_at(&mut pagemap, lo / PAGE * 8, pages as usize * 8) else { continue };
        let image = is_image(f);
        if image {
            images += 1;
            if first_image.is_none() {
                let offset = f.get(2).and_then(|o| u64::from_str_radix(o, 16).ok()).unwrap_or(0);
                first_image = Some((range.to_string(), lo, hi, offset));
            }
        }
        let entry = kinds.entry(name).or_default();
        entry[0] += 1;
        for (i, e) in raw.chunks_exact(8).enumerate() {
            let e = u64::from_le_bytes(e.try_into().unwrap_or_default());
            let present = e >> 63 & 1 == 1;
            // Bit 61: a file page or shared anonymous page; clear for the
            // process's own anonymous pages.
            let private = present && e >> 61 & 1 == 0;
            entry[1] += present as u64;
            entry[2] += private as u64;
            if image && private {
                let row = i / 16;
                if image_rows.len() <= row {
                    image_rows.resize(row + 1, 0);
                }
                image_rows[row] += 1;
            }
        }
    }
    let kinds: serde_json::Map<String, J> = kinds
        .into_iter()
        .filter(|(k, [_, present, _])| *present > 0 || k.starts_with("[linear memory"))
        .map(|(k, [n, present, private])| {
            (k, json!({"mappings": n, "present_kib": present * PAGE_KIB, "private_kib": private * PAGE_KIB}))
        })
        .collect();
    let per_image: Vec<f64> = image_rows.iter().map(|n| (*n * PAGE_KIB) as f64 / images.max(1) as f64).collect();
    json!({"by_mapping": kinds, "image_mappings": images,
        "image_private_kib_per_64kib_row_per_sandbox": per_image,
        "first_image_changes": first_image.map(|(range, lo, hi, offset)| image_changes(&range, lo, hi, offset))})
}

/// How one sandbox's copy of the image differs from the image itself (the
/// memfd, read through `/proc/self/map_files`): the pages whose bytes
/// changed and the 4-byte words that did. A page can be private with no net
/// change (a count raised and lowered again).
fn image_changes(range: &str, lo: u64, hi: u64, offset: u64) -> J {
    let read =
        |path: &str, at: u64| std::fs::File::open(path).and_then(|mut f| read_at(&mut f, at, (hi - lo) as usize));
    let (now, image) = match (read("/proc/self/mem", lo), read(&format!("/proc/self/map_files/{range}"), offset)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return json!(format!("error: {e}")),
    };
    let (mut pages, mut words) = (0u64, 0u64);
    // `WREPL_BENCH_PAGE_DIFF=<file>`: every changed word, one line each
    // (offset in the image, the image's value, the sandbox's), for telling
    // a reference count raised from a pointer rewritten.
    let mut dump = std::env::var_os("WREPL_BENCH_PAGE_DIFF").map(|_| String::new());
    for (p, (a, b)) in now.chunks(PAGE as usize).zip(image.chunks(PAGE as usize)).enumerate() {
        let mut changed = 0u64;
        for (w, (x, y)) in a.chunks(4).zip(b.chunks(4)).enumerate() {
            if x == y {
                continue;
            }
            changed += 1;
            if let Some(d) = dump.as_mut() {
                let word = |v: &[u8]| u32::from_le_bytes(v.try_into().unwrap_or_default());
                let at = offset + p as u64 * PAGE + w as u64 * 4;
                d.push_str(&format!("{at:#x} {:#x} {:#x}\n", word(y), word(x)));
            }
        }
        pages += (changed > 0) as u64;
        words += changed;
    }
    if let (Some(d), Some(path)) = (dump, std::env::var_os("WREPL_BENCH_PAGE_DIFF")) {
        // And the image itself, `<file>.image`, to read what the words belong to.
        let mut image_path = path.clone();
        image_path.push(".image");
        if let Err(e) = std::fs::write(&path, d).and_then(|()| std::fs::write(&image_path, &image)) {
            return json!(format!("error: WREPL_BENCH_PAGE_DIFF {path:?}: {e}"));
        }
    }
    json!({"pages": (hi - lo) / PAGE, "changed_pages": pages, "changed_words": words})
}

/// `len` bytes of `f` from offset `at`.
fn read_at(f: &mut std::fs::File, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    f.seek(SeekFrom::Start(at))?;
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf)?;
    Ok(buf)
}

fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut a = xs.to_vec();
    a.sort_by(|x, y| x.total_cmp(y));
    a
}

fn median(xs: &[f64]) -> f64 {
    let a = sorted(xs);
    let n = a.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => a[n / 2],
        _ => (a[n / 2 - 1] + a[n / 2]) / 2.0,
    }
}

fn quantile(xs: &[f64], q: f64) -> f64 {
    let a = sorted(xs);
    if a.is_empty() {
        return f64::NAN;
    }
    a[(q * (a.len() - 1) as f64).floor() as usize]
}

fn num(w: &J, key: &str, dflt: u64) -> u64 {
    w.get(key).and_then(J::as_u64).unwrap_or(dflt)
}

/// One cold-sandbox iteration: new Repl (instantiate + init), eval, read, drop.
async fn cold_once(b: &Bench, d: &ReplBuilder, code: &str) -> R<(f64, J)> {
    let t0 = Instant::now();
    let mut repl = b.repl_with(d).await?;
    let v = eval(&mut repl, code).await?;
    drop(repl);
    Ok((t0.elapsed().as_secs_f64() * 1e6, v))
}

/// A fresh Repl, then one timed eval (seconds).
async fn timed_once(b: &Bench, code: &str) -> R<(f64, J)> {
    let mut repl = b.repl().await?;
    let t0 = Instant::now();
    let v = eval(&mut repl, code).await?;
    let dt = t0.elapsed().as_secs_f64();
    drop(repl);
    Ok((dt, v))
}

/// W3 with one no-op PreToolUse hook on `t` (a process per call), on fewer calls.
async fn tool_calls_with_hook(b: &Bench, code: &str, calls: u64) -> R<J> {
    const HOOK_CALLS: u64 = 500;
    let settings =
        json!({"hooks": {"PreToolUse": [{"matcher": "t", "hooks": [{"type": "command", "command": "true"}]}]}});
    let d = builder(&b.engine, &settings.to_string())?;
    let small = code.replacen(&calls.to_string(), &HOOK_CALLS.to_string(), 1);
    if small == code {
        return Err(format!("cannot find the call count {calls} in the code"));
    }
    let mut repl = b.repl_with(&d).await?;
    let t0 = Instant::now();
    let v = eval(&mut repl, &small).await?;
    let dt = t0.elapsed().as_secs_f64();
    let expect = HOOK_CALLS * (HOOK_CALLS - 1) / 2;
    if v != json!(expect) {
        return Err(format!("hooked run returned {v}, expected {expect}"));
    }
    Ok(json!(dt * 1e6 / HOOK_CALLS as f64))
}

async fn run_workload(b: &Bench, w: &J) -> R<J> {
    let kind = w["kind"].as_str().unwrap_or("");
    let code = w["code"].as_str().ok_or("workload has no code")?;
    match kind {
        "cold" => {
            let warmup = num(w, "warmup", 0);
            let iters = num(w, "iterations", 200);
            let mut samples = Vec::with_capacity(iters as usize);
            let mut check = J::Null;
            for i in 0..warmup + iters {
                let (dt, v) = cold_once(b, &b.builder, code).await?;
                check = v;
                if i >= warmup {
                    samples.push(dt);
                }
            }
            // Variant: the Dispatcher (tool schemas compiled, rules parsed) built per sandbox too.
            let mut fresh_d = Vec::with_capacity(iters as usize);
            for _ in 0..iters.min(100) {
                let t0 = Instant::now();
                let d = builder(&b.engine, "{}")?;
                cold_once(b, &d, code).await?;
                fresh_d.push(t0.elapsed().as_secs_f64() * 1e6);
            }
            Ok(json!({"value": median(&samples), "check": check, "extra": {
                "iterations": samples.len(),
                "mean_us": samples.iter().sum::<f64>() / samples.len() as f64,
                "p10_us": quantile(&samples, 0.1), "p90_us": quantile(&samples, 0.9),
                "dispatcher": "one compiled pipeline (tool schemas, rules, hooks) shared by all sandboxes, like the engine; per-context state is each sandbox's own",
                "with_new_dispatcher_median_us": median(&fresh_d)}}))
        }
        "warm_eval" => {
            let iters = num(w, "iterations", 10000);
            let mut repl = b.repl().await?;
            let mut v = J::Null;
            let t0 = Instant::now();
            for _ in 0..iters {
                v = eval(&mut repl, code).await?;
            }
            let dt = t0.elapsed().as_secs_f64();
            Ok(json!({"value": dt * 1e6 / iters as f64, "check": v, "extra": {"total_ms": dt * 1e3}}))
        }
        "compute" if b.js_memory_limit.is_none() => {
            // Try wrepl's default limits first; if the heap cap stops the code, say so and
            // measure with a raised heap instead.
            match timed_once(b, code).await {
                Err(e) if e.contains("out of memory") => {
                    let raised = Bench { js_memory_limit: Some(RAISED_JS_HEAP), ..b.clone() };
                    let mut r = Box::pin(run_workload(&raised, w)).await?;
                    r["extra"]["default_limits_error"] = json!(e);
                    r["extra"]["js_memory_limit_mib"] = json!(RAISED_JS_HEAP >> 20);
                    Ok(r)
                }
                Err(e) => Err(e),
                Ok(_) => {
                    let raised = Bench { js_memory_limit: Some(64 << 20), ..b.clone() };
                    Box::pin(run_workload(&raised, w)).await
                }
            }
        }
        "tool_calls" | "parallel_sleep" | "compute" => {
            let mut warmup_ms = vec![];
            for _ in 0..num(w, "warmup_runs", 0) {
                warmup_ms.push(timed_once(b, code).await?.0 * 1e3);
            }
            let (dt, v) = timed_once(b, code).await?;
            let mut extra = json!({"total_ms": dt * 1e3, "warmup_ms": warmup_ms});
            // `WREPL_BENCH_NO_HOOK=1` skips the hook variant (for profiling the main loop alone).
            if kind == "tool_calls" && std::env::var_os("WREPL_BENCH_NO_HOOK").is_some() {
                return Ok(json!({"value": dt * 1e6 / num(w, "calls", 1) as f64, "check": v, "extra": extra}));
            }
            if kind == "tool_calls" {
                let calls = num(w, "calls", 1);
                extra["with_noop_hook_us_per_call"] = match tool_calls_with_hook(b, code, calls).await {
                    Ok(v) => v,
                    Err(e) => json!(format!("error: {e}")),
                };
                extra["with_noop_hook_calls"] = json!(500);
                Ok(json!({"value": dt * 1e6 / calls as f64, "check": v, "extra": extra}))
            } else {
                Ok(json!({"value": dt * 1e3, "check": v, "extra": extra}))
            }
        }
        "memory" => {
            let n = num(w, "contexts", 500);
            {
                let mut repl = b.repl().await?;
                eval(&mut repl, code).await?;
            }
            let before = rss_kib();
            let smaps0 = smaps_kib();
            let mut live = Vec::with_capacity(n as usize);
            let mut check = J::Null;
            for _ in 0..n {
                let mut repl = b.repl().await?;
                check = eval(&mut repl, code).await?;
                live.push(repl);
            }
            let after = rss_kib();
            let smaps1 = smaps_kib();
            // VmRSS counts a page of the shared guest image once per
            // context that maps it; PSS divides it among them, and private
            // dirty pages are each context's own.
            let per_context: serde_json::Map<String, J> = smaps1
                .iter()
                .map(|(k, after)| {
                    let before = smaps0.iter().find(|(b, _)| b == k).map_or(0, |(_, v)| *v);
                    (k.clone(), json!((*after as f64 - before as f64) / n as f64))
                })
                .collect();
            // `WREPL_BENCH_PAGE_CENSUS=1`: where the pages are (see `page_census`).
            let census = std::env::var_os("WREPL_BENCH_PAGE_CENSUS").map(|_| page_census());
            let extra = json!({"rss_before_kib": before, "rss_after_kib": after, "contexts": live.len(),
                "smaps_rollup_kib_per_context": per_context, "page_census": census,
                "gc": "none forced (no host API for it)"});
            drop(live);
            Ok(json!({"value": (after as f64 - before as f64) / n as f64, "check": check, "extra": extra}))
        }
        other => Err(format!("unknown workload kind {other}")),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: wrepl-bench workloads.json [WID...]");
        std::process::exit(2);
    }
    let doc: J = match std::fs::read_to_string(&args[0])
        .map_err(|e| e.to_string())
        .and_then(|s| serde_json::from_str(&s).map_err(|e| e.to_string()))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("wrepl-bench: cannot read {}: {e}", args[0]);
            std::process::exit(2);
        }
    };
    let all: Vec<J> = doc["workloads"].as_array().cloned().unwrap_or_default();
    let wanted: Vec<String> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        all.iter().filter_map(|w| w["id"].as_str().map(String::from)).collect()
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let bench = rt.block_on(async {
        // `WREPL_BENCH_POOL_SLOTS=n`: a smaller instance pool, for running
        // under valgrind (which cannot reserve the default pool's address
        // space; see bench/instructions.sh).
        let mut opts = match std::env::var("WREPL_BENCH_POOL_SLOTS").map(|v| v.parse::<u32>()) {
            Ok(Ok(n)) => EngineOptions { pool_slots: n, ..EngineOptions::default() },
            Ok(Err(e)) => return Err(format!("WREPL_BENCH_POOL_SLOTS: {e}")),
            Err(_) => EngineOptions::default(),
        };
        // `WREPL_BENCH_PERFMAP=1`: name the guest's functions for `perf`.
        opts.perf_map = std::env::var_os("WREPL_BENCH_PERFMAP").is_some();
        // `WREPL_BENCH_GUEST=<component.wasm>`: another build of the guest
        // (a compile flag or optimiser measured against the committed one),
        // compiled at start (through the cache) instead of the embedded one.
        let engine = match std::env::var_os("WREPL_BENCH_GUEST") {
            Some(path) => {
                let bytes = std::fs::read(&path).map_err(|e| format!("WREPL_BENCH_GUEST {path:?}: {e}"))?;
                SandboxEngine::with_component(opts, &bytes)
            }
            None => SandboxEngine::new(opts),
        };
        let engine = Arc::new(engine.map_err(|e| format!("engine: {e}"))?);
        let builder = builder(&engine, "{}")?;
        Ok::<_, String>(Bench { engine, builder, js_memory_limit: None })
    });
    let mut results = serde_json::Map::new();
    for id in wanted {
        let Some(w) = all.iter().find(|w| w["id"] == id.as_str()) else {
            results.insert(id.clone(), json!({"value": null, "error": format!("unknown workload {id}")}));
            continue;
        };
        let unit = w["unit"].clone();
        let r = match &bench {
            Err(e) => Err(e.clone()),
            Ok(b) => rt.block_on(run_workload(b, w)),
        };
        let r = match r {
            Ok(mut r) => {
                r["unit"] = unit;
                r
            }
            Err(e) => json!({"value": null, "unit": unit, "error": e}),
        };
        results.insert(id, r);
    }
    println!("{}", json!({"peer": "wrepl", "engine": ENGINE, "results": results}));
}
