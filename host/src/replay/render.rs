//! Rendering a session log for people (`wrepl log show`): each block's code,
//! its inner calls with their inputs and outcomes (clipped to one line), how
//! the block ended, and the calls whose outcome is unknown because the
//! process ended while they ran.

use std::io::Write;

use super::log::{Event, StoredEvent};

/// Characters of a call's input shown before it is clipped.
const INPUT_CHARS: usize = 120;
/// Characters of a result, error or refusal message shown before it is clipped.
const OUTCOME_CHARS: usize = 160;

/// `s` on one line (newlines as `\n`), cut to `n` characters with a trailing
/// `…` when longer.
pub fn clip(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', "\\n");
    if one_line.chars().count() > n {
        format!("{}…", one_line.chars().take(n).collect::<String>())
    } else {
        one_line
    }
}

/// The calls of the latest block: tool and input, and whether each is still
/// waiting for its outcome; `open` until the block's `End`.
#[derive(Default)]
struct Calls {
    calls: Vec<(String, String)>,
    pending: Vec<bool>,
    open: bool,
}

impl Calls {
    /// Mark call `call` settled; its tool and input (empty when the log never
    /// recorded the call).
    fn settle(&mut self, call: u32) -> (String, String) {
        if let Some(p) = self.pending.get_mut(call as usize) {
            *p = false;
        }
        self.calls.get(call as usize).cloned().unwrap_or_default()
    }

    /// Print the calls still pending, each followed by `why`.
    fn pending(&self, why: &str, out: &mut impl Write) -> std::io::Result<()> {
        for (i, p) in self.pending.iter().enumerate() {
            if *p {
                writeln!(out, "  call #{i} {} -> {why}", self.calls[i].0)?;
            }
        }
        Ok(())
    }

    /// Close a block the log never ended: its pending calls are outcome_unknown.
    fn incomplete(&self, out: &mut impl Write) -> std::io::Result<()> {
        self.pending("outcome_unknown (the process ended while it ran)", out)?;
        writeln!(out, "  => incomplete (the process ended during this block)")
    }
}

/// Write `events` (one session's log, in order) as text: a `block N
/// (boundary B):` header with the code as `  | ` lines, one `  call #i` line
/// per delivered or refused call, and `  => ok`, `  => threw …` or
/// `  => incomplete …` when the block ended or the log stops inside it. Events
/// that carry no call or block boundary (clock, random, timers) are not shown.
pub fn render_log(events: &[StoredEvent], out: &mut impl Write) -> std::io::Result<()> {
    let mut block = Calls::default();
    let mut total = crate::runtime::Cost::default();
    let mut costed = 0usize;
    for e in events {
        match &e.event {
            Event::Begin { code, boundary, .. } => {
                if block.open {
                    block.incomplete(out)?;
                }
                block = Calls { open: true, ..Calls::default() };
                writeln!(out, "block {} (boundary {boundary}):", e.block)?;
                for line in code.lines() {
                    writeln!(out, "  | {line}")?;
                }
            }
            Event::Call { tool, input, .. } => {
                block.calls.push((tool.clone(), input.clone()));
                block.pending.push(true);
            }
            Event::Done { call, ok, payload, error_kind, .. } => {
                let (tool, input) = block.settle(*call);
                let outcome = if *ok {
                    clip(payload, OUTCOME_CHARS)
                } else {
                    format!("error {error_kind}: {}", clip(payload, OUTCOME_CHARS))
                };
                writeln!(out, "  call #{call} {tool} {} -> {outcome}", clip(&input, INPUT_CHARS))?;
            }
            Event::Refused { call, error_kind, message } => {
                let (tool, input) = block.settle(*call);
                writeln!(
                    out,
                    "  call #{call} {tool} {} -> refused {error_kind}: {}",
                    clip(&input, INPUT_CHARS),
                    clip(message, OUTCOME_CHARS)
                )?;
            }
            Event::End { threw, error, cost, .. } => {
                if let Some(c) = cost {
                    total.add(c);
                    costed += 1;
                }
                block.open = false;
                block.pending("(not delivered before the block ended)", out)?;
                match (threw, error) {
                    (true, Some(e)) => writeln!(out, "  => threw {e}")?,
                    (true, None) => writeln!(out, "  => threw")?,
                    _ => writeln!(out, "  => ok")?,
                }
            }
            Event::Takeover { previous } => writeln!(out, "lease taken over from {previous}")?,
            Event::Snapshot { digest, bytes, .. } => {
                writeln!(out, "snapshot {} after this block ({bytes} bytes)", &digest[..digest.len().min(12)])?
            }
            Event::Continues { block: b } => writeln!(out, "  (continues suspended block {b})")?,
            Event::Suspended { calls } => {
                let list: Vec<String> = calls.iter().map(|c| format!("#{c}")).collect();
                writeln!(out, "  suspended: call(s) {} wait for the client's input", list.join(", "))?;
            }
            _ => {}
        }
    }
    if block.open {
        block.incomplete(out)?;
    }
    if costed > 0 {
        writeln!(out, "cost of {costed} block(s): {}", describe_cost(&total))?;
    }
    Ok(())
}

