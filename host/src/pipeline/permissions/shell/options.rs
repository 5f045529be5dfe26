//! The read-only options of commands that read-looking rules name. A rule
//! such as `Bash(git log:*)` reads as "look at the history", but `git log
//! --output=FILE` writes a file and `sed -i` edits one in place. For the
//! commands in [`TABLES`], the words a rule's `*` covers must be options
//! (and arguments) known to be read-only; any other option (one that writes,
//! runs a program or is simply not known here) is covered only by a rule
//! that names it. Commands without a table keep the plain word match.
//!
//! The tables are an allowlist: an option missing from one fails closed
//! (the command needs a rule naming it), never open.

/// What a command's positional arguments may be.
#[derive(Clone, Copy)]
pub(super) enum Positional {
    /// Any (paths, revisions, patterns).
    Any,
    /// None: a positional argument would make the command write (`git
    /// branch NAME` creates a branch).
    None,
    /// At most this many (`uniq IN OUT` writes OUT).
    AtMost(usize),
    /// The first is the table's script (unless a script option gave one),
    /// checked by its [`Script`] checker; the rest are any.
    Script,
    /// The first may be a cluster of options without a dash (`tar tvf
    /// a.tar`); the rest are any.
    Bundled,
}

/// A command whose program is a script in its arguments (`sed`, `awk`):
/// the options that give one, and what reads it.
pub(super) struct Script {
    /// The language's name, for messages.
    pub(super) language: &'static str,
    /// Long options whose value is a script (`--expression`).
    pub(super) long: &'static [&'static str],
    /// Short options whose value is a script (`-e`).
    pub(super) short: &'static str,
    /// Whether a script only reads and prints; `Err` says what it does not.
    pub(super) check: fn(&str) -> Result<(), String>,
}

/// A check of one option's value: the option as written and the value.
pub(super) type ValueCheck = fn(&str, &str) -> Result<(), String>;

/// The read-only options of one command (a program and its subcommand).
pub(super) struct Table {
    /// The command's words: `["git", "log"]`, `["sort"]`.
    pub(super) command: &'static [&'static str],
    /// Long options without a value (`--stat`); with `=value` only when
    /// also in `long_with_value`.
    pub(super) long: &'static [&'static str],
    /// Long options that take a value (`--format=…` or `--format …`).
    pub(super) long_with_value: &'static [&'static str],
    /// Short flags without a value, combinable (`-pw`).
    pub(super) short: &'static str,
    /// Short flags that take a value (the rest of the word, or the next word).
    pub(super) short_with_value: &'static str,
    /// `-5` means `-n 5` (git's log family).
    pub(super) digits: bool,
    /// What positional arguments may be.
    pub(super) positional: Positional,
    /// The script language of [`Positional::Script`] and of the script options.
    pub(super) script: Option<&'static Script>,
    /// A check of option values (`tar -f host:file` reaches a remote
    /// archive through rsh): the option as written (`-f`, `--file`) and its
    /// value; `Err` says why it is not read-only.
    pub(super) value_check: Option<ValueCheck>,
}

