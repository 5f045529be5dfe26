//! Vetted modules: the ES modules the settings' `modules` name, and the
//! `ImportModule` tool through which the guest loads one (so every load is
//! an inner call: recorded, replayed from the recording, in the progress
//! events).
//!
//! A module is one ESM file, or a package directory with an entry file
//! whose relative imports are followed inside it. The files are read here
//! (the package through a cap-std `Dir`, so neither `..` nor a symlink
//! leaves it), parsed to find their imports, bounded in number and size, and
//! digested: a configured `sha256` that does not match refuses the import,
//! naming the module and the digest found.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use oxc_allocator::Allocator;
use oxc_ast::ast::{ExportAllDeclaration, ExportFromDeclaration, Expression, ImportDeclaration, ImportExpression};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::Parser;
use oxc_span::SourceType;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{str_field, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use crate::call::to_hex;

/// Wire name of the tool `import` uses.
pub const IMPORT_MODULE: &str = "ImportModule";
/// Most bytes of one module (all its files together).
pub const MAX_MODULE_BYTES: u64 = 16 << 20;
/// Most files of one package.
pub const MAX_MODULE_FILES: usize = 4096;

/// One configured module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSpec {
    /// The ESM file, or the package directory (absolute).
    pub path: PathBuf,
    /// The package's entry file, relative to `path` (directories only;
    /// default `index.js`).
    pub entry: Option<String>,
    /// The expected digest (hex SHA-256, see [`LoadedModule::sha256`]).
    pub sha256: Option<String>,
}

/// A module's files as loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedModule {
    /// The entry file's path in the package (the file's name for one file).
    pub entry: String,
    /// Every file reached from the entry: path in the package, text.
    pub files: Vec<(String, String)>,
    /// For one file, the SHA-256 of its bytes (as `sha256sum` prints it);
    /// for a package, the SHA-256 of each file's path, a NUL, its length in
    /// decimal, a NUL and its bytes, in path order.
    pub sha256: String,
}

/// A file's path, length and modification time, as a digest was taken.
type Stamp = (PathBuf, u64, Option<std::time::SystemTime>);

/// The configured modules, by the name scripts import them by.
#[derive(Default)]
pub struct ModuleSet {
    modules: BTreeMap<String, ModuleSpec>,
    /// Digests by name, with the files' (path, length, mtime) they were taken
    /// from: the transform asks for a digest at every evaluation that imports.
    cache: Mutex<BTreeMap<String, (Vec<Stamp>, String)>>,
}

impl std::fmt::Debug for ModuleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.modules.iter()).finish()
    }
}

fn failed(msg: impl Into<String>) -> ToolError {
    ToolError::Failed(msg.into())
}

/// The relative path `rel` joined to the directory of `from` (both inside a
/// package), with `.` and `..` resolved; `None` when it leaves the package.
fn join_inside(from: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for c in Path::new(rel).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(p) => parts.push(p.to_str()?),
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// The import specifiers a module's source names (static imports and
/// re-exports, and `import()` of a string literal).
fn specifiers_of(source: &str, file: &str) -> Result<Vec<String>, String> {
    struct Found(Vec<String>);
    impl<'a> Visit<'a> for Found {
        fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
            self.0.push(it.source.value.to_string());
        }
        fn visit_export_all_declaration(&mut self, it: &ExportAllDeclaration<'a>) {
            self.0.push(it.source.value.to_string());
        }
        fn visit_export_from_declaration(&mut self, it: &ExportFromDeclaration<'a>) {
            self.0.push(it.source.value.to_string());
        }
        fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
            if let Expression::StringLiteral(s) = &it.source {
                self.0.push(s.value.to_string());
            }
            walk::walk_import_expression(self, it);
        }
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::mjs()).parse();
    if let Some(d) = parsed.diagnostics.first() {
        return Err(format!("{file} is not an ES module: {}", d.message));
    }
    if parsed.panicked {
        return Err(format!("{file} could not be parsed"));
    }
    let mut found = Found(Vec::new());
    found.visit_program(&parsed.program);
    Ok(found.0)
}

