//! The web-platform globals inside the sandbox: WPT's URL data, the
//! encoding and crypto vectors, recording of random bytes, the lazy
//! installation, and `fetch()` against a real local HTTP server (every hop
//! a WebFetch call through the pipeline, non-public addresses refused after
//! DNS resolution, the caps).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::support::*;

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/wpt").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn wpt_url_data_passes_but_the_known_failures() {
    let script = format!(
        "const DATA = {};\nconst SETTERS = {};\n{}",
        data("urltestdata.json"),
        data("setters_tests.json"),
        data("url-harness.js")
    );
    let mut repl = TestSandbox::new().build().await;
    let r = ok(&ev_timeout(&mut repl, &script, 120_000).await);
    let (passed, total) = (r["passed"].as_u64().unwrap(), r["total"].as_u64().unwrap());
    let known = data("url-known-failures.txt");
    let known: Vec<&str> = known.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let failed: Vec<String> = r["failed"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    let new: Vec<&String> = failed.iter().filter(|f| !known.contains(&f.as_str())).collect();
    eprintln!("WPT URL: {passed} of {total} cases pass ({} known failures)", known.len());
    assert!(new.is_empty(), "cases that fail and are not known failures: {new:#?}");
    assert!(total > 1000, "the data was read: {total} cases");
    assert_eq!(passed + failed.len() as u64, total);
}

#[tokio::test]
async fn urls_and_search_params() {
    let mut repl = TestSandbox::new().build().await;
    let r = ok(&ev(
        &mut repl,
        r#"
        const u = new URL("../b?x=1#h", "https://user:pw@EXAMPLE.com:443/a/c");
        u.searchParams.append("z", "a b&c");
        const before = u.href;
        u.searchParams.delete("x");
        u.port = "8443"; u.hash = "";
        const p = new URLSearchParams([["b", "2"], ["a", "1"], ["b", "1"]]); p.sort();
        const bad = (() => { try { new URL("nope"); } catch (e) { return e.name + ": " + e.message; } })();
        [before, u.href, u.origin, String(p), [...p.keys()].join(), p.size, bad, URL.canParse("http://x"),
         URL.parse("x") === null, new URL("http://Bücher.example/").hostname, JSON.stringify({u}),
         Object.prototype.toString.call(u), new URLSearchParams("?a=%zz&b=%E2%82%AC+x").get("b")]
        "#,
    )
    .await);
    assert_eq!(r[0], "https://user:pw@example.com/b?x=1&z=a+b%26c#h");
    assert_eq!(r[1], "https://user:pw@example.com:8443/b?z=a+b%26c");
    assert_eq!(r[2], "https://example.com:8443");
    assert_eq!(r[3], "a=1&b=2&b=1", "sort is stable");
    assert_eq!(r[4], "a,b,b");
    assert_eq!(r[5], 3);
    assert!(r[6].as_str().unwrap().starts_with("TypeError: Invalid URL"), "{}", r[6]);
    assert_eq!(r[7], true);
    assert_eq!(r[8], true);
    assert_eq!(r[9], "xn--bcher-kva.example");
    assert_eq!(r[10], r#"{"u":"https://user:pw@example.com:8443/b?z=a+b%26c"}"#);
    assert_eq!(r[11], "[object URL]");
    assert_eq!(r[12], "€ x");
}

#[tokio::test]
async fn text_encoding() {
    let mut repl = TestSandbox::new().build().await;
    let r = ok(&ev(
        &mut repl,
        r#"
        const te = new TextEncoder(), td = new TextDecoder();
        const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(" ");
        const into = new Uint8Array(5);
        const res = te.encodeInto("a€€", into);
        const fatal = (() => { try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xc3, 0x28])); } catch (e) { return e.name; } })();
        // Maximal subparts: each ill-formed subsequence is one U+FFFD.
        const lossy = td.decode(new Uint8Array([0x61, 0xf1, 0x80, 0x80, 0xe1, 0x80, 0xc2, 0x62, 0x80, 0xed, 0xa0, 0x80]));
        // Streaming: a character split across chunks.
        const sd = new TextDecoder();
        const streamed = sd.decode(new Uint8Array([0xe2, 0x82]), { stream: true }) + sd.decode(new Uint8Array([0xac]));
        const bom = [td.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), new TextDecoder("utf8", { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]))];
        const other = (() => { try { new TextDecoder("latin1"); } catch (e) { return e.name + ": " + e.message; } })();
        [hex(te.encode("h€\u{1F600}\ud800")), hex(into), res.read, res.written, fatal, lossy, streamed, bom[0], bom[1].length, other,
         btoa("hi"), atob("aGk=")]
        "#,
    )
    .await);
    assert_eq!(r[0], "68 e2 82 ac f0 9f 98 80 ef bf bd", "a lone surrogate encodes as U+FFFD");
    assert_eq!(r[1], "61 e2 82 ac 00");
    assert_eq!((r[2].as_u64(), r[3].as_u64()), (Some(2), Some(4)), "whole characters only");
    assert_eq!(r[4], "TypeError");
    assert_eq!(r[5], "a\u{FFFD}\u{FFFD}\u{FFFD}b\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}");
    assert_eq!(r[6], "€");
    assert_eq!(r[7], "A");
    assert_eq!(r[8], 2);
    assert!(
        r[9].as_str().unwrap().starts_with("RangeError") && r[9].as_str().unwrap().contains("UTF-8 only"),
        "{}",
        r[9]
    );
    assert_eq!((r[10].as_str(), r[11].as_str()), (Some("aGk="), Some("hi")));
}

