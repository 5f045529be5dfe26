//! One permission rule: its tool part ([`ToolPattern`]) and its specifier
//! (the whole tool, a command pattern or a path glob), parsed from text such
//! as `Bash(git status:*)`. The rule syntax is described in the parent
//! module's documentation.

use std::fmt;

use super::path_spec::{parse_path_spec, PathSpec};
use super::shell::shell_words;
use super::RuleKinds;
use crate::tools::RuleKind;

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
    /// The rule as written (trimmed).
    pub(super) text: String,
    /// Which tools it covers.
    pub(super) tool: ToolPattern,
    /// Which calls of those tools it covers.
    pub(super) spec: Spec,
}

/// What a rule covers of its tools' calls.
#[derive(Debug, Clone)]
pub(super) enum Spec {
    /// The whole tool.
    Any,
    /// Calls whose command matches (see [`CommandSpec`]).
    Command(CommandSpec),
    /// Calls whose paths match.
    Path(PathSpec),
}

/// A command specifier: `npm test` (exact) or `git status:*` (prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CmdPattern {
    /// The subject equals this.
    Exact(String),
    /// The subject is this, or this followed by a space or tab and more.
    Prefix(String),
}

impl CmdPattern {
    /// Whether `subject` is covered.
    pub(super) fn matches(&self, subject: &str) -> bool {
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

/// A command specifier in the two spellings rules are compared in.
#[derive(Debug, Clone)]
pub(super) struct CommandSpec {
    /// As written: used for allow/ask (verbatim comparison).
    pub(super) raw: CmdPattern,
    /// Quotes removed, whitespace collapsed: additionally tried for deny.
    pub(super) normalized: CmdPattern,
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

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::testing::{bash, rules, tool, ROOT};
    use super::super::{Decision::*, PermissionRequest};
    use super::*;

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
}
