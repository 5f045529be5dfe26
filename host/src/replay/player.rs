//! Restoring a context from its log (hydration `resume`): every recorded
//! block is re-evaluated in order with every capability answered from the
//! log, so variables come back and no tool runs again; each block gets a
//! verdict. The evaluation itself is the caller's (the REPL's): this module
//! knows the log, not the guest.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::log::{Event, StoredEvent};
use crate::runtime::{Divergence, ReplayObservation, Tape};

/// How a replayed block matched its recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Same calls, same order, same outcome.
    Ok,
    /// The block left its recording (call count, tool order or throw position).
    Drift,
    /// The block threw, as it did when recorded.
    Threw,
}

/// The verdict of one replayed block.
#[derive(Debug, Clone, Serialize)]
pub struct BlockVerdict {
    /// Block number.
    pub block: u64,
    /// The verdict.
    pub verdict: Verdict,
    /// The first divergence, for `drift`.
    pub divergence: Option<Divergence>,
    /// Where in the block's code the divergence surfaced (`line:column`), when known.
    pub location: Option<String>,
    /// Calls whose outcome is unknown (the recording process died while they ran): `#index tool`.
    pub outcome_unknown: Vec<String>,
    /// The block's code (first line).
    pub code: String,
}

impl BlockVerdict {
    /// One line for people: the block, its code, and for a drift where it
    /// left its recording (position, call, what the log has and what the
    /// code did, where in the code); calls whose outcome is unknown.
    pub fn describe(&self) -> String {
        let first = self.code.lines().next().unwrap_or("");
        let code = match first.char_indices().nth(60) {
            Some((cut, _)) => format!("{}…", &first[..cut]),
            None => first.to_string(),
        };
        let mut line = format!("block {} ({code})", self.block);
        match (&self.verdict, &self.divergence) {
            (Verdict::Drift, Some(d)) => {
                let call = d.call.map(|c| format!(", call #{c}")).unwrap_or_default();
                let at = self.location.as_deref().map(|l| format!(" at line:column {l}")).unwrap_or_default();
                line.push_str(&format!(
                    ": drift at event {}{call}: the log has {}, the code made {}{at}",
                    d.position, d.expected, d.actual
                ));
            }
            (Verdict::Drift, None) => line.push_str(": drift"),
            (Verdict::Threw, _) => line.push_str(": threw, as when it was recorded"),
            (Verdict::Ok, _) => line.push_str(": ok"),
        }
        if !self.outcome_unknown.is_empty() {
            line.push_str(&format!(
                "; outcome unknown (the recording process stopped while they ran; not run again): {}",
                self.outcome_unknown.join(", ")
            ));
        }
        line
    }
}

/// What restoring a session found.
#[derive(Debug, Clone, Serialize, Default)]
pub struct RestoreReport {
    /// One verdict per block, in order.
    pub blocks: Vec<BlockVerdict>,
    /// One-line summary.
    pub summary: String,
    /// What else resuming did: a lease takeover, a tampered log set aside,
    /// a snapshot that could not be loaded.
    pub notes: Vec<String>,
    /// The snapshot the context was restored from (the blocks it covers
    /// were not replayed), when one was.
    pub snapshot: Option<String>,
}

/// What re-evaluating one block gave.
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    /// True when the block threw (or was stopped) this time.
    pub threw: bool,
    /// The error's stack, if it threw.
    pub stack: String,
    /// How the block matched its recording.
    pub observation: Option<ReplayObservation>,
}

/// Budget for re-evaluating a block that was stopped when recorded (it is
/// expected to be stopped again, quickly).
const STOPPED_BLOCK_BUDGET: Duration = Duration::from_millis(1000);

/// The recorded body of suspended block `block` (its boundary events,
/// without Begin, End and notes) and the calls that waited for input, to
/// continue it; `None` when the log has no such suspended block.
pub fn suspended_block(events: &[StoredEvent], block: u64) -> Option<(String, Vec<Event>, Vec<u32>)> {
    let mut code = None;
    let mut waiting = None;
    let mut body = Vec::new();
    for e in events.iter().filter(|e| e.block == block) {
        match &e.event {
            Event::Begin { code: c, .. } => code = Some(c.clone()),
            Event::Suspended { calls } => waiting = Some(calls.clone()),
            Event::End { .. } | Event::Takeover { .. } | Event::Continues { .. } | Event::Snapshot { .. } => {}
            other => body.push(other.clone()),
        }
    }
    Some((code?, body, waiting?))
}

/// One recorded block, ready to be re-evaluated.
#[derive(Debug)]
pub struct PlannedBlock {
    /// Block number.
    pub number: u64,
    /// The block's code.
    pub code: String,
    /// How its result was shown when recorded.
    pub view: crate::runtime::View,
    /// The budget to re-evaluate it with.
    pub budget: Duration,
    /// Its recorded events (without Begin/End), to answer every import.
    pub tape: Tape,
    /// How it ended when recorded: (threw, stopped); `None` if it never ended.
    end: Option<(bool, bool)>,
    /// The tools of its calls, in order.
    tools: Vec<String>,
}

/// A session's blocks in order, and the number the next block gets.
#[derive(Debug, Default)]
pub struct Plan {
    /// The blocks to re-evaluate, in order.
    pub blocks: Vec<PlannedBlock>,
    /// The number of the next block recorded.
    pub next_block: u64,
    /// Blocks skipped because they were suspended waiting for the client's
    /// input (a continuation, when one was made, is a later block).
    pub suspended: Vec<u64>,
}

