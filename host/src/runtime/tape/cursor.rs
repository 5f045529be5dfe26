//! A block's recorded events, consumed in order during replay, and how a
//! divergence from them is described.

use std::collections::VecDeque;

use super::{Divergence, Event, ReplayObservation};

/// A block's events, consumed in order during replay.
#[derive(Debug)]
pub(crate) struct Cursor {
    events: VecDeque<Event>,
    position: usize,
    calls: u32,
    /// Calls started during replay whose intent has no recorded outcome.
    pub(crate) unknown: Vec<u32>,
    pub(crate) divergence: Option<Divergence>,
}

pub(crate) fn describe(e: Option<&Event>) -> String {
    match e {
        None => "the end of the recording".into(),
        Some(Event::Call { tool, .. }) => format!("call of {tool}"),
        Some(Event::Done { call, .. }) => format!("completion of call #{call}"),
        Some(Event::Refused { call, .. }) => format!("refusal of call #{call}"),
        Some(Event::Timer { id }) => format!("timer {id}"),
        Some(Event::Now { .. }) => "a clock read".into(),
        Some(Event::Random { .. }) => "a random draw".into(),
        Some(Event::Begin { .. }) => "the start of a block".into(),
        Some(Event::End { .. }) => "the end of the block".into(),
        Some(Event::Takeover { .. }) => "a lease takeover".into(),
        Some(Event::Suspended { .. }) => "a suspension for input".into(),
        Some(Event::Continues { .. }) => "a continuation".into(),
        Some(Event::Snapshot { .. }) => "a snapshot".into(),
    }
}

impl Cursor {
    pub(crate) fn new(events: Vec<Event>) -> Self {
        Self { events: events.into(), position: 0, calls: 0, unknown: Vec::new(), divergence: None }
    }

    pub(crate) fn peek(&self) -> Option<&Event> {
        self.events.front()
    }

    pub(crate) fn next(&mut self) -> Option<Event> {
        let e = self.events.pop_front()?;
        self.position += 1;
        Some(e)
    }

    /// Index the next started call gets.
    pub(crate) fn next_call_index(&mut self) -> u32 {
        let i = self.calls;
        self.calls += 1;
        i
    }

    pub(crate) fn diverge(&mut self, call: Option<u32>, actual: String) {
        if self.divergence.is_none() {
            let expected = describe(self.events.front());
            self.divergence = Some(Divergence { position: self.position, call, expected, actual });
        }
    }

    pub(crate) fn is_exhausted(&self) -> bool {
        self.events.is_empty()
    }

    /// What replay observed, once the block ended (a recording not used up
    /// is a divergence too).
    pub(crate) fn observation(mut self) -> ReplayObservation {
        if self.divergence.is_none() && !self.is_exhausted() {
            self.diverge(None, "the block ended".into());
        }
        ReplayObservation { divergence: self.divergence, unknown: self.unknown }
    }
}
