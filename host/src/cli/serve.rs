//! `wrepl serve`: serve the REPL to MCP clients over stdio, or streamable
//! HTTP with `--http`, optionally recording into a session store.

use std::process::ExitCode;
use std::sync::Arc;

use wrepl::mcp::server::{serve_http, serve_stdio, ServerOptions};
use wrepl::replay::store::LogStore;

use super::{builder, default_engine, downstream, PolicyArgs, StoreArgs};

/// The flags of `wrepl serve`.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Listen for streamable HTTP at this address (path /mcp), e.g. 127.0.0.1:8931.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// Tools, workspace and permissions.
    #[command(flatten)]
    policy: PolicyArgs,
    /// Durable session (stdio only): resume it from the store and record into it.
    #[arg(long, value_name = "NAME")]
    session: Option<String>,
    /// Where sessions are recorded.
    #[command(flatten)]
    store: StoreArgs,
    /// Async mode: `repl` returns an eval id at once; poll `repl_result`.
    #[arg(long = "async")]
    async_mode: bool,
    /// List no `repl` tool (the REPL is disabled by configuration).
    #[arg(long)]
    no_repl: bool,
    /// Script budget default and fuel are per call; this caps the result text (characters).
    #[arg(long, value_name = "CHARS", default_value_t = wrepl::DEFAULT_TEXT_CAP)]
    text_cap: usize,
}

/// Run `wrepl serve` until the client disconnects (stdio) or the process is
/// stopped (HTTP).
pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let ServeArgs { http, policy, session, store, async_mode, no_repl, text_cap } = args;
    if http.is_some() && session.is_some() {
        anyhow::bail!("--session works with stdio only (each HTTP connection records its own session)");
    }
    let store: Option<Arc<dyn LogStore>> =
        if session.is_some() || store.given() { Some(store.open_store()?) } else { None };
    let mcp = downstream(&policy).await?;
    let template = builder(&policy, &mcp, default_engine(false)?)?.with_limits(|l| l.text_cap = text_cap);
    let mut options = ServerOptions::new(template)?;
    options.store = store;
    options.session = session;
    options.async_mode = async_mode;
    options.repl_enabled = !no_repl;
    let options = Arc::new(options);
    match http {
        None => serve_stdio(options).await?,
        Some(addr) => {
            // Runs until the process is stopped (the store is crash-safe).
            let shutdown = tokio_util::sync::CancellationToken::new();
            serve_http(options, addr, shutdown, |a| eprintln!("wrepl: serving MCP at http://{a}/mcp")).await?;
        }
    }
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}
