//! Permission rules: `allow`, `ask` and `deny` lists of `Tool` or
//! `Tool(specifier)` rules.
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

use std::fmt;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;
use std::sync::Arc;

use super::settings::{PermissionSettings, SettingsError};
use crate::tools::{RuleKind, Tool};

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

/// The tool part of a rule (also used for isolation patterns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPattern {
    /// Exactly this tool.
    Exact(String),
    /// `mcp__server`: every tool of the server.
    Server(String),
    /// `mcp__…*`: every tool whose name starts with this prefix.
    Prefix(String),
}

impl ToolPattern {
    /// Parse a tool pattern. The error is a human-readable reason.
    pub fn parse(name: &str) -> Result<ToolPattern, String> {
        if name.is_empty() {
            return Err("empty tool name".into());
        }
        let (base, wildcard) = match name.strip_suffix('*') {
            Some(base) => (base, true),
            None => (name, false),
        };
        if base.contains('*') || (wildcard && !base.starts_with("mcp__")) {
            return Err("`*` is only supported at the end of an MCP tool name \
                        (e.g. `mcp__server__*`)"
                .into());
        }
        if let Some(c) = base.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
            return Err(format!("invalid character {c:?} in tool name"));
        }
        if wildcard {
            return Ok(ToolPattern::Prefix(base.to_string()));
        }
        if let Some(rest) = name.strip_prefix("mcp__") {
            if rest.is_empty() {
                return Err("missing MCP server name after `mcp__`".into());
            }
            if !rest.contains("__") {
                return Ok(ToolPattern::Server(name.to_string()));
            }
        }
        Ok(ToolPattern::Exact(name.to_string()))
    }

    /// Whether `tool` is covered.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            ToolPattern::Exact(name) => tool == name,
            ToolPattern::Server(server) => {
                tool.strip_prefix(server.as_str()).is_some_and(|r| r.is_empty() || r.starts_with("__"))
            }
            ToolPattern::Prefix(prefix) => tool.starts_with(prefix.as_str()),
        }
    }

    fn exact_name(&self) -> Option<&str> {
        match self {
            ToolPattern::Exact(name) => Some(name),
            _ => None,
        }
    }
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: ToolPattern,
    spec: Spec,
}

#[derive(Debug, Clone)]
enum Spec {
    /// The whole tool.
    Any,
    Command(CommandSpec),
    Path(PathSpec),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum CmdPattern {
    Exact(String),
    Prefix(String),
}

impl CmdPattern {
    fn matches(&self, subject: &str) -> bool {
        match self {
            CmdPattern::Exact(s) => subject == s,
            CmdPattern::Prefix(p) => {
                subject.strip_prefix(p.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
            }
        }
    }

    fn map(&self, f: impl Fn(&str) -> String) -> CmdPattern {
        match self {
            CmdPattern::Exact(s) => CmdPattern::Exact(f(s)),
            CmdPattern::Prefix(s) => CmdPattern::Prefix(f(s)),
        }
    }
}

#[derive(Debug, Clone)]
struct CommandSpec {
    /// As written: used for allow/ask (verbatim comparison).
    raw: CmdPattern,
    /// Quotes removed, whitespace collapsed: additionally tried for deny.
    normalized: CmdPattern,
}

#[derive(Debug, Clone)]
enum Anchor {
    /// Relative to the request's project root.
    Root,
    /// An absolute glob.
    Absolute,
    /// Relative to this home directory.
    Home(PathBuf),
    /// Anywhere (the glob starts with `**/`).
    Anywhere,
}

#[derive(Debug, Clone)]
struct PathSpec {
    anchor: Anchor,
    set: GlobSet,
}

impl PathSpec {
    fn matches(&self, path: &Path, root: &Path) -> bool {
        match &self.anchor {
            Anchor::Root => path.strip_prefix(root).is_ok_and(|rel| self.set.is_match(rel)),
            Anchor::Home(home) => path.strip_prefix(home).is_ok_and(|rel| self.set.is_match(rel)),
            Anchor::Absolute | Anchor::Anywhere => self.set.is_match(path),
        }
    }
}

impl Rule {
    /// Parse a rule such as `Bash(git status:*)` for the built-in tools.
    /// The error is a human-readable reason.
    #[cfg(test)]
    pub fn parse(text: &str) -> Result<Rule, String> {
        Self::parse_for(text, &RuleKinds::builtin())
    }

