//! Permission rules: `allow`, `ask` and `deny` lists of `Tool` or
//! `Tool(specifier)` rules.
//!
//! This module holds the decision, the request and the compiled lists with
//! their evaluation; a rule's text is parsed in `rules`, path globs live in
//! `path_spec`, shell command lines are prepared for matching in `shell`
//! (over the one parser, `crate::shell_syntax`) and the read filter of walks
//! in `read_filter`.
//!
//! # Tool part
//!
//! - `Bash`, `Read`, `mcp__srv__tool`: exactly that tool;
//! - `mcp__srv`: every tool of MCP server `srv` (`mcp__srv__*`, not `mcp__srv2__*`);
//! - `mcp__srv__*`: a trailing `*` matches any rest of the name; it is only
//!   accepted at the end of an MCP name (`mcp__...`).
//!
//! A tool name must name a tool: one of the pipeline's tools or a built-in
//! one, `repl`, a script-registered tool (`crate::call::REGISTERED_PREFIX` and its name) or an
//! MCP tool (`mcp__…`). Anything else is an error that suggests the name
//! meant (`--allow write`: did you mean "Write"?), never a rule that silently
//! matches nothing. (Settings checked on their own, before the pipeline's
//! tools are known, only reject a wrong-case name of a built-in tool.)
//!
//! # Specifier
//!
//! No specifier, or `(*)`, covers every call of the tool. Otherwise the
//! specifier's kind is the rule's tool's [`RuleKind`] (see [`RuleKinds`]):
//!
//! - **path rules** for tools of kind `Path` (the file tools): a gitignore-style
//!   glob (see below), matched against [`PermissionRequest::paths`];
//! - **shell rules** for tools of kind `Shell` (Bash): see below;
//! - **command rules** for every other tool: `npm test` is an exact match,
//!   `git status:*` a prefix match (the subject equals `git status` or starts
//!   with `git status` followed by a space or tab), against the whole of
//!   [`PermissionRequest::command`].
//!
//! A path rule never matches a request without paths, a command or shell
//! rule never matches a request without a command.
//!
//! # Evaluation
//!
//! [`PermissionRules::evaluate`] checks deny, then ask, then allow, and
//! reports the first list that matches; `None` means no rule applies and the
//! caller applies its default. The lists are asymmetric, always towards the
//! stricter outcome:
//!
//! - a **deny** rule matches when ANY command / ANY path matches it;
//! - the **allow** (or **ask**) list matches when EVERY command and EVERY
//!   path is matched by some rule of that list (not necessarily the same rule).
//!
//! # Shell commands
//!
//! A shell rule's specifier is written as shell words: `Bash(git status)`
//! (exactly that command), `Bash(git diff *)` (Claude-style: `*` is any text,
//! across words; a trailing ` *` also matches nothing, so `Bash(ls *)`
//! covers `ls` and `ls -la` but not `lsblk`, while `Bash(ls*)` covers all
//! three) and `Bash(git status:*)` (the same as `Bash(git status *)`).
//! Quotes and backslashes quote, whitespace between words is one boundary;
//! shell syntax other than words in a rule (`;`, `|`, `$`, …) is an error.
//! A rule is matched against one simple command's words after bash's quote
//! removal, so `git "status"` is `git status`, and `'git status'` (one word)
//! is not.
//!
//! The command line is parsed as bash would (`crate::shell_syntax`, on
//! `brush-parser`, cross-checked against bash's reading).
//!
//! **Allow and ask rules match only a command line they fully understand:**
//! simple commands joined by `;`, `&&`, `||`, `|`, `|&`, `!` and newlines, made
//! of plain and quoted words. An argument may be a plain variable (`$X`,
//! `${X}`) or a glob (`*.rs`), which only a `*` of the rule covers (its value
//! is known only when bash runs). Redirections may read a file (`< f`),
//! duplicate or close descriptors (`2>&1`, `>&-`) and write to `/dev/null`,
//! nothing else. Every top-level command must be matched by some rule of the
//! list. Anything else can never match an allow or ask rule, whatever the rule
//! says — the call falls to the default (`ask`, or deny where no one can be
//! asked), with a message that names the construct:
//!
//! - command and process substitution (`$(…)`, backticks, `<(…)`), `${…}` beyond
//!   a plain variable, arithmetic, here-documents and here-strings, `$'…'` and
//!   `$"…"`, comments, control characters, anything that does not parse;
//! - compound commands (subshells, groups, `if`, loops, `case`, `[[ ]]`),
//!   function definitions, `&`, the `time` keyword;
//! - output redirection to anything but `/dev/null`, `<>`;
//! - variable assignments (`FOO=1 git status`: `GIT_DIR=…` or `LD_PRELOAD=…`
//!   change what a command does), a command word that is a variable or a pattern;
//! - programs that run other code, also behind wrappers (`nice eval …`):
//!   `eval`, `exec`, `source`/`.`, a shell with `-c` or reading its input or a
//!   script (`sh -c`, `| sh`), `xargs`, `find` with `-exec`/`-execdir`/`-ok`/
//!   `-delete`/`-fprint…` (or an argument known only at run time), `env`
//!   running a command, `trap`, `alias`, `let`, `watch`, `flock -c`, …;
//! - builtins that evaluate array subscripts (`declare`, `read`, `printf -v`,
//!   `test -v`, …) with a `[` in an argument, and `export`/`declare` of a
//!   variable that changes what later commands run (`PATH`, `LD_*`, `GIT_*`,
//!   `PAGER`, `EDITOR`, `BASH_ENV`, `PS4`, …).
//!
//! **Deny rules see through wrappers:** they are tried against every simple
//! command bash may run, at every depth (inside substitutions, subshells,
//! loops, function bodies, here-document bodies), each as written and with the
//! program path reduced to its base name (`/bin/rm` → `rm`), and again after
//! stripping known wrappers with their options (`nice`, `timeout`, `env`,
//! `command`, `builtin`, `exec`, `nohup`, `stdbuf`, `time`, `sudo`, `doas`,
//! `xargs`, `ionice`, `chrt`, `taskset`, `setsid`, `unbuffer`, `flock`,
//! `chroot`, `busybox`, …). The strings of `eval`, `bash -c`/`sh -c`, `trap`,
//! `alias`, `watch`, `flock -c`, `env -S` are parsed in turn, the commands of
//! `find -exec` are commands, and values assigned to variables are read as
//! commands too (a program may run them: `GIT_PAGER='rm x' git log`). A word
//! whose value is known only when bash runs (`$x`, `"$@"`, `*.txt`) matches
//! any words. And when a command cannot be known statically — a command word
//! that is an expansion (`$x`, `$'rm'`, `{rm,x}`), `eval` or `bash -c` of a
//! string known only at run time, a shell reading its input or a script
//! (`| sh`), `source`, arithmetic over variables, an indirect expansion, an
//! unknown option of a wrapper, a line that does not parse, … — the line
//! counts as matching every deny rule of the tool. Deny rules are still a
//! blocklist over the programs wrepl knows (a copy of `rm` under another name
//! is not `rm`); the allow list, and the OS confinement of Bash, are the
//! boundary.
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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::settings::{PermissionSettings, SettingsError};
use crate::tools::{RuleKind, Tool};

