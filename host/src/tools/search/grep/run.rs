//! One `Grep` call: resolve what to search, build the walk and the
//! searcher, hand files to helper threads and merge their results in walk
//! order, then render the tool's output.

use super::budget::{HelperThreads, HoldBudget, GREP_MAX_AHEAD};
use super::file_search::{FileSearch, Lines, Searched};
use super::merge::{InOrder, Merged};
use super::*;

/// Raises its flag if its thread unwinds (a helper that panicked).
struct PanicFlag<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

pub(super) fn grep(
    ws: &Workspace,
    cwd: &Path,
    req: GrepRequest,
    cancel: &CancellationToken,
) -> Result<Out<GrepOutput>, ToolError> {
    let target = ws.resolve(cwd, req.path.as_deref().unwrap_or("."))?;
    let dir = ws.dir(target.root);
    let is_file = if target.rel.as_os_str().is_empty() {
        false
    } else {
        let meta = dir.metadata(&target.rel).map_err(|e| map_io(&target, e))?;
        if !meta.is_dir() && !meta.is_file() {
            return Err(ToolError::InvalidInput(format!("{} is neither a file nor a directory", target.shown())));
        }
        meta.is_file()
    };

    // What to search: nothing, one file, or a walk over a directory.
    let base_is_hidden = base_hidden(ws, &target);
    let walk = if base_is_hidden || is_file {
        None
    } else {
        let mut hidden = false;
        let overrides = match &req.glob {
            Some(g) if !g.trim().is_empty() => {
                let mut ob = OverrideBuilder::new(&target.abs);
                let globs = split_globs(g);
                if globs.len() > MAX_GREP_GLOBS {
                    return Err(ToolError::InvalidInput(format!(
                        "glob holds {} patterns; the limit is {MAX_GREP_GLOBS}",
                        globs.len()
                    )));
                }
                for g in globs {
                    check_glob(&g)?;
                    hidden |= mentions_hidden(&g);
                    ob.add(&g).map_err(|e| ToolError::InvalidInput(format!("invalid glob {g:?}: {e}")))?;
                }
                Some(ob.build().map_err(|e| ToolError::InvalidInput(format!("invalid glob: {e}")))?)
            }
            _ => None,
        };
        let types = match &req.file_type {
            Some(t) => {
                let mut tb = TypesBuilder::new();
                tb.add_defaults();
                for name in t.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    tb.select(name);
                }
                Some(tb.build().map_err(|e| {
                    ToolError::InvalidInput(format!(
                        "{e}; use a ripgrep type name such as rust, js, ts, py, go, java, c, cpp, md, json, yaml, or the glob parameter"
                    ))
                })?)
            }
            None => None,
        };
        Some(walker(ws, &target, WalkOpts { hidden, overrides, types }))
    };

    let searcher = SearcherBuilder::new()
        .line_number(req.mode == Mode::Matches || (req.mode == Mode::Content && req.line_numbers))
        .multi_line(req.multiline)
        .before_context(req.before)
        .after_context(req.after)
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(GREP_HEAP_LIMIT))
        .clone();

    let limit = req.limit.unwrap_or(usize::MAX);
    let merged = Merged {
        mode: req.mode,
        context: req.before > 0 || req.after > 0,
        lines: Lines::new(limit.min(GREP_MAX_LINES), GREP_MAX_BYTES),
        entry_cap: limit.min(GREP_MAX_ENTRIES),
        newest: BinaryHeap::new(),
        counts: Vec::new(),
        matched_files: 0,
        skipped: 0,
        entries_truncated: false,
    };

    // The walk (this thread) hands files to helper threads and merges their
    // results in walk order, so the output is the same as one thread's
    // would be, caps included. Once the output is full, the walk and the
    // searches stop. Helpers come from a budget shared by every Grep of the
    // process (a script running many at once gets no more threads); without
    // one, or for a single file, this thread searches alone. The lines that
    // helpers found and the merge has not taken yet are bounded by one
    // `HoldBudget` (the output's own bound): a file whose lines do not fit
    // in it is searched again by this thread in its turn, so files full of
    // matches (one file hard-linked many times) cannot hold many times the
    // output bound in memory.
    let helpers = if walk.is_some() { HelperThreads::take() } else { HelperThreads { count: 0 } };
    let search = FileSearch { ws, root: target.root, req: &req, cancel };
    // Listing files: with two or more helpers the walk itself runs on them,
    // each searching the files it finds, as ripgrep does. The listing (the newest files, how
    // many matched, how many were skipped) does not depend on the order in
    // which files are found, unlike the other modes' output.
    let walk = match walk {
        Some(w) if req.mode == Mode::Files => {
            let merged = std::sync::Mutex::new(merged);
            for_each_file(w, helpers.count, cancel, || {
                let mut searcher = searcher.build();
                let (merged, search, base) = (&merged, &search, &target);
                move |ent: ignore::DirEntry| {
                    let Ok(sub) = ent.path().strip_prefix(&base.abs) else { return };
                    // (No output lines in this mode.)
                    let found = search.file(&mut searcher, base.rel.join(sub), ent.into_path(), (0, 0), None);
                    merged.lock().unwrap_or_else(|p| p.into_inner()).add(found);
                }
            });
            drop(helpers);
            return finish(req.mode, merged.into_inner().unwrap_or_else(|p| p.into_inner()), cancel);
        }
        w => w,
    };
    // The files to search: (path relative to the root, absolute path).
    let files: Box<dyn Iterator<Item = (PathBuf, PathBuf)>> = match walk {
        None if is_file && !base_is_hidden => Box::new(std::iter::once((target.rel.clone(), target.abs.clone()))),
        None => Box::new(std::iter::empty()),
        Some(w) => {
            let base = target.clone();
            Box::new(w.build().filter_map(move |ent| {
                let ent = ent.ok()?;
                if ent.depth() == 0 || !ent.file_type().is_some_and(|t| t.is_file()) {
                    return None;
                }
                let sub = ent.path().strip_prefix(&base.abs).ok()?;
                Some((base.rel.join(sub), ent.into_path()))
            }))
        }
    };
    let mut sequence = InOrder::new(merged);
    // This thread's searcher: every file when it searches alone, else the
    // files helpers could not keep the lines of.
    let mut own = searcher.build();
    // What a helper may keep of one file: the whole output's bounds.
    let room = (limit.min(GREP_MAX_LINES), GREP_MAX_BYTES);
    if helpers.count == 0 {
        for (i, (rel, abs)) in files.enumerate() {
            if sequence.full() || cancel.is_cancelled() {
                break;
            }
            sequence.put(i, Searched::Again { rel, abs }, &search, &mut own);
        }
    } else {
        let hold = HoldBudget::new(req.mode);
        // Files travel in batches: one hand-over (and wake-up) per batch, not per file.
        type Batch = Vec<(usize, PathBuf, PathBuf)>;
        let queue = 2 * helpers.count;
        let (work_tx, work_rx) = std::sync::mpsc::sync_channel::<Batch>(queue);
        let work_rx = std::sync::Mutex::new(work_rx);
        let (done_tx, done_rx) = std::sync::mpsc::sync_channel::<Vec<(usize, Searched)>>(queue);
        let stop = std::sync::atomic::AtomicBool::new(false);
        // Set when a helper panics: the merge may then wait for a file
        // nobody will send, so the walk stops (and the scope re-raises).
        let failed = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..helpers.count {
                let (done_tx, work_rx, searcher, search, stop, hold, failed) =
                    (done_tx.clone(), &work_rx, &searcher, &search, &stop, &hold, &failed);
                scope.spawn(move || {
                    let _failed = PanicFlag(failed);
                    let mut searcher = searcher.build();
                    loop {
                        let job = work_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok(batch) = job else { return };
                        let found = batch
                            .into_iter()
                            .map(|(i, rel, abs)| {
                                let found = if stop.load(std::sync::atomic::Ordering::Relaxed) {
                                    Searched::Hidden
                                } else {
                                    #[cfg(test)]
                                    stall::before_search(&abs);
                                    search.file(&mut searcher, rel, abs, room, Some(hold))
                                };
                                (i, found)
                            })
                            .collect();
                        if done_tx.send(found).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(done_tx);
            let mut files = files.enumerate().peekable();
            'walk: while files.peek().is_some() {
                if sequence.full() || cancel.is_cancelled() {
                    break;
                }
                // The merge waits for a file a helper still searches (a
                // large or slow one): walk on only so far ahead of it, so
                // the results waiting for it stay bounded however many
                // files follow.
                while sequence.waiting() >= GREP_MAX_AHEAD && !sequence.full() && !cancel.is_cancelled() {
                    use std::sync::mpsc::RecvTimeoutError;
                    if failed.load(std::sync::atomic::Ordering::SeqCst) {
                        break 'walk;
                    }
                    #[cfg(test)]
                    stall::release();
                    match done_rx.recv_timeout(std::time::Duration::from_millis(100)) {
                        Ok(found) => sequence.put_batch(found, &search, &mut own),
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => break 'walk,
                    }
                }
                let job: Batch = files.by_ref().take(GREP_BATCH).map(|(i, (rel, abs))| (i, rel, abs)).collect();
                match work_tx.try_send(job) {
                    Ok(()) => {}
                    // The helpers are busy: this thread searches the batch
                    // itself (as a helper would, its lines within the
                    // hold), then walks on.
                    Err(std::sync::mpsc::TrySendError::Full(job)) => {
                        for (k, rel, abs) in job {
                            if sequence.full() || cancel.is_cancelled() {
                                break;
                            }
                            let found = search.file(&mut own, rel, abs, room, Some(&hold));
                            sequence.put(k, found, &search, &mut own);
                        }
                    }
                    Err(std::sync::mpsc::TrySendError::Disconnected(_)) => break,
                }
                while let Ok(found) = done_rx.try_recv() {
                    sequence.put_batch(found, &search, &mut own);
                }
            }
            // Queued files are searched only while their output is wanted.
            if sequence.full() || cancel.is_cancelled() {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            drop(work_tx);
            // (Only a search held up by the test hook has this many waiting:
            // other tests' searches must not release it early.)
            #[cfg(test)]
            if sequence.waiting() >= GREP_MAX_AHEAD {
                stall::release();
            }
            for found in done_rx {
                sequence.put_batch(found, &search, &mut own);
            }
        });
    }
    drop(helpers);
    finish(req.mode, sequence.into_inner(), cancel)
}

/// The tool's output from the merged results of a search.
fn finish(mode: Mode, merged: Merged, cancel: &CancellationToken) -> Result<Out<GrepOutput>, ToolError> {
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    let Merged { lines, newest, counts, matched_files, skipped, entries_truncated, .. } = merged;
    let skipped_files = skipped as u64;

    let note_skipped = |t: &mut String| {
        if skipped > 0 {
            t.push_str(&format!(
                "\n({skipped} file{} could not be read or exceeded the size limit and were skipped.)",
                if skipped == 1 { "" } else { "s" }
            ));
        }
    };
    let out = match mode {
        Mode::Content => {
            let content = lines.lines.join("\n");
            let n = lines.lines.len();
            let mut text = if n == 0 { "No matches found".to_string() } else { content.clone() };
            if lines.truncated {
                text.push_str(&format!(
                    "\n… (output stopped after {n} lines; narrow the search with path, glob, type or head_limit)"
                ));
            }
            note_skipped(&mut text);
            Out::new(
                GrepOutput::Content { content, num_lines: n as u64, truncated: lines.truncated, skipped_files },
                text,
            )
        }
        Mode::Matches => {
            let n = lines.lines.len();
            let mut text = if n == 0 { "No matches found".to_string() } else { lines.lines.join("\n") };
            if lines.truncated {
                text.push_str(&format!(
                    "\n… (output stopped after {n} matches; narrow the search with path, glob, type or head_limit)"
                ));
            }
            note_skipped(&mut text);
            let truncated = lines.truncated;
            Out::new(
                GrepOutput::Matches { matches: lines.found, num_matches: n as u64, truncated, skipped_files },
                text,
            )
        }
        Mode::Files => {
            let files: Vec<String> = newest.into_sorted_vec().into_iter().map(|Reverse((_, Reverse(p)))| p).collect();
            let mut text = if files.is_empty() {
                "No files found".to_string()
            } else {
                format!("Found {} file{}\n{}", files.len(), if files.len() == 1 { "" } else { "s" }, files.join("\n"))
            };
            if entries_truncated {
                text.push_str(&format!(
                    "\n(Showing the {} most recently modified of {matched_files} matching files.)",
                    files.len()
                ));
            }
            note_skipped(&mut text);
            let num_files = files.len() as u64;
            Out::new(
                GrepOutput::Files { filenames: files, num_files, truncated: entries_truncated, skipped_files },
                text,
            )
        }
        Mode::Count => {
            let total: u64 = counts.iter().map(|(_, c)| c).sum();
            let mut text = if counts.is_empty() {
                "No matches found".to_string()
            } else {
                let mut t: String = counts.iter().map(|(f, c)| format!("{f}:{c}\n")).collect();
                t.push_str(&format!(
                    "\nFound {total} matching line{} in {} file{}.",
                    if total == 1 { "" } else { "s" },
                    counts.len(),
                    if counts.len() == 1 { "" } else { "s" }
                ));
                t
            };
            if entries_truncated {
                text.push_str("\n(More files matched; the list was cut at head_limit or the entry bound.)");
            }
            note_skipped(&mut text);
            let num_files = counts.len() as u64;
            let counts = counts.into_iter().map(|(file, count)| FileCount { file, count }).collect();
            Out::new(
                GrepOutput::Count {
                    counts,
                    num_matches: total,
                    num_files,
                    truncated: entries_truncated,
                    skipped_files,
                },
                text,
            )
        }
    };
    Ok(out)
}
