//! Unit tests of the decks.

use std::sync::Mutex;

use super::*;

/// A host with calls `ids` in flight (id → index) and a console.
#[derive(Default)]
struct FakeHost {
    stop: Option<StopReason>,
    notes: String,
    calls: Vec<(u32, u32)>,
    timers: Vec<u32>,
}

impl TapeHost for FakeHost {
    fn stopping(&self) -> bool {
        self.stop.is_some()
    }
    fn stop(&mut self, reason: StopReason) {
        self.stop.get_or_insert(reason);
    }
    fn note(&mut self, text: &str) {
        self.notes.push_str(text);
    }
    fn interrupted(&mut self) -> bool {
        self.stop.is_some()
    }
    fn live_now(&mut self) -> f64 {
        7.0
    }
    fn live_random(&mut self) -> u64 {
        9
    }
    fn call_id(&self, index: u32) -> Option<u32> {
        self.calls.iter().find(|(_, i)| *i == index).map(|(id, _)| *id)
    }
    fn oldest_call(&self) -> Option<u32> {
        self.calls.iter().map(|(id, _)| *id).min()
    }
    fn settle(&mut self, id: u32) -> u32 {
        let at = self.calls.iter().position(|(i, _)| *i == id);
        at.map(|at| self.calls.remove(at).1).unwrap_or(u32::MAX)
    }
    fn timers_armed(&self) -> bool {
        !self.timers.is_empty()
    }
    fn disarm(&mut self, id: u32) {
        self.timers.retain(|t| *t != id);
    }
}

/// Keeps (event, durable); fails every write when `fail`.
#[derive(Default)]
struct Log {
    events: Mutex<Vec<(Event, bool)>>,
    fail: bool,
}

impl Recorder for Log {
    fn record(&self, event: Event, durable: bool) -> Result<(), RecordError> {
        if self.fail {
            return Err(RecordError::Storage("disk full".into()));
        }
        self.events.lock().unwrap().push((event, durable));
        Ok(())
    }
}

fn intent(fingerprint: &str, durable: bool) -> Intent {
    Intent { fingerprint: fingerprint.into(), durable }
}

fn call(tool: &str) -> Event {
    Event::Call { tool: tool.into(), input: "{}".into(), schema: String::new(), at_ms: None }
}

#[test]
fn recording_writes_the_intent_durably_and_refuses_when_it_cannot() {
    let log = Arc::new(Log::default());
    let mut deck = load(Tape::Record(log.clone()));
    let mut host = FakeHost::default();
    let start = deck.call_starts("t", "{}", &|| intent("fp", true), &mut host);
    assert!(matches!(start, Start::Run { index: 0 }));
    // A read's intent is not forced to disk; it goes with the next durable event.
    let start = deck.call_starts("r", "{}", &|| intent("fr", false), &mut host);
    assert!(matches!(start, Start::Run { index: 1 }));
    let events = log.events.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![
            (Event::Call { tool: "t".into(), input: "{}".into(), schema: "fp".into(), at_ms: Some(0.0) }, true),
            (Event::Call { tool: "r".into(), input: "{}".into(), schema: "fr".into(), at_ms: Some(0.0) }, false)
        ]
    );

    let mut deck = load(Tape::Record(Arc::new(Log { fail: true, ..Log::default() })));
    let Start::Refused(e) = deck.call_starts("t", "{}", &|| intent("", true), &mut host) else { panic!("ran") };
    assert_eq!(e.kind, "log-failure");
    assert_eq!(
        e.message,
        "the call was not run because its intent could not be written to the replay log: the session log could not be written: disk full"
    );
}

#[test]
fn the_event_limit_stops_the_evaluation_once_with_a_note() {
    let log = Arc::new(Log::default());
    let mut deck = Recording { recorded: MAX_RECORDED_EVENTS - 1, ..Recording::new(log.clone()) };
    let mut host = FakeHost::default();
    assert_eq!(deck.now(&mut host), 7.0);
    assert!(host.stop.is_none());
    assert_eq!(deck.random(&mut host), 9);
    assert_eq!(host.stop, Some(StopReason::Cancelled));
    deck.timer_fired(1, &mut host);
    assert_eq!(host.notes.matches("replay log limit").count(), 1);
    assert_eq!(log.events.lock().unwrap().len(), 1);
    let Start::Refused(e) = deck.call_starts("t", "{}", &|| intent("", true), &mut host) else { panic!("ran") };
    assert_eq!(e.kind, "log-failure");
}

