//! `wrepl types`: the declarations of the real built-in tools, checked with
//! the TypeScript compiler (`tests/node`: `npm install` there; CI sets
//! `WREPL_REQUIRE_NPM=1` so a missing compiler fails instead of skipping).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use wrepl::dts::{declarations, dispatcher_signatures, ToolSignature};
use wrepl::{policy::js_global_for, Dispatcher, ReplBuilder};

use crate::support::{builder, ev};

fn template(dir: &Path) -> ReplBuilder {
    builder().roots([dir]).session_id("types")
}

fn dispatcher(dir: &Path) -> Arc<Dispatcher> {
    template(dir).dispatcher().unwrap()
}

/// The TypeScript compiler of `tests/node`, or `None` (with a note) when it
/// is not installed and `WREPL_REQUIRE_NPM` is not `1`.
fn tsc() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node/node_modules/.bin/tsc");
    if bin.exists() {
        return Some(bin);
    }
    if std::env::var("WREPL_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!("{} is missing: run `npm install --no-audit --no-fund` in tests/node", bin.display());
    }
    eprintln!("note: skipping the TypeScript check: {} is missing (npm install in tests/node)", bin.display());
    None
}

/// The flags of the README's `tsc` command.
const TSC_ARGS: [&str; 10] = [
    "--noEmit",
    "--strict",
    "--lib",
    "es2023",
    "--target",
    "es2022",
    "--module",
    "es2022",
    "--moduleDetection",
    "force",
];

/// Run the README's `tsc` command on the declarations plus `files`; the exit
/// status and the diagnostics.
fn check(tsc: &Path, dir: &Path, dts: &str, files: &[(&str, &str)]) -> (bool, String) {
    std::fs::write(dir.join("wrepl.d.ts"), dts).unwrap();
    let mut cmd = Command::new(tsc);
    // The README's command (top-level await needs a module target and
    // every script file treated as a module).
    cmd.current_dir(dir).args(TSC_ARGS).args(["--pretty", "false", "wrepl.d.ts"]);
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
        cmd.arg(name);
    }
    let out = cmd.output().expect("run tsc");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

const GOOD: &str = r#"
async function main(): Promise<void> {
  const r: ReadOutput = await Read({ file_path: "src/lib.rs", offset: 2, limit: 10 });
  const b: BashOutput = await Bash({ command: "ls", timeout: 1000 });
  const code: number | null = b.exitCode;
  const text: string = await cat("README.md", { limit: 5 });
  const out: string = await sh("echo " + shQuote("a b"), { timeout: 5000 });
  const lines: string = await rg("fn main", { glob: "*.rs", "-i": true });
  const files: string[] = await rgf("TODO", { path: "src" });
  const found: string[] = await gl("**/*.toml");
  await put("out.txt", { any: "value" });
  await Edit({ file_path: "a", old_string: "x", new_string: "y", replace_all: true });
  await Grep({ pattern: "x", output_mode: "count", "-C": 2 });
  const where: string = await chdir("src");
  const reply: string = await haiku("Summarise: " + text);
  const data: unknown = await opus("Extract", { type: "object" });
  const double: RegisteredTools.Handlers["double"] = (input: RegisteredTools.doubleInput) => input.n * 2;
  registerTool("triple", "Triples n", { type: "object" }, async (input: { n: number }) => input.n * 3, { displayName: "T" });
  const infos: RegisteredToolInfo[] = listTools();
  const sum = await mcp__srv__get_sum({ a: 1, b: 2, "op-name": "add" });
  const total: number = sum.total;
  try { await sh("false"); } catch (e) { const se = e as ShellError; console.error(se.exitCode, se.stderr); }
  const id: number = setTimeout((n: number) => console.log(n), 10, 1);
  clearTimeout(id);
  o.result = { r, code, out, lines, files, found, where, reply, data, double, infos, total };
  console.log(str(o), btoa("x"), atob("eA=="), typeof repoHint === "string" ? repoHint : "");
}
main();
"#;

