//! [`ReplBuilder`]: the one way to wire a [`Repl`] — workspace roots,
//! settings and rules, tools, who answers `ask` and model sampling, a durable
//! session, limits. It builds the inner-call pipeline and hands it to the
//! REPL, so every capability a script reaches passes that one dispatcher.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Repl, ReplError, SessionConfig, DEFAULT_TEXT_CAP};
use crate::pipeline::dispatcher::{Approver, Dispatcher, PipelineConfig};
use crate::pipeline::events::EventSink;
use crate::pipeline::permissions::{read_deny_filter, RuleKinds};
use crate::pipeline::settings::{HookSettings, Settings};
use crate::replay::store::LogStore;
use crate::runtime::{Ambient, EngineOptions, SandboxEngine, SystemAmbient};
use crate::script::ScriptLimits;
use crate::tools::sampling::Sampler;
use crate::tools::{Tool, Workspace};

/// Limits of one REPL context.
#[derive(Debug, Clone)]
pub struct Limits {
    /// QuickJS heap limit in bytes (default 64 MiB).
    pub js_memory: u64,
    /// QuickJS stack limit in bytes (default 256 KiB, clamped to
    /// [`crate::runtime::MAX_JS_STACK_LIMIT`]).
    pub js_stack: u32,
    /// Limits on accepted code.
    pub script: ScriptLimits,
    /// Cap on the result text, in characters.
    pub text_cap: usize,
    /// Hard wall-clock limit of one evaluation.
    pub hard_wall: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            js_memory: 64 << 20,
            js_stack: 256 << 10,
            script: ScriptLimits::default(),
            text_cap: DEFAULT_TEXT_CAP,
            hard_wall: crate::budget::HARD_LIMIT,
        }
    }
}

/// Builds a [`Repl`]; see [`Repl::builder`]. Cheap to clone (a template for
/// several contexts).
#[derive(Clone)]
pub struct ReplBuilder {
    engine: Option<Arc<SandboxEngine>>,
    roots: Vec<PathBuf>,
    workspace: Option<Arc<Workspace>>,
    settings: Settings,
    allow: Vec<String>,
    deny: Vec<String>,
    tools: Vec<Arc<dyn Tool>>,
    builtins: bool,
    approver: Option<Arc<dyn Approver>>,
    sampler: Option<Arc<dyn Sampler>>,
    events: Option<EventSink>,
    session: Option<SessionConfig>,
    session_id: Option<String>,
    limits: Limits,
    ambient: Arc<dyn Ambient>,
    repo_hint: String,
    /// Paths of wrepl's own state only the caller knows (settings files,
    /// the MCP configuration), protected from the file tools.
    protect: Vec<PathBuf>,
    /// The compiled pipeline and the engine, shared by every REPL this
    /// builder (and its clones) builds until a setter changes something.
    cache: Arc<Mutex<Cache>>,
}

#[derive(Default)]
struct Cache {
    pipeline: Option<Arc<Dispatcher>>,
    engine: Option<Arc<SandboxEngine>>,
}

impl std::fmt::Debug for ReplBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplBuilder")
            .field("roots", &self.roots)
            .field("allow", &self.allow)
            .field("deny", &self.deny)
            .field("tools", &self.tools.iter().map(|t| t.name().to_string()).collect::<Vec<_>>())
            .field("session", &self.session)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for ReplBuilder {
    fn default() -> Self {
        Self {
            engine: None,
            roots: Vec::new(),
            workspace: None,
            settings: Settings::default(),
            allow: Vec::new(),
            deny: Vec::new(),
            tools: Vec::new(),
            builtins: true,
            approver: None,
            sampler: None,
            events: None,
            session: None,
            session_id: None,
            limits: Limits::default(),
            ambient: Arc::new(SystemAmbient),
            repo_hint: String::new(),
            protect: Vec::new(),
            cache: Arc::default(),
        }
    }
}

impl ReplBuilder {
    /// Run on this engine (default: a new engine with default options;
    /// share one engine between contexts, it holds the compiled guest).
    pub fn engine(mut self, engine: Arc<SandboxEngine>) -> Self {
        self.cache = Arc::default();
        self.engine = Some(engine);
        self
    }

    /// Workspace roots the file tools may touch (default: the current
    /// directory). The first is the default working directory.
    pub fn roots<I, P>(mut self, roots: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        self.cache = Arc::default();
        self.roots = roots.into_iter().map(Into::into).collect();
        self
    }

    /// An already opened workspace (instead of [`ReplBuilder::roots`]).
    pub fn workspace(mut self, workspace: Arc<Workspace>) -> Self {
        self.cache = Arc::default();
        self.workspace = Some(workspace);
        self
    }

