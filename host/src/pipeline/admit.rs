//! Stages 1-4 of every call, inner or front: the input schema, the
//! isolation latch, PreToolUse hooks (a rewrite is validated again) and the
//! permission decision (rules, grants, hooks, the fallback, the approver).

use std::path::{Path, PathBuf};

use super::dispatcher::Dispatcher;
use super::gate::{FrontDefault, Gate};
use super::hooks::{HookContext, HookEvent};
use super::permissions::{Decision, Hint, PermissionRequest};
use super::stages::{decide, tool_failure, validate};
use crate::call::{Call, CallFailure, FailureKind, PermissionNote};

impl Dispatcher {
    /// Stages 1-4, shared by inner and front calls: schema, isolation latch,
    /// PreToolUse hooks (a rewrite is re-validated), permission (and the
    /// approver for `ask`).
    pub(super) async fn admit_stages(
        &self,
        call: &mut Call,
        gate: &Gate<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), CallFailure> {
        let Call { id, tool, input, cwd, trace, .. } = call;
        let (id, tool_name, cwd): (&str, &str, &Path) = (id, tool, cwd);
        let trace = trace.as_ref();
        // 1. the input schema
        if !input.is_object() {
            return Err(CallFailure::new(
                FailureKind::InvalidInput,
                format!("the input of {tool_name} must be a JSON object"),
            ));
        }
        validate(tool_name, gate.validator(), input)?;
        // 2. isolation latch: checked and reserved in one step, before any
        // await, so parallel calls cannot both pass (a refused call still
        // latches: the conservative choice).
        self.latch.check_and_latch(tool_name).map_err(|m| CallFailure::new(FailureKind::Isolation, m))?;
        // 3. PreToolUse hooks: may decide and rewrite the input
        let mut hook_decision = None;
        let mut hook_reason = None;
        if self.p.hooks.has_hooks(HookEvent::PreToolUse, tool_name) {
            let hook_ctx = HookContext { session_id: &self.p.session_id, tool_name, tool_use_id: id, cwd, trace };
            let pre = self.p.hooks.pre_tool_use(&hook_ctx, input).await;
            warnings.extend(pre.warnings.into_iter().map(|w| format!("PreToolUse hook for {tool_name}: {w}")));
            // Extra context for the model: shown in the output it reads.
            warnings.extend(
                pre.additional_context
                    .into_iter()
                    .map(|c| format!("PreToolUse hook context for {tool_name} ({id}): {c}")),
            );
            if let Some(updated) = pre.updated_input {
                validate(tool_name, gate.validator(), &updated).map_err(|f| {
                    CallFailure::new(
                        FailureKind::InvalidInput,
                        format!("a PreToolUse hook rewrote the input into an invalid one: {}", f.message),
                    )
                })?;
                *input = updated;
            }
            // `"continue": false` wins over every decision: the call does
            // not run, and the evaluation stops.
            if let Some(reason) = pre.stop {
                return Err(self.hook_stop("PreToolUse", tool_name, id, &reason, warnings));
            }
            hook_decision = pre.decision;
            hook_reason = pre.reason;
        }
        // 4. permission, against the input that will actually run
        let (matched, fallback, always_ask, hint) = match gate {
            Gate::Tool { tool, .. } => {
                let mut paths = Vec::new();
                for p in tool.input_paths(input) {
                    // Rules see both the path as written and where it really
                    // leads inside the root (deny matches if either does).
                    let (r, real) = self.p.workspace.resolve_with_real(cwd, &p).map_err(tool_failure)?;
                    if real != r.abs {
                        paths.push(real);
                    }
                    paths.push(r.abs);
                }
                let subject = tool.rule_subject(input);
                let req = PermissionRequest {
                    tool: tool_name,
                    command: subject.as_deref(),
                    paths: &paths,
                    project_root: self.p.workspace.default_cwd(),
                };
                let mut matched = self.p.rules.evaluate(&req);
                if matched.as_ref().is_none_or(|m| m.decision == Decision::Ask) {
                    if let Some(g) = self.granted(&req) {
                        matched = Some(g);
                    }
                }
                // A tool "also checked as" another (Glob and Grep as Read) is
                // denied by that tool's deny rules for the paths it names: a
                // searched directory is denied if a rule denies it or what is
                // inside it (probed with a child path, so `dir/**` matches).
                if let Some(other) = tool.also_checked_as().filter(|_| !paths.is_empty()) {
                    let probed: Vec<PathBuf> =
                        paths.iter().flat_map(|p| [p.clone(), p.join("__wrepl_search_probe__")]).collect();
                    let as_other = PermissionRequest { tool: other, paths: &probed, ..req };
                    if let Some(m) = self.p.rules.evaluate(&as_other).filter(|m| m.decision == Decision::Deny) {
                        matched = Some(m);
                    }
                }
                // The reason is only formatted when the fallback decides (not on the hot path).
                let read_only = tool.read_only(input);
                let fallback = if tool.allowed_by_default(input) { Decision::Allow } else { Decision::Ask };
                // A write inside a `.git` directory (its config, hooks,
                // worktree configs) can make the next git command run a
                // program, so a broad allow (`Write`, `Edit(./**)`) does not
                // cover it: only a rule that names `.git` does, and
                // otherwise it is asked about.
                let git = if read_only { None } else { paths.iter().find(|p| in_git_dir(p)) };
                let mut hint = None;
                if let Some(p) = git {
                    if matched.as_ref().is_some_and(|m| m.decision == Decision::Allow && !names_git_dir(&m.rule)) {
                        let shown = p.strip_prefix(self.p.workspace.default_cwd()).unwrap_or(p);
                        hint = Some(Hint {
                            why: format!(
                                "{} is inside a .git directory, where a file can make git run a program \
                                 (core.fsmonitor, hooks), and the allow rule {:?} does not name it",
                                shown.display(),
                                matched.as_ref().map(|m| m.rule.as_str()).unwrap_or_default()
                            ),
                            grant: format!("a rule that names it (e.g. --allow '{tool_name}({})')", shown.display()),
                        });
                        matched = None;
                    }
                }
                // What no rule covers, for the message (shell commands only).
                if hint.is_none() && matched.is_none() && fallback != Decision::Allow {
                    hint = self.p.rules.explain(&req);
                }
                (matched, fallback, None, hint)
            }
            Gate::Front { default, .. } => {
                let req = PermissionRequest {
                    tool: tool_name,
                    command: None,
                    paths: &[],
                    project_root: self.p.workspace.default_cwd(),
                };
                let mut matched = self.p.rules.evaluate(&req);
                if matched.as_ref().is_none_or(|m| m.decision == Decision::Ask) {
                    if let Some(g) = self.granted(&req) {
                        matched = Some(g);
                    }
                }
                match default {
                    FrontDefault::Allow => (matched, Decision::Allow, None, None),
                    FrontDefault::AlwaysAsk(q) => (matched, Decision::Ask, Some(q.as_str()), None),
                }
            }
        };
        // Asked for only when the fallback does not allow (an allow states no reason).
        let fallback_why = || match gate {
            Gate::Front { default: FrontDefault::AlwaysAsk(q), .. } => q.clone(),
            Gate::Front { .. } => String::new(),
            Gate::Tool { .. } => match &hint {
                Some(h) => format!("permission to use {tool_name} was not granted: {}", h.why),
                None => format!("permission to use {tool_name} was not granted"),
            },
        };
        let rule = matched.as_ref().map(|m| m.rule.clone());
        let hook_said = hook_decision;
        let (mut decision, mut why) = decide(tool_name, matched, hook_decision, hook_reason, (fallback, fallback_why));
        // A tool that always asks (a registered tool) asks whatever the
        // allow rules say; only a deny (rule or hook) answers first.
        if let Some(q) = always_ask.filter(|_| decision != Decision::Deny) {
            (decision, why) = (Decision::Ask, q.to_string());
        }
        let hook = hook_said.map(|d| match d {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::Ask => "ask",
        });
        let note = |decision: &'static str| Some(PermissionNote { decision, rule: rule.clone(), hook });
        match decision {
            Decision::Allow => {
                call.permission = note("allow");
                Ok(())
            }
            Decision::Deny => {
                call.permission = note("deny");
                Err(CallFailure::new(FailureKind::Denied, why))
            }
            Decision::Ask => {
                let approved = match &self.p.approver {
                    Some(a) => a.approve(tool_name, input, &why).await,
                    None => false,
                };
                call.permission = note(if approved { "approved" } else { "declined" });
                if approved {
                    return Ok(());
                }
                let message = match (&self.p.approver, always_ask) {
                    (Some(_), None) => format!("{why}; the approver declined"),
                    (Some(_), Some(_)) => format!("{why}: the approver declined"),
                    (None, None) => {
                        let grant = match &hint {
                            Some(h) => h.grant.clone(),
                            None => format!("an allow rule (e.g. --allow '{tool_name}')"),
                        };
                        format!(
                            "{why}; nobody can be asked in this non-interactive session, so it is denied. Grant it with {grant}"
                        )
                    }
                    (None, Some(_)) => {
                        format!("{why}: registered tools always ask, and nobody can be asked in this session")
                    }
                };
                Err(CallFailure::new(FailureKind::Denied, message))
            }
        }
    }
}

