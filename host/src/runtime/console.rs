//! Console capture with a per-evaluation byte budget.

use crate::text::floor_char_boundary;

/// Total console bytes kept per evaluation (stdout and stderr together).
pub const CONSOLE_BUDGET_BYTES: usize = 52_428_800;

/// Console output captured during one evaluation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsoleOutput {
    /// Text written to stdout (`console.log`, `info`, `debug`, ...).
    pub stdout: String,
    /// Text written to stderr (`console.warn`, `error`, host warnings).
    pub stderr: String,
    /// True when output beyond the budget was dropped.
    pub truncated: bool,
}

#[derive(Debug)]
pub(crate) struct ConsoleBuffer {
    out: ConsoleOutput,
    used: usize,
    budget: usize,
}

impl ConsoleBuffer {
    pub(crate) fn new(budget: usize) -> Self {
        Self { out: ConsoleOutput::default(), used: 0, budget }
    }

    /// Append guest output, honouring the budget; one notice when it runs out.
    pub(crate) fn write(&mut self, stderr: bool, text: &str) {
        if self.out.truncated {
            return;
        }
        let room = self.budget - self.used;
        let take = if text.len() <= room { text } else { &text[..floor_char_boundary(text, room)] };
        self.used += take.len();
        if stderr {
            self.out.stderr.push_str(take);
        } else {
            self.out.stdout.push_str(take);
        }
        if take.len() < text.len() {
            self.out.truncated = true;
            self.out.stderr.push_str(&format!(
                "\n[wrepl: console output exceeded {} bytes; the rest of this evaluation's output was dropped]\n",
                self.budget
            ));
        }
    }

    /// Host-generated notes (warnings); not counted against the budget.
    pub(crate) fn note(&mut self, text: &str) {
        self.out.stderr.push_str(text);
    }

    pub(crate) fn take(&mut self) -> ConsoleOutput {
        self.used = 0;
        std::mem::take(&mut self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_truncates_once_with_notice() {
        let mut c = ConsoleBuffer::new(10);
        c.write(false, "hello ");
        c.write(false, "world, again");
        c.write(true, "more");
        let out = c.take();
        assert_eq!(out.stdout, "hello worl");
        assert!(out.truncated);
        assert_eq!(out.stderr.matches("console output exceeded 10 bytes").count(), 1);
        assert!(!out.stderr.contains("more"));
    }

    #[test]
    fn truncation_respects_utf8() {
        let mut c = ConsoleBuffer::new(4);
        c.write(false, "aé€x");
        let out = c.take();
        assert_eq!(out.stdout, "aé");
    }
}
