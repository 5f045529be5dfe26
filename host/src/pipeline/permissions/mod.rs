//! Permission rules: `allow`, `ask` and `deny` lists of `Tool` or
//! `Tool(specifier)` rules.
//!
//! This module holds the decision, the request and the compiled lists with
//! their evaluation; a rule's text is parsed in `rules`, path globs live in
//! `path_spec` and the shell-command splitting in `shell`.
//!
//! # Tool part
//!
//! - `Bash`, `Read`, `mcp__srv__tool`: exactly that tool;
//! - `mcp__srv`: every tool of MCP server `srv` (`mcp__srv__*`, not `mcp__srv2__*`);
//! - `mcp__srv__*`: a trailing `*` matches any rest of the name; it is only
//!   accepted at the end of an MCP name (`mcp__...`).
//!
//! # Specifier
//!
//! No specifier, or `(*)`, covers every call of the tool. Otherwise the
//! specifier's kind is the rule's tool's [`RuleKind`] (see [`RuleKinds`]):
//!
//! - **path rules** for tools of kind `Path` (the file tools): a gitignore-style
//!   glob (see below), matched against [`PermissionRequest::paths`];
//! - **command rules** for every other tool: `npm test` is an exact match,
//!   `git status:*` a prefix match (the subject equals `git status` or starts
//!   with `git status` followed by a space or tab). They match
//!   [`PermissionRequest::command`]; for tools of kind `Shell` (Bash) the
//!   command is first split into subcommands (below).
//!
//! A path rule never matches a request without paths, a command rule never
//! matches a request without a command.
//!
//! # Evaluation
//!
//! [`PermissionRules::evaluate`] checks deny, then ask, then allow, and
//! reports the first list that matches; `None` means no rule applies and the
//! caller applies its default. The lists are asymmetric, always towards the
//! stricter outcome:
//!
//! - a **deny** rule matches when ANY subcommand / ANY path matches it;
//! - the **allow** (or **ask**) list matches when EVERY subcommand and EVERY
//!   path is matched by some rule of that list (not necessarily the same rule).
//!
//! # Shell commands
//!
//! A shell command is split on `&&`, `||`, `;`, `|`, `|&`, `&` (background)
//! and newlines outside quotes (single quotes, double quotes and backslash
//! escapes are respected). For **allow/ask** each subcommand is compared
//! verbatim (only surrounding whitespace is trimmed), and a subcommand is
//! *not matchable at all* when it contains:
//!
//! - command substitution (`$(…)`, backticks, also inside double quotes) or
//!   process substitution (`<(…)`, `>(…)`);
//! - an output redirection to anything but `/dev/null` or a file descriptor
//!   (`> out.txt`, `>> log`, `&> f`, `<> f`), since `Bash(echo:*)` must not
//!   allow overwriting files;
//! - control characters other than tab, or an unterminated quote.
//!
//! Leading `VAR=value` assignments are kept, so `FOO=1 git status` is not
//! allowed by `Bash(git status:*)` (assignments such as `GIT_DIR=…` or
//! `LD_PRELOAD=…` change what a command does).
//!
//! For **deny** the same split is used, plus each command substitution body
//! is split as well, and each subcommand is tried verbatim and normalised:
//! quotes removed, whitespace collapsed, leading `VAR=value` assignments,
//! grouping characters (`(`, `{`, `!`) and wrapper words (`sudo`, `env`,
//! `exec`, `command`, `nohup`, `time`, `xargs`, `if`, `then`, `do`, …, with
//! their `-options`) stripped, and the program path reduced to its base name.
//! So `Bash(rm:*)` also denies `FOO=1 rm -rf /`, `/bin/rm x`, `sudo rm x`,
//! `"rm" x`, `ls; rm x` and `echo $(rm x)`. Deny command rules are still a
//! best-effort blocklist (a shell can always spell a command differently, e.g.
//! `sh -c`, `eval`, aliases); the allow list is the real boundary.
//!
//! # Path globs
//!
//! Request paths should be absolute and resolved (a relative one is taken
//! relative to the project root); they are normalised lexically (`.` and
//! `..` removed) before matching, as is the project root. Specifier forms:
//!
//! | specifier           | meaning                                             |
//! |---------------------|-----------------------------------------------------|
//! | `./src/**`, `src/**`, `/src/**` | relative to the project root            |
//! | `//etc/**`          | absolute path `/etc/**`                             |
//! | `~/.ssh/**`         | relative to `$HOME` (read when the rule is parsed)  |
//! | `.env`, `*.pem`, `**/.env` | no inner `/` or a leading `**/`: anywhere on disk |
//!
//! Globs use [`globset`] with `literal_separator` (`*` and `?` do not cross
//! `/`, `**` does). As in gitignore, a pattern also covers everything below a
//! matching directory (`Read(./secrets)` covers `./secrets/key`), and a
//! trailing `/` is ignored. `..` and `.` components are rejected in rules.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::settings::{PermissionSettings, SettingsError};
use crate::tools::{RuleKind, Tool};

