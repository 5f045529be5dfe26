//! What calls leave behind: their records (the `tool_use`/`tool_result`
//! pairs of a transcript) and media, with the caps that keep an
//! evaluation's records bounded whatever the tools return.

use serde::Serialize;
use serde_json::{json, Value};

use crate::runtime::CallFailure;
use crate::tools::Media;

/// Most images kept per evaluation.
pub const MAX_IMAGES: usize = 8;
/// Most PDFs kept per evaluation.
pub const MAX_PDFS: usize = 4;

/// One completed (or refused) inner call, for the transcript and replay.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// Tool-use id (`toolu_…`).
    pub id: String,
    /// Tool name.
    pub tool: String,
    /// The input that actually ran (after hook rewrites).
    pub input: Value,
    /// True when the call succeeded.
    pub ok: bool,
    /// The value the script received, or the error.
    pub output: Value,
    /// Text rendering (the tool_result content).
    pub text: String,
    /// Milliseconds from start to completion.
    pub duration_ms: f64,
}

/// What an evaluation's inner calls left behind.
#[derive(Debug, Clone, Default)]
pub struct EvalCalls {
    /// Completed and refused calls, in completion order (at most what
    /// [`MAX_RECORDS_MEMORY`] holds; see `omitted`).
    pub records: Vec<CallRecord>,
    /// Images and PDFs returned by tools (capped: 8 images, 4 PDFs).
    pub media: Vec<Media>,
    /// Warnings for the evaluation's stderr (hook problems, dropped media,
    /// omitted records): at most [`MAX_WARNINGS`] from the calls, each cut
    /// to [`MAX_WARNING_BYTES`], then the counts of what was left out.
    pub warnings: Vec<String>,
    /// Warnings from calls that came after `warnings` held [`MAX_WARNINGS`].
    pub dropped_warnings: usize,
    /// Bytes of output, text and input held verbatim by `records` so far.
    pub(super) record_bytes: usize,
    /// Host memory `records` is counted for so far (see [`RECORD_OVERHEAD_BYTES`]).
    pub(super) held: usize,
    /// Calls that finished after `records` reached [`MAX_RECORDS_MEMORY`]:
    /// the script received their results, and the transcript only counts them.
    pub omitted: usize,
}

impl EvalCalls {
    /// Keep the record of a finished call within the evaluation's budgets:
    /// its output, text and input verbatim while they fit, previews when they
    /// do not, and no record at all once the records hold
    /// [`MAX_RECORDS_MEMORY`] (then the call is only counted). `output_json`
    /// is the JSON text of `record.output`. A script can make a great many
    /// calls with large inputs within its budget; what the host keeps of
    /// them stays bounded.
    pub(super) fn push_record(&mut self, record: CallRecord, output_json: &str) {
        if self.held >= MAX_RECORDS_MEMORY {
            self.omitted += 1;
            return;
        }
        let CallRecord { id, tool, input, ok, output, text, duration_ms } = record;
        let (output, output_bytes, text) = bounded_record(self.record_bytes, output_json, output, text);
        self.record_bytes += output_bytes + text.len();
        let (input, input_bytes) = bounded_input(self.record_bytes, input);
        self.record_bytes += input_bytes;
        self.held += RECORD_OVERHEAD_BYTES + id.len() + tool.len() + output_bytes + text.len() + input_bytes;
        self.records.push(CallRecord { id, tool, input, ok, output, text, duration_ms });
    }

    /// Keep a warning from a call within the evaluation's budget: cut to
    /// [`MAX_WARNING_BYTES`], and only counted once `warnings` holds
    /// [`MAX_WARNINGS`]. A hook that warns (or blocks with a long reason) on
    /// every call of a long script cannot grow the host without bound.
    pub(super) fn push_warning(&mut self, w: String) {
        if self.warnings.len() >= MAX_WARNINGS {
            self.dropped_warnings += 1;
            return;
        }
        let w = if w.len() > MAX_WARNING_BYTES {
            format!("{}…[warning cut: {} bytes]", crate::text::prefix(&w, MAX_WARNING_BYTES), w.len())
        } else {
            w
        };
        self.warnings.push(w);
    }

