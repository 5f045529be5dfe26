//! Traces of evaluations and their inner calls, with the OpenTelemetry SDK.
//!
//! Configured only by the standard variables: nothing is set up, and
//! nothing connects, unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. Then spans go over OTLP/HTTP
//! (`OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf`, the default, or
//! `http/json`) through the SDK's batch processor, on a thread of its own, so
//! exporting never delays a result; `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_TRACES_SAMPLER` are the SDK's own.
//!
//! One span per evaluation (`wrepl.evaluation`; served over MCP, the server
//! span `tools/call repl` with `mcp.method.name`, the child of the client's
//! span when it sent a `traceparent`), one child per inner call (`execute_tool
//! <tool>`, with the GenAI conventions' `gen_ai.*` attributes). Calls get
//! their span's W3C context before they run, whether or not spans are
//! exported: Bash commands see `TRACEPARENT`, `fetch()` sends `traceparent`.
//! No input or output text goes into a span.
//!
//! Metrics go the same way when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is set: the SDK's periodic reader,
//! on a thread of its own, every `OTEL_METRIC_EXPORT_INTERVAL` ms (60 s by
//! default) and once more at exit. `OTEL_TRACES_EXPORTER=none` or
//! `OTEL_METRICS_EXPORTER=none` turns one signal off.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::call::{to_hex, TraceContext};

static PROVIDER: OnceLock<Option<SdkTracerProvider>> = OnceLock::new();
static METERS: OnceLock<Option<SdkMeterProvider>> = OnceLock::new();

thread_local! {
    /// The ids the next span built on this thread gets (see [`ChosenIds`]).
    static NEXT: std::cell::Cell<([u8; 16], [u8; 8])> = const { std::cell::Cell::new(([0; 16], [0; 8])) };
}

/// The SDK's id generator: the ids wrepl chose (a call's span id is given to
/// the call before it runs, for its W3C context), set on this thread right
/// before the span is built; random ones otherwise.
#[derive(Debug)]
struct ChosenIds;

impl opentelemetry_sdk::trace::IdGenerator for ChosenIds {
    fn new_trace_id(&self) -> TraceId {
        let (t, _) = NEXT.with(std::cell::Cell::get);
        TraceId::from_bytes(if t == [0; 16] { random_id() } else { t })
    }
    fn new_span_id(&self) -> SpanId {
        let (_, s) = NEXT.with(std::cell::Cell::get);
        SpanId::from_bytes(if s == [0; 8] { random_id() } else { s })
    }
}

/// Build a span with the ids chosen for it.
fn with_ids<T>(trace: [u8; 16], span: [u8; 8], build: impl FnOnce() -> T) -> T {
    NEXT.with(|n| n.set((trace, span)));
    let out = build();
    NEXT.with(|n| n.set(([0; 16], [0; 8])));
    out
}

/// Why traces could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry: {0}")]
pub struct TelemetryError(String);

/// Set up the exporters the environment asks for (see the module docs);
/// `Ok(false)` when it asks for none. Call once, early; later calls return
/// the first answer.
pub fn init_from_env() -> Result<bool, TelemetryError> {
    if let (Some(t), Some(m)) = (PROVIDER.get(), METERS.get()) {
        return Ok(t.is_some() || m.is_some());
    }
    let set = |v: &str| std::env::var_os(v).is_some_and(|s| !s.is_empty());
    let off = |v: &str| std::env::var(v).is_ok_and(|s| s.trim().eq_ignore_ascii_case("none"));
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    let traces = !disabled
        && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !off("OTEL_TRACES_EXPORTER");
    let metrics = !disabled
        && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))
        && !off("OTEL_METRICS_EXPORTER");
    // The blocking HTTP clients the export threads use are built outside
    // any async runtime, on a thread of their own.
    let built = std::thread::spawn(move || -> Result<_, TelemetryError> {
        let tracer = traces.then(build_provider).transpose()?;
        let meter = metrics.then(build_meter_provider).transpose()?;
        Ok((tracer, meter))
    })
    .join()
    .map_err(|_| TelemetryError("the set-up panicked".into()))?;
    let (tracer, meter) = built?;
    let _ = PROVIDER.set(tracer);
    let _ = METERS.set(meter);
    Ok(traces || metrics)
}

