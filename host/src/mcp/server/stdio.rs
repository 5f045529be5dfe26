//! The stdio transport: one connection over stdin/stdout (or any pair of
//! byte streams), behind a line filter that answers lines that are not JSON.

use super::*;

/// Largest stdio message read (a longer line is answered as a parse error).
const MAX_STDIO_LINE: usize = 64 << 20;

/// Serve one connection over stdin/stdout until the client disconnects.
///
/// Between the streams and rmcp sits a line filter: a line that is not
/// JSON is answered with a JSON-RPC parse error (-32700) instead of being
/// dropped, and the answers and rmcp's own messages reach stdout as whole
/// lines, never interleaved.
pub async fn serve_stdio(options: Arc<ServerOptions>) -> Result<(), ServeError> {
    serve_streams(options, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve_stdio`] over any pair of byte streams.
pub async fn serve_streams<R, W>(options: Arc<ServerOptions>, input: R, output: W) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    options.hub()?;
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 16);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 16);
    let (errors_tx, mut errors_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    // Input: pass JSON lines on, answer the rest.
    let reader = tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(input);
        let mut to_rmcp = to_rmcp;
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = match (&mut lines).take(MAX_STDIO_LINE as u64 + 1).read_until(b'\n', &mut line).await {
                Ok(n) => n,
                Err(_) => break,
            };
            if n == 0 {
                break;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if line.len() > MAX_STDIO_LINE || serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
                let why = if line.len() > MAX_STDIO_LINE { "the message is too long" } else { "the line is not JSON" };
                let e = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {why}")}});
                let _ = errors_tx.send(e.to_string());
                let unfinished = line.len() > MAX_STDIO_LINE && !line.ends_with(b"\n");
                if line.len() > MAX_STDIO_LINE {
                    // Give back the buffer the overlong line grew.
                    line = Vec::new();
                }
                if unfinished {
                    // Skip the rest of the overlong line, a buffer at a
                    // time: it is never held whole.
                    while let Ok(buf) = lines.fill_buf().await {
                        if buf.is_empty() {
                            break;
                        }
                        match buf.iter().position(|&b| b == b'\n') {
                            Some(i) => {
                                lines.consume(i + 1);
                                break;
                            }
                            None => {
                                let n = buf.len();
                                lines.consume(n);
                            }
                        }
                    }
                }
                continue;
            }
            if to_rmcp.write_all(body).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
                break;
            }
        }
        let _ = to_rmcp.shutdown().await;
    });
    // Output: rmcp's lines and the parse errors, each whole.
    let writer = tokio::spawn(async move {
        let mut out = output;
        let mut from_rmcp = tokio::io::BufReader::new(from_rmcp);
        let mut line = Vec::new();
        let mut errors_open = true;
        loop {
            line.clear();
            tokio::select! {
                r = from_rmcp.read_until(b'\n', &mut line) => match r {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                            break;
                        }
                    }
                },
                e = errors_rx.recv(), if errors_open => match e {
                    Some(e) => {
                        if out.write_all(format!("{e}\n").as_bytes()).await.is_err() || out.flush().await.is_err() {
                            break;
                        }
                    }
                    None => errors_open = false,
                },
            }
        }
    });
    let server = WreplServer::new(options);
    let result = async {
        let running = server.serve((rmcp_in, rmcp_out)).await.map_err(|e| ServeError::Transport(e.to_string()))?;
        running.waiting().await.map_err(|e| ServeError::Transport(e.to_string()))?;
        Ok(())
    }
    .await;
    reader.abort();
    let _ = writer.await;
    result
}
