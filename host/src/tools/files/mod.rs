//! File tools: [`Read`], [`Write`] and [`Edit`].
//!
//! Every access to a file goes through the cap-std `Dir` of the workspace
//! root that contains it, so `..`, absolute paths outside the roots and
//! symlinks that leave a root are refused (`ToolError::PathEscape`). The
//! blocking work runs on tokio's blocking pool and checks the call's
//! cancellation token in its loops.
//!
//! This module holds the limits and the helpers the tools share (the search
//! tools use some of them too); each tool is in its own submodule: [`read`],
//! [`write`] (with the atomic replacement `Edit` also uses) and [`edit`].

use std::borrow::Cow;
use std::io::Read as _;
use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::workspace::{map_io, Resolved};
use super::{ToolError, ToolOutput, Workspace};

mod edit;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub use edit::Edit;
pub use read::Read;
pub use write::Write;

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

pub(crate) fn is_a_directory(r: &Resolved) -> ToolError {
    ToolError::InvalidInput(format!(
        "{} is a directory, not a file; use Glob (e.g. pattern \"*\" with this path) to list its files",
        r.shown()
    ))
}

/// Metadata of an existing regular file (following symlinks inside the root).
fn file_metadata(ws: &Workspace, r: &Resolved) -> Result<cap_std::fs::Metadata, ToolError> {
    let meta = ws.dir(r.root).metadata(&r.rel).map_err(|e| map_io(r, e))?;
    if meta.is_dir() {
        return Err(is_a_directory(r));
    }
    if !meta.is_file() {
        return Err(ToolError::InvalidInput(format!("{} is not a regular file", r.shown())));
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
