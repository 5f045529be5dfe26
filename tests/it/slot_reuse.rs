//! A freed pool slot never shows the previous context's bytes to the next
//! one: with slots reset in place (PAGEMAP_SCAN, no swap), and with a swap
//! area active, after the previous context's memory was paged out with
//! `madvise(MADV_PAGEOUT)` (wasmtime #14357: the in-place reset misses pages
//! that were swapped out, so wrepl turns it off when a swap area is active).
//!
//! Each phase runs in a process of its own (this test binary, filtered to
//! [`slot_reuse_phase`]), so that every pool mapping it scans is its own.
//! The parent turns a swap file on for the second phase (root; CI and
//! `scripts/test.sh` run as root) and off again, whatever happens.
//!
//! The secret is built at run time from character codes, so its bytes exist
//! only in the guest's memory, never in the script's text on the host: a
//! scan of every writable anonymous mapping of the process (the guest
//! memory pool among them) finds it while the first context lives (the
//! control) and must not find it once a second context took the slot.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use wrepl::{EngineOptions, SandboxEngine};

use super::support::{ev, ok, TestSandbox};

/// `WRPL-SLOT-SECRET-`: the scan compares memory with this constant, which
/// lies in the binary's read-only data (a file mapping, not scanned); no
/// copy of it is ever made on the host's heap.
const SECRET_CODES: &[u8] = &[87, 82, 80, 76, 45, 83, 76, 79, 84, 45, 83, 69, 67, 82, 69, 84, 45];

/// Size of the secret string the first context holds.
const SECRET_BYTES: usize = 16 << 20;

/// Writable private mappings of this process that are anonymous or copies
/// of a memfd (wasmtime maps a guest's initial memory image from one) and
/// hold any page, in memory or in swap: (start, end). A mapping with
/// neither reads as zeros (the pools reserve many GiB of those).
fn anonymous_mappings() -> Vec<(usize, usize)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let mut out = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    let mut held = 0u64;
    let mut flush = |current: &mut Option<(usize, usize)>, held: &mut u64| {
        if let Some(range) = current.take() {
            if *held > 0 {
                out.push(range);
            }
        }
        *held = 0;
    };
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or_default();
        if let Some((a, b)) = first.split_once('-').filter(|(a, _)| a.bytes().all(|c| c.is_ascii_hexdigit())) {
            flush(&mut current, &mut held);
            let mut f = line.split_whitespace().skip(1);
            let perms = f.next().unwrap_or_default();
            let path = f.nth(3);
            let private_rw = perms.starts_with("rw") && perms.ends_with('p');
            if private_rw && path.is_none_or(|p| p.starts_with("/memfd:")) {
                current = usize::from_str_radix(a, 16).ok().zip(usize::from_str_radix(b, 16).ok());
            }
        } else if let Some(kb) = line.strip_prefix("Rss:").or_else(|| line.strip_prefix("Swap:")) {
            held += kb.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap_or(0);
        }
    }
    flush(&mut current, &mut held);
    out
}

/// How many times `needle` occurs in this process's writable anonymous
/// memory, read through `/proc/self/mem` (a region that cannot be read is
/// skipped).
fn occurrences(needle: &[u8]) -> usize {
    use std::io::{Read, Seek, SeekFrom};
    let mut mem = std::fs::File::open("/proc/self/mem").expect("/proc/self/mem");
    let mut found = 0;
    let mut buf = vec![0u8; 4 << 20];
    let finder = memchr::memmem::Finder::new(needle);
    let mut scanned = 0usize;
    for (start, end) in anonymous_mappings() {
        scanned += end - start;
        let mut at = start;
        // Chunks overlap by the needle's length, so no occurrence is split.
        while at < end {
            let len = (end - at).min(buf.len());
            if mem.seek(SeekFrom::Start(at as u64)).is_err() {
                break;
            }
            let Ok(n) = mem.read(&mut buf[..len]) else { break };
            if n == 0 {
                break;
            }
            found += finder.find_iter(&buf[..n]).count();
            if at + n >= end {
                break;
            }
            at += n.saturating_sub(needle.len()).max(1);
        }
    }
    // The buffer held what it read: clear it, so a later scan does not find
    // this scan's copy in freed memory.
    buf.fill(0);
    std::hint::black_box(&buf);
    println!("scanned {} MiB of writable private memory holding pages: {found} occurrences", scanned >> 20);
    found
}

/// `VmSwap` of this process, in bytes.
fn swapped() -> u64 {
    super::support::proc_status("self", "VmSwap:") * 1024
}

