//! Unit tests of the file tools.

use super::*;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::tools::{Media, RuleKind, Tool, ToolContext, FILE_TOOL_TIMEOUT};

struct Env {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    ctx: ToolContext,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new([dir.path()]).unwrap();
    let root = ws.default_cwd().to_path_buf();
    let ctx = ToolContext {
        cwd: root.clone(),
        workspace: Arc::new(ws),
        cancel: CancellationToken::new(),
        timeout: FILE_TOOL_TIMEOUT,
        progress: None,
        confinement: Default::default(),
        trace: None,
        tasks: Default::default(),
    };
    Env { _dir: dir, root, ctx }
}

async fn call(tool: &dyn Tool, e: &Env, input: Value) -> Result<ToolOutput, ToolError> {
    let out = tool.call(input, e.ctx.clone()).await;
    crate::tools::assert_declared_output(tool, &out);
    out
}

#[test]
fn schemas_are_closed_objects() {
    for t in [&Read as &dyn Tool, &Write, &Edit] {
        let s = t.input_schema();
        assert_eq!(s["type"], "object", "{}", t.name());
        assert_eq!(s["additionalProperties"], false);
        assert!(s["required"].is_array());
        for (_, p) in s["properties"].as_object().unwrap() {
            assert!(p["description"].is_string());
        }
    }
    assert!(Read.read_only(&json!({})) && Read.rule_kind() == RuleKind::Path);
    assert!(!Write.read_only(&json!({})) && !Edit.read_only(&json!({})));
    assert_eq!(Read.input_paths(&json!({"file_path": "a/b"})), vec!["a/b".to_string()]);
}

#[tokio::test]
async fn read_text_with_offset_and_limit() {
    let e = env();
    let body: String = (1..=10).map(|i| format!("line {i}\r\n")).collect();
    std::fs::write(e.root.join("f.txt"), &body).unwrap();

    let out = call(&Read, &e, json!({"file_path": "f.txt"})).await.unwrap();
    assert_eq!(out.value["content"], body);
    assert_eq!(out.value["totalLines"], 10);
    assert_eq!(out.value["numLines"], 10);
    assert_eq!(out.value["startLine"], 1);
    assert_eq!(out.value["truncated"], false);
    assert_eq!(out.value["file_path"], show(&e.root.join("f.txt")));
    assert!(out.text.starts_with("     1\tline 1\n     2\tline 2\n"), "{:?}", out.text);
    assert!(out.text.ends_with("    10\tline 10"));

    let out = call(&Read, &e, json!({"file_path": "f.txt", "offset": 3, "limit": 2})).await.unwrap();
    assert_eq!(out.value["content"], "line 3\r\nline 4\r\n");
    assert_eq!(out.value["startLine"], 3);
    assert_eq!(out.value["numLines"], 2);
    assert_eq!(out.value["truncated"], true);
    assert!(out.text.starts_with("     3\tline 3\n     4\tline 4\n…"), "{}", out.text);
    assert!(out.text.contains("offset=5"));

    // Past the end; no trailing newline; long lines cut in the text only.
    let out = call(&Read, &e, json!({"file_path": "f.txt", "offset": 11})).await.unwrap();
    assert_eq!(out.value["numLines"], 0);
    assert_eq!(out.value["content"], "");
    assert!(out.text.contains("past the end"));
    let long = "x".repeat(5000);
    std::fs::write(e.root.join("long.txt"), format!("a\n{long}")).unwrap();
    let out = call(&Read, &e, json!({"file_path": "long.txt"})).await.unwrap();
    assert_eq!(out.value["totalLines"], 2);
    assert_eq!(out.value["content"].as_str().unwrap().len(), 5002);
    assert!(out.text.contains("[line truncated: 5000 bytes]"));
    assert!(out.text.len() < 2100);

    std::fs::write(e.root.join("empty.txt"), "").unwrap();
    let out = call(&Read, &e, json!({"file_path": "empty.txt"})).await.unwrap();
    assert_eq!(out.value["content"], "");
    assert_eq!(out.value["totalLines"], 0);
    assert!(out.text.contains("empty"));
}

