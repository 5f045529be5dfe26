//! Continuing a suspended block: its recorded prefix answered from the log,
//! the calls that waited for input run live, then the rest recorded.

use super::*;

/// A suspended block continued: its recording answers the guest (and is
/// recorded again, into the continuing block) until it is used up, except
/// the calls that waited for input, which run live now; then everything is
/// live and recorded. Calls the recording started but never completed
/// (other than the waiting ones) are answered `outcome_unknown`, never run.
pub(super) struct Continuing {
    pub(super) cursor: Cursor,
    pub(super) rec: Recording,
    /// Call indices that run live although the recording has their intent.
    pub(super) live: std::collections::BTreeSet<u32>,
    /// Replayed calls whose completion has not been delivered yet.
    pub(super) replayed: std::collections::BTreeSet<u32>,
}

impl Continuing {
    /// A clock read or random draw: the recorded value (`recorded`, the
    /// next event's) again, re-recorded; past the recording a live one,
    /// recorded; anything else at this point is drift (then live).
    fn value<T>(
        &mut self,
        recorded: Option<T>,
        what: &str,
        host: &mut dyn TapeHost,
        live: impl FnOnce(&mut Recording, &mut dyn TapeHost) -> T,
    ) -> T {
        if let Some(v) = recorded {
            if let Some(event) = self.cursor.next() {
                let _ = self.rec.record(event, false, host);
            }
            return v;
        }
        if !self.cursor.is_exhausted() {
            self.cursor.diverge(None, what.into());
        }
        live(&mut self.rec, host)
    }

    fn drift(&mut self, call: Option<u32>, actual: String, host: &mut dyn TapeHost) -> Next {
        self.cursor.diverge(call, actual);
        host.stop(StopReason::Cancelled);
        Next::Answer(Some(types::Completion::Interrupted))
    }
}

impl Deck for Continuing {
    fn call_starts(&mut self, tool: &str, input: &str, intent: &dyn Fn() -> Intent, host: &mut dyn TapeHost) -> Start {
        if self.cursor.divergence.is_some() {
            return Start::Refused(call_error(
                FailureKind::ReplayDrift,
                format!("continuation drift: this block left its recording earlier; {tool} was not run"),
            ));
        }
        if self.cursor.is_exhausted() {
            return self.rec.call_starts(tool, input, intent, host);
        }
        let index = self.cursor.next_call_index();
        self.rec.calls = index + 1;
        let recorded = match self.cursor.peek() {
            Some(Event::Call { tool: t, input: i, .. }) if t == tool && i == input => self.cursor.next(),
            _ => None,
        };
        let Some(intent) = recorded else {
            self.cursor.diverge(Some(index), format!("call of {tool}"));
            return Start::Refused(call_error(
                FailureKind::ReplayDrift,
                format!(
                    "continuation drift: when this block was suspended it did not make call #{index} ({tool}) with \
                     this input here; nothing was run"
                ),
            ));
        };
        if let Err(e) = self.rec.record(intent, true, host) {
            return Start::Refused(call_error(
                FailureKind::LogFailure,
                format!("the call was not run because its intent could not be written to the replay log: {e}"),
            ));
        }
        if self.live.contains(&index) {
            return Start::Run { index };
        }
        if let Some(Event::Refused { call, .. }) = self.cursor.peek() {
            if *call == index {
                let Some(refused @ Event::Refused { .. }) = self.cursor.next() else { unreachable!() };
                let Event::Refused { error_kind, message, .. } = refused.clone() else { unreachable!() };
                let _ = self.rec.record(refused, false, host);
                return Start::Refused(recorded_error(&error_kind, message));
            }
        }
        self.replayed.insert(index);
        Start::Replayed { index }
    }

    fn call_refused(&mut self, index: u32, error: &types::CallError, host: &mut dyn TapeHost) {
        self.rec.call_refused(index, error, host);
    }

    fn call_done(&mut self, index: u32, outcome: &Result<String, types::CallError>, host: &mut dyn TapeHost) {
        self.rec.call_done(index, outcome, host);
    }

    fn timer_fired(&mut self, id: u32, host: &mut dyn TapeHost) {
        self.rec.timer_fired(id, host);
    }

    fn now(&mut self, host: &mut dyn TapeHost) -> f64 {
        let recorded = match self.cursor.peek() {
            Some(Event::Now { us }) => Some(*us),
            _ => None,
        };
        self.value(recorded, "a clock read", host, |rec, host| rec.now(host))
    }

    fn random(&mut self, host: &mut dyn TapeHost) -> u64 {
        let recorded = match self.cursor.peek() {
            Some(Event::Random { value }) => Some(*value),
            _ => None,
        };
        self.value(recorded, "a random draw", host, |rec, host| rec.random(host))
    }

    fn next_completion(&mut self, host: &mut dyn TapeHost) -> Next {
        if host.interrupted() {
            return Next::Answer(Some(types::Completion::Interrupted));
        }
        if self.cursor.divergence.is_some() {
            return self.drift(None, "waiting for a completion".into(), host);
        }
        match self.cursor.peek() {
            Some(Event::Done { call, .. }) => {
                let call = *call;
                if self.live.contains(&call) || !self.replayed.contains(&call) {
                    return self.drift(Some(call), "a completion of a call that was not started".into(), host);
                }
                let Some(id) = host.call_id(call) else {
                    return self.drift(Some(call), "a completion of a call that was not started".into(), host);
                };
                let Some(done) = self.cursor.next() else { unreachable!() };
                let Event::Done { ok, payload, error_kind, .. } = done.clone() else { unreachable!() };
                let _ = self.rec.record(done, false, host);
                host.settle(id);
                self.replayed.remove(&call);
                let outcome = if ok { Ok(payload) } else { Err(recorded_error(&error_kind, payload)) };
                Next::Answer(Some(types::Completion::Call(types::CallDone { id, outcome })))
            }
            Some(Event::Timer { id }) => {
                let id = *id;
                let Some(timer) = self.cursor.next() else { unreachable!() };
                let _ = self.rec.record(timer, false, host);
                host.disarm(id);
                Next::Answer(Some(types::Completion::Timer(id)))
            }
            None => {
                // The recording is used up. Replayed calls it never completed
                // were running when the block was suspended: never re-run them.
                while let Some(index) = self.replayed.pop_first() {
                    let Some(id) = host.call_id(index) else { continue };
                    host.settle(id);
                    self.cursor.unknown.push(index);
                    let outcome = Err(call_error(
                        FailureKind::OutcomeUnknown,
                        "outcome_unknown: this call was running when its block was suspended for input; whether it took effect is unknown, so it was not run again".into(),
                    ));
                    self.rec.call_done(index, &outcome, host);
                    return Next::Answer(Some(types::Completion::Call(types::CallDone { id, outcome })));
                }
                Next::Live
            }
            Some(_) => self.drift(None, "waiting for a completion".into(), host),
        }
    }

    fn finish(self: Box<Self>) -> Option<ReplayObservation> {
        Some(self.cursor.observation())
    }
}
