//! The server's metrics, in the Prometheus text format
//! (`wrepl serve --metrics ADDR` serves them at `/metrics` on a listener of
//! their own): evaluations by outcome and their latency, evaluations a
//! budget stopped, inner calls by tool and outcome (a failure's kind:
//! `denied` counts permission refusals) and their latency, contexts rebuilt
//! from their log, lease takeovers, hibernations.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use super::ServeError;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: String,
}

/// Most distinct tool names counted; calls of further tools count as `other`.
const MAX_TOOL_LABELS: usize = 256;

/// The server's counters and histogram.
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
    tools_seen: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, registered.
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
            tools_seen: Default::default(),
        }
    }

    /// A finished call of `repl` or a registered tool.
    pub(super) fn eval(&self, outcome: &str, seconds: f64) {
        self.evals.get_or_create(&Outcome { outcome: outcome.to_string() }).inc();
        self.eval_seconds.observe(seconds);
    }

    /// An evaluation a budget (script time or wall clock) stopped.
    pub(super) fn budget_stop(&self) {
        self.budget_stops.inc();
    }

    /// A finished inner call: `outcome` is `ok` or the failure's kind.
    pub(super) fn call(&self, tool: &str, outcome: &str, seconds: f64) {
        let tool = {
            let mut seen = self.tools_seen.lock().unwrap_or_else(|p| p.into_inner());
            if seen.contains(tool) || seen.len() < MAX_TOOL_LABELS {
                seen.insert(tool.to_string());
                tool.to_string()
            } else {
                "other".to_string()
            }
        };
        self.calls.get_or_create(&CallLabels { tool, outcome: outcome.to_string() }).inc();
        self.call_seconds.observe(seconds);
    }

    /// A context rebuilt from its log (`takeover`: its lease was taken over).
    pub(super) fn replay(&self, takeover: bool) {
        self.replays.inc();
        if takeover {
            self.takeovers.inc();
        }
    }

    /// `n` contexts hibernated.
    pub(super) fn hibernated(&self, n: u64) {
        self.hibernations.inc_by(n);
    }

    /// A context rebuilt from a snapshot.
    pub(super) fn snapshot_resume(&self) {
        self.snapshot_wakes.inc();
    }

    /// The metrics in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Serve `GET /metrics` on `listener` until `shutdown`. No
/// authentication: bind it to an address only the monitoring system
/// reaches (a loopback one, say).
pub async fn serve_metrics(
    metrics: Arc<Metrics>,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let m = metrics.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
                    m.render(),
                )
            }
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
        m.eval("ok", 0.01);
        m.eval("error", 2.0);
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