#[tokio::test]
async fn crypto_vectors() {
    let mut repl = TestSandbox::new().build().await;
    let r = ok(&ev(
        &mut repl,
        r#"
        const enc = (s) => new TextEncoder().encode(s);
        const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
        const out = {};
        for (const alg of ["SHA-1", "SHA-256", "SHA-384", "SHA-512"]) out[alg] = hex(await crypto.subtle.digest(alg, enc("abc")));
        // RFC 4231 test case 2.
        const key = await crypto.subtle.importKey("raw", enc("Jefe"), { name: "HMAC", hash: "SHA-256" }, true, ["sign", "verify"]);
        const sig = await crypto.subtle.sign("HMAC", key, enc("what do ya want for nothing?"));
        out.hmac = hex(sig);
        out.verify = [await crypto.subtle.verify("HMAC", key, sig, enc("what do ya want for nothing?")),
                      await crypto.subtle.verify({ name: "HMAC" }, key, sig, enc("something else"))];
        out.jwk = (await crypto.subtle.exportKey("jwk", key)).k;
        out.uuid = crypto.randomUUID();
        out.quota = (() => { try { crypto.getRandomValues(new Uint8Array(65537)); } catch (e) { return e.name; } })();
        out.float = (() => { try { crypto.getRandomValues(new Float64Array(2)); } catch (e) { return e.name; } })();
        out.md5 = await crypto.subtle.digest("MD5", enc("x")).then(() => "resolved", (e) => e.name);
        const big = crypto.getRandomValues(new Uint32Array(16384));
        out.distinct = new Set(big).size;
        out.tag = Object.prototype.toString.call(crypto);
        out.illegal = (() => { try { new CryptoKey(); } catch (e) { return e.name; } })();
        out
        "#,
    )
    .await);
    assert_eq!(r["SHA-1"], "a9993e364706816aba3e25717850c26c9cd0d89d");
    assert_eq!(r["SHA-256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_eq!(
        r["SHA-384"],
        "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"
    );
    assert_eq!(
        r["SHA-512"],
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
    );
    assert_eq!(r["hmac"], "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    assert_eq!(r["verify"], serde_json::json!([true, false]));
    assert_eq!(r["jwk"], "SmVmZQ");
    let uuid = r["uuid"].as_str().unwrap();
    assert!(uuid.len() == 36 && &uuid[14..15] == "4" && "89ab".contains(&uuid[19..20]), "a version 4 UUID: {uuid}");
    assert_eq!(r["quota"], "QuotaExceededError");
    assert_eq!(r["float"], "TypeMismatchError");
    assert_eq!(r["md5"], "NotSupportedError");
    assert!(r["distinct"].as_u64().unwrap() > 16_000, "random words: {}", r["distinct"]);
    assert_eq!(r["tag"], "[object Crypto]");
    assert_eq!(r["illegal"], "TypeError");
}

#[tokio::test]
async fn intl_formats_as_node_does_for_en_us() {
    let mut repl = TestSandbox::new().build().await;
    let r = ok(&ev(
        &mut repl,
        r#"
        [new Intl.NumberFormat("en-US", {style: "currency", currency: "USD"}).format(1234.5),
         new Intl.NumberFormat("en-US", {notation: "compact"}).format(1234567),
         new Intl.NumberFormat("en-US", {style: "percent", maximumFractionDigits: 1}).format(0.1234),
         new Intl.DateTimeFormat("en-US", {dateStyle: "full", timeStyle: "short", timeZone: "UTC"}).format(new Date(Date.UTC(2026, 11, 7, 15, 4))),
         new Intl.DateTimeFormat("en-US", {timeZone: "UTC"}).format(new Date(Date.UTC(2026, 11, 7))),
         new Intl.RelativeTimeFormat("en", {numeric: "auto"}).format(-1, "day"),
         new Intl.RelativeTimeFormat("en").format(3, "hours"),
         new Intl.PluralRules("en-US").select(1),
         new Intl.PluralRules("en-US", {type: "ordinal"}).select(23),
         ["b", "a", "C", "á"].sort(new Intl.Collator("en").compare).join(),
         ["10", "9", "1"].sort(new Intl.Collator("en", {numeric: true}).compare).join(),
         new Intl.ListFormat("en", {type: "disjunction"}).format(["a", "b", "c"]),
         new Intl.NumberFormat("en-US", {maximumFractionDigits: 2}).format(1.005),
         new Intl.NumberFormat("de-DE").resolvedOptions().locale,
         (() => { try { new Intl.DateTimeFormat("en-US", {timeZone: "Europe/Paris"}); } catch (e) { return e.name; } })()]
        "#,
    )
    .await);
    // The strings node 20 (ICU) prints for the same calls.
    let want = serde_json::json!([
        "$1,234.50",
        "1.2M",
        "12.3%",
        "Monday, December 7, 2026 at 3:04 PM",
        "12/7/2026",
        "yesterday",
        "in 3 hours",
        "one",
        "few",
        "a,á,b,C",
        "1,9,10",
        "a, b, or c",
        "1.01",
        "en-US",
        "RangeError"
    ]);
    assert_eq!(r, want);
}

#[tokio::test]
async fn platform_globals_load_on_first_use() {
    let mut repl = TestSandbox::new().build().await;
    let r = ok(&ev(
        &mut repl,
        r#"
        const d = (n) => Object.getOwnPropertyDescriptor(globalThis, n);
        const before = [typeof d("URL").get, d("TextDecoder").get === d("TextDecoder").set, d("URL").enumerable];
        const u = new URL("http://x/");
        const after = [typeof d("URL").get, typeof d("URL").value, typeof d("URLSearchParams").value, typeof d("TextDecoder").get];
        // A script may replace one, as in a browser; and one replaced before
        // its group loads stays replaced.
        TextEncoder = 5;
        const te = [TextEncoder, typeof TextDecoder];
        [before, after, te]
        "#,
    )
    .await);
    assert_eq!(r[0], serde_json::json!(["function", true, false]));
    assert_eq!(r[1], serde_json::json!(["undefined", "function", "function", "function"]));
    assert_eq!(r[2], serde_json::json!([5, "function"]));
}

#[test]
fn random_bytes_replay_identically() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.sqlite3");
    let store = store.to_str().unwrap();
    let first = wrepl_in(
        dir.path(),
        &[
            "eval",
            "--store",
            store,
            "--session",
            "r",
            "--snapshot-after",
            "never",
            "-e",
            "const id = crypto.randomUUID(); const bytes = Array.from(crypto.getRandomValues(new Uint8Array(32))).join(); [id, bytes]",
        ],
    );
    assert!(first.status.success(), "{}", err_text(&first));
    let again = wrepl_in(
        dir.path(),
        &["eval", "--store", store, "--session", "r", "--snapshot-after", "never", "-e", "[id, bytes]"],
    );
    assert!(again.status.success(), "{}", err_text(&again));
    assert!(err_text(&again).contains("restored 1 block(s): 1 ok"), "{}", err_text(&again));
    assert_eq!(out(&first), out(&again), "the resumed session sees the recorded values");
    let other = wrepl_in(dir.path(), &["eval", "-e", "crypto.randomUUID()"]);
    assert!(!out(&first).contains(out(&other).trim()), "a new context draws new values");
}

// ---- fetch() against a real local server -------------------------------------

/// A small HTTP/1.1 server on 127.0.0.1 (one thread per connection) whose
/// routes the fetch tests need. Counts the requests it answered.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
}

