//! A session's log as data for people and tools (`wrepl log export`): its
//! blocks, each with its code, outcome and cost, and each inner call with
//! its tool, input, outcome, start and duration; as JSON lines, or as one
//! self-contained HTML page (inline CSS and script, no network resource)
//! that draws each block's calls on a timeline.

use serde_json::{json, Value};

use super::log::{Event, StoredEvent};

/// How a call ended, as the log says.
fn call_status(ok: bool, error_kind: &str) -> &'static str {
    match (ok, error_kind) {
        (true, _) => "ok",
        (false, "outcome-unknown") => "outcome_unknown",
        (false, "denied") => "denied",
        (false, _) => "error",
    }
}

/// The session as a list of records: one `session` record, then per block a
/// `block` record followed by its `call` records (and a `snapshot` record
/// where the log names one).
pub fn export_records(session: &str, events: &[StoredEvent]) -> Vec<Value> {
    let mut out = vec![json!({"type": "session", "name": session, "events": events.len()})];
    let mut block: Option<Value> = None;
    let mut calls: Vec<Value> = Vec::new();
    let flush = |block: &mut Option<Value>, calls: &mut Vec<Value>, out: &mut Vec<Value>| {
        if let Some(mut b) = block.take() {
            // A call the log never settled: its outcome is unknown.
            for c in calls.iter_mut() {
                if c["status"] == "pending" {
                    c["status"] = json!("outcome_unknown");
                }
            }
            b["calls"] = json!(calls.len());
            out.push(b);
            out.append(calls);
        }
    };
    for e in events {
        match &e.event {
            Event::Begin { code, boundary, .. } => {
                flush(&mut block, &mut calls, &mut out);
                block = Some(json!({"type": "block", "block": e.block, "boundary": boundary, "code": code,
                                    "outcome": "incomplete", "error": null, "cost": null}));
            }
            Event::Call { tool, input, at_ms, .. } => {
                let input = serde_json::from_str::<Value>(input).unwrap_or_else(|_| json!(input));
                calls.push(json!({"type": "call", "block": e.block, "call": calls.len(), "tool": tool,
                                  "input": input, "at_ms": at_ms, "ms": null, "status": "pending",
                                  "decision": null, "output": null, "error_kind": null}));
            }
            Event::Done { call, ok, payload, error_kind, ms } => {
                if let Some(c) = calls.get_mut(*call as usize) {
                    c["status"] = json!(call_status(*ok, error_kind));
                    c["ms"] = json!(ms);
                    c["decision"] = json!(if error_kind == "denied" { "denied" } else { "allowed" });
                    c["output"] = if *ok {
                        serde_json::from_str::<Value>(payload).unwrap_or_else(|_| json!(payload))
                    } else {
                        json!(payload)
                    };
                    if !*ok {
                        c["error_kind"] = json!(error_kind);
                    }
                }
            }
            Event::Refused { call, error_kind, message } => {
                if let Some(c) = calls.get_mut(*call as usize) {
                    c["status"] = json!(if error_kind == "denied" { "denied" } else { "refused" });
                    c["decision"] = json!(if error_kind == "denied" { "denied" } else { "refused" });
                    c["output"] = json!(message);
                    c["error_kind"] = json!(error_kind);
                }
            }
            Event::End { threw, error, stopped, cost } => {
                if let Some(b) = block.as_mut() {
                    b["outcome"] = json!(if *stopped {
                        "stopped"
                    } else if *threw {
                        "threw"
                    } else {
                        "ok"
                    });
                    b["error"] = json!(error);
                    b["cost"] = serde_json::to_value(cost).unwrap_or(Value::Null);
                }
                flush(&mut block, &mut calls, &mut out);
            }
            Event::Suspended { calls: waiting } => {
                if let Some(b) = block.as_mut() {
                    b["outcome"] = json!("suspended");
                    b["waiting"] = json!(waiting);
                }
            }
            Event::Snapshot { digest, bytes, .. } => {
                out.push(json!({"type": "snapshot", "block": e.block, "digest": digest, "bytes": bytes}));
            }
            Event::Takeover { previous } => out.push(json!({"type": "takeover", "previous": previous})),
            _ => {}
        }
    }
    flush(&mut block, &mut calls, &mut out);
    out
}

