//! The wrappers wrepl sees through (`nice`, `timeout`, `sudo`, `env`,
//! `xargs`, …): the option table of each, and reading a wrapper's options
//! up to the command it runs.

use crate::shell_syntax::Word;

/// How a wrapper's arguments read: options, then `operands`, then the command.
pub(super) struct Spec {
    /// Options without an argument (`-v`, `--verbose`).
    flags: &'static [&'static str],
    /// Options with an argument (`-n 5`, `-n5`, `--adjustment=5`).
    with_arg: &'static [&'static str],
    /// Short options with an optional argument attached (`xargs -i{}`).
    attached: &'static [&'static str],
    /// Options after which no command runs (`chrt -p`).
    no_command: &'static [&'static str],
    /// Options whose argument is a shell command string (`flock -c`).
    string: &'static [&'static str],
    /// Operands before the command (`timeout DURATION`).
    operands: usize,
    /// `-NUMBER` is an option (`nice -10`).
    numeric: bool,
}

const SPEC: Spec =
    Spec { flags: &[], with_arg: &[], attached: &[], no_command: &[], string: &[], operands: 0, numeric: false };

/// Read a wrapper's options: the index of its command (or `None` when it runs
/// none), and the command strings its options hold.
pub(super) fn read_options(program: &str, spec: &Spec, args: &[Word]) -> Result<(Option<usize>, Vec<String>), String> {
    let mut strings = Vec::new();
    let mut no_command = false;
    let mut i = 0;
    let unknown =
        |o: &str| format!("`{program}` with an option wrepl does not know (`{o}`), so what it runs is not known");
    while let Some(w) = args.get(i) {
        let Some(a) = w.lit.as_deref() else {
            return Err(format!("`{program}` with an argument known only when it runs (`{}`)", w.raw));
        };
        if a == "--" {
            i += 1;
            break;
        }
        if a == "-" && spec.flags.contains(&"-") {
            i += 1;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (a.to_string(), None),
            };
            let n = name.as_str();
            if spec.with_arg.contains(&n) || spec.string.contains(&n) {
                let value = match value {
                    Some(v) => v,
                    None => {
                        i += 1;
                        let v = args.get(i).ok_or_else(|| format!("`{program} {n}` without its argument"))?;
                        v.lit
                            .clone()
                            .ok_or_else(|| format!("`{program} {n}` with an argument known only when it runs"))?
                    }
                };
                if spec.string.contains(&n) {
                    strings.push(value);
                }
            } else if spec.flags.contains(&n) {
            } else if spec.no_command.contains(&n) {
                no_command = true;
            } else {
                return Err(unknown(a));
            }
            i += 1;
            continue;
        }
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) else { break };
        if spec.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            i += 1;
            continue;
        }
        let mut rest = cluster;
        while let Some(c) = rest.chars().next() {
            rest = &rest[c.len_utf8()..];
            let o = format!("-{c}");
            let o = o.as_str();
            if spec.attached.contains(&o) {
                rest = "";
            } else if spec.with_arg.contains(&o) || spec.string.contains(&o) {
                let value = if rest.is_empty() {
                    i += 1;
                    let v = args.get(i).ok_or_else(|| format!("`{program} {o}` without its argument"))?;
                    v.lit.clone().ok_or_else(|| format!("`{program} {o}` with an argument known only when it runs"))?
                } else {
                    rest.to_string()
                };
                if spec.string.contains(&o) {
                    strings.push(value);
                }
                rest = "";
            } else if spec.flags.contains(&o) {
            } else if spec.no_command.contains(&o) {
                no_command = true;
            } else {
                return Err(unknown(a));
            }
        }
        i += 1;
    }
    if no_command || !strings.is_empty() {
        return Ok((None, strings));
    }
    for _ in 0..spec.operands {
        match args.get(i) {
            Some(w) if w.lit.is_some() => i += 1,
            Some(w) => return Err(format!("`{program}` with an operand known only when it runs (`{}`)", w.raw)),
            None => return Ok((None, strings)),
        }
    }
    Ok(((i < args.len()).then_some(i), strings))
}

