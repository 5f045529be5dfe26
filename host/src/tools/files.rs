//! File tools: [`Read`], [`Write`] and [`Edit`].
//!
//! Every access to a file goes through the cap-std `Dir` of the workspace
//! root that contains it, so `..`, absolute paths outside the roots and
//! symlinks that leave a root are refused (`ToolError::PathEscape`). The
//! blocking work runs on tokio's blocking pool and checks the call's
//! cancellation token in its loops.
//!
//! (Length: the code is about 642 lines; the rest of the file is its unit
//! tests, kept next to what they test.)

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read as _};
use std::num::NonZeroU64;
use std::path::Path;

use base64::Engine as _;
use cap_std::fs::MetadataExt as _;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::typed::{BlockingTool, Out};
use super::workspace::{map_io, Resolved};
use super::Media;
use super::{ToolContext, ToolError, ToolOutput, Workspace};

/// Default number of lines `Read` returns.
pub const DEFAULT_READ_LIMIT: u64 = 2000;
/// Lines longer than this many characters are cut in `Read`'s text rendering
/// (and in `Grep`'s content output).
pub const MAX_LINE_CHARS: usize = 2000;
/// Largest text file `Read` reads without `offset`/`limit`, the most text one
/// `Read` call returns, and the largest file `Edit` edits.
pub const MAX_TEXT_BYTES: u64 = 10 * 1024 * 1024;
/// Largest image `Read` returns as media.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Largest PDF `Read` returns as media.
pub const MAX_PDF_BYTES: u64 = 20 * 1024 * 1024;

/// How many leading bytes are inspected for magic numbers and NUL bytes.
const SNIFF_BYTES: usize = 8192;
/// Bytes of a line kept for its text rendering (enough for `MAX_LINE_CHARS`
/// characters of any UTF-8).
const LINE_KEEP_BYTES: usize = MAX_LINE_CHARS * 4 + 8;

// ---------------------------------------------------------------------------
// Shared helpers (also used by the search tools).

/// Run blocking filesystem work on tokio's blocking pool.
pub(crate) async fn run_blocking<F>(cancel: &CancellationToken, f: F) -> Result<ToolOutput, ToolError>
where
    F: FnOnce() -> Result<ToolOutput, ToolError> + Send + 'static,
{
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => {
            Err(ToolError::Failed(format!("the tool panicked: {}", crate::text::panic_line(&*e.into_panic()))))
        }
        Err(e) => Err(ToolError::Failed(format!("the tool task failed: {e}"))),
    }
}

/// The error a cancelled call returns.
pub(crate) fn cancelled() -> ToolError {
    ToolError::Cancelled("the call was cancelled".into())
}

/// A path for messages and results.
pub(crate) fn show(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Cut a line longer than [`MAX_LINE_CHARS`] characters, with a marker.
/// `total_bytes` is the line's full length when only a prefix is at hand.
pub(crate) fn cut_line(line: &str, total_bytes: usize) -> Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None if total_bytes <= line.len() => Cow::Borrowed(line),
        cut => {
            let end = cut.map_or(line.len(), |(i, _)| i);
            Cow::Owned(format!("{}… [line truncated: {} bytes]", &line[..end], total_bytes.max(line.len())))
        }
    }
}

