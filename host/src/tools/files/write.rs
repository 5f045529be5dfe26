//! The `Write` tool, and the atomic, checked replacement of a file's content
//! ([`write_verified`]) that `Edit` uses too.

use std::path::Path;

use cap_std::fs::MetadataExt as _;
use serde::{Deserialize, Serialize};

use super::super::typed::{BlockingTool, Out};
use super::super::workspace::{map_io, Resolved};
use super::super::{ToolContext, ToolError, Workspace};
use super::{is_a_directory, resolve_file, show};

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
        Ok(m) if !m.is_file() => return Err(ToolError::InvalidInput(format!("{} is not a regular file", r.shown()))),
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
pub(super) fn write_verified(ws: &Workspace, r: &Resolved, bytes: &[u8]) -> Result<(), ToolError> {
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
            return Err(super::super::workspace::protected_error(&r.abs));
        }
    }
    let old = match dir.symlink_metadata(&name) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(map_io(r, e)),
    };
    if let Some(m) = &old {
        if ws.is_protected_id(m.dev(), m.ino()) {
            return Err(super::super::workspace::protected_error(&r.abs));
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