#[test]
fn the_byte_limit_stops_the_evaluation_before_the_input_is_written() {
    let log = Arc::new(Log::default());
    let mut deck = Recording { bytes: MAX_RECORDED_BYTES - 100, ..Recording::new(log.clone()) };
    let mut host = FakeHost::default();
    // A call whose input fits is written, and runs.
    let input = "x".repeat(80);
    assert!(matches!(deck.call_starts("t", &input, &|| intent("", true), &mut host), Start::Run { index: 0 }));
    assert!(host.stop.is_none());
    // One that does not is refused before anything is written.
    let Start::Refused(e) = deck.call_starts("t", &input, &|| intent("", true), &mut host) else { panic!("ran") };
    assert_eq!(e.kind, "log-failure");
    assert!(e.message.contains("1024 MiB"), "{}", e.message);
    assert_eq!(host.stop, Some(StopReason::Cancelled));
    assert_eq!(host.notes.matches("replay log limit of 1024 MiB").count(), 1);
    assert_eq!(log.events.lock().unwrap().len(), 1);
    // Events with no text (the clock) are still written while it stops.
    assert_eq!(deck.now(&mut host), 7.0);
    assert_eq!(log.events.lock().unwrap().len(), 2);
}

#[test]
fn off_asks_for_no_fingerprint() {
    let mut deck = load(Tape::Off);
    let mut host = FakeHost::default();
    let start = deck.call_starts("t", "{}", &|| panic!("fingerprint asked"), &mut host);
    assert!(matches!(start, Start::Run { index: 0 }));
    assert!(matches!(deck.next_completion(&mut host), Next::Live));
    assert!(deck.finish().is_none());
}

