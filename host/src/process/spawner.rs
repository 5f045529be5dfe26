//! The thread that forks every confined command.
//!
//! A parent-death signal (`PR_SET_PDEATHSIG`) fires when the *thread* that
//! forked the child ends, not the process. A Bash call's future is polled on
//! whatever thread runs the evaluation: a tokio worker, the thread in
//! `block_on`, or, for an embedder, a blocking-pool thread that tokio ends
//! after ten idle seconds — which would kill a command that is still running.
//! So confined children are forked by a few dedicated threads, started on
//! first use and never ended: their parent-death signal fires exactly when
//! wrepl dies (a SIGKILL included), and never before.
//!
//! Each job is one fork-and-exec; most of its time is the child's setup
//! (namespaces, mounts, exec), which std waits for. [`THREADS`] threads
//! take jobs from one queue, so parallel calls do not wait for each other's
//! setup. A job that panics is caught, so its thread survives it.

use std::panic::AssertUnwindSafe;
use std::sync::{mpsc, Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

/// How many spawner threads there are.
const THREADS: usize = 4;

/// The spawner threads' name.
const NAME: &str = "wrepl-spawner";

/// The spawners' queue; `None` when no thread could be started.
fn queue() -> Option<&'static mpsc::Sender<Job>> {
    static QUEUE: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let rx = Arc::new(Mutex::new(rx));
            let started = (0..THREADS)
                .filter(|_| {
                    let rx = rx.clone();
                    std::thread::Builder::new().name(NAME.into()).spawn(move || serve(&rx)).is_ok()
                })
                .count();
            (started > 0).then_some(tx)
        })
        .as_ref()
}

/// One spawner thread: runs jobs until the queue is gone (never, as the
/// queue is a static).
fn serve(rx: &Mutex<mpsc::Receiver<Job>>) {
    loop {
        // The lock is held only while waiting for the next job.
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        match job {
            Ok(job) => {
                let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
            }
            Err(_) => return,
        }
    }
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

/// Whether the calling thread is a spawner.
pub(super) fn on_spawner() -> bool {
    std::thread::current().name() == Some(NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::HashSet;
    use std::time::Duration;

    #[tokio::test]
    async fn jobs_run_on_named_threads_in_parallel_and_survive_panics() {
        assert!(run(on_spawner).await.unwrap());
        assert!(!on_spawner());
        for _ in 0..THREADS {
            assert_eq!(run(|| -> u8 { panic!("a job panics") }).await, None);
        }
        // Every thread is still there: THREADS jobs that each wait for all
        // the others can only finish when they run at the same time.
        let barrier = Arc::new(std::sync::Barrier::new(THREADS));
        let jobs: Vec<_> = (0..THREADS)
            .map(|_| {
                let b = barrier.clone();
                run(move || {
                    b.wait();
                    std::thread::current().id()
                })
            })
            .collect();
        let all = tokio::time::timeout(Duration::from_secs(20), futures_util::future::join_all(jobs)).await;
        let ids: HashSet<_> = all.expect("a spawner thread is missing").into_iter().map(Option::unwrap).collect();
        assert_eq!(ids.len(), THREADS);
        assert_eq!(run_blocking(|| 7), Some(7));
    }
}