mod path_spec;
mod read_filter;
mod rules;
mod shell;

use path_spec::normalize;
pub use read_filter::read_deny_filter;
use rules::Spec;
pub use rules::{Rule, ToolPattern};
use shell::{ShellSubject, Subject as ShellCommand};

/// The tool wrepl's MCP server serves itself (`repl`); rules may name it.
const FRONT_TOOLS: &[&str] = &["repl"];
/// Tools scripts register are named with this prefix; rules may name them.
const REGISTERED: &str = crate::call::REGISTERED_PREFIX;

/// How each tool's rule specifiers match: taken from the tools themselves
/// ([`Tool::rule_kind`]); a name no tool has matches as a whole command.
/// It also knows which tool names rules may use (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct RuleKinds {
    kinds: BTreeMap<String, RuleKind>,
    /// Every tool is known: an unknown name is an error (otherwise only a
    /// wrong-case name of a known tool is).
    strict: bool,
}

impl RuleKinds {
    /// The kinds of these tools (the pipeline's: names rules use must be
    /// these, built-in tools, or tools with their own prefixes).
    pub fn of<'a>(tools: impl IntoIterator<Item = &'a Arc<dyn Tool>>) -> Self {
        let kinds = tools.into_iter().map(|t| (t.name().to_string(), t.rule_kind())).collect();
        Self { kinds, strict: true }
    }

    /// The kinds of the built-in tools, for rules checked before the
    /// pipeline's tools are known (a library may add tools of its own).
    pub fn builtin() -> Self {
        Self { strict: false, ..Self::of(&crate::tools::builtin_tools()) }
    }

    /// The kind of `tool`'s rules.
    pub fn get(&self, tool: &str) -> RuleKind {
        self.kinds.get(tool).copied().unwrap_or(RuleKind::Command)
    }

    /// Whether rules may name `name`; the error suggests a name they may.
    fn check_name(&self, name: &str) -> Result<(), String> {
        if self.kinds.contains_key(name)
            || FRONT_TOOLS.contains(&name)
            || name.starts_with("mcp__")
            || name.starts_with(REGISTERED)
        {
            return Ok(());
        }
        let builtin: Vec<String> = crate::tools::builtin_tools().iter().map(|t| t.name().to_string()).collect();
        if builtin.iter().any(|b| b == name) {
            return Ok(());
        }
        let known: BTreeSet<&str> = self
            .kinds
            .keys()
            .map(String::as_str)
            .chain(builtin.iter().map(String::as_str))
            .chain(FRONT_TOOLS.iter().copied())
            .collect();
        if let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(name)) {
            return Err(format!("unknown tool {name:?}: did you mean {k:?}? (tool names are case-sensitive)"));
        }
        if !self.strict {
            return Ok(());
        }
        let lower = name.to_ascii_lowercase();
        let near = known
            .iter()
            .copied()
            .filter(|k| edit_distance(&k.to_ascii_lowercase(), &lower) <= 2)
            .min_by_key(|k| edit_distance(&k.to_ascii_lowercase(), &lower));
        match near {
            Some(k) => Err(format!("unknown tool {name:?}: did you mean {k:?}?")),
            None => Err(format!(
                "unknown tool {name:?} (the tools are {}; MCP tools are named mcp__<server>__<tool>)",
                known.iter().copied().collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

/// Levenshtein distance (names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
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
    /// allow/ask list were needed (one per command or path) they are
    /// joined with `", "`.
    pub rule: String,
    /// For a deny rule of a shell tool: which part of the command line it
    /// matched ("it matches `rm -f x`"), or why the line counts as matching
    /// every deny rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
}

/// Why no rule allows a call, and how one could (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// What is not covered, or the construct no allow rule can match
    /// ("command substitution `$(…)` cannot match an allow rule (in `…`)").
    pub why: String,
    /// The narrowest grant that would allow it, completing "Grant it with …"
    /// (`an allow rule (e.g. --allow 'Bash(git push:*)')`).
    pub grant: String,
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

    /// The allow rules, as written.
    pub fn allow_rules(&self) -> Vec<String> {
        self.allow.iter().map(|r| r.text.clone()).collect()
    }

    /// True when there are no rules at all.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    /// Check a request: deny, then ask, then allow (see the module docs).
    /// `None` when no list matches; the caller applies its default.
    pub fn evaluate(&self, req: &PermissionRequest) -> Option<Matched> {
        let subject = Subject::new(req, self.kinds.get(req.tool) == RuleKind::Shell);
        for rule in &self.deny {
            if let Some(part) = subject.deny_matches(rule) {
                return Some(Matched { decision: Decision::Deny, rule: rule.text.clone(), part });
            }
        }
        for (list, decision) in [(&self.ask, Decision::Ask), (&self.allow, Decision::Allow)] {
            if let Some(rule) = subject.list_matches(list) {
                return Some(Matched { decision, rule, part: None });
            }
        }
        None
    }

    /// Why no rule allows a shell command or a host, and the narrowest grant
    /// that would (`None` for other tools, or when there is nothing to add). For
    /// messages: call it only when the default decides.
    pub fn explain(&self, req: &PermissionRequest) -> Option<Hint> {
        if self.kinds.get(req.tool) == RuleKind::Domain {
            let host = req.command?;
            let literal = host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok();
            let sub = if literal {
                String::new()
            } else {
                format!(" (or '{}(domain:*.{host})' for its subdomains)", req.tool)
            };
            return Some(Hint {
                why: format!("no {} rule allows the host {host}", req.tool),
                grant: format!("--allow '{}(domain:{host})'{sub}", req.tool),
            });
        }
        if self.kinds.get(req.tool) != RuleKind::Shell {
            return None;
        }
        let sh = shell::analyze(req.command?);
        let tool = req.tool;
        match &sh.allow {
            Err(r) => {
                let at = if r.part.is_empty() { String::new() } else { format!(" (in `{}`)", r.part) };
                Some(Hint {
                    why: format!("{} cannot match an allow rule{at}", r.construct),
                    grant: format!("--allow '{tool}' (every command): no narrower rule covers {}", r.construct),
                })
            }
            Ok(commands) => {
                let rules: Vec<&Rule> = self.allow.iter().filter(|r| r.tool.matches(tool)).collect();
                let uncovered: Vec<&ShellCommand> = commands
                    .iter()
                    .filter(|c| !rules.iter().any(|r| matches!(&r.spec, Spec::Shell(p) if p.covers(c) == Ok(true))))
                    .collect();
                if uncovered.is_empty() {
                    return None;
                }
                // A rule whose words match but whose `*` covers an option
                // that is not read-only: say which, and that naming it works.
                let option = uncovered.iter().find_map(|c| {
                    rules.iter().find_map(|r| match &r.spec {
                        Spec::Shell(p) => p.covers(c).err().map(|why| (r.text.clone(), why)),
                        _ => None,
                    })
                });
                if let Some((rule, why)) = option {
                    return Some(Hint {
                        why: format!("{rule} covers only read-only options here: {why}"),
                        grant: "a rule naming that option (or `--allow Bash` for every command)".into(),
                    });
                }
                let parts: Vec<String> = uncovered.iter().map(|c| format!("`{}`", c.text)).collect();
                let mut grants: Vec<String> = Vec::new();
                for c in &uncovered {
                    let g = format!("--allow '{}'", suggest(tool, c));
                    if !grants.contains(&g) {
                        grants.push(g);
                    }
                }
                let (verb, noun) = if parts.len() == 1 { ("is", "an allow rule") } else { ("are", "allow rules") };
                Some(Hint {
                    why: format!("{} {verb} not covered by an allow rule", parts.join(", ")),
                    grant: format!("{noun} (e.g. {})", grants.join(" ")),
                })
            }
        }
    }
}

/// Programs whose second word names what they do (`git push`).
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "cargo",
    "go",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "pip",
    "pip3",
    "apt",
    "apt-get",
    "brew",
    "gh",
    "systemctl",
    "terraform",
    "make",
    "rustup",
    "dotnet",
    "mvn",
    "gradle",
    "bundle",
    "gem",
    "composer",
    "poetry",
    "uv",
    "conda",
    "az",
    "aws",
    "gcloud",
    "deno",
    "bun",
    "nix",
    "just",
];