/// Strip one trailing `\n` (and a `\r` before it).
pub(crate) fn strip_eol(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// Resolve a path that must name a file (not a root itself).
fn resolve_file(ctx_ws: &Workspace, cwd: &Path, path: &str) -> Result<Resolved, ToolError> {
    let r = ctx_ws.resolve(cwd, path)?;
    if r.rel.as_os_str().is_empty() {
        return Err(is_a_directory(&r));
    }
    Ok(r)
}

fn is_a_directory(r: &Resolved) -> ToolError {
    ToolError::InvalidInput(format!(
        "{} is a directory, not a file; use Glob (e.g. pattern \"*\" with this path) to list its files",
        r.abs.display()
    ))
}

/// Metadata of an existing regular file (following symlinks inside the root).
fn file_metadata(ws: &Workspace, r: &Resolved) -> Result<cap_std::fs::Metadata, ToolError> {
    let meta = ws.dir(r.root).metadata(&r.rel).map_err(|e| map_io(r, e))?;
    if meta.is_dir() {
        return Err(is_a_directory(r));
    }
    if !meta.is_file() {
        return Err(ToolError::InvalidInput(format!("{} is not a regular file", r.abs.display())));
    }
    Ok(meta)
}

/// Read at most `max` bytes from `rd` into `buf`; true if more remained.
fn read_bounded(rd: &mut impl std::io::Read, buf: &mut Vec<u8>, max: u64) -> std::io::Result<bool> {
    rd.take(max + 1).read_to_end(buf)?;
    if buf.len() as u64 > max {
        buf.truncate(max as usize);
        return Ok(true);
    }
    Ok(false)
}

// ---------------------------------------------------------------------------
// Read

/// `Read`: read a text file (`cat -n` style text, raw lines in the value), an
/// image or a PDF (returned as media).
///
/// Text value: `{"type":"text","file_path","content","startLine","numLines",
/// "totalLines","truncated"}` where `content` is the raw text of the selected
/// lines (line endings kept) and `truncated` says that lines after the
/// returned ones exist (or the 10 MiB content bound was hit). Image value:
/// `{"type":"image","file_path","mime","bytes"}` plus `Media::Image`; PDF
/// value: `{"type":"pdf","file_path","mime","bytes"}` plus `Media::Pdf`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Read;

/// The input of [`Read`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadInput {
    /// The file to read: absolute, or relative to the working directory.
    #[schemars(length(min = 1))]
    file_path: String,
    /// 1-based number of the first line to return (default 1).
    offset: Option<NonZeroU64>,
    /// How many lines to return (default 2000).
    limit: Option<NonZeroU64>,
}

/// What [`Read`] returns, by the kind of file.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum ReadOutput {
    /// A text file (or the selected lines of one).
    Text {
        /// The file's absolute path.
        file_path: String,
        /// The selected lines as they are in the file (no line numbers), terminators included.
        content: String,
        /// The 1-based number of the first selected line.
        #[serde(rename = "startLine")]
        start_line: u64,
        /// How many lines were selected.
        #[serde(rename = "numLines")]
        num_lines: u64,
        /// Lines in the whole file.
        #[serde(rename = "totalLines")]
        total_lines: u64,
        /// Lines after the selection exist, or the content bound cut it.
        truncated: bool,
    },
    /// An image, attached as media.
    Image {
        /// The file's absolute path.
        file_path: String,
        /// Its media type (image/png, image/jpeg, image/gif or image/webp).
        mime: String,
        /// Its size in bytes.
        bytes: u64,
    },
    /// A PDF, attached as media.
    Pdf {
        /// The file's absolute path.
        file_path: String,
        /// Always application/pdf.
        mime: String,
        /// Its size in bytes.
        bytes: u64,
    },
}

impl BlockingTool for Read {
    type Input = ReadInput;
    type Output = ReadOutput;
    const NAME: &'static str = "Read";
    const DESCRIPTION: &'static str =
        "Read a file from the workspace. Text files are returned with line numbers (cat -n style); \
         by default up to 2000 lines from the start, use `offset` (1-based first line) and `limit` to \
         page through longer files. Lines longer than 2000 characters are cut in the rendering. \
         Images (PNG, JPEG, GIF, WebP up to 5 MiB) and PDFs (up to 20 MiB) are returned as media. \
         Binary files and directories are refused (use Glob to list a directory). Text files over \
         10 MiB must be read with `offset`/`limit`, or searched with Grep.";
    const READ_ONLY: bool = true;
    const PATH_FIELD: &'static str = "file_path";