/// Options `git log`, `git show` and `git diff` share: formatting, limiting,
/// diff output. Not here: `--output` (writes a file), `--ext-diff` and
/// `--textconv` (run configured programs), `--show-signature` (runs gpg),
/// `--no-index` (reads files outside the repository).
const GIT_LOG_LONG: &[&str] = &[
    "oneline",
    "stat",
    "shortstat",
    "numstat",
    "name-only",
    "name-status",
    "patch",
    "no-patch",
    "graph",
    "decorate",
    "no-decorate",
    "all",
    "reverse",
    "follow",
    "no-merges",
    "merges",
    "first-parent",
    "abbrev-commit",
    "no-abbrev-commit",
    "relative-date",
    "summary",
    "raw",
    "full-history",
    "topo-order",
    "date-order",
    "author-date-order",
    "left-right",
    "cherry-pick",
    "cherry-mark",
    "boundary",
    "no-walk",
    "branches",
    "tags",
    "remotes",
    "color",
    "no-color",
    "word-diff",
    "ignore-all-space",
    "ignore-space-change",
    "ignore-blank-lines",
    "full-diff",
    "parents",
    "children",
    "source",
    "log-size",
    "no-renames",
    "find-renames",
    "find-copies",
    "minimal",
    "patience",
    "histogram",
    "compact-summary",
    "dirstat",
    "cc",
    "combined-all-paths",
    "simplify-by-decoration",
    "ancestry-path",
    "regexp-ignore-case",
    "extended-regexp",
    "fixed-strings",
    "perl-regexp",
    "invert-grep",
    "all-match",
    "remove-empty",
    "mailmap",
    "use-mailmap",
    "no-mailmap",
    "no-ext-diff",
    "no-textconv",
    "full-index",
    "binary",
    "abbrev",
    "no-prefix",
    "cached",
    "staged",
    "merge-base",
    "exit-code",
    "quiet",
    "check",
    "name-rev",
    "not",
    "unified",
    "function-context",
    "text",
    "ignore-cr-at-eol",
    "no-color-moved",
    "color-moved",
    "expand-tabs",
    "no-expand-tabs",
    "notes",
    "no-notes",
    "show-notes-by-default",
    "single-worktree",
    "reflog",
    "dense",
    "sparse",
    "bisect",
    "walk-reflogs",
    "z",
];
const GIT_LOG_WITH_VALUE: &[&str] = &[
    "max-count",
    "skip",
    "since",
    "after",
    "until",
    "before",
    "author",
    "committer",
    "grep",
    "format",
    "pretty",
    "date",
    "diff-filter",
    "abbrev",
    "decorate-refs",
    "decorate-refs-exclude",
    "min-parents",
    "max-parents",
    "encoding",
    "word-diff-regex",
    "color-words",
    "stat-width",
    "stat-name-width",
    "stat-count",
    "relative",
    "exclude",
    "glob",
    "branches",
    "tags",
    "remotes",
    "grep-reflog",
    "unified",
    "inter-hunk-context",
    "color",
    "word-diff",
    "dirstat",
    "find-renames",
    "find-copies",
    "diff-algorithm",
    "src-prefix",
    "dst-prefix",
    "line-prefix",
    "since-as-filter",
    "decorate",
    "notes",
    "color-moved",
    "expand-tabs",
    "submodule",
    "ignore-submodules",
    "anchored",
    "rotate-to",
    "skip-to",
    "orderfile",
];
/// `-p -u -s` (patch, unified, no patch), `-i -w` (ignore case, space),
/// `-m -c -t -r -z`, and `-W` (function context).
const GIT_LOG_SHORT: &str = "pusiwmctrzW";
/// `-n N`, `-S string`, `-G regex`, `-L range`, `-O orderfile`, `-U lines`.
const GIT_LOG_SHORT_VALUE: &str = "nSGLOU";

/// The table of a command of `git log`'s family (`log`, `show`, `diff`):
/// their shared options; `digits`: `-5` means `-n 5`.
const fn log_family(command: &'static [&'static str], digits: bool) -> Table {
    Table {
        command,
        long: GIT_LOG_LONG,
        long_with_value: GIT_LOG_WITH_VALUE,
        short: GIT_LOG_SHORT,
        short_with_value: GIT_LOG_SHORT_VALUE,
        digits,
        positional: Positional::Any,
        script: None,
        value_check: None,
    }
}