mod path_spec;
mod rules;
mod shell;

use path_spec::normalize;
use rules::Spec;
pub use rules::{Rule, ToolPattern};
use shell::{deny_candidates, split_shell, Part};

/// How each tool's rule specifiers match: taken from the tools themselves
/// ([`Tool::rule_kind`]); a name no tool has matches as a whole command.
#[derive(Debug, Clone, Default)]
pub struct RuleKinds(BTreeMap<String, RuleKind>);

impl RuleKinds {
    /// The kinds of these tools.
    pub fn of<'a>(tools: impl IntoIterator<Item = &'a Arc<dyn Tool>>) -> Self {
        Self(tools.into_iter().map(|t| (t.name().to_string(), t.rule_kind())).collect())
    }

    /// The kinds of the built-in tools.
    pub fn builtin() -> Self {
        Self::of(&crate::tools::builtin_tools())
    }

    /// The kind of `tool`'s rules.
    pub fn get(&self, tool: &str) -> RuleKind {
        self.0.get(tool).copied().unwrap_or(RuleKind::Command)
    }
}

/// The outcome of a permission check. Ordered by strictness:
/// `Allow < Ask < Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run without asking.
    Allow,
    /// Ask the user.
    Ask,
    /// Refuse.
    Deny,
}

impl Decision {
    /// `"allow"`, `"ask"` or `"deny"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is being checked.
#[derive(Debug, Clone, Copy)]
pub struct PermissionRequest<'a> {
    /// Tool name.
    pub tool: &'a str,
    /// What command rules match (the shell command for `Bash`), if any.
    pub command: Option<&'a str>,
    /// The absolute, resolved paths the call touches.
    pub paths: &'a [PathBuf],
    /// The project root that relative rule globs are anchored at.
    pub project_root: &'a Path,
}

/// A matching rule list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Matched {
    /// The list that matched.
    pub decision: Decision,
    /// The rule that matched, as written; when several rules of an
    /// allow/ask list were needed (one per subcommand or path) they are
    /// joined with `", "`.
    pub rule: String,
}

/// Compiled `allow`, `ask` and `deny` lists.
#[derive(Debug, Clone)]
pub struct PermissionRules {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    kinds: RuleKinds,
}

impl Default for PermissionRules {
    fn default() -> Self {
        Self::with_kinds(RuleKinds::builtin())
    }
}

impl PermissionRules {
    /// No rules, for the built-in tools: [`PermissionRules::evaluate`]
    /// matches nothing.
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// No rules, for tools whose rule kinds are `kinds`.
    pub fn with_kinds(kinds: RuleKinds) -> Self {
        Self { allow: Vec::new(), ask: Vec::new(), deny: Vec::new(), kinds }
    }

    /// Parse the rules of a settings file (built-in tools). Errors name the
    /// rule's field (`permissions.deny[1]`).
    pub fn from_settings(settings: &PermissionSettings) -> Result<Self, SettingsError> {
        Self::from_settings_for(settings, RuleKinds::builtin())
    }

    /// Parse the rules of a settings file for tools of these rule kinds.
    pub fn from_settings_for(settings: &PermissionSettings, kinds: RuleKinds) -> Result<Self, SettingsError> {
        let mut rules = Self::with_kinds(kinds);
        for (list, name, target) in [
            (&settings.allow, "allow", &mut rules.allow),
            (&settings.ask, "ask", &mut rules.ask),
            (&settings.deny, "deny", &mut rules.deny),
        ] {
            for (i, text) in list.iter().enumerate() {
                target.push(parse_rule(text, format!("permissions.{name}[{i}]"), &rules.kinds)?);
            }
        }
        Ok(rules)
    }