/// Whether `path` is a `.git` directory's, or the `.git` entry itself (a
/// gitfile names the git directory to use).
fn in_git_dir(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == ".git")
}

/// Whether an allow rule names a `.git` directory: its path pattern has a
/// `.git` component (`Write(./.git/config)`, `Edit(**/.git/hooks/*)`; not
/// `Write(.gitignore)`, not `Write`).
fn names_git_dir(rule: &str) -> bool {
    let Some(spec) = rule.split_once('(').and_then(|(_, rest)| rest.strip_suffix(')')) else { return false };
    spec.split('/').any(|c| c == ".git")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_rule_with_a_git_component_names_the_git_directory() {
        for yes in ["Write(./.git/config)", "Edit(**/.git/hooks/*)", "Write(//abs/repo/.git/config)", "Write(.git/**)"]
        {
            assert!(names_git_dir(yes), "{yes}");
        }
        for no in ["Write", "Write(./**)", "Write(.gitignore)", "Write(./.github/**)", "Write(**/x.git/y)"] {
            assert!(!names_git_dir(no), "{no}");
        }
        assert!(in_git_dir(Path::new("/r/.git/config")) && in_git_dir(Path::new("/r/.git")));
        assert!(!in_git_dir(Path::new("/r/.gitignore")) && !in_git_dir(Path::new("/r/.github/x")));
    }
}