/// Files around the sniff's size: one that fits in it is read in that one
/// pass, one that does not is read on from where the sniff stopped; every
/// byte comes back either way.
#[tokio::test]
async fn read_returns_every_byte_around_the_sniff_size() {
    let e = env();
    for size in [0, 1, SNIFF_BYTES - 1, SNIFF_BYTES, SNIFF_BYTES + 1, 2 * SNIFF_BYTES + 17] {
        // Lines of 10 bytes (the last one cut short); under the 2,000-line default limit.
        let body: String =
            (0..).map(|i| format!("{i:09}\n")).flat_map(|l| l.into_bytes()).take(size).map(char::from).collect();
        std::fs::write(e.root.join("s.txt"), &body).unwrap();
        let out = call(&Read, &e, json!({"file_path": "s.txt"})).await.unwrap();
        assert_eq!(out.value["content"].as_str().unwrap().len(), size, "size {size}");
        assert_eq!(out.value["content"], body, "size {size}");
    }
}

#[tokio::test]
async fn read_refuses_dirs_binaries_and_missing_files() {
    let e = env();
    std::fs::create_dir(e.root.join("d")).unwrap();
    std::fs::write(e.root.join("bin"), b"ab\0cd").unwrap();
    let err = call(&Read, &e, json!({"file_path": "d"})).await.unwrap_err();
    assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("Glob")), "{err:?}");
    let err = call(&Read, &e, json!({"file_path": "."})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)));
    let err = call(&Read, &e, json!({"file_path": "bin"})).await.unwrap_err();
    assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("binary")), "{err:?}");
    let err = call(&Read, &e, json!({"file_path": "nope"})).await.unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)));
    let err = call(&Read, &e, json!({"file_path": "f", "offset": 0})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)));
}

#[tokio::test]
async fn read_images_and_pdfs_as_media() {
    let e = env();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRrest";
    std::fs::write(e.root.join("a.png"), png).unwrap();
    let out = call(&Read, &e, json!({"file_path": "a.png"})).await.unwrap();
    assert_eq!(out.value["type"], "image");
    assert_eq!(out.value["mime"], "image/png");
    assert_eq!(out.value["bytes"], png.len());
    let data = base64::engine::general_purpose::STANDARD.encode(png);
    assert_eq!(out.media, vec![Media::Image { mime: "image/png".into(), data }]);

    std::fs::write(e.root.join("pic.bin"), b"RIFF\x10\0\0\0WEBPVP8 ").unwrap();
    let out = call(&Read, &e, json!({"file_path": "pic.bin"})).await.unwrap();
    assert_eq!(out.value["mime"], "image/webp");

    std::fs::write(e.root.join("doc.pdf"), b"%PDF-1.7\n%\xe2\xe3\n").unwrap();
    let out = call(&Read, &e, json!({"file_path": "doc.pdf"})).await.unwrap();
    assert_eq!(out.value["type"], "pdf");
    assert!(matches!(&out.media[..], [Media::Pdf { .. }]));

    let mut big = b"\xFF\xD8\xFF\xE0".to_vec();
    big.resize(MAX_IMAGE_BYTES as usize + 1, 0);
    std::fs::write(e.root.join("big.jpg"), big).unwrap();
    let err = call(&Read, &e, json!({"file_path": "big.jpg"})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)));
}

#[tokio::test]
async fn read_large_text_needs_a_range_and_stays_bounded() {
    let e = env();
    let line = "0123456789".repeat(10) + "\n";
    let body = line.repeat((MAX_TEXT_BYTES as usize / line.len()) + 10);
    std::fs::write(e.root.join("big.log"), &body).unwrap();
    let total = body.len() / line.len();
    let err = call(&Read, &e, json!({"file_path": "big.log"})).await.unwrap_err();
    assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("offset")));
    let out = call(&Read, &e, json!({"file_path": "big.log", "offset": total - 1})).await.unwrap();
    assert_eq!(out.value["numLines"], 2);
    assert_eq!(out.value["totalLines"], total);
    assert_eq!(out.value["truncated"], false);
    let out = call(&Read, &e, json!({"file_path": "big.log", "limit": 200_000})).await.unwrap();
    assert_eq!(out.value["truncated"], true);
    assert!(out.value["content"].as_str().unwrap().len() as u64 <= MAX_TEXT_BYTES);
}