impl ModuleSet {
    /// The modules `specs` names.
    pub fn new(specs: BTreeMap<String, ModuleSpec>) -> Self {
        Self { modules: specs, cache: Mutex::default() }
    }

    /// The configured names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.modules.keys().map(String::as_str)
    }

    /// The module `name`'s files, checked against its digest.
    pub fn load(&self, name: &str) -> Result<LoadedModule, ToolError> {
        let Some(spec) = self.modules.get(name) else {
            let known: Vec<&str> = self.names().collect();
            return Err(failed(format!(
                "cannot import {name:?}: only the modules named in the settings' \"modules\" can be imported ({}); \
                 add it there, e.g. \"modules\": {{{}: {{\"path\": \"vendor/{name}.js\"}}}}",
                if known.is_empty() { "none is".to_string() } else { format!("these are: {}", known.join(", ")) },
                serde_json::to_string(name).unwrap_or_default()
            )));
        };
        let loaded = read_module(name, spec)?;
        if let Some(want) = &spec.sha256 {
            if !want.eq_ignore_ascii_case(&loaded.sha256) {
                return Err(failed(format!(
                    "module {name:?} ({}) does not match its sha256 in the settings: expected {want}, found {}; \
                     the files changed, or the setting is stale",
                    spec.path.display(),
                    loaded.sha256
                )));
            }
        }
        Ok(loaded)
    }

    /// The digest of module `name` as it is on disk (see [`LoadedModule::sha256`]);
    /// `None` when it is not configured or cannot be read.
    pub fn digest(&self, name: &str) -> Option<String> {
        let spec = self.modules.get(name)?;
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((stamps, digest)) = cache.get(name) {
            let same = stamps.iter().all(|(p, len, mtime)| {
                std::fs::metadata(p).is_ok_and(|m| m.len() == *len && m.modified().ok() == *mtime)
            });
            if same {
                return Some(digest.clone());
            }
        }
        let loaded = read_module(name, spec).ok()?;
        let stamps = loaded
            .files
            .iter()
            .map(|(rel, _)| {
                let p = if spec.path.is_dir() { spec.path.join(rel) } else { spec.path.clone() };
                let m = std::fs::metadata(&p).ok();
                (p, m.as_ref().map_or(0, |m| m.len()), m.and_then(|m| m.modified().ok()))
            })
            .collect();
        cache.insert(name.to_string(), (stamps, loaded.sha256.clone()));
        Some(loaded.sha256)
    }
}

impl crate::script::ModuleDigests for ModuleSet {
    fn digest(&self, name: &str) -> Option<String> {
        ModuleSet::digest(self, name)
    }
}