/// The records as JSON lines.
pub fn export_jsonl(session: &str, events: &[StoredEvent]) -> String {
    let mut s = String::new();
    for r in export_records(session, events) {
        s.push_str(&r.to_string());
        s.push('\n');
    }
    s
}

/// The records as one self-contained HTML page. The data is embedded as
/// JSON (with `<` escaped, so no recorded text can close the script), and
/// the page's script writes it with `textContent` only: nothing recorded is
/// ever parsed as HTML. A content security policy forbids every network
/// resource.
pub fn export_html(session: &str, events: &[StoredEvent]) -> String {
    let data = Value::Array(export_records(session, events)).to_string().replace('<', "\\u003c");
    let title = session.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    PAGE.replace("{{TITLE}}", &title).replace("{{DATA}}", &data)
}

const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>wrepl session {{TITLE}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d1d1f;background:#fafafa}
h1{font-size:1.3em}.summary{color:#555;margin-bottom:1em}
.block{background:#fff;border:1px solid #ddd;border-radius:6px;margin:0 0 1em;padding:.8em 1em}
.block h2{font-size:1em;margin:0 0 .4em}.outcome{font-weight:600;margin-left:.5em}
.ok{color:#1a7f37}.threw,.stopped,.error,.denied,.refused{color:#cf222e}.incomplete,.outcome_unknown,.suspended{color:#9a6700}
pre{background:#f4f4f4;padding:.5em;overflow:auto;max-height:16em;margin:.3em 0}
.timeline{margin:.6em 0}
.call{display:flex;align-items:center;height:1.6em;margin:.2em 0}
.track{position:relative;flex:1;height:1.4em;border-left:1px solid #bbb;background:#f6f8fa}
.bar{position:absolute;top:0;height:1.4em;min-width:3px;border-radius:3px;background:#54aeff}
.bar.error,.bar.denied,.bar.refused{background:#ff8182}.bar.outcome_unknown{background:#d4a72c}
.label{flex:none;width:24em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:.9em}
details{margin:.1em 0 .4em 1em}summary{cursor:pointer;color:#555}
.mark{font-weight:600;margin-left:.4em}
</style></head>
<body>
<h1 id="title"></h1><div class="summary" id="summary"></div><div id="blocks"></div>
<script type="application/json" id="data">{{DATA}}</script>
<script>
"use strict";
const records = JSON.parse(document.getElementById("data").textContent);
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
const fmt = (v) => typeof v === "string" ? v : JSON.stringify(v, null, 2);
const session = records[0];
document.getElementById("title").textContent = "wrepl session " + session.name;
const blocks = records.filter((r) => r.type === "block");
const calls = records.filter((r) => r.type === "call");
document.getElementById("summary").textContent = blocks.length + " block(s), " + calls.length + " inner call(s), " +
  calls.filter((c) => c.status === "outcome_unknown").length + " with an unknown outcome";
const root = document.getElementById("blocks");
for (const b of blocks) {
  const box = el("section", "block"); box.dataset.block = b.block;
  const h = el("h2", null, "block " + b.block + " (" + b.boundary + ")");
  h.append(el("span", "outcome " + b.outcome, b.outcome + (b.error ? ": " + b.error : "")));
  box.append(h);
  box.append(el("pre", "code", b.code));
  if (b.cost) box.append(el("div", "cost", "guest " + (b.cost.guest_cpu_us / 1000).toFixed(1) + " ms, wall " + b.cost.wall_ms.toFixed(1) + " ms, " + b.cost.bytes_in + " bytes in, " + b.cost.bytes_out + " bytes out"));
  const mine = calls.filter((c) => c.block === b.block);
  const span = Math.max(1, b.cost ? b.cost.wall_ms : 0, ...mine.map((c) => (c.at_ms || 0) + (c.ms || 0)));
  const line = el("div", "timeline");
  for (const c of mine) {
    const row = el("div", "call " + c.status); row.dataset.tool = c.tool;
    const label = el("span", "label", "#" + c.call + " " + c.tool + " — " + (c.decision || "?") + ", " + (c.ms == null ? "?" : c.ms.toFixed(1) + " ms"));
    if (c.status !== "ok") label.append(el("span", "mark " + c.status, c.status));
    row.append(label);
    const track = el("div", "track");
    const bar = el("div", "bar " + c.status);
    bar.style.left = (100 * (c.at_ms || 0) / span).toFixed(2) + "%";
    bar.style.width = (100 * (c.ms || 0) / span).toFixed(2) + "%";
    track.append(bar);
    row.append(track);
    line.append(row);
    const d = el("details", "io"); d.append(el("summary", null, "input and output of #" + c.call));
    d.append(el("pre", "input", fmt(c.input))); d.append(el("pre", "output", c.output === null ? "(none)" : fmt(c.output)));
    line.append(d);
  }
  box.append(line);
  root.append(box);
}
document.body.dataset.rendered = "yes";
</script></body></html>
"##;

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(block: u64, seq: u64, event: Event) -> StoredEvent {
        StoredEvent { block, seq, event, hash: String::new() }
    }

    #[test]
    fn records_follow_the_log() {
        let events = vec![
            ev(0, 0, Event::Begin { code: "await sh('ls')".into(), boundary: "main".into(), view: Default::default() }),
            ev(
                0,
                1,
                Event::Call {
                    tool: "Bash".into(),
                    input: r#"{"command":"ls"}"#.into(),
                    schema: String::new(),
                    at_ms: Some(1.0),
                },
            ),
            ev(
                0,
                2,
                Event::Done {
                    call: 0,
                    ok: true,
                    payload: r#"{"stdout":"a"}"#.into(),
                    error_kind: String::new(),
                    ms: Some(4.0),
                },
            ),
            ev(0, 3, Event::Call { tool: "Write".into(), input: "{}".into(), schema: String::new(), at_ms: Some(6.0) }),
            ev(0, 4, Event::Refused { call: 1, error_kind: "denied".into(), message: "no".into() }),
            ev(0, 5, Event::End { threw: true, error: Some("Error: no".into()), stopped: false, cost: None }),
            ev(1, 6, Event::Begin { code: "await t()".into(), boundary: "main".into(), view: Default::default() }),
            ev(1, 7, Event::Call { tool: "t".into(), input: "{}".into(), schema: String::new(), at_ms: None }),
        ];
        let r = export_records("s", &events);
        let kinds: Vec<&str> = r.iter().map(|v| v["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["session", "block", "call", "call", "block", "call"]);
        assert_eq!(r[1]["outcome"], "threw");
        assert_eq!(
            (r[2]["status"].as_str(), r[2]["ms"].as_f64(), r[2]["decision"].as_str()),
            (Some("ok"), Some(4.0), Some("allowed"))
        );
        assert_eq!(r[2]["output"]["stdout"], "a");
        assert_eq!((r[3]["status"].as_str(), r[3]["decision"].as_str()), (Some("denied"), Some("denied")));
        assert_eq!((r[4]["outcome"].as_str(), r[5]["status"].as_str()), (Some("incomplete"), Some("outcome_unknown")));
        // Recorded text cannot close the page's script.
        let hostile = vec![ev(
            0,
            0,
            Event::Begin {
                code: "</script><img src=x onerror=alert(1)>".into(),
                boundary: "b".into(),
                view: Default::default(),
            },
        )];
        let page = export_html("</title>", &hostile);
        assert!(!page.contains("</script><img"), "recorded text is escaped");
        assert!(page.contains("&lt;/title&gt;"));
        assert!(!page.contains("http://") && !page.contains("https://"), "no network resource");
    }
}