    /// Close the evaluation's warnings: add the counts of the warnings and
    /// the records that were left out, if any (these two go past
    /// [`MAX_WARNINGS`]).
    pub(super) fn close_warnings(&mut self) {
        if self.dropped_warnings > 0 {
            self.warnings.push(format!(
                "{} more warnings from inner calls are not shown: one evaluation keeps at most {MAX_WARNINGS}",
                self.dropped_warnings
            ));
        }
        if self.omitted > 0 {
            self.warnings.push(format!(
                "{} inner calls are not in this result's transcript: the records of one evaluation hold at most {} MiB (the script received every result)",
                self.omitted,
                MAX_RECORDS_MEMORY >> 20
            ));
        }
    }
}

/// Most warnings from inner calls one evaluation keeps for its stderr; later
/// ones are only counted.
pub const MAX_WARNINGS: usize = 100;
/// Longest warning kept, in bytes; a longer one is cut and says its length.
pub const MAX_WARNING_BYTES: usize = 4096;

/// Largest output (or input) kept verbatim in one call record.
pub const MAX_RECORD_BYTES: usize = 64 << 10;
/// Total output, text and input bytes kept verbatim in the records of one
/// evaluation; past it, records keep an empty preview.
pub const MAX_RECORDS_BYTES: usize = 8 << 20;
/// Host memory the records of one evaluation may hold, counting each record
/// as [`RECORD_OVERHEAD_BYTES`] plus what it keeps; calls that finish past
/// it get no record.
pub const MAX_RECORDS_MEMORY: usize = 32 << 20;
/// What a record costs the host besides the bytes it keeps: the record
/// itself and the nodes of its two JSON values (a `serde_json` object is a
/// B-tree node of about 600 bytes, however few its keys).
pub const RECORD_OVERHEAD_BYTES: usize = 1536;

/// Keep a record's output within the per-record and per-evaluation caps (the
/// script still received the full value). `used` is what earlier records of
/// the evaluation hold; returns the output to keep, its JSON size and the text.
pub(super) fn bounded_record(used: usize, json: &str, value: Value, text: String) -> (Value, usize, String) {
    let fits = json.len() <= MAX_RECORD_BYTES && used + json.len() + text.len() <= MAX_RECORDS_BYTES;
    if fits && text.len() <= MAX_RECORD_BYTES {
        return (value, json.len(), text);
    }
    let preview = preview_bytes(used);
    let output = truncated(json, preview);
    let output_bytes = output.to_string().len();
    (output, output_bytes, format!("{}…[record truncated: {} bytes]", crate::text::prefix(&text, preview), text.len()))
}

/// Keep a call's input within the same caps as its output: verbatim when
/// its JSON fits, else a preview of it. Returns the input to keep and its
/// JSON size. The size is counted without writing the text out; only an
/// input that does not fit is serialised, for its preview.
fn bounded_input(used: usize, input: Value) -> (Value, usize) {
    let bytes = json_len(&input);
    if bytes <= MAX_RECORD_BYTES && used + bytes <= MAX_RECORDS_BYTES {
        return (input, bytes);
    }
    let kept = truncated(&input.to_string(), preview_bytes(used));
    let kept_bytes = json_len(&kept);
    (kept, kept_bytes)
}

/// How much of a value that does not fit a record is kept as its preview:
/// 4 KiB while the evaluation's verbatim budget lasts, nothing after.
fn preview_bytes(used: usize) -> usize {
    if used < MAX_RECORDS_BYTES {
        4096
    } else {
        0
    }
}

/// What a record keeps of a value too large for it.
fn truncated(json: &str, preview: usize) -> Value {
    json!({"truncated": true, "bytes": json.len(), "preview": crate::text::prefix(json, preview)})
}

/// The length of `v`'s JSON text (as `to_string` writes it), counted
/// without building it.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    // Writing a `Value` cannot fail, and `Count` never does.
    let _ = serde_json::to_writer(&mut n, v);
    n.0
}

