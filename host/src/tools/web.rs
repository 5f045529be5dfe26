//! `WebFetch`: one HTTP request and its response, for the guest's `fetch()`.
//!
//! The tool never follows a redirect: a 3xx comes back as it is, and the
//! guest's `fetch()` makes the next hop a call of its own, so every hop goes
//! through the whole pipeline (schema, hooks, the `WebFetch(domain:…)`
//! rules, recording). Addresses are checked after DNS resolution, at
//! connect time: loopback, private, link-local and other non-public
//! addresses are refused unless the configuration grants them
//! ([`PrivateNetwork`]), so neither a name that resolves to one nor a
//! rebinding DNS server reaches them. No proxy is used (it would connect on
//! the tool's behalf, past that check).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use super::{str_field, RuleKind, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// Wire name of the HTTP tool behind `fetch()`.
pub const WEB_FETCH: &str = "WebFetch";

/// Which non-public addresses requests may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PrivateNetwork {
    /// None: only public addresses (the default).
    #[default]
    Refused,
    /// All of them (`--allow-private-network`, `"allowPrivateNetwork": true`).
    All,
    /// Those in these networks (`"allowPrivateNetwork": ["127.0.0.1/32"]`).
    Only(Vec<ipnet::IpNet>),
}

impl PrivateNetwork {
    /// Whether `ip` may be connected to.
    pub fn permits(&self, ip: IpAddr) -> bool {
        is_public(ip)
            || match self {
                PrivateNetwork::Refused => false,
                PrivateNetwork::All => true,
                PrivateNetwork::Only(nets) => nets.iter().any(|n| n.contains(&ip)),
            }
    }
}

/// The limits and grants of `WebFetch` (the settings key `webFetch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfig {
    /// Non-public addresses requests may reach.
    pub private_network: PrivateNetwork,
    /// Most bytes of a response body (default 10 MiB).
    pub max_body_bytes: u64,
    /// Most bytes of a response's header section (default 64 KiB).
    pub max_header_bytes: u64,
    /// Longest a request may take, from connecting to the body's last byte
    /// (default 30 s; a call's `timeoutMs` may shorten it).
    pub timeout: Duration,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            private_network: PrivateNetwork::Refused,
            max_body_bytes: DEFAULT_MAX_BODY,
            max_header_bytes: DEFAULT_MAX_HEADERS,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Default cap on a response body.
pub const DEFAULT_MAX_BODY: u64 = 10 * 1024 * 1024;
/// Default cap on a response's header section.
pub const DEFAULT_MAX_HEADERS: u64 = 64 * 1024;
/// Default total time of one request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A network as the settings and `--allow-private-network` write it: CIDR
/// (`10.0.0.0/8`, `fd00::/8`) or one address (`127.0.0.1`).
pub fn parse_network(text: &str) -> Result<ipnet::IpNet, String> {
    let t = text.trim();
    t.parse::<ipnet::IpNet>()
        .or_else(|_| t.parse::<IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{text:?} is not a network (CIDR such as 10.0.0.0/8) or an address"))
}

/// Whether `ip` is a public unicast address: not loopback, private,
/// link-local, shared (CGNAT), documentation, benchmarking, multicast,
/// broadcast, reserved or unspecified, and not an IPv6 form that embeds
/// such an IPv4 address (mapped, NAT64, 6to4) or hides one (Teredo).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || a == 0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || (a == 192 && b == 88 && c == 99)
        || ip.is_multicast()
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    // NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48): judge the embedded IPv4.
    if s[0] == 0x64 && s[1] == 0xff9b {
        if s[2] == 0 && s[3] == 0 && s[4] == 0 && s[5] == 0 {
            return is_public_v4(Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8));
        }
        return false;
    }
    // 6to4 (2002::/16): the IPv4 address in bits 16..48.
    if s[0] == 0x2002 {
        return is_public_v4(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // IPv4-compatible (deprecated) ::a.b.c.d
        || (s[0..6] == [0; 6])
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x2001 && s[1] == 0) // Teredo: hides an IPv4 address
        || (s[0] == 0x0100 && s[1..4] == [0; 3]) // discard-only
        || s[0] == 0x3fff && s[1] < 0x1000) // documentation (2024)
}