    /// Permissions, hooks and isolation.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.cache = Arc::default();
        self.settings = settings;
        self
    }

    /// Grant permission rules (`Write`, `Bash(git status:*)`, ...).
    pub fn allow<I, S>(mut self, rules: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.cache = Arc::default();
        self.allow.extend(rules.into_iter().map(Into::into));
        self
    }

    /// Deny permission rules (deny beats allow).
    pub fn deny<I, S>(mut self, rules: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.cache = Arc::default();
        self.deny.extend(rules.into_iter().map(Into::into));
        self
    }

    /// Offer a tool to scripts (a global named like the tool), through the
    /// whole pipeline.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.cache = Arc::default();
        self.tools.push(tool);
        self
    }

    /// Offer several tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.cache = Arc::default();
        self.tools.extend(tools);
        self
    }

    /// Leave out the built-in tools (Bash, Read, Write, Edit, Glob, Grep,
    /// the model sampler); `chdir` stays, it is part of the REPL.
    pub fn without_builtin_tools(mut self) -> Self {
        self.cache = Arc::default();
        self.builtins = false;
        self
    }

    /// Who answers permission `ask` (default: nobody, so `ask` is denied).
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.cache = Arc::default();
        self.approver = Some(approver);
        self
    }

    /// Who answers `haiku(...)` (default: nobody, it fails clearly).
    pub fn sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.cache = Arc::default();
        self.sampler = Some(sampler);
        self
    }

    /// Where inner-call progress events go.
    pub fn events(mut self, sink: EventSink) -> Self {
        self.cache = Arc::default();
        self.events = Some(sink);
        self
    }

    /// A durable session: its log in `store` is replayed when the REPL is
    /// built, and every evaluation is appended to it.
    pub fn session(mut self, store: Arc<dyn LogStore>, name: impl Into<String>) -> Self {
        self.cache = Arc::default();
        self.session = Some(SessionConfig::new(name, store));
        self
    }

    /// The same, with a session boundary id recorded with new blocks.
    pub fn session_config(mut self, session: Option<SessionConfig>) -> Self {
        self.cache = Arc::default();
        self.session = session;
        self
    }

    /// The session id hooks see (default: the session name, else a generated id).
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.cache = Arc::default();
        self.session_id = Some(id.into());
        self
    }

    /// Limits of the context.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.cache = Arc::default();
        self.limits = limits;
        self
    }

    /// Change some limits.
    pub fn with_limits(mut self, f: impl FnOnce(&mut Limits)) -> Self {
        self.cache = Arc::default();
        f(&mut self.limits);
        self
    }

    /// Clock and randomness of the guest (default: the system's).
    pub fn ambient(mut self, ambient: Arc<dyn Ambient>) -> Self {
        self.cache = Arc::default();
        self.ambient = ambient;
        self
    }

    /// Installed as the global `repoHint` (empty: none).
    pub fn repo_hint(mut self, hint: impl Into<String>) -> Self {
        self.cache = Arc::default();
        self.repo_hint = hint.into();
        self
    }

    /// Protect a path of wrepl's own state that only the caller knows (a
    /// settings file, the downstream MCP configuration): the file tools
    /// refuse it and everything below it, even inside a root, Glob and Grep
    /// never list it, and confined Bash does not see it. The builder itself
    /// protects the session store (and its `-wal`/`-shm`/`-journal` files),
    /// the engine's compile cache and the scripts of the settings' hooks.
    pub fn protect(mut self, path: impl Into<PathBuf>) -> Self {
        self.cache = Arc::default();
        self.protect.push(path.into());
        self
    }

    /// Protect a session store's database file that only the caller knows
    /// of (one this builder does not record into), with its `-wal`, `-shm`
    /// and `-journal` siblings: see [`ReplBuilder::protect`].
    pub fn protect_store(mut self, file: impl AsRef<Path>) -> Self {
        self.cache = Arc::default();
        self.protect.extend(store_files(file.as_ref()));
        self
    }

    /// The current limits.
    pub fn current_limits(&self) -> &Limits {
        &self.limits
    }

    /// The configured session, if any.
    pub fn current_session(&self) -> Option<&SessionConfig> {
        self.session.as_ref()
    }

    /// The compiled pipeline, built once per configuration.
    fn pipeline(&self) -> Result<Arc<Dispatcher>, ReplError> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = &cache.pipeline {
            return Ok(p.clone());
        }
        let engine = self.engine.clone().or_else(|| cache.engine.clone());
        let p = self.compile(engine.as_deref())?;
        cache.pipeline = Some(p.clone());
        Ok(p)
    }

    fn shared_engine(&self) -> Result<Arc<SandboxEngine>, ReplError> {
        if let Some(e) = &self.engine {
            return Ok(e.clone());
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = &cache.engine {
            return Ok(e.clone());
        }
        let e = Arc::new(SandboxEngine::new(EngineOptions::default())?);
        cache.engine = Some(e.clone());
        Ok(e)
    }

    fn compile(&self, engine: Option<&SandboxEngine>) -> Result<Arc<Dispatcher>, ReplError> {
        let workspace = match &self.workspace {
            Some(w) => Workspace::clone(w),
            None => {
                let roots = if self.roots.is_empty() {
                    vec![std::env::current_dir().map_err(ReplError::Workspace)?]
                } else {
                    self.roots.clone()
                };
                Workspace::new(&roots).map_err(ReplError::Roots)?
            }
        };
        let mut tools: Vec<Arc<dyn Tool>> = if self.builtins {
            let bash_default = self
                .settings
                .bash_default_timeout_ms
                .map(std::time::Duration::from_millis)
                .unwrap_or(crate::tools::shell::DEFAULT_TIMEOUT);
            let env = self.settings.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            crate::tools::builtin_tools_configured(
                self.sampler.clone(),
                bash_default,
                env,
                self.settings.web_fetch.config(),
            )
        } else {
            vec![Arc::new(crate::tools::chdir::Chdir)]
        };
        tools.extend(self.tools.iter().cloned());
        if let Some(modules) = self.module_set() {
            tools.push(Arc::new(crate::tools::modules::ImportModule::new(modules)));
        }
        // wrepl's own state is out of the file tools' reach, and the Read
        // deny rules hide what they cover from every walk.
        let protected = self.protected_paths(engine, &workspace);
        let mut workspace = workspace.with_protected(protected);
        let filter = read_deny_filter(
            &self.settings.permissions,
            &self.allow,
            &self.deny,
            RuleKinds::of(tools.iter()),
            workspace.default_cwd(),
        )
        .map_err(crate::pipeline::dispatcher::PipelineError::from)?;
        if let Some(f) = filter {
            workspace = workspace.with_read_filter(f);
        }
        let workspace = Arc::new(workspace);
        let session_id = match (&self.session_id, &self.session) {
            (Some(id), _) => id.clone(),
            (None, Some(s)) => s.name.clone(),
            (None, None) => format!("wrepl-{}", crate::ids::short_id()),
        };
        let config = PipelineConfig {
            settings: self.settings.clone(),
            allow: self.allow.clone(),
            deny: self.deny.clone(),
            workspace,
            approver: self.approver.clone(),
            events: self.events.clone(),
            session_id,
        };
        Ok(Arc::new(Dispatcher::new(config, tools)?))
    }

    /// The modules the settings name (paths relative to the project
    /// directory, the first root), or `None` when there are none.
    fn module_set(&self) -> Option<Arc<crate::tools::modules::ModuleSet>> {
        if self.settings.modules.is_empty() {
            return None;
        }
        let project = match (&self.workspace, self.roots.first()) {
            (Some(w), _) => w.default_cwd().to_path_buf(),
            (None, Some(r)) => r.clone(),
            (None, None) => std::env::current_dir().unwrap_or_default(),
        };
        let specs = self.settings.modules.iter().map(|(n, m)| (n.clone(), m.spec(&project))).collect();
        Some(Arc::new(crate::tools::modules::ModuleSet::new(specs)))
    }

    /// wrepl's own state this configuration knows of: what the caller
    /// protected, the session store's file and its siblings, the compile
    /// cache (the engine's and the default one) and the hooks' scripts
    /// inside the roots (the only place a script could substitute one; a
    /// system program a hook runs, such as `/usr/bin/python3`, is left alone,
    /// as confined Bash hides every protected path).
    fn protected_paths(&self, engine: Option<&SandboxEngine>, workspace: &Workspace) -> Vec<PathBuf> {
        let mut out = self.protect.clone();
        if let Some(file) = self.session.as_ref().and_then(|s| s.store.file_path()) {
            out.extend(store_files(file));
        }
        // The engine's cache and the default one (`EngineOptions::default`).
        out.extend(engine.and_then(|e| e.options().cache_dir.clone()));
        out.extend(EngineOptions::default().cache_dir);
        let roots = workspace.roots();
        let in_a_root = |p: &PathBuf| {
            let real = std::fs::canonicalize(p).ok();
            roots.iter().any(|r| p.starts_with(r) || real.as_ref().is_some_and(|c| c.starts_with(r)))
        };
        out.extend(hook_scripts(&self.settings.hooks, workspace.default_cwd()).into_iter().filter(in_a_root));
        out
    }

    /// The pipeline a REPL built now would get (its tools, for example to
    /// write TypeScript declarations); it has its own per-context state.
    pub fn dispatcher(&self) -> Result<Arc<Dispatcher>, ReplError> {
        Ok(Arc::new(self.pipeline()?.sibling()))
    }

    /// Build a REPL (resuming the session, when one is configured). The
    /// builder can build more: they share the compiled pipeline and the
    /// engine, and each gets its own context, isolation latch and working
    /// directory.
    pub async fn build(&self) -> Result<Repl, ReplError> {
        // The engine first: the pipeline protects its compile cache.
        let engine = self.shared_engine()?;
        let dispatcher = self.dispatcher()?;
        let session = self.session.clone();
        let modules = self.module_set().map(|m| m as Arc<dyn crate::script::ModuleDigests>);
        Repl::assemble(
            engine,
            dispatcher,
            self.limits.clone(),
            self.ambient.clone(),
            self.repo_hint.clone(),
            session,
            modules,
        )
        .await
    }
}