/// The commands whose rules are held to their read-only options.
pub(super) const TABLES: &[Table] = &[
    log_family(&["git", "log"], true),
    log_family(&["git", "show"], true),
    log_family(&["git", "diff"], false),
    Table {
        command: &["git", "status"],
        long: &[
            "short",
            "branch",
            "long",
            "porcelain",
            "show-stash",
            "ahead-behind",
            "no-ahead-behind",
            "renames",
            "no-renames",
            "verbose",
            "no-column",
            "untracked-files",
            "ignored",
            "null",
        ],
        long_with_value: &["porcelain", "untracked-files", "ignored", "ignore-submodules", "find-renames", "column"],
        short: "sbvzu",
        short_with_value: "",
        digits: false,
        positional: Positional::Any,
        script: None,
        value_check: None,
    },
    Table {
        command: &["git", "branch"],
        long: &[
            "list",
            "all",
            "remotes",
            "verbose",
            "show-current",
            "ignore-case",
            "no-color",
            "color",
            "merged",
            "no-merged",
            "contains",
            "no-contains",
            "omit-empty",
            "no-column",
        ],
        long_with_value: &[
            "sort",
            "format",
            "color",
            "abbrev",
            "merged",
            "no-merged",
            "contains",
            "no-contains",
            "points-at",
            "column",
        ],
        short: "arlvi",
        short_with_value: "",
        digits: false,
        // `git branch NAME` creates a branch.
        positional: Positional::None,
        script: None,
        value_check: None,
    },
    Table {
        command: &["sort"],
        long: &[
            "reverse",
            "numeric-sort",
            "general-numeric-sort",
            "human-numeric-sort",
            "month-sort",
            "version-sort",
            "random-sort",
            "ignore-case",
            "ignore-leading-blanks",
            "dictionary-order",
            "ignore-nonprinting",
            "stable",
            "unique",
            "zero-terminated",
            "merge",
            "debug",
            "check",
        ],
        // Not here: --output / -o (writes a file), --temporary-directory /
        // -T (writes there), --compress-program (runs a program).
        long_with_value: &["key", "field-separator", "buffer-size", "parallel", "sort", "check", "files0-from"],
        short: "bcdfghiMmnRrsuVzC",
        short_with_value: "ktS",
        digits: false,
        positional: Positional::Any,
        script: None,
        value_check: None,
    },
    Table {
        command: &["sed"],
        // Not here: --in-place / -i (edits files), --file / -f (a script
        // this check cannot read), --follow-symlinks (with -i).
        long: &[
            "quiet",
            "silent",
            "regexp-extended",
            "posix",
            "separate",
            "unbuffered",
            "null-data",
            "zero-terminated",
            "debug",
            "sandbox",
        ],
        long_with_value: &["expression", "line-length"],
        short: "nErsuz",
        short_with_value: "el",
        digits: false,
        positional: Positional::Script,
        script: Some(&SED),
        value_check: None,
    },
    grep_table(&["grep"]),
    grep_table(&["egrep"]),
    grep_table(&["fgrep"]),
    Table {
        command: &["rg"],
        // Not here: --pre and --pre-glob (run a program on each file),
        // --search-zip / -z (runs decompression programs), --hostname-bin
        // (runs a program), --no-config's opposite is the default, and
        // `--files` lists, which is reading.
        long: &[
            "files",
            "type-list",
            "count",
            "count-matches",
            "files-with-matches",
            "files-without-match",
            "fixed-strings",
            "hidden",
            "no-hidden",
            "no-ignore",
            "no-ignore-vcs",
            "no-ignore-dot",
            "no-ignore-parent",
            "no-ignore-global",
            "no-ignore-exclude",
            "no-ignore-files",
            "ignore-case",
            "smart-case",
            "case-sensitive",
            "follow",
            "no-follow",
            "json",
            "no-json",
            "line-number",
            "no-line-number",
            "only-matching",
            "pretty",
            "heading",
            "no-heading",
            "vimgrep",
            "multiline",
            "multiline-dotall",
            "invert-match",
            "word-regexp",
            "line-regexp",
            "null",
            "null-data",
            "pcre2",
            "no-pcre2",
            "quiet",
            "stats",
            "text",
            "no-text",
            "trim",
            "unrestricted",
            "with-filename",
            "no-filename",
            "no-messages",
            "byte-offset",
            "column",
            "no-column",
            "passthru",
            "no-config",
            "one-file-system",
            "binary",
            "crlf",
            "include-zero",
            "max-columns-preview",
            "no-unicode",
            "auto-hybrid-regex",
            "glob-case-insensitive",
            "sort-files",
        ],
        long_with_value: &[
            "regexp",
            "file",
            "glob",
            "iglob",
            "type",
            "type-not",
            "type-add",
            "type-clear",
            "max-count",
            "max-depth",
            "max-columns",
            "max-filesize",
            "after-context",
            "before-context",
            "context",
            "color",
            "colors",
            "sort",
            "sortr",
            "encoding",
            "engine",
            "replace",
            "threads",
            "path-separator",
            "context-separator",
            "field-match-separator",
            "field-context-separator",
            "dfa-size-limit",
            "regex-size-limit",
        ],
        short: "abcFHiIlLnNopPqsSuUvwx0.",
        short_with_value: "ABCdeEfgjmMrtT",
        digits: false,
        positional: Positional::Any,
        script: None,
        value_check: None,
    },
    Table {
        command: &["tar"],
        // Listing only. Not here: every other mode (-c, -x, -r, -u, -A,
        // --delete: they write), --to-command, -I / --use-compress-program,
        // --checkpoint-action, -F / --info-script, --rsh-command (run
        // programs); an archive name with `:` (a remote archive, reached
        // through rsh) is refused by the value check.
        long: &[
            "list",
            "verbose",
            "gzip",
            "gunzip",
            "bzip2",
            "xz",
            "lzma",
            "lzip",
            "lzop",
            "zstd",
            "auto-compress",
            "to-stdout",
            "numeric-owner",
            "full-time",
            "utc",
            "wildcards",
            "no-wildcards",
            "anchored",
            "no-anchored",
            "ignore-case",
            "no-ignore-case",
            "show-transformed-names",
            "totals",
            "ignore-zeros",
        ],
        long_with_value: &["file", "directory", "exclude", "blocking-factor", "occurrence"],
        short: "tvzjJaOi",
        short_with_value: "fCb",
        digits: false,
        positional: Positional::Bundled,
        script: None,
        value_check: Some(tar_value),
    },
    awk_table(&["awk"]),
    awk_table(&["gawk"]),
    awk_table(&["mawk"]),
    awk_table(&["nawk"]),
    Table {
        command: &["uniq"],
        long: &["count", "repeated", "all-repeated", "unique", "ignore-case", "zero-terminated", "group"],
        long_with_value: &["skip-fields", "skip-chars", "check-chars", "all-repeated", "group"],
        short: "cdDuiz",
        short_with_value: "fsw",
        digits: false,
        // `uniq IN OUT` writes OUT.
        positional: Positional::AtMost(1),
        script: None,
        value_check: None,
    },
];

