//! What calls leave behind: their records (the `tool_use`/`tool_result`
//! pairs of a transcript) and media, with the caps that keep an
//! evaluation's records bounded whatever the tools return.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{json, Value};

use crate::call::CallFailure;
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
    pub input: RecordJson,
    /// True when the call succeeded.
    pub ok: bool,
    /// The value the script received, or the error.
    pub output: RecordJson,
    /// Text rendering (the tool_result content).
    pub text: String,
    /// Milliseconds from start to completion.
    pub duration_ms: f64,
}

/// The JSON text a record keeps of a value: the value verbatim, or for one
/// too large for the record, `{"truncated": true, "bytes": N, "preview":
/// "…"}` with the first bytes of its text. Kept as text (a fraction of the
/// memory of a parsed value), written out as the value it holds, parsed by
/// [`RecordJson::value`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordJson(String);

impl RecordJson {
    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value the text holds.
    pub fn value(&self) -> Value {
        // serde_json wrote the text from a value the host held (see
        // `trusted`), so it parses, with no depth limit like that value: a
        // tool's output may wrap a value parsed at serde_json's default limit
        // of 128 levels, which that limit would then refuse.
        let mut de = serde_json::Deserializer::from_str(&self.0);
        de.disable_recursion_limit();
        Value::deserialize(&mut de).unwrap_or(Value::Null)
    }

    /// Text serde_json wrote from a value.
    fn trusted(text: String) -> Self {
        Self(text)
    }
}

impl fmt::Display for RecordJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for RecordJson {
    /// The value, parsed as [`RecordJson::value`] parses it: a serde_json
    /// raw value would be parsed again with the depth limit when a record
    /// is turned into a `Value` (as a transcript is).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(s)
    }
}

/// A value's JSON text as far as a record can keep it: written up to
/// [`MAX_RECORD_BYTES`], the rest only counted.
#[derive(Debug)]
pub(super) struct JsonText {
    /// The text, or its first bytes (cut at a character boundary).
    text: String,
    /// The length of the whole text.
    bytes: usize,
}

impl JsonText {
    /// `v`'s JSON text (as `to_string` writes it), without writing out more
    /// of a large value than a record can keep.
    pub(super) fn of(v: &Value) -> Self {
        struct Capped {
            buf: Vec<u8>,
            bytes: usize,
        }
        impl std::io::Write for Capped {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.bytes += b.len();
                let room = MAX_RECORD_BYTES.saturating_sub(self.buf.len());
                self.buf.extend_from_slice(&b[..b.len().min(room)]);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = Capped { buf: Vec::with_capacity(64), bytes: 0 };
        // Writing a `Value` cannot fail, and `Capped` never does.
        let _ = serde_json::to_writer(&mut w, v);
        let text = String::from_utf8(w.buf).unwrap_or_else(|e| {
            let valid = e.utf8_error().valid_up_to();
            let mut b = e.into_bytes();
            b.truncate(valid);
            String::from_utf8(b).unwrap_or_default()
        });
        Self { text, bytes: w.bytes }
    }

    /// Bytes of the whole text.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// JSON text written already: a copy of what a record can keep of it.
    pub(super) fn of_text(json: &str) -> Self {
        Self { text: crate::text::prefix(json, MAX_RECORD_BYTES).to_string(), bytes: json.len() }
    }

    /// JSON text written already, taken whole.
    pub(super) fn whole(json: String) -> Self {
        let bytes = json.len();
        Self { text: json, bytes }
    }

    /// The whole text is here, and a record may keep it (`used` bytes of
    /// the evaluation's verbatim budget are spent).
    fn fits(&self, used: usize) -> bool {
        self.text.len() == self.bytes && self.bytes <= MAX_RECORD_BYTES && used + self.bytes <= MAX_RECORDS_BYTES
    }

    /// What a record keeps: the text, or a preview of it.
    fn kept(self, used: usize) -> RecordJson {
        if self.fits(used) {
            RecordJson::trusted(self.text)
        } else {
            truncated(&self.text, self.bytes, preview_bytes(used))
        }
    }
}

/// A finished (or refused) call, before its record is cut to the budgets.
#[derive(Debug)]
pub(super) struct Finished {
    pub(super) id: String,
    pub(super) tool: String,
    pub(super) input: JsonText,
    pub(super) ok: bool,
    pub(super) output: JsonText,
    pub(super) text: String,
    pub(super) duration_ms: f64,
}

impl Finished {
    /// A call that failed (or was refused) with `f`.
    pub(super) fn failure(id: String, tool: String, input: JsonText, f: &CallFailure, duration_ms: f64) -> Self {
        let output = JsonText::whole(json!({"kind": f.kind.as_str(), "message": f.message}).to_string());
        Self { id, tool, input, ok: false, output, text: f.message.clone(), duration_ms }
    }