    /// Parse a rule, with specifiers read as `kinds` says for its tool.
    pub fn parse_for(text: &str, kinds: &RuleKinds) -> Result<Rule, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("empty rule".into());
        }
        let (name, spec) = match t.find('(') {
            None if t.contains(')') => return Err("unbalanced parentheses".into()),
            None => (t, None),
            Some(open) => {
                let Some(inner) = t[open + 1..].strip_suffix(')') else {
                    return Err("unbalanced parentheses (the specifier must end with `)`)".into());
                };
                (&t[..open], Some(inner))
            }
        };
        let tool = ToolPattern::parse(name)?;
        let spec = match spec.map(str::trim) {
            None | Some("*") => Spec::Any,
            Some("") => return Err("empty specifier".into()),
            Some(s) if tool.exact_name().is_some_and(|n| kinds.get(n) == RuleKind::Path) => {
                if !parens_balanced(s, false) {
                    return Err("unbalanced parentheses".into());
                }
                Spec::Path(parse_path_spec(s)?)
            }
            Some(s) => {
                if !parens_balanced(s, true) {
                    return Err("unbalanced parentheses or quotes".into());
                }
                let raw = match s.strip_suffix(":*") {
                    Some(prefix) if prefix.trim().is_empty() => return Err("empty command prefix before `:*`".into()),
                    Some(prefix) => CmdPattern::Prefix(prefix.trim_end().to_string()),
                    None => CmdPattern::Exact(s.to_string()),
                };
                let normalized = raw.map(|s| shell_words(s).join(" "));
                Spec::Command(CommandSpec { raw, normalized })
            }
        };
        Ok(Rule { text: t.to_string(), tool, spec })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Parenthesis balance; with `quotes`, parentheses inside quotes are ignored
/// and an unterminated quote is unbalanced.
fn parens_balanced(s: &str, quotes: bool) -> bool {
    let mut depth = 0usize;
    let mut quote = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some(_), _) => {}
            (None, '\\') if quotes => {
                chars.next();
            }
            (None, '\'' | '"') if quotes => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0 && quote.is_none()
}

fn parse_path_spec(spec: &str) -> Result<PathSpec, String> {
    let (anchor, pattern) = if let Some(rest) = spec.strip_prefix("//") {
        (Anchor::Absolute, format!("/{rest}"))
    } else if spec == "~" || spec.starts_with("~/") {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute())
            .ok_or("`~` needs $HOME to be set to an absolute path")?;
        (Anchor::Home(normalize(&home)), spec[1..].trim_start_matches('/').to_string())
    } else if let Some(rest) = spec.strip_prefix("./").or_else(|| spec.strip_prefix('/')) {
        (Anchor::Root, rest.to_string())
    } else {
        let body = spec.trim_end_matches('/');
        if body.contains('/') && !body.starts_with("**/") {
            (Anchor::Root, body.to_string())
        } else if body.starts_with("**/") {
            (Anchor::Anywhere, body.to_string())
        } else {
            (Anchor::Anywhere, format!("**/{body}"))
        }
    };
    let pattern = pattern.trim_end_matches('/');
    if pattern.split('/').any(|c| c == ".." || c == ".") {
        return Err("`.` and `..` are not allowed in path rules (write a normalised path, \
                    or an absolute one with `//`)"
            .into());
    }
    let mut globs = Vec::with_capacity(2);
    match pattern {
        // The anchor directory itself and everything below it.
        "" => globs.push("**".to_string()),
        p if p.ends_with("/**") || p == "**" => globs.push(p.to_string()),
        p => {
            globs.push(p.to_string());
            globs.push(format!("{p}/**"));
        }
    }
    if matches!(anchor, Anchor::Absolute) && pattern.is_empty() {
        globs = vec!["/**".to_string(), "/".to_string()];
    }
    let mut set = GlobSetBuilder::new();
    for g in &globs {
        let glob = GlobBuilder::new(g).literal_separator(true).build().map_err(|e| format!("invalid glob: {e}"))?;
        set.add(glob);
    }
    let set = set.build().map_err(|e| format!("invalid glob: {e}"))?;
    Ok(PathSpec { anchor, set })
}