/// The narrowest useful rule covering a command: its program, and its
/// subcommand for programs that have them (`Bash(git push:*)`).
fn suggest(tool: &str, c: &ShellCommand) -> String {
    let quote = |w: &str| {
        if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "._/+@%=,-~".contains(c)) {
            w.to_string()
        } else {
            format!("\"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""))
        }
    };
    let mut words = vec![c.words.first().cloned().flatten().unwrap_or_default()];
    let program = shell::basename(&words[0]).to_string();
    if let Some(Some(sub)) = c.words.get(1) {
        let plain = sub.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if plain && SUBCOMMAND_PROGRAMS.contains(&program.as_str()) {
            words.push(sub.clone());
        }
    }
    let words: Vec<String> = words.iter().map(|w| quote(w)).collect();
    format!("{tool}({}:*)", words.join(" "))
}

fn parse_rule(text: &str, field: String, kinds: &RuleKinds) -> Result<Rule, SettingsError> {
    Rule::parse_for(text, kinds).map_err(|reason| SettingsError::InvalidRule { field, rule: text.to_string(), reason })
}

/// What a request's command is, prepared for matching.
enum CommandSubject {
    /// A shell command line.
    Shell(ShellSubject),
    /// Another tool's whole command (trimmed).
    Whole(String),
}

