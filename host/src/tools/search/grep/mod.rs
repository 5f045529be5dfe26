//! `Grep`: ripgrep's searcher over the workspace walker — content, files
//! with matches or counts, with context, caps and cancellation.
//!
//! This module holds the tool's surface: its input, output and request.
//! The work is in the submodules: [`run`] drives one call (the walk, the
//! helper threads, the output), [`file_search`] searches one file, [`merge`]
//! puts the files' results together in walk order, and [`budget`] holds what
//! searches share (helper threads, memory of lines not yet merged).

use super::*;

mod budget;
mod file_search;
mod merge;
mod run;
#[cfg(test)]
pub(super) mod stall;

pub(super) use budget::HelperThreads;
#[cfg(test)]
pub(super) use budget::{HoldBudget, GREP_MAX_AHEAD};

/// What `Grep` returns (its `output_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
pub(super) enum Mode {
    // Matching lines.
    #[serde(rename = "content")]
    Content,
    // Paths of matching files.
    #[default]
    #[serde(rename = "files_with_matches")]
    Files,
    // Matching lines per file.
    #[serde(rename = "count")]
    Count,
    // Matching lines as records.
    #[serde(rename = "matches")]
    Matches,
}

/// One matching line, in `matches` mode.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct GrepMatch {
    /// The file's absolute path.
    file: String,
    /// The 1-based line number.
    line: u64,
    /// The line, without its terminator (cut past 2000 characters).
    text: String,
}

/// Matching lines of one file, in `count` mode.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct FileCount {
    /// The file's absolute path.
    file: String,
    /// How many of its lines match.
    count: u64,
}

/// What [`Grep`] returns, by `output_mode`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(tag = "mode")]
pub(crate) enum GrepOutput {
    /// Matching lines as text.
    #[serde(rename = "content")]
    Content {
        /// `path:line:text` for matches, `path-line-text` for context lines, `--` between groups.
        content: String,
        /// Lines in `content`.
        #[serde(rename = "numLines")]
        num_lines: u64,
        /// The output stopped at a bound (head_limit or the size bounds).
        truncated: bool,
        /// Files left out because they could not be read or passed the
        /// per-file size bound (absent when none).
        #[serde(rename = "skippedFiles", default, skip_serializing_if = "is_zero")]
        skipped_files: u64,
    },
    /// Paths of matching files.
    #[serde(rename = "files_with_matches")]
    Files {
        /// Absolute paths, most recently modified first.
        filenames: Vec<String>,
        /// How many paths `filenames` holds.
        #[serde(rename = "numFiles")]
        num_files: u64,
        /// More files matched than are listed.
        truncated: bool,
        /// Files left out because they could not be read or passed the
        /// per-file size bound (absent when none).
        #[serde(rename = "skippedFiles", default, skip_serializing_if = "is_zero")]
        skipped_files: u64,
    },
    /// Matching lines per file.
    #[serde(rename = "count")]
    Count {
        /// One entry per matching file.
        counts: Vec<FileCount>,
        /// Matching lines in all listed files.
        #[serde(rename = "numMatches")]
        num_matches: u64,
        /// How many files `counts` holds.
        #[serde(rename = "numFiles")]
        num_files: u64,
        /// More files matched than are listed.
        truncated: bool,
        /// Files left out because they could not be read or passed the
        /// per-file size bound (absent when none).
        #[serde(rename = "skippedFiles", default, skip_serializing_if = "is_zero")]
        skipped_files: u64,
    },
    /// Matching lines as records.
    #[serde(rename = "matches")]
    Matches {
        /// One record per matching line.
        matches: Vec<GrepMatch>,
        /// How many records `matches` holds.
        #[serde(rename = "numMatches")]
        num_matches: u64,
        /// The output stopped at a bound (head_limit or the size bounds).
        truncated: bool,
        /// Files left out because they could not be read or passed the
        /// per-file size bound (absent when none).
        #[serde(rename = "skippedFiles", default, skip_serializing_if = "is_zero")]
        skipped_files: u64,
    },
}

/// `Grep`: search file contents with a regular expression (Rust regex syntax,
/// as ripgrep).
///
/// Values by `output_mode`:
/// - `content`: `{"mode":"content","content": "<lines>","numLines","truncated"}`
///   where lines are `path:line:text` for matches and `path-line-text` for
///   context lines (`path:text`/`path-text` with `"-n": false`) and `--`
///   separates non-adjacent groups when context is requested;
/// - `files_with_matches` (default): `{"mode":"files_with_matches",
///   "filenames": [...], "numFiles","truncated"}`, most recently modified first;
/// - `count`: `{"mode":"count","counts":[{"file","count"}],"numMatches",
///   "numFiles","truncated"}` counting matching lines per file;
/// - `matches`: `{"mode":"matches","matches":[{"file","line","text"}],
///   "numMatches","truncated"}`, one record per matching line (no context).
///
/// Paths are absolute. `head_limit` keeps the first N lines/entries (0 means
/// no limit); output is also bounded by [`GREP_MAX_LINES`], [`GREP_MAX_BYTES`]
/// and [`GREP_MAX_ENTRIES`], with `truncated` set when anything was left out.
/// Binary files (NUL bytes) are skipped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

