//! Unit tests of the transform and the sealed scan.

use super::*;

fn p(code: &str) -> Result<String, ScriptRejected> {
    prepare(code, &ScriptLimits::default())
}

#[test]
fn lexical_declarations_become_var() {
    assert_eq!(p("let x = 41").unwrap(), "var x = 41");
    assert_eq!(p("const a = 1; a").unwrap(), "var a = 1; a");
    assert_eq!(p("let y;").unwrap(), "var y = void 0;");
    assert_eq!(p("let {a, b: [c]} = o, d").unwrap(), "var {a, b: [c]} = o, d = void 0;");
    // A declaration ended by a line break keeps ending there.
    assert_eq!(p("let x /*\n*/ /re/g.test('e')").unwrap(), "var x = void 0; /*\n*/ /re/g.test('e')");
    assert_eq!(p("let a, b\n(f)()").unwrap(), "var a = void 0, b = void 0;\n(f)()");
    assert_eq!(p("class A { m() { return 1 } }\n(1)").unwrap(), "var A = class A { m() { return 1 } };\n(1)");
}

#[test]
fn nested_declarations_are_untouched() {
    let code = "for (let i = 0; i < 3; i++) { const j = i }\n{ let k = 1 }\nfunction f() { let z = 2; class Q {} }";
    assert_eq!(p(code).unwrap(), code);
}

#[test]
fn modules_are_sealed() {
    for code in [
        "import fs from 'fs'",
        "import('x')",
        "const m = await import('x')",
        "export const a = 1",
        "require('fs')",
        "const fs = require('fs')",
        "function f() { return require('child_process') }",
        "import.meta.url",
        "\\u0072equire('fs')",
        "x = 1; \\u0072equ\\u0069re('fs')",
    ] {
        match p(code) {
            Err(ScriptRejected::Sealed { .. }) => {}
            other => panic!("{code:?} should be sealed, got {other:?}"),
        }
    }
    // An escaped keyword is a syntax error, not a way around the seal.
    assert!(p("\\u{69}mport('x')").is_err());
    // The word alone is fine.
    assert!(p("const s = 'import x from y; require(z)'; s").is_ok());
    assert!(p("let imports = 1, required = 2").is_ok());
}

