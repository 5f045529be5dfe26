use std::path::Path;

use super::super::testing::{bash, rules, ROOT};
use super::super::{Decision::*, Matched, PermissionRequest};
use super::programs::{step, Step};
use super::*;

#[test]
fn compound_commands_need_every_part() {
    let r = rules(&["Bash(git status:*)", "Bash(ls:*)"], &[], &[]);
    for cmd in [
        "git status && rm -rf /",
        "git status || rm -rf /",
        "git status; rm -rf /",
        "git status | rm -rf /",
        "git status |& rm -rf /",
        "git status & rm -rf /",
        "git status\nrm -rf /",
        "git status &",
    ] {
        assert_eq!(bash(&r, cmd), None, "{cmd:?}");
    }
    let m = r
        .evaluate(&PermissionRequest {
            tool: "Bash",
            command: Some("git status && ls -la | git status -s;ls"),
            paths: &[],
            project_root: Path::new(ROOT),
        })
        .unwrap();
    assert_eq!(m, Matched { decision: Allow, rule: "Bash(git status:*), Bash(ls:*)".into(), part: None });
    // Separators inside quotes or escaped do not split.
    let r = rules(&["Bash(git commit:*)"], &[], &[]);
    assert_eq!(bash(&r, "git commit -m \"a && b; c | d\""), Some(Allow));
    assert_eq!(bash(&r, "git commit -m 'a; rm -rf /'"), Some(Allow));
    assert_eq!(bash(&r, "git commit -m a\\;b"), Some(Allow));
    assert_eq!(bash(&r, "git commit -m 'a; rm -rf /"), None, "unterminated quote");
}

#[test]
fn only_fully_understood_commands_match_allow_rules() {
    let r = rules(&["Bash(git status:*)", "Bash(echo:*)"], &[], &[]);
    for cmd in [
        "git status $(rm -rf /)",
        "git status \"$(rm -rf /)\"",
        "git status `rm -rf /`",
        "git status <(rm -rf /)",
        "git status ${x:-$(rm f)}",
        "git status $((1+$(rm f)))",
        "git status $'\\x3b rm f'",
        "git status # it's a comment\nrm f",
        "git status <<EOF\n$(rm f)\nEOF",
        "git status <<< x",
        "echo x > ~/.bashrc",
        "echo x >> log",
        "echo x &> log",
        "echo x >| log",
        "echo x <> log",
        "echo x >&log",
        "echo a\rrm",
        "FOO=1 git status",
        "GIT_DIR=/x git status",
        "(git status)",
        "{ git status; }",
        "f() { rm f; }; git status",
        "$x status",
        "git\\ status",
    ] {
        assert_eq!(bash(&r, cmd), None, "{cmd:?}");
    }
    for cmd in [
        "git status '$(literal)'",
        "git status 2>&1",
        "git status >&2",
        "git status > /dev/null 2>&1",
        "git status 2>/dev/null",
        "git status < input.txt",
        "echo \"a > b\"",
        "echo $HOME \"${USER}\" *.rs",
        "! git status",
        "git  status  -s",
        "git \"status\"",
    ] {
        assert_eq!(bash(&r, cmd), Some(Allow), "{cmd:?}");
    }
}

