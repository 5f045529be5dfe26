//! The context manager: one REPL context per key (`main`, sub-agent ids),
//! bound to a session boundary id. Same boundary: the live context is reused.
//! New boundary: the old one is torn down and a new one is built, hydrated
//! `fresh`, `resume` (replay this key's log for the boundary) or `fork`
//! (replay a parent's log; if the parent is live here, start fresh instead).

use std::collections::HashMap;
use std::sync::Arc;

use crate::repl::{Repl, ReplBuilder, ReplError, SessionConfig};
use crate::replay::store::LogStore;

/// The key and boundary of a front end's main context.
pub const MAIN: &str = "main";

/// How a context that has to be built is filled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hydration {
    /// Empty.
    Fresh,
    /// Replay this key's recorded blocks for the boundary.
    Resume,
    /// Replay the log of another context (`key`, `boundary`).
    Fork {
        /// The parent's key.
        key: String,
        /// The parent's boundary.
        boundary: String,
    },
}

/// What [`ContextManager::get`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextStatus {
    /// The live context for this key and boundary was reused.
    Reused,
    /// A context was built, hydrated as said (a fork of a live parent is
    /// built fresh), with an explanation.
    Built {
        /// The hydration actually used.
        hydration: Hydration,
        /// Why, when it differs from the request.
        note: Option<String>,
    },
}

struct Live {
    boundary: String,
    repl: Repl,
}

/// Owns the contexts of one host (e.g. one MCP connection).
pub struct ContextManager {
    template: ReplBuilder,
    /// The log name of the main context (key and boundary [`MAIN`]), when
    /// the manager serves one named session (e.g. an MCP connection's).
    named: Option<String>,
    store: Option<Arc<dyn LogStore>>,
    contexts: HashMap<String, Live>,
    /// How long building a context waits for its session's lease.
    wait: Option<std::time::Duration>,
}

impl std::fmt::Debug for ContextManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextManager").field("contexts", &self.contexts.keys().collect::<Vec<_>>()).finish()
    }
}

/// The session log name of a key and boundary: an injective, store-safe
/// encoding (ASCII letters, digits and `-` kept, every other byte `_XX`);
/// names that would be too long are replaced by a SHA-256 digest.
pub fn session_name(key: &str, boundary: &str) -> String {
    let enc = |s: &str| -> String {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b == b'-' {
                out.push(b as char);
            } else {
                out.push_str(&format!("_{b:02x}"));
            }
        }
        out
    };
    let name = format!("{}.{}", enc(key), enc(boundary));
    if crate::replay::store::validate_session_name(&name).is_ok() {
        name
    } else {
        use sha2::Digest;
        let d = sha2::Sha256::digest(format!("{key}\0{boundary}").as_bytes());
        format!("h.{}", d.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }
}

