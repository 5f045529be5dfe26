//! `wrepl serve`: serve the REPL to MCP clients over stdio, or streamable
//! HTTP with `--http`, optionally recording into a session store. Over HTTP
//! clients need a bearer token (generated and printed once, kept in
//! `--token-file`, or taken from `WREPL_TOKEN`); `--no-auth` works on a
//! loopback address only.

use std::process::ExitCode;
use std::sync::Arc;

use wrepl::mcp::server::{
    serve_http, serve_metrics, serve_stdio, token_lines, HttpSecurity, ServerOptions, TokenSet, TokenSource,
};
use wrepl::replay::store::LogStore;

use super::{builder, default_engine, downstream, PolicyArgs, StoreArgs};

/// The flags of `wrepl serve`.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Listen for streamable HTTP at this address (path /mcp), e.g. 127.0.0.1:8931.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// HTTP: the bearer tokens, one a line (`#` starts a comment). A missing
    /// or empty file is given a new token (mode 0600). Without this flag or
    /// WREPL_TOKEN, a token is generated and printed once.
    #[arg(long, value_name = "PATH")]
    token_file: Option<std::path::PathBuf>,
    /// HTTP: accept requests without a token. Only on a loopback address;
    /// then any local process can use every tool this server grants.
    #[arg(long)]
    no_auth: bool,
    /// HTTP: also accept browser requests from this Origin
    /// (scheme://host[:port]); repeatable. The server's own origins
    /// (http://127.0.0.1:PORT, http://localhost:PORT) always are.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// HTTP: also accept this Host header (a name, or name:port), e.g. the
    /// name a load balancer uses; repeatable. Only loopback names are
    /// accepted otherwise.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_host: Vec<String>,
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
    /// List no `repl` tool (the REPL is disabled by configuration); so does
    /// CLAUDE_CODE_REPL=false in the environment.
    #[arg(long)]
    no_repl: bool,
    /// How long an unused REPL context lives, in seconds (a recorded one
    /// can be continued by its handle until then, on any server sharing
    /// the store).
    #[arg(long, value_name = "SECONDS", default_value_t = wrepl::mcp::server::DEFAULT_CONTEXT_TTL.as_secs())]
    context_ttl: u64,
    /// At most this many REPL contexts stay live (HTTP); past it, the
    /// least recently used idle ones are dropped. With --store they come
    /// back by replay when their handle is used again; without, they are
    /// gone.
    #[arg(long, value_name = "N", default_value_t = wrepl::mcp::server::MAX_LIVE_CONTEXTS)]
    max_contexts: usize,
    /// At most this much guest memory in all live REPL contexts together,
    /// in MiB; past it, the least recently used idle ones are dropped (with
    /// --store they come back by replay when used again; without, they are
    /// gone).
    #[arg(long, value_name = "MIB", default_value_t = wrepl::mcp::server::DEFAULT_MAX_LIVE_MEMORY >> 20)]
    max_context_memory: u64,
    /// The key that seals context handles and request states (a file of at
    /// least 32 bytes, mode 0600). Servers sharing a store share its key
    /// by default; give one to share it otherwise.
    #[arg(long, value_name = "PATH")]
    state_key_file: Option<std::path::PathBuf>,
    /// Hibernate a REPL context unused for this many seconds: snapshot it into the store and drop it
    /// from memory, keeping its handle; its next call wakes it from the snapshot. `0`: never.
    #[arg(long, value_name = "SECONDS", default_value_t = wrepl::mcp::server::DEFAULT_HIBERNATE_AFTER.as_secs())]
    hibernate_after: u64,
    /// Also serve metrics in the Prometheus text format at http://ADDR/metrics
    /// (a listener of its own, without authentication: bind it where only
    /// the monitoring system reaches, e.g. 127.0.0.1:9464). With --http,
    /// the MCP listener serves them at /metrics behind its token anyway.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// Cap on each result's text, in characters. Default 100000, or what
    /// CLAUDE_REPL_VARIANT=trim<N>k asks (N thousand).
    #[arg(long, value_name = "CHARS")]
    text_cap: Option<usize>,
    /// Print a client configuration for this server on stdout: `claude`
    /// (Claude Code's .mcp.json), `cursor` (Cursor's mcp.json), `vscode`
    /// (VS Code's .vscode/mcp.json) or `inspector` (the MCP Inspector's
    /// `--config FILE --server wrepl`). With --http, once the server listens
    /// (its address and a token included), and it goes on serving; over
    /// stdio, the command that starts this server with these flags, and it
    /// exits.
    #[arg(long, value_name = "CLIENT")]
    print_client_config: Option<ClientKind>,
}