/// Ask the kernel to page out every writable anonymous mapping now.
fn page_out_everything() {
    for (start, end) in anonymous_mappings() {
        // SAFETY: MADV_PAGEOUT only moves the pages of this private
        // anonymous range to swap; their contents stay as they are (they
        // are read back on the next access), so no memory is invalidated.
        #[allow(unsafe_code)]
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT);
        }
    }
}

/// One phase, in this process: a context fills its memory with the secret;
/// with `page_out`, its memory goes to swap; it is dropped, a second
/// context takes the (only) slot, and the secret is nowhere.
async fn phase(page_out: bool) {
    let engine = Arc::new(
        SandboxEngine::new(EngineOptions { cache_dir: None, pool_slots: 1, ..Default::default() }).expect("engine"),
    );
    let codes = SECRET_CODES.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
    let code = format!(
        "globalThis.kept = String.fromCharCode({codes}).repeat({}); kept.length",
        SECRET_BYTES / SECRET_CODES.len()
    );
    let mut a = TestSandbox::new().configure(|b| b.engine(engine.clone())).build().await;
    let len = ok(&ev(&mut a, &code).await);
    assert!(len.as_u64().unwrap_or(0) >= (SECRET_BYTES - SECRET_CODES.len()) as u64, "{len}");
    // The control: the scan finds the secret in the living context.
    let before = occurrences(SECRET_CODES);
    assert!(before >= SECRET_BYTES / SECRET_CODES.len() / 2, "the scan sees the first context's secret: {before}");
    if page_out {
        let swap_before = swapped();
        page_out_everything();
        let moved = swapped().saturating_sub(swap_before);
        assert!(moved >= (SECRET_BYTES / 2) as u64, "MADV_PAGEOUT moved only {moved} bytes to swap");
        println!("paged out {} MiB", moved >> 20);
    }
    drop(a);
    let mut b = TestSandbox::new().configure(|b| b.engine(engine.clone())).build().await;
    assert_eq!(ok(&ev(&mut b, "typeof kept").await), serde_json::json!("undefined"));
    // The second context's memory holds as much as the first's did.
    ok(&ev(&mut b, &format!("globalThis.filler = 'x'.repeat({SECRET_BYTES}); filler.length")).await);
    let after = occurrences(SECRET_CODES);
    assert_eq!(after, 0, "the secret of the slot's previous context is visible after the slot was reused");
    drop(b);
}

/// Run by [`a_freed_slot_never_shows_the_previous_contexts_bytes`] in a
/// process of its own: `WREPL_SLOT_PHASE=scan` (slots as this machine
/// resets them) or `=swap` (a swap area is active: the in-place reset must
/// be off, and the first context's memory is paged out).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "run in a process of its own by a_freed_slot_never_shows_the_previous_contexts_bytes"]
async fn slot_reuse_phase() {
    match std::env::var("WREPL_SLOT_PHASE").as_deref() {
        Ok("scan") => {
            println!("slots reset in place: {}", wrepl::engine::slots_reset_in_place());
            phase(false).await;
        }
        Ok("swap") => {
            assert!(wrepl::engine::paging_out_possible(), "the parent turned a swap area on");
            assert!(!wrepl::engine::slots_reset_in_place(), "with swap active, slots must not be reset by the scan");
            phase(true).await;
        }
        other => panic!("WREPL_SLOT_PHASE must be scan or swap, not {other:?}"),
    }
    println!("slot phase passed");
}

fn run_phase(which: &str) {
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new(exe)
        .args(["slot_reuse::slot_reuse_phase", "--exact", "--include-ignored", "--nocapture"])
        .env("WREPL_SLOT_PHASE", which)
        .output()
        .expect("run the phase");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "phase {which} failed ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("slot phase passed"), "phase {which} did not run:\n{stdout}\n{stderr}");
}

/// A swap file, on while this lives.
struct Swap(PathBuf);

impl Swap {
    fn on(path: &Path) -> Self {
        let run = |cmd: &str, args: &[&str]| {
            let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"));
            assert!(
                out.status.success(),
                "{cmd} {args:?} failed (this test needs root to turn a swap file on): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let p = path.to_str().expect("a UTF-8 path");
        run("dd", &["if=/dev/zero", &format!("of={p}"), "bs=1M", "count=128", "status=none"]);
        run("chmod", &["600", p]);
        run("mkswap", &[p]);
        run("swapon", &[p]);
        Self(path.to_path_buf())
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_freed_slot_never_shows_the_previous_contexts_bytes() {
    run_phase("scan");
    // The swap file lives on the disk (not tmpfs, which cannot hold one).
    let dir = tempfile::Builder::new().prefix("wrepl-swap").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let swap = Swap::on(&dir.path().join("swapfile"));
    run_phase("swap");
    drop(swap);
}