/// A store's database file and the files SQLite keeps next to it (whether
/// they exist yet or not).
pub(crate) fn store_files(file: &Path) -> Vec<PathBuf> {
    let mut out = vec![file.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = file.as_os_str().to_os_string();
        name.push(suffix);
        out.push(PathBuf::from(name));
    }
    out
}

/// The scripts hook commands run: the first word of each command (of each
/// part between `;`, `&`, `|` and newlines), and every word that names an
/// existing file, resolved against the project directory
/// (`$WREPL_PROJECT_DIR` / `${WREPL_PROJECT_DIR}` expanded, quotes removed).
pub(crate) fn hook_scripts(hooks: &HookSettings, project_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let groups = hooks.pre_tool_use.iter().chain(&hooks.post_tool_use).chain(&hooks.post_tool_use_failure);
    for hook in groups.flat_map(|g| &g.hooks) {
        for part in hook.command.split([';', '&', '|', '\n']) {
            let words = part
                .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '<' | '>' | '`'))
                .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
                .filter(|w| !w.is_empty());
            for (i, word) in words.enumerate() {
                let expanded = expand_project_dir(word, project_dir);
                let path = if Path::new(&expanded).is_absolute() {
                    PathBuf::from(&expanded)
                } else {
                    project_dir.join(&expanded)
                };
                if i == 0 || path.is_file() {
                    out.push(path);
                }
            }
        }
    }
    out
}

