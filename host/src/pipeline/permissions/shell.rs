//! Shell command lines as permission subjects: the splitter into
//! subcommands (with the "not matchable" marks for allow/ask), the word
//! splitter, and the spellings deny rules are tried against (assignments,
//! wrappers and program paths stripped). What this means for rules is
//! described in the parent module's documentation
//! ([Shell commands](super#shell-commands)).

/// One subcommand of a shell command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Part {
    /// The text, trimmed.
    pub(super) text: String,
    /// False when allow/ask rules must not match it (substitution, output
    /// redirection, control characters, unterminated quote).
    pub(super) safe: bool,
}

/// Split a shell command line into subcommands (see the parent module's
/// docs).
pub(super) fn split_shell(cmd: &str) -> Vec<Part> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let chars: Vec<char> = cmd.chars().collect();
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut safe = true;
    let mut quote = Quote::None;
    let mut i = 0;
    let flush = |cur: &mut String, safe: &mut bool, parts: &mut Vec<Part>| {
        let text = cur.trim();
        if !text.is_empty() {
            parts.push(Part { text: text.to_string(), safe: *safe });
        }
        cur.clear();
        *safe = true;
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_control() && !matches!(c, '\t' | '\n') {
            safe = false;
        }
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
                cur.push(c);
                i += 1;
            }
            Quote::Double => {
                cur.push(c);
                match c {
                    '\\' => {
                        if let Some(n) = next {
                            cur.push(n);
                            i += 1;
                        }
                    }
                    '"' => quote = Quote::None,
                    '`' => safe = false,
                    '$' if next == Some('(') => safe = false,
                    _ => {}
                }
                i += 1;
            }
            Quote::None => match c {
                '\\' => {
                    cur.push(c);
                    if let Some(n) = next {
                        cur.push(n);
                        i += 1;
                    }
                    i += 1;
                }
                '\'' => {
                    quote = Quote::Single;
                    cur.push(c);
                    i += 1;
                }
                '"' => {
                    quote = Quote::Double;
                    cur.push(c);
                    i += 1;
                }
                '`' => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '$' if next == Some('(') => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '<' | '>' if next == Some('(') => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '<' if next == Some('&') => {
                    cur.push_str("<&");
                    i += 2;
                }
                '<' if next == Some('>') => {
                    cur.push('<');
                    i += 1;
                    i = redirect(&chars, i, &mut cur, &mut safe);
                }
                '>' => i = redirect(&chars, i, &mut cur, &mut safe),
                '&' if next == Some('>') => {
                    cur.push('&');
                    i += 1;
                    i = redirect(&chars, i, &mut cur, &mut safe);
                }
                ';' | '\n' => {
                    flush(&mut cur, &mut safe, &mut parts);
                    i += 1;
                }
                '|' | '&' => {
                    flush(&mut cur, &mut safe, &mut parts);
                    i += if matches!(next, Some('|' | '&')) { 2 } else { 1 };
                }
                _ => {
                    cur.push(c);
                    i += 1;
                }
            },
        }
    }
    if quote != Quote::None {
        safe = false;
    }
    flush(&mut cur, &mut safe, &mut parts);
    parts
}

/// Consume an output redirection starting at `chars[i] == '>'`; mark the
/// subcommand unsafe unless it targets a descriptor or `/dev/null`.
/// Returns the index after the redirection.
fn redirect(chars: &[char], mut i: usize, cur: &mut String, safe: &mut bool) -> usize {
    // `>`, `>>`, `>|`
    cur.push('>');
    i += 1;
    if let Some(&c @ ('>' | '|')) = chars.get(i) {
        cur.push(c);
        i += 1;
    }
    // `>&2`, `>&-`: descriptor duplication.
    if chars.get(i) == Some(&'&') {
        cur.push('&');
        i += 1;
        let start = i;
        while let Some(&c) = chars.get(i).filter(|c| c.is_ascii_digit() || **c == '-') {
            cur.push(c);
            i += 1;
        }
        let ends = chars.get(i).is_none_or(|c| c.is_whitespace() || ";|&<>)".contains(*c));
        if i > start && ends {
            return i;
        }
    }
    while let Some(&c) = chars.get(i).filter(|c| **c == ' ' || **c == '\t') {
        cur.push(c);
        i += 1;
    }
    let mut target = String::new();
    while let Some(&c) = chars.get(i).filter(|c| !c.is_whitespace() && !";|&<>()".contains(**c)) {
        target.push(c);
        i += 1;
    }
    cur.push_str(&target);
    if target != "/dev/null" {
        *safe = false;
    }
    i
}