/// The OTLP protocol for `signal` (`TRACES`, `METRICS`): its own variable,
/// else the general one, else `http/protobuf`.
fn protocol(signal: &str) -> Result<opentelemetry_otlp::Protocol, TelemetryError> {
    use opentelemetry_otlp::Protocol;
    match std::env::var(format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"))
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .as_deref()
    {
        Err(_) | Ok("http/protobuf") => Ok(Protocol::HttpBinary),
        Ok("http/json") => Ok(Protocol::HttpJson),
        Ok(other) => Err(TelemetryError(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={other:?} is not supported here (http/protobuf or http/json)"
        ))),
    }
}

fn build_provider() -> Result<SdkTracerProvider, TelemetryError> {
    use opentelemetry_otlp::WithExportConfig;
    crate::tools::mcp::ensure_crypto_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol("TRACES")?)
        .build()
        .map_err(|e| TelemetryError(format!("cannot build the OTLP exporter: {e}")))?;
    Ok(SdkTracerProvider::builder().with_batch_exporter(exporter).with_id_generator(ChosenIds).build())
}

fn build_meter_provider() -> Result<SdkMeterProvider, TelemetryError> {
    use opentelemetry_otlp::WithExportConfig;
    crate::tools::mcp::ensure_crypto_provider();
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(protocol("METRICS")?)
        .build()
        .map_err(|e| TelemetryError(format!("cannot build the OTLP metric exporter: {e}")))?;
    Ok(SdkMeterProvider::builder().with_periodic_exporter(exporter).build())
}

/// The meter wrepl's metrics are recorded with, when metrics are exported.
pub fn meter() -> Option<opentelemetry::metrics::Meter> {
    use opentelemetry::metrics::MeterProvider as _;
    METERS.get().and_then(Option::as_ref).map(|p| p.meter("wrepl"))
}

/// Whether spans are exported.
pub fn enabled() -> bool {
    PROVIDER.get().is_some_and(Option::is_some)
}

/// Export what is buffered (spans, and the metrics' last values) and stop,
/// within `timeout` (at the end of the process).
pub fn shutdown(timeout: Duration) {
    let tracer = PROVIDER.get().cloned().flatten();
    let meter = METERS.get().cloned().flatten();
    if tracer.is_none() && meter.is_none() {
        return;
    }
    // The blocking exporters must not run on an async runtime's thread.
    let _ = std::thread::spawn(move || {
        if let Some(p) = tracer {
            let _ = p.shutdown_with_timeout(timeout);
        }
        if let Some(m) = meter {
            let _ = m.shutdown_with_timeout(timeout);
        }
    })
    .join();
}

/// The trace an evaluation belongs to: its trace and span ids, the span it
/// continues (a client's), the sampling flag and the trace state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalTrace {
    /// The trace id (16 bytes, not all zero).
    pub trace_id: [u8; 16],
    /// The evaluation's own span id.
    pub span_id: [u8; 8],
    /// The span the evaluation continues (from the incoming `traceparent`).
    pub parent: Option<[u8; 8]>,
    /// Whether the trace is sampled.
    pub sampled: bool,
    /// The incoming `tracestate`, passed on as it came.
    pub tracestate: Option<String>,
}

fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != N * 2 || !s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// A W3C `traceparent` (version 00, or a later one read as 00 says):
/// trace id, parent span id and whether it is sampled; `None` when malformed
/// (all-zero ids included).
pub fn parse_traceparent(s: &str) -> Option<([u8; 16], [u8; 8], bool)> {
    let parts: Vec<&str> = s.trim().split('-').collect();
    let [version, trace, span, flags, rest @ ..] = parts.as_slice() else { return None };
    if version.len() != 2 || *version == "ff" || (*version == "00" && !rest.is_empty()) {
        return None;
    }
    let trace_id = unhex::<16>(trace).filter(|t| t.iter().any(|b| *b != 0))?;
    let span_id = unhex::<8>(span).filter(|t| t.iter().any(|b| *b != 0))?;
    let flags = unhex::<1>(flags)?[0];
    Some((trace_id, span_id, flags & 1 == 1))
}