#[test]
fn replay_marks_a_call_with_another_input_as_drift() {
    let mut deck = load(Tape::Replay(vec![call("a")]));
    let mut host = FakeHost::default();
    let Start::Refused(e) = deck.call_starts("a", r#"{"x":1}"#, &|| intent("", true), &mut host) else { panic!("ran") };
    assert_eq!(e.kind, "replay-drift");
    assert!(e.message.contains("recorded with another input"), "{}", e.message);
    let seen = deck.finish().expect("replay observes");
    let d = seen.divergence.expect("a divergence");
    assert_eq!((d.call, d.actual.as_str()), (Some(0), "call of a with another input"));
}

#[test]
fn replay_answers_from_the_recording_and_marks_drift() {
    let refused = Event::Refused { call: 1, error_kind: "denied".into(), message: "no".into() };
    let done = Event::Done { call: 0, ok: true, payload: "1".into(), error_kind: String::new(), ms: None };
    let events = vec![call("a"), call("b"), refused, Event::Now { us: 3.0 }, done, call("c")];
    let mut deck = load(Tape::Replay(events));
    let mut host = FakeHost::default();
    assert!(matches!(deck.call_starts("a", "{}", &|| intent("", true), &mut host), Start::Replayed { index: 0 }));
    host.calls.push((5, 0));
    let Start::Refused(e) = deck.call_starts("b", "{}", &|| intent("", true), &mut host) else { panic!("ran") };
    assert_eq!((e.kind.as_str(), e.message.as_str()), ("denied", "no"));
    assert_eq!(deck.now(&mut host), 3.0);
    let Next::Answer(Some(types::Completion::Call(d))) = deck.next_completion(&mut host) else { panic!() };
    assert_eq!((d.id, d.outcome.ok()), (5, Some("1".to_string())));
    assert!(host.calls.is_empty());
    assert!(matches!(deck.call_starts("c", "{}", &|| intent("", true), &mut host), Start::Replayed { index: 2 }));
    host.calls.push((6, 2));
    let Next::Answer(Some(types::Completion::Call(d))) = deck.next_completion(&mut host) else { panic!() };
    assert_eq!(d.outcome.unwrap_err().kind, "outcome-unknown");
    assert!(matches!(deck.next_completion(&mut host), Next::Answer(None)));
    let Start::Refused(e) = deck.call_starts("d", "{}", &|| intent("", true), &mut host) else { panic!("ran") };
    assert_eq!(e.kind, "replay-drift");
    let seen = deck.finish().expect("replay observes");
    assert_eq!(seen.unknown, vec![2]);
    let divergence = seen.divergence.expect("diverged");
    assert_eq!((divergence.position, divergence.call), (6, Some(3)));
    assert_eq!(divergence.actual, "call of d");
    assert!(host.stop.is_none());
}

#[test]
fn a_continuation_replays_the_prefix_runs_the_waiting_call_and_records_the_whole_block() {
    // Recorded: a (done), b (ran when the block stopped: no outcome), c (waiting for input).
    let done = Event::Done { call: 0, ok: true, payload: "1".into(), error_kind: String::new(), ms: None };
    let prefix = vec![call("a"), Event::Random { value: 4 }, done.clone(), call("b"), call("c")];
    let log = Arc::new(Log::default());
    let mut deck = load(Tape::Continue(Continuation { prefix, live_calls: vec![2], recorder: log.clone() }));
    let mut host = FakeHost::default();
    assert!(matches!(deck.call_starts("a", "{}", &|| intent("", true), &mut host), Start::Replayed { index: 0 }));
    host.calls.push((1, 0));
    assert_eq!(deck.random(&mut host), 4, "randomness comes from the recording");
    let Next::Answer(Some(types::Completion::Call(d))) = deck.next_completion(&mut host) else { panic!() };
    assert_eq!((d.id, d.outcome.ok()), (1, Some("1".to_string())));
    assert!(matches!(deck.call_starts("b", "{}", &|| intent("", true), &mut host), Start::Replayed { index: 1 }));
    host.calls.push((2, 1));
    // The waiting call runs live now.
    assert!(matches!(deck.call_starts("c", "{}", &|| intent("", true), &mut host), Start::Run { index: 2 }));
    host.calls.push((3, 2));
    // The recording is used up: b is answered outcome_unknown (never re-run), then live.
    let Next::Answer(Some(types::Completion::Call(d))) = deck.next_completion(&mut host) else { panic!() };
    assert_eq!((d.id, d.outcome.unwrap_err().kind.as_str()), (2, "outcome-unknown"));
    assert!(matches!(deck.next_completion(&mut host), Next::Live));
    deck.call_done(2, &Ok("\"c\"".into()), &mut host);
    // After the prefix, new calls run live and are recorded.
    assert!(matches!(deck.call_starts("d", "{}", &|| intent("fp", true), &mut host), Start::Run { index: 3 }));
    assert_eq!(deck.now(&mut host), 7.0);
    let seen = deck.finish().expect("a continuation observes");
    assert!(seen.divergence.is_none(), "{:?}", seen.divergence);
    assert_eq!(seen.unknown, vec![1]);
    let events: Vec<Event> = log.events.lock().unwrap().iter().map(|(e, _)| e.clone()).collect();
    let unknown = Event::Done {
        call: 1,
        ok: false,
        payload: "outcome_unknown: this call was running when its block was suspended for input; whether it took effect is unknown, so it was not run again".into(),
        error_kind: "outcome-unknown".into(), ms: None };
    let c_done = Event::Done { call: 2, ok: true, payload: "\"c\"".into(), error_kind: String::new(), ms: None };
    let d = Event::Call { tool: "d".into(), input: "{}".into(), schema: "fp".into(), at_ms: Some(0.0) };
    assert_eq!(
        events,
        vec![
            call("a"),
            Event::Random { value: 4 },
            done,
            call("b"),
            call("c"),
            unknown,
            c_done,
            d,
            Event::Now { us: 7.0 }
        ]
    );
}

#[test]
fn a_continuation_that_leaves_its_recording_runs_nothing_more() {
    let prefix = vec![call("a"), call("c")];
    let log = Arc::new(Log::default());
    let mut deck = load(Tape::Continue(Continuation { prefix, live_calls: vec![1], recorder: log }));
    let mut host = FakeHost::default();
    // Another input than recorded: drift, refused.
    let Start::Refused(e) = deck.call_starts("a", "{\"x\":1}", &|| intent("", true), &mut host) else { panic!("ran") };
    assert_eq!(e.kind, "replay-drift");
    // Nothing after the drift runs, not even the waiting call.
    let Start::Refused(e) = deck.call_starts("c", "{}", &|| intent("", true), &mut host) else { panic!("ran") };
    assert_eq!(e.kind, "replay-drift");
    assert!(matches!(deck.next_completion(&mut host), Next::Answer(Some(types::Completion::Interrupted))));
    assert!(deck.finish().unwrap().divergence.is_some());
}