    /// Add an allow rule (e.g. from `--allow`).
    pub fn add_allow(&mut self, rule: &str) -> Result<(), SettingsError> {
        let r = parse_rule(rule, "allow".into(), &self.kinds)?;
        self.allow.push(r);
        Ok(())
    }

    /// Add an ask rule.
    #[cfg(test)]
    pub fn add_ask(&mut self, rule: &str) -> Result<(), SettingsError> {
        let r = parse_rule(rule, "ask".into(), &self.kinds)?;
        self.ask.push(r);
        Ok(())
    }

    /// Add a deny rule.
    pub fn add_deny(&mut self, rule: &str) -> Result<(), SettingsError> {
        let r = parse_rule(rule, "deny".into(), &self.kinds)?;
        self.deny.push(r);
        Ok(())
    }

    /// True when there are no rules at all.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    /// Check a request: deny, then ask, then allow (see the module docs).
    /// `None` when no list matches; the caller applies its default.
    pub fn evaluate(&self, req: &PermissionRequest) -> Option<Matched> {
        let subject = Subject::new(req, self.kinds.get(req.tool) == RuleKind::Shell);
        if let Some(rule) = self.deny.iter().find(|r| subject.deny_matches(r)) {
            return Some(Matched { decision: Decision::Deny, rule: rule.text.clone() });
        }
        for (list, decision) in [(&self.ask, Decision::Ask), (&self.allow, Decision::Allow)] {
            if let Some(rule) = subject.list_matches(list) {
                return Some(Matched { decision, rule });
            }
        }
        None
    }
}

fn parse_rule(text: &str, field: String, kinds: &RuleKinds) -> Result<Rule, SettingsError> {
    Rule::parse_for(text, kinds).map_err(|reason| SettingsError::InvalidRule { field, rule: text.to_string(), reason })
}

/// A request prepared for matching.
struct Subject<'a> {
    tool: &'a str,
    /// Subcommands for allow/ask (`None`: the request has no command).
    parts: Option<Vec<Part>>,
    /// Candidate spellings for deny.
    deny_candidates: Option<Vec<String>>,
    paths: Vec<PathBuf>,
    root: PathBuf,
}

impl<'a> Subject<'a> {
    fn new(req: &PermissionRequest<'a>, shell: bool) -> Self {
        let root = normalize(req.project_root);
        let (parts, deny_candidates) = match req.command {
            None => (None, None),
            Some(cmd) if shell => (Some(split_shell(cmd)), Some(deny_candidates(cmd))),
            Some(cmd) => {
                let t = cmd.trim().to_string();
                (Some(vec![Part { text: t.clone(), safe: true }]), Some(vec![t]))
            }
        };
        let paths = req.paths.iter().map(|p| normalize(&root.join(p))).collect();
        Subject { tool: req.tool, parts, deny_candidates, paths, root }
    }

    fn deny_matches(&self, rule: &Rule) -> bool {
        if !rule.tool.matches(self.tool) {
            return false;
        }
        match &rule.spec {
            Spec::Any => true,
            Spec::Command(c) => self
                .deny_candidates
                .as_ref()
                .is_some_and(|cands| cands.iter().any(|cand| c.raw.matches(cand) || c.normalized.matches(cand))),
            Spec::Path(p) => self.paths.iter().any(|path| p.matches(path, &self.root)),
        }
    }

    /// Every subcommand / path must be matched by some rule of `list`.
    /// Returns the rule(s) used.
    fn list_matches(&self, list: &[Rule]) -> Option<String> {
        let applicable: Vec<&Rule> = list.iter().filter(|r| r.tool.matches(self.tool)).collect();
        if let Some(rule) = applicable.iter().find(|r| matches!(r.spec, Spec::Any)) {
            return Some(rule.text.clone());
        }
        if let Some(parts) = self.parts.as_ref().filter(|p| !p.is_empty()) {
            let used = covering(parts, &applicable, |part, spec| match spec {
                Spec::Command(c) => part.safe && c.raw.matches(&part.text),
                _ => false,
            });
            if used.is_some() {
                return used;
            }
        }
        if !self.paths.is_empty() {
            return covering(&self.paths, &applicable, |path, spec| match spec {
                Spec::Path(p) => p.matches(path, &self.root),
                _ => false,
            });
        }
        None
    }
}

