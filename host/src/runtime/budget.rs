//! Time budgets of one evaluation at work: the script clock that pauses
//! while inner calls are in flight, checked against the evaluation's
//! [`Budget`] and its cancellation token; the [`Watch`] that checks them and
//! latches the first reason to stop.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use crate::budget::Budget;

/// Why the host asked an evaluation to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The script budget (guest execution time) was spent.
    ScriptBudget,
    /// The hard wall clock was reached.
    WallClock,
    /// The caller cancelled the evaluation.
    Cancelled,
}

/// Measures script time: runs while no inner call is in flight.
#[derive(Debug)]
pub(crate) struct ScriptClock {
    used: Duration,
    running_since: Option<Instant>,
    wall_start: Instant,
}

impl ScriptClock {
    pub(crate) fn start() -> Self {
        let now = Instant::now();
        Self { used: Duration::ZERO, running_since: Some(now), wall_start: now }
    }

    /// Stop counting (an inner call started and none was in flight).
    pub(crate) fn pause(&mut self) {
        if let Some(since) = self.running_since.take() {
            self.used += since.elapsed();
        }
    }

    /// Count again (the last in-flight inner call finished).
    pub(crate) fn resume(&mut self) {
        if self.running_since.is_none() {
            self.running_since = Some(Instant::now());
        }
    }

    #[cfg(test)]
    pub(crate) fn is_running(&self) -> bool {
        self.running_since.is_some()
    }

    /// Script time spent so far.
    pub(crate) fn used(&self) -> Duration {
        self.used + self.running_since.map(|s| s.elapsed()).unwrap_or_default()
    }

    /// Wall time since the evaluation started.
    pub(crate) fn wall(&self) -> Duration {
        self.wall_start.elapsed()
    }

    /// Whether a budget is exhausted, and which.
    pub(crate) fn check(&self, budget: &Budget, cancel: &CancellationToken) -> Option<StopReason> {
        if cancel.is_cancelled() {
            Some(StopReason::Cancelled)
        } else {
            // One clock read for both budgets (this runs at every boundary
            // crossing that can stop the guest).
            let now = Instant::now();
            self.check_at(budget, now)
        }
    }

    /// [`ScriptClock::check`]'s budgets (not the cancellation) at `now`.
    fn check_at(&self, budget: &Budget, now: Instant) -> Option<StopReason> {
        let used = self.used + self.running_since.map(|s| now.saturating_duration_since(s)).unwrap_or_default();
        if now.saturating_duration_since(self.wall_start) >= budget.wall {
            Some(StopReason::WallClock)
        } else if used >= budget.script {
            Some(StopReason::ScriptBudget)
        } else {
            None
        }
    }

    /// The earliest instant at which a budget can run out, if the clock keeps
    /// its current state.
    pub(crate) fn next_deadline(&self, budget: &Budget) -> Instant {
        let wall = self.wall_start + budget.wall;
        match self.running_since {
            Some(since) => wall.min(since + budget.script.saturating_sub(self.used)),
            None => wall,
        }
    }
}

/// The running evaluation's budgets: its script clock, limits and
/// cancellation flag, whether an evaluation runs at all, and the first reason
/// to stop (latched with its time, so an overdue guest can be killed).
#[derive(Debug)]
pub(crate) struct Watch {
    pub(crate) clock: ScriptClock,
    budget: Budget,
    cancel: CancellationToken,
    active: bool,
    stop: Option<StopReason>,
    stop_since: Option<Instant>,
}

impl Watch {
    /// No evaluation running yet.
    pub(crate) fn idle() -> Self {
        Self {
            clock: ScriptClock::start(),
            budget: Budget::default(),
            cancel: CancellationToken::new(),
            active: false,
            stop: None,
            stop_since: None,
        }
    }

    /// An evaluation starts under `budget` and `cancel`.
    pub(crate) fn begin(&mut self, budget: Budget, cancel: CancellationToken) {
        self.budget = budget;
        self.cancel = cancel;
        self.clock = ScriptClock::start();
        self.active = true;
        self.stop = None;
        self.stop_since = None;
    }

    /// The evaluation ended.
    pub(crate) fn end(&mut self) {
        self.active = false;
    }

    /// Whether an evaluation is running.
    pub(crate) fn is_active(&self) -> bool {
        self.active
    }

    /// Check budgets; latch the first stop reason.
    pub(crate) fn poll(&mut self) -> Option<StopReason> {
        if self.active && self.stop.is_none() {
            if let Some(r) = self.clock.check(&self.budget, &self.cancel) {
                self.stop = Some(r);
                self.stop_since = Some(Instant::now());
            }
        }
        self.stop
    }

    /// Ask the guest to stop (latched with its time, so the kill path works).
    pub(crate) fn request_stop(&mut self, reason: StopReason) {
        if self.stop.is_none() {
            self.stop = Some(reason);
            self.stop_since = Some(Instant::now());
        }
    }

    /// The latched stop reason, if any.
    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        self.stop
    }

    /// The guest was asked to stop more than `grace` ago and still runs.
    pub(crate) fn overdue(&self, grace: Duration) -> Option<StopReason> {
        match (self.stop, self.stop_since) {
            (Some(r), Some(t)) if t.elapsed() > grace => Some(r),
            _ => None,
        }
    }

    /// The earliest instant at which a budget can run out.
    pub(crate) fn next_deadline(&self) -> Instant {
        self.clock.next_deadline(&self.budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paused_clock_does_not_advance() {
        let mut c = ScriptClock::start();
        c.pause();
        let before = c.used();
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(c.used(), before);
        assert!(!c.is_running());
        c.resume();
        std::thread::sleep(Duration::from_millis(5));
        assert!(c.used() > before);
        assert!(c.wall() >= Duration::from_millis(35));
    }

    #[test]
    fn budgets_are_checked_in_order() {
        let c = ScriptClock::start();
        let cancel = CancellationToken::new();
        let b = Budget { script: Duration::ZERO, wall: Duration::from_secs(60) };
        assert_eq!(c.check(&b, &cancel), Some(StopReason::ScriptBudget));
        cancel.cancel();
        assert_eq!(c.check(&b, &cancel), Some(StopReason::Cancelled));
        let b = Budget { script: Duration::from_secs(60), wall: Duration::ZERO };
        assert_eq!(c.check(&b, &CancellationToken::new()), Some(StopReason::WallClock));
    }
}