/// A client whose configuration `--print-client-config` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ClientKind {
    /// Claude Code: `.mcp.json` (`mcpServers`, `type` http or stdio).
    Claude,
    /// Cursor: `mcp.json` (`mcpServers`; `url` for HTTP).
    Cursor,
    /// VS Code: `.vscode/mcp.json` (`servers`, `type` http or stdio).
    Vscode,
    /// The MCP Inspector: its `--config` file (`mcpServers`, `type`
    /// streamable-http or stdio).
    Inspector,
}

/// Where a client reaches the server: over HTTP (its URL and token), or by
/// starting it (the command and its arguments).
enum Reach<'a> {
    Http { url: &'a str, token: Option<&'a str> },
    Stdio { command: &'a str, args: &'a [String] },
}

/// The configuration `client` reads for this server, named `wrepl`.
fn client_config(client: ClientKind, reach: &Reach<'_>) -> serde_json::Value {
    use serde_json::json;
    let server = match reach {
        Reach::Http { url, token } => {
            let mut s = match client {
                ClientKind::Cursor => json!({"url": url}),
                ClientKind::Claude | ClientKind::Vscode => json!({"type": "http", "url": url}),
                ClientKind::Inspector => json!({"type": "streamable-http", "url": url}),
            };
            if let Some(t) = token {
                s["headers"] = json!({"Authorization": format!("Bearer {t}")});
            }
            s
        }
        Reach::Stdio { command, args } => match client {
            ClientKind::Cursor => json!({"command": command, "args": args}),
            ClientKind::Claude | ClientKind::Vscode | ClientKind::Inspector => {
                json!({"type": "stdio", "command": command, "args": args})
            }
        },
    };
    match client {
        ClientKind::Vscode => json!({"servers": {"wrepl": server}}),
        ClientKind::Claude | ClientKind::Cursor | ClientKind::Inspector => json!({"mcpServers": {"wrepl": server}}),
    }
}

/// Print `config` on stdout, whole, at once.
fn print_config(config: &serde_json::Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(config)? + "\n";
    super::print_all(text.as_bytes()).map(drop)
}

/// The token text a client configuration carries: the generated one, the
/// first of the token file, or WREPL_TOKEN's.
fn client_token(source: &Source) -> Option<String> {
    match source.as_ref()? {
        TokenSource::Generated(t) => Some(t.clone()),
        TokenSource::CreatedFile(path) | TokenSource::File(path, _) => {
            let text = std::fs::read_to_string(path).ok()?;
            let first = token_lines(&text).next().map(|(_, t)| t.to_string());
            first
        }
        TokenSource::Env => std::env::var("WREPL_TOKEN").ok().map(|v| v.trim().to_string()),
    }
}

/// This server's command line without `--print-client-config` (and its
/// value): what a client runs to start it over stdio.
fn own_arguments() -> Vec<String> {
    let mut out = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--print-client-config" {
            args.next();
        } else if !a.starts_with("--print-client-config=") {
            out.push(a);
        }
    }
    out
}

