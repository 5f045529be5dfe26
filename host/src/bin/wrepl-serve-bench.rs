//! Serve throughput of `wrepl serve --http` as a client fleet sees it:
//! concurrent contexts (stateless 2026-07-28 clients, one handle each)
//! doing trivial evaluations, then evaluations with 10 inner calls, on one
//! or more instances sharing one store; and the cost of a cold resume (the
//! first call of a 100-block context on an instance that never served it).
//!
//! ```text
//! wrepl-serve-bench --wrepl target/release/wrepl --store FILE|URL [--instances 2] [--contexts 64] [--evals 20]
//! ```
//!
//! Prints a Markdown table row per phase and, last, one JSON object.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{json, Value};

type Client = RunningService<RoleClient, ClientConfig>;

struct Args {
    wrepl: PathBuf,
    store: String,
    instances: usize,
    contexts: usize,
    evals: usize,
}

fn args() -> Result<Args, String> {
    let mut a = Args { wrepl: PathBuf::new(), store: String::new(), instances: 1, contexts: 64, evals: 20 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--wrepl" => a.wrepl = PathBuf::from(value()?),
            "--store" => a.store = value()?,
            "--instances" => a.instances = value()?.parse().map_err(|e| format!("--instances: {e}"))?,
            "--contexts" => a.contexts = value()?.parse().map_err(|e| format!("--contexts: {e}"))?,
            "--evals" => a.evals = value()?.parse().map_err(|e| format!("--evals: {e}"))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if a.wrepl.as_os_str().is_empty() || a.store.is_empty() {
        return Err(
            "usage: wrepl-serve-bench --wrepl PATH --store FILE|URL [--instances N] [--contexts N] [--evals N]".into(),
        );
    }
    Ok(a)
}

/// One `wrepl serve --http` instance.
struct Instance {
    child: tokio::process::Child,
    url: String,
}

async fn start(a: &Args, root: &std::path::Path) -> Result<Instance, String> {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(&a.wrepl)
        .args(["serve", "--http", "127.0.0.1:0", "--no-auth", "--store", &a.store, "--root"])
        .arg(root)
        // Room for both phases' contexts (the first phase's stay live until
        // their TTL): the second phase measures inner calls, not evictions.
        .arg("--max-contexts")
        .arg((2 * a.contexts + 8).to_string())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("start {}: {e}", a.wrepl.display()))?;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(l)) = lines.next_line().await {
            if let Some(u) = l.strip_prefix("wrepl: serving MCP at ") {
                return Some(u.to_string());
            }
        }
        None
    })
    .await
    .map_err(|_| "the server did not listen within 60 s".to_string())?
    .ok_or("the server exited")?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Instance { child, url })
}

async fn connect(url: &str) -> Result<Client, String> {
    let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("wrepl-serve-bench", "0"))
        .with_protocol_version(ProtocolVersion::V_2026_07_28);
    let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    info.serve_with_lifecycle(StreamableHttpClientTransport::from_uri(url.to_string()), mode)
        .await
        .map_err(|e| format!("connect {url}: {e}"))
}

async fn repl(c: &Client, code: &str, handle: Option<&str>) -> Result<(Value, String), String> {
    let mut args = json!({"code": code});
    if let Some(h) = handle {
        args["context"] = json!(h);
    }
    let Value::Object(args) = args else { unreachable!() };
    let r = c.call_tool(CallToolRequestParams::new("repl").with_arguments(args)).await.map_err(|e| e.to_string())?;
    let s = r.structured_content.clone().unwrap_or(Value::Null);
    if r.is_error == Some(true) {
        return Err(format!("{s}"));
    }
    Ok((s["result"].clone(), s["context"].as_str().unwrap_or_default().to_string()))
}