/// Words of a shell command with quotes and escapes removed (a rough
/// approximation for deny matching; no expansion).
pub(super) fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            cur.extend(chars.next());
                        }
                        c => cur.push(c),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => {
                    in_word = true;
                    cur.push(n);
                }
            },
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Words that run the command that follows them.
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "exec", "command", "builtin", "nohup", "time", "nice", "ionice", "timeout", "xargs", "if",
    "then", "else", "elif", "do", "while", "until", "!",
];

fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The spellings of a shell command that deny rules are tried against.
pub(super) fn deny_candidates(cmd: &str) -> Vec<String> {
    let mut sources = vec![cmd];
    for opener in ["$(", "`", "<(", ">("] {
        sources.extend(cmd.match_indices(opener).map(|(i, _)| &cmd[i + opener.len()..]));
    }
    let mut out: Vec<String> = Vec::new();
    let mut add = |s: String| {
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    };
    for source in sources {
        for part in split_shell(source) {
            add(part.text.clone());
            let mut words = shell_words(&part.text);
            while let Some(first) = words.first_mut() {
                let stripped = first.trim_start_matches(['(', '{', '!']);
                if stripped.len() != first.len() {
                    *first = stripped.to_string();
                    if first.is_empty() {
                        words.remove(0);
                    }
                } else if is_assignment(first) {
                    words.remove(0);
                } else if WRAPPERS.contains(&first.as_str()) {
                    words.remove(0);
                    // The wrapper's options (`sudo -E`, `nice -n`), roughly.
                    while words.first().is_some_and(|w| w.starts_with('-')) {
                        words.remove(0);
                    }
                } else {
                    break;
                }
            }
            let trim = |s: String| s.trim_end_matches([')', '}', '`', ';', ' ']).to_string();
            let normalized = trim(words.join(" "));
            if let Some(first) = words.first_mut() {
                if let Some((_, base)) = first.rsplit_once('/') {
                    *first = base.to_string();
                    add(trim(words.join(" ")));
                }
            }
            add(normalized);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::testing::{bash, rules, ROOT};
    use super::super::{Decision::*, Matched, PermissionRequest};
    use super::*;

    #[test]
    fn compound_commands_need_every_part() {
        let r = rules(&["Bash(git status:*)", "Bash(ls:*)"], &[], &[]);
        assert_eq!(bash(&r, "git status && rm -rf /"), None);
        assert_eq!(bash(&r, "git status || rm -rf /"), None);
        assert_eq!(bash(&r, "git status; rm -rf /"), None);
        assert_eq!(bash(&r, "git status | rm -rf /"), None);
        assert_eq!(bash(&r, "git status |& rm -rf /"), None);
        assert_eq!(bash(&r, "git status & rm -rf /"), None);
        assert_eq!(bash(&r, "git status\nrm -rf /"), None);
        let m = r
            .evaluate(&PermissionRequest {
                tool: "Bash",
                command: Some("git status && ls -la | git status -s;ls"),
                paths: &[],
                project_root: Path::new(ROOT),
            })
            .unwrap();
        assert_eq!(m, Matched { decision: Allow, rule: "Bash(git status:*), Bash(ls:*)".into() });
        // Separators inside quotes or escaped do not split.
        let r = rules(&["Bash(git commit:*)"], &[], &[]);
        assert_eq!(bash(&r, "git commit -m \"a && b; c | d\""), Some(Allow));
        assert_eq!(bash(&r, "git commit -m 'a; rm -rf /'"), Some(Allow));
        assert_eq!(bash(&r, "git commit -m a\\;b"), Some(Allow));
        assert_eq!(bash(&r, "git commit -m 'a; rm -rf /"), None, "unterminated quote");
    }

    #[test]
    fn substitution_and_redirection_are_not_allowable() {
        let r = rules(&["Bash(git status:*)", "Bash(echo:*)"], &[], &[]);
        assert_eq!(bash(&r, "git status $(rm -rf /)"), None);
        assert_eq!(bash(&r, "git status \"$(rm -rf /)\""), None);
        assert_eq!(bash(&r, "git status `rm -rf /`"), None);
        assert_eq!(bash(&r, "git status <(rm -rf /)"), None);
        assert_eq!(bash(&r, "git status '$(literal)'"), Some(Allow));
        assert_eq!(bash(&r, "echo x > ~/.bashrc"), None);
        assert_eq!(bash(&r, "echo x >> log"), None);
        assert_eq!(bash(&r, "echo x &> log"), None);
        assert_eq!(bash(&r, "echo x >| log"), None);
        assert_eq!(bash(&r, "echo x <> log"), None);
        assert_eq!(bash(&r, "echo x >&log"), None);
        assert_eq!(bash(&r, "git status 2>&1"), Some(Allow));
        assert_eq!(bash(&r, "git status >&2"), Some(Allow));
        assert_eq!(bash(&r, "git status > /dev/null 2>&1"), Some(Allow));
        assert_eq!(bash(&r, "git status 2>/dev/null"), Some(Allow));
        assert_eq!(bash(&r, "echo \"a > b\""), Some(Allow));
        assert_eq!(bash(&r, "echo a\rrm"), None, "control characters");
        // Env assignments are not stripped for allow.
        assert_eq!(bash(&r, "FOO=1 git status"), None);
        assert_eq!(bash(&r, "GIT_DIR=/x git status"), None);
    }

    #[test]
    fn deny_matches_any_part_and_evasions() {
        let r = rules(&["Bash"], &[], &["Bash(rm:*)", "Bash(git push --force)"]);
        assert_eq!(bash(&r, "ls"), Some(Allow));
        assert_eq!(bash(&r, "rm -rf /"), Some(Deny));
        assert_eq!(bash(&r, "rm"), Some(Deny));
        assert_eq!(bash(&r, "rmdir x"), Some(Allow));
        for evasion in [
            "ls && rm -rf /",
            "ls; rm x",
            "ls | rm x",
            "ls\nrm x",
            "FOO=1 rm -rf /",
            "A=1 B='x y' rm -rf /",
            "/bin/rm -rf /",
            "sudo rm x",
            "sudo -E env X=1 rm x",
            "\"rm\" x",
            "r'm' x",
            "echo $(rm x)",
            "echo \"$(rm x)\"",
            "echo `rm x`",
            "(rm x)",
            "{ rm x; }",
            "if true; then rm x; fi",
            "xargs rm < list",
            "  rm  -rf  /  ",
        ] {
            assert_eq!(bash(&r, evasion), Some(Deny), "{evasion:?}");
        }
        assert_eq!(bash(&r, "git push --force"), Some(Deny));
        assert_eq!(bash(&r, "git  push   --force"), Some(Deny));
        assert_eq!(bash(&r, "git push 'origin'"), Some(Allow));
        assert_eq!(bash(&r, "echo rm"), Some(Allow));
    }

    #[test]
    fn split_shell_parts() {
        let texts = |cmd| split_shell(cmd).into_iter().map(|p| p.text).collect::<Vec<_>>();
        assert_eq!(texts("a && b || c ; d | e |& f & g\nh"), ["a", "b", "c", "d", "e", "f", "g", "h"]);
        assert_eq!(texts("a 2>&1 | b"), ["a 2>&1", "b"]);
        assert_eq!(texts("a &>/dev/null; b"), ["a &>/dev/null", "b"]);
        assert_eq!(texts("echo 'x;y' \"z|w\" \\&"), ["echo 'x;y' \"z|w\" \\&"]);
        assert!(split_shell("a <&3").iter().all(|p| p.safe));
    }
}