/// A request prepared for matching.
struct Subject<'a> {
    tool: &'a str,
    command: Option<CommandSubject>,
    paths: Vec<PathBuf>,
    root: PathBuf,
}

impl<'a> Subject<'a> {
    fn new(req: &PermissionRequest<'a>, shell: bool) -> Self {
        let root = normalize(req.project_root);
        let command = req.command.map(|cmd| {
            if shell {
                CommandSubject::Shell(shell::analyze(cmd))
            } else {
                CommandSubject::Whole(cmd.trim().to_string())
            }
        });
        let paths = req.paths.iter().map(|p| normalize(&root.join(p))).collect();
        Subject { tool: req.tool, command, paths, root }
    }

    /// `Some(part)` when `rule` denies the request (`part`: what it matched,
    /// for shell commands).
    fn deny_matches(&self, rule: &Rule) -> Option<Option<String>> {
        if !rule.tool.matches(self.tool) {
            return None;
        }
        match (&rule.spec, &self.command) {
            (Spec::Any, _) => Some(None),
            (Spec::Command(c), Some(CommandSubject::Whole(t))) => c.matches(t).then_some(None),
            (Spec::Domain(d), Some(CommandSubject::Whole(t))) => d.matches(t).then_some(None),
            (Spec::Shell(p), Some(CommandSubject::Shell(sh))) => {
                if let Some(why) = &sh.unknown {
                    return Some(Some(format!("{why}, so it counts as matching every deny rule")));
                }
                sh.deny.iter().find(|c| p.matches(&c.syms, true)).map(|c| Some(format!("it matches `{}`", c.text)))
            }
            (Spec::Path(p), _) => self.paths.iter().any(|path| p.matches(path, &self.root)).then_some(None),
            _ => None,
        }
    }