    fn run(input: ReadInput, ctx: &ToolContext) -> Result<Out<ReadOutput>, ToolError> {
        let (offset, limit) = (input.offset.map(NonZeroU64::get), input.limit.map(NonZeroU64::get));
        read_file(&ctx.workspace, &ctx.cwd, &input.file_path, offset, limit, &ctx.cancel)
    }
}

/// What the leading bytes say a file is.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Image(&'static str),
    Pdf,
    Binary,
    Text,
}

fn sniff(head: &[u8]) -> Kind {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Kind::Image("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Kind::Image("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Kind::Image("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Kind::Image("image/webp")
    } else if head.starts_with(b"%PDF-") {
        Kind::Pdf
    } else if head.contains(&0) {
        Kind::Binary
    } else {
        Kind::Text
    }
}

fn read_file(
    ws: &Workspace,
    cwd: &Path,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
    cancel: &CancellationToken,
) -> Result<Out<ReadOutput>, ToolError> {
    let r = resolve_file(ws, cwd, path)?;
    // Check the type before opening: opening a FIFO would block.
    let meta = file_metadata(ws, &r)?;
    let mut file = ws.dir(r.root).open(&r.rel).map_err(|e| map_io(&r, e))?;
    // Where the opened file really is (a symlink swapped in since the path
    // was checked must not lead to wrepl's state or a hidden path).
    ws.check_opened(&file, &r, true, true)?;
    let len = meta.len();
    let shown = show(&r.abs);

    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut head).map_err(|e| map_io(&r, e))?;

    let media = |max: u64, what: &str| -> Result<Vec<u8>, ToolError> {
        if len > max {
            return Err(ToolError::InvalidInput(format!(
                "{shown} is a {what} of {len} bytes; Read returns {what}s up to {max} bytes"
            )));
        }
        Ok(Vec::new())
    };
    match sniff(&head) {
        Kind::Image(mime) => {
            let mut data = media(MAX_IMAGE_BYTES, "image")?;
            data.extend_from_slice(&head);
            let more =
                read_bounded(&mut file, &mut data, MAX_IMAGE_BYTES - head.len() as u64).map_err(|e| map_io(&r, e))?;
            if more || data.len() as u64 > MAX_IMAGE_BYTES {
                return Err(ToolError::InvalidInput(format!("{shown} grew past {MAX_IMAGE_BYTES} bytes")));
            }
            let n = data.len();
            let text = format!("[image {mime}, {n} bytes: {shown}]");
            let value = ReadOutput::Image { file_path: shown, mime: mime.to_string(), bytes: n as u64 };
            let data = base64::engine::general_purpose::STANDARD.encode(&data);
            Ok(Out::new(value, text).with_media(vec![Media::Image { mime: mime.to_string(), data }]))
        }
        Kind::Pdf => {
            let mut data = media(MAX_PDF_BYTES, "PDF")?;
            data.extend_from_slice(&head);
            let more =
                read_bounded(&mut file, &mut data, MAX_PDF_BYTES - head.len() as u64).map_err(|e| map_io(&r, e))?;
            if more {
                return Err(ToolError::InvalidInput(format!("{shown} grew past {MAX_PDF_BYTES} bytes")));
            }
            let n = data.len();
            let text = format!("[PDF, {n} bytes: {shown}]");
            let value = ReadOutput::Pdf { file_path: shown, mime: "application/pdf".into(), bytes: n as u64 };
            let data = base64::engine::general_purpose::STANDARD.encode(&data);
            Ok(Out::new(value, text).with_media(vec![Media::Pdf { data }]))
        }
        Kind::Binary => Err(ToolError::InvalidInput(format!(
            "{shown} is a binary file ({len} bytes); Read returns text, images (PNG, JPEG, GIF, WebP) and PDFs"
        ))),
        Kind::Text => {
            if len > MAX_TEXT_BYTES && offset.is_none() && limit.is_none() {
                return Err(ToolError::InvalidInput(format!(
                    "{shown} is {len} bytes, over the {MAX_TEXT_BYTES}-byte limit for reading a whole file; \
                     pass `offset` and `limit` to read part of it, or search it with Grep"
                )));
            }
            let start = offset.unwrap_or(1);
            let limit = limit.unwrap_or(DEFAULT_READ_LIMIT);
            let reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(file));
            let sel = select_lines(reader, start, limit, cancel).map_err(|e| match e {
                SelectError::Cancelled => cancelled(),
                SelectError::Io(e) => map_io(&r, e),
            })?;
            Ok(render_text(&shown, start, sel))
        }
    }
}

