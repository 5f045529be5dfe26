//! `Glob`: file paths matching a glob pattern, newest first, through the
//! workspace walker (ignore files honoured, hidden entries only when named).

use super::*;

/// `Glob`: find files whose path (relative to the search directory) matches a
/// glob pattern, newest first.
///
/// Matching: `*`, `?` and `[...]` never cross `/`, `**` matches any number of
/// directories and `{a,b}` alternates; so `*.rs` matches only files directly
/// in the search directory and `**/*.rs` matches at any depth. Leading literal
/// directories of the pattern (`src/**/*.ts`, or an absolute pattern inside a
/// root) narrow the search directory. Hidden entries are included only when
/// the pattern names one (`.github/**`, `**/.env`). Only regular files are
/// listed (no directories, no symlinks).
///
/// Value: `{"filenames": [absolute paths], "numFiles", "truncated", "totalFiles"}`, at most
/// [`GLOB_MAX_RESULTS`] files, most recently modified first.
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob;

/// The input of [`Glob`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobInput {
    /// Glob pattern matched against paths relative to the search directory, e.g. "**/*.js" or "src/**/*.ts".
    #[schemars(length(min = 1))]
    pattern: String,
    /// Directory to search in: absolute, or relative to the working directory (default: the working directory).
    path: Option<String>,
}

/// What [`Glob`] returns.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct GlobOutput {
    /// Absolute paths of the matching files, most recently modified first.
    filenames: Vec<String>,
    /// How many paths `filenames` holds.
    #[serde(rename = "numFiles")]
    num_files: u64,
    /// More files matched than are listed.
    truncated: bool,
    /// How many files matched in all.
    #[serde(rename = "totalFiles")]
    total_files: u64,
}

impl BlockingTool for Glob {
    type Input = GlobInput;
    type Output = GlobOutput;
    const NAME: &'static str = "Glob";
    const DESCRIPTION: &'static str =
        "Find files by name with a glob pattern, e.g. \"**/*.rs\" (any depth), \"*.toml\" (directly in the \
         search directory) or \"src/**/*.{ts,tsx}\". `*` does not cross `/`; `**` matches any number of \
         directories. Returns absolute paths of regular files, most recently modified first, at most 100. \
         Respects .gitignore/.ignore; hidden files are skipped unless the pattern names them.";
    const READ_ONLY: bool = true;
    const PATH_FIELD: &'static str = "path";
    const ALSO_CHECKED_AS: Option<&'static str> = Some("Read");

    fn run(input: GlobInput, ctx: &ToolContext) -> Result<Out<GlobOutput>, ToolError> {
        glob(&ctx.workspace, &ctx.cwd, &input.pattern, input.path.as_deref(), &ctx.cancel)
    }
}

/// Split a glob pattern into the directory to search and the pattern to match
/// below it. `None` when the literal directory does not exist.
fn split_glob(
    ws: &Workspace,
    cwd: &Path,
    search: &Resolved,
    pattern: &str,
) -> Result<Option<(Resolved, String)>, ToolError> {
    let absolute = pattern.starts_with('/');
    let mut rest = pattern.trim_start_matches('/');
    while let Some(r) = rest.strip_prefix("./") {
        rest = r.trim_start_matches('/');
    }
    let rest = rest.trim_end_matches('/');
    let comps: Vec<&str> = rest.split('/').collect();
    let literal = comps[..comps.len().saturating_sub(1)].iter().take_while(|c| is_literal(c)).count();
    let prefix = comps[..literal].join("/");
    let glob = comps[literal..].join("/");
    let base = if absolute {
        search_dir(ws, cwd, &format!("/{prefix}"))?
    } else if prefix.is_empty() {
        Some(search.clone())
    } else {
        match ws.resolve_dir(&search.abs, &prefix) {
            Ok(r) => Some(r),
            Err(ToolError::NotFound(_) | ToolError::InvalidInput(_)) => None,
            Err(e) => return Err(e),
        }
    };
    Ok(base.map(|b| (b, glob)))
}

fn glob(
    ws: &Workspace,
    cwd: &Path,
    pattern: &str,
    path: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Out<GlobOutput>, ToolError> {
    check_glob(pattern)?;
    let search = ws.resolve_dir(cwd, path.unwrap_or("."))?;
    let mut heap: BinaryHeap<Reverse<(SystemTime, Reverse<PathBuf>)>> = BinaryHeap::new();
    let mut total = 0usize;
    if let Some((base, glob)) = split_glob(ws, cwd, &search, pattern)?.filter(|(b, _)| !base_hidden(ws, b)) {
        let matcher = globset::GlobBuilder::new(&glob)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| ToolError::InvalidInput(format!("invalid glob pattern {pattern:?}: {e}")))?
            .compile_matcher();
        let opts = WalkOpts { hidden: mentions_hidden(&glob), overrides: None, types: None };
        // The newest files, with ties by path, whatever order the walk's
        // threads find them in.
        // A pattern without `**` matches no path of more components than it
        // has separators plus one (`*` never matches `/`; an alternative of
        // `{…}` uses some of the pattern's separators): the walk stops at
        // that depth, on this thread (starting helper threads costs more
        // than such a walk).
        let mut walk = walker(ws, &base, opts);
        let recursive = glob.contains("**");
        let helpers = if recursive {
            grep::HelperThreads::take()
        } else {
            walk.max_depth(Some(glob.matches('/').count() + 1));
            grep::HelperThreads { count: 0 }
        };
        let found = std::sync::Mutex::new((heap, total));
        for_each_file(walk, helpers.count, cancel, || {
            let (found, matcher, base) = (&found, &matcher, &base);
            move |ent: ignore::DirEntry| {
                let Ok(rel) = ent.path().strip_prefix(&base.abs) else { return };
                if !matcher.is_match(rel) {
                    return;
                }
                let mtime = ent.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
                let mut f = found.lock().unwrap_or_else(|p| p.into_inner());
                let (heap, total) = &mut *f;
                *total += 1;
                heap.push(Reverse((mtime, Reverse(ent.into_path()))));
                if heap.len() > GLOB_MAX_RESULTS {
                    heap.pop();
                }
            }
        });
        (heap, total) = found.into_inner().unwrap_or_else(|p| p.into_inner());
        drop(helpers);
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
    }
    // `into_sorted_vec` of `Reverse` keys is best (newest, then by path) first.
    let files: Vec<String> = heap.into_sorted_vec().into_iter().map(|Reverse((_, Reverse(p)))| show(&p)).collect();
    let truncated = total > files.len();
    let mut text = if files.is_empty() { "No files found".to_string() } else { files.join("\n") };
    if truncated {
        text.push_str(&format!(
            "\n(Showing the {} most recently modified of {total} matching files; use a more specific pattern or path.)",
            files.len()
        ));
    }
    let num_files = files.len() as u64;
    Ok(Out::new(GlobOutput { filenames: files, num_files, truncated, total_files: total as u64 }, text))
}

// ---------------------------------------------------------------------------
// Grep