/// Resolves names for the client, keeping only the addresses the
/// configuration permits: a name with none left is an error naming them.
struct GuardedResolver {
    private: PrivateNetwork,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let private = self.private.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (ok, refused): (Vec<SocketAddr>, Vec<SocketAddr>) =
                found.into_iter().partition(|a| private.permits(a.ip()));
            if ok.is_empty() {
                let shown: Vec<String> = refused.iter().map(|a| a.ip().to_string()).collect();
                let why: Box<dyn std::error::Error + Send + Sync> = if shown.is_empty() {
                    format!("{host} has no address").into()
                } else {
                    Box::new(Refusal(format!(
                        "{host} resolves only to non-public addresses ({}): {PRIVATE_HINT}",
                        shown.join(", ")
                    )))
                };
                return Err(why);
            }
            let addrs: reqwest::dns::Addrs = Box::new(ok.into_iter());
            Ok(addrs)
        })
    }
}

/// How a refused private address is lifted.
const PRIVATE_HINT: &str = "requests to loopback, private and link-local addresses are refused; \
     to allow them, run with --allow-private-network or set \"webFetch\": {\"allowPrivateNetwork\": true} \
     (or a list of networks, e.g. [\"127.0.0.1/32\"]) in the settings";

/// A refusal by the address check, told apart from other connect errors.
#[derive(Debug)]
struct Refusal(String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Request headers a script may not set: they would change which server
/// is asked (`host`) or how the message is framed on the wire.
const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "keep-alive",
    "expect",
    "proxy-authorization",
    "proxy-connection",
    "http2-settings",
];

/// The HTTP tool.
pub struct WebFetch {
    config: WebConfig,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl std::fmt::Debug for WebFetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebFetch").field("config", &self.config).finish_non_exhaustive()
    }
}

impl WebFetch {
    /// The tool with these limits and grants.
    pub fn new(config: WebConfig) -> Self {
        Self { config, client: OnceLock::new() }
    }

    /// The client, built at the first call (loading the system's roots).
    fn client(&self) -> Result<reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| {
                super::mcp::ensure_crypto_provider();
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .no_proxy()
                    .dns_resolver(Arc::new(GuardedResolver { private: self.config.private_network.clone() }))
                    .connect_timeout(Duration::from_secs(10))
                    .http1_max_headers(256)
                    .build()
                    .map_err(|e| format!("WebFetch could not set up its HTTP client: {e}"))
            })
            .clone()
            .map_err(ToolError::Failed)
    }
}

/// A request as the input describes it, checked.
struct Request {
    url: url::Url,
    method: reqwest::Method,
    headers: reqwest::header::HeaderMap,
    body: Option<Vec<u8>>,
    timeout: Duration,
}

fn invalid(msg: impl Into<String>) -> ToolError {
    ToolError::InvalidInput(msg.into())
}