/// Lines selected from a text stream.
#[derive(Debug, Default)]
struct Selection {
    /// Raw bytes of the selected lines, terminators included.
    content: Vec<u8>,
    /// `cat -n` rendering of each selected line (line number, text).
    lines: Vec<(u64, String)>,
    /// Lines in the whole stream.
    total: u64,
    /// The content bound was hit inside the selection.
    capped: bool,
}

enum SelectError {
    Cancelled,
    Io(std::io::Error),
}

/// Stream `rd`, keeping lines `start..start+limit` (1-based) and counting all
/// lines. Memory stays bounded by [`MAX_TEXT_BYTES`] of content.
fn select_lines(
    mut rd: impl BufRead,
    start: u64,
    limit: u64,
    cancel: &CancellationToken,
) -> Result<Selection, SelectError> {
    let end = start.saturating_add(limit - 1);
    let mut sel = Selection::default();
    let mut in_line = false;
    let mut keep: Vec<u8> = Vec::new();
    let mut line_bytes = 0usize;
    let mut selecting = true;
    // The last two bytes of the current line, to size its terminator.
    let mut tail = (0u8, 0u8);
    let finish = |sel: &mut Selection, keep: &[u8], line_bytes: usize, tail: (u8, u8)| {
        let eol = match tail {
            (b'\r', b'\n') => 2,
            (_, b'\n') => 1,
            _ => 0,
        };
        let text = String::from_utf8_lossy(strip_eol(keep));
        let text = cut_line(&text, line_bytes.saturating_sub(eol)).into_owned();
        sel.lines.push((sel.total, text));
    };
    loop {
        if cancel.is_cancelled() {
            return Err(SelectError::Cancelled);
        }
        let chunk = match rd.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SelectError::Io(e)),
        };
        if chunk.is_empty() {
            break;
        }
        let (piece_len, ends_line) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let piece = &chunk[..piece_len];
        if !in_line {
            in_line = true;
            sel.total += 1;
            keep.clear();
            line_bytes = 0;
            tail = (0, 0);
            if selecting && sel.total >= start && sel.total <= end && sel.content.len() as u64 >= MAX_TEXT_BYTES {
                sel.capped = true;
                selecting = false;
            }
        }
        let selected = selecting && sel.total >= start && sel.total <= end;
        if selected {
            let room = (MAX_TEXT_BYTES as usize).saturating_sub(sel.content.len());
            if piece.len() > room {
                sel.capped = true;
            }
            sel.content.extend_from_slice(&piece[..piece.len().min(room)]);
            let krem = LINE_KEEP_BYTES.saturating_sub(keep.len());
            keep.extend_from_slice(&piece[..piece.len().min(krem)]);
            line_bytes += piece.len();
            tail = match piece {
                [.., a, b] => (*a, *b),
                [b] => (tail.1, *b),
                [] => tail,
            };
        }
        rd.consume(piece_len);
        if ends_line {
            in_line = false;
            if selected {
                finish(&mut sel, &keep, line_bytes, tail);
                if sel.capped {
                    selecting = false;
                }
            }
        }
    }
    if in_line && selecting && sel.total >= start && sel.total <= end {
        finish(&mut sel, &keep, line_bytes, tail);
    }
    Ok(sel)
}