fn serve() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let hits = counted.clone();
            std::thread::spawn(move || {
                let _ = handle(stream, port, &hits);
            });
        }
    });
    Server { port, hits }
}

fn handle(mut stream: TcpStream, port: u16, hits: &AtomicUsize) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("/").to_string());
        let mut headers = Vec::new();
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            let h = h.trim_end().to_string();
            if h.is_empty() {
                break;
            }
            if let Some((n, v)) = h.split_once(':') {
                if n.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
                headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        hits.fetch_add(1, Ordering::SeqCst);
        let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
        let q = |k: &str| query.split('&').find_map(|p| p.strip_prefix(&format!("{k}="))).map(str::to_string);
        let respond = |s: &mut TcpStream, status: &str, extra: &str, body: &[u8]| -> std::io::Result<()> {
            write!(s, "HTTP/1.1 {status}\r\ncontent-length: {}\r\n{extra}\r\n", body.len())?;
            s.write_all(body)
        };
        match path {
            "/text" => respond(&mut stream, "200 OK", "content-type: text/plain\r\n", b"hello")?,
            "/json" => respond(
                &mut stream,
                "200 OK",
                "content-type: application/json\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n",
                br#"{"a":[1,2]}"#,
            )?,
            "/binary" => respond(
                &mut stream,
                "200 OK",
                "content-type: application/octet-stream\r\n",
                &(0..=255u8).collect::<Vec<_>>(),
            )?,
            "/echo" => {
                let h: serde_json::Map<String, serde_json::Value> =
                    headers.iter().map(|(n, v)| (n.clone(), serde_json::Value::String(v.clone()))).collect();
                let v = serde_json::json!({"method": method, "body": String::from_utf8_lossy(&body), "headers": h});
                respond(&mut stream, "200 OK", "content-type: application/json\r\n", v.to_string().as_bytes())?
            }
            "/redirect" => {
                let to = q("to").unwrap_or_else(|| "/text".into()).replace("%3A", ":").replace("%2F", "/");
                let status = q("status").unwrap_or_else(|| "302".into());
                respond(&mut stream, &format!("{status} Moved"), &format!("location: {to}\r\n"), b"")?
            }
            "/loop" => respond(&mut stream, "302 Found", &format!("location: http://127.0.0.1:{port}/loop\r\n"), b"")?,
            "/big" => {
                let n: usize = q("n").and_then(|n| n.parse().ok()).unwrap_or(5000);
                respond(&mut stream, "200 OK", "", &vec![b'x'; n])?
            }
            "/bighead" => {
                let v = "v".repeat(100_000);
                respond(&mut stream, "200 OK", &format!("x-huge: {v}\r\n"), b"ok")?
            }
            "/slow" => {
                // Headers at once, then one byte a second: never done.
                write!(stream, "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n")?;
                for _ in 0..60 {
                    stream.write_all(b"x")?;
                    std::thread::sleep(Duration::from_secs(1));
                }
                return Ok(());
            }
            _ => respond(&mut stream, "404 Not Found", "", b"no such route")?,
        }
    }
}

