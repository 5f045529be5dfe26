//! The `Edit` tool: exact string replacement that keeps every other byte of
//! the file, with a `cat -n` excerpt of the result.

use std::borrow::Cow;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::super::typed::{BlockingTool, Out};
use super::super::workspace::map_io;
use super::super::{ToolContext, ToolError, Workspace};
use super::write::write_verified;
use super::{cut_line, file_metadata, read_bounded, resolve_file, show, strip_eol, MAX_TEXT_BYTES};

/// `Edit`: replace an exact string in a file. Value:
/// `{"file_path","replacements"}`. Everything outside the replaced ranges is
/// preserved byte for byte.
#[derive(Debug, Clone, Copy, Default)]
pub struct Edit;

/// The input of [`Edit`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditInput {
    /// The file to edit: absolute, or relative to the working directory.
    #[schemars(length(min = 1))]
    file_path: String,
    /// The exact text to replace.
    #[schemars(length(min = 1))]
    old_string: String,
    /// The replacement text (must differ from old_string).
    new_string: String,
    /// Replace every occurrence of old_string (default false: it must occur exactly once).
    replace_all: Option<bool>,
}

/// What [`Edit`] returns.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct EditOutput {
    /// The file's absolute path.
    file_path: String,
    /// How many occurrences were replaced.
    replacements: u64,
}

impl BlockingTool for Edit {
    type Input = EditInput;
    type Output = EditOutput;
    const NAME: &'static str = "Edit";
    const DESCRIPTION: &'static str =
        "Replace an exact string in a file. `old_string` must match the file exactly (including \
         whitespace and indentation) and be unique in the file unless `replace_all` is true; add \
         surrounding lines to make it unique. Use Write to create a new file.";
    const READ_ONLY: bool = false;
    const PATH_FIELD: &'static str = "file_path";

    fn run(input: EditInput, ctx: &ToolContext) -> Result<Out<EditOutput>, ToolError> {
        let EditInput { file_path, old_string: old, new_string: new, replace_all } = input;
        if old.is_empty() {
            return Err(ToolError::InvalidInput(
                "old_string is empty; use Write to create or overwrite a whole file".into(),
            ));
        }
        if old == new {
            return Err(ToolError::InvalidInput(
                "old_string and new_string are identical; there is nothing to change".into(),
            ));
        }
        edit_file(&ctx.workspace, &ctx.cwd, &file_path, &old, &new, replace_all.unwrap_or(false))
    }
}

/// Start offsets of the non-overlapping occurrences of `needle` in `hay`.
fn find_all(hay: &[u8], needle: &str) -> Vec<usize> {
    if let Ok(h) = std::str::from_utf8(hay) {
        return h.match_indices(needle).map(|(i, _)| i).collect();
    }
    let n = needle.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + n.len() <= hay.len() {
        if &hay[i..i + n.len()] == n {
            out.push(i);
            i += n.len();
        } else {
            i += 1;
        }
    }
    out
}