/// If every item is matched by some rule, the distinct rules used, in order
/// of first use, joined with `", "`.
fn covering<T>(items: &[T], rules: &[&Rule], hit: impl Fn(&T, &Spec) -> bool) -> Option<String> {
    let mut used: Vec<&str> = Vec::new();
    for item in items {
        let rule = rules.iter().find(|r| hit(item, &r.spec))?;
        if !used.contains(&rule.text.as_str()) {
            used.push(&rule.text);
        }
    }
    Some(used.join(", "))
}

#[cfg(test)]
pub(super) mod testing {
    //! Rule lists and requests shared by the tests of every submodule.

    use std::path::{Path, PathBuf};

    use super::*;

    pub fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionRules {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        PermissionRules::from_settings(&PermissionSettings { allow: v(allow), ask: v(ask), deny: v(deny) }).unwrap()
    }

    pub const ROOT: &str = "/proj";

    pub fn bash(r: &PermissionRules, cmd: &str) -> Option<Decision> {
        let req = PermissionRequest { tool: "Bash", command: Some(cmd), paths: &[], project_root: Path::new(ROOT) };
        r.evaluate(&req).map(|m| m.decision)
    }

    pub fn path_req(r: &PermissionRules, tool: &str, paths: &[&str]) -> Option<Decision> {
        let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        let req = PermissionRequest { tool, command: None, paths: &paths, project_root: Path::new(ROOT) };
        r.evaluate(&req).map(|m| m.decision)
    }

    pub fn tool(r: &PermissionRules, tool: &str) -> Option<Decision> {
        let req = PermissionRequest { tool, command: None, paths: &[], project_root: Path::new(ROOT) };
        r.evaluate(&req).map(|m| m.decision)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{bash, path_req, rules, tool};
    use super::*;

    use Decision::*;

    #[test]
    fn decision_serializes_lowercase() {
        assert_eq!(serde_json::to_string(&Deny).unwrap(), "\"deny\"");
        assert_eq!(serde_json::to_string(&Ask).unwrap(), "\"ask\"");
        assert_eq!(serde_json::to_string(&Allow).unwrap(), "\"allow\"");
        assert!(Allow < Ask && Ask < Deny);
    }

    #[test]
    fn added_rules_are_checked() {
        let mut r = PermissionRules::new();
        let e = r.add_allow("Bash(git").unwrap_err();
        assert!(matches!(&e, SettingsError::InvalidRule { field, rule, .. } if field == "allow" && rule == "Bash(git"));
        assert!(r.is_empty());
        r.add_allow("Bash(echo \"(\")").unwrap();
        r.add_ask("Read(./x (copy)/**)").unwrap();
        r.add_deny(" Bash(*) ").unwrap();
        assert!(!r.is_empty());
        assert_eq!(bash(&r, "ls"), Some(Deny));
    }

    #[test]
    fn precedence_deny_ask_allow() {
        let r = rules(&["Bash", "Read"], &["Bash(npm publish:*)"], &["Bash(rm:*)"]);
        assert_eq!(bash(&r, "npm publish"), Some(Ask));
        assert_eq!(bash(&r, "npm test"), Some(Allow));
        assert_eq!(bash(&r, "npm publish; rm x"), Some(Deny));
        let r = rules(&["Bash(rm:*)"], &["Bash(rm:*)"], &["Bash(rm:*)"]);
        assert_eq!(bash(&r, "rm x"), Some(Deny));
        let r = rules(&["Bash(rm:*)"], &["Bash(rm:*)"], &[]);
        assert_eq!(bash(&r, "rm x"), Some(Ask));
        // Mixed lists: neither list covers every part, so no match.
        let r = rules(&["Bash(git status:*)"], &["Bash(npm publish:*)"], &[]);
        assert_eq!(bash(&r, "git status && npm publish"), None);
        // Whole-tool deny beats everything.
        let r = rules(&["Read(./**)"], &[], &["Read"]);
        assert_eq!(path_req(&r, "Read", &["/proj/a"]), Some(Deny));
        assert_eq!(tool(&r, "Write"), None);
    }
}
