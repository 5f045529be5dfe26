//! The thread that forks every confined command.
//!
//! A parent-death signal (`PR_SET_PDEATHSIG`) fires when the *thread* that
//! forked the child ends, not the process. A Bash call's future is polled on
//! whatever thread runs the evaluation: a tokio worker, the thread in
//! `block_on`, or, for an embedder, a blocking-pool thread that tokio ends
//! after ten idle seconds — which would kill a command that is still running.
//! So confined children are forked by this one thread, started on first use
//! and never ended: their parent-death signal fires exactly when wrepl dies
//! (a SIGKILL included), and never before.
//!
//! Jobs run one at a time, in order; each is a short fork-and-exec. A job
//! that panics is caught, so the thread survives it.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::OnceLock;

type Job = Box<dyn FnOnce() + Send>;

/// The spawner's queue; `None` when the thread could not be started.
fn queue() -> Option<&'static mpsc::Sender<Job>> {
    static QUEUE: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("wrepl-spawner".into())
                .spawn(move || {
                    for job in rx {
                        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
                    }
                })
                .ok()?;
            Some(tx)
        })
        .as_ref()
}

/// Runs `f` on the spawner thread and waits for its result without blocking
/// the async runtime; `None` when the thread is unavailable or `f` panicked.
pub(super) async fn run<T, F>(f: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    queue()?
        .send(Box::new(move || {
            let _ = tx.send(f());
        }))
        .ok()?;
    rx.await.ok()
}

/// Runs `f` on the spawner thread and blocks until it is done (for callers
/// outside an async context); `None` as for [`run`]. Never call it from a
/// job (the thread would wait for itself).
pub(super) fn run_blocking<T, F>(f: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    queue()?
        .send(Box::new(move || {
            let _ = tx.send(f());
        }))
        .ok()?;
    rx.recv().ok()
}

/// Whether the calling thread is the spawner.
pub(super) fn on_spawner() -> bool {
    std::thread::current().name() == Some("wrepl-spawner")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_on_one_named_thread_and_survive_a_panic() {
        let a = run(|| (std::thread::current().id(), on_spawner())).await.unwrap();
        assert!(a.1);
        assert!(!on_spawner());
        assert_eq!(run(|| -> u8 { panic!("a job panics") }).await, None);
        let b = run_blocking(|| std::thread::current().id()).unwrap();
        assert_eq!(a.0, b, "the same thread after a panic");
    }
}
