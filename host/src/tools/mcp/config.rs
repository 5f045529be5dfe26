//! The `--mcp-config` file: the `{"mcpServers": {...}}` format, its
//! validation (server names, transports, environment, headers, timeouts) and
//! the limits every downstream server is held to.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::DownstreamError;

/// Most servers one config may name.
pub const MAX_SERVERS: usize = 64;
/// Largest config file read.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// Most tools taken from one server; the rest are skipped with a warning.
pub const MAX_TOOLS_PER_SERVER: usize = 1000;
/// Longest tool description kept (longer ones are truncated).
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;
/// Largest serialized input or output schema accepted.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// Largest tool result accepted (serialized `tools/call` result).
pub const MAX_RESULT_BYTES: usize = 64 * 1024 * 1024;
/// Largest single message read from a server: a maximal result plus room for
/// the JSON-RPC envelope. A longer message disconnects the server.
pub const MAX_MESSAGE_BYTES: usize = MAX_RESULT_BYTES + 64 * 1024;
/// How long a server may take to start and list its tools, by default.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Native timeout of a downstream tool call unless the server sets `timeout_ms`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest `timeout_ms` accepted (one day).
const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTransport {
    /// A child process speaking MCP over stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (added to a small inherited set).
        env: BTreeMap<String, String>,
        /// Working directory, if not wrepl's.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// `http://` or `https://` URL.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// How to reach it.
    pub transport: ServerTransport,
    /// Native timeout of its tool calls (`timeout_ms`); [`DEFAULT_CALL_TIMEOUT`] when `None`.
    pub timeout: Option<Duration>,
}

/// The parsed `{"mcpServers": {...}}` config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownstreamConfig {
    /// Servers by name (validated: `^[A-Za-z0-9_-]{1,64}$`, no `__`, no trailing `_`).
    pub servers: BTreeMap<String, ServerConfig>,
    /// How long each server may take to start and list its tools.
    pub startup_timeout: Duration,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(rename = "mcpServers")]
    mcp_servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    timeout_ms: Option<u64>,
}

/// Checks a server name: `^[A-Za-z0-9_-]{1,64}$`, no `__` (it separates the
/// parts of `mcp__<server>__<tool>`) and no trailing `_` (which would make
/// `mcp__a___b` ambiguous).
pub fn validate_server_name(name: &str) -> Result<(), DownstreamError> {
    let bad = |reason| Err(DownstreamError::ServerName { name: name.to_string(), reason });
    if !is_wire_part(name) {
        return bad("must be 1 to 64 characters from A-Z a-z 0-9 _ -");
    }
    if name.contains("__") {
        return bad("must not contain \"__\" (it separates the parts of mcp__<server>__<tool>)");
    }
    if name.ends_with('_') {
        return bad("must not end with \"_\"");
    }
    Ok(())
}