/// The `sed` script language.
const SED: Script = Script { language: "sed", long: &["expression"], short: "e", check: sed_script };
/// The `awk` program language.
const AWK: Script = Script { language: "awk", long: &["source"], short: "e", check: awk_script };

/// The table of `grep` and its old names: every option only reads (none
/// writes or runs a program), but an unknown one still fails closed.
const fn grep_table(command: &'static [&'static str]) -> Table {
    Table {
        command,
        long: &[
            "extended-regexp",
            "fixed-strings",
            "basic-regexp",
            "perl-regexp",
            "ignore-case",
            "no-ignore-case",
            "invert-match",
            "word-regexp",
            "line-regexp",
            "count",
            "files-with-matches",
            "files-without-match",
            "line-number",
            "no-filename",
            "with-filename",
            "only-matching",
            "quiet",
            "silent",
            "no-messages",
            "recursive",
            "dereference-recursive",
            "null",
            "null-data",
            "text",
            "byte-offset",
            "binary",
            "initial-tab",
            "color",
            "colour",
            "line-buffered",
            "unix-byte-offsets",
        ],
        long_with_value: &[
            "regexp",
            "file",
            "max-count",
            "after-context",
            "before-context",
            "context",
            "color",
            "colour",
            "include",
            "exclude",
            "exclude-dir",
            "exclude-from",
            "label",
            "binary-files",
            "directories",
            "devices",
            "group-separator",
        ],
        short: "EFGPivwxyclLnhHoqsrRzZabTUIu",
        short_with_value: "efmABCdD",
        digits: true,
        positional: Positional::Any,
        script: None,
        value_check: None,
    }
}

/// The table of `awk` and its implementations. Not here: -f / --file (a
/// program this check cannot read), -i / --include and -l / --load (gawk
/// loads source or a shared object), and gawk's -d, -o, -p and -D (write
/// files or start a debugger).
const fn awk_table(command: &'static [&'static str]) -> Table {
    Table {
        command,
        long: &["posix", "traditional", "sandbox", "csv", "characters-as-bytes", "re-interval", "no-optimize"],
        long_with_value: &["field-separator", "assign", "source"],
        short: "",
        short_with_value: "Fve",
        digits: false,
        positional: Positional::Script,
        script: Some(&AWK),
        value_check: None,
    }
}

/// `tar`'s archive name: one with `:` before any `/` names a remote
/// archive (`host:file`), which tar reaches by running rsh.
fn tar_value(option: &str, value: &str) -> Result<(), String> {
    if matches!(option, "-f" | "--file") && value.split('/').next().is_some_and(|first| first.contains(':')) {
        return Err(format!(
            "`tar {option} {value}` names a remote archive, which tar reaches by running rsh: a rule must name it"
        ));
    }
    Ok(())
}

/// The table for a command whose words are `words` (its program's
/// basename first), and how many words name the command.
pub(super) fn table_for(words: &[Option<String>]) -> Option<&'static Table> {
    TABLES.iter().find(|t| {
        t.command.iter().enumerate().all(|(i, want)| {
            words.get(i).and_then(|w| w.as_deref()).is_some_and(|w| {
                let w = if i == 0 { super::basename(w) } else { w };
                w == *want
            })
        })
    })
}

