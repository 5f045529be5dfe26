//! The `Read` tool: text files as numbered lines (streamed, bounded by
//! [`MAX_TEXT_BYTES`]), images and PDFs as media.

use std::io::{BufRead, BufReader, Read as _};
use std::num::NonZeroU64;
use std::path::Path;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::super::typed::{BlockingTool, Out};
use super::super::workspace::map_io;
use super::super::Media;
use super::super::{ToolContext, ToolError, Workspace};
use super::{
    cancelled, cut_line, read_bounded, show, strip_eol, DEFAULT_READ_LIMIT, LINE_KEEP_BYTES, MAX_IMAGE_BYTES,
    MAX_PDF_BYTES, MAX_TEXT_BYTES, SNIFF_BYTES,
};

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
        let read = read_file(&ctx.workspace, &ctx.cwd, &input.file_path, offset, limit, &ctx.cancel, None)?;
        read.ok_or_else(|| ToolError::Failed("the file could not be read".into()))
    }

    /// A file of at most [`INLINE_MAX_BYTES`] on a local file system is
    /// read at once: opening it cannot block (it is opened non-blocking,
    /// along a path that enters no other mount, and only a regular file is
    /// read), and reading it takes microseconds. Anything else, errors
    /// included, is left to [`BlockingTool::run`].
    fn run_inline(input: &ReadInput, ctx: &ToolContext) -> Option<Result<Out<ReadOutput>, ToolError>> {
        let (offset, limit) = (input.offset.map(NonZeroU64::get), input.limit.map(NonZeroU64::get));
        let inline = Some(INLINE_MAX_BYTES);
        read_file(&ctx.workspace, &ctx.cwd, &input.file_path, offset, limit, &ctx.cancel, inline).transpose()
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

/// Files up to this size are read on the calling thread (see
/// [`BlockingTool::run_inline`]).
const INLINE_MAX_BYTES: u64 = 256 << 10;

/// Read the file at `path`. With `inline` (on an async worker), only a
/// file of at most that many bytes that [`Workspace::open_local`] opens:
/// `Ok(None)` for any other (nothing was read; the caller reads it on the
/// blocking pool).
fn read_file(
    ws: &Workspace,
    cwd: &Path,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
    cancel: &CancellationToken,
    inline: Option<u64>,
) -> Result<Option<Out<ReadOutput>>, ToolError> {
    // The path as written (the pipeline checked it, and where it leads,
    // against wrepl's own files before this call ran; the opened file is
    // checked again below, by where the kernel says it is).
    let r = ws.resolve_lexical(cwd, path)?;
    if r.rel.as_os_str().is_empty() {
        return Err(super::is_a_directory(&r));
    }
    if ws.is_protected(&r.abs) {
        return Err(super::super::workspace::protected_error(&r.abs));
    }
    // Opened non-blocking, so a FIFO (or a device) cannot stall the open;
    // its type is read from the opened file, so nothing can be swapped in
    // between the check and the read; and checked where it really is (a
    // symlink swapped in since the path was checked must not lead to
    // wrepl's state or a hidden path).
    let (mut file, meta) = match inline {
        None => ws.open_checked(&r)?,
        Some(_) => match ws.open_local(&r)? {
            Some(opened) => opened,
            None => return Ok(None),
        },
    };
    if meta.is_dir() {
        return Err(super::is_a_directory(&r));
    }
    if !meta.is_file() {
        return Err(ToolError::InvalidInput(format!("{} is not a regular file", r.shown())));
    }
    let len = meta.len();
    if inline.is_some_and(|at_most| len > at_most) {
        return Ok(None);
    }
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
            Ok(Some(Out::new(value, text).with_media(vec![Media::Image { mime: mime.to_string(), data }])))
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
            Ok(Some(Out::new(value, text).with_media(vec![Media::Pdf { data }])))
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
            // A sniff that read less than it asked for met the end of the
            // file: the text is all in `head` (no read of the file again).
            let rest: Box<dyn std::io::Read> =
                if head.len() < SNIFF_BYTES { Box::new(std::io::empty()) } else { Box::new(file) };
            let reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(rest));
            let sel = select_lines(reader, start, limit, cancel).map_err(|e| match e {
                SelectError::Cancelled => cancelled(),
                SelectError::Io(e) => map_io(&r, e),
            })?;
            Ok(Some(render_text(&shown, start, sel)))
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
