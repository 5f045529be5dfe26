//! The server's metrics: evaluations by outcome and their latency,
//! evaluations a budget stopped, inner calls by tool and outcome (a
//! failure's kind: `denied` counts permission refusals) and their latency,
//! contexts rebuilt from their log, lease takeovers, hibernations, the
//! session store's commit latency, and the live and hibernated contexts.
//!
//! They are kept in the Prometheus text format (served at `/metrics` on the
//! MCP listener, behind its authentication, and with `wrepl serve --metrics
//! ADDR` on a listener of their own), and recorded on the OpenTelemetry SDK
//! too when metrics are exported over OTLP ([`crate::telemetry::meter`]).

use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use opentelemetry::KeyValue;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use super::ServeError;
use crate::replay::log::{Event, StoredEvent};
use crate::replay::store::{
    Head, LeaseOwner, LeaseTaken, LogStore, SessionInfo, SnapshotInfo, StoreError, StoredSnapshot, VerifyReport,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContextState {
    state: &'static str,
}

/// Most distinct tool names counted; calls of further tools count as `other`.
const MAX_TOOL_LABELS: usize = 256;

/// Counts the live and hibernated contexts, while the server's contexts exist.
pub(super) type ContextCounter = Box<dyn Fn() -> Option<(u64, u64)> + Send + Sync>;

/// The same metrics on the OpenTelemetry SDK, when they are exported.
struct Otel {
    evals: opentelemetry::metrics::Counter<u64>,
    operation_seconds: opentelemetry::metrics::Histogram<f64>,
    calls: opentelemetry::metrics::Counter<u64>,
    call_seconds: opentelemetry::metrics::Histogram<f64>,
    budget_stops: opentelemetry::metrics::Counter<u64>,
    replays: opentelemetry::metrics::Counter<u64>,
    takeovers: opentelemetry::metrics::Counter<u64>,
    hibernations: opentelemetry::metrics::Counter<u64>,
    snapshot_resumes: opentelemetry::metrics::Counter<u64>,
    commit_seconds: opentelemetry::metrics::Histogram<f64>,
    /// Kept so its callback stays registered.
    _contexts: opentelemetry::metrics::ObservableGauge<u64>,
}

impl Otel {
    fn new(meter: &opentelemetry::metrics::Meter, counter: Arc<Mutex<Option<ContextCounter>>>) -> Self {
        let seconds = |name: &'static str, what: &'static str, bounds: Vec<f64>| {
            meter.f64_histogram(name).with_unit("s").with_description(what).with_boundaries(bounds).build()
        };
        let count = |name: &'static str, what: &'static str| meter.u64_counter(name).with_description(what).build();
        let call_bounds: Vec<f64> = (0..20).map(|i| 0.0001 * 2f64.powi(i)).collect();
        let op_bounds: Vec<f64> = (0..18).map(|i| 0.001 * 2f64.powi(i)).collect();
        Self {
            evals: count("wrepl.evaluations", "Calls of repl and registered tools, by outcome"),
            // The MCP semantic conventions' server operation duration.
            operation_seconds: seconds(
                "mcp.server.operation.duration",
                "Duration of a tools/call of repl or a registered tool",
                op_bounds,
            ),
            calls: count("wrepl.inner_calls", "Inner tool calls, by tool and outcome"),
            call_seconds: seconds("wrepl.inner_call.duration", "Wall time of an inner call", call_bounds.clone()),
            budget_stops: count(
                "wrepl.budget_exhaustions",
                "Evaluations stopped by their script budget or the wall clock",
            ),
            replays: count("wrepl.replays", "Contexts rebuilt by replaying their log"),
            takeovers: count("wrepl.lease_takeovers", "Session leases taken over from a dead or silent writer"),
            hibernations: count("wrepl.hibernations", "Idle contexts snapshotted and dropped from memory"),
            snapshot_resumes: count("wrepl.snapshot_resumes", "Contexts rebuilt from a snapshot"),
            commit_seconds: seconds(
                "wrepl.store.commit.duration",
                "Time of a durable write to the session store",
                call_bounds,
            ),
            _contexts: meter
                .u64_observable_gauge("wrepl.contexts")
                .with_description("The server's contexts: live (in memory) or hibernated (a snapshot and a handle)")
                .with_callback(move |o| {
                    let counted = counter.lock().ok().and_then(|c| c.as_ref().and_then(|f| f()));
                    if let Some((live, hibernated)) = counted {
                        o.observe(live, &[KeyValue::new("state", "live")]);
                        o.observe(hibernated, &[KeyValue::new("state", "hibernated")]);
                    }
                })
                .build(),
        }
    }
}

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    evals: Family<Outcome, Counter>,
    eval_seconds: Histogram,
    calls: Family<CallLabels, Counter>,
    call_seconds: Histogram,
    budget_stops: Counter,
    replays: Counter,
    takeovers: Counter,
    hibernations: Counter,
    snapshot_wakes: Counter,
    commit_seconds: Histogram,
    store_transactions: Gauge,
    store_grouped_writes: Gauge,
    contexts: Family<ContextState, Gauge>,
    context_counter: Arc<Mutex<Option<ContextCounter>>>,
    tools_seen: Mutex<std::collections::HashSet<String>>,
    otel: Option<Otel>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").field("otlp", &self.otel.is_some()).finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, registered (on the OpenTelemetry SDK too when metrics
    /// are exported).
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("wrepl");
        let evals = Family::<Outcome, Counter>::default();
        let eval_seconds = Histogram::new(exponential_buckets(0.001, 2.0, 18));
        let calls = Family::<CallLabels, Counter>::default();
        let (replays, takeovers) = (Counter::default(), Counter::default());
        registry.register("evals", "Calls of repl and registered tools, by outcome", evals.clone());
        registry.register(
            "eval_duration_seconds",
            "Wall time of a call of repl or a registered tool",
            eval_seconds.clone(),
        );
        registry.register(
            "inner_calls",
            "Inner tool calls, by tool and outcome (ok, or the failure's kind: denied, timeout, ...)",
            calls.clone(),
        );
        let call_seconds = Histogram::new(exponential_buckets(0.0001, 2.0, 20));
        registry.register("inner_call_duration_seconds", "Wall time of an inner call", call_seconds.clone());
        let budget_stops = Counter::default();
        registry.register(
            "budget_exhaustions",
            "Evaluations stopped by their script budget or the wall clock",
            budget_stops.clone(),
        );
        registry.register("replays", "Contexts rebuilt by replaying their log", replays.clone());
        registry.register(
            "lease_takeovers",
            "Session leases taken over from a dead or silent writer",
            takeovers.clone(),
        );
        let (hibernations, snapshot_wakes) = (Counter::default(), Counter::default());
        registry.register(
            "hibernations",
            "Idle contexts snapshotted and dropped from memory (their handles stay)",
            hibernations.clone(),
        );
        registry.register(
            "snapshot_resumes",
            "Contexts rebuilt from a snapshot (replaying only the blocks after it)",
            snapshot_wakes.clone(),
        );
        let commit_seconds = Histogram::new(exponential_buckets(0.0001, 2.0, 20));
        registry.register(
            "store_commit_duration_seconds",
            "Time of a durable write to the session store (events, a lease hand-back, a snapshot)",
            commit_seconds.clone(),
        );
        let (store_transactions, store_grouped_writes) = (Gauge::default(), Gauge::default());
        registry.register(
            "store_grouped_writes",
            "Event writes made through the session store's group commit (SQLite)",
            store_grouped_writes.clone(),
        );
        registry.register(
            "store_transactions",
            "Transactions that held the grouped writes: one holds the writes of every context waiting at the time, \
             so this runs behind store_grouped_writes",
            store_transactions.clone(),
        );
        let contexts = Family::<ContextState, Gauge>::default();
        registry.register(
            "contexts",
            "The server's contexts: live (in memory) or hibernated (a snapshot and a handle)",
            contexts.clone(),
        );
        let context_counter: Arc<Mutex<Option<ContextCounter>>> = Arc::default();
        let otel = crate::telemetry::meter().map(|m| Otel::new(&m, context_counter.clone()));
        Self {
            registry,
            evals,
            eval_seconds,
            calls,
            replays,
            takeovers,
            hibernations,
            snapshot_wakes,
            call_seconds,
            budget_stops,
            commit_seconds,
            store_transactions,
            store_grouped_writes,
            contexts,
            context_counter,
            tools_seen: Default::default(),
            otel,
        }
    }

    /// A finished call of `repl` or a registered tool (`tool`).
    pub(super) fn eval(&self, tool: &str, outcome: &str, seconds: f64) {
        self.evals.get_or_create(&Outcome { outcome: outcome.to_string() }).inc();
        self.eval_seconds.observe(seconds);
        if let Some(o) = &self.otel {
            o.evals.add(1, &[KeyValue::new("outcome", outcome.to_string())]);
            let mut attrs = vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", self.tool_label(tool)),
            ];
            if matches!(outcome, "error" | "busy") {
                attrs.push(KeyValue::new("error.type", outcome.to_string()));
            }
            o.operation_seconds.record(seconds, &attrs);
        }
    }

    /// An evaluation a budget (script time or wall clock) stopped.
    pub(super) fn budget_stop(&self) {
        self.budget_stops.inc();
        if let Some(o) = &self.otel {
            o.budget_stops.add(1, &[]);
        }
    }

    /// `tool`, or `other` once [`MAX_TOOL_LABELS`] names were seen.
    fn tool_label(&self, tool: &str) -> String {
        let mut seen = self.tools_seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(tool) || seen.len() < MAX_TOOL_LABELS {
            seen.insert(tool.to_string());
            tool.to_string()
        } else {
            "other".to_string()
        }
    }

    /// A finished inner call: `outcome` is `ok` or the failure's kind.
    pub(super) fn call(&self, tool: &str, outcome: &str, seconds: f64) {
        let tool = self.tool_label(tool);
        if let Some(o) = &self.otel {
            let attrs =
                [KeyValue::new("gen_ai.tool.name", tool.clone()), KeyValue::new("outcome", outcome.to_string())];
            o.calls.add(1, &attrs);
            o.call_seconds.record(seconds, &attrs[..1]);
        }
        self.calls.get_or_create(&CallLabels { tool, outcome: outcome.to_string() }).inc();
        self.call_seconds.observe(seconds);
    }

    /// A context rebuilt from its log (`takeover`: its lease was taken over).
    pub(super) fn replay(&self, takeover: bool) {
        self.replays.inc();
        if takeover {
            self.takeovers.inc();
        }
        if let Some(o) = &self.otel {
            o.replays.add(1, &[]);
            if takeover {
                o.takeovers.add(1, &[]);
            }
        }
    }

    /// `n` contexts hibernated.
    pub(super) fn hibernated(&self, n: u64) {
        self.hibernations.inc_by(n);
        if let Some(o) = &self.otel {
            o.hibernations.add(n, &[]);
        }
    }

    /// A context rebuilt from a snapshot.
    pub(super) fn snapshot_resume(&self) {
        self.snapshot_wakes.inc();
        if let Some(o) = &self.otel {
            o.snapshot_resumes.add(1, &[]);
        }
    }

    /// A durable write to the session store that took `seconds`.
    fn commit(&self, seconds: f64) {
        self.commit_seconds.observe(seconds);
        if let Some(o) = &self.otel {
            o.commit_seconds.record(seconds, &[]);
        }
    }

    /// Where the live and hibernated contexts are counted from.
    pub(super) fn count_contexts_with(&self, counter: ContextCounter) {
        *self.context_counter.lock().unwrap_or_else(|p| p.into_inner()) = Some(counter);
    }

    /// The metrics in the Prometheus text format.
    pub fn render(&self) -> String {
        let counted = self.context_counter.lock().ok().and_then(|c| c.as_ref().and_then(|f| f()));
        let (live, hibernated) = counted.unwrap_or((0, 0));
        self.contexts.get_or_create(&ContextState { state: "live" }).set(live as i64);
        self.contexts.get_or_create(&ContextState { state: "hibernated" }).set(hibernated as i64);
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The session store, with the time of each durable write measured
/// ([`Metrics`]' `store_commit_duration_seconds`); everything else is the
/// store's own.
pub(super) struct MeteredStore {
    inner: Arc<dyn LogStore>,
    metrics: Weak<Metrics>,
}

impl MeteredStore {
    /// `inner`, measured into `metrics`.
    pub(super) fn wrap(inner: Arc<dyn LogStore>, metrics: &Arc<Metrics>) -> Arc<dyn LogStore> {
        Arc::new(Self { inner, metrics: Arc::downgrade(metrics) })
    }

    fn timed<T>(&self, write: impl FnOnce(&dyn LogStore) -> T) -> T {
        let started = Instant::now();
        let out = write(&*self.inner);
        if let Some(m) = self.metrics.upgrade() {
            m.commit(started.elapsed().as_secs_f64());
            if let Some(g) = self.inner.group_commits() {
                m.store_grouped_writes.set(i64::try_from(g.writes).unwrap_or(i64::MAX));
                m.store_transactions.set(i64::try_from(g.transactions).unwrap_or(i64::MAX));
            }
        }
        out
    }
}

impl LogStore for MeteredStore {
    fn append(&self, session: &str, events: &[(u64, Event)]) -> Result<Vec<StoredEvent>, StoreError> {
        self.timed(|s| s.append(session, events))
    }
    fn load(&self, session: &str) -> Result<Vec<StoredEvent>, StoreError> {
        self.inner.load(session)
    }
    fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.inner.sessions()
    }
    fn load_verified(&self, session: &str) -> Result<(VerifyReport, Vec<StoredEvent>), StoreError> {
        self.inner.load_verified(session)
    }
    fn verify(&self, session: &str) -> Result<VerifyReport, StoreError> {
        self.inner.verify(session)
    }
    fn head(&self, session: &str) -> Result<Option<Head>, StoreError> {
        self.inner.head(session)
    }
    fn acquire_lease(
        &self,
        session: &str,
        owner: &LeaseOwner,
        ttl: std::time::Duration,
    ) -> Result<LeaseTaken, StoreError> {
        self.inner.acquire_lease(session, owner, ttl)
    }
    fn renew_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError> {
        self.inner.renew_lease(session, owner_id)
    }
    fn release_lease(&self, session: &str, owner_id: &str) -> Result<(), StoreError> {
        self.inner.release_lease(session, owner_id)
    }
    fn append_leased(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.timed(|s| s.append_leased(session, owner_id, events))
    }
    fn acquire_lease_and_head(
        &self,
        session: &str,
        owner: &LeaseOwner,
        ttl: std::time::Duration,
    ) -> Result<(LeaseTaken, Option<Head>), StoreError> {
        self.inner.acquire_lease_and_head(session, owner, ttl)
    }
    fn append_and_release(
        &self,
        session: &str,
        owner_id: &str,
        events: &[(u64, Event)],
    ) -> Result<Option<Head>, StoreError> {
        self.timed(|s| s.append_and_release(session, owner_id, events))
    }
    fn quarantine(&self, session: &str) -> Result<String, StoreError> {
        self.inner.quarantine(session)
    }
    fn delete(&self, session: &str) -> Result<(), StoreError> {
        self.inner.delete(session)
    }
    fn secret(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        self.inner.secret(name)
    }
    fn touch(&self, session: &str, at_ms: u64) -> Result<(), StoreError> {
        self.inner.touch(session, at_ms)
    }
    fn touched(&self, session: &str) -> Result<Option<u64>, StoreError> {
        self.inner.touched(session)
    }
    fn shared(&self) -> bool {
        self.inner.shared()
    }
    fn put_snapshot(&self, session: &str, digest: &str, snapshot: StoredSnapshot) -> Result<(), StoreError> {
        self.timed(|s| s.put_snapshot(session, digest, snapshot))
    }
    fn get_snapshot(&self, session: &str, digest: &str) -> Result<Option<StoredSnapshot>, StoreError> {
        self.inner.get_snapshot(session, digest)
    }
    fn snapshots(&self, session: &str) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.inner.snapshots(session)
    }
    fn delete_snapshots(&self, session: &str, digests: &[String]) -> Result<u64, StoreError> {
        self.inner.delete_snapshots(session, digests)
    }
    fn snapshot_sessions(&self) -> Result<Vec<String>, StoreError> {
        self.inner.snapshot_sessions()
    }
    fn group_commits(&self) -> Option<crate::replay::store::GroupCommits> {
        self.inner.group_commits()
    }
    fn file_path(&self) -> Option<&std::path::Path> {
        self.inner.file_path()
    }
}