fn expand_project_dir(word: &str, project_dir: &Path) -> String {
    let dir = project_dir.to_string_lossy();
    let var = crate::pipeline::hooks::PROJECT_DIR_ENV;
    word.replace(&format!("${{{var}}}"), &dir).replace(&format!("${var}"), &dir).replace(['"', '\''], "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::settings::{HookCommand, HookMatcher};

    #[test]
    fn hook_scripts_are_the_command_words_and_existing_files() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        std::fs::create_dir(dir.join("hooks")).unwrap();
        std::fs::write(dir.join("hooks/a.py"), "").unwrap();
        std::fs::write(dir.join("data.json"), "").unwrap();
        let group = |cmds: &[&str]| HookMatcher {
            matcher: None,
            hooks: cmds.iter().map(|c| HookCommand::new(c.to_string())).collect(),
        };
        let hooks = HookSettings {
            pre_tool_use: vec![group(&["python3 \"$WREPL_PROJECT_DIR/hooks/a.py\" --flag missing.txt"])],
            post_tool_use: vec![group(&["cat > /dev/null; ./hooks/b.sh 'data.json' && ${WREPL_PROJECT_DIR}/x"])],
            post_tool_use_failure: vec![group(&["/abs/tool arg|sh"])],
        };
        let got = hook_scripts(&hooks, dir);
        let want: Vec<PathBuf> = vec![
            dir.join("python3"),
            dir.join("hooks/a.py"),
            dir.join("cat"),
            dir.join("./hooks/b.sh"),
            dir.join("data.json"),
            dir.join("x"),
            PathBuf::from("/abs/tool"),
            dir.join("sh"),
        ];
        assert_eq!(got, want);
        assert_eq!(
            store_files(Path::new("/s/db.sqlite3")),
            ["/s/db.sqlite3", "/s/db.sqlite3-wal", "/s/db.sqlite3-shm", "/s/db.sqlite3-journal"].map(PathBuf::from)
        );
    }
}