/// Split a session's log into blocks to re-evaluate; `full_budget` is the
/// budget of a block that was not stopped when recorded. A block suspended
/// for the client's input is not re-evaluated: it ended without a result,
/// and its continuation, if any, is a later block recorded whole.
pub fn plan(events: Vec<StoredEvent>, full_budget: Duration) -> Plan {
    let mut by_block: BTreeMap<u64, Vec<Event>> = BTreeMap::new();
    for e in events {
        by_block.entry(e.block).or_default().push(e.event);
    }
    let mut plan = Plan::default();
    for (n, events) in by_block {
        plan.next_block = n + 1;
        let mut code = None;
        let mut view = crate::runtime::View::Model;
        let mut end = None;
        let mut body = Vec::new();
        let mut suspended = false;
        for e in events {
            match e {
                Event::Begin { code: c, view: v, .. } => {
                    code = Some(c);
                    view = v;
                }
                Event::End { threw, stopped, .. } => end = Some((threw, stopped)),
                // A lease takeover and a snapshot are notes beside the
                // evaluation, not boundary events.
                Event::Takeover { .. } | Event::Continues { .. } | Event::Snapshot { .. } => {}
                Event::Suspended { .. } => suspended = true,
                other => body.push(other),
            }
        }
        let Some(code) = code else { continue };
        if suspended {
            plan.suspended.push(n);
            continue;
        }
        let tools: Vec<String> = body
            .iter()
            .filter_map(|e| match e {
                Event::Call { tool, .. } => Some(tool.clone()),
                _ => None,
            })
            .collect();
        let budget = match end {
            Some((_, true)) => STOPPED_BLOCK_BUDGET,
            _ => full_budget,
        };
        plan.blocks.push(PlannedBlock { number: n, code, view, budget, tape: Tape::Replay(body), end, tools });
    }
    plan
}

impl PlannedBlock {
    /// Whether a budget or cancellation stopped the block when it was
    /// recorded (replay then stops it wherever its own budget runs out, so
    /// the state after it may differ from the recorded one).
    pub fn was_stopped(&self) -> bool {
        matches!(self.end, Some((_, true)))
    }
}

impl RestoreReport {
    /// Judge one re-evaluated block against its recording.
    pub fn judge(&mut self, block: PlannedBlock, replayed: Replayed) {
        let obs = replayed.observation.unwrap_or_default();
        let threw_now = replayed.threw;
        let mut divergence = obs.divergence;
        if divergence.is_none() {
            if let Some((threw_then, _)) = block.end {
                if threw_then != threw_now {
                    divergence = Some(Divergence {
                        position: 0,
                        call: None,
                        expected: if threw_then { "a throw".into() } else { "completion".into() },
                        actual: if threw_now { "a throw".into() } else { "completion".into() },
                    });
                }
            }
        }
        // A drifting call throws in the script at the call site; its stack
        // names the location in the block's code.
        let location = divergence.as_ref().filter(|_| threw_now).and_then(|_| {
            let at = replayed.stack.find("<repl>:")?;
            let rest = &replayed.stack[at + "<repl>:".len()..];
            Some(rest.split(|c: char| c == ')' || c.is_whitespace()).next().unwrap_or("").to_string())
        });
        let verdict = if divergence.is_some() {
            Verdict::Drift
        } else if threw_now {
            Verdict::Threw
        } else {
            Verdict::Ok
        };
        let tools = &block.tools;
        self.blocks.push(BlockVerdict {
            block: block.number,
            verdict,
            divergence,
            location,
            outcome_unknown: obs
                .unknown
                .iter()
                .map(|i| format!("#{i} {}", tools.get(*i as usize).map(String::as_str).unwrap_or("?")))
                .collect(),
            code: block.code.lines().next().unwrap_or("").chars().take(120).collect(),
        });
    }

    /// Write the one-line summary.
    pub fn summarize(&mut self) {
        let count = |v: Verdict| self.blocks.iter().filter(|b| b.verdict == v).count();
        let unknown: usize = self.blocks.iter().map(|b| b.outcome_unknown.len()).sum();
        let from = self.snapshot.as_ref().map(|s| format!("from {s}, then ")).unwrap_or_default();
        self.summary = format!(
            "restored {from}{} block(s): {} ok, {} threw, {} drift; {} call(s) with unknown outcome",
            self.blocks.len(),
            count(Verdict::Ok),
            count(Verdict::Threw),
            count(Verdict::Drift),
            unknown
        );
    }
}

#[cfg(test)]
mod describe_tests {
    use super::*;

    #[test]
    fn a_drift_is_told_in_words() {
        let b = BlockVerdict {
            block: 3,
            verdict: Verdict::Drift,
            divergence: Some(Divergence {
                position: 2,
                call: Some(1),
                expected: "call of Read".into(),
                actual: "call of Bash".into(),
            }),
            location: Some("1:9".into()),
            outcome_unknown: vec!["#0 Bash".into()],
            code: "let v = await sh('ls')\nmore".into(),
        };
        assert_eq!(
            b.describe(),
            "block 3 (let v = await sh('ls')): drift at event 2, call #1: the log has call of Read, the code made \
             call of Bash at line:column 1:9; outcome unknown (the recording process stopped while they ran; not \
             run again): #0 Bash"
        );
    }
}