/// The `/metrics` response: the Prometheus text.
pub(super) fn response(metrics: &Metrics) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    (
        [(axum::http::header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        metrics.render(),
    )
        .into_response()
}

/// Serve `GET /metrics` on `listener` until `shutdown`. No
/// authentication: bind it to an address only the monitoring system
/// reaches (a loopback one, say). The MCP listener serves the same at
/// `/metrics` behind its own authentication.
pub async fn serve_metrics(
    metrics: Arc<Metrics>,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let m = metrics.clone();
            async move { response(&m) }
        }),
    );
    axum::serve(listener, router).with_graceful_shutdown(async move { shutdown.cancelled_owned().await }).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_show_in_the_text_format() {
        let m = Metrics::new();
        m.eval("repl", "ok", 0.01);
        m.eval("repl", "error", 2.0);
        m.call("Bash", "ok", 0.01);
        m.call("Bash", "denied", 0.0);
        m.budget_stop();
        m.replay(true);
        let text = m.render();
        assert!(text.contains("wrepl_evals_total{outcome=\"ok\"} 1"), "{text}");
        assert!(text.contains("wrepl_inner_calls_total{tool=\"Bash\",outcome=\"denied\"} 1"), "{text}");
        assert!(text.contains("wrepl_inner_call_duration_seconds_count 2"), "{text}");
        assert!(text.contains("wrepl_budget_exhaustions_total 1"), "{text}");
        assert!(text.contains("wrepl_replays_total 1"), "{text}");
        assert!(text.contains("wrepl_lease_takeovers_total 1"), "{text}");
        assert!(text.contains("wrepl_eval_duration_seconds_count 2"), "{text}");
        assert!(text.contains("wrepl_contexts{state=\"live\"} 0"), "{text}");
        m.count_contexts_with(Box::new(|| Some((3, 2))));
        let text = m.render();
        assert!(text.contains("wrepl_contexts{state=\"live\"} 3"), "{text}");
        assert!(text.contains("wrepl_contexts{state=\"hibernated\"} 2"), "{text}");
    }

    #[test]
    fn tool_labels_are_bounded() {
        let m = Metrics::new();
        for i in 0..(MAX_TOOL_LABELS + 10) {
            m.call(&format!("t{i}"), "ok", 0.0);
        }
        assert!(m.render().contains("tool=\"other\""));
    }
}