#[test]
fn syntax_errors_have_positions() {
    match p("let x = ;\n") {
        Err(ScriptRejected::Syntax { line: 1, .. }) => {}
        other => panic!("{other:?}"),
    }
    match p("const a = 1\nconst b = (") {
        Err(ScriptRejected::Syntax { line, .. }) => assert!(line >= 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn top_level_await_parses() {
    assert_eq!(p("const r = await f(); r").unwrap(), "var r = await f(); r");
}

#[test]
fn code_with_await_is_parsed_as_the_guest_runs_it() {
    // `await` then a line break is a keyword in the guest's async script:
    // the class below is its operand, an expression, not a declaration
    // (found by fuzzing: the rewrite used to make it `await var D = …`).
    let code = "await\n\nclass D {}\nawait 1";
    assert_eq!(p(code).unwrap(), code);
    assert_eq!(p("let a = await f()\nclass B {}").unwrap(), "var a = await f()\nvar B = class B {};");
    // Sloppy mode stays: `with` is fine in either goal.
    assert!(p("let o = {x: 1}; with (o) { x }; await 0").is_ok());
    assert!(p("let o = {x: 1}; with (o) { x }").is_ok());
    // Module syntax is still sealed, whatever the goal.
    for code in ["import fs from 'fs'; await 1", "await import('x')", "await 0; import.meta.url", "export {}; await 0"]
    {
        assert!(matches!(p(code), Err(ScriptRejected::Sealed { .. })), "{code:?}: {:?}", p(code));
    }
    // The code is the wrapper's whole body: closing it early is an error.
    for code in ["}; class A {}; {", "await 0 }\nasync function g() { let y = 1;"] {
        let code = format!("{code} await 1");
        assert!(matches!(p(&code), Err(ScriptRejected::Syntax { .. })), "{code:?}: {:?}", p(&code));
    }
    // Errors point into the code itself, not into the wrapper.
    match p("await 1\nlet x = ;") {
        Err(ScriptRejected::Syntax { line: 2, column, .. }) => assert!(column > 1),
        other => panic!("{other:?}"),
    }
    match p("let x = ; await 1") {
        Err(ScriptRejected::Syntax { line: 1, column: 9, .. }) => {}
        other => panic!("{other:?}"),
    }
    // A hashbang line stays where it is.
    assert_eq!(p("#!/usr/bin/env wrepl\nconst v = await 2").unwrap(), "#!/usr/bin/env wrepl\nvar v = await 2");
    // TypeScript with top-level await.
    assert_eq!(p("const n: number = await f()").unwrap(), "var n         = await f()");
}

#[test]
fn fuzz_input_with_await_is_refused_in_the_guests_goal() {
    // The input that found the bug: oxc's `unambiguous` re-parse of the
    // `await` lines used to accept it, lose the error at the U+FFFD and
    // rewrite the class.
    let code =
        "cons\n\n\n\n\n\nawait\n\nclass D {}\nD\n\nz\n\nx\nt\n\n\n\n\n\n\n await i\r\r awai\u{fffd}t import('x')";
    match p(code) {
        Err(ScriptRejected::Syntax { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn hostile_nesting_is_refused_not_overflowed() {
    let limits = ScriptLimits::default();
    for code in [
        format!("let a = {}1{}", "(".repeat(200_000), ")".repeat(200_000)),
        format!("let a = {}1", "!".repeat(500_000)),
        format!("let a = {}1", "-".repeat(500_000)),
        format!("let a = {}1", "typeof ".repeat(50_000)),
        format!("let a = {}1{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("let a = {}1{}", "{a:".repeat(100_000), "}".repeat(100_000)),
    ] {
        match prepare(&code, &limits) {
            Err(ScriptRejected::TooDeep { .. }) => {}
            other => panic!("expected TooDeep, got {:?}", other.map(|s| s.len())),
        }
    }
    // Code that needs no rewriting gets the same limit and message.
    for code in [format!("{}1{}", "[".repeat(5000), "]".repeat(5000)), format!("x = {}1}}", "{a:".repeat(5000))] {
        let err = prepare(&code, &limits).unwrap_err();
        assert!(err.to_string().contains("nests") && err.to_string().contains("limit is 1000"), "{err}");
    }
}

#[test]
fn deep_chains_at_the_size_limit_do_not_overflow_the_host() {
    // Chains the pre-scan cannot bound: the parser thread's stack must hold
    // them at the largest accepted size.
    let limits = ScriptLimits::default();
    let max = limits.max_bytes - 16;
    for (unit, tail) in [("a ? b : ", "c"), ("x => ", "1"), ("a + ", "1"), ("a = ", "1"), ("a ** ", "2"), ("a.b", "")] {
        let code = format!("let v = {}{tail}", unit.repeat(max / unit.len()));
        assert!(code.len() <= limits.max_bytes);
        // Accepted or refused, but never a crash.
        let _ = prepare(&code, &limits);
    }
}

#[test]
fn parser_panics_are_refusals() {
    // oxc's debug assertion `comment.is_pure()` fires on this input (found by fuzzing).
    let code = "/* #__PURE__$cs\u{fffd}\u{0}requiexport\u{0}\u{0}\u{10}t\u{a}let/ le* *A\u{0}/* le\u{fffd}\u{fffd}\u{fffd}\u{d}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd} */ x :::::::::::::::::::::::::::::::::::::::::::::::::::::::/* d */ %$ \u{fffd}\u{fffd}\u{fffd}\u{fffd}//m()   { rele% */stte(e1)";
    let limits = ScriptLimits::default();
    let first = prepare(code, &limits);
    assert_eq!(first, prepare(code, &limits));
    if let Err(e) = &first {
        assert!(!e.js_name().is_empty());
    }
}

#[test]
fn long_flat_code_is_fine() {
    let code = format!("let a = 0{}; a", " + 1".repeat(50_000));
    assert!(p(&code).is_ok());
    let code = format!("const xs = [{}]; xs.length", "1,".repeat(100_000));
    assert!(p(&code).is_ok());
}

#[test]
fn prescan_bypass_at_the_size_limit_does_not_overflow() {
    // A quote inside a regex literal makes the pre-scan skip the rest of
    // the line; the parser thread's stack must still hold the nesting.
    let limits = ScriptLimits::default();
    let n = (limits.max_bytes - 64) / 2;
    for (open, close) in [("[", "]"), ("(", ")"), ("{a:", "}")] {
        let k = n / (open.len() + close.len()) * 2 / 2;
        let code = format!("let r = /'/, a = {}1{}; ''", open.repeat(k / 2), close.repeat(k / 2));
        assert!(code.len() <= limits.max_bytes);
        let _ = prepare(&code, &limits);
    }
}

#[test]
fn size_limit() {
    let code = "1;".repeat(300_000);
    assert!(matches!(p(&code), Err(ScriptRejected::TooLarge { .. })));
}