/// Run `wrepl serve` until the client disconnects (stdio) or the process is
/// stopped (HTTP).
pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let ServeArgs {
        http,
        token_file,
        no_auth,
        allow_origin,
        allow_host,
        policy,
        session,
        store,
        async_mode,
        no_repl,
        text_cap,
        context_ttl,
        max_contexts,
        max_context_memory,
        state_key_file,
        metrics,
        hibernate_after,
        print_client_config,
    } = args;
    if let (Some(client), None) = (print_client_config, http) {
        // Over stdio the client starts the server: print how, and stop.
        let exe = std::env::current_exe()?;
        let command = exe.to_str().ok_or_else(|| anyhow::anyhow!("the path of wrepl is not UTF-8: {exe:?}"))?;
        print_config(&client_config(client, &Reach::Stdio { command, args: &own_arguments() }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let text_cap = super::text_cap(text_cap)?;
    let no_repl = no_repl || super::repl_disabled_by_env()?;
    if context_ttl == 0 {
        anyhow::bail!("--context-ttl must be at least 1 second");
    }
    if max_contexts == 0 || max_context_memory == 0 {
        anyhow::bail!("--max-contexts and --max-context-memory must be at least 1");
    }
    let live_limits =
        wrepl::mcp::server::LiveLimits { contexts: max_contexts, memory: max_context_memory.saturating_mul(1 << 20) };
    let state_key = match &state_key_file {
        Some(path) => Some(read_state_key(path)?),
        None => None,
    };
    if http.is_some() && session.is_some() {
        anyhow::bail!("--session works with stdio only (each HTTP connection records its own session)");
    }
    // Settle who may connect before anything else starts.
    let token_path = token_file.clone();
    let security = match http {
        Some(addr) => {
            let (mut security, source) = http_security(addr, token_file, no_auth, &allow_origin)?;
            for host in &allow_host {
                security = security.allow_host(host)?;
            }
            Some((security, source))
        }
        None => {
            if token_file.is_some() || no_auth || !allow_origin.is_empty() || !allow_host.is_empty() {
                anyhow::bail!("--token-file, --no-auth, --allow-origin and --allow-host work with --http only");
            }
            None
        }
    };
    let store_path = store.file().cloned();
    let store: Option<Arc<dyn LogStore>> =
        if session.is_some() || store.given() { Some(store.open_store()?) } else { None };
    let mcp = downstream(&policy).await?;
    let mut template = builder(&policy, &mcp, default_engine(false, None)?)?.with_limits(|l| l.text_cap = text_cap);
    // The store and the token file are wrepl's own state: out of the tools' reach.
    if let Some(file) = &store_path {
        template = template.protect_store(file);
    }
    if let Some(file) = token_path {
        template = template.protect(file);
    }
    if let Some(file) = &state_key_file {
        template = template.protect(file);
    }
    let mut options = ServerOptions::new(template)?;
    options.store = store;
    options.session = session;
    options.async_mode = async_mode;
    options.repl_enabled = !no_repl;
    options.context_ttl = std::time::Duration::from_secs(context_ttl);
    options.live_limits = live_limits;
    options.state_key = state_key;
    options.hibernate_after = (hibernate_after > 0).then(|| std::time::Duration::from_secs(hibernate_after));
    let options = Arc::new(options);
    options.spawn_hibernation();
    let metrics_stop = tokio_util::sync::CancellationToken::new();
    if let Some(addr) = metrics {
        // Bound now, so that an address in use is an error at start.
        let listener =
            tokio::net::TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("--metrics {addr}: {e}"))?;
        eprintln!("wrepl: metrics at http://{}/metrics", listener.local_addr()?);
        let (m, stop) = (options.metrics.clone(), metrics_stop.clone());
        tokio::spawn(async move {
            if let Err(e) = serve_metrics(m, listener, stop).await {
                eprintln!("wrepl: the metrics listener stopped: {e}");
            }
        });
    }
    let _stop_metrics = metrics_stop.drop_guard();
    match (http, security) {
        (Some(addr), Some((security, source))) => {
            // Runs until SIGTERM or SIGINT (the store is crash-safe: a
            // killed server loses nothing, its contexts come back by replay).
            let shutdown = tokio_util::sync::CancellationToken::new();
            {
                let shutdown = shutdown.clone();
                tokio::spawn(async move {
                    stop_signal().await;
                    eprintln!("wrepl: stopping: snapshotting the live contexts");
                    shutdown.cancel();
                });
            }
            serve_http(options.clone(), addr, security, shutdown, |a| {
                announce(&source, a);
                eprintln!("wrepl: serving MCP at http://{a}/mcp");
                if let Some(client) = print_client_config {
                    let url = format!("http://{a}/mcp");
                    let token = client_token(&source);
                    let config = client_config(client, &Reach::Http { url: &url, token: token.as_deref() });
                    if let Err(e) = print_config(&config) {
                        eprintln!("wrepl: --print-client-config: {e}");
                    }
                }
            })
            .await?;
        }
        _ => {
            use std::io::IsTerminal as _;
            if std::io::stdin().is_terminal() {
                // A person started it by hand: say what it is waiting for.
                eprintln!(
                    "wrepl: serving MCP on stdio, for an MCP client to start (e.g. {{\"mcpServers\": {{\"wrepl\": \
                     {{\"command\": \"wrepl\", \"args\": [\"serve\"]}}}}}} in .mcp.json); `wrepl` alone opens the \
                     interactive REPL. Ctrl-D stops."
                );
            }
            serve_stdio(options.clone()).await?
        }
    }
    // A graceful stop: every live context that changed since its newest
    // snapshot gets one, so that it resumes without replay.
    for failed in options.snapshot_contexts(std::time::Duration::from_secs(10)).await {
        eprintln!("wrepl: {failed}");
    }
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// The first SIGTERM or SIGINT.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        // No handler could be installed: the default action (exit) stays.
        _ => std::future::pending().await,
    }
}