/// A script as a model writes it: top-level await, and the built-in tools'
/// results used through their declared types.
const GOOD_TOP_LEVEL: &str = r#"
const r = await Read({ file_path: "src/lib.rs" });
const first: string = r.type === "text" ? r.content.split("\n")[0] : r.mime;
const total: number = r.type === "text" ? r.totalLines : r.bytes;
const w = await Write({ file_path: "out.txt", content: "x" });
const created: boolean = w.created;
const written: number = (await Write({ file_path: "o2.txt", content: "y" })).bytes;
const e = await Edit({ file_path: "out.txt", old_string: "x", new_string: "z" });
const replaced: number = e.replacements;
const names: string[] = (await Glob({ pattern: "**/*.rs" })).filenames;
const g = await Grep({ pattern: "fn", output_mode: "count" });
const perFile: number = g.mode === "count" ? g.counts.reduce((n, c) => n + c.count, 0) : 0;
const hits = await rg("fn main", { output_mode: "matches", glob: "*.rs" });
const where: string = hits.map((m) => `${m.file}:${m.line}: ${m.text}`).join("\n");
const text: string = await cat("README.md");
const b = await Bash({ command: "true" });
const code: number | null = b.exitCode;
console.log(first, total, created, written, replaced, names, perFile, where, text, code);
"#;

#[tokio::test(flavor = "multi_thread")]
async fn builtin_declarations_type_check() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dispatcher(tmp.path());

    // The globals are the dispatcher's bindings: every built-in tool under its
    // own name, chdir wired without a global.
    let mut tools = dispatcher_signatures(&d);
    let bindings = d.bindings();
    for b in &bindings {
        let sig = tools.iter().find(|t| t.name == b.name).expect("a signature per binding");
        assert_eq!(sig.global.as_deref(), Some(b.global.as_str()), "{}", b.name);
    }
    assert_eq!(tools.len(), bindings.len());

    // A downstream MCP tool whose name is not an identifier, with $defs.
    let name = "mcp__srv__get-sum";
    tools.push(ToolSignature {
        name: name.into(),
        global: Some(js_global_for(name)),
        description: "Adds numbers. */ not the end of the comment".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/num"}, "b": {"$ref": "#/$defs/num"}, "op-name": {"enum": ["add", "it's \"quoted\""]}},
            "required": ["a", "b"],
            "$defs": {"num": {"type": "number", "description": "A number"}}
        }),
        output_schema: Some(json!({"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]})),
    });

    // A tool a script registered in a real sandbox.
    let mut repl = template(tmp.path()).build().await.unwrap();
    let r = ev(
        &mut repl,
        "registerTool('double', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']}, ({n}) => n * 2)",
    )
    .await;
    assert!(r.error.is_none(), "{r:?}");
    let registered: Vec<ToolSignature> = repl.registered_tools().iter().map(ToolSignature::from).collect();
    assert_eq!(registered.len(), 1);

    let dts = declarations(&tools, &registered);
    for expected in [
        "declare function Read(input: ReadInput): Promise<ReadOutput>;",
        "declare function Bash(input: BashInput): Promise<BashOutput>;",
        "declare function mcp__srv__get_sum(input: mcp__srv__get_sumInput): Promise<mcp__srv__get_sumOutput>;",
        "declare function sh(command: string, options?: Omit<BashInput, \"command\">): Promise<string>;",
        "declare function chdir(dir: string): Promise<string>;",
        "declare function haiku(",
        "double: (input: doubleInput) => unknown;",
    ] {
        assert!(dts.contains(expected), "missing {expected:?} in\n{dts}");
    }
    assert!(!dts.contains("__wrepl_"), "hidden globals are not declared");

    // Every built-in tool's result is typed (from its declared output
    // schema), except Sample's, which depends on the schema it is given.
    for t in dispatcher_signatures(&d) {
        if t.name != "Sample" {
            assert!(t.output_schema.is_some(), "{} declares no output schema", t.name);
        }
    }
    for unknown in ["type ReadOutput = unknown", "type GrepOutput = unknown", "type WriteOutput = unknown"] {
        assert!(!dts.contains(unknown), "{unknown} in\n{dts}");
    }

    let Some(tsc) = tsc() else { return };
    let (ok, diag) = check(&tsc, tmp.path(), &dts, &[("good.ts", GOOD)]);
    assert!(ok, "the declarations or their correct use do not type-check:\n{diag}\n{dts}");
    let (ok, diag) = check(&tsc, tmp.path(), &dts, &[("top.ts", GOOD_TOP_LEVEL)]);
    assert!(ok, "a top-level-await script does not type-check with the README's command:\n{diag}\n{dts}");

    // Misuse must fail, and in the misusing file (not in the declarations).
    for (bad, why) in [
        ("Read({ file_path: 42 });", "a number where Read wants a string"),
        ("Read({ file_path: \"a\", offset: \"2\" });", "a string where Read wants a number"),
        ("Read({ path: \"a\" });", "an unknown property (additionalProperties: false) and no file_path"),
        ("sh(\"ls\", { command: \"rm\" });", "sh options must not set command"),
        ("const n: number = await cat(\"a\");", "cat resolves to a string"),
        ("mcp__srv__get_sum({ a: 1 });", "b is required"),
        ("mcp__srv__get_sum({ a: 1, b: 2, \"op-name\": \"mul\" });", "op-name is an enum"),
        (
            "const t: RegisteredTools.Handlers[\"double\"] = (input: { n: string }) => 0;",
            "double's input has n: number",
        ),
        ("const s: string = (await Write({ file_path: \"a\", content: \"b\" })).bytes;", "Write's bytes is a number"),
        ("const c = (await Read({ file_path: \"a\" })).content;", "content exists only on text results"),
        ("const t: string = (await rg(\"x\", { output_mode: \"matches\" }))[0].line;", "a match's line is a number"),
        ("await fetch(42);", "fetch takes a URL or a Request, not a number"),
        ("document.title;", "there is no DOM"),
    ] {
        let code = format!("async function main(): Promise<void> {{\n  {bad}\n}}\nmain();\n");
        let (ok, diag) = check(&tsc, tmp.path(), &dts, &[("bad.ts", &code)]);
        assert!(!ok, "tsc accepted misuse ({why}): {bad}");
        assert!(diag.contains("bad.ts(") && diag.contains("error TS"), "{why}: {diag}");
        assert!(!diag.contains("wrepl.d.ts("), "{why}: errors in the declarations:\n{diag}");
    }
}

