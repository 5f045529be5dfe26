//! The REPL's live status line (indicatif, on stderr): while an evaluation
//! runs, one line shows the inner calls still running and how long each has
//! run, e.g. `⠙ 2 calls running: Bash 3.1s, Read 0.2s`. It is cleared when
//! the evaluation ends and hidden while a question is asked.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use wrepl::{EventSink, Phase, ProgressEvent};

/// Calls shown by name; the rest are counted.
const SHOWN: usize = 4;

/// The running inner calls, by tool-use id: tool name and start.
type Running = Arc<Mutex<BTreeMap<String, (String, Instant)>>>;

/// The status line of one REPL.
pub(crate) struct StatusLine {
    bar: ProgressBar,
    running: Running,
    ticker: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Whether the line may be drawn: the ticker draws only under this
    /// lock and while it is true, so a pause is never followed by a late
    /// draw of the ticker it stopped.
    shown: Arc<Mutex<bool>>,
}

impl StatusLine {
    /// A status line on stderr (hidden when stderr is not a terminal).
    pub(crate) fn new() -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style =
            ProgressStyle::with_template("{spinner} {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        Self { bar, running: Arc::default(), ticker: Mutex::new(None), shown: Arc::default() }
    }

    /// The event sink that tracks running calls (and prints each event
    /// above the line too, when `print` is set: `--progress`).
    pub(crate) fn sink(&self, print: bool) -> EventSink {
        let running = self.running.clone();
        let bar = self.bar.clone();
        let shown = self.shown.clone();
        Arc::new(move |e: &ProgressEvent| {
            {
                let mut r = running.lock().unwrap_or_else(|p| p.into_inner());
                match e.phase {
                    Phase::Start => {
                        r.insert(e.tool_use_id.clone(), (e.tool.clone(), Instant::now()));
                    }
                    Phase::Complete | Phase::Error => {
                        r.remove(&e.tool_use_id);
                    }
                    Phase::Executing | Phase::Progress => {}
                }
            }
            if print {
                // Above the line when it is shown; plainly when it is not
                // (a suspended bar would be drawn again afterwards).
                let shown = shown.lock().unwrap_or_else(|p| p.into_inner());
                if *shown {
                    bar.suspend(|| super::print_progress(e));
                } else {
                    super::print_progress(e);
                }
            }
        })
    }

    /// An evaluation starts (or goes on after a question): show the line,
    /// refreshed ten times a second.
    pub(crate) fn start(&self) {
        let (bar, running, shown) = (self.bar.clone(), self.running.clone(), self.shown.clone());
        {
            let mut s = shown.lock().unwrap_or_else(|p| p.into_inner());
            self.bar.reset();
            *s = true;
        }
        let ticker = tokio::spawn(async move {
            let started = Instant::now();
            loop {
                {
                    let shown = shown.lock().unwrap_or_else(|p| p.into_inner());
                    if !*shown {
                        return;
                    }
                    bar.set_message(render(&running, started.elapsed()));
                    bar.tick();
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        if let Some(old) = self.ticker.lock().unwrap_or_else(|p| p.into_inner()).replace(ticker) {
            old.abort();
        }
    }

    /// Hide the line until the next [`Self::start`] (a question is asked).
    pub(crate) fn pause(&self) {
        let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        *shown = false;
        if let Some(t) = self.ticker.lock().unwrap_or_else(|p| p.into_inner()).take() {
            t.abort();
        }
        self.bar.finish_and_clear();
    }

    /// The evaluation ended: clear the line and forget its calls.
    pub(crate) fn stop(&self) {
        self.pause();
        self.running.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The line's text: what runs, or how long the evaluation has run.
fn render(running: &Running, evaluating: Duration) -> String {
    let r = running.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    if r.is_empty() {
        return format!("evaluating {:.1}s (Ctrl-C stops it)", evaluating.as_secs_f64());
    }
    let mut calls: Vec<(&String, Duration)> = r.values().map(|(t, s)| (t, now.duration_since(*s))).collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.1));
    let mut text = format!("{} call{} running: ", calls.len(), if calls.len() == 1 { "" } else { "s" });
    let shown: Vec<String> = calls
        .iter()
        .take(SHOWN)
        .map(|(t, d)| {
            let name: String = t.chars().take(40).collect();
            format!("{} {:.1}s", wrepl::text::terminal_safe(&name), d.as_secs_f64())
        })
        .collect();
    text.push_str(&shown.join(", "));
    if calls.len() > SHOWN {
        text.push_str(&format!(" and {} more", calls.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_longest_running_calls() {
        let running: Running = Arc::default();
        assert!(render(&running, Duration::from_millis(1500)).starts_with("evaluating 1.5s"));
        let now = Instant::now();
        {
            let mut r = running.lock().unwrap();
            for (i, (tool, ago)) in
                [("Read", 1), ("Bash", 3000), ("Grep", 2), ("Glob", 3), ("mcp__x__y\x1b[2J", 4)].iter().enumerate()
            {
                r.insert(format!("t{i}"), (tool.to_string(), now - Duration::from_millis(*ago)));
            }
        }
        let line = render(&running, Duration::ZERO);
        assert!(line.starts_with("5 calls running: Bash 3.0s, "), "{line}");
        assert!(line.ends_with(" and 1 more"), "{line}");
        assert!(!line.contains('\x1b'), "tool names are terminal-safe: {line}");
    }
}
