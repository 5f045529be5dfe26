//! Memory, stack, console and result-size limits: clear errors, the host survives.

use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn huge_string_allocation_is_a_clear_error() {
    let mut r = TestSandbox::new().build().await;
    ev(&mut r, "let kept = 'k'").await;
    let (name, msg) = err(&ev(&mut r, "'x'.repeat(2 ** 30).length").await);
    assert_eq!(name, "RangeError", "{msg}");
    let (name, msg) = err(&ev(
        &mut r,
        "let parts = []; for (let i = 0; i < 4096; i++) parts.push('y'.repeat(1 << 18) + i); parts.length",
    )
    .await);
    assert_eq!(name, "InternalError", "{msg}");
    assert!(msg.contains("out of memory"), "{msg}");
    assert_eq!(ok(&ev(&mut r, "parts = null; kept").await), json!("k"));
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_growth_hits_the_quickjs_limit_before_the_host_cap() {
    let mut r = TestSandbox::new().build().await;
    let (name, msg) = err(&ev(&mut r, "let big = []; while (true) big.push(new Array(1e5).fill(1.5))").await);
    assert_eq!(name, "InternalError");
    assert!(msg.contains("out of memory"), "{msg}");
    assert_eq!(ok(&ev(&mut r, "big = null; 'recovered'").await), json!("recovered"));
}

#[tokio::test(flavor = "multi_thread")]
async fn deep_recursion_throws_a_catchable_range_error() {
    let mut r = TestSandbox::new().build().await;
    let (name, _) = err(&ev(&mut r, "function f(n) { return f(n + 1) + 1 } f(0)").await);
    assert_eq!(name, "RangeError");
    let res =
        ev(&mut r, "function d(n) { return n === 0 ? 0 : d(n - 1) + 1 } try { d(1e6) } catch (e) { e.name }").await;
    assert_eq!(ok(&res), json!("RangeError"));
    assert!(res.context_reset.is_none());
    assert_eq!(ok(&ev(&mut r, "d(100)").await), json!(100));
}

#[tokio::test(flavor = "multi_thread")]
async fn native_recursion_is_a_range_error_even_with_a_huge_js_stack_limit() {
    // The QuickJS stack limit is clamped so that it is always reached before
    // the engine's native stack: deep C recursion (JSON) stays catchable.
    let mut r = TestSandbox::new().limits(|l| l.js_stack = u32::MAX).build().await;
    ev(&mut r, "let kept = 'k'").await;
    for code in [
        "JSON.parse('['.repeat(1e6))",
        "let v = {}; for (let i = 0; i < 1e5; i++) v = { v }; JSON.stringify(v).length",
        "function f(n) { return f(n + 1) + 1 } f(0)",
    ] {
        let res = ev(&mut r, code).await;
        let (name, msg) = err(&res);
        assert_eq!(name, "RangeError", "{code}: {msg}");
        assert!(res.context_reset.is_none(), "{code}: {:?}", res.context_reset);
    }
    assert_eq!(ok(&ev(&mut r, "kept").await), json!("k"));
    // The default limit is not clamped.
    assert!(wrepl::Limits::default().js_stack <= wrepl::engine::MAX_JS_STACK_LIMIT);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exhausted_heap_resets_the_context_and_says_so() {
    let mut r = TestSandbox::new().build().await;
    ev(&mut r, "let kept = 'k'").await;
    let res = ev(&mut r, "const m = new Map(); for (let i = 0; ; i++) m.set(i, { i })").await;
    let (name, msg) = err(&res);
    assert_eq!(name, "InternalError", "{msg}");
    assert!(msg.contains("out of memory"), "{msg}");
    assert!(res.context_reset.as_deref().is_some_and(|r| r.contains("out of memory")), "{:?}", res.context_reset);
    // A fresh context: the old variables are gone, evaluation works.
    assert_eq!(ok(&ev(&mut r, "typeof kept").await), json!("undefined"));
    assert_eq!(ok(&ev(&mut r, "1 + 1").await), json!(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn console_budget_truncates_once() {
    let mut r = TestSandbox::new().build().await;
    let res =
        ev(&mut r, "const line = 'z'.repeat(1 << 20); for (let i = 0; i < 60; i++) console.log(line); 'end'").await;
    assert_eq!(ok(&res), json!("end"));
    assert_eq!(res.stdout.len(), wrepl::engine::CONSOLE_BUDGET_BYTES);
    assert_eq!(res.stderr.matches("console output exceeded").count(), 1);
    let res = ev(&mut r, "console.log('small'); 1").await;
    assert_eq!(res.stdout, "small\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn result_text_is_capped_with_a_marker() {
    let mut r = TestSandbox::new().build().await;
    let res = ev(&mut r, "'a'.repeat(250000)").await;
    assert!(res.text.starts_with(&"a".repeat(100_000)));
    assert!(res.text.contains("[truncated: showing 100000 of 250000 characters]"), "{}", &res.text[100_000..]);
    let res = ev(&mut r, "'short'").await;
    assert_eq!(res.text, "short");
    // Past the guest's own cut (2,000,000), the marker still gives the whole length.
    let res = ev(&mut r, "'b'.repeat(5000002)").await;
    assert!(res.text.contains("[truncated: showing 100000 of 5000002 characters]"), "{}", &res.text[100_000..]);
    assert_eq!(res.text_chars, 5_000_002);
}

#[tokio::test(flavor = "multi_thread")]
async fn error_name_message_and_stack_are_capped_like_results() {
    let mut r = TestSandbox::new().build().await;
    let code =
        "const e = new Error('m'.repeat(3 << 20)); e.name = 'N'.repeat(300000); e.stack = 's'.repeat(3 << 20); throw e";
    let res = ev(&mut r, code).await;
    let e = res.error.expect("it threw");
    for (part, text, c) in [("name", &e.name, 'N'), ("message", &e.message, 'm'), ("stack", &e.stack, 's')] {
        assert!(text.starts_with(&c.to_string().repeat(100_000)), "{part}");
        assert!(text.len() < 100_100, "{part} is {} bytes", text.len());
        assert!(text.contains("…[truncated: showing 100000 of"), "{part}: {}", &text[100_000..]);
    }
    assert_eq!(ok(&ev(&mut r, "'still here'").await), json!("still here"));
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_and_deeply_nested_code_is_refused() {
    let mut r = TestSandbox::new().build().await;
    let code = format!("let a = {}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let (name, msg) = err(&ev(&mut r, &code).await);
    assert_eq!(name, "RangeError");
    assert!(msg.contains("nests"), "{msg}");
    let code = format!("let s = '{}'", "x".repeat(2 << 20));
    let (_, msg) = err(&ev(&mut r, &code).await);
    assert!(msg.contains("limit"), "{msg}");
    // deep but accepted by the pre-scan: QuickJS's own stack check answers
    let code = format!("let v = {}0", "a ? b : ".repeat(50_000));
    let res = ev(&mut r, &code).await;
    assert!(res.error.is_some());
    assert_eq!(ok(&ev(&mut r, "'still here'").await), json!("still here"));
}

/// A script that makes many calls with large inputs (denied writes of 1 MiB
/// each: nothing reaches the disk) must not grow the host with their
/// records: a record keeps a preview of an input too large for it, as it
/// does of an output. Measured on the `wrepl` process itself: its peak
/// resident memory (`VmHWM`), read once the evaluation has printed its
/// result, while a second snippet keeps the process waiting. Keeping every
/// input whole took 1.2 GiB here (the records, then the transcript printed).
#[test]
fn records_of_many_large_inputs_keep_the_host_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let code = "const big = 'x'.repeat(1 << 20); let n = 0; \
                for (let i = 0; i < 400; i++) { try { await Write({ file_path: 'a.txt', content: big }) } catch (e) { if (e.kind === 'denied') n++ } } n";
    let (first, peak_kib) = first_result_and_peak(dir.path(), &["--json", "-e", code]);
    let r: serde_json::Value = serde_json::from_str(first.trim()).unwrap();
    assert_eq!(r["result"], json!(400), "{r}");
    assert!(!dir.path().join("a.txt").exists());
    // Every call is in the transcript, its input a bounded preview.
    let uses: Vec<&serde_json::Value> =
        r["calls"].as_array().unwrap().iter().filter(|c| c["type"] == "tool_use").collect();
    assert_eq!(uses.len(), 400);
    for u in &uses {
        assert_eq!(u["input"]["truncated"], json!(true), "{}", &u.to_string()[..200]);
        assert!(u["input"]["bytes"].as_u64().unwrap() > 1 << 20);
        assert!(u["input"].to_string().len() < 10_000);
    }
    assert!(peak_kib < 200 << 10, "the wrepl process peaked at {} MiB", peak_kib >> 10);
}

/// Grep searches files on helper threads and merges their lines in walk
/// order, so a file's lines wait for the files before it. What the helpers
/// hold is bounded by one budget for the whole search (the output's own
/// bound); a file whose lines do not fit is searched again when its turn
/// comes. Measured on the `wrepl` process, as above: 40 names of one 4 MB
/// file of matching lines. Each helper searches a batch of 32 files before
/// handing its results over, so without the bound it would hold the 32
/// files' lines, 128 MiB more. (The search takes about 1.5 s in a debug
/// build, a fifth of Grep's 10 s native timeout or less on a loaded
/// machine; 64 names of a 12 MB file took 3 s and timed out under CI load.)
#[test]
fn grep_lines_held_for_the_merge_stay_within_one_bound() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("needle {}\n", "x".repeat(992));
    std::fs::write(dir.path().join("f00.txt"), line.repeat(4_000)).unwrap();
    for i in 1..40 {
        std::fs::hard_link(dir.path().join("f00.txt"), dir.path().join(format!("f{i:02}.txt"))).unwrap();
    }
    let code = "const r = await Grep({ pattern: 'needle', output_mode: 'content' }); \
                [r.numLines, r.truncated, r.content.split('\\n')[0].startsWith(process_root + '/f00.txt:1:needle ')]";
    let code = code.replace("process_root", &format!("{:?}", dir.path().canonicalize().unwrap().to_str().unwrap()));
    let (first, peak_kib) = first_result_and_peak(dir.path(), &["-e", &code]);
    // The output's line bound cuts the third file.
    let r: serde_json::Value = serde_json::from_str(first.trim()).unwrap();
    assert_eq!(r, json!([10_000, true, true]));
    // About 145 MiB here; without the bound a helper holds its batch's
    // 128 MiB of lines on top.
    assert!(peak_kib < 200 << 10, "the wrepl process peaked at {} MiB", peak_kib >> 10);
}

/// Run `wrepl eval ARGS` in `dir`, followed by an evaluation that waits, and
/// read the first evaluation's printed result and the process's peak
/// resident memory in KiB (`VmHWM`) while it waits; then kill it.
fn first_result_and_peak(dir: &std::path::Path, args: &[&str]) -> (String, u64) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
        .arg("eval")
        .args(args)
        .args(["-e", "await new Promise(r => setTimeout(r, 600000))"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!first.is_empty(), "wrepl printed no result (its stderr is above)");
    let peak_kib = status
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    (first, peak_kib)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_the_heap_has_no_room_for_says_what_ran_out() {
    // Reads of a 2 MB file kept alive at once, in a heap of 8 MiB: the call
    // whose result does not fit fails with a message that names the heap,
    // the tool and the result's size, not with "the host returned invalid
    // JSON"; the context survives.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), format!("{}\n", "x".repeat(999)).repeat(2000)).unwrap();
    let mut r = builder().roots([dir.path()]).with_limits(|l| l.js_memory = 8 << 20).build().await.unwrap();
    let res = ev(
        &mut r,
        "try { const rs = await Promise.all(Array.from({length: 8}, () => cat('big.txt'))); rs.length } \
         catch (e) { ({name: e.name, kind: e.kind, message: e.message}) }",
    )
    .await;
    let v = ok(&res);
    assert_eq!(v["kind"], "limit", "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("heap has no room for the result of Read") && message.contains("bytes of JSON"),
        "{message}"
    );
    assert!(res.context_reset.is_none(), "{:?}", res.context_reset);
    assert_eq!(ok(&ev(&mut r, "(await cat('big.txt')).length").await), json!(2_000_000));
}

/// A result Map, Set or typed array past the rendering bound (10,000
/// items) ends with a marker, as an array does, instead of losing the rest
/// silently.
#[tokio::test(flavor = "multi_thread")]
async fn rendered_collections_past_the_bound_say_so() {
    let mut r = TestSandbox::new().build().await;
    let map = ok(&ev(&mut r, "new Map(Array.from({length: 12000}, (_, i) => ['k' + i, i]))").await);
    let map = map.as_object().expect("a Map renders as an object");
    assert_eq!(map.get("[…]"), Some(&json!("more entries not shown")));
    assert!(map.len() < 12000, "{}", map.len());
    let set = ok(&ev(&mut r, "new Set(Array.from({length: 12000}, (_, i) => i))").await);
    let set = set.as_array().expect("a Set renders as an array");
    assert_eq!(set.last(), Some(&json!("[…]")));
    assert!(set.len() < 12000);
    let typed = ok(&ev(&mut r, "new Uint8Array(12000)").await);
    let typed = typed.as_array().expect("a typed array renders as an array");
    assert_eq!((typed.len(), typed.last()), (10001, Some(&json!("[…]"))));
    // Within the bound nothing is added.
    assert_eq!(ok(&ev(&mut r, "new Set([1, 2])").await), json!([1, 2]));
    assert_eq!(ok(&ev(&mut r, "new Map([['a', 1]])").await), json!({"a": 1}));
}
