//! Writes a live session's boundary events to a [`LogStore`]: buffered, and
//! flushed durably whenever an intent must be on disk before a call runs.

use std::sync::{Arc, Mutex};

use super::log::Event;
use super::store::LogStore;
use crate::runtime::{RecordError, Recorder};

/// Records one session's blocks.
pub struct SessionRecorder {
    store: Arc<dyn LogStore>,
    session: String,
    state: Mutex<(u64, Vec<(u64, Event)>)>,
}

impl std::fmt::Debug for SessionRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRecorder").field("session", &self.session).finish_non_exhaustive()
    }
}

impl SessionRecorder {
    /// A recorder appending to `session` in `store`.
    pub fn new(store: Arc<dyn LogStore>, session: impl Into<String>) -> Self {
        Self { store, session: session.into(), state: Mutex::new((0, Vec::new())) }
    }

    /// Events recorded from now on belong to block `block`.
    pub fn set_block(&self, block: u64) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0 = block;
    }

    /// Write everything buffered.
    pub fn flush(&self) -> Result<(), RecordError> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.1.is_empty() {
            return Ok(());
        }
        self.store.append(&self.session, &st.1).map_err(|e| RecordError::Storage(Box::new(e)))?;
        st.1.clear();
        Ok(())
    }
}

/// Buffered events are written once this many accumulate, so a clock or
/// random loop cannot grow host memory without bound.
const FLUSH_EVERY: usize = 4096;

impl Recorder for SessionRecorder {
    fn record(&self, event: Event, durable: bool) -> Result<(), RecordError> {
        let pending = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let block = st.0;
            st.1.push((block, event));
            st.1.len()
        };
        if durable || pending >= FLUSH_EVERY {
            let r = self.flush();
            if r.is_err() && durable {
                // The intent was not written, so its call will not run: it
                // must not reach the log later either.
                self.state.lock().unwrap_or_else(|p| p.into_inner()).1.pop();
            }
            r
        } else {
            Ok(())
        }
    }
}