/// Whether the words after the command's own (`rest`) are read-only for
/// `table`; `named` are the words the rule itself names (exempt: a rule
/// that spells an option out allows it). The error names the first word
/// that is not, and why.
pub(super) fn check(table: &Table, rest: &[Option<String>], named: &[String]) -> Result<(), String> {
    let cmd = table.command.join(" ");
    let mut i = 0;
    let mut options_done = false;
    let mut script_given = false;
    let mut positionals = 0usize;
    while i < rest.len() {
        let Some(word) = rest[i].as_deref() else {
            return Err(format!("an argument of `{cmd}` is known only when it runs (it could be any option)"));
        };
        i += 1;
        if named.iter().any(|n| n == word) {
            continue;
        }
        if !options_done && word == "--" {
            options_done = true;
            continue;
        }
        if !options_done && word.starts_with("--") {
            let (name, value) = match word[2..].split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (&word[2..], None),
            };
            let plain = table.long.contains(&name);
            let valued = table.long_with_value.contains(&name);
            let value = match (value, plain, valued) {
                (Some(v), _, true) => Some(Some(v.to_string())),
                (None, true, _) => continue,
                (None, false, true) => {
                    // The value is the next word.
                    i += 1;
                    rest.get(i - 1).cloned()
                }
                _ => return Err(not_known(&cmd, &format!("--{name}"))),
            };
            let is_script = table.script.is_some_and(|s| s.long.contains(&name));
            script_given |= is_script;
            check_value(table, &format!("--{name}"), value, is_script)?;
            continue;
        }
        let bundled = positionals == 0 && matches!(table.positional, Positional::Bundled) && i == 1;
        if (!options_done && word.len() > 1 && word.starts_with('-')) || bundled {
            let flags = word.strip_prefix('-').unwrap_or(word);
            if table.digits && flags.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            let mut valued = 0;
            for (k, c) in flags.char_indices() {
                if table.short.contains(c) {
                    continue;
                }
                if table.short_with_value.contains(c) {
                    let attached = &flags[k + c.len_utf8()..];
                    let value = if attached.is_empty() || bundled {
                        // Old style (`tar tvf a.tar`): each flag that takes a
                        // value takes the next word, in order.
                        i += 1;
                        rest.get(i - 1).cloned()
                    } else {
                        Some(Some(attached.to_string()))
                    };
                    let is_script = table.script.is_some_and(|s| s.short.contains(c));
                    script_given |= is_script;
                    check_value(table, &format!("-{c}"), value, is_script)?;
                    valued += 1;
                    if !bundled {
                        break;
                    }
                    continue;
                }
                return Err(not_known(&cmd, &format!("-{c}")));
            }
            if bundled && valued > 1 {
                return Err(format!("`{cmd} {word}` takes several values in the old style, which wrepl does not follow: a rule must name it"));
            }
            continue;
        }
        positionals += 1;
        match table.positional {
            Positional::Any | Positional::Bundled => {}
            Positional::None => {
                return Err(format!(
                    "`{cmd} {word}` is not a read-only use of `{cmd}` (an argument there makes it write): a rule \
                     must name it"
                ))
            }
            Positional::AtMost(n) if positionals > n => {
                return Err(format!(
                    "`{cmd}` with more than {n} argument(s) writes to the last one (`{word}`): a rule must name it"
                ))
            }
            Positional::AtMost(_) => {}
            Positional::Script if !script_given => {
                script_given = true;
                if let Some(script) = table.script {
                    (script.check)(word)
                        .map_err(|why| format!("the {} script `{word}` {why}: a rule must name it", script.language))?;
                }
            }
            Positional::Script => {}
        }
    }
    Ok(())
}

/// An option's value: `None` when there is none (the command refuses that
/// itself), `Some(None)` when it is known only when the command runs. A
/// script value is checked by the table's script checker (one known only
/// at run time could be any script); any value by the table's value check.
fn check_value(table: &Table, option: &str, value: Option<Option<String>>, is_script: bool) -> Result<(), String> {
    let language = table.script.map_or("", |s| s.language);
    match value {
        None => Ok(()),
        Some(None) if is_script => {
            Err(format!("a {language} script known only when the command runs could do anything: a rule must name it"))
        }
        Some(None) if table.value_check.is_some() => {
            Err(format!("the value of `{option}` is known only when the command runs: a rule must name it"))
        }
        Some(None) => Ok(()),
        Some(Some(v)) => {
            if let (true, Some(script)) = (is_script, table.script) {
                (script.check)(&v).map_err(|why| format!("the {language} script `{v}` {why}: a rule must name it"))?;
            }
            match table.value_check {
                Some(f) => f(option, &v),
                None => Ok(()),
            }
        }
    }
}

fn not_known(cmd: &str, option: &str) -> String {
    format!(
        "`{option}` is not one of the read-only options of `{cmd}` wrepl knows (it may write a file or run a \
         program): a rule must name it, e.g. Bash({cmd} {option}:*)"
    )
}