/// `wrepl eval` of `code` with WebFetch allowed for 127.0.0.1 and
/// localhost, which may be reached (the loopback server), plus `extra` flags.
fn fetch_eval(dir: &Path, extra: &[&str], code: &str) -> std::process::Output {
    let mut args = vec![
        "eval",
        "--allow",
        "WebFetch(domain:127.0.0.1)",
        "--allow",
        "WebFetch(domain:localhost)",
        "--allow-private-network=127.0.0.1/32",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-e", code]);
    wrepl_in(dir, &args)
}

#[test]
fn fetch_reads_responses() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{}", s.port);
    let code = format!(
        r#"
        const t = await fetch("{base}/text");
        const j = await fetch("{base}/json");
        const b = await fetch("{base}/binary");
        const bytes = new Uint8Array(await b.arrayBuffer());
        const post = await (await fetch("{base}/echo", {{ method: "POST", headers: {{ "X-Test": "1", "Content-Type": "application/json" }}, body: JSON.stringify({{ q: "é" }}) }})).json();
        const form = await (await fetch("{base}/echo", {{ method: "POST", body: new URLSearchParams({{ a: "1 2" }}) }})).json();
        [t.status, t.ok, await t.text(), t.headers.get("content-type"), await j.json(), j.headers.getSetCookie(),
         bytes.length, bytes[255], post.method, post.body, post.headers["x-test"], form.body, form.headers["content-type"],
         (await fetch("{base}/nothing")).status]
        "#
    );
    let o = fetch_eval(dir.path(), &["--json"], &code);
    assert!(o.status.success(), "{}\n{}", out(&o), err_text(&o));
    let v: serde_json::Value = serde_json::from_str(out(&o).trim()).unwrap();
    let r = &v["result"];
    assert_eq!(r[0], 200);
    assert_eq!(r[1], true);
    assert_eq!(r[2], "hello");
    assert_eq!(r[3], "text/plain");
    assert_eq!(r[4], serde_json::json!({"a": [1, 2]}));
    assert_eq!(r[5], serde_json::json!(["a=1", "b=2"]));
    assert_eq!((r[6].as_u64(), r[7].as_u64()), (Some(256), Some(255)), "binary bodies arrive whole");
    assert_eq!(r[8], "POST");
    assert_eq!(r[9], r#"{"q":"é"}"#);
    assert_eq!(r[10], "1");
    assert_eq!(r[11], "a=1+2");
    assert!(r[12].as_str().unwrap().starts_with("application/x-www-form-urlencoded"), "{}", r[12]);
    assert_eq!(r[13], 404);
}

#[test]
fn fetch_follows_redirects_hop_by_hop() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{}", s.port);
    let code = format!(
        r#"
        const r = await fetch("{base}/redirect?to=/echo&status=303", {{ method: "POST", body: "x" }});
        const seen = await r.json();
        const manual = await fetch("{base}/redirect?to=/text", {{ redirect: "manual" }});
        const err = await fetch("{base}/redirect?to=/text", {{ redirect: "error" }}).then(() => "followed", (e) => e.name);
        const loop = await fetch("{base}/loop").then(() => "done", (e) => e.message);
        [r.redirected, r.url, seen.method, manual.status, manual.headers.get("location"), err, loop]
        "#
    );
    let o = fetch_eval(dir.path(), &["--json"], &code);
    assert!(o.status.success(), "{}\n{}", out(&o), err_text(&o));
    let v: serde_json::Value = serde_json::from_str(out(&o).trim()).unwrap();
    let r = &v["result"];
    assert_eq!(r[0], true);
    assert_eq!(r[1], format!("{base}/echo"));
    assert_eq!(r[2], "GET", "a 303 turns a POST into a GET");
    assert_eq!((r[3].as_u64(), r[4].as_str()), (Some(302), Some("/text")));
    assert_eq!(r[5], "TypeError");
    assert!(r[6].as_str().unwrap().contains("redirect"), "{}", r[6]);
    // Every hop was a call of its own: 2 + 1 + 1 + 21.
    let calls = v["calls"].as_array().map(Vec::len).unwrap_or(0);
    assert!(calls >= 25, "{calls} calls recorded: {}", v["calls"]);
}