fn random_id<const N: usize>() -> [u8; N] {
    loop {
        let id: [u8; N] = rand::random();
        if id.iter().any(|b| *b != 0) {
            return id;
        }
    }
}

impl EvalTrace {
    /// The trace of a new evaluation: continuing `incoming` when it is a
    /// valid W3C context; a new trace when spans are exported; otherwise
    /// none (wrepl invents no context nobody will see).
    pub fn for_evaluation(incoming: Option<&TraceContext>) -> Option<Self> {
        if let Some((trace_id, parent, sampled)) = incoming.and_then(|t| parse_traceparent(&t.traceparent)) {
            return Some(Self {
                trace_id,
                span_id: random_id(),
                parent: Some(parent),
                sampled,
                // The client's tracestate is passed on (to commands' environment,
                // HTTP headers): only one W3C allows, printable ASCII of at
                // most 512 bytes; any other is dropped.
                tracestate: incoming
                    .and_then(|t| t.tracestate.clone())
                    .filter(|s| s.len() <= 512 && s.bytes().all(|b| (0x20..=0x7e).contains(&b))),
            });
        }
        enabled().then(|| Self {
            trace_id: random_id(),
            span_id: random_id(),
            parent: None,
            sampled: true,
            tracestate: None,
        })
    }

    /// A new span id for one call, and its W3C context.
    pub fn child(&self) -> ([u8; 8], TraceContext) {
        let span = random_id();
        let traceparent = format!("00-{}-{}-{:02x}", to_hex(&self.trace_id), to_hex(&span), u8::from(self.sampled));
        (span, TraceContext { traceparent, tracestate: self.tracestate.clone() })
    }

    /// The trace id as 32 hex digits.
    pub fn trace_id_hex(&self) -> String {
        to_hex(&self.trace_id)
    }
}

/// One inner call of a traced evaluation, as its span shows it (the
/// pipeline keeps one per call; a few dozen bytes, no text).
#[derive(Debug, Clone)]
pub struct CallSpan {
    /// The span id the call got before it ran (its W3C context's).
    pub span_id: [u8; 8],
    /// The tool's wire name.
    pub tool: String,
    /// The `toolu_…` id.
    pub call_id: String,
    /// When it started.
    pub started: SystemTime,
    /// How long it took.
    pub duration: Duration,
    /// The failure's kind, when it failed or was refused.
    pub failure: Option<&'static str>,
    /// Bytes of the input that ran.
    pub bytes_in: u64,
    /// Bytes of the outcome.
    pub bytes_out: u64,
    /// How the permission stage decided it: the decision, the rule that
    /// made it, what a PreToolUse hook said.
    pub permission: Option<crate::call::PermissionNote>,
    /// What the PostToolUse (or PostToolUseFailure) hooks said, when any
    /// ran: `ok`, `block` or `stop`.
    pub post_hook: Option<&'static str>,
}

/// What an evaluation's span says.
#[derive(Debug, Clone)]
pub struct EvalSpan<'a> {
    /// When it started.
    pub started: SystemTime,
    /// Its wall time.
    pub wall: Duration,
    /// The error's name, when it threw or was stopped.
    pub error: Option<&'a str>,
    /// Guest time in microseconds.
    pub guest_cpu_us: u64,
    /// The session, if durable.
    pub session: Option<&'a str>,
    /// Whether the block was replayed from a log rather than run live.
    pub replayed: bool,
    /// The MCP tool whose `tools/call` the evaluation served, if any.
    pub mcp_tool: Option<&'a str>,
}