/// The URL of an input (absolute, http or https).
fn parse_url(input: &Value) -> Result<url::Url, ToolError> {
    let text = str_field(input, "url").ok_or_else(|| invalid("WebFetch needs a url"))?;
    let url = url::Url::parse(text).map_err(|e| invalid(format!("WebFetch: {text:?} is not an absolute URL: {e}")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(invalid(format!("WebFetch: only http and https URLs can be fetched, not {}:", url.scheme())));
    }
    if url.host().is_none() {
        return Err(invalid(format!("WebFetch: {text:?} names no host")));
    }
    Ok(url)
}

fn parse_request(input: &Value, config: &WebConfig) -> Result<Request, ToolError> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    let url = parse_url(input)?;
    let given = str_field(input, "method").unwrap_or("GET");
    // The standard methods in any case, as fetch() normalises them.
    let upper = given.to_ascii_uppercase();
    let method = if ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH"].contains(&upper.as_str()) {
        &upper
    } else {
        given
    };
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| invalid(format!("WebFetch: {given:?} is not an HTTP method")))?;
    if matches!(method.as_str(), "CONNECT" | "TRACE" | "TRACK") {
        return Err(invalid(format!("WebFetch: the method {method} is not allowed")));
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    match input.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for item in list {
                match item.as_array().map(Vec::as_slice) {
                    Some([Value::String(n), Value::String(v)]) => pairs.push((n.clone(), v.clone())),
                    _ => return Err(invalid("WebFetch: each header must be a [name, value] pair of strings")),
                }
            }
        }
        Some(Value::Object(map)) => {
            for (n, v) in map {
                let Value::String(v) = v else {
                    return Err(invalid(format!("WebFetch: the value of header {n:?} must be a string")));
                };
                pairs.push((n.clone(), v.clone()));
            }
        }
        Some(_) => return Err(invalid("WebFetch: headers must be a list of [name, value] pairs or an object")),
    }
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        let lower = name.to_ascii_lowercase();
        if FORBIDDEN_HEADERS.contains(&lower.as_str()) || lower.starts_with("proxy-") {
            return Err(invalid(format!(
                "WebFetch: the request header {name:?} may not be set (it is the client's own)"
            )));
        }
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("WebFetch: {name:?} is not a valid header name")))?;
        // A header value is bytes: characters up to U+00FF are one byte each
        // (as fetch() sends them); controls other than tab are refused.
        let trimmed = value.trim_matches([' ', '\t']);
        let bytes: Option<Vec<u8>> = trimmed.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
        let v = bytes
            .and_then(|b| HeaderValue::from_bytes(&b).ok())
            .ok_or_else(|| invalid(format!("WebFetch: the value of header {name:?} has characters a header may not carry (CR, LF, NUL or other controls, or characters above U+00FF)")))?;
        headers.append(n, v);
    }
    let body = match input.get("body") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(match str_field(input, "bodyEncoding").unwrap_or("utf8") {
            "utf8" => text.clone().into_bytes(),
            "base64" => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| invalid(format!("WebFetch: the body is not valid base64: {e}")))?,
            other => return Err(invalid(format!("WebFetch: bodyEncoding must be utf8 or base64, not {other:?}"))),
        }),
        Some(_) => return Err(invalid("WebFetch: the body must be a string")),
    };
    if body.is_some() && (method == reqwest::Method::GET || method == reqwest::Method::HEAD) {
        return Err(invalid(format!("WebFetch: a {method} request cannot have a body")));
    }
    let timeout = match input.get("timeoutMs").and_then(Value::as_f64) {
        Some(ms) if ms.is_finite() && ms > 0.0 => Duration::from_millis(ms as u64).min(config.timeout),
        _ => config.timeout,
    };
    Ok(Request { url, method, headers, body, timeout })
}

/// Whether an error (or one of its causes) is the address check's refusal.
fn refusal_in(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<Refusal>() {
            return Some(r.0.clone());
        }
        cur = err.source();
    }
    None
}

/// The whole chain of an error's messages.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        let s = err.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = err.source();
    }
    out
}