/// Read module `name` (see [`LoadedModule`]).
fn read_module(name: &str, spec: &ModuleSpec) -> Result<LoadedModule, ToolError> {
    let shown = spec.path.display();
    let meta =
        std::fs::metadata(&spec.path).map_err(|e| failed(format!("module {name:?}: cannot read {shown}: {e}")))?;
    let too_big = |n: u64| {
        failed(format!(
            "module {name:?} is {n} bytes or more, past the cap of {MAX_MODULE_BYTES} bytes of source per module"
        ))
    };
    if !meta.is_dir() {
        if meta.len() > MAX_MODULE_BYTES {
            return Err(too_big(meta.len()));
        }
        let bytes =
            std::fs::read(&spec.path).map_err(|e| failed(format!("module {name:?}: cannot read {shown}: {e}")))?;
        let text =
            String::from_utf8(bytes).map_err(|_| failed(format!("module {name:?}: {shown} is not UTF-8 text")))?;
        let file = spec.path.file_name().and_then(|f| f.to_str()).unwrap_or("module.js").to_string();
        // One file imports nothing relative: a package directory does that.
        let imports = specifiers_of(&text, &file).map_err(|e| failed(format!("module {name:?}: {e}")))?;
        if let Some(s) = imports.first() {
            return Err(failed(format!(
                "module {name:?} ({shown}) imports {s:?}: a module of one file must not import anything; \
                 configure its package directory (with \"entry\") instead"
            )));
        }
        let sha256 = to_hex(&Sha256::digest(text.as_bytes()));
        return Ok(LoadedModule { entry: file.clone(), files: vec![(file, text)], sha256 });
    }
    let dir = cap_std::fs::Dir::open_ambient_dir(&spec.path, cap_std::ambient_authority())
        .map_err(|e| failed(format!("module {name:?}: cannot open {shown}: {e}")))?;
    let entry = spec.entry.clone().unwrap_or_else(|| "index.js".into());
    let entry = join_inside("", &entry)
        .filter(|e| !e.is_empty())
        .ok_or_else(|| failed(format!("module {name:?}: its entry {entry:?} leaves the package")))?;
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut todo = vec![(entry.clone(), String::from("the entry"))];
    let mut total = 0u64;
    let mut seen = BTreeSet::new();
    while let Some((rel, from)) = todo.pop() {
        if !seen.insert(rel.clone()) {
            continue;
        }
        if files.len() >= MAX_MODULE_FILES {
            return Err(failed(format!(
                "module {name:?} has more than {MAX_MODULE_FILES} files reachable from its entry, past the cap"
            )));
        }
        let text = dir.read_to_string(&rel).map_err(|e| {
            failed(format!("module {name:?}: cannot read {rel} (imported by {from}) inside {shown}: {e}"))
        })?;
        total += text.len() as u64;
        if total > MAX_MODULE_BYTES {
            return Err(too_big(total));
        }
        for s in specifiers_of(&text, &rel).map_err(|e| failed(format!("module {name:?}: {e}")))? {
            if !(s.starts_with("./") || s.starts_with("../")) {
                return Err(failed(format!(
                    "module {name:?}: {rel} imports {s:?}, which is not a file of the package (a package may import \
                     only its own files, by relative paths)"
                )));
            }
            let Some(target) = join_inside(&rel, &s) else {
                return Err(failed(format!("module {name:?}: {rel} imports {s:?}, which leaves the package")));
            };
            todo.push((target, rel.clone()));
        }
        files.insert(rel, text);
    }
    let mut h = Sha256::new();
    for (rel, text) in &files {
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(text.len().to_string().as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
    }
    Ok(LoadedModule { entry, files: files.into_iter().collect(), sha256: to_hex(&h.finalize()) })
}

/// The tool behind `import`: loads a configured module's files.
#[derive(Debug)]
pub struct ImportModule {
    modules: Arc<ModuleSet>,
}

impl ImportModule {
    /// The tool over these modules.
    pub fn new(modules: Arc<ModuleSet>) -> Self {
        Self { modules }
    }
}

impl Tool for ImportModule {
    fn name(&self) -> &str {
        IMPORT_MODULE
    }

    fn description(&self) -> &str {
        "Load one of the modules the settings' \"modules\" name (what `import` uses): its files and their digest."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "specifier": {"type": "string", "description": "The module's name in the settings."},
                "sha256": {"type": "string", "description": "The digest the code was prepared against (for replay)."}
            },
            "required": ["specifier"],
            "additionalProperties": false
        })
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "entry": {"type": "string"},
                "sha256": {"type": "string"},
                "files": {"type": "array", "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}}
            },
            "required": ["name", "entry", "sha256", "files"]
        }))
    }

    fn read_only(&self, _input: &Value) -> bool {
        true
    }

    fn global(&self) -> Option<&str> {
        Some("__wrepl_ImportModule")
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> ToolFuture {
        let modules = self.modules.clone();
        Box::pin(async move {
            let name = str_field(&input, "specifier")
                .ok_or_else(|| ToolError::InvalidInput("ImportModule needs a specifier".into()))?
                .to_string();
            let loaded = tokio::task::spawn_blocking(move || modules.load(&name).map(|l| (name, l)))
                .await
                .map_err(|e| failed(format!("ImportModule: {e}")))??;
            let (name, l) = loaded;
            let bytes: usize = l.files.iter().map(|(_, t)| t.len()).sum();
            let text = format!("module {name:?}: {} file(s), {bytes} bytes, sha256 {}", l.files.len(), l.sha256);
            let files: Vec<Value> = l.files.into_iter().map(|(p, t)| json!([p, t])).collect();
            Ok(ToolOutput::new(json!({"name": name, "entry": l.entry, "sha256": l.sha256, "files": files}), text))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_stay_inside() {
        assert_eq!(join_inside("a/b.js", "./c.js").as_deref(), Some("a/c.js"));
        assert_eq!(join_inside("a/b.js", "../c.js").as_deref(), Some("c.js"));
        assert_eq!(join_inside("a/b.js", "../../c.js"), None);
        assert_eq!(join_inside("b.js", "./x/../y.js").as_deref(), Some("y.js"));
        assert_eq!(join_inside("", "/etc/passwd"), None);
    }

    #[test]
    fn packages_load_their_own_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("pkg");
        std::fs::create_dir_all(pkg.join("lib")).unwrap();
        std::fs::write(pkg.join("index.js"), "export * from './lib/a.js'; export { b } from './lib/b.js';").unwrap();
        std::fs::write(pkg.join("lib/a.js"), "import { b } from './b.js'; export const a = b + 1;").unwrap();
        std::fs::write(pkg.join("lib/b.js"), "export const b = 1;").unwrap();
        std::fs::write(pkg.join("unused.js"), "export const u = 1;").unwrap();
        let spec = |p: &Path, entry: Option<&str>| ModuleSpec {
            path: p.to_path_buf(),
            entry: entry.map(String::from),
            sha256: None,
        };
        let set = ModuleSet::new(BTreeMap::from([("pkg".to_string(), spec(&pkg, None))]));
        let l = set.load("pkg").unwrap();
        let names: Vec<&str> = l.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, ["index.js", "lib/a.js", "lib/b.js"]);
        assert_eq!(set.digest("pkg").as_deref(), Some(l.sha256.as_str()));
        // A wrong digest refuses, naming the one found.
        let pinned = ModuleSet::new(BTreeMap::from([(
            "pkg".to_string(),
            ModuleSpec { sha256: Some("00".repeat(32)), ..spec(&pkg, None) },
        )]));
        let e = pinned.load("pkg").unwrap_err().to_string();
        assert!(e.contains("does not match its sha256") && e.contains(&l.sha256), "{e}");
        // Escapes: a relative import out of the package, a symlink out of it.
        std::fs::write(dir.path().join("secret.js"), "export const s = 1;").unwrap();
        std::fs::write(pkg.join("up.js"), "export * from '../secret.js';").unwrap();
        let e = ModuleSet::new(BTreeMap::from([("p".to_string(), spec(&pkg, Some("up.js")))])).load("p").unwrap_err();
        assert!(e.to_string().contains("leaves the package"), "{e}");
        std::os::unix::fs::symlink(dir.path().join("secret.js"), pkg.join("link.js")).unwrap();
        std::fs::write(pkg.join("via-link.js"), "export * from './link.js';").unwrap();
        let e =
            ModuleSet::new(BTreeMap::from([("p".to_string(), spec(&pkg, Some("via-link.js")))])).load("p").unwrap_err();
        assert!(e.to_string().contains("cannot read link.js"), "{e}");
        // A bare import inside a package, and an unknown name.
        std::fs::write(pkg.join("bare.js"), "import x from 'lodash';").unwrap();
        let e = ModuleSet::new(BTreeMap::from([("p".to_string(), spec(&pkg, Some("bare.js")))])).load("p").unwrap_err();
        assert!(e.to_string().contains("not a file of the package"), "{e}");
        let e = set.load("fs").unwrap_err().to_string();
        assert!(e.contains("settings' \"modules\"") && e.contains("these are: pkg"), "{e}");
        // One file: its sha256sum.
        let one = ModuleSet::new(BTreeMap::from([("b".to_string(), spec(&pkg.join("lib/b.js"), None))]));
        assert_eq!(one.load("b").unwrap().sha256, to_hex(&Sha256::digest(b"export const b = 1;")));
    }
}
