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
    /// The first is a `sed` script, checked by [`sed_script`].
    SedScript,
}

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
        positional: Positional::SedScript,
    },
];

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
    let mut script_seen = false;
    let mut expression_given = false;
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
            match (value, plain, valued) {
                (Some(v), _, true) => {
                    if name == "expression" {
                        expression_given = true;
                        check_sed(table, v)?;
                    }
                }
                (None, true, _) => {}
                (None, false, true) => {
                    // The value is the next word.
                    let v = rest.get(i).cloned();
                    i += 1;
                    if name == "expression" {
                        expression_given = true;
                        check_sed_word(table, v)?;
                    }
                }
                _ => return Err(not_known(&cmd, &format!("--{name}"))),
            }
            continue;
        }
        if !options_done && word.len() > 1 && word.starts_with('-') {
            let flags = &word[1..];
            if table.digits && flags.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            for (k, c) in flags.char_indices() {
                if table.short.contains(c) {
                    continue;
                }
                if table.short_with_value.contains(c) {
                    let attached = &flags[k + c.len_utf8()..];
                    let value = if attached.is_empty() {
                        let v = rest.get(i).cloned();
                        i += 1;
                        v
                    } else {
                        Some(Some(attached.to_string()))
                    };
                    if c == 'e' && matches!(table.positional, Positional::SedScript) {
                        expression_given = true;
                        check_sed_word(table, value)?;
                    }
                    break;
                }
                return Err(not_known(&cmd, &format!("-{c}")));
            }
            continue;
        }
        match table.positional {
            Positional::Any => {}
            Positional::None => {
                return Err(format!(
                    "`{cmd} {word}` is not a read-only use of `{cmd}` (an argument there makes it write): a rule \
                     must name it"
                ))
            }
            Positional::SedScript if !script_seen && !expression_given => {
                script_seen = true;
                sed_script(word).map_err(|why| format!("the sed script `{word}` {why}: a rule must name it"))?;
            }
            Positional::SedScript => {}
        }
    }
    Ok(())
}

/// [`check_sed`] of an option's value word: `None` when there is none (sed
/// refuses that itself), `Some(None)` when it is known only when the
/// command runs (refused: it could be any script).
fn check_sed_word(table: &Table, word: Option<Option<String>>) -> Result<(), String> {
    match word {
        None => Ok(()),
        Some(None) if matches!(table.positional, Positional::SedScript) => {
            Err("a sed script known only when the command runs could do anything: a rule must name it".into())
        }
        Some(None) => Ok(()),
        Some(Some(script)) => check_sed(table, &script),
    }
}

fn check_sed(table: &Table, script: &str) -> Result<(), String> {
    if matches!(table.positional, Positional::SedScript) {
        sed_script(script).map_err(|why| format!("the sed script `{script}` {why}: a rule must name it"))?;
    }
    Ok(())
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