#[test]
fn fetch_refuses_non_public_addresses_after_resolution() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let port = s.port;
    // 127.0.0.1 may be reached; 127.0.0.2 (the same loopback interface),
    // ::1 and a redirect to them may not; `localhost` resolves to 127.0.0.1.
    let code = format!(
        r#"
        const why = (u) => fetch(u).then((r) => "fetched " + r.status, (e) => e.message);
        [await why("http://127.0.0.2:{port}/text"),
         await why("http://[::1]:{port}/text"),
         await why("http://127.0.0.1:{port}/redirect?to=http%3A%2F%2F127.0.0.2%3A{port}%2Ftext"),
         await why("http://localhost:{port}/text"),
         await why("http://2130706434:{port}/text")]
        "#
    );
    let o = fetch_eval(
        dir.path(),
        &["--json", "--allow", "WebFetch(domain:127.0.0.2)", "--allow", "WebFetch(domain:[::1])"],
        &code,
    );
    assert!(o.status.success(), "{}\n{}", out(&o), err_text(&o));
    let v: serde_json::Value = serde_json::from_str(out(&o).trim()).unwrap();
    let r = &v["result"];
    for i in [0, 1, 2, 4] {
        let m = r[i].as_str().unwrap();
        assert!(m.contains("is not a public address") && m.contains("--allow-private-network"), "{i}: {m}");
    }
    assert_eq!(r[3], "fetched 200");
    // Without the grant, even a name resolving to loopback is refused.
    let o = wrepl_in(
        dir.path(),
        &[
            "eval",
            "--allow",
            "WebFetch(domain:localhost)",
            "-e",
            &format!("await fetch('http://localhost:{port}/text')"),
        ],
    );
    assert!(!o.status.success());
    assert!(err_text(&o).contains("localhost resolves only to non-public addresses (127.0.0.1"), "{}", err_text(&o));
    // And without a rule, nothing is fetched at all.
    let before = s.hits.load(Ordering::SeqCst);
    let o = wrepl_in(
        dir.path(),
        &["eval", "--allow-private-network", "-e", &format!("await fetch('http://127.0.0.1:{port}/text')")],
    );
    assert!(!o.status.success());
    assert!(err_text(&o).contains("--allow 'WebFetch(domain:127.0.0.1)'"), "{}", err_text(&o));
    assert_eq!(s.hits.load(Ordering::SeqCst), before, "the server saw no request");
}

