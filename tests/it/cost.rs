//! The cost record of an evaluation, checked against known work: the
//! memory a script allocates, the calls it makes and their bytes, in
//! `--json`, in the session log and in `wrepl log show`.

use super::support::*;

#[test]
fn cost_follows_known_work() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.sqlite3");
    let store = store.to_str().unwrap();
    let o = wrepl_in(
        dir.path(),
        &[
            "eval",
            "--json",
            "--store",
            store,
            "--session",
            "c",
            "--allow",
            "Write",
            "-e",
            "const a = new Uint8Array(50 << 20); a.fill(1); a.length",
            "-e",
            "for (let i = 0; i < 10; i++) await put('f' + i + '.txt', 'x'.repeat(100)); (await cat('f0.txt')).length",
            "-e",
            "let n = 0; for (let i = 0; i < 3e6; i++) n += i; n > 0",
        ],
    );
    assert!(o.status.success(), "{}", err_text(&o));
    let costs: Vec<serde_json::Value> =
        out(&o).lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["cost"].clone()).collect();
    assert!(costs[0]["peak_memory_bytes"].as_u64().unwrap() >= 50 << 20, "{}", costs[0]);
    assert_eq!(costs[0]["calls"], serde_json::json!({}));
    assert_eq!(costs[1]["calls"], serde_json::json!({"Write": 10, "Read": 1}));
    // Ten inputs of 100 characters and more; the read brings 100 back.
    assert!(costs[1]["bytes_in"].as_u64().unwrap() > 1000, "{}", costs[1]);
    assert!(costs[1]["bytes_out"].as_u64().unwrap() > 100, "{}", costs[1]);
    // The loop's guest time shows in guest_cpu_us, within its wall time.
    let (cpu, wall) = (costs[2]["guest_cpu_us"].as_f64().unwrap(), costs[2]["wall_ms"].as_f64().unwrap());
    assert!(cpu > 1000.0 && cpu / 1e3 <= wall + 1.0, "{}", costs[2]);
    // The log keeps each block's cost, and `log show` sums them.
    let o = wrepl_in(dir.path(), &["log", "show", "c", "--store", store]);
    let shown = out(&o);
    let last = shown.lines().last().unwrap_or_default();
    assert!(last.starts_with("cost of 3 block(s): "), "{shown}");
    assert!(last.contains("11 call(s) (Read 1, Write 10)"), "{last}");
}
