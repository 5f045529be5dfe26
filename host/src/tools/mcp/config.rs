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
    /// Parse a config from JSON text.
    pub fn from_json(text: &str) -> Result<Self, DownstreamError> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| DownstreamError::Invalid(e.to_string()))?;
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

impl RawServer {
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
