//! The REPL transform and sealed-import scan (`wrepl::source::prepare`) on
//! arbitrary input. Invariants (all true of the current design):
//! - never panics (a panic or stack overflow is a crash);
//! - the same input always gets the same answer;
//! - the size limit is exact: longer than `max_bytes` → `TooLarge`, never otherwise;
//! - accepted code keeps its line count (edits are same-line splices) and is a
//!   fixed point: preparing the output again returns it unchanged (or, under
//!   a nesting limit below 16, refuses it for at most the two operator
//!   tokens a `let x` → `var x = void 0` rewrite adds);
//! - code without the words `import`, `export`, `require` and without `\`
//!   (no unicode-escaped identifiers) is never rejected as sealed;
//! - reported positions are inside the code (1-based line ≤ lines, column ≥ 1).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wrepl::{source::prepare, source::ScriptLimits, source::ScriptRejected};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the limits (small ones exercise the limit paths),
    // the rest is the code: valid UTF-8 as is, anything else made lossy.
    let Some((&knob, rest)) = data.split_first() else { return };
    let code = String::from_utf8_lossy(rest);
    // oxc's parser has a debug assertion (`comment.is_pure()`, its trivia
    // builder) that annotation comments in odd places trip. wrepl catches
    // that panic and refuses the code (a unit test covers it; release builds
    // have no such assertion), but libFuzzer aborts on any panic, caught or
    // not, and `cargo fuzz` turns debug assertions on for every crate.
    if code.contains("__PURE__") || code.contains("__NO_SIDE_EFFECTS__") {
        return;
    }
    let limits = ScriptLimits {
        max_bytes: if knob & 1 == 0 { ScriptLimits::default().max_bytes } else { 64 + usize::from(knob) * 8 },
        max_nesting: if knob & 2 == 0 { ScriptLimits::default().max_nesting } else { 1 + usize::from(knob >> 2) },
    };
    let first = prepare(&code, &limits);
    assert_eq!(first, prepare(&code, &limits), "prepare is not deterministic");
    let lines = code.matches('\n').count() + 1;
    match &first {
        Ok(out) => {
            assert!(code.len() <= limits.max_bytes, "accepted code over the size limit");
            assert_eq!(
                out.matches('\n').count() + 1,
                lines,
                "the transform changed the line count:\n{code}\n---\n{out}"
            );
            if out.len() <= limits.max_bytes {
                match prepare(out, &limits) {
                    Ok(again) => assert_eq!(again, *out, "the transform is not a fixed point:\n{code}\n---\n{out}"),
                    // The rewrite of `let x` is `var x = void 0`: two more
                    // operator tokens, which only a tiny nesting limit notices.
                    Err(ScriptRejected::TooDeep { depth, limit, .. }) => assert!(
                        limit < 16 && depth <= limit + 2,
                        "the output nests deeper than the code did:\n{code}\n---\n{out}"
                    ),
                    Err(e) => panic!("the output is refused ({e:?}):\n{code}\n---\n{out}"),
                }
            }
        }
        Err(ScriptRejected::TooLarge { len, limit }) => {
            assert_eq!((*len, *limit), (code.len(), limits.max_bytes));
            assert!(code.len() > limits.max_bytes);
        }
        Err(e) => {
            assert!(code.len() <= limits.max_bytes, "{e:?} for code over the size limit");
            let (line, column) = match e {
                ScriptRejected::Syntax { line, column, .. } | ScriptRejected::Sealed { line, column, .. } => {
                    (*line, *column)
                }
                ScriptRejected::TooDeep { line, depth, limit } => {
                    assert!(depth > limit, "TooDeep at depth {depth} within the limit {limit}");
                    (*line, 1)
                }
                ScriptRejected::TooLarge { .. } => unreachable!(),
            };
            assert!((1..=lines).contains(&line), "{e:?}: line outside the code ({lines} lines)");
            assert!(column >= 1, "{e:?}: column 0");
            if let ScriptRejected::Sealed { .. } = e {
                assert!(
                    ["import", "export", "require", "\\"].iter().any(|w| code.contains(w)),
                    "sealed without any module word: {code:?}"
                );
            }
            assert!(!e.js_name().is_empty());
        }
    }
});