/// `^[A-Za-z0-9_-]{1,64}$`.
pub(super) fn is_wire_part(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl DownstreamConfig {
    /// Parse a config from JSON text, expanding `${VAR}` and
    /// `${VAR:-default}` from wrepl's environment (see
    /// [`DownstreamConfig::from_json_with`]).
    pub fn from_json(text: &str) -> Result<Self, DownstreamError> {
        Self::from_json_with(text, &|name| std::env::var(name).ok())
    }

    /// Parse a config from JSON text. In `command`, `args`, `env` values,
    /// `cwd`, `url` and `headers` values, `${VAR}` is replaced by `lookup`'s
    /// value of `VAR`, and `${VAR:-default}` by it or, when it is unset or
    /// empty, by `default` (as `.mcp.json` files for other clients write
    /// them). A variable that is unset, without a default, is an error
    /// naming it: a server never starts with a hole in its arguments.
    pub fn from_json_with(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, DownstreamError> {
        let mut raw: RawConfig = serde_json::from_str(text).map_err(|e| DownstreamError::Invalid(e.to_string()))?;
        for (name, server) in raw.mcp_servers.iter_mut() {
            server.expand(lookup).map_err(|message| DownstreamError::Server { server: name.clone(), message })?;
        }
        if raw.mcp_servers.len() > MAX_SERVERS {
            return Err(DownstreamError::Invalid(format!(
                "{} servers configured; at most {MAX_SERVERS} are allowed",
                raw.mcp_servers.len()
            )));
        }
        let mut servers = BTreeMap::new();
        for (name, raw) in raw.mcp_servers {
            validate_server_name(&name)?;
            let server = raw.into_config(&name)?;
            servers.insert(name, server);
        }
        Ok(Self { servers, startup_timeout: DEFAULT_STARTUP_TIMEOUT })
    }

    /// Read and parse a config file (at most [`MAX_CONFIG_BYTES`]).
    pub fn load(path: &Path) -> Result<Self, DownstreamError> {
        let read_err = |e: io::Error| DownstreamError::Read { path: path.to_path_buf(), message: e.to_string() };
        let file = std::fs::File::open(path).map_err(read_err)?;
        let mut text = String::new();
        io::Read::read_to_string(&mut io::Read::take(file, MAX_CONFIG_BYTES + 1), &mut text).map_err(read_err)?;
        if text.len() as u64 > MAX_CONFIG_BYTES {
            return Err(DownstreamError::Read {
                path: path.to_path_buf(),
                message: format!("larger than {MAX_CONFIG_BYTES} bytes"),
            });
        }
        Self::from_json(&text)
    }
}

/// `text` with every `${VAR}` and `${VAR:-default}` replaced (see
/// [`DownstreamConfig::from_json_with`]); `field` names it in errors.
fn expand(text: &str, field: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        // `$${` is a literal `${` (for shell code in arguments).
        if rest[..at].ends_with('$') {
            out.push_str(&rest[..at]);
            out.push('{');
            rest = &rest[at + 2..];
            continue;
        }
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("{field}: an unclosed \"${{\" in {text:?}"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("{field}: {:?} is not a variable name (in {text:?})", name));
        }
        // `${VAR:-default}`: the default when VAR is unset or empty (as in
        // the shell); `${VAR}`: VAR's value, empty included.
        let value = match default {
            Some(d) => Some(lookup(name).filter(|v| !v.is_empty()).unwrap_or_else(|| d.to_string())),
            None => lookup(name),
        };
        match value {
            Some(v) => out.push_str(&v),
            None => {
                return Err(format!(
                    "{field}: the environment variable {name} is not set (write ${{{name}:-default}} to give a default)"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl RawServer {
    /// Expand variables in every field that may hold them.
    fn expand(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        if let Some(c) = &mut self.command {
            *c = expand(c, "command", lookup)?;
        }
        for (i, a) in self.args.iter_mut().flatten().enumerate() {
            *a = expand(a, &format!("args[{i}]"), lookup)?;
        }
        for (k, v) in self.env.iter_mut().flatten() {
            *v = expand(v, &format!("env.{k}"), lookup)?;
        }
        if let Some(c) = &mut self.cwd {
            let text = c.to_string_lossy().into_owned();
            *c = PathBuf::from(expand(&text, "cwd", lookup)?);
        }
        if let Some(u) = &mut self.url {
            *u = expand(u, "url", lookup)?;
        }
        for (k, v) in self.headers.iter_mut().flatten() {
            *v = expand(v, &format!("headers.{k}"), lookup)?;
        }
        Ok(())
    }

    fn into_config(self, name: &str) -> Result<ServerConfig, DownstreamError> {
        let err = |message: String| DownstreamError::Server { server: name.to_string(), message };
        let timeout = match self.timeout_ms {
            None => None,
            Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => Some(Duration::from_millis(ms)),
            Some(ms) => return Err(err(format!("timeout_ms {ms} must be between 1 and {MAX_TIMEOUT_MS}"))),
        };
        let transport = match (self.command, self.url) {
            (Some(_), Some(_)) => return Err(err("give either \"command\" or \"url\", not both".into())),
            (None, None) => return Err(err("needs a \"command\" (stdio server) or a \"url\" (HTTP server)".into())),
            (Some(command), None) => {
                if !matches!(self.kind.as_deref(), None | Some("stdio")) {
                    return Err(err(format!("type {:?} does not fit a \"command\" server", self.kind)));
                }
                if self.headers.is_some() {
                    return Err(err("\"headers\" only applies to \"url\" servers".into()));
                }
                if command.is_empty() || command.contains('\0') {
                    return Err(err("\"command\" must be a non-empty string without NUL".into()));
                }
                let args = self.args.unwrap_or_default();
                let env = self.env.unwrap_or_default();
                if args.iter().any(|a| a.contains('\0')) {
                    return Err(err("arguments must not contain NUL".into()));
                }
                for (k, v) in &env {
                    if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                        return Err(err(format!("invalid environment variable {k:?}")));
                    }
                }
                ServerTransport::Stdio { command, args, env, cwd: self.cwd }
            }
            (None, Some(url)) => {
                if !matches!(self.kind.as_deref(), None | Some("http") | Some("streamable-http")) {
                    return Err(err(format!(
                        "type {:?} is not supported for \"url\" servers (only streamable HTTP)",
                        self.kind
                    )));
                }
                if self.args.is_some() || self.env.is_some() || self.cwd.is_some() {
                    return Err(err("\"args\", \"env\" and \"cwd\" only apply to \"command\" servers".into()));
                }
                let lower = url.to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                    return Err(err(format!("url {url:?} must start with http:// or https://")));
                }
                let headers = self.headers.unwrap_or_default();
                for (k, v) in &headers {
                    axum::http::HeaderName::try_from(k.as_str())
                        .map_err(|_| err(format!("invalid header name {k:?}")))?;
                    axum::http::HeaderValue::try_from(v.as_str())
                        .map_err(|_| err(format!("invalid value for header {k:?}")))?;
                    if ["accept", "mcp-session-id", "last-event-id"].contains(&k.to_ascii_lowercase().as_str()) {
                        return Err(err(format!("header {k:?} is managed by the MCP transport")));
                    }
                }
                ServerTransport::Http { url, headers }
            }
        };
        Ok(ServerConfig { transport, timeout })
    }
}

#[cfg(test)]
mod expansion_tests {
    use super::*;

    #[test]
    fn variables_are_expanded_with_defaults_and_a_missing_one_is_an_error() {
        let lookup = |n: &str| match n {
            "TOKEN" => Some("t0k".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        let json = r#"{"mcpServers": {
            "a": {"command": "${BIN:-npx}", "args": ["-y", "pkg@${VER:-1}", "--key=${TOKEN}"], "env": {"K": "${TOKEN}"}},
            "b": {"url": "https://${HOST:-example.com}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "c": {"command": "run", "args": ["${EMPTY:-fallback}", "$HOME stays", "50$", "sh $${1} [${EMPTY}]"]}
        }}"#;
        let c = DownstreamConfig::from_json_with(json, &lookup).unwrap();
        let ServerTransport::Stdio { command, args, env, .. } = &c.servers["a"].transport else { panic!() };
        assert_eq!(command, "npx");
        assert_eq!(args, &["-y", "pkg@1", "--key=t0k"]);
        assert_eq!(env["K"], "t0k");
        let ServerTransport::Http { url, headers } = &c.servers["b"].transport else { panic!() };
        assert_eq!(url, "https://example.com/mcp");
        assert_eq!(headers["Authorization"], "Bearer t0k");
        let ServerTransport::Stdio { args, .. } = &c.servers["c"].transport else { panic!() };
        assert_eq!(args, &["fallback", "$HOME stays", "50$", "sh ${1} []"]);
        for (bad, says) in [
            (r#"{"mcpServers": {"a": {"command": "x", "args": ["${NOPE}"]}}}"#, "NOPE is not set"),
            (r#"{"mcpServers": {"a": {"command": "x", "args": ["${OPEN"]}}}"#, "unclosed"),
            (r#"{"mcpServers": {"a": {"command": "x", "args": ["${1X}"]}}}"#, "not a variable name"),
        ] {
            let e = DownstreamConfig::from_json_with(bad, &lookup).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("args[0]"), "{e}");
        }
    }
}