async fn exchange(
    client: reqwest::Client,
    req: Request,
    config: WebConfig,
    trace: Option<crate::call::TraceContext>,
) -> Result<ToolOutput, ToolError> {
    let shown = req.url.to_string();
    // An address literal is not resolved: check it here.
    let literal = match req.url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    if let Some(ip) = literal.filter(|ip| !config.private_network.permits(*ip)) {
        return Err(ToolError::Failed(format!("WebFetch {shown}: {ip} is not a public address: {PRIVATE_HINT}")));
    }
    let mut builder = client.request(req.method.clone(), req.url.clone()).headers(req.headers).timeout(req.timeout);
    // The call's span: the server may continue the trace.
    if let Some(t) = &trace {
        builder = builder.header("traceparent", t.traceparent.as_str());
        if let Some(state) = &t.tracestate {
            builder = builder.header("tracestate", state.as_str());
        }
    }
    if let Some(body) = req.body {
        builder = builder.body(body);
    }
    let timeout_ms = req.timeout.as_millis();
    let failed = |e: reqwest::Error| {
        if let Some(r) = refusal_in(&e) {
            return ToolError::Failed(format!("WebFetch {shown}: {r}"));
        }
        if e.is_timeout() {
            return ToolError::Timeout(format!(
                "WebFetch {shown}: no complete response within {timeout_ms} ms (the webFetch timeout; a call may shorten it with timeoutMs)"
            ));
        }
        ToolError::Failed(format!("WebFetch {shown}: {}", chain(&e)))
    };
    let mut response = builder.send().await.map_err(failed)?;
    let status = response.status();
    let mut header_bytes = 0u64;
    let mut headers = Vec::new();
    let mut content_type = String::new();
    for (name, value) in response.headers() {
        header_bytes += (name.as_str().len() + value.len() + 4) as u64;
        // Isomorphic decoding, as fetch() does: each byte one character.
        let value: String = value.as_bytes().iter().map(|&b| char::from(b)).collect();
        if name == reqwest::header::CONTENT_TYPE {
            content_type = value.clone();
        }
        headers.push(json!([name.as_str(), value]));
    }
    if header_bytes > config.max_header_bytes {
        return Err(ToolError::Failed(format!(
            "WebFetch {shown}: the response's headers are {header_bytes} bytes, more than the cap of {} (webFetch.maxHeaderBytes)",
            config.max_header_bytes
        )));
    }
    let too_big = |n: u64| {
        ToolError::Failed(format!(
            "WebFetch {shown}: the response body is more than {} bytes{} (the cap webFetch.maxBodyBytes; raise it in the settings, or ask the server for less, e.g. with a Range header)",
            config.max_body_bytes,
            if n > config.max_body_bytes { format!(" ({n} announced)") } else { String::new() },
        ))
    };
    if let Some(n) = response.content_length().filter(|n| *n > config.max_body_bytes) {
        return Err(too_big(n));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if (body.len() + chunk.len()) as u64 > config.max_body_bytes {
            return Err(too_big(0));
        }
        body.extend_from_slice(&chunk);
    }
    let size = body.len();
    let (text, encoding) = match String::from_utf8(body) {
        Ok(text) => (text, "utf8"),
        Err(e) => (base64::engine::general_purpose::STANDARD.encode(e.into_bytes()), "base64"),
    };
    let status_text = status.canonical_reason().unwrap_or("").to_string();
    let summary = format!(
        "{} {shown} -> {} {status_text}, {size} bytes{}",
        req.method,
        status.as_u16(),
        if content_type.is_empty() { String::new() } else { format!(" ({content_type})") }
    );
    let value = json!({
        "url": shown,
        "status": status.as_u16(),
        "statusText": status_text,
        "headers": headers,
        "body": text,
        "bodyEncoding": encoding,
    });
    Ok(ToolOutput::new(value, summary))
}

impl Tool for WebFetch {
    fn name(&self) -> &str {
        WEB_FETCH
    }

