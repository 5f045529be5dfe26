//! No silent caps: a shorthand whose tool's output stopped at a bound the
//! script did not choose fails, naming the bound, how much there was and how
//! to take it in parts; the full-name tools return the cut result with its
//! `truncated` marker. The effect that matters is checked on disk: a long
//! file read and written back is never truncated.

use serde_json::json;
use wrepl::Repl;

use crate::support::*;

async fn repl_in(dir: &std::path::Path) -> Repl {
    builder().roots([dir]).allow(["Write"]).build().await.expect("repl")
}

const CATCH: &str = "catch (e) { ({ name: e.name, kind: e.kind, message: e.message }) }";

#[tokio::test(flavor = "multi_thread")]
async fn a_long_file_read_with_cat_and_written_back_is_never_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("long.txt"), &text).unwrap();
    let mut r = repl_in(dir.path()).await;
    let res = ev(&mut r, &format!("try {{ await put('long.txt', await cat('long.txt')) }} {CATCH}")).await;
    let v = ok(&res);
    assert_eq!((v["name"].as_str(), v["kind"].as_str()), (Some("ToolError"), Some("limit")), "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(message.contains("2500 lines") && message.contains("lines 1-2000"), "{message}");
    assert!(message.contains("cat(path, {offset: 2001, limit: 2000})"), "it says how to go on: {message}");
    assert_eq!(std::fs::read_to_string(dir.path().join("long.txt")).unwrap(), text, "the file on disk is whole");
    // Parts the script chooses are returned as asked, and put together whole.
    let code = "let all = ''; for (let offset = 1; ; offset += 2000) { \
                const part = await cat('long.txt', {offset, limit: 2000}); if (!part) break; all += part } \
                await put('copy.txt', all); all.length";
    assert_eq!(ok(&ev(&mut r, code).await), json!(text.len()));
    assert_eq!(std::fs::read_to_string(dir.path().join("copy.txt")).unwrap(), text);
    // The full-name tool returns the cut result, marked.
    let v =
        ok(&ev(&mut r, "const x = await Read({file_path: 'long.txt'}); [x.truncated, x.numLines, x.totalLines]").await);
    assert_eq!(v, json!([true, 2000, 2500]));
    // A file within one read is returned whole, as before.
    std::fs::write(dir.path().join("short.txt"), "a\nb\n").unwrap();
    assert_eq!(ok(&ev(&mut r, "await cat('short.txt')").await), json!("a\nb\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn gl_over_more_files_than_one_glob_lists_says_how_many_matched() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..103 {
        std::fs::write(dir.path().join(format!("f{i:03}.txt")), "x").unwrap();
    }
    let mut r = repl_in(dir.path()).await;
    let v = ok(&ev(&mut r, &format!("try {{ await gl('*.txt') }} {CATCH}")).await);
    assert_eq!(v["kind"], "limit", "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(message.contains("103 files match") && message.contains("at most 100"), "{message}");
    let v = ok(&ev(&mut r, "const g = await Glob({pattern: '*.txt'}); [g.truncated, g.numFiles, g.totalFiles]").await);
    assert_eq!(v, json!([true, 100, 103]));
    // Within the bound, the list as before.
    assert_eq!(ok(&ev(&mut r, "(await gl('f00*.txt')).length").await), json!(10));
}

#[tokio::test(flavor = "multi_thread")]
async fn rg_whose_output_stopped_at_a_bound_fails_unless_head_limit_chose_it() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..10_500).map(|i| format!("needle {i}\n")).collect();
    std::fs::write(dir.path().join("many.txt"), text).unwrap();
    let mut r = repl_in(dir.path()).await;
    let v = ok(&ev(&mut r, &format!("try {{ await rg('needle') }} {CATCH}")).await);
    assert_eq!(v["kind"], "limit", "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(message.contains("stopped at a bound after 10000 lines") && message.contains("head_limit"), "{message}");
    assert_eq!(ok(&ev(&mut r, "(await rg('needle', {head_limit: 5})).split('\\n').length").await), json!(5));
    let v =
        ok(&ev(&mut r, "const g = await Grep({pattern: 'needle', output_mode: 'content'}); [g.truncated, g.numLines]")
            .await);
    assert_eq!(v, json!([true, 10_000]));
}