#[test]
fn fetch_caps_name_themselves() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{}", s.port);
    std::fs::write(dir.path().join("settings.json"), r#"{"webFetch": {"maxBodyBytes": 4096, "timeoutMs": 1500}}"#)
        .unwrap();
    let code = format!(
        r#"
        const why = (u, o) => fetch(u, o).then(async (r) => "fetched " + (await r.text()).length, (e) => e.message);
        [await why("{base}/big?n=4096"), await why("{base}/big?n=4097"), await why("{base}/bighead"),
         await why("{base}/slow"),
         await why("{base}/text", {{ headers: [["x-a", "b\r\nx-injected: 1"]] }}),
         await why("{base}/text", {{ headers: {{ host: "evil.example" }} }})]
        "#
    );
    let started = std::time::Instant::now();
    let o = fetch_eval(dir.path(), &["--json", "--settings", "settings.json"], &code);
    assert!(o.status.success(), "{}\n{}", out(&o), err_text(&o));
    let v: serde_json::Value = serde_json::from_str(out(&o).trim()).unwrap();
    let r = &v["result"];
    assert_eq!(r[0], "fetched 4096");
    assert!(
        r[1].as_str().unwrap().contains("more than 4096 bytes")
            && r[1].as_str().unwrap().contains("webFetch.maxBodyBytes"),
        "{}",
        r[1]
    );
    assert!(r[2].as_str().unwrap().contains("webFetch.maxHeaderBytes"), "{}", r[2]);
    assert!(r[3].as_str().unwrap().contains("within 1500 ms"), "{}", r[3]);
    assert!(started.elapsed() < Duration::from_secs(20), "the slow server was cut off");
    assert!(
        r[4].as_str().unwrap().contains("invalid header value") || r[4].as_str().unwrap().contains("CR, LF"),
        "{}",
        r[4]
    );
    assert!(r[5].as_str().unwrap().contains("\"host\" may not be set"), "{}", r[5]);
}

#[test]
fn fetched_bodies_replay_without_the_network() {
    let s = serve();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.sqlite3");
    let store = store.to_str().unwrap();
    let base = format!("http://127.0.0.1:{}", s.port);
    let session = ["--store", store, "--session", "f", "--snapshot-after", "never"];
    let code = format!("const body = await (await fetch('{base}/json')).text(); body");
    let o = fetch_eval(dir.path(), &session, &code);
    assert!(o.status.success(), "{}", err_text(&o));
    let hits = s.hits.load(Ordering::SeqCst);
    // Resumed with no WebFetch grant at all: the recorded response is used.
    let o =
        wrepl_in(dir.path(), &["eval", "--store", store, "--session", "f", "--snapshot-after", "never", "-e", "body"]);
    assert!(o.status.success(), "{}", err_text(&o));
    assert!(err_text(&o).contains("restored 1 block(s): 1 ok"), "{}", err_text(&o));
    assert_eq!(out(&o).trim(), r#"{"a":[1,2]}"#);
    assert_eq!(s.hits.load(Ordering::SeqCst), hits, "no request was made again");
}