/// The input of [`Grep`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepInput {
    /// The regular expression to search for.
    #[schemars(length(min = 1))]
    pattern: String,
    /// File or directory to search: absolute, or relative to the working directory (default: the working directory).
    path: Option<String>,
    /// Only search files matching this glob (ripgrep --glob semantics: "*.js" matches at any depth; several globs may be separated by spaces or commas; a leading ! excludes).
    glob: Option<String>,
    /// "files_with_matches" (default): paths of matching files; "content": matching lines; "count": matching lines per file; "matches": matching lines as {file, line, text} records.
    output_mode: Option<Mode>,
    /// Case-insensitive search.
    #[serde(rename = "-i")]
    case_insensitive: Option<bool>,
    /// Show line numbers in content mode (default true).
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    /// Lines of context after each match (content mode).
    #[serde(rename = "-A")]
    after: Option<u64>,
    /// Lines of context before each match (content mode).
    #[serde(rename = "-B")]
    before: Option<u64>,
    /// Lines of context before and after each match (content mode); -A/-B take precedence.
    #[serde(rename = "-C")]
    context: Option<u64>,
    /// Return only the first N lines (content) or entries (other modes); 0 means no limit.
    head_limit: Option<u64>,
    /// Let the pattern match across lines (`.` matches newlines).
    multiline: Option<bool>,
    /// Only search files of this ripgrep type (e.g. rust, js, ts, py, go, java, c, cpp, md, json, yaml).
    #[serde(rename = "type")]
    file_type: Option<String>,
}

impl BlockingTool for Grep {
    type Input = GrepInput;
    type Output = GrepOutput;
    const NAME: &'static str = "Grep";
    const DESCRIPTION: &'static str =
        "Search file contents with a regular expression (ripgrep / Rust regex syntax, e.g. \"fn\\s+main\", \
         \"log.*Error\"; escape literal braces and dots). `path` is a directory (default: the working \
         directory) or a single file; filter files with `glob` (e.g. \"*.rs\", \"*.{ts,tsx}\") or `type` \
         (ripgrep type names: rust, js, ts, py, go, ...). output_mode \"files_with_matches\" (default) lists \
         matching files newest first, \"content\" shows matching lines as path:line:text with optional \
         context (-A/-B/-C), \"count\" counts matching lines per file, \"matches\" returns matching lines \
         as {file, line, text} records. Set multiline to let patterns span \
         lines (`.` then matches newlines too). Respects .gitignore; skips hidden and binary files.";
    const READ_ONLY: bool = true;
    const PATH_FIELD: &'static str = "path";
    const ALSO_CHECKED_AS: Option<&'static str> = Some("Read");

    fn run(input: GrepInput, ctx: &ToolContext) -> Result<Out<GrepOutput>, ToolError> {
        run::grep(&ctx.workspace, &ctx.cwd, GrepRequest::new(input)?, &ctx.cancel)
    }
}

/// A `Grep` input made ready to search.
struct GrepRequest {
    matcher: RegexMatcher,
    path: Option<String>,
    glob: Option<String>,
    file_type: Option<String>,
    mode: Mode,
    line_numbers: bool,
    before: usize,
    after: usize,
    limit: Option<usize>,
    multiline: bool,
}

impl GrepRequest {
    fn new(input: GrepInput) -> Result<Self, ToolError> {
        let pattern = &input.pattern;
        let mode = input.output_mode.unwrap_or_default();
        let multiline = input.multiline.unwrap_or(false);
        let mut mb = RegexMatcherBuilder::new();
        mb.case_insensitive(input.case_insensitive.unwrap_or(false)).multi_line(true);
        if multiline {
            mb.dot_matches_new_line(true);
        } else {
            mb.line_terminator(Some(b'\n'));
        }
        let matcher = mb.build(pattern).map_err(|e| {
            let hint = if !multiline && e.to_string().contains("\\n") {
                " (set multiline to true to match across lines)"
            } else {
                ""
            };
            ToolError::InvalidInput(format!("invalid regex {pattern:?}: {e}{hint}"))
        })?;
        let usize_of = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let c = usize_of(input.context).unwrap_or(0);
        let (before, after) = if mode == Mode::Content {
            (usize_of(input.before).unwrap_or(c), usize_of(input.after).unwrap_or(c))
        } else {
            (0, 0)
        };
        Ok(Self {
            matcher,
            path: input.path,
            glob: input.glob,
            file_type: input.file_type,
            mode,
            line_numbers: input.line_numbers.unwrap_or(true),
            before,
            after,
            limit: usize_of(input.head_limit).filter(|&n| n > 0),
            multiline,
        })
    }
}

/// Split a `glob` argument into globs: whitespace separates, and so do commas
/// outside `{...}`.
pub(super) fn split_globs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in s.split_whitespace() {
        let mut depth = 0usize;
        let mut cur = String::new();
        for ch in word.chars() {
            match ch {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    if !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                    continue;
                }
                _ => {}
            }
            cur.push(ch);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
    }
    out
}

/// For `skip_serializing_if`: a zero count is left out.
fn is_zero(n: &u64) -> bool {
    *n == 0
}
