//! Downstream MCP servers as tools: connects to the servers named in an
//! `mcpServers` config file (`--mcp-config`) and offers each of their tools to
//! scripts as one inner tool named `mcp__<server>__<tool>`. Also reachable as
//! `wrepl::mcp::downstream`.
//!
//! Everything a server sends is untrusted: tool names, descriptions and
//! schemas are checked and capped when listed (bad tools are skipped with a
//! warning), results are size-bounded, and a server that dies or sends an
//! oversized message fails its calls with a clear error instead of hanging.
//! Child processes run in their own process group, which is killed when the
//! [`Downstream`] is dropped or [`Downstream::shutdown`] runs.
//!
//! The parts: `config` reads and validates the config file and holds the
//! limits, `connection` starts or connects the servers, lists their tools and
//! carries progress and cancellation, `tool` is the [`Tool`] that calls a
//! downstream tool and converts its result; this module holds the
//! [`Downstream`] handle that owns the connections.

mod config;
mod connection;
pub(crate) use connection::ensure_crypto_provider;
mod tool;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::text::floor_char_boundary;
use crate::tools::Tool;

pub use config::{
    validate_server_name, DownstreamConfig, ServerConfig, ServerTransport, DEFAULT_CALL_TIMEOUT,
    DEFAULT_STARTUP_TIMEOUT, MAX_CONFIG_BYTES, MAX_DESCRIPTION_BYTES, MAX_MESSAGE_BYTES, MAX_RESULT_BYTES,
    MAX_SCHEMA_BYTES, MAX_SERVERS, MAX_TOOLS_PER_SERVER,
};
use connection::{connect_one, start, Connected, ServerConn};

/// Why downstream servers could not be configured or connected.
#[derive(Debug, thiserror::Error)]
pub enum DownstreamError {
    /// The config file could not be read.
    #[error("cannot read MCP config {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// The config is not valid JSON of the expected shape (including unknown fields).
    #[error("invalid MCP config: {0}")]
    Invalid(String),
    /// A server name is not acceptable.
    #[error("invalid MCP server name {name:?}: {reason}")]
    ServerName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A server's entry is not acceptable.
    #[error("MCP server {server:?}: {message}")]
    Server {
        /// The server.
        server: String,
        /// What is wrong.
        message: String,
    },
}

/// Connected downstream servers and the tools they offer.
pub struct Downstream {
    servers: Vec<Arc<ServerConn>>,
    tools: Vec<Arc<dyn Tool>>,
    warnings: Vec<String>,
}

impl std::fmt::Debug for Downstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Downstream")
            .field("servers", &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>())
            .field("tools", &self.tools.iter().map(|t| t.name().to_string()).collect::<Vec<_>>())
            .field("warnings", &self.warnings)
            .finish()
    }
}

impl Downstream {
    /// Connects every configured server concurrently (each within
    /// `config.startup_timeout`) and lists their tools. A server that fails
    /// to start is left out with a warning naming it (see [`Self::warnings`]);
    /// the others are still connected. Errors only for an invalid config.
    pub async fn connect(config: DownstreamConfig) -> Result<Self, DownstreamError> {
        for name in config.servers.keys() {
            validate_server_name(name)?;
        }
        if config.servers.len() > MAX_SERVERS {
            return Err(DownstreamError::Invalid(format!("at most {MAX_SERVERS} servers are allowed")));
        }
        let startup = config.startup_timeout;
        let attempts = config.servers.into_iter().map(|(name, server)| async move {
            let result = match tokio::time::timeout(startup, connect_one(&name, server)).await {
                Ok(r) => r,
                Err(_) => Err(format!("did not start and list its tools within {} ms", startup.as_millis())),
            };
            (name, result)
        });
        Ok(Self::collect(futures_util::future::join_all(attempts).await))
    }

    /// Connects servers over already-open byte streams (e.g. in-process test
    /// servers over `tokio::io::duplex`), with the same checks and limits as
    /// [`Self::connect`]. Each entry: name, read half, write half, call timeout.
    #[doc(hidden)]
    #[allow(clippy::type_complexity)]
    pub async fn connect_streams(
        servers: Vec<(String, Box<dyn AsyncRead + Send + Unpin>, Box<dyn AsyncWrite + Send + Unpin>, Option<Duration>)>,
        startup_timeout: Duration,
    ) -> Result<Self, DownstreamError> {
        for (name, ..) in &servers {
            validate_server_name(name)?;
        }
        let attempts = servers.into_iter().map(|(name, read, write, timeout)| async move {
            let fut = start(&name, read, write, None, Arc::default(), timeout);
            let result = match tokio::time::timeout(startup_timeout, fut).await {
                Ok(r) => r,
                Err(_) => Err(format!("did not start and list its tools within {} ms", startup_timeout.as_millis())),
            };
            (name, result)
        });
        Ok(Self::collect(futures_util::future::join_all(attempts).await))
    }

    fn collect(results: Vec<(String, Result<Connected, String>)>) -> Self {
        let mut out = Self { servers: Vec::new(), tools: Vec::new(), warnings: Vec::new() };
        for (name, result) in results {
            match result {
                Ok(c) => {
                    out.servers.push(c.conn);
                    out.tools.extend(c.tools);
                    out.warnings.extend(c.warnings);
                }
                Err(e) => out.warnings.push(format!("MCP server {name:?} was not connected: {e}")),
            }
        }
        out
    }

    /// One tool per listed server tool, named `mcp__<server>__<tool>`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    /// What went wrong while connecting: servers left out, tools skipped or truncated.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Names of the connected servers.
    pub fn servers(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name.clone()).collect()
    }

    /// Process ids of the running command servers, by server name.
    pub fn child_pids(&self) -> Vec<(String, u32)> {
        self.servers
            .iter()
            .filter_map(|s| {
                let pid = s.child.lock().ok()?.as_ref()?.id()?;
                Some((s.name.clone(), pid))
            })
            .collect()
    }

    /// Closes every connection (stdin closed, then the process group is
    /// killed if it has not exited within 2 s) and waits for the processes.
    pub async fn shutdown(self) {
        futures_util::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        for s in &self.servers {
            s.terminate();
        }
    }
}

/// A server's text, capped for error messages.
fn cap_text(mut s: String, max: usize) -> String {
    if s.len() > max {
        s.truncate(floor_char_boundary(&s, max));
        s.push_str("...");
    }
    s
}

/// A name from the server, safe to show in a warning.
fn shown(s: &str) -> String {
    format!("{:?}", cap_text(s.to_string(), 80))
}