/// `contexts` concurrent contexts (context k on instance k % instances),
/// `evals` evaluations of `code` each; every latency.
async fn phase(instances: &[String], contexts: usize, evals: usize, code: &str) -> Result<(Vec<f64>, f64), String> {
    let mut tasks = Vec::new();
    let code = Arc::new(code.to_string());
    let started = Instant::now();
    for k in 0..contexts {
        let url = instances[k % instances.len()].clone();
        let code = code.clone();
        tasks.push(tokio::spawn(async move {
            let c = connect(&url).await?;
            let (_, handle) = repl(&c, "let n = 0", None).await?;
            let mut took = Vec::with_capacity(evals);
            for _ in 0..evals {
                let t = Instant::now();
                repl(&c, &code, Some(&handle)).await?;
                took.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let _ = c.cancel().await;
            Ok::<_, String>(took)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.map_err(|e| e.to_string())??);
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort_by(|a, b| a.total_cmp(b));
    Ok((all, secs))
}

fn pct(v: &[f64], p: f64) -> f64 {
    v[((v.len() - 1) as f64 * p) as usize]
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wrepl-serve-bench: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

async fn run() -> Result<(), String> {
    // rustls 0.23.48 deprecates ring's provider (no post-quantum key exchange); wrepl keeps it.
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    let _ = provider.install_default();
    let a = args()?;
    let root = std::env::temp_dir().join(format!("wrepl-serve-bench-{}", std::process::id()));
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    std::fs::write(root.join("f.txt"), "x").map_err(|e| e.to_string())?;
    let mut servers = Vec::new();
    for _ in 0..a.instances {
        servers.push(start(&a, &root).await?);
    }
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let mut report = serde_json::Map::new();
    println!("| phase | evals | evals/s | p50 ms | p99 ms |");
    println!("|---|---|---|---|---|");
    for (name, code) in
        [("trivial", "n += 1"), ("10 inner calls", "for (let i = 0; i < 10; i++) await cat('f.txt'); n += 1")]
    {
        let (lat, secs) = phase(&urls, a.contexts, a.evals, code).await?;
        let rate = lat.len() as f64 / secs;
        println!("| {name} | {} | {rate:.0} | {:.2} | {:.2} |", lat.len(), pct(&lat, 0.5), pct(&lat, 0.99));
        report.insert(
            name.into(),
            json!({"evals": lat.len(), "evals_per_s": rate, "p50_ms": pct(&lat, 0.5), "p99_ms": pct(&lat, 0.99)}),
        );
    }
    // A cold resume: 100 blocks on the first instance, then the first call
    // on the last one (with one instance: after it dropped the context, so
    // it replays too).
    let c = connect(&urls[0]).await?;
    let (_, handle) = repl(&c, "let m = 0", None).await?;
    for _ in 0..99 {
        repl(&c, "m += 1; await cat('f.txt')", Some(&handle)).await?;
    }
    let other = if urls.len() > 1 { connect(&urls[urls.len() - 1]).await? } else { c };
    let t = Instant::now();
    let (v, _) = repl(&other, "m", Some(&handle)).await?;
    let cold = t.elapsed().as_secs_f64() * 1e3;
    if v != json!(99) {
        return Err(format!("the resumed context says m = {v}"));
    }
    let t = Instant::now();
    repl(&other, "m", Some(&handle)).await?;
    let warm = t.elapsed().as_secs_f64() * 1e3;
    println!("| cold resume of 100 blocks on another instance | 1 | | {cold:.1} | |");
    println!("| the next call there (warm) | 1 | | {warm:.2} | |");
    report.insert("cold_resume_100_blocks_ms".into(), json!(cold));
    report.insert("next_call_ms".into(), json!(warm));
    for s in &mut servers {
        let _ = s.child.kill().await;
    }
    let _ = std::fs::remove_dir_all(&root);
    println!(
        "{}",
        json!({"instances": a.instances, "contexts": a.contexts, "store": if a.store.starts_with("postgres") { "postgresql" } else { "sqlite" }, "results": report})
    );
    Ok(())
}