/// Where the HTTP server's tokens came from (`None`: `--no-auth`).
type Source = Option<TokenSource>;

/// The HTTP access rules of the flags and `WREPL_TOKEN`.
fn http_security(
    addr: std::net::SocketAddr,
    token_file: Option<std::path::PathBuf>,
    no_auth: bool,
    allow_origin: &[String],
) -> anyhow::Result<(HttpSecurity, Source)> {
    let env = std::env::var("WREPL_TOKEN").ok().filter(|v| !v.trim().is_empty());
    let (mut security, source) = match (no_auth, token_file, env) {
        (true, Some(_), _) => anyhow::bail!("--no-auth and --token-file contradict each other: give one"),
        (true, None, Some(_)) => anyhow::bail!("--no-auth contradicts WREPL_TOKEN (set in the environment): unset one"),
        (false, Some(_), Some(_)) => {
            anyhow::bail!(
                "both --token-file and WREPL_TOKEN give tokens: give one (unset WREPL_TOKEN or drop the flag)"
            )
        }
        (true, None, None) => {
            if !addr.ip().is_loopback() {
                anyhow::bail!(
                    "--no-auth is allowed on a loopback address only (127.0.0.1 or ::1), not {}: anyone who can \
                     reach the port could run every tool this server grants",
                    addr.ip()
                );
            }
            eprintln!(
                "wrepl: WARNING: --no-auth: no token is needed; any local process (and any user on this machine) \
                 can drive this server and every tool it grants"
            );
            (HttpSecurity::no_auth(), None)
        }
        (false, Some(path), None) => {
            let (tokens, source) = TokenSet::load_or_create_file(&path)?;
            (HttpSecurity::bearer(tokens), Some(source))
        }
        (false, None, Some(value)) => (HttpSecurity::bearer(TokenSet::from_env_value(&value)?), Some(TokenSource::Env)),
        (false, None, None) => {
            let (tokens, token) = TokenSet::generate()?;
            (HttpSecurity::bearer(tokens), Some(TokenSource::Generated(token)))
        }
    };
    for origin in allow_origin {
        security = security.allow_origin(origin)?;
    }
    if source.is_some() && !addr.ip().is_loopback() {
        eprintln!(
            "wrepl: warning: serving plain HTTP on {}: tokens and data cross the network unencrypted; put a TLS \
             proxy in front",
            addr.ip()
        );
    }
    Ok((security, source))
}

/// Say once, on stderr, how clients authenticate.
fn announce(source: &Source, addr: std::net::SocketAddr) {
    let how = format!("send the header `Authorization: Bearer <token>` with every request to http://{addr}/mcp");
    match source {
        None => {}
        Some(TokenSource::Generated(token)) => {
            eprintln!("wrepl: access token: {token}");
            eprintln!(
                "wrepl: clients must {how}; the token is shown only this once (keep one with --token-file PATH \
                 or WREPL_TOKEN)"
            );
        }
        Some(TokenSource::CreatedFile(path)) => {
            eprintln!("wrepl: wrote a new access token to {} (mode 0600); clients must {how}", path.display());
        }
        Some(TokenSource::File(path, n)) => {
            let tokens = if *n == 1 { "the token".to_string() } else { format!("one of the {n} tokens") };
            eprintln!("wrepl: clients must {how}, with {tokens} in {}", path.display());
        }
        Some(TokenSource::Env) => eprintln!("wrepl: clients must {how}, with the token from WREPL_TOKEN"),
    }
}

/// The state key in `path`: at least 32 bytes, readable by its owner only.
fn read_state_key(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| anyhow::anyhow!("state key file {}: {e}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        anyhow::bail!(
            "state key file {}: group or others may access it (mode {:04o}); run `chmod 600` on it",
            path.display(),
            meta.permissions().mode() & 0o7777
        );
    }
    let key = std::fs::read(path).map_err(|e| anyhow::anyhow!("state key file {}: {e}", path.display()))?;
    if key.len() < 32 {
        anyhow::bail!("state key file {}: {} bytes; a key needs at least 32", path.display(), key.len());
    }
    Ok(key)
}