/// Lexical normalisation: drop `.`, resolve `..` against the preceding
/// component (never above the root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
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

/// One subcommand of a shell command line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    /// The text, trimmed.
    text: String,
    /// False when allow/ask rules must not match it (substitution, output
    /// redirection, control characters, unterminated quote).
    safe: bool,
}

/// Split a shell command line into subcommands (see the module docs).
fn split_shell(cmd: &str) -> Vec<Part> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let chars: Vec<char> = cmd.chars().collect();
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut safe = true;
    let mut quote = Quote::None;
    let mut i = 0;
    let flush = |cur: &mut String, safe: &mut bool, parts: &mut Vec<Part>| {
        let text = cur.trim();
        if !text.is_empty() {
            parts.push(Part { text: text.to_string(), safe: *safe });
        }
        cur.clear();
        *safe = true;
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_control() && !matches!(c, '\t' | '\n') {
            safe = false;
        }
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
                cur.push(c);
                i += 1;
            }
            Quote::Double => {
                cur.push(c);
                match c {
                    '\\' => {
                        if let Some(n) = next {
                            cur.push(n);
                            i += 1;
                        }
                    }
                    '"' => quote = Quote::None,
                    '`' => safe = false,
                    '$' if next == Some('(') => safe = false,
                    _ => {}
                }
                i += 1;
            }
            Quote::None => match c {
                '\\' => {
                    cur.push(c);
                    if let Some(n) = next {
                        cur.push(n);
                        i += 1;
                    }
                    i += 1;
                }
                '\'' => {
                    quote = Quote::Single;
                    cur.push(c);
                    i += 1;
                }
                '"' => {
                    quote = Quote::Double;
                    cur.push(c);
                    i += 1;
                }
                '`' => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '$' if next == Some('(') => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '<' | '>' if next == Some('(') => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '<' if next == Some('&') => {
                    cur.push_str("<&");
                    i += 2;
                }
                '<' if next == Some('>') => {
                    cur.push('<');
                    i += 1;
                    i = redirect(&chars, i, &mut cur, &mut safe);
                }
                '>' => i = redirect(&chars, i, &mut cur, &mut safe),
                '&' if next == Some('>') => {
                    cur.push('&');
                    i += 1;
                    i = redirect(&chars, i, &mut cur, &mut safe);
                }
                ';' | '\n' => {
                    flush(&mut cur, &mut safe, &mut parts);
                    i += 1;
                }
                '|' | '&' => {
                    flush(&mut cur, &mut safe, &mut parts);
                    i += if matches!(next, Some('|' | '&')) { 2 } else { 1 };
                }
                _ => {
                    cur.push(c);
                    i += 1;
                }
            },
        }
    }
    if quote != Quote::None {
        safe = false;
    }
    flush(&mut cur, &mut safe, &mut parts);
    parts
}

/// Consume an output redirection starting at `chars[i] == '>'`; mark the
/// subcommand unsafe unless it targets a descriptor or `/dev/null`.
/// Returns the index after the redirection.
fn redirect(chars: &[char], mut i: usize, cur: &mut String, safe: &mut bool) -> usize {
    // `>`, `>>`, `>|`
    cur.push('>');
    i += 1;
    if let Some(&c @ ('>' | '|')) = chars.get(i) {
        cur.push(c);
        i += 1;
    }
    // `>&2`, `>&-`: descriptor duplication.
    if chars.get(i) == Some(&'&') {
        cur.push('&');
        i += 1;
        let start = i;
        while let Some(&c) = chars.get(i).filter(|c| c.is_ascii_digit() || **c == '-') {
            cur.push(c);
            i += 1;
        }
        let ends = chars.get(i).is_none_or(|c| c.is_whitespace() || ";|&<>)".contains(*c));
        if i > start && ends {
            return i;
        }
    }
    while let Some(&c) = chars.get(i).filter(|c| **c == ' ' || **c == '\t') {
        cur.push(c);
        i += 1;
    }
    let mut target = String::new();
    while let Some(&c) = chars.get(i).filter(|c| !c.is_whitespace() && !";|&<>()".contains(**c)) {
        target.push(c);
        i += 1;
    }
    cur.push_str(&target);
    if target != "/dev/null" {
        *safe = false;
    }
    i
}