#[tokio::test]
async fn read_honours_cancellation() {
    let e = env();
    std::fs::write(e.root.join("f"), "x\n").unwrap();
    e.ctx.cancel.cancel();
    let err = call(&Read, &e, json!({"file_path": "f"})).await.unwrap_err();
    assert!(matches!(err, ToolError::Cancelled(_)));
}

#[tokio::test]
async fn write_creates_parents_and_overwrites() {
    let e = env();
    let out = call(&Write, &e, json!({"file_path": "a/b/c.txt", "content": "hi\n"})).await.unwrap();
    assert_eq!(out.value, json!({"file_path": show(&e.root.join("a/b/c.txt")), "bytes": 3, "created": true}));
    assert_eq!(std::fs::read_to_string(e.root.join("a/b/c.txt")).unwrap(), "hi\n");
    assert!(out.text.starts_with("Created "));
    let out = call(&Write, &e, json!({"file_path": "a/b/c.txt", "content": "bye"})).await.unwrap();
    assert_eq!(out.value["created"], false);
    assert_eq!(std::fs::read_to_string(e.root.join("a/b/c.txt")).unwrap(), "bye");
    let err = call(&Write, &e, json!({"file_path": "a/b", "content": "x"})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(_)), "{err:?}");
    assert!(e.root.join("a/b").is_dir());
}

#[tokio::test]
async fn edit_single_multiple_and_replace_all() {
    let e = env();
    let f = e.root.join("e.txt");
    std::fs::write(&f, "one two\nfoo\nbar foo\n\u{fffe}end").unwrap();
    let out = call(&Edit, &e, json!({"file_path": "e.txt", "old_string": "two", "new_string": "2"})).await.unwrap();
    assert_eq!(out.value, json!({"file_path": show(&f), "replacements": 1}));
    assert!(out.text.contains("     1\tone 2"), "{}", out.text);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "one 2\nfoo\nbar foo\n\u{fffe}end");

    let err =
        call(&Edit, &e, json!({"file_path": "e.txt", "old_string": "foo", "new_string": "baz"})).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidInput(m) if m.contains("2 times") && m.contains("at lines 2, 3") && m.contains("replace_all")),
        "{err:?}"
    );
    let out =
        call(&Edit, &e, json!({"file_path": "e.txt", "old_string": "foo", "new_string": "baz", "replace_all": true}))
            .await
            .unwrap();
    assert_eq!(out.value["replacements"], 2);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "one 2\nbaz\nbar baz\n\u{fffe}end");

    let err =
        call(&Edit, &e, json!({"file_path": "e.txt", "old_string": "nope", "new_string": "x"})).await.unwrap_err();
    assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("not found")));

    // A replacement longer than the excerpt: the excerpt says where it ends.
    let long: String = (1..=40).map(|i| format!("row {i}\n")).collect();
    let out =
        call(&Edit, &e, json!({"file_path": "e.txt", "old_string": "one 2\n", "new_string": long})).await.unwrap();
    assert!(out.text.contains("the replacement goes on to line 40"), "{}", out.text);
    assert!(!out.text.contains("row 30"), "{}", out.text);
    let restore = call(&Edit, &e, json!({"file_path": "e.txt", "old_string": long, "new_string": "one 2\n"}));
    restore.await.unwrap();
    for bad in [json!({"old_string": "", "new_string": "x"}), json!({"old_string": "baz", "new_string": "baz"})] {
        let mut input = bad;
        input["file_path"] = json!("e.txt");
        assert!(matches!(call(&Edit, &e, input).await, Err(ToolError::InvalidInput(_))));
    }
    let err = call(&Edit, &e, json!({"file_path": "missing", "old_string": "a", "new_string": "b"})).await.unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)));
}

#[tokio::test]
async fn writes_replace_files_whole_and_keep_their_mode() {
    use std::os::unix::fs::PermissionsExt;
    let e = env();
    // A name as long as the file system allows still gets a temporary name.
    let long = "n".repeat(255);
    call(&Write, &e, json!({"file_path": long, "content": "x"})).await.unwrap();
    assert_eq!(std::fs::read_to_string(e.root.join(&long)).unwrap(), "x");
    let f = e.root.join("m.sh");
    std::fs::write(&f, "old").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o750)).unwrap();
    call(&Write, &e, json!({"file_path": "m.sh", "content": "new"})).await.unwrap();
    call(&Edit, &e, json!({"file_path": "m.sh", "old_string": "new", "new_string": "newer"})).await.unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "newer");
    assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o750);
    // No temporary file is left behind.
    let names: Vec<String> =
        std::fs::read_dir(&e.root).unwrap().map(|d| d.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.contains(".wrepl-")), "{names:?}");
}