/// The wrappers wrepl knows: programs that run the command after their
/// options (and operands).
pub(super) fn wrapper(program: &str) -> Option<Spec> {
    Some(match program {
        "nice" => Spec { with_arg: &["-n", "--adjustment"], numeric: true, ..SPEC },
        "nohup" => SPEC,
        "setsid" => Spec { flags: &["-c", "-f", "-w", "--ctty", "--fork", "--wait"], ..SPEC },
        "stdbuf" => Spec { with_arg: &["-i", "-o", "-e", "--input", "--output", "--error"], ..SPEC },
        "timeout" => Spec {
            flags: &["-v", "--verbose", "--preserve-status", "--foreground"],
            with_arg: &["-s", "-k", "--signal", "--kill-after"],
            operands: 1,
            ..SPEC
        },
        "ionice" => Spec {
            flags: &["-t", "--ignore"],
            with_arg: &["-c", "-n", "--class", "--classdata"],
            no_command: &["-p", "-P", "-u", "--pid", "--pgid", "--uid"],
            ..SPEC
        },
        "chrt" => Spec {
            flags: &[
                "-a",
                "-b",
                "-d",
                "-e",
                "-f",
                "-i",
                "-o",
                "-r",
                "-R",
                "-v",
                "--all-tasks",
                "--batch",
                "--deadline",
                "--ext",
                "--fifo",
                "--idle",
                "--other",
                "--rr",
                "--reset-on-fork",
                "--verbose",
            ],
            with_arg: &["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"],
            no_command: &["-p", "-m", "--pid", "--max"],
            operands: 1,
            ..SPEC
        },
        "taskset" => Spec {
            flags: &["-a", "-c", "--all-tasks", "--cpu-list"],
            no_command: &["-p", "--pid"],
            operands: 1,
            ..SPEC
        },
        "sudo" => Spec {
            flags: &[
                "-A",
                "-b",
                "-E",
                "-H",
                "-n",
                "-P",
                "-S",
                "-B",
                "-N",
                "-k",
                "--askpass",
                "--background",
                "--preserve-env",
                "--set-home",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
                "--bell",
                "--reset-timestamp",
            ],
            with_arg: &[
                "-C",
                "-D",
                "-g",
                "-h",
                "-p",
                "-R",
                "-r",
                "-T",
                "-t",
                "-U",
                "-u",
                "--close-from",
                "--chdir",
                "--group",
                "--host",
                "--prompt",
                "--chroot",
                "--role",
                "--command-timeout",
                "--type",
                "--other-user",
                "--user",
            ],
            no_command: &["-K", "-l", "-v", "-V", "--remove-timestamp", "--list", "--validate", "--version"],
            ..SPEC
        },
        "doas" => Spec { flags: &["-n", "-L"], with_arg: &["-u"], no_command: &["-C"], ..SPEC },
        "unbuffer" => Spec { flags: &["-p"], ..SPEC },
        "flock" => Spec {
            flags: &[
                "-s",
                "-e",
                "-x",
                "-u",
                "-n",
                "-o",
                "-F",
                "--shared",
                "--exclusive",
                "--unlock",
                "--nonblock",
                "--nb",
                "--close",
                "--no-fork",
                "--verbose",
            ],
            with_arg: &["-w", "-E", "--wait", "--timeout", "--conflict-exit-code"],
            string: &["-c", "--command"],
            operands: 1,
            ..SPEC
        },
        "time" => Spec {
            flags: &["-p", "-v", "-a", "-q", "--portability", "--verbose", "--append", "--quiet"],
            with_arg: &["-f", "-o", "--format", "--output"],
            ..SPEC
        },
        "exec" => Spec { flags: &["-c", "-l"], with_arg: &["-a"], ..SPEC },
        "builtin" => SPEC,
        "command" => Spec { flags: &["-p"], no_command: &["-v", "-V"], ..SPEC },
        "xargs" => Spec {
            flags: &[
                "-0",
                "-r",
                "-t",
                "-p",
                "-x",
                "-o",
                "--null",
                "--no-run-if-empty",
                "--verbose",
                "--interactive",
                "--exit",
                "--open-tty",
            ],
            with_arg: &[
                "-a",
                "-d",
                "-E",
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            attached: &["-e", "-i", "-l"],
            no_command: &["--help", "--version", "--show-limits"],
            ..SPEC
        },
        "env" => Spec {
            flags: &["-i", "-0", "-v", "--ignore-environment", "--null", "--debug", "-"],
            with_arg: &["-u", "-C", "--unset", "--chdir"],
            string: &["-S", "--split-string"],
            no_command: &["--help", "--version"],
            ..SPEC
        },
        "chroot" => Spec { with_arg: &["--userspec", "--groups"], flags: &["--skip-chdir"], operands: 1, ..SPEC },
        "catchsegv" => SPEC,
        "busybox" | "toybox" => SPEC,
        "watch" => Spec {
            flags: &[
                "-b",
                "-c",
                "-d",
                "-e",
                "-g",
                "-p",
                "-r",
                "-t",
                "-w",
                "-x",
                "--beep",
                "--color",
                "--no-color",
                "--differences",
                "--errexit",
                "--chgexit",
                "--precise",
                "--no-rerun",
                "--no-title",
                "--no-wrap",
                "--exec",
            ],
            with_arg: &["-n", "-q", "--interval", "--equexit"],
            ..SPEC
        },
        "su" | "runuser" => Spec {
            flags: &["-", "-l", "-m", "-p", "-P", "-f", "--login", "--preserve-environment", "--pty"],
            with_arg: &["-g", "-G", "-s", "-w", "-u", "--group", "--supp-group", "--shell", "--whitelist-environment"],
            string: &["-c", "--command", "--session-command"],
            ..SPEC
        },
        "script" => Spec {
            flags: &["-a", "-e", "-f", "-q", "-t", "-E", "--append", "--return", "--flush", "--quiet"],
            with_arg: &["-B", "-I", "-O", "-T", "-m", "-o", "--log-io", "--log-in", "--log-out", "--log-timing"],
            string: &["-c", "--command"],
            ..SPEC
        },
        _ => return None,
    })
}
