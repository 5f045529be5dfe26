//! The guest's timers (the `set-timer` and `clear-timer` imports): armed
//! deadlines by id, and the ones due. Firing is delivered (and taped) by
//! `next-completion` in `calls.rs`.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::HostState;

/// Most timers armed at once per sandbox.
pub const MAX_TIMERS: usize = 10_000;

/// The armed timers of one sandbox.
#[derive(Debug, Default)]
pub(super) struct Timers {
    /// Deadlines in order.
    due: BTreeSet<(Instant, u32)>,
    /// The deadline of each armed id.
    at: HashMap<u32, Instant>,
}

impl Timers {
    /// Arm `id` to fire after `delay_ms` (re-arming replaces). False when
    /// [`MAX_TIMERS`] are armed.
    fn arm(&mut self, id: u32, delay_ms: u32) -> bool {
        self.disarm(id);
        if self.at.len() >= MAX_TIMERS {
            return false;
        }
        let at = Instant::now() + Duration::from_millis(u64::from(delay_ms.min(i32::MAX as u32)));
        self.due.insert((at, id));
        self.at.insert(id, at);
        true
    }

    /// Disarm `id`; unknown ids are ignored.
    pub(super) fn disarm(&mut self, id: u32) {
        if let Some(at) = self.at.remove(&id) {
            self.due.remove(&(at, id));
        }
    }

    /// Take the earliest timer due at `now`, if any.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<u32> {
        let first = *self.due.first()?;
        if first.0 > now {
            return None;
        }
        self.due.remove(&first);
        self.at.remove(&first.1);
        Some(first.1)
    }

    /// The earliest deadline, if any timer is armed.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.due.first().map(|(t, _)| *t)
    }

    /// Whether no timer is armed.
    pub(super) fn is_empty(&self) -> bool {
        self.due.is_empty()
    }

    /// Disarm everything (the evaluation ended).
    pub(super) fn clear(&mut self) {
        self.due.clear();
        self.at.clear();
    }
}

impl HostState {
    /// `set-timer`: false outside an evaluation or when too many are armed.
    pub(super) fn arm_timer(&mut self, id: u32, delay_ms: u32) -> bool {
        self.watch.is_active() && self.timers.arm(id, delay_ms)
    }
}