/// Words of a shell command with quotes and escapes removed (a rough
/// approximation for deny matching; no expansion).
fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            cur.extend(chars.next());
                        }
                        c => cur.push(c),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => {
                    in_word = true;
                    cur.push(n);
                }
            },
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Words that run the command that follows them.
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "exec", "command", "builtin", "nohup", "time", "nice", "ionice", "timeout", "xargs", "if",
    "then", "else", "elif", "do", "while", "until", "!",
];

fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The spellings of a shell command that deny rules are tried against.
fn deny_candidates(cmd: &str) -> Vec<String> {
    let mut sources = vec![cmd];
    for opener in ["$(", "`", "<(", ">("] {
        sources.extend(cmd.match_indices(opener).map(|(i, _)| &cmd[i + opener.len()..]));
    }
    let mut out: Vec<String> = Vec::new();
    let mut add = |s: String| {
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    };
    for source in sources {
        for part in split_shell(source) {
            add(part.text.clone());
            let mut words = shell_words(&part.text);
            while let Some(first) = words.first_mut() {
                let stripped = first.trim_start_matches(['(', '{', '!']);
                if stripped.len() != first.len() {
                    *first = stripped.to_string();
                    if first.is_empty() {
                        words.remove(0);
                    }
                } else if is_assignment(first) {
                    words.remove(0);
                } else if WRAPPERS.contains(&first.as_str()) {
                    words.remove(0);
                    // The wrapper's options (`sudo -E`, `nice -n`), roughly.
                    while words.first().is_some_and(|w| w.starts_with('-')) {
                        words.remove(0);
                    }
                } else {
                    break;
                }
            }
            let trim = |s: String| s.trim_end_matches([')', '}', '`', ';', ' ']).to_string();
            let normalized = trim(words.join(" "));
            if let Some(first) = words.first_mut() {
                if let Some((_, base)) = first.rsplit_once('/') {
                    *first = base.to_string();
                    add(trim(words.join(" ")));
                }
            }
            add(normalized);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionRules {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        PermissionRules::from_settings(&PermissionSettings { allow: v(allow), ask: v(ask), deny: v(deny) }).unwrap()
    }

    const ROOT: &str = "/proj";

    fn bash(r: &PermissionRules, cmd: &str) -> Option<Decision> {
        let req = PermissionRequest { tool: "Bash", command: Some(cmd), paths: &[], project_root: Path::new(ROOT) };
        r.evaluate(&req).map(|m| m.decision)
    }

    fn path_req(r: &PermissionRules, tool: &str, paths: &[&str]) -> Option<Decision> {
        let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        let req = PermissionRequest { tool, command: None, paths: &paths, project_root: Path::new(ROOT) };
        r.evaluate(&req).map(|m| m.decision)
    }

    fn tool(r: &PermissionRules, tool: &str) -> Option<Decision> {
        let req = PermissionRequest { tool, command: None, paths: &[], project_root: Path::new(ROOT) };
        r.evaluate(&req).map(|m| m.decision)
    }

    use Decision::*;

    #[test]
    fn decision_serializes_lowercase() {
        assert_eq!(serde_json::to_string(&Deny).unwrap(), "\"deny\"");
        assert_eq!(serde_json::to_string(&Ask).unwrap(), "\"ask\"");
        assert_eq!(serde_json::to_string(&Allow).unwrap(), "\"allow\"");
        assert!(Allow < Ask && Ask < Deny);
    }

    #[test]
    fn malformed_rules() {
        for bad in [
            "",
            "  ",
            "Bash(",
            "Bash)",
            "Bash(git",
            "Bash()",
            "Bash( )",
            "Bash(a(b)",
            "Bash(a))",
            "Bash(:*)",
            "Ba sh",
            "Ba*sh",
            "*",
            "Bash*",
            "mcp__*x",
            "mcp__",
            "Read(../x)",
            "Read(./a/../b)",
            "Read(//etc/./x)",
            "Bash(echo ')",
            "Read([)",
        ] {
            assert!(Rule::parse(bad).is_err(), "{bad:?} should be rejected");
        }
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
    fn exact_and_prefix_commands() {
        let r = rules(&["Bash(npm test)", "Bash(git status:*)"], &[], &[]);
        assert_eq!(bash(&r, "npm test"), Some(Allow));
        assert_eq!(bash(&r, "  npm test  "), Some(Allow));
        assert_eq!(bash(&r, "npm test --watch"), None);
        assert_eq!(bash(&r, "npm testx"), None);
        assert_eq!(bash(&r, "git status"), Some(Allow));
        assert_eq!(bash(&r, "git status -s"), Some(Allow));
        assert_eq!(bash(&r, "git statusx"), None);
        assert_eq!(bash(&r, "git  status"), None);
        assert_eq!(bash(&r, ""), None);
        assert_eq!(bash(&r, " ; "), None);
        // A command rule does not match a request without a command.
        assert_eq!(tool(&r, "Bash"), None);
        let paths = [PathBuf::from("/proj/a")];
        let req = PermissionRequest { tool: "Bash", command: None, paths: &paths, project_root: Path::new(ROOT) };
        assert_eq!(r.evaluate(&req), None);
    }

    #[test]
    fn compound_commands_need_every_part() {
        let r = rules(&["Bash(git status:*)", "Bash(ls:*)"], &[], &[]);
        assert_eq!(bash(&r, "git status && rm -rf /"), None);
        assert_eq!(bash(&r, "git status || rm -rf /"), None);
        assert_eq!(bash(&r, "git status; rm -rf /"), None);
        assert_eq!(bash(&r, "git status | rm -rf /"), None);
        assert_eq!(bash(&r, "git status |& rm -rf /"), None);
        assert_eq!(bash(&r, "git status & rm -rf /"), None);
        assert_eq!(bash(&r, "git status\nrm -rf /"), None);
        let m = r
            .evaluate(&PermissionRequest {
                tool: "Bash",
                command: Some("git status && ls -la | git status -s;ls"),
                paths: &[],
                project_root: Path::new(ROOT),
            })
            .unwrap();
        assert_eq!(m, Matched { decision: Allow, rule: "Bash(git status:*), Bash(ls:*)".into() });
        // Separators inside quotes or escaped do not split.
        let r = rules(&["Bash(git commit:*)"], &[], &[]);
        assert_eq!(bash(&r, "git commit -m \"a && b; c | d\""), Some(Allow));
        assert_eq!(bash(&r, "git commit -m 'a; rm -rf /'"), Some(Allow));
        assert_eq!(bash(&r, "git commit -m a\\;b"), Some(Allow));
        assert_eq!(bash(&r, "git commit -m 'a; rm -rf /"), None, "unterminated quote");
    }

    #[test]
    fn substitution_and_redirection_are_not_allowable() {
        let r = rules(&["Bash(git status:*)", "Bash(echo:*)"], &[], &[]);
        assert_eq!(bash(&r, "git status $(rm -rf /)"), None);
        assert_eq!(bash(&r, "git status \"$(rm -rf /)\""), None);
        assert_eq!(bash(&r, "git status `rm -rf /`"), None);
        assert_eq!(bash(&r, "git status <(rm -rf /)"), None);
        assert_eq!(bash(&r, "git status '$(literal)'"), Some(Allow));
        assert_eq!(bash(&r, "echo x > ~/.bashrc"), None);
        assert_eq!(bash(&r, "echo x >> log"), None);
        assert_eq!(bash(&r, "echo x &> log"), None);
        assert_eq!(bash(&r, "echo x >| log"), None);
        assert_eq!(bash(&r, "echo x <> log"), None);
        assert_eq!(bash(&r, "echo x >&log"), None);
        assert_eq!(bash(&r, "git status 2>&1"), Some(Allow));
        assert_eq!(bash(&r, "git status >&2"), Some(Allow));
        assert_eq!(bash(&r, "git status > /dev/null 2>&1"), Some(Allow));
        assert_eq!(bash(&r, "git status 2>/dev/null"), Some(Allow));
        assert_eq!(bash(&r, "echo \"a > b\""), Some(Allow));
        assert_eq!(bash(&r, "echo a\rrm"), None, "control characters");
        // Env assignments are not stripped for allow.
        assert_eq!(bash(&r, "FOO=1 git status"), None);
        assert_eq!(bash(&r, "GIT_DIR=/x git status"), None);
    }

    #[test]
    fn deny_matches_any_part_and_evasions() {
        let r = rules(&["Bash"], &[], &["Bash(rm:*)", "Bash(git push --force)"]);
        assert_eq!(bash(&r, "ls"), Some(Allow));
        assert_eq!(bash(&r, "rm -rf /"), Some(Deny));
        assert_eq!(bash(&r, "rm"), Some(Deny));
        assert_eq!(bash(&r, "rmdir x"), Some(Allow));
        for evasion in [
            "ls && rm -rf /",
            "ls; rm x",
            "ls | rm x",
            "ls\nrm x",
            "FOO=1 rm -rf /",
            "A=1 B='x y' rm -rf /",
            "/bin/rm -rf /",
            "sudo rm x",
            "sudo -E env X=1 rm x",
            "\"rm\" x",
            "r'm' x",
            "echo $(rm x)",
            "echo \"$(rm x)\"",
            "echo `rm x`",
            "(rm x)",
            "{ rm x; }",
            "if true; then rm x; fi",
            "xargs rm < list",
            "  rm  -rf  /  ",
        ] {
            assert_eq!(bash(&r, evasion), Some(Deny), "{evasion:?}");
        }
        assert_eq!(bash(&r, "git push --force"), Some(Deny));
        assert_eq!(bash(&r, "git  push   --force"), Some(Deny));
        assert_eq!(bash(&r, "git push 'origin'"), Some(Allow));
        assert_eq!(bash(&r, "echo rm"), Some(Allow));
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

    #[test]
    fn mcp_patterns() {
        let r = rules(&["mcp__srv", "mcp__web__*", "mcp__db__query"], &[], &["mcp__srv__drop"]);
        assert_eq!(tool(&r, "mcp__srv__a"), Some(Allow));
        assert_eq!(tool(&r, "mcp__srv"), Some(Allow));
        assert_eq!(tool(&r, "mcp__srv__drop"), Some(Deny));
        assert_eq!(tool(&r, "mcp__srv2__a"), None);
        assert_eq!(tool(&r, "mcp__srvx"), None);
        assert_eq!(tool(&r, "mcp__web__fetch"), Some(Allow));
        assert_eq!(tool(&r, "mcp__webby__fetch"), None);
        assert_eq!(tool(&r, "mcp__db__query"), Some(Allow));
        assert_eq!(tool(&r, "mcp__db__drop"), None);
        assert_eq!(tool(&r, "mcp_srv__a"), None);
        let r = rules(&[], &["mcp__*"], &[]);
        assert_eq!(tool(&r, "mcp__a__b"), Some(Ask));
        assert_eq!(tool(&r, "Bash"), None);
        assert_eq!(ToolPattern::parse("mcp__a__b").unwrap(), ToolPattern::Exact("mcp__a__b".into()));
        assert_eq!(ToolPattern::parse("mcp__a").unwrap(), ToolPattern::Server("mcp__a".into()));
        assert_eq!(ToolPattern::parse("mcp__a__*").unwrap(), ToolPattern::Prefix("mcp__a__".into()));
        // A command rule on a non-shell tool: whole subject, no splitting.
        let r = rules(&["mcp__web__fetch(https://example.com:*)"], &[], &[]);
        let req = |cmd| PermissionRequest {
            tool: "mcp__web__fetch",
            command: Some(cmd),
            paths: &[],
            project_root: Path::new(ROOT),
        };
        assert_eq!(r.evaluate(&req("https://example.com a&b")).map(|m| m.decision), Some(Allow));
        assert_eq!(r.evaluate(&req("https://example.org")), None);
    }

    #[test]
    fn path_rules_relative_to_root() {
        for rule in ["Read(./src/**)", "Read(src/**)", "Read(/src/**)", "Read(./src/)", "Read(./src)"] {
            let r = rules(&[rule], &[], &[]);
            assert_eq!(path_req(&r, "Read", &["/proj/src/a.rs"]), Some(Allow), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/src/a/b/c.rs"]), Some(Allow), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/srcx/a.rs"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &["/other/src/a.rs"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/lib/src/a.rs"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/src/../secret"]), None, "{rule}");
            assert_eq!(path_req(&r, "Write", &["/proj/src/a.rs"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &[]), None, "{rule}");
        }
        // `*` does not cross `/`.
        let r = rules(&["Edit(src/*.rs)"], &[], &[]);
        assert_eq!(path_req(&r, "Edit", &["/proj/src/a.rs"]), Some(Allow));
        assert_eq!(path_req(&r, "Edit", &["/proj/src/x/a.rs"]), None);
        // A root with glob metacharacters is not a pattern.
        let r = rules(&["Read(./a/**)"], &[], &[]);
        let paths = [PathBuf::from("/p[r]oj*/a/b")];
        let req = PermissionRequest { tool: "Read", command: None, paths: &paths, project_root: Path::new("/p[r]oj*") };
        assert_eq!(r.evaluate(&req).map(|m| m.decision), Some(Allow));
    }

    #[test]
    fn path_rules_all_for_allow_any_for_deny() {
        let r = rules(&["Read(./src/**)", "Read(./docs/**)"], &[], &["Read(**/.env)"]);
        assert_eq!(path_req(&r, "Read", &["/proj/src/a", "/proj/docs/b"]), Some(Allow));
        assert_eq!(path_req(&r, "Read", &["/proj/src/a", "/etc/passwd"]), None);
        assert_eq!(path_req(&r, "Read", &["/proj/src/a", "/proj/src/.env"]), Some(Deny));
        let m = r
            .evaluate(&PermissionRequest {
                tool: "Read",
                command: None,
                paths: &[PathBuf::from("/proj/src/a"), PathBuf::from("/proj/docs/b")],
                project_root: Path::new(ROOT),
            })
            .unwrap();
        assert_eq!(m.rule, "Read(./src/**), Read(./docs/**)");
    }

    #[test]
    fn path_rules_anywhere_absolute_home() {
        for rule in ["Read(**/.env)", "Read(.env)"] {
            let r = rules(&[], &[], &[rule]);
            assert_eq!(path_req(&r, "Read", &["/proj/.env"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/a/b/.env"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/elsewhere/.env"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/.env"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/.env/inner"]), Some(Deny), "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/.envx"]), None, "{rule}");
            assert_eq!(path_req(&r, "Read", &["/proj/x.env"]), None, "{rule}");
        }
        // gitignore-style: a trailing `/` does not anchor the pattern.
        let r = rules(&[], &[], &["Read(build/)"]);
        assert_eq!(path_req(&r, "Read", &["/proj/a/build/x"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/proj/build"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/proj/builds/x"]), None);
        let r = rules(&[], &[], &["Read(*.pem)"]);
        assert_eq!(path_req(&r, "Read", &["/proj/k/key.pem"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/proj/k/key.pem.txt"]), None);

        let r = rules(&["Read(//etc/**)"], &[], &["Read(//etc/shadow)"]);
        assert_eq!(path_req(&r, "Read", &["/etc/passwd"]), Some(Allow));
        assert_eq!(path_req(&r, "Read", &["/etc/shadow"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/etc/../etc/shadow"]), Some(Deny));
        assert_eq!(path_req(&r, "Read", &["/proj/etc/passwd"]), None);
        let r = rules(&["Read(//)"], &[], &[]);
        assert_eq!(path_req(&r, "Read", &["/anything/at/all"]), Some(Allow));

        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute()) {
            let r = rules(&[], &[], &["Read(~/.ssh/**)"]);
            let key = home.join(".ssh/id_ed25519");
            assert_eq!(path_req(&r, "Read", &[key.to_str().unwrap()]), Some(Deny));
            assert_eq!(path_req(&r, "Read", &["/proj/.ssh/id_ed25519"]), None);
        }
    }

    #[test]
    fn split_shell_parts() {
        let texts = |cmd| split_shell(cmd).into_iter().map(|p| p.text).collect::<Vec<_>>();
        assert_eq!(texts("a && b || c ; d | e |& f & g\nh"), ["a", "b", "c", "d", "e", "f", "g", "h"]);
        assert_eq!(texts("a 2>&1 | b"), ["a 2>&1", "b"]);
        assert_eq!(texts("a &>/dev/null; b"), ["a &>/dev/null", "b"]);
        assert_eq!(texts("echo 'x;y' \"z|w\" \\&"), ["echo 'x;y' \"z|w\" \\&"]);
        assert!(split_shell("a <&3").iter().all(|p| p.safe));
    }
}
