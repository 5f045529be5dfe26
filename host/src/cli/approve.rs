//! Approvals on a terminal: a permission `ask` becomes a question to the
//! person at the keyboard, showing the tool, its whole input and the rule
//! that asked, answered yes once, always (this tool, this run) or no.
//!
//! The approver only queues questions; whoever owns the terminal answers
//! them: the interactive REPL through its line editor, `wrepl eval` through
//! a plain line read ([`answer_from_stdin`]).

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use wrepl::Approver;

/// A question for the person at the terminal.
pub(crate) struct Ask {
    /// What to show: tool, rule and the whole input (terminal-safe).
    pub(crate) text: String,
    /// The answer.
    pub(crate) reply: oneshot::Sender<Answer>,
}

/// What the person said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Allow this call.
    Once,
    /// Allow this call and every later one of the same tool in this run.
    Always,
    /// Refuse it.
    No,
}

impl Answer {
    /// Read an answer: `y`/`yes`, `a`/`always`; anything else is no.
    pub(crate) fn parse(line: &str) -> Self {
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Self::Once,
            "a" | "always" => Self::Always,
            _ => Self::No,
        }
    }
}

/// The question's last line, where the answer is typed.
pub(crate) const PROMPT: &str = "allow? [y] yes once, [a] always for this tool, [n] no: ";

/// Asks the terminal, one question at a time.
pub(crate) struct TerminalApprover {
    asks: mpsc::UnboundedSender<Ask>,
    always: Arc<Mutex<HashSet<String>>>,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl TerminalApprover {
    /// An approver and the queue its questions arrive on.
    pub(crate) fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<Ask>) {
        let (asks, rx) = mpsc::unbounded_channel();
        let me = Self { asks, always: Default::default(), turn: Default::default() };
        (Arc::new(me), rx)
    }
}

impl Approver for TerminalApprover {
    fn approve(&self, tool: &str, input: &Value, reason: &str) -> BoxFuture<'static, bool> {
        let (asks, always, turn) = (self.asks.clone(), self.always.clone(), self.turn.clone());
        let tool = tool.to_string();
        // The whole input, never cut: the person decides on what will run.
        let shown = serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string());
        let text = format!(
            "wrepl: {} asks for approval ({})\n{}\n",
            wrepl::text::terminal_safe(&tool),
            wrepl::text::terminal_safe(reason),
            wrepl::text::terminal_safe(&shown)
        );
        Box::pin(async move {
            // One question at a time, in the order the calls asked.
            let _turn = turn.lock().await;
            if always.lock().unwrap_or_else(|p| p.into_inner()).contains(&tool) {
                return true;
            }
            let (reply, answer) = oneshot::channel();
            if asks.send(Ask { text, reply }).is_err() {
                return false;
            }
            match answer.await.unwrap_or(Answer::No) {
                Answer::Once => true,
                Answer::Always => {
                    always.lock().unwrap_or_else(|p| p.into_inner()).insert(tool);
                    true
                }
                Answer::No => false,
            }
        })
    }
}

/// Answer questions by reading lines from stdin (for `wrepl eval`, whose
/// code does not come from stdin), until the approver is gone.
pub(crate) async fn answer_from_stdin(mut asks: mpsc::UnboundedReceiver<Ask>) {
    while let Some(mut ask) = asks.recv().await {
        if ask.reply.is_closed() {
            continue;
        }
        eprint!("{}{PROMPT}", ask.text);
        let _ = std::io::stderr().flush();
        // A thread of its own, not the runtime's blocking pool: a read the
        // evaluation no longer waits for must not hold up the exit.
        let (tx, rx) = oneshot::channel();
        let _ = std::thread::Builder::new().name("wrepl-ask".into()).spawn(move || {
            let mut line = String::new();
            let read = match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line),
            };
            let _ = tx.send(read);
        });
        let line = tokio::select! {
            read = rx => read.ok().flatten(),
            // The call stopped waiting (its evaluation ended).
            _ = ask.reply.closed() => None,
        };
        let answer = line.as_deref().map(Answer::parse).unwrap_or(Answer::No);
        let _ = ask.reply.send(answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_decide_and_always_is_remembered_per_tool() {
        assert_eq!(Answer::parse(" Y\n"), Answer::Once);
        assert_eq!(Answer::parse("always"), Answer::Always);
        assert_eq!(Answer::parse(""), Answer::No);
        assert_eq!(Answer::parse("yes please"), Answer::No);
        let (approver, mut asks) = TerminalApprover::new();
        let answers = tokio::spawn(async move {
            let mut seen = Vec::new();
            for answer in [Answer::No, Answer::Always] {
                let ask = asks.recv().await.unwrap();
                seen.push(ask.text.clone());
                ask.reply.send(answer).unwrap();
            }
            seen
        });
        let input = serde_json::json!({"file_path": "a.txt", "content": "x\u{1b}[2J"});
        assert!(!approver.approve("Write", &input, "rule Write in ask").await);
        assert!(approver.approve("Write", &input, "rule Write in ask").await);
        // Always: no more questions for Write.
        assert!(approver.approve("Write", &input, "rule Write in ask").await);
        let seen = answers.await.unwrap();
        assert_eq!(seen.len(), 2);
        assert!(seen[0].contains("Write asks for approval (rule Write in ask)"), "{}", seen[0]);
        assert!(seen[0].contains("\"file_path\": \"a.txt\"") && !seen[0].contains('\u{1b}'), "{}", seen[0]);
    }
}