    fn description(&self) -> &str {
        "One HTTP request (http or https) and its whole response: status, headers and body (UTF-8 text, or base64 \
         for other bytes). Redirects are returned, not followed. Scripts usually call fetch(), which uses this tool \
         for every hop. Needs a WebFetch rule, e.g. WebFetch(domain:example.com) or WebFetch(domain:*.example.com); \
         loopback and private addresses are refused unless allowed."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "Absolute http or https URL."},
                "method": {"type": "string", "description": "HTTP method (default GET)."},
                "headers": {
                    "description": "Request headers: [name, value] pairs, or an object.",
                    "anyOf": [
                        {"type": "array", "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}},
                        {"type": "object", "additionalProperties": {"type": "string"}}
                    ]
                },
                "body": {"type": "string", "description": "Request body (not for GET or HEAD)."},
                "bodyEncoding": {"type": "string", "enum": ["utf8", "base64"], "description": "How body is written (default utf8)."},
                "timeoutMs": {"type": "number", "exclusiveMinimum": 0, "description": "Shorter total time for this request (ms)."}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "status": {"type": "integer"},
                "statusText": {"type": "string"},
                "headers": {"type": "array", "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}},
                "body": {"type": "string"},
                "bodyEncoding": {"type": "string", "enum": ["utf8", "base64"]}
            },
            "required": ["url", "status", "statusText", "headers", "body", "bodyEncoding"]
        }))
    }

    fn native_timeout(&self, input: &Value) -> Duration {
        // The request's own timeout decides; the pipeline's is a backstop.
        parse_request(input, &self.config).map_or(self.config.timeout, |r| r.timeout) + Duration::from_secs(5)
    }

    fn read_only(&self, input: &Value) -> bool {
        matches!(str_field(input, "method").unwrap_or("GET").to_ascii_uppercase().as_str(), "GET" | "HEAD" | "OPTIONS")
    }

    fn allowed_by_default(&self, _input: &Value) -> bool {
        // Reaching the network needs a rule, even for a GET.
        false
    }

    fn concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn rule_kind(&self) -> RuleKind {
        RuleKind::Domain
    }

    fn rule_subject(&self, input: &Value) -> Option<String> {
        // The host as the URL parser serialises it (lower case, IDNA).
        parse_url(input).ok().and_then(|u| u.host_str().map(str::to_string))
    }

    fn global(&self) -> Option<&str> {
        Some(WEB_FETCH)
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolFuture {
        let prepared = parse_request(&input, &self.config).and_then(|r| Ok((r, self.client()?)));
        let config = self.config.clone();
        Box::pin(async move {
            let (req, client) = prepared?;
            tokio::select! {
                r = exchange(client, req, config, ctx.trace.clone()) => r,
                _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled("WebFetch: the request was cancelled".into())),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_and_non_public_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "fc00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:a00:1::",
            "2001::1",
            "2001:db8::1",
            "ff02::1",
            "::127.0.0.1",
            "fec0::1",
            "100::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!is_public(ip), "{ip} must not be public");
            assert!(!PrivateNetwork::Refused.permits(ip));
            assert!(PrivateNetwork::All.permits(ip));
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "2606:4700:4700::1111",
            "::ffff:1.1.1.1",
            "64:ff9b::101:101",
            "2002:101:101::",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(is_public(ip), "{ip} is public");
        }
        let only = PrivateNetwork::Only(vec!["127.0.0.1/32".parse().unwrap()]);
        assert!(only.permits("127.0.0.1".parse().unwrap()));
        assert!(!only.permits("127.0.0.2".parse().unwrap()));
        assert!(!only.permits("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn requests_are_checked() {
        let c = WebConfig::default();
        for (input, want) in [
            (json!({}), "needs a url"),
            (json!({"url": "/relative"}), "not an absolute URL"),
            (json!({"url": "file:///etc/passwd"}), "only http and https"),
            (json!({"url": "http://x", "method": "CONNECT"}), "not allowed"),
            (json!({"url": "http://x", "method": "G ET"}), "not an HTTP method"),
            (json!({"url": "http://x", "headers": [["Host", "y"]]}), "may not be set"),
            (json!({"url": "http://x", "headers": [["Transfer-Encoding", "chunked"]]}), "may not be set"),
            (json!({"url": "http://x", "headers": [["x-a", "b\r\nx-injected: 1"]]}), "CR, LF"),
            (json!({"url": "http://x", "headers": [["x a", "b"]]}), "not a valid header name"),
            (json!({"url": "http://x", "headers": [["x-a", "\u{2028}"]]}), "above U+00FF"),
            (json!({"url": "http://x", "headers": [["x-a"]]}), "[name, value] pair"),
            (json!({"url": "http://x", "body": "b"}), "cannot have a body"),
            (json!({"url": "http://x", "method": "POST", "body": "!!", "bodyEncoding": "base64"}), "not valid base64"),
        ] {
            let err = parse_request(&input, &c).err().unwrap_or_else(|| panic!("{input} should be refused"));
            assert!(err.to_string().contains(want), "{input}: {err}");
        }
        let ok =
            parse_request(&json!({"url": "https://Example.COM/a", "method": "post", "body": "x", "timeoutMs": 5}), &c)
                .unwrap();
        assert_eq!(ok.method, reqwest::Method::POST);
        let latin1 = parse_request(&json!({"url": "http://x", "headers": [["x-a", "caf\u{e9}"]]}), &c).unwrap();
        assert_eq!(latin1.headers["x-a"].as_bytes(), b"caf\xe9", "Latin-1 characters are one byte each");
        assert_eq!(ok.timeout, Duration::from_millis(5));
        assert_eq!(
            WebFetch::new(c).rule_subject(&json!({"url": "https://Bücher.Example/x"})).as_deref(),
            Some("xn--bcher-kva.example")
        );
    }
}
