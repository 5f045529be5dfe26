//! The host-conformance programs (`tests/host-conformance/programs.json`) in
//! wrepl's own host. The JavaScript host (`hosts/node/`, jco on Node.js) runs
//! the same file with `node --test`; both must give what the file says, so
//! the two hosts agree at the boundary (scripts, values, console, errors, the
//! order calls start in).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use wrepl::testing::conformance_tools;
use wrepl::{EvalOptions, Phase, ProgressEvent};

use crate::support::builder;

#[tokio::test(flavor = "multi_thread")]
async fn the_conformance_programs_pass_in_wrepls_own_host() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/host-conformance/programs.json");
    let programs: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = programs["cases"].as_array().expect("cases");
    assert!(cases.len() >= 10);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        // The order calls start in, from the pipeline's `start` events.
        let started: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = started.clone();
        let mut repl = builder()
            .without_builtin_tools()
            .tools(conformance_tools())
            .events(Arc::new(move |e: &ProgressEvent| {
                if e.phase == Phase::Start {
                    log.lock().unwrap().push(e.tool_use_id.clone());
                }
            }))
            .build()
            .await
            .unwrap();
        for (i, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let code = step["code"].as_str().unwrap();
            let at = format!("{name}, step {i}: {code}");
            started.lock().unwrap().clear();
            let timeout = step["timeout_ms"].as_u64().map(Duration::from_millis);
            let r = repl.eval(code, EvalOptions { timeout, ..EvalOptions::default() }).await.unwrap();
            if step["stopped"] == true {
                assert!(r.timed_out, "{at}: {r:?}");
                continue;
            }
            assert!(!r.timed_out, "{at}");
            match step.get("error") {
                Some(want) => {
                    let e = r.error.as_ref().unwrap_or_else(|| panic!("{at}: expected an error, got {:?}", r.result));
                    assert_eq!(e.name, want["name"].as_str().unwrap(), "{at}");
                    assert!(e.message.contains(want["message"].as_str().unwrap()), "{at}: {}", e.message);
                }
                None => {
                    assert!(r.error.is_none(), "{at}: {:?}", r.error);
                    assert_eq!(r.result.as_ref(), Some(&step["value"]), "{at}");
                }
            }
            for (key, got) in [("text", &r.text), ("stdout", &r.stdout), ("stderr", &r.stderr)] {
                if let Some(want) = step.get(key) {
                    assert_eq!(got, want.as_str().unwrap(), "{at}: {key}");
                }
            }
            if let Some(want) = step.get("calls") {
                let order = started.lock().unwrap().clone();
                let calls: Vec<Value> = order
                    .iter()
                    .map(|id| {
                        let c = r.calls.iter().find(|c| &c.id == id).expect("a record per started call");
                        json!([c.tool, c.input])
                    })
                    .collect();
                assert_eq!(&Value::Array(calls), want, "{at}");
            }
        }
    }
}
