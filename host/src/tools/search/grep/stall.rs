//! A test's hold on the merge: a helper about to search a file named
//! [`NAME`] waits until the walking thread of a search with at least
//! [`super::GREP_MAX_AHEAD`] results waiting releases it (when it waits for results,
//! or has walked everything), so the files after it are searched while the
//! merge waits for it. Other tests' searches never have that many waiting.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Condvar, Mutex};

/// The name of the file a helper stalls on.
pub(crate) const NAME: &str = "wrepl-test-stall.txt";
static RELEASED: Mutex<bool> = Mutex::new(true);
static CHANGED: Condvar = Condvar::new();
/// How many times a helper stalled, since [`arm`].
pub(crate) static STALLS: AtomicUsize = AtomicUsize::new(0);
/// Most results that waited for the merge at once, in any search since [`arm`].
pub(crate) static MAX_WAITING: AtomicUsize = AtomicUsize::new(0);

/// The next search of [`NAME`] by a helper stalls.
pub(crate) fn arm() {
    *RELEASED.lock().unwrap_or_else(|p| p.into_inner()) = false;
    STALLS.store(0, SeqCst);
    MAX_WAITING.store(0, SeqCst);
}

pub(crate) fn before_search(abs: &std::path::Path) {
    if abs.file_name().is_none_or(|n| n != NAME) {
        return;
    }
    STALLS.fetch_add(1, SeqCst);
    let mut released = RELEASED.lock().unwrap_or_else(|p| p.into_inner());
    while !*released {
        released = CHANGED.wait(released).unwrap_or_else(|p| p.into_inner());
    }
}

pub(crate) fn release() {
    *RELEASED.lock().unwrap_or_else(|p| p.into_inner()) = true;
    CHANGED.notify_all();
}

pub(crate) fn saw_waiting(n: usize) {
    MAX_WAITING.fetch_max(n, SeqCst);
}