#[tokio::test]
async fn edit_growth_is_bounded_before_allocating() {
    // 1 MB of `a`, each replaced by 1 MB: 10^12 bytes, refused before any
    // allocation (this used to abort the process).
    let e = env();
    let f = e.root.join("big.txt");
    std::fs::write(&f, "a".repeat(1_000_000)).unwrap();
    let big = "b".repeat(1_000_000);
    let err =
        call(&Edit, &e, json!({"file_path": "big.txt", "old_string": "a", "new_string": big, "replace_all": true}))
            .await
            .unwrap_err();
    let ToolError::InvalidInput(m) = &err else { panic!("{err:?}") };
    assert!(m.contains("1000000000000 bytes") && m.contains("1000000 replacements"), "{m}");
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 1_000_000, "the file is untouched");
    // Growth up to the limit is fine.
    let out =
        call(&Edit, &e, json!({"file_path": "big.txt", "old_string": "a", "new_string": "bb", "replace_all": true}))
            .await
            .unwrap();
    assert_eq!(out.value["replacements"], 1_000_000);
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 2_000_000);
}

#[tokio::test]
async fn edit_preserves_bytes_and_handles_crlf() {
    let e = env();
    let f = e.root.join("w.txt");
    std::fs::write(&f, b"a\r\nb\r\n\xff\xfe tail\r\n").unwrap();
    let out = call(&Edit, &e, json!({"file_path": "w.txt", "old_string": "a\nb", "new_string": "A\nB"})).await.unwrap();
    assert_eq!(out.value["replacements"], 1);
    assert_eq!(std::fs::read(&f).unwrap(), b"A\r\nB\r\n\xff\xfe tail\r\n");
}

/// A root with an `out` symlink to a directory in another tempdir and
/// `secret` symlink to a file there.
fn env_with_escape_links() -> (Env, tempfile::TempDir) {
    let e = env();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), e.root.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), e.root.join("secret")).unwrap();
    (e, outside)
}

#[tokio::test]
async fn path_escapes_are_refused() {
    let (e, outside) = env_with_escape_links();
    let abs_out = show(&outside.path().join("secret.txt"));
    for p in ["../x", abs_out.as_str(), "secret", "out/secret.txt"] {
        let err = call(&Read, &e, json!({"file_path": p})).await.unwrap_err();
        assert!(matches!(err, ToolError::PathEscape(_)), "Read {p}: {err:?}");
        let err =
            call(&Edit, &e, json!({"file_path": p, "old_string": "secret", "new_string": "x"})).await.unwrap_err();
        assert!(matches!(err, ToolError::PathEscape(_)), "Edit {p}: {err:?}");
    }
    let abs_new = show(&outside.path().join("new.txt"));
    for p in ["../x", abs_new.as_str(), "secret", "out/new.txt", "out/sub/new.txt"] {
        let err = call(&Write, &e, json!({"file_path": p, "content": "pwned"})).await.unwrap_err();
        assert!(matches!(err, ToolError::PathEscape(_)), "Write {p}: {err:?}");
    }
    // Nothing changed outside the root.
    assert_eq!(std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(), "secret\n");
    let names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().map(|d| d.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("secret.txt")]);
    assert!(!e.root.parent().unwrap().join("x").exists());
}

#[tokio::test]
async fn symlinks_inside_the_root_work() {
    let e = env();
    std::fs::write(e.root.join("real.txt"), "hello\n").unwrap();
    std::os::unix::fs::symlink("real.txt", e.root.join("link.txt")).unwrap();
    let out = call(&Read, &e, json!({"file_path": "link.txt"})).await.unwrap();
    assert_eq!(out.value["content"], "hello\n");
    call(&Edit, &e, json!({"file_path": "link.txt", "old_string": "hello", "new_string": "bye"})).await.unwrap();
    assert_eq!(std::fs::read_to_string(e.root.join("real.txt")).unwrap(), "bye\n");
}