    /// Every command / path must be matched by some rule of `list`.
    /// Returns the rule(s) used.
    fn list_matches(&self, list: &[Rule]) -> Option<String> {
        let applicable: Vec<&Rule> = list.iter().filter(|r| r.tool.matches(self.tool)).collect();
        if let Some(rule) = applicable.iter().find(|r| matches!(r.spec, Spec::Any)) {
            return Some(rule.text.clone());
        }
        match &self.command {
            Some(CommandSubject::Shell(sh)) => {
                if let Ok(commands) = sh.allow.as_ref().map(Vec::as_slice) {
                    let used = covering(commands, &applicable, |c, spec| match spec {
                        Spec::Shell(p) => p.covers(c) == Ok(true),
                        _ => false,
                    });
                    if used.is_some() && !commands.is_empty() {
                        return used;
                    }
                }
            }
            Some(CommandSubject::Whole(t)) => {
                let used = covering(std::slice::from_ref(t), &applicable, |t, spec| match spec {
                    Spec::Command(c) => c.matches(t),
                    Spec::Domain(d) => d.matches(t),
                    _ => false,
                });
                if used.is_some() {
                    return used;
                }
            }
            None => {}
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

#[cfg(test)]
mod domain_tests {
    use super::testing::{rules, ROOT};
    use super::*;

    fn web(r: &PermissionRules, host: &str) -> Option<Decision> {
        let req =
            PermissionRequest { tool: "WebFetch", command: Some(host), paths: &[], project_root: Path::new(ROOT) };
        r.evaluate(&req).map(|m| m.decision)
    }

    #[test]
    fn domain_rules_name_hosts() {
        let r = rules(
            &["WebFetch(domain:example.com)", "WebFetch(domain:*.docs.rs)", "WebFetch(domain:Bücher.example)"],
            &[],
            &["WebFetch(domain:evil.docs.rs)"],
        );
        assert_eq!(web(&r, "example.com"), Some(Decision::Allow));
        assert_eq!(web(&r, "api.example.com"), None, "an exact host does not cover its subdomains");
        assert_eq!(web(&r, "example.com.evil.net"), None);
        assert_eq!(web(&r, "a.docs.rs"), Some(Decision::Allow));
        assert_eq!(web(&r, "a.b.docs.rs"), Some(Decision::Allow));
        assert_eq!(web(&r, "docs.rs"), None, "*. covers subdomains only");
        assert_eq!(web(&r, "xdocs.rs"), None);
        assert_eq!(web(&r, "evil.docs.rs"), Some(Decision::Deny), "deny beats allow");
        assert_eq!(web(&r, "xn--bcher-kva.example"), Some(Decision::Allow), "hosts compare in IDNA form");
        let v6 = rules(&["WebFetch(domain:[::1])"], &[], &[]);
        assert_eq!(web(&v6, "[::1]"), Some(Decision::Allow), "an IPv6 literal as the URL writes it");
        let any = rules(&["WebFetch"], &[], &[]);
        assert_eq!(web(&any, "anything.example"), Some(Decision::Allow));
        for bad in [
            "WebFetch(example.com)",
            "WebFetch(domain:)",
            "WebFetch(domain:*)",
            "WebFetch(domain:a/b)",
            "WebFetch(domain:a*.b)",
            "WebFetch(domain:x:80)",
        ] {
            let settings = PermissionSettings { allow: vec![bad.to_string()], ..Default::default() };
            assert!(PermissionRules::from_settings(&settings).is_err(), "{bad} should be refused");
        }
    }
}
