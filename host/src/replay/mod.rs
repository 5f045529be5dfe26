//! Replay: the durable, hash-chained log of every evaluation's boundary
//! events ([`log`], [`store`]), recording live sessions into it, and
//! restoring a context from it ([`player`]).

pub mod log;
pub mod player;
pub(crate) mod recorder;
pub mod store;
