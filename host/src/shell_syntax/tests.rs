//! Unit tests of the shell parser.

use super::*;

fn lits(cmd: &Command) -> Vec<Option<&str>> {
    cmd.words.iter().map(|w| w.lit.as_deref()).collect()
}

#[test]
fn plain_lists_of_simple_commands() {
    let s = parse("git status --short && git diff | head -5; ls 'a b' \"c\"\\ d\nwc -l < f 2>&1 >/dev/null");
    assert_eq!(s.structure, None, "{s:?}");
    assert_eq!(s.opaque, None);
    let top: Vec<_> = s.top().collect();
    assert_eq!(top.len(), 5);
    assert_eq!(lits(top[0]), [Some("git"), Some("status"), Some("--short")]);
    assert_eq!(lits(top[3]), [Some("ls"), Some("a b"), Some("c d")]);
    assert_eq!(lits(top[4]), [Some("wc"), Some("-l")]);
    assert!(top.iter().all(|c| c.construct().is_none()), "{top:?}");
    // quotes and escapes are removed; a variable is known only as "some value"
    let s = parse("\"r\"\"m\" \\rm $x \"${y}\" ~/bin *.rs");
    let c = &s.commands[0];
    assert_eq!(lits(c), [Some("rm"), Some("rm"), None, None, Some("~/bin"), None]);
    assert!(c.words[2].expands && c.words[3].expands && c.words[5].pattern);
    assert_eq!(c.construct(), None, "variables and patterns are arguments allow rules may cover");
    let s = parse("$x f");
    assert_eq!(s.commands[0].construct(), Some(Construct::VariableCommand("$x".into())));
}

#[test]
fn constructs_are_named() {
    for (cmd, want) in [
        ("git status $(rm f)", Construct::CommandSubstitution),
        ("git status \"`rm f`\"", Construct::Backticks),
        ("git status ${x:-$(rm f)}", Construct::Parameter("${x:-$(rm f)}".into())),
        ("git status $((1+2))", Construct::Arithmetic),
        ("git status $'\\x41'", Construct::AnsiCQuote),
        ("git status <(rm f)", Construct::ProcessSubstitution),
        ("git status > out", Construct::OutputRedirection(">out".into())),
        ("git status >> out", Construct::OutputRedirection(">>out".into())),
        ("git status &> out", Construct::OutputRedirection("&>out".into())),
        ("git status >& out", Construct::OutputRedirection(">&out".into())),
        ("git status <> out", Construct::ReadWrite("<>out".into())),
        ("git status <<< x", Construct::HereString),
        ("X=1 git status", Construct::Assignment("X=1".into())),
        ("> f", Construct::NoCommand),
        ("cat <<EOF\nx\nEOF", Construct::HereDocument),
    ] {
        let s = parse(cmd);
        let got = s.structure.clone().or_else(|| s.top().find_map(Command::construct));
        assert_eq!(got, Some(want), "{cmd:?}: {s:?}");
    }
    for (cmd, want) in [
        ("git status # it's fine", Construct::Comment),
        ("git status &", Construct::Background),
        ("(git status)", Construct::Compound("a subshell `( … )`")),
        ("{ git status; }", Construct::Compound("a group `{ …; }`")),
        ("f() { git status; }", Construct::Function),
        ("time git status", Construct::Time),
        ("git status\r", Construct::ControlCharacter),
        ("", Construct::Empty),
        ("  \n ", Construct::Empty),
    ] {
        assert_eq!(parse(cmd).structure, Some(want), "{cmd:?}");
    }
}