/// Whether a `sed` script only reads and prints: every command is one of
/// the stream-editing ones, and no `s` command has the `w` or `e` flag.
/// Refused: `w`, `W` (write files), `e` (runs a command), `r`, `R` (read
/// other files), and anything this scanner does not follow.
pub(super) fn sed_script(script: &str) -> Result<(), String> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && (chars[*i].is_whitespace() || chars[*i] == ';') {
            *i += 1;
        }
    };
    // A delimited part (`/re/`), from just after the delimiter; returns the index after the closing one.
    let delimited = |mut i: usize, d: char| -> Result<usize, String> {
        while i < chars.len() {
            match chars[i] {
                '\\' => i += 2,
                c if c == d => return Ok(i + 1),
                '\n' => return Err("has a line break inside a pattern".into()),
                _ => i += 1,
            }
        }
        Err("has an unterminated pattern".into())
    };
    loop {
        skip_ws(&mut i);
        if i >= chars.len() {
            return Ok(());
        }
        // Addresses: numbers, `$`, `/re/`, `\cREc`, with `,` `~` `+` and `!`.
        loop {
            match chars.get(i) {
                Some(&c) if c.is_ascii_digit() || matches!(c, '$' | ',' | '~' | '+' | '!' | ' ') => i += 1,
                Some('/') => i = delimited(i + 1, '/')?,
                Some('\\') => {
                    let d = *chars.get(i + 1).ok_or("ends in a backslash")?;
                    i = delimited(i + 2, d)?;
                }
                Some('I' | 'M') if i > 0 && chars[i - 1] == '/' => i += 1,
                _ => break,
            }
        }
        let Some(&cmd) = chars.get(i) else { return Ok(()) };
        i += 1;
        match cmd {
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'l' | 'z' | 'F' | '{' | '}' => {}
            'q' | 'Q' => {
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            'b' | 't' | 'T' | ':' => {
                // A label, to the end of the command.
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line (one-line form).
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            's' | 'y' => {
                let d = *chars.get(i).ok_or("ends after `s`")?;
                if d == '\\' || d == '\n' || d.is_alphanumeric() {
                    return Err(format!("uses `{d}` as a delimiter"));
                }
                i = delimited(i + 1, d)?;
                i = delimited(i, d)?;
                if cmd == 's' {
                    while let Some(&f) = chars.get(i) {
                        match f {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' => i += 1,
                            c if c.is_ascii_digit() => i += 1,
                            'w' | 'W' => return Err("writes a file (the `w` flag)".into()),
                            'e' => return Err("runs a command (the `e` flag)".into()),
                            _ => break,
                        }
                    }
                }
            }
            'w' | 'W' => return Err(format!("writes a file (the `{cmd}` command)")),
            'e' => return Err("runs a command (the `e` command)".into()),
            'r' | 'R' => return Err(format!("reads another file (the `{cmd}` command)")),
            other => return Err(format!("has the command `{other}`, which wrepl does not follow")),
        }
    }
}

/// Whether an `awk` program only reads its input and prints to standard
/// output. Outside string and regex literals and comments, refused are:
/// `system` (runs a command), a single `|` (a pipe to or from a command;
/// `||` is the logical or), `>` and `>>` (output to a file; a comparison
/// `a > b` too, which this scanner does not tell apart, while `>=` passes),
/// `getline` (reads commands or other files), `close`, `fflush`, and `@`
/// (gawk's `@load`, `@include` and indirect calls), and a `/` right after
/// `++` or `--` (gawk reads `y++ / 2` as a division, mawk `/ 2 …/` as a
/// regex: skipped as a regex, code could hide there).
pub(super) fn awk_script(script: &str) -> Result<(), String> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    // Whether a `/` here starts a regex (no operand just before it).
    let mut operand_before = false;
    // Whether the last token was `++` or `--`.
    let mut inc_dec = false;
    while i < chars.len() {
        let c = chars[i];
        if !c.is_whitespace() || c == '\n' {
            let this = (c == '+' || c == '-') && chars.get(i + 1) == Some(&c);
            if c == '/' && inc_dec {
                return Err("has `/` after `++` or `--`, which awks read as a division or as a regex".into());
            }
            inc_dec = this;
            if this {
                i += 2;
                operand_before = false;
                continue;
            }
        }
        match c {
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    return Err("has an unterminated string".into());
                }
                i += 1;
                operand_before = true;
            }
            '/' if !operand_before => {
                i += 1;
                let mut class = false;
                while i < chars.len() && (chars[i] != '/' || class) {
                    match chars[i] {
                        '\\' => i += 1,
                        '[' => class = true,
                        ']' => class = false,
                        '\n' => return Err("has a line break inside a regex".into()),
                        _ => {}
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    return Err("has an unterminated regex".into());
                }
                i += 1;
                operand_before = true;
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '|' if chars.get(i + 1) == Some(&'|') => {
                i += 2;
                operand_before = false;
            }
            '|' => return Err("pipes to or from a command (`|`)".into()),
            '>' if chars.get(i + 1) == Some(&'=') => {
                i += 2;
                operand_before = false;
            }
            '>' => return Err("has `>`, which writes a file after print (write a comparison as `<` or `>=`)".into()),
            '@' => return Err("uses `@` (gawk's @load, @include or an indirect call)".into()),
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                match word.as_str() {
                    "system" => return Err("runs a command (`system`)".into()),
                    "getline" => return Err("reads a command's output or another file (`getline`)".into()),
                    "close" | "fflush" => return Err(format!("uses `{word}`, which acts on commands and files")),
                    _ => {}
                }
                // Keywords after which an expression (so a regex) may follow.
                operand_before =
                    !matches!(word.as_str(), "print" | "printf" | "return" | "in" | "case" | "do" | "else");
            }
            c if c.is_ascii_digit() || c == '.' => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                operand_before = true;
            }
            ')' | ']' | '$' => {
                i += 1;
                // `$` is followed by its operand; `)` and `]` end one.
                operand_before = c != '$';
            }
            c if c.is_whitespace() && c != '\n' => i += 1,
            _ => {
                i += 1;
                operand_before = false;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Option<String>> {
        line.split(' ').map(|w| Some(w.to_string())).collect()
    }

    fn verdict(line: &str) -> Result<(), String> {
        let w = words(line);
        let t = table_for(&w).expect("a table");
        check(t, &w[t.command.len()..], &[])
    }

    #[test]
    fn read_only_options_pass_and_the_others_name_themselves() {
        for ok in [
            "git log --oneline -5 --format=%H --since 2024-01-01 -- src",
            "git log -pw -n 3 --stat",
            "/usr/bin/git show HEAD~1 --name-only",
            "git diff --cached --stat HEAD",
            "git status -sb --porcelain=v2",
            "git branch -avv --sort=-committerdate",
            "sort -rn -k 2 -t , data.csv",
            "sed -n 1,5p f.txt",
            "sed -E -e s/a+/b/g -e /x/d f.txt",
            "grep -rn -e TODO --include=*.rs src",
            "grep -C3 -i needle f.txt",
            "egrep -c x f",
            "rg -n --hidden -g *.rs -t rust needle",
            "rg --files --sort path",
            "tar -tvf a.tar",
            "tar tvf a.tar member",
            "tar --list --file=a.tar.gz -z",
            "tar -tzf dir/a:b.tgz",
            "awk -F, {print $1} data.csv",
            "awk -v n=2 NR>=n{print} f",
            "gawk --source {print} f",
            "uniq -c in.txt",
        ] {
            assert_eq!(verdict(ok), Ok(()), "{ok}");
        }
        for (bad, named) in [
            ("git log --output=x", "`--output`"),
            ("git diff --ext-diff", "`--ext-diff`"),
            ("git show --textconv HEAD", "`--textconv`"),
            ("git log --show-signature", "`--show-signature`"),
            ("git diff --no-index /etc/passwd x", "`--no-index`"),
            ("sort -o out.txt in.txt", "`-o`"),
            ("sort -ro out.txt", "`-o`"),
            ("sort --compress-program=sh", "`--compress-program`"),
            ("sort -T /tmp", "`-T`"),
            ("sed -i s/a/b/ f", "`-i`"),
            ("sed -f script.sed f", "`-f`"),
            ("git branch evil", "git branch evil"),
            ("git branch -D main", "`-D`"),
            ("grep --frobnicate x", "`--frobnicate`"),
            ("rg --pre sh needle", "`--pre`"),
            ("rg --pre=./x needle", "`--pre`"),
            ("rg -z needle", "`-z`"),
            ("rg --search-zip needle", "`--search-zip`"),
            ("rg --hostname-bin ./x needle", "`--hostname-bin`"),
            ("tar -xf a.tar", "`-x`"),
            ("tar xf a.tar", "`-x`"),
            ("tar -cf a.tar dir", "`-c`"),
            ("tar -tf a.tar --to-command=sh", "`--to-command`"),
            ("tar -t -I sh -f a.tar", "`-I`"),
            ("tar -tf host:a.tar", "remote archive"),
            ("tar --list --file evil:x", "remote archive"),
            ("tar -t --checkpoint-action=exec=sh -f a", "`--checkpoint-action`"),
            ("tar tfC a.tar dir", "several values"),
            ("awk BEGIN{system(\"id\")}", "runs a command"),
            ("awk {print>\"out\"} f", "writes a file"),
            ("awk {print|\"sh\"} f", "pipes"),
            ("awk BEGIN{\"id\"|getline}", "pipes"),
            ("awk -f prog.awk f", "`-f`"),
            ("gawk -l ext f", "`-l`"),
            ("gawk -i inc f", "`-i`"),
            ("gawk -o out {print} f", "`-o`"),
            ("gawk --source BEGIN{system(\"id\")}", "runs a command"),
            ("uniq in.txt out.txt", "writes to the last one"),
        ] {
            let e = verdict(bad).expect_err(bad);
            assert!(e.contains(named), "{bad}: {e}");
        }
        // Words known only when the command runs could be any option.
        let mut w = words("git log");
        w.push(None);
        assert!(check(table_for(&w).unwrap(), &w[2..], &[]).unwrap_err().contains("known only when it runs"));
        // A sed script given to -e or --expression as a word known only at
        // run time is refused (it could write or run anything).
        for form in [["sed", "-e"], ["sed", "--expression"]] {
            let mut w = words(&form.join(" "));
            w.push(None);
            w.push(Some("f".into()));
            let e = check(table_for(&w).unwrap(), &w[1..], &[]).expect_err("an unknown script");
            assert!(e.contains("known only when the command runs"), "{form:?}: {e}");
        }
        // An option the rule names is allowed.
        let w = words("git log --output=x");
        assert_eq!(check(table_for(&w).unwrap(), &w[2..], &["--output=x".to_string()]), Ok(()));
        // Other programs have no table (the word match decides).
        assert!(table_for(&words("ls -la")).is_none());
        assert!(table_for(&words("git push --force")).is_none());
    }

    #[test]
    fn awk_programs_that_write_or_run_are_refused() {
        for ok in [
            "{print $1}",
            "NR>=2 {print}",
            "$3 < 10 {s += $3} END {print s}",
            "/a|b/ {print}",
            "{print \"a > b | c\"}",
            "BEGIN {FS=\",\"} {n[$1]++} END {for (k in n) print k, n[k]}",
            "# a comment with system and > in it\n{print}",
            "{print $1 / 2}",
            "length($0) > 0 || NF == 0 {print}",
            "$1 ~ /x[/]y/",
            "{x = y / 2 / 3}",
        ] {
            // `>` alone is refused even as a comparison; everything else passes.
            let want = if ok.contains(") > 0") { Err(()) } else { Ok(()) };
            assert_eq!(awk_script(ok).map_err(drop), want, "{ok}");
        }
        for bad in [
            "BEGIN {system(\"id\")}",
            "{print > \"out\"}",
            "{print >> \"out\"}",
            "{print | \"sh\"}",
            "{print |& \"sh\"}",
            "BEGIN {\"id\" | getline x}",
            "BEGIN {getline < \"/etc/passwd\"}",
            "BEGIN {close(\"x\")}",
            "@load \"filefuncs\"",
            "BEGIN {f = \"system\"; @f(\"id\")}",
            "{print \"unterminated}",
            "/unterminated",
            "{printf \"%s\", $1 > \"/dev/stderr\"}",
            // gawk divides here and runs system(); skipped as a regex it would hide.
            "{ y++ / 1; system(\"id\"); z = 1 / 2 }",
            "{ y-- /1; system(\"id\"); z = 1/2 }",
        ] {
            assert!(awk_script(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sed_scripts_that_write_or_run_are_refused() {
        for ok in [
            "p",
            "1,5p",
            "s/a/b/g",
            "s|/usr|/opt|2p",
            "/x/,/y/d",
            "$!N;P;D",
            "y/abc/xyz/",
            ":a;N;ba",
            "1~2p",
            "/re/I p",
            "s/a\\/b/c/",
            "=",
            "1i hello",
            "{p;p}",
        ] {
            assert_eq!(sed_script(ok), Ok(()), "{ok}");
        }
        for bad in [
            "w out",
            "1W out",
            "s/a/b/w out",
            "s/a/b/gw out",
            "s/x/date/e",
            "1e date",
            "r /etc/passwd",
            "R f",
            "s/a/b",
            "v",
            "/unterminated",
            "sxaxbx",
        ] {
            assert!(sed_script(bad).is_err(), "{bad}");
        }
    }
}