fn edit_file(
    ws: &Workspace,
    cwd: &Path,
    path: &str,
    old: &str,
    new: &str,
    all: bool,
) -> Result<Out<EditOutput>, ToolError> {
    let r = resolve_file(ws, cwd, path)?;
    let meta = file_metadata(ws, &r)?;
    let shown = show(&r.abs);
    if meta.len() > MAX_TEXT_BYTES {
        return Err(ToolError::InvalidInput(format!(
            "{shown} is {} bytes; Edit handles files up to {MAX_TEXT_BYTES} bytes",
            meta.len()
        )));
    }
    let dir = ws.dir(r.root);
    let mut file = dir.open(&r.rel).map_err(|e| map_io(&r, e))?;
    ws.check_opened(&file, &r, false, true)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    if read_bounded(&mut file, &mut bytes, MAX_TEXT_BYTES).map_err(|e| map_io(&r, e))? {
        return Err(ToolError::InvalidInput(format!("{shown} grew past {MAX_TEXT_BYTES} bytes")));
    }
    drop(file);

    let (mut old, mut new) = (Cow::Borrowed(old), Cow::Borrowed(new));
    let mut hits = find_all(&bytes, &old);
    // The caller may have sent `\n` line endings for a CRLF file.
    if hits.is_empty() && old.contains('\n') && !old.contains('\r') && bytes.windows(2).any(|w| w == b"\r\n") {
        let crlf = old.replace('\n', "\r\n");
        let h = find_all(&bytes, &crlf);
        if !h.is_empty() {
            hits = h;
            old = Cow::Owned(crlf);
            if !new.contains('\r') {
                new = Cow::Owned(new.replace('\n', "\r\n"));
            }
        }
    }
    match hits.len() {
        0 => {
            return Err(ToolError::InvalidInput(format!(
                "old_string was not found in {shown}; it must match the file exactly, including whitespace and indentation (Read the file to check)"
            )))
        }
        1 => {}
        n if !all => {
            // Where each one starts (1-based lines; the first 50), so the
            // caller can pick the context that makes its choice unique.
            let mut lines = Vec::new();
            let (mut line, mut from) = (1usize, 0usize);
            for &at in hits.iter().take(50) {
                line += bytes[from..at].iter().filter(|&&b| b == b'\n').count();
                from = at;
                lines.push(line.to_string());
            }
            let more = if n > 50 { format!(" (and {} more)", n - 50) } else { String::new() };
            return Err(ToolError::InvalidInput(format!(
                "old_string occurs {n} times in {shown}, at lines {}{more}; add surrounding context to make it unique, or set replace_all to true to replace every occurrence",
                lines.join(", ")
            )));
        }
        _ => {}
    }
    // Bound the result before allocating it: hits × (new − old) can be huge.
    // The hits do not overlap, so `kept` cannot underflow.
    let kept = bytes.len() - hits.len() * old.len();
    let size = hits.len() as u128 * new.len() as u128 + kept as u128;
    if size > u128::from(MAX_TEXT_BYTES) {
        let n = hits.len();
        return Err(ToolError::InvalidInput(format!(
            "the edit would make {shown} {size} bytes ({n} replacement{} of {} bytes by {} bytes); Edit writes files up to {MAX_TEXT_BYTES} bytes",
            if n == 1 { "" } else { "s" },
            old.len(),
            new.len()
        )));
    }
    let mut out = Vec::with_capacity(size as usize);
    let mut last = 0;
    for &h in &hits {
        out.extend_from_slice(&bytes[last..h]);
        out.extend_from_slice(new.as_bytes());
        last = h + old.len();
    }
    out.extend_from_slice(&bytes[last..]);
    write_verified(ws, &r, &out)?;

    let n = hits.len();
    let mut text = format!("Edited {shown}: {n} replacement{}", if n == 1 { "" } else { "s" });
    text.push_str(&snippet(&out, hits[0], new.len()));
    Ok(Out::new(EditOutput { file_path: shown, replacements: n as u64 }, text))
}

/// A `cat -n` excerpt around the first replacement (which starts at byte
/// `at` of the new content and is `len` bytes long).
fn snippet(content: &[u8], at: usize, len: usize) -> String {
    const AROUND: u64 = 3;
    const MAX: u64 = 20;
    let first = content[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let end = (at + len).min(content.len());
    let span = content[at..end].iter().filter(|&&b| b == b'\n').count() as u64;
    let from = first.saturating_sub(AROUND).max(1);
    let to = (first + span + AROUND).min(from + MAX - 1);
    let mut s = String::from("\n");
    for (i, line) in content.split(|&b| b == b'\n').enumerate() {
        let n = i as u64 + 1;
        if n < from {
            continue;
        }
        if n > to {
            // The excerpt stops; say how far the replacement goes on.
            // The replacement's last line (a final newline ends it).
            let last = first + span - u64::from(span > 0 && content[..end].ends_with(b"\n"));
            if last > to {
                s.push_str(&format!("     …\t(the replacement goes on to line {last}; Read shows the rest)\n"));
            }
            break;
        }
        let text = String::from_utf8_lossy(strip_eol(line));
        s.push_str(&format!("{n:>6}\t{}\n", cut_line(&text, strip_eol(line).len())));
    }
    s.truncate(s.trim_end_matches('\n').len());
    s
}
