//! One permission rule: its tool part ([`ToolPattern`]) and its specifier
//! (the whole tool, a command pattern or a path glob), parsed from text such
//! as `Bash(git status:*)`. The rule syntax is described in the parent
//! module's documentation.

use std::fmt;

use super::path_spec::{parse_path_spec, PathSpec};
use super::shell::Sym;
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
    /// Calls whose whole command matches (tools of kind `Command`).
    Command(CmdPattern),
    /// Calls whose shell commands match (tools of kind `Shell`).
    Shell(ShellPattern),
    /// Calls whose paths match.
    Path(PathSpec),
    /// Calls whose host matches (tools of kind `Domain`).
    Domain(DomainPattern),
}

/// A host specifier, `domain:example.com` (that host) or
/// `domain:*.example.com` (its subdomains, not itself). Hosts are compared
/// as the URL parser writes them: lower case, IDNA (punycode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DomainPattern {
    /// This host.
    Exact(String),
    /// Hosts ending in `.` and this.
    Subdomains(String),
}

impl DomainPattern {
    fn parse(spec: &str) -> Result<Self, String> {
        let Some(host) = spec.strip_prefix("domain:") else {
            return Err(format!("a WebFetch rule names a host as domain:HOST (e.g. domain:example.com), not {spec:?}"));
        };
        let (wild, host) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        let bracketed = host.starts_with('[') && host.ends_with(']') && !wild;
        if host.is_empty() || (!bracketed && host.contains(['*', '/', ':', '@', '?', '#', ' '])) {
            return Err(format!("domain:{host} is not a host (a host name, or *. and a host name for its subdomains)"));
        }
        let normal = url::Url::parse(&format!("http://{host}/"))
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .ok_or_else(|| format!("domain:{host} is not a valid host name"))?;
        Ok(if wild { DomainPattern::Subdomains(normal) } else { DomainPattern::Exact(normal) })
    }

    /// Whether the host `subject` is covered.
    pub(super) fn matches(&self, subject: &str) -> bool {
        match self {
            DomainPattern::Exact(h) => subject == h,
            DomainPattern::Subdomains(suffix) => {
                subject.len() > suffix.len() + 1
                    && subject.ends_with(suffix.as_str())
                    && subject.as_bytes()[subject.len() - suffix.len() - 1] == b'.'
            }
        }
    }
}

/// A command specifier of a non-shell tool: `npm test` (exact) or
/// `git status:*` (prefix).
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
}

/// One symbol of a shell command pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PSym {
    /// A literal character of a word.
    Ch(char),
    /// A boundary between words.
    Sep,
    /// `*`: any text, across words.
    Star,
}

/// A shell command specifier (`Bash(git diff *)`, `Bash(git status:*)`,
/// `Bash(npm test)`), matched word by word against one simple command (see
/// the parent module's [Shell commands](super#shell-commands)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShellPattern {
    syms: Vec<PSym>,
    /// The pattern ends with ` *` (or `:*`), which also matches nothing:
    /// `ls *` covers `ls`.
    optional_tail: bool,
    /// The words the pattern spells out whole (no `*` in them): options it
    /// names are allowed even where a table of read-only options lacks them.
    named: Vec<String>,
}