pub(super) fn failure_record(id: String, tool: String, input: Value, f: &CallFailure, duration_ms: f64) -> CallRecord {
    let output = json!({"kind": f.kind.as_str(), "message": f.message});
    CallRecord { id, tool, input, ok: false, output, text: f.message.clone(), duration_ms }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(input: Value) -> CallRecord {
        CallRecord {
            id: "toolu_0123456789abcdefghijklmn".into(),
            tool: "t".into(),
            input,
            ok: true,
            output: json!({"i": 1}),
            text: "{\"i\":1}".into(),
            duration_ms: 0.0,
        }
    }

    #[test]
    fn an_input_too_large_for_a_record_keeps_a_preview() {
        let mut calls = EvalCalls::default();
        calls.push_record(record(json!({"content": "x".repeat(100_000)})), r#"{"i":1}"#);
        calls.push_record(record(json!({"content": "small"})), r#"{"i":1}"#);
        let kept = &calls.records[0].input;
        assert_eq!(kept["truncated"], json!(true));
        assert_eq!(kept["bytes"], json!(100_014));
        assert_eq!(kept["preview"].as_str().unwrap().len(), 4096);
        assert_eq!(calls.records[1].input, json!({"content": "small"}));
        assert_eq!(json_len(&calls.records[1].input), r#"{"content":"small"}"#.len());
    }

    #[test]
    fn past_the_verbatim_budget_inputs_keep_no_preview() {
        let mut calls = EvalCalls::default();
        let input = json!({"content": "x".repeat(60_000)});
        // Each fits a record, until the evaluation's verbatim budget is spent
        // (then 4 KiB previews, until those spend it too).
        for _ in 0..(MAX_RECORDS_BYTES / 60_000 + 40) {
            calls.push_record(record(input.clone()), r#"{"i":1}"#);
        }
        assert!(calls.records[0].input == input);
        let last = &calls.records.last().unwrap().input;
        assert_eq!(last["truncated"], json!(true));
        assert!(last["preview"] == json!(""), "{}", json_len(last));
        assert!(calls.record_bytes <= MAX_RECORDS_BYTES + 16_384, "{}", calls.record_bytes);
    }

    #[test]
    fn past_the_memory_ceiling_calls_are_counted_not_kept() {
        let mut calls = EvalCalls::default();
        let made = 100_000;
        for i in 0..made {
            calls.push_record(record(json!({"i": i})), r#"{"i":1}"#);
        }
        let kept = calls.records.len();
        assert!(kept > 10_000 && kept < 30_000, "{kept} records kept");
        assert_eq!(kept + calls.omitted, made);
        assert!(calls.held < MAX_RECORDS_MEMORY + 4 * RECORD_OVERHEAD_BYTES);
        // The first calls keep their records; the transcript says how many it lacks.
        assert_eq!(calls.records[0].input, json!({"i": 0}));
        calls.close_warnings();
        assert_eq!(calls.warnings.len(), 1, "{:?}", calls.warnings);
        let w = &calls.warnings[0];
        assert!(w.starts_with(&format!("{} inner calls are not in", made - kept)), "{w}");
        let mut none = EvalCalls::default();
        none.close_warnings();
        assert!(none.warnings.is_empty());
    }

    #[test]
    fn warnings_are_kept_up_to_a_count_and_a_length_then_counted() {
        let mut calls = EvalCalls::default();
        // A hook that blocks every call with a 1 MiB reason, 5,000 times.
        let long = "r".repeat(1 << 20);
        for _ in 0..5_000 {
            calls.push_warning(format!("PostToolUse hook feedback for t: {long}"));
        }
        assert_eq!(calls.warnings.len(), MAX_WARNINGS);
        assert_eq!(calls.dropped_warnings, 5_000 - MAX_WARNINGS);
        let kept: usize = calls.warnings.iter().map(String::len).sum();
        assert!(kept <= MAX_WARNINGS * (MAX_WARNING_BYTES + 64), "{kept} bytes of warnings kept");
        assert!(
            calls.warnings[0].ends_with(&format!("…[warning cut: {} bytes]", (1 << 20) + 33)),
            "{}",
            &calls.warnings[0][4090..]
        );
        calls.close_warnings();
        assert_eq!(calls.warnings.len(), MAX_WARNINGS + 1);
        assert_eq!(
            calls.warnings.last().unwrap(),
            &format!(
                "{} more warnings from inner calls are not shown: one evaluation keeps at most {MAX_WARNINGS}",
                5_000 - MAX_WARNINGS
            )
        );
        // A short warning is kept as it is.
        let mut calls = EvalCalls::default();
        calls.push_warning("short".into());
        assert_eq!(calls.warnings, ["short"]);
    }
}
