//! Front calls: the model's calls of the tools wrepl serves itself (the MCP
//! `repl` tool, script-registered tools). They run outside the inner-call
//! path (in the guest, as evaluations), so the dispatcher admits them
//! through the same stages before they run ([`Dispatcher::admit`]) and
//! settles them after ([`Dispatcher::settle`]).

use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::dispatcher::Dispatcher;
use super::events::Phase;
pub use super::gate::FrontDefault;
use super::gate::Gate;
use super::hooks::{HookContext, HookEvent};
use super::records::{CallRecord, Finished, JsonText};
use crate::call::{fingerprint_text, Call, CallBudget, CallFailure, FailureKind, Origin, TraceContext};
use crate::ids;

/// A call the model makes of a tool wrepl serves itself (the MCP `repl`
/// tool, a script-registered tool): it passes the same stages as an inner
/// call, but runs outside the pipeline (in the guest), between
/// [`Dispatcher::admit`] and [`Dispatcher::settle`].
#[derive(Debug, Clone)]
pub struct FrontCall {
    /// The name the model called (`repl`, a registered tool's wire name).
    pub tool: String,
    /// Its input.
    pub input: Value,
    /// The input's JSON Schema.
    pub schema: Value,
    /// What happens when no rule or hook decides.
    pub default: FrontDefault,
    /// The trace context the call continues, if the client sent one.
    pub trace: Option<TraceContext>,
}

/// A front call that passed every stage up to execution.
#[derive(Debug)]
pub struct Admission {
    pub(super) call: Call,
    /// Hook warnings so far.
    pub warnings: Vec<String>,
}

impl Admission {
    /// The input to run (after PreToolUse rewrites).
    pub fn input(&self) -> &Value {
        &self.call.input
    }
    /// The call's `toolu_…` id.
    pub fn id(&self) -> &str {
        &self.call.id
    }
}

/// A front call refused before it ran.
#[derive(Debug)]
pub struct Refusal {
    /// Why.
    pub failure: CallFailure,
    /// Its record (input as given, the refusal as output).
    pub record: CallRecord,
    /// Hook warnings.
    pub warnings: Vec<String>,
}

/// A front call after its PostToolUse stage.
#[derive(Debug)]
pub struct Settlement {
    /// Its record.
    pub record: CallRecord,
    /// Set when a PostToolUse hook blocked the result (exit 2 / `decision:
    /// block`): the reason the result is withheld.
    pub blocked: Option<String>,
    /// Hook warnings.
    pub warnings: Vec<String>,
}

impl Dispatcher {
    /// Admit a model's call of a tool wrepl serves itself: a `toolu_…` id and
    /// a `start` event, then schema, isolation latch, PreToolUse hooks (which
    /// may rewrite the input) and permission, exactly as for inner calls.
    /// On success the caller runs it and hands the outcome to
    /// [`Dispatcher::settle`].
    pub async fn admit(&self, call: FrontCall) -> Result<Admission, Refusal> {
        let FrontCall { tool, input, schema, default, trace } = call;
        let started = Instant::now();
        // Serializing a `Value` cannot fail (its map keys are strings).
        let schema_text = serde_json::to_string(&schema).unwrap_or_default();
        let mut call = Call {
            id: ids::tool_use_id(),
            fingerprint: Some(fingerprint_text(&schema_text).into()),
            tool,
            input,
            origin: Origin::Model,
            cwd: self.p.workspace.default_cwd().to_path_buf(),
            budget: CallBudget { started, cancel: CancellationToken::new() },
            trace,
            permission: None,
        };
        self.emit(&call.id, &call.tool, Phase::Start, None, started);
        let mut warnings = Vec::new();
        let admitted = match self.p.front_validators.get(&call.tool, &schema_text, &schema) {
            Err(e) => Err(CallFailure::new(FailureKind::InvalidInput, e.to_string())),
            Ok(validator) => {
                let gate = Gate::Front { validator: &validator, default: &default };
                self.admit_stages(&mut call, &gate, &mut warnings).await
            }
        };
        match admitted {
            Ok(()) => {
                self.emit(&call.id, &call.tool, Phase::Executing, None, started);
                Ok(Admission { call, warnings })
            }
            Err(failure) => {
                self.emit_error(&call.id, &call.tool, failure.message.clone(), failure.kind.as_str(), started);
                let ms = started.elapsed().as_secs_f64() * 1e3;
                let Call { id, tool, input, .. } = call;
                let record = Finished::failure(id, tool, JsonText::of(&input), &failure, ms).record();
                Err(Refusal { failure, record, warnings })
            }
        }
    }

    /// Finish an admitted front call: PostToolUse (or PostToolUseFailure)
    /// hooks, a `complete` / `error` event and its record. `outcome` is the
    /// structured result and its text, or the error message.
    pub async fn settle(&self, admission: Admission, outcome: Result<(Value, String), String>) -> Settlement {
        let Admission { call, mut warnings } = admission;
        let Call { id, tool, input, cwd, budget, .. } = call;
        let started = budget.started;
        let hook_ctx =
            HookContext { session_id: &self.p.session_id, tool_name: &tool, tool_use_id: &id, cwd: &cwd, trace: None };
        let mut blocked = None;
        match &outcome {
            Ok((value, _)) => {
                if self.p.hooks.has_hooks(HookEvent::PostToolUse, &tool) {
                    let post = self.p.hooks.post_tool_use(&hook_ctx, &input, value).await;
                    warnings.extend(post.warnings.into_iter().map(|w| format!("PostToolUse hook for {tool}: {w}")));
                    warnings.extend(
                        post.additional_context
                            .into_iter()
                            .map(|c| format!("PostToolUse hook context for {tool}: {c}")),
                    );
                    blocked = match (post.block_reason, post.stop) {
                        (b, None) => b,
                        (None, Some(stop)) => Some(format!("a PostToolUse hook stopped: {stop}")),
                        (Some(b), Some(stop)) => Some(format!("{b}\na PostToolUse hook stopped: {stop}")),
                    };
                }
            }
            Err(message) => {
                if self.p.hooks.has_hooks(HookEvent::PostToolUseFailure, &tool) {
                    let post = self.p.hooks.post_tool_use_failure(&hook_ctx, &input, message).await;
                    warnings
                        .extend(post.warnings.into_iter().map(|w| format!("PostToolUseFailure hook for {tool}: {w}")));
                    warnings.extend(
                        post.additional_context
                            .into_iter()
                            .map(|c| format!("PostToolUseFailure hook context for {tool}: {c}")),
                    );
                }
            }
        }
        let duration_ms = started.elapsed().as_secs_f64() * 1e3;
        let record = match outcome {
            Ok((value, text)) => {
                self.emit(&id, &tool, Phase::Complete, None, started);
                let (input, output) = (JsonText::of(&input), JsonText::of(&value));
                Finished { id, tool, input, ok: true, output, text, duration_ms }.record()
            }
            Err(message) => {
                self.emit_error(&id, &tool, message.clone(), FailureKind::Failed.as_str(), started);
                let f = CallFailure::new(FailureKind::Failed, message);
                Finished::failure(id, tool, JsonText::of(&input), &f, duration_ms).record()
            }
        };
        Settlement { record, blocked, warnings }
    }
}
