//! Shell command lines as permission subjects: the spellings deny rules
//! are tried against (assignments, wrappers and program paths stripped),
//! over the one splitter in `crate::shell_syntax`. What this means for rules is
//! described in the parent module's documentation
//! ([Shell commands](super#shell-commands)).

pub(super) use crate::shell_syntax::{shell_words, split_shell, Part};

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