/// The log of `key` under `boundary` in the named session `session`: the
/// session's own log for the main context (key and boundary [`MAIN`]), else
/// `session.<session_name(key, boundary)>` (a digest when that would be too
/// long).
fn named_log_name(session: &str, key: &str, boundary: &str) -> String {
    if key == MAIN && boundary == MAIN {
        return session.to_string();
    }
    let name = format!("{session}.{}", session_name(key, boundary));
    if crate::replay::store::validate_session_name(&name).is_ok() {
        name
    } else {
        use sha2::Digest;
        let d = sha2::Sha256::digest(name.as_bytes());
        format!("h.{}", d.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }
}

/// The log of context `key` of the named session `session` (the log a
/// [`ContextManager::named`] manager keeps it in): `session` itself for
/// [`MAIN`].
pub fn context_log_name(session: &str, key: &str) -> String {
    named_log_name(session, key, MAIN)
}

/// The log of context `key` under session boundary `boundary` of the named
/// session `session`: [`context_log_name`] for the [`MAIN`] boundary, a log
/// of its own for any other (a new boundary starts a fresh context).
pub fn boundary_log_name(session: &str, key: &str, boundary: &str) -> String {
    named_log_name(session, key, boundary)
}

/// Start the log `into` as a copy of the log `from`, verified first (a
/// forged parent must not become a child that verifies), so that resuming
/// `into` rebuilds the context `from` had; `from` is left as it is. Refused
/// when `from` holds nothing, and when `into` already holds a log (it is
/// never overwritten). The number of events copied.
pub fn fork_log(store: &dyn LogStore, from: &str, into: &str) -> Result<usize, ReplError> {
    crate::replay::store::validate_session_name(into).map_err(ReplError::Session)?;
    if from == into {
        return Err(ReplError::InvalidInput(format!("cannot fork the session {from:?} into itself")));
    }
    if store.head(into)?.is_some_and(|h| h.events > 0) {
        return Err(ReplError::InvalidInput(format!(
            "the session {into:?} already has a log; fork into a new session name (the log is never overwritten)"
        )));
    }
    // Copy exactly what was verified: the log up to the head read before
    // the check (a writer may append meanwhile; its rows are not copied).
    let Some(head) = store.head(from)?.filter(|h| h.events > 0) else {
        return Err(ReplError::InvalidInput(format!("there is no session {from:?} to fork (its log is empty)")));
    };
    crate::repl::verified(store, from)?;
    let mut events = store.load(from)?;
    events.truncate(usize::try_from(head.events).unwrap_or(usize::MAX));
    if events.len() as u64 != head.events || events.last().map(|e| e.hash.as_str()) != Some(head.hash.as_str()) {
        return Err(ReplError::InvalidInput(format!(
            "the session {from:?} changed while it was being copied; fork it again"
        )));
    }
    // The snapshots the log names come along (sealed for the new name), so
    // the fork resumes from them instead of replaying.
    crate::replay::snapshots::copy(store, from, into, &events)?;
    let copy: Vec<_> = events.into_iter().map(|e| (e.block, e.event)).collect();
    store.append(into, &copy)?;
    Ok(copy.len())
}

impl ContextManager {
    /// A manager building contexts from `template` (its session is
    /// ignored: sessions are per key and boundary, in `store` when given).
    pub fn new(template: ReplBuilder, store: Option<Arc<dyn LogStore>>) -> Self {
        Self { template, named: None, store, contexts: HashMap::new(), wait: None }
    }

    /// A manager for one named session: the main context (key and boundary
    /// [`MAIN`]) records into the log `name` itself; any other key or
    /// boundary into `name.<session_name(key, boundary)>` (a digest when that
    /// would be too long).
    pub fn named(template: ReplBuilder, store: Option<Arc<dyn LogStore>>, name: impl Into<String>) -> Self {
        Self { template, named: Some(name.into()), store, contexts: HashMap::new(), wait: None }
    }

    /// The log name of `key` under `boundary`.
    pub fn log_name(&self, key: &str, boundary: &str) -> String {
        match &self.named {
            None => session_name(key, boundary),
            Some(n) => named_log_name(n, key, boundary),
        }
    }

    /// Building a context waits up to `wait` for a session lease another
    /// writer holds (default: not at all).
    pub fn lease_wait(mut self, wait: Option<std::time::Duration>) -> Self {
        self.wait = wait;
        self
    }

    /// The live context of `key`, if any.
    pub fn live(&self, key: &str) -> Option<&Repl> {
        self.contexts.get(key).map(|l| &l.repl)
    }

    /// The live context of `key`, mutably, if any.
    pub fn live_mut(&mut self, key: &str) -> Option<&mut Repl> {
        self.contexts.get_mut(key).map(|l| &mut l.repl)
    }

    /// Snapshot every live context that records a session and has changed
    /// since its newest snapshot (before the manager is dropped); one line
    /// per context that could not be.
    pub async fn snapshot_all(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        for (key, live) in &mut self.contexts {
            if let Err(e) = live.repl.snapshot_now().await {
                failed.push(format!("context {key}: {e}"));
            }
        }
        failed
    }

    /// The linear memory of every live context's guest, in bytes (a
    /// guest's memory never shrinks, so this is what it holds).
    pub fn memory_bytes(&self) -> u64 {
        self.contexts.values().map(|l| l.repl.peak_memory() as u64).sum()
    }

    /// Keys with a live context.
    pub fn keys(&self) -> Vec<String> {
        self.contexts.keys().cloned().collect()
    }

    /// Drop a key's live context (its log stays).
    pub fn remove(&mut self, key: &str) -> bool {
        self.contexts.remove(key).is_some()
    }

    /// The context for `key` under `boundary`, building it if needed.
    pub async fn get(
        &mut self,
        key: &str,
        boundary: &str,
        hydration: Hydration,
    ) -> Result<(&mut Repl, ContextStatus), ReplError> {
        if self.contexts.get(key).is_some_and(|l| l.boundary == boundary) {
            let live = self.contexts.get_mut(key).expect("checked above");
            return Ok((&mut live.repl, ContextStatus::Reused));
        }
        // Decide the hydration while the old context still counts as live
        // (forking one's own live boundary starts fresh too).
        let (hydration, note) = match hydration {
            Hydration::Fork { key: parent, boundary: pb }
                if self.contexts.get(&parent).is_some_and(|l| l.boundary == pb) =>
            {
                (
                    Hydration::Fresh,
                    Some(format!(
                        "the parent context {parent:?} is live, so the fork starts fresh instead of copying it"
                    )),
                )
            }
            h => (h, None),
        };
        // A new boundary tears down the old context (timers, console go with it).
        self.contexts.remove(key);
        let mut session = None;
        if let Some(store) = &self.store {
            let name = self.log_name(key, boundary);
            match &hydration {
                Hydration::Fresh => {
                    // A fresh context starts an empty log for this boundary.
                    store.delete(&name)?;
                }
                Hydration::Resume => {}
                Hydration::Fork { key: parent, boundary: pb } => {
                    // A forged parent log must not become a child that verifies.
                    let parent_log = self.log_name(parent, pb);
                    crate::repl::verified(&**store, &parent_log)?;
                    let events = store.load(&parent_log)?;
                    store.delete(&name)?;
                    crate::replay::snapshots::copy(&**store, &parent_log, &name, &events)?;
                    let copy: Vec<_> = events.into_iter().map(|e| (e.block, e.event)).collect();
                    store.append(&name, &copy)?;
                }
            }
            session = Some(SessionConfig {
                boundary: boundary.to_string(),
                wait: self.wait,
                ..SessionConfig::new(name, store.clone())
            });
        }
        let repl = self.template.clone().session_config(session).build().await?;
        self.contexts.insert(key.to_string(), Live { boundary: boundary.to_string(), repl });
        let live = self.contexts.get_mut(key).expect("just inserted");
        Ok((&mut live.repl, ContextStatus::Built { hydration, note }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_injective_and_store_safe() {
        let names = [
            session_name("a.b", "x"),
            session_name("a_b", "x"),
            session_name("a", "b.x"),
            session_name("a.b.x", ""),
            session_name(&"k".repeat(200), "1"),
            session_name(&"k".repeat(200), "2"),
        ];
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for n in &names {
            assert!(n.len() <= 128 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)), "{n}");
        }
    }
}
