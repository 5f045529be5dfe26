//! The live decks: [`Off`] (neither recorded nor replayed) and [`Recording`]
//! (every answer reported to a recorder, a call's intent before it runs).

use super::*;

/// Live and unrecorded.
#[derive(Debug, Default)]
pub(super) struct Off {
    pub(super) calls: u32,
}

impl Deck for Off {
    fn call_starts(&mut self, _: &str, _: &str, _: &dyn Fn() -> Intent, _: &mut dyn TapeHost) -> Start {
        let index = self.calls;
        self.calls += 1;
        Start::Run { index }
    }
}

/// Live, every boundary event reported to the recorder.
pub(super) struct Recording {
    pub(super) recorder: Arc<dyn Recorder>,
    /// Calls started in this evaluation.
    pub(super) calls: u32,
    /// Events recorded in this evaluation.
    pub(super) recorded: usize,
    /// Bytes of text recorded in this evaluation (see [`Event::text_bytes`]).
    pub(super) bytes: usize,
    /// When each call started (milliseconds into the block), by index.
    pub(super) started: Vec<f64>,
}

impl Recording {
    pub(super) fn new(recorder: Arc<dyn Recorder>) -> Self {
        Self { recorder, calls: 0, recorded: 0, bytes: 0, started: Vec::new() }
    }

    /// Record `event`; past a per-evaluation limit (events or bytes), stop
    /// the evaluation (once, with a note) and record nothing.
    pub(super) fn record(&mut self, event: Event, durable: bool, host: &mut dyn TapeHost) -> Result<(), RecordError> {
        self.recorded += 1;
        let limit = if self.recorded > MAX_RECORDED_EVENTS {
            Some((RecordError::LimitReached(MAX_RECORDED_EVENTS), format!("{MAX_RECORDED_EVENTS} events")))
        } else {
            let bytes = self.bytes.saturating_add(event.text_bytes());
            if bytes > MAX_RECORDED_BYTES {
                Some((RecordError::BytesLimitReached(MAX_RECORDED_BYTES), format!("{} MiB", MAX_RECORDED_BYTES >> 20)))
            } else {
                self.bytes = bytes;
                None
            }
        };
        if let Some((error, what)) = limit {
            if !host.stopping() {
                host.note(&format!(
                    "[wrepl] the replay log limit of {what} per evaluation was reached; the evaluation was stopped\n"
                ));
                host.stop(StopReason::Cancelled);
            }
            return Err(error);
        }
        self.recorder.record(event, durable)
    }
}

impl Deck for Recording {
    fn call_starts(&mut self, tool: &str, input: &str, intent: &dyn Fn() -> Intent, host: &mut dyn TapeHost) -> Start {
        let index = self.calls;
        self.calls += 1;
        // The intent of a call that may change something is durable BEFORE
        // the call runs; without it, no call. A read's is written with the
        // next durable event (a crash before then loses only the read).
        let Intent { fingerprint, durable } = intent();
        let at = host.elapsed_ms();
        self.started.push(at);
        let intent =
            Event::Call { tool: tool.to_string(), input: input.to_string(), schema: fingerprint, at_ms: Some(at) };
        if let Err(e) = self.record(intent, durable, host) {
            return Start::Refused(call_error(
                FailureKind::LogFailure,
                format!("the call was not run because its intent could not be written to the replay log: {e}"),
            ));
        }
        Start::Run { index }
    }

    fn call_refused(&mut self, index: u32, error: &types::CallError, host: &mut dyn TapeHost) {
        let event = Event::Refused { call: index, error_kind: error.kind.clone(), message: error.message.clone() };
        let _ = self.record(event, false, host);
    }

    fn call_done(&mut self, index: u32, outcome: &Result<String, types::CallError>, host: &mut dyn TapeHost) {
        let ms = self.started.get(index as usize).map(|at| (host.elapsed_ms() - at).max(0.0));
        let event = match outcome {
            Ok(json) => Event::Done { call: index, ok: true, payload: json.clone(), error_kind: String::new(), ms },
            Err(e) => {
                Event::Done { call: index, ok: false, payload: e.message.clone(), error_kind: e.kind.clone(), ms }
            }
        };
        let _ = self.record(event, false, host);
    }

    fn timer_fired(&mut self, id: u32, host: &mut dyn TapeHost) {
        let _ = self.record(Event::Timer { id }, false, host);
    }

    fn now(&mut self, host: &mut dyn TapeHost) -> f64 {
        let us = host.live_now();
        let _ = self.record(Event::Now { us }, false, host);
        us
    }

    fn random(&mut self, host: &mut dyn TapeHost) -> u64 {
        let value = host.live_random();
        let _ = self.record(Event::Random { value }, false, host);
        value
    }
}