#[test]
fn nested_commands_are_found() {
    let s = parse("echo $(a; b `c`) \"${x:-$(d)}\" <(e) >(f) && (g) && { h; } && if i; then j; fi\ncat <<E\n$(k)\nE");
    let names: Vec<&str> = s.commands.iter().filter_map(|c| c.words.first()?.lit.as_deref()).collect();
    for n in ["echo", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "cat"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    assert_eq!(s.top().count(), 2, "only echo and cat are top-level");
    // a quoted here-document tag: the body is text
    let s = parse("cat <<'E'\n$(k)\nE");
    assert_eq!(s.commands.len(), 1);
}

#[test]
fn what_cannot_be_known_is_opaque() {
    for cmd in [
        "x='a[$(rm f)]'; echo $((x))",
        "echo ${!x}",
        "echo ${x@P}",
        "echo ${a[i]}",
        "((x))",
        "[[ $x -eq 1 ]]",
        "a[$i]=1 cmd",
        "echo 'unterminated",
        "echo $(",
        "ls ~+99999999999999999999999",
        "if then fi",
    ] {
        assert!(parse(cmd).opaque.is_some(), "{cmd:?}: {:?}", parse(cmd));
    }
    for cmd in ["echo $((1 + 0x1f * 2#10))", "[[ 1 -eq 1 ]]", "echo ${x:-default}"] {
        assert_eq!(parse(cmd).opaque, None, "{cmd:?}");
    }
}

#[test]
fn brush_and_bash_disagreements_fail_closed() {
    // brush reads `\$'` / `$$'` as ANSI-C quoting; bash does not, and runs `rm f`.
    for cmd in ["echo \\$'\\'\\'\nrm f\n'", "echo $$'\\'' ; rm f ; '", "echo \\$'\\' ; rm f ; '\\''"] {
        let s = parse(cmd);
        assert!(s.opaque.is_some(), "{cmd:?}: {s:?}");
        assert!(s.structure.is_some());
    }
    // brush reads `( ( true ) )` (two subshells to bash) as an arithmetic command: opaque.
    assert!(parse("( ( true ) )").opaque.is_some());
    // A comment that brush and bash both end at the newline: the next line is a command.
    let s = parse("git status # ' \nrm f");
    assert_eq!(s.structure, Some(Construct::Comment));
    assert!(s.commands.iter().any(|c| c.words[0].lit.as_deref() == Some("rm")));
}

#[test]
fn deep_or_huge_input_is_refused_not_crashed() {
    let deep = format!("echo {}x{}", "$(".repeat(200), ")".repeat(200));
    assert_eq!(parse(&deep).opaque, Some(Construct::TooComplex));
    let ifs = format!("{}true{}", "if true; then ".repeat(100), "; fi".repeat(100));
    assert_eq!(parse(&ifs).opaque, Some(Construct::TooComplex));
    let long = "a ".repeat(MAX_LEN);
    assert_eq!(parse(&long).opaque, Some(Construct::TooComplex));
    assert!(parse("echo a\0b").opaque.is_some());
}

#[test]
fn the_deepest_accepted_input_parses_on_a_small_stack() {
    // Runtime worker threads have 2 MiB stacks; nesting just under the
    // limits must parse there (in a debug build, the worst case).
    let inputs = [
        format!("echo {}x{}", "\"$(echo ".repeat(MAX_DEPTH), ")\"".repeat(MAX_DEPTH)),
        format!("echo {}x{}", "${x:-".repeat(MAX_NESTING - 1), "}".repeat(MAX_NESTING - 1)),
        format!("{}true{}", "if true; then ".repeat(MAX_NESTING - 1), "; fi".repeat(MAX_NESTING - 1)),
        format!("{}true{}", "{ ".repeat(MAX_NESTING - 1), "; }".repeat(MAX_NESTING - 1)),
    ];
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || inputs.iter().map(|i| parse(i).opaque.is_none()).collect::<Vec<_>>())
        .unwrap();
    assert_eq!(handle.join().unwrap(), [true, true, true, true]);
}

#[test]
fn arithmetic_constants() {
    assert!(arith_is_constant("1 + 2 * (3 - 0x1f) % 2#101"));
    for e in ["x", "1+y", "$x", "a[1]", "`c`", "_", "1 + $(c)"] {
        assert!(!arith_is_constant(e), "{e}");
    }
}