/// A cost on one line: times, memory, calls by tool, bytes, fuel.
pub fn describe_cost(c: &crate::runtime::Cost) -> String {
    let calls: u64 = c.calls.values().sum();
    let by_tool: Vec<String> = c.calls.iter().map(|(t, n)| format!("{t} {n}")).collect();
    let mut s = format!(
        "guest {:.1} ms, wall {:.1} ms, peak memory {} KiB, {calls} call(s){}, {} bytes in, {} bytes out",
        c.guest_cpu_us as f64 / 1e3,
        c.wall_ms,
        c.peak_memory_bytes / 1024,
        if by_tool.is_empty() { String::new() } else { format!(" ({})", by_tool.join(", ")) },
        c.bytes_in,
        c.bytes_out
    );
    if let Some(f) = c.fuel {
        s.push_str(&format!(", {f} fuel"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `events` as the store would load them (block numbers as given, seq in order).
    fn stored(events: Vec<(u64, Event)>) -> Vec<StoredEvent> {
        events
            .into_iter()
            .enumerate()
            .map(|(seq, (block, event))| StoredEvent { block, seq: seq as u64, event, hash: String::new() })
            .collect()
    }

    fn begin(code: &str) -> Event {
        Event::Begin { code: code.into(), boundary: "main".into(), view: Default::default() }
    }

    fn call(tool: &str, input: &str) -> Event {
        Event::Call { tool: tool.into(), input: input.into(), schema: String::new(), at_ms: None }
    }

    fn render(events: &[StoredEvent]) -> String {
        let mut out = Vec::new();
        render_log(events, &mut out).expect("writing to a Vec");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn renders_done_refused_and_unknown_calls() {
        let events = stored(vec![
            (0, begin("const r = await t({a: 1});\nawait Bash({command: 'ls'})")),
            (0, call("t", r#"{"a":1}"#)),
            (0, Event::Now { us: 1.0 }),
            (
                0,
                Event::Done { call: 0, ok: true, payload: r#"{"echo":1}"#.into(), error_kind: String::new(), ms: None },
            ),
            (0, call("Bash", r#"{"command":"ls"}"#)),
            (
                0,
                Event::Refused {
                    call: 1,
                    error_kind: "permission-denied".into(),
                    message: "Bash is not allowed".into(),
                },
            ),
            (
                0,
                Event::End {
                    threw: false,
                    error: None,
                    stopped: false,
                    cost: Some(crate::runtime::Cost {
                        guest_cpu_us: 1500,
                        wall_ms: 12.0,
                        peak_memory_bytes: 4 << 20,
                        calls: [("Bash".to_string(), 1), ("t".to_string(), 1)].into(),
                        bytes_in: 40,
                        bytes_out: 30,
                        fuel: None,
                    }),
                },
            ),
            (1, begin("await sleep({ms: 10})")),
            (1, call("sleep", r#"{"ms":10}"#)),
        ]);
        assert_eq!(
            render(&events),
            concat!(
                "block 0 (boundary main):\n",
                "  | const r = await t({a: 1});\n",
                "  | await Bash({command: 'ls'})\n",
                "  call #0 t {\"a\":1} -> {\"echo\":1}\n",
                "  call #1 Bash {\"command\":\"ls\"} -> refused permission-denied: Bash is not allowed\n",
                "  => ok\n",
                "block 1 (boundary main):\n",
                "  | await sleep({ms: 10})\n",
                "  call #0 sleep -> outcome_unknown (the process ended while it ran)\n",
                "  => incomplete (the process ended during this block)\n",
                "cost of 1 block(s): guest 1.5 ms, wall 12.0 ms, peak memory 4096 KiB, 2 call(s) (Bash 1, t 1), 40 bytes in, 30 bytes out\n",
            )
        );
    }

    #[test]
    fn renders_failed_calls_throws_and_interrupted_blocks() {
        let events = stored(vec![
            (0, begin("await fail({})")),
            (0, call("fail", "{}")),
            (
                0,
                Event::Done {
                    call: 0,
                    ok: false,
                    payload: "it failed".into(),
                    error_kind: "tool-error".into(),
                    ms: None,
                },
            ),
            (0, call("hang", "{}")),
            (0, Event::End { threw: true, error: Some("Error: it failed".into()), stopped: false, cost: None }),
            (1, begin("await hang({})")),
            (1, call("hang", "{}")),
            (2, begin("throw 1")),
            (2, Event::End { threw: true, error: None, stopped: true, cost: None }),
        ]);
        assert_eq!(
            render(&events),
            concat!(
                "block 0 (boundary main):\n",
                "  | await fail({})\n",
                "  call #0 fail {} -> error tool-error: it failed\n",
                "  call #1 hang -> (not delivered before the block ended)\n",
                "  => threw Error: it failed\n",
                "block 1 (boundary main):\n",
                "  | await hang({})\n",
                "  call #0 hang -> outcome_unknown (the process ended while it ran)\n",
                "  => incomplete (the process ended during this block)\n",
                "block 2 (boundary main):\n",
                "  | throw 1\n",
                "  => threw\n",
            )
        );
    }

    #[test]
    fn an_empty_log_renders_nothing() {
        assert_eq!(render(&[]), "");
    }

    #[test]
    fn clip_keeps_one_line_and_cuts_long_text() {
        assert_eq!(clip("a\nb", 10), "a\\nb");
        assert_eq!(clip("abcdef", 6), "abcdef");
        assert_eq!(clip("abcdéf", 4), "abcd…");
        let long = "x".repeat(200);
        let rendered = render(&stored(vec![
            (0, begin("")),
            (0, call("t", &long)),
            (0, Event::Done { call: 0, ok: true, payload: long.clone(), error_kind: String::new(), ms: None }),
            (0, Event::End { threw: false, error: None, stopped: false, cost: None }),
        ]));
        let line = rendered.lines().nth(1).expect("the call line");
        assert_eq!(line, format!("  call #0 t {}… -> {}…", "x".repeat(120), "x".repeat(160)));
    }
}