fn render_text(shown: &str, start: u64, sel: Selection) -> Out<ReadOutput> {
    let num = sel.lines.len() as u64;
    let last = if num == 0 { start.saturating_sub(1) } else { start + num - 1 };
    let truncated = sel.capped || last < sel.total;
    let value = ReadOutput::Text {
        file_path: shown.to_string(),
        content: String::from_utf8_lossy(&sel.content).into_owned(),
        start_line: start,
        num_lines: num,
        total_lines: sel.total,
        truncated,
    };
    let text = if sel.total == 0 {
        format!("({shown} is empty)")
    } else if num == 0 {
        format!("({shown} has {} lines; offset {start} is past the end)", sel.total)
    } else {
        let mut t = String::new();
        for (n, line) in &sel.lines {
            if !t.is_empty() {
                t.push('\n');
            }
            t.push_str(&format!("{n:>6}\t{line}"));
        }
        if sel.capped {
            t.push_str(&format!(
                "\n… (output stopped at {MAX_TEXT_BYTES} bytes in line {last}; {} lines in total; continue with offset={})",
                sel.total,
                last + 1
            ));
        } else if truncated {
            t.push_str(&format!(
                "\n… (showing lines {start}-{last} of {}; continue with offset={})",
                sel.total,
                last + 1
            ));
        }
        t
    };
    Out::new(value, text)
}

// ---------------------------------------------------------------------------
// Write

/// `Write`: create or overwrite a file (creating missing parent directories
/// inside the root). Value: `{"file_path","bytes","created"}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Write;

/// The input of [`Write`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteInput {
    /// The file to write: absolute, or relative to the working directory.
    #[schemars(length(min = 1))]
    file_path: String,
    /// The complete new content of the file.
    content: String,
}

/// What [`Write`] returns.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct WriteOutput {
    /// The file's absolute path.
    file_path: String,
    /// Bytes written.
    bytes: u64,
    /// The file did not exist before.
    created: bool,
}

impl BlockingTool for Write {
    type Input = WriteInput;
    type Output = WriteOutput;
    const NAME: &'static str = "Write";
    const DESCRIPTION: &'static str =
        "Write a file in the workspace, replacing its whole content (or creating it, along with any \
         missing parent directories). Prefer Edit for changing part of an existing file.";
    const READ_ONLY: bool = false;
    const PATH_FIELD: &'static str = "file_path";

    fn run(input: WriteInput, ctx: &ToolContext) -> Result<Out<WriteOutput>, ToolError> {
        write_file(&ctx.workspace, &ctx.cwd, &input.file_path, &input.content)
    }
}

fn write_file(ws: &Workspace, cwd: &Path, path: &str, content: &str) -> Result<Out<WriteOutput>, ToolError> {
    let r = resolve_file(ws, cwd, path)?;
    let dir = ws.dir(r.root);
    let created = match dir.metadata(&r.rel) {
        Ok(m) if m.is_dir() => return Err(is_a_directory(&r)),
        Ok(m) if !m.is_file() => {
            return Err(ToolError::InvalidInput(format!("{} is not a regular file", r.abs.display())))
        }
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(map_io(&r, e)),
    };
    if let Some(parent) = r.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        dir.create_dir_all(parent).map_err(|e| {
            let pr = Resolved {
                root: r.root,
                rel: parent.to_path_buf(),
                abs: r.abs.parent().unwrap_or(&r.abs).to_path_buf(),
            };
            map_io(&pr, e)
        })?;
    }
    write_verified(ws, &r, content.as_bytes())?;
    let shown = show(&r.abs);
    let n = content.len();
    let text = if created { format!("Created {shown} ({n} bytes)") } else { format!("Overwrote {shown} ({n} bytes)") };
    Ok(Out::new(WriteOutput { file_path: shown, bytes: n as u64, created }, text))
}

