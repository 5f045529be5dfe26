//! Replaying a recorded block: every import answered from its events, and
//! drift from them reported precisely.

use super::*;

/// Answered from a block's recorded events; nothing runs.
pub(super) struct Replaying {
    pub(super) cursor: Cursor,
}

impl Replaying {
    /// The recording does not continue this way: note the divergence and stop.
    fn drift(&mut self, call: Option<u32>, actual: String, host: &mut dyn TapeHost) -> Next {
        self.cursor.diverge(call, actual);
        host.stop(StopReason::Cancelled);
        Next::Answer(Some(types::Completion::Interrupted))
    }
}

impl Deck for Replaying {
    fn call_starts(&mut self, tool: &str, input: &str, _: &dyn Fn() -> Intent, _: &mut dyn TapeHost) -> Start {
        let c = &mut self.cursor;
        let index = c.next_call_index();
        match c.peek() {
            Some(Event::Call { tool: t, input: i, .. }) if t == tool && i == input => {
                c.next();
            }
            // The same tool with another input: the code, or what it
            // depends on (an imported module's digest), is not what ran.
            Some(Event::Call { tool: t, .. }) if t == tool => {
                c.diverge(Some(index), format!("call of {tool} with another input"));
                return Start::Refused(call_error(
                    FailureKind::ReplayDrift,
                    format!(
                        "replay drift: call #{index} ({tool}) was recorded with another input than this block makes \
                         now; nothing was run"
                    ),
                ));
            }
            _ => {
                c.diverge(Some(index), format!("call of {tool}"));
                // The call fails in the script (at its call site); nothing
                // beyond the recording runs.
                return Start::Refused(call_error(
                    FailureKind::ReplayDrift,
                    format!("replay drift: this block did not make call #{index} ({tool}) when it was recorded; nothing was run"),
                ));
            }
        }
        if let Some(Event::Refused { call, .. }) = c.peek() {
            if *call == index {
                let Some(Event::Refused { error_kind, message, .. }) = c.next() else { unreachable!() };
                return Start::Refused(recorded_error(&error_kind, message));
            }
        }
        Start::Replayed { index }
    }

    fn now(&mut self, host: &mut dyn TapeHost) -> f64 {
        if let Some(Event::Now { us }) = self.cursor.peek() {
            let us = *us;
            self.cursor.next();
            return us;
        }
        self.cursor.diverge(None, "a clock read".into());
        host.live_now()
    }

    fn random(&mut self, host: &mut dyn TapeHost) -> u64 {
        if let Some(Event::Random { value }) = self.cursor.peek() {
            let value = *value;
            self.cursor.next();
            return value;
        }
        self.cursor.diverge(None, "a random draw".into());
        host.live_random()
    }

    fn next_completion(&mut self, host: &mut dyn TapeHost) -> Next {
        if host.interrupted() {
            return Next::Answer(Some(types::Completion::Interrupted));
        }
        match self.cursor.peek() {
            Some(Event::Done { call, .. }) => {
                let call = *call;
                let Some(id) = host.call_id(call) else {
                    return self.drift(Some(call), "a completion of a call that was not started".into(), host);
                };
                let Some(Event::Done { ok, payload, error_kind, .. }) = self.cursor.next() else { unreachable!() };
                host.settle(id);
                let outcome = if ok { Ok(payload) } else { Err(recorded_error(&error_kind, payload)) };
                Next::Answer(Some(types::Completion::Call(types::CallDone { id, outcome })))
            }
            Some(Event::Timer { id }) => {
                let id = *id;
                self.cursor.next();
                host.disarm(id);
                Next::Answer(Some(types::Completion::Timer(id)))
            }
            None => match host.oldest_call() {
                // The recording ends while calls were running: the process
                // died between intent and completion. Never re-run them.
                Some(id) => {
                    let index = host.settle(id);
                    self.cursor.unknown.push(index);
                    Next::Answer(Some(types::Completion::Call(types::CallDone {
                        id,
                        outcome: Err(call_error(
                            FailureKind::OutcomeUnknown,
                            "outcome_unknown: the process that ran this call ended before it completed; whether it took effect is unknown, so it was not run again".into(),
                        )),
                    })))
                }
                None if !host.timers_armed() => Next::Answer(None),
                None => self.drift(None, "waiting for a completion".into(), host),
            },
            Some(_) => self.drift(None, "waiting for a completion".into(), host),
        }
    }

    fn finish(self: Box<Self>) -> Option<ReplayObservation> {
        Some(self.cursor.observation())
    }
}