/// Export one evaluation's span and its calls' spans (when spans are
/// exported; otherwise nothing).
pub fn export_evaluation(trace: &EvalTrace, eval: &EvalSpan<'_>, calls: &[CallSpan]) {
    let Some(Some(provider)) = PROVIDER.get() else { return };
    let tracer = provider.tracer("wrepl");
    let flags = if trace.sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
    let state = trace.tracestate.as_deref().and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
    let trace_id = TraceId::from_bytes(trace.trace_id);
    let parent_cx = match trace.parent {
        Some(p) => Context::new().with_remote_span_context(SpanContext::new(
            trace_id,
            SpanId::from_bytes(p),
            flags,
            true,
            state.clone(),
        )),
        None => Context::new(),
    };
    let mut attrs = vec![
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", eval.mcp_tool.unwrap_or("repl").to_string()),
        KeyValue::new("wrepl.guest_cpu_us", eval.guest_cpu_us as i64),
        KeyValue::new("wrepl.replayed", eval.replayed),
        KeyValue::new("wrepl.calls", calls.len() as i64),
    ];
    if let Some(s) = eval.session {
        attrs.push(KeyValue::new("wrepl.session", s.to_string()));
    }
    if let Some(e) = eval.error {
        attrs.push(KeyValue::new("error.type", e.to_string()));
    }
    // Served over MCP, the span is the server side of the client's
    // `tools/call` (the MCP semantic conventions' name and kind).
    let (name, kind) = match eval.mcp_tool {
        Some(tool) => {
            attrs.push(KeyValue::new("mcp.method.name", "tools/call"));
            (format!("tools/call {tool}"), SpanKind::Server)
        }
        None => ("wrepl.evaluation".to_string(), SpanKind::Internal),
    };
    let builder = tracer.span_builder(name).with_kind(kind).with_start_time(eval.started).with_attributes(attrs);
    let mut span = with_ids(trace.trace_id, trace.span_id, || tracer.build_with_context(builder, &parent_cx));
    if let Some(e) = eval.error {
        opentelemetry::trace::Span::set_status(&mut span, Status::error(e.to_string()));
    }
    let eval_cx = SpanContext::new(trace_id, SpanId::from_bytes(trace.span_id), flags, false, state);
    let child_parent = Context::new().with_remote_span_context(eval_cx);
    for c in calls {
        let mut attrs = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", c.tool.clone()),
            KeyValue::new("gen_ai.tool.call.id", c.call_id.clone()),
            KeyValue::new("wrepl.bytes_in", c.bytes_in as i64),
            KeyValue::new("wrepl.bytes_out", c.bytes_out as i64),
        ];
        if let Some(kind) = c.failure {
            attrs.push(KeyValue::new("error.type", kind));
        }
        if let Some(p) = &c.permission {
            attrs.push(KeyValue::new("wrepl.permission.decision", p.decision));
            if let Some(r) = &p.rule {
                attrs.push(KeyValue::new("wrepl.permission.rule", r.clone()));
            }
            if let Some(h) = p.hook {
                attrs.push(KeyValue::new("wrepl.hook.pre_tool_use", h));
            }
        }
        if let Some(h) = c.post_hook {
            attrs.push(KeyValue::new("wrepl.hook.post_tool_use", h));
        }
        let builder = tracer
            .span_builder(format!("execute_tool {}", c.tool))
            .with_kind(SpanKind::Internal)
            .with_start_time(c.started)
            .with_attributes(attrs);
        let mut s = with_ids(trace.trace_id, c.span_id, || tracer.build_with_context(builder, &child_parent));
        if let Some(kind) = c.failure {
            opentelemetry::trace::Span::set_status(&mut s, Status::error(kind.to_string()));
        }
        opentelemetry::trace::Span::end_with_timestamp(&mut s, c.started + c.duration);
    }
    opentelemetry::trace::Span::end_with_timestamp(&mut span, eval.started + eval.wall);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_read_strictly() {
        let (t, s, sampled) = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(to_hex(&t), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(to_hex(&s), "00f067aa0ba902b7");
        assert!(sampled);
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad:?}");
        }
        let incoming = TraceContext {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00".into(),
            tracestate: Some("k=v".into()),
        };
        let t = EvalTrace::for_evaluation(Some(&incoming)).unwrap();
        assert_eq!(t.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let (_, child) = t.child();
        assert!(
            child.traceparent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-") && child.traceparent.ends_with("-00")
        );
        assert_eq!(child.tracestate.as_deref(), Some("k=v"));
        for bad in ["k=v\r\nx-injected: 1", "k=v\0", &"k=v,".repeat(200)] {
            let t = EvalTrace::for_evaluation(Some(&TraceContext {
                traceparent: incoming.traceparent.clone(),
                tracestate: Some(bad.to_string()),
            }))
            .unwrap();
            assert_eq!(t.tracestate, None, "{bad:?} is dropped");
        }
    }
}
