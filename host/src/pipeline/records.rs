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
    /// Completed and refused calls, in completion order.
    pub records: Vec<CallRecord>,
    /// Images and PDFs returned by tools (capped: 8 images, 4 PDFs).
    pub media: Vec<Media>,
    /// Warnings for the evaluation's stderr (hook problems, dropped media).
    pub warnings: Vec<String>,
    /// Bytes of output and text held by `records` so far.
    pub(super) record_bytes: usize,
}

impl EvalCalls {
    pub(super) fn push_record(&mut self, record: CallRecord, output_bytes: usize) {
        self.record_bytes += output_bytes + record.text.len();
        self.records.push(record);
    }
}

/// Largest output kept verbatim in one call record.
pub const MAX_RECORD_BYTES: usize = 64 << 10;
/// Total output bytes kept verbatim in the records of one evaluation.
pub const MAX_RECORDS_BYTES: usize = 8 << 20;

/// Keep a record's output within the per-record and per-evaluation caps (the
/// script still received the full value). `used` is what earlier records of
/// the evaluation hold; returns the output to keep, its JSON size and the text.
pub(super) fn bounded_record(used: usize, json: &str, value: Value, text: String) -> (Value, usize, String) {
    let fits = json.len() <= MAX_RECORD_BYTES && used + json.len() + text.len() <= MAX_RECORDS_BYTES;
    if fits && text.len() <= MAX_RECORD_BYTES {
        return (value, json.len(), text);
    }
    let cut = |s: &str, n: usize| crate::text::prefix(s, n).to_string();
    let preview = if used < MAX_RECORDS_BYTES { 4096 } else { 0 };
    let output = json!({"truncated": true, "bytes": json.len(), "preview": cut(json, preview)});
    let output_bytes = output.to_string().len();
    (output, output_bytes, format!("{}…[record truncated: {} bytes]", cut(&text, preview), text.len()))
}

pub(super) fn failure_record(id: String, tool: String, input: Value, f: &CallFailure, duration_ms: f64) -> CallRecord {
    let output = json!({"kind": f.kind.as_str(), "message": f.message});
    CallRecord { id, tool, input, ok: false, output, text: f.message.clone(), duration_ms }
}