#[test]
fn programs_that_run_code_never_match_allow_rules() {
    let r = rules(
        &[
            "Bash(eval:*)",
            "Bash(exec:*)",
            "Bash(source:*)",
            "Bash(.:*)",
            "Bash(bash:*)",
            "Bash(sh:*)",
            "Bash(xargs:*)",
            "Bash(find:*)",
            "Bash(env:*)",
            "Bash(echo:*)",
            "Bash(nice:*)",
            "Bash(timeout:*)",
            "Bash(printf:*)",
            "Bash(export:*)",
            "Bash(trap:*)",
            "Bash(let:*)",
            "Bash(declare:*)",
            "Bash(set:*)",
            "Bash(fc:*)",
        ],
        &[],
        &[],
    );
    for cmd in [
        "eval echo hi",
        "exec echo hi",
        "source ./x.sh",
        ". ./x.sh",
        "bash -c 'echo hi'",
        "sh -ec 'echo hi'",
        "bash",
        "echo echo hi | sh",
        "bash ./script.sh",
        "echo f | xargs rm",
        "find . -exec rm {} ;",
        "find . -delete",
        "find . $x",
        "env rm f",
        "env -i X=1 rm f",
        "env -S 'rm f'",
        "nice eval rm f",
        "timeout 5 bash -c 'rm f'",
        "timeout --bogus 5 echo",
        "printf -v 'a[$(touch pwn)]' x",
        "declare 'a[$(touch pwn)]=1'",
        "export PATH=/tmp/evil:/bin",
        "export GIT_SSH_COMMAND='touch pwn'",
        "export TAR_OPTIONS=--to-command=sh",
        "export RIPGREP_CONFIG_PATH=./rc",
        "export PATH=.:$PATH",
        "export \"$n\"=x",
        "export $assignment",
        "trap 'touch pwn' EXIT",
        "let x",
        "declare -n r=x",
        "set -k",
        "set -o keyword",
        "fc -s",
    ] {
        assert_eq!(bash(&r, cmd), None, "{cmd:?}");
    }
    for cmd in [
        "find . -name '*.rs'",
        "env",
        "env -i X=1",
        "nice -n 5 echo hi",
        "timeout 5 echo hi",
        "printf '[%s]' x",
        "export FOO=1",
        "bash --version",
        "env -u HOME",
    ] {
        assert_eq!(bash(&r, cmd), Some(Allow), "{cmd:?}");
    }
}