impl ShellPattern {
    /// Parse a specifier written as shell words: quotes and backslashes
    /// quote, an unquoted `*` is a wildcard, a trailing `:*` means ` *`.
    /// Shell syntax other than words is an error (a rule matches words).
    pub(super) fn parse(spec: &str) -> Result<ShellPattern, String> {
        let (body, prefix) = match spec.strip_suffix(":*") {
            Some(p) if p.trim().is_empty() => return Err("empty command prefix before `:*`".into()),
            Some(p) => (p.trim_end(), true),
            None => (spec.trim(), false),
        };
        let mut syms = Vec::new();
        let mut chars = body.chars().peekable();
        let mut in_word = false;
        let mut sep_pending = false;
        while let Some(c) = chars.next() {
            if c == ' ' || c == '\t' {
                sep_pending |= in_word;
                in_word = false;
                continue;
            }
            if sep_pending {
                syms.push(PSym::Sep);
                sep_pending = false;
            }
            let word_start = !in_word;
            in_word = true;
            match c {
                '\'' => loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => syms.push(PSym::Ch(c)),
                        None => return Err("unterminated `'` quote".into()),
                    }
                },
                '"' => loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            syms.extend(chars.next().map(PSym::Ch));
                        }
                        Some(c @ ('$' | '`')) => return Err(format!("`{c}` inside `\"…\"` would expand in bash")),
                        Some(c) => syms.push(PSym::Ch(c)),
                        None => return Err("unterminated `\"` quote".into()),
                    }
                },
                '\\' => match chars.next() {
                    Some(c) => syms.push(PSym::Ch(c)),
                    None => return Err("a trailing backslash".into()),
                },
                '*' => syms.push(PSym::Star),
                '#' if word_start => return Err("`#` would start a comment (quote it)".into()),
                '$' | '`' | ';' | '&' | '|' | '<' | '>' | '(' | ')' | '\n' | '\r' => {
                    return Err(format!(
                        "`{c}` is shell syntax: a command rule matches the words of one simple command \
                         (quote it to mean the character, or write `*` for any text)"
                    ))
                }
                c if c.is_control() => return Err("a control character".into()),
                c => syms.push(PSym::Ch(c)),
            }
        }
        if syms.is_empty() {
            return Err("empty specifier".into());
        }
        if prefix {
            syms.extend([PSym::Sep, PSym::Star]);
        }
        let optional_tail = syms.ends_with(&[PSym::Sep, PSym::Star]);
        let named = syms
            .split(|s| *s == PSym::Sep)
            .filter(|w| !w.contains(&PSym::Star))
            .map(|w| w.iter().filter_map(|s| if let PSym::Ch(c) = s { Some(*c) } else { None }).collect())
            .collect();
        Ok(ShellPattern { syms, optional_tail, named })
    }

    /// Whether an allow (or ask) rule covers command `c`: its words match,
    /// and, when the pattern has a `*` and the command a table of read-only
    /// options, every word the `*` covers is read-only (see
    /// `shell::options`). `Err` says which word is not, when the words
    /// alone would match.
    pub(super) fn covers(&self, c: &super::shell::Subject) -> Result<bool, String> {
        if !self.matches(&c.syms, false) {
            return Ok(false);
        }
        if !self.syms.contains(&PSym::Star) {
            // An exact rule names every word.
            return Ok(true);
        }
        super::shell::read_only_words(c, &self.named).map(|()| true)
    }

    /// Whether the command with these symbols is covered. For allow and ask
    /// (`deny == false`) a word known only when it runs (an expansion, a
    /// pattern) is covered only by a `*`; for deny it matches anything.
    pub(super) fn matches(&self, subject: &[Sym], deny: bool) -> bool {
        glob(&self.syms, subject, deny)
            || (self.optional_tail && glob(&self.syms[..self.syms.len() - 2], subject, deny))
    }
}

/// Pattern `p` against subject `s` (dynamic programming over suffixes:
/// `O(|p|·|s|)` time, `O(|s|)` memory).
fn glob(p: &[PSym], s: &[Sym], deny: bool) -> bool {
    let n = s.len();
    // next[j]: p[i+1..] matches s[j..]; first for the empty pattern.
    let mut next = vec![false; n + 1];
    next[n] = true;
    if deny {
        for j in (0..n).rev() {
            next[j] = s[j] == Sym::Unknown && next[j + 1];
        }
    }
    let mut cur = vec![false; n + 1];
    for sym in p.iter().rev() {
        for j in (0..=n).rev() {
            cur[j] = match (sym, s.get(j)) {
                (PSym::Star, _) => next[j] || (j < n && cur[j + 1]),
                (_, None) => false,
                // Unknown: matches nothing (skip it), or this symbol and maybe more.
                (_, Some(Sym::Unknown)) => deny && (cur[j + 1] || next[j]),
                (PSym::Ch(a), Some(Sym::Ch(b))) => a == b && next[j + 1],
                (PSym::Sep, Some(Sym::Sep)) => next[j + 1],
                _ => false,
            };
        }
        std::mem::swap(&mut next, &mut cur);
    }
    next[0]
}

impl Rule {
    /// Parse a rule such as `Bash(git status:*)` for the built-in tools.
    /// The error is a human-readable reason.
    #[cfg(test)]
    pub fn parse(text: &str) -> Result<Rule, String> {
        Self::parse_for(text, &RuleKinds::builtin())
    }