/// Replace the content of the file at `r` (creating it) atomically: the new
/// bytes go to a temporary file in the same directory, which is flushed to
/// disk and renamed over the target, so a crash (or a SIGKILL) at any point
/// leaves either the old content or the new one, never a truncated file. The
/// replaced file keeps its permission bits.
///
/// Where it happens is checked on the opened directory (a symlink swapped in
/// after the path was checked cannot redirect the write into wrepl's state),
/// and the entry replaced must not be protected by identity either. A
/// symlink inside the root is followed to the file it names, as a write
/// through it would; renaming never writes through a link swapped in later.
fn write_verified(ws: &Workspace, r: &Resolved, bytes: &[u8]) -> Result<(), ToolError> {
    use std::io::Write as _;
    let root = ws.dir(r.root);
    // Where the file really is (cap-std resolves symlinks inside the root
    // only); a file that does not exist yet is where the path says.
    let real = match root.canonicalize(&r.rel) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => r.rel.clone(),
        Err(e) => return Err(map_io(r, e)),
    };
    let name = real.file_name().ok_or_else(|| is_a_directory(r))?.to_os_string();
    let parent = real.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = root.open_dir(parent).map_err(|e| map_io(r, e))?;
    if let Some(dir_real) = ws.check_opened_dir(&dir, r)? {
        if ws.is_protected(&dir_real.join(&name)) {
            return Err(super::workspace::protected_error(&r.abs));
        }
    }
    let old = match dir.symlink_metadata(&name) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(map_io(r, e)),
    };
    if let Some(m) = &old {
        if ws.is_protected_id(m.dev(), m.ino()) {
            return Err(super::workspace::protected_error(&r.abs));
        }
        if m.is_dir() {
            return Err(is_a_directory(r));
        }
    }
    // At most 100 bytes of the name, so the temporary name stays within
    // NAME_MAX (255) whatever the file is called.
    let shown_name = name.to_string_lossy();
    let tmp = format!(".{}.wrepl-{}.tmp", crate::text::prefix(&shown_name, 100), crate::ids::short_id());
    let mut opts = cap_std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    let mut file = dir.open_with(&tmp, &opts).map_err(|e| map_io(r, e))?;
    let written = (|| {
        file.write_all(bytes)?;
        if let Some(m) = old.as_ref().filter(|m| m.is_file()) {
            file.set_permissions(m.permissions())?;
        }
        file.sync_all()?;
        dir.rename(&tmp, &dir, &name)
    })();
    if let Err(e) = written {
        let _ = dir.remove_file(&tmp);
        return Err(map_io(r, e));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Edit

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
            break;
        }
        let text = String::from_utf8_lossy(strip_eol(line));
        s.push_str(&format!("{n:>6}\t{}\n", cut_line(&text, strip_eol(line).len())));
    }
    s.truncate(s.trim_end_matches('\n').len());
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use serde_json::{json, Value};

    use crate::tools::{RuleKind, Tool, FILE_TOOL_TIMEOUT};

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
        let out = call(
            &Edit,
            &e,
            json!({"file_path": "e.txt", "old_string": "foo", "new_string": "baz", "replace_all": true}),
        )
        .await
        .unwrap();
        assert_eq!(out.value["replacements"], 2);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "one 2\nbaz\nbar baz\n\u{fffe}end");

        let err =
            call(&Edit, &e, json!({"file_path": "e.txt", "old_string": "nope", "new_string": "x"})).await.unwrap_err();
        assert!(matches!(&err, ToolError::InvalidInput(m) if m.contains("not found")));
        for bad in [json!({"old_string": "", "new_string": "x"}), json!({"old_string": "baz", "new_string": "baz"})] {
            let mut input = bad;
            input["file_path"] = json!("e.txt");
            assert!(matches!(call(&Edit, &e, input).await, Err(ToolError::InvalidInput(_))));
        }
        let err =
            call(&Edit, &e, json!({"file_path": "missing", "old_string": "a", "new_string": "b"})).await.unwrap_err();
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
        let names: Vec<String> = std::fs::read_dir(&e.root)
            .unwrap()
            .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
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
        let out = call(
            &Edit,
            &e,
            json!({"file_path": "big.txt", "old_string": "a", "new_string": "bb", "replace_all": true}),
        )
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
        let out =
            call(&Edit, &e, json!({"file_path": "w.txt", "old_string": "a\nb", "new_string": "A\nB"})).await.unwrap();
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
}
