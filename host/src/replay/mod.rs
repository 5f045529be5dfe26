//! Replay: the durable, hash-chained log of every evaluation's boundary
//! events ([`log`]; the storage trait and its errors in [`store`], the hash
//! chain every backend keeps in `chain`, the SQLite backend in `sqlite`, the PostgreSQL one in `postgres`),
//! recording live sessions into it (`recorder`), and restoring a context
//! from it ([`player`]); rendering a log for people ([`render`]) and
//! exporting it as JSON lines or an HTML page ([`export`]).

mod chain;
pub mod export;
pub mod log;
mod pg_tls;
pub mod player;
mod postgres;
pub(crate) mod recorder;
pub mod render;
pub mod snapshots;
mod sqlite;
pub mod store;