    /// Parse a rule, with specifiers read as `kinds` says for its tool; a
    /// tool name `kinds` does not know is an error that suggests one it does.
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
        if let Some(n) = tool.exact_name() {
            kinds.check_name(n)?;
        }
        let kind = tool.exact_name().map(|n| kinds.get(n));
        let spec = match spec.map(str::trim) {
            None | Some("*") => Spec::Any,
            Some("") => return Err("empty specifier".into()),
            Some(s) if kind == Some(RuleKind::Path) => {
                if !parens_balanced(s, false) {
                    return Err("unbalanced parentheses".into());
                }
                Spec::Path(parse_path_spec(s)?)
            }
            Some(s) if kind == Some(RuleKind::Domain) => Spec::Domain(DomainPattern::parse(s)?),
            Some(s) => {
                if !parens_balanced(s, true) {
                    return Err("unbalanced parentheses or quotes".into());
                }
                if kind == Some(RuleKind::Shell) {
                    Spec::Shell(ShellPattern::parse(s)?)
                } else {
                    match s.strip_suffix(":*") {
                        Some(prefix) if prefix.trim().is_empty() => {
                            return Err("empty command prefix before `:*`".into())
                        }
                        Some(prefix) => Spec::Command(CmdPattern::Prefix(prefix.trim_end().to_string())),
                        None => Spec::Command(CmdPattern::Exact(s.to_string())),
                    }
                }
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
            "Bash(git status; rm:*)",
            "Bash(echo $HOME)",
            "Bash(echo `x`)",
            "Bash(a | b)",
            "Bash(a && b)",
            "Bash(a > f)",
            "Bash(# x)",
            "Bash(echo \"$x\")",
            "Bash(echo x\\)",
        ] {
            assert!(Rule::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn tool_names_must_name_a_tool() {
        for (bad, hint) in [
            ("write", "did you mean \"Write\""),
            ("bash(ls:*)", "did you mean \"Bash\""),
            ("READ(./x)", "did you mean \"Read\""),
            ("Repl", "did you mean \"repl\""),
        ] {
            let e = Rule::parse(bad).unwrap_err();
            assert!(e.contains(hint), "{bad}: {e}");
        }
        // With every tool known (the pipeline), any unknown name is an error.
        let kinds = RuleKinds::of(&crate::tools::builtin_tools());
        let e = Rule::parse_for("Wrte", &kinds).unwrap_err();
        assert!(e.contains("did you mean \"Write\""), "{e}");
        let e = Rule::parse_for("Frobnicate", &kinds).unwrap_err();
        assert!(e.contains("unknown tool \"Frobnicate\"") && e.contains("Bash"), "{e}");
        for good in ["Bash", "Write", "repl", "chdir", "mcp__srv__x", "mcp__srv", "eval_registered__double", "Sample"] {
            assert!(Rule::parse_for(good, &kinds).is_ok(), "{good}");
        }
        // Before the tools are known, a name that may be a library's own tool passes.
        assert!(Rule::parse("MyTool").is_ok());
    }

    #[test]
    fn wildcards_match_at_word_boundaries() {
        let r = rules(&["Bash(ls *)", "Bash(git diff * --stat)", "Bash(npm run test*)"], &[], &[]);
        assert_eq!(bash(&r, "ls"), Some(Allow), "a trailing ` *` also matches nothing");
        assert_eq!(bash(&r, "ls -la"), Some(Allow));
        assert_eq!(bash(&r, "ls -la /tmp"), Some(Allow));
        assert_eq!(bash(&r, "lsblk"), None);
        assert_eq!(bash(&r, "git diff HEAD~1 --stat"), Some(Allow));
        assert_eq!(bash(&r, "git diff a b --stat"), Some(Allow));
        assert_eq!(bash(&r, "git diff --stat"), None);
        assert_eq!(bash(&r, "git diff 'x --stat'"), None, "a literal inside one word is not a word");
        assert_eq!(bash(&r, "npm run test"), Some(Allow));
        assert_eq!(bash(&r, "npm run test:unit"), Some(Allow));
        assert_eq!(bash(&r, "npm run test --watch"), Some(Allow));
        let r = rules(&["Bash(ls*)"], &[], &[]);
        for cmd in ["ls", "lsblk", "ls -la"] {
            assert_eq!(bash(&r, cmd), Some(Allow), "{cmd}");
        }
        // A word known only at run time is covered only by `*`.
        let r = rules(&["Bash(cat notes.txt)", "Bash(echo:*)"], &[], &[]);
        assert_eq!(bash(&r, "cat $F"), None);
        assert_eq!(bash(&r, "cat notes.*"), None);
        assert_eq!(bash(&r, "cat \"notes.txt\""), Some(Allow));
        assert_eq!(bash(&r, "echo $F *"), Some(Allow));
        // Quoted specials in a rule are literal.
        let r = rules(&["Bash(echo '*')", "Bash(git commit -m \"a b\")"], &[], &[]);
        assert_eq!(bash(&r, "echo '*'"), Some(Allow));
        assert_eq!(bash(&r, "echo x"), None);
        assert_eq!(bash(&r, "git commit -m 'a b'"), Some(Allow));
        assert_eq!(bash(&r, "git commit -m a b"), None);
    }

    #[test]
    fn deny_patterns_treat_unknown_words_as_anything() {
        let p = ShellPattern::parse("git push --force:*").unwrap();
        let s = |v: &[Option<&str>]| {
            let mut out = Vec::new();
            for (i, w) in v.iter().enumerate() {
                if i > 0 {
                    out.push(Sym::Sep);
                }
                match w {
                    Some(w) => out.extend(w.chars().map(Sym::Ch)),
                    None => out.push(Sym::Unknown),
                }
            }
            out
        };
        assert!(p.matches(&s(&[Some("git"), Some("push"), Some("--force")]), false));
        assert!(!p.matches(&s(&[Some("git"), Some("push"), None]), false));
        assert!(p.matches(&s(&[Some("git"), Some("push"), None]), true));
        assert!(p.matches(&s(&[Some("git"), None]), true));
        assert!(p.matches(&s(&[Some("git"), None, Some("-v")]), true));
        assert!(!p.matches(&s(&[Some("git"), Some("pull"), None]), true));
        assert!(!p.matches(&s(&[Some("git")]), true));
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
        // words after quote removal: spacing and quoting do not matter, word boundaries do
        assert_eq!(bash(&r, "git  status"), Some(Allow));
        assert_eq!(bash(&r, "git 'status' -s"), Some(Allow));
        assert_eq!(bash(&r, "'git status'"), None);
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