#[test]
fn deny_sees_through_wrappers_and_unknown_words() {
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
        "./rm x",
        "~/bin/rm x",
        "sudo rm x",
        "sudo -E -u root env X=1 rm x",
        "\"rm\" x",
        "r'm' x",
        "\\rm f",
        "\"r\"\"m\" f",
        "$'rm' f",
        "x=rm; $x f",
        "${x} f",
        "r* f",
        "{rm,f}",
        "echo $(rm x)",
        "echo \"$(rm x)\"",
        "echo `rm x`",
        "echo \"`rm x`\"",
        "echo ${x:-$(rm x)}",
        "cat <(rm x)",
        "cat <<EOF\n$(rm x)\nEOF",
        "(rm x)",
        "{ rm x; }",
        "if true; then rm x; fi",
        "for i in 1; do rm x; done",
        "while rm x; do :; done",
        "case x in x) rm x;; esac",
        "f() { rm x; }",
        "coproc rm x",
        "xargs rm < list",
        "echo f | xargs rm",
        "echo f | xargs -n1 -I{} rm {}",
        "find . -exec rm {} \\;",
        "find . -name x -execdir rm -f {} +",
        "nice rm f",
        "nice -n 5 rm f",
        "nice -10 rm f",
        "timeout 5 rm f",
        "timeout -s KILL 5s rm f",
        "env rm f",
        "env -i PATH=/bin rm f",
        "env \"X\"=1 rm f",
        "env - rm f",
        "env $x rm f",
        "env -S 'rm f'",
        "command rm f",
        "command -p rm f",
        "builtin rm f",
        "exec rm f",
        "exec -a x rm f",
        "nohup rm f",
        "stdbuf -o0 rm f",
        "time rm f",
        "ionice -c 3 rm f",
        "chrt -f 10 rm f",
        "taskset 0x1 rm f",
        "taskset -c 0 rm f",
        "setsid -f rm f",
        "unbuffer rm f",
        "flock /tmp/l rm f",
        "flock -c 'rm f' /tmp/l",
        "doas -u root rm f",
        "busybox rm f",
        "watch -n 1 rm f",
        "nice timeout 5 sudo rm f",
        "eval rm f",
        "eval 'rm f'",
        "eval \"$cmd\"",
        "bash -c 'rm f'",
        "sh -c \"rm f\"",
        "bash -xec 'ls; rm f'",
        "bash -c \"$cmd\"",
        "echo rm f | sh",
        "echo rm f | bash -s",
        "bash script.sh",
        "zsh -c 'rm f'",
        "source script.sh",
        ". ./script.sh",
        "trap 'rm f' EXIT",
        "alias ls='rm f'",
        "GIT_PAGER='rm f' git log",
        "export EDITOR='rm f'",
        "BASH_ENV=./x bash -c true",
        "LD_PRELOAD=./x.so ls",
        "x='a[$(rm f)]'; echo $((x))",
        "echo ${!x}",
        "printf -v 'a[$(rm f)]' x",
        "declare 'a[$(rm f)]=1'",
        "x='a[$(rm f)]'; declare -n r=$x; echo $r",
        "set -k; git log GIT_PAGER='rm f'",
        "fc -e 'rm f' -1",
        "echo \\$'\\'\\'\nrm f\n'",
        "  rm  -rf  /  ",
    ] {
        assert_eq!(bash(&r, evasion), Some(Deny), "{evasion:?}");
    }
    assert_eq!(bash(&r, "git push --force"), Some(Deny));
    assert_eq!(bash(&r, "git  push   '--force'"), Some(Deny));
    assert_eq!(bash(&r, "git push $opts"), Some(Deny), "an unknown word could be `--force`");
    assert_eq!(bash(&r, "git push 'origin'"), Some(Allow));
    assert_eq!(bash(&r, "echo rm"), Some(Allow));
    assert_eq!(bash(&r, "echo $HOME"), Some(Allow));
    assert_eq!(bash(&r, "ls *.rs"), Some(Allow));
    assert_eq!(bash(&r, "bash -c 'ls -la'"), Some(Allow));
    assert_eq!(bash(&r, "find . -name '*.rs' -exec grep -l x {} +"), Some(Allow));
    assert_eq!(bash(&r, "echo a | xargs"), Some(Allow), "xargs alone runs echo");
    assert_eq!(bash(&r, "find . -exec {} \\;"), Some(Deny), "the found file is the command");
}

#[test]
fn deny_messages_name_the_part() {
    let r = rules(&["Bash"], &[], &["Bash(rm:*)"]);
    let req = |cmd| PermissionRequest { tool: "Bash", command: Some(cmd), paths: &[], project_root: Path::new(ROOT) };
    let m = r.evaluate(&req("ls; nice rm -f x")).unwrap();
    assert_eq!((m.decision, m.rule.as_str()), (Deny, "Bash(rm:*)"));
    assert_eq!(m.part.as_deref(), Some("it matches `rm -f x`"));
    let m = r.evaluate(&req("x=rm; $x f")).unwrap();
    assert!(m.part.as_deref().unwrap().contains("`$x` is only known when it runs"), "{m:?}");
}

#[test]
fn wrapper_options() {
    let w = |s: &str| shell_syntax::parse(s).commands.remove(0).words;
    let inner = |s: &str| match step("timeout", &w(s)[1..]) {
        Step::Runs(v) => v.iter().map(|w| w.raw.clone()).collect::<Vec<_>>().join(" "),
        Step::Plain => "plain".into(),
        Step::Unknown(why) => format!("unknown: {why}"),
        _ => "other".into(),
    };
    assert_eq!(inner("timeout 5 rm f"), "rm f");
    assert_eq!(inner("timeout -k 1 -s9 --preserve-status 5 rm f"), "rm f");
    assert_eq!(inner("timeout --signal=KILL 5 rm f"), "rm f");
    assert_eq!(inner("timeout 5"), "plain");
    assert!(inner("timeout -Z 5 rm f").starts_with("unknown"));
    assert!(inner("timeout $t rm f").starts_with("unknown"));
}