    /// The record, within one record's caps and the evaluation's verbatim
    /// budget (`used` bytes of it spent); and the bytes it keeps verbatim.
    fn bounded(self, used: usize) -> (CallRecord, usize) {
        let Finished { id, tool, input, ok, output, text, duration_ms } = self;
        let (output, text) = if output.fits(used + text.len()) && text.len() <= MAX_RECORD_BYTES {
            (RecordJson::trusted(output.text), text)
        } else {
            let preview = preview_bytes(used);
            let cut = format!("{}…[record truncated: {} bytes]", crate::text::prefix(&text, preview), text.len());
            (truncated(&output.text, output.bytes, preview), cut)
        };
        let used_now = used + output.0.len() + text.len();
        let input = input.kept(used_now);
        let kept = output.0.len() + text.len() + input.0.len();
        (CallRecord { id, tool, input, ok, output, text, duration_ms }, kept)
    }

    /// The record of a call on its own (a front call): one record's caps.
    pub(super) fn record(self) -> CallRecord {
        self.bounded(0).0
    }
}

/// What an evaluation's inner calls left behind.
#[derive(Debug, Clone, Default)]
pub struct EvalCalls {
    /// Completed and refused calls, in completion order (at most what
    /// [`MAX_RECORDS_MEMORY`] holds; see `omitted`).
    pub records: Vec<CallRecord>,
    /// The calls' spans, when the evaluation is traced (every call, with no
    /// text: a few dozen bytes each).
    pub spans: Vec<crate::telemetry::CallSpan>,
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
    /// [`MAX_RECORDS_MEMORY`] (then the call is only counted). A script can
    /// make a great many calls with large inputs within its budget; what the
    /// host keeps of them stays bounded.
    pub(super) fn push_record(&mut self, call: Finished) {
        if self.held >= MAX_RECORDS_MEMORY {
            self.omitted += 1;
            return;
        }
        let (record, kept) = call.bounded(self.record_bytes);
        self.record_bytes += kept;
        self.held += RECORD_OVERHEAD_BYTES + record.id.len() + record.tool.len() + kept;
        self.records.push(record);
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
/// What a record costs the host besides the text it keeps: the record in
/// its vector (136 bytes, up to twice that while the vector grows) and the
/// allocations of its strings.
pub const RECORD_OVERHEAD_BYTES: usize = 320;

/// How much of a value that does not fit a record is kept as its preview:
/// 4 KiB while the evaluation's verbatim budget lasts, nothing after.
fn preview_bytes(used: usize) -> usize {
    if used < MAX_RECORDS_BYTES {
        4096
    } else {
        0
    }
}

/// What a record keeps of a value too large for it: its size and the first
/// `preview` bytes of `text` (the beginning of its JSON text).
fn truncated(text: &str, bytes: usize, preview: usize) -> RecordJson {
    RecordJson::trusted(
        json!({"truncated": true, "bytes": bytes, "preview": crate::text::prefix(text, preview)}).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(input: Value) -> Finished {
        Finished {
            id: "toolu_0123456789abcdefghijklmn".into(),
            tool: "t".into(),
            input: JsonText::of(&input),
            ok: true,
            output: JsonText::of_text(r#"{"i":1}"#),
            text: "{\"i\":1}".into(),
            duration_ms: 0.0,
        }
    }

    #[test]
    fn an_input_too_large_for_a_record_keeps_a_preview() {
        let mut calls = EvalCalls::default();
        calls.push_record(record(json!({"content": "x".repeat(100_000)})));
        calls.push_record(record(json!({"content": "small"})));
        let kept = calls.records[0].input.value();
        assert_eq!(kept["truncated"], json!(true));
        assert_eq!(kept["bytes"], json!(100_014));
        assert_eq!(kept["preview"].as_str().unwrap(), format!(r#"{{"content":"{}"#, "x".repeat(4096 - 12)));
        assert_eq!(calls.records[1].input.as_str(), r#"{"content":"small"}"#);
        assert_eq!(calls.records[1].output.as_str(), r#"{"i":1}"#);
        // Written out verbatim, as JSON.
        let out = serde_json::to_value(&calls.records[1]).unwrap();
        assert_eq!(out["input"], json!({"content": "small"}));
        assert_eq!(out["output"], json!({"i": 1}));
    }

    #[test]
    fn a_deeply_nested_output_is_kept_and_written_out_whole() {
        // Deeper than serde_json parses by default (128 levels): a tool may
        // wrap a value that was parsed at the limit.
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!({"a": [deep]});
        }
        let mut calls = EvalCalls::default();
        let mut call = record(json!({"i": 1}));
        call.output = JsonText::of_text(&deep.to_string());
        calls.push_record(call);
        let r = &calls.records[0];
        assert_eq!(r.output.as_str(), deep.to_string());
        assert_eq!(r.output.value(), deep);
        // As JSON text and as a value (the transcript's way): never an error.
        assert_eq!(serde_json::to_value(r).unwrap()["output"], deep);
        assert!(serde_json::to_string(r).unwrap().contains(&deep.to_string()));
    }

    #[test]
    fn the_overhead_counted_per_record_covers_the_record_itself() {
        // A record in a growing vector takes up to twice its size; its
        // strings' allocations come on top.
        let size = std::mem::size_of::<CallRecord>();
        assert_eq!(size, 136);
        assert!(2 * size <= RECORD_OVERHEAD_BYTES, "{size} bytes");
    }

    #[test]
    fn a_value_written_for_a_record_stops_at_its_cap_and_counts_the_rest() {
        // Multi-byte characters across the cut: the kept text stays UTF-8.
        let v = json!({"s": "é".repeat(100_000)});
        let t = JsonText::of(&v);
        assert_eq!(t.bytes, v.to_string().len());
        assert!(t.text.len() <= MAX_RECORD_BYTES && t.text.len() > MAX_RECORD_BYTES - 4);
        assert!(v.to_string().starts_with(&t.text));
        let small = json!({"b": [1, "two", null], "a": {"c": true}});
        let t = JsonText::of(&small);
        assert_eq!((t.text.as_str(), t.bytes), (small.to_string().as_str(), small.to_string().len()));
        assert_eq!(JsonText::of_text(&v.to_string()).text, JsonText::of(&v).text);
    }

    #[test]
    fn past_the_verbatim_budget_inputs_keep_no_preview() {
        let mut calls = EvalCalls::default();
        let input = json!({"content": "x".repeat(60_000)});
        // Each fits a record, until the evaluation's verbatim budget is spent
        // (then 4 KiB previews, until those spend it too).
        for _ in 0..(MAX_RECORDS_BYTES / 60_000 + 40) {
            calls.push_record(record(input.clone()));
        }
        assert_eq!(calls.records[0].input.value(), input);
        let last = calls.records.last().unwrap().input.value();
        assert_eq!(last["truncated"], json!(true));
        assert!(last["preview"] == json!(""), "{last}");
        assert!(calls.record_bytes <= MAX_RECORDS_BYTES + 16_384, "{}", calls.record_bytes);
    }

    #[test]
    fn past_the_memory_ceiling_calls_are_counted_not_kept() {
        let mut calls = EvalCalls::default();
        let made = 200_000;
        for i in 0..made {
            calls.push_record(record(json!({"i": i})));
        }
        let kept = calls.records.len();
        assert!(kept > 50_000 && kept < 150_000, "{kept} records kept");
        assert_eq!(kept + calls.omitted, made);
        assert!(calls.held < MAX_RECORDS_MEMORY + 4 * RECORD_OVERHEAD_BYTES);
        // The first calls keep their records; the transcript says how many it lacks.
        assert_eq!(calls.records[0].input.as_str(), r#"{"i":0}"#);
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