#[test]
fn hostile_declarations_type_check() {
    // Schemas as a hostile MCP server or script may send them: the output
    // must still be valid TypeScript.
    let mut deep = json!({"type": "string"});
    for _ in 0..200 {
        deep = json!({"type": "array", "items": deep});
    }
    let schemas = [
        json!({"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "string"}]}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}),
        json!({"$defs": {"Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}, "$ref": "#/$defs/Node"}),
        json!({"type": "object", "properties": {"self": {"$ref": "#"}, "*/ x": {"const": "\u{2028}*/\"\\\n"}, "class": {"type": ["string", "null", "array"], "items": {"type": "integer"}}}}),
        json!({"type": "array", "prefixItems": [{"anyOf": [{"type": "string"}, {"type": "number"}]}, {"const": -1}], "items": {"oneOf": [{"type": "boolean"}, {"type": "null"}]}, "minItems": 1}),
        json!({"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"anyOf": [{"type": "object"}, {"type": "null"}]}], "nullable": true}),
        json!({"type": "object", "additionalProperties": {"enum": [1, -2, "x", true, null]}, "patternProperties": {"^a": {"type": "string"}}}),
        json!({"$ref": "#/$defs/%2A%2F~1weird name"}),
        json!({"$defs": {"*/weird~name": {"type": "string"}}, "$ref": "#/$defs/*~1weird~0name"}),
        json!({"type": "object", "additionalProperties": false}),
        json!({"enum": (0..5000).map(|i| json!(format!("v{i}"))).collect::<Vec<_>>()}),
        json!(false),
        json!(42),
        deep,
    ];
    let tools: Vec<ToolSignature> = schemas
        .iter()
        .enumerate()
        .map(|(i, s)| ToolSignature {
            name: format!("t{i}"),
            global: Some(format!("t{i}")),
            description: format!("hostile */ tool {i}\u{2029}line"),
            input_schema: s.clone(),
            output_schema: Some(s.clone()),
        })
        .chain([
            ToolSignature {
                name: "class".into(),
                global: Some("class".into()),
                description: String::new(),
                input_schema: json!({}),
                output_schema: None,
            },
            ToolSignature {
                name: "JSON".into(),
                global: Some("JSON".into()),
                description: String::new(),
                input_schema: json!({}),
                output_schema: None,
            },
            ToolSignature {
                name: "sh".into(),
                global: Some("sh".into()),
                description: String::new(),
                input_schema: json!({}),
                output_schema: None,
            },
            ToolSignature {
                name: "t0".into(),
                global: Some("t0".into()),
                description: String::new(),
                input_schema: json!({}),
                output_schema: None,
            },
        ])
        .collect();
    let registered = vec![ToolSignature {
        name: "9-lives".into(),
        global: None,
        description: "*/".into(),
        input_schema: schemas[0].clone(),
        output_schema: Some(json!({"type": "string"})),
    }];
    let dts = declarations(&tools, &registered);
    assert!(!dts.contains("declare function class"));
    assert!(!dts.contains("declare function JSON"));
    assert!(!dts.contains("declare function sh(input"));

    let Some(tsc) = tsc() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (ok, diag) = check(&tsc, tmp.path(), &dts, &[]);
    assert!(ok, "hostile schemas gave invalid declarations:\n{diag}\n{dts}");
}
