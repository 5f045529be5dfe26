//! [`ReplBuilder`]: the one way to wire a [`Repl`] — workspace roots,
//! settings and rules, tools, who answers `ask` and model sampling, a durable
//! session, limits. It builds the inner-call pipeline and hands it to the
//! REPL, so every capability a script reaches passes that one dispatcher.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Repl, ReplError, SessionConfig, DEFAULT_TEXT_CAP, HARD_WALL_MS};
use crate::pipeline::dispatcher::{Approver, Dispatcher, PipelineConfig};
use crate::pipeline::events::EventSink;
use crate::pipeline::settings::Settings;
use crate::replay::store::LogStore;
use crate::runtime::{Ambient, EngineOptions, SandboxEngine, SystemAmbient};
use crate::script::ScriptLimits;
use crate::tools::sampling::Sampler;
use crate::tools::{builtin_tools_with, Tool, Workspace};

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
            hard_wall: Duration::from_millis(HARD_WALL_MS),
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
        self.session = Some(SessionConfig { name: name.into(), store, boundary: "main".into() });
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
        let p = self.compile()?;
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

    fn compile(&self) -> Result<Arc<Dispatcher>, ReplError> {
        let workspace = match &self.workspace {
            Some(w) => w.clone(),
            None => {
                let roots = if self.roots.is_empty() {
                    vec![std::env::current_dir().map_err(ReplError::Workspace)?]
                } else {
                    self.roots.clone()
                };
                Arc::new(Workspace::new(&roots).map_err(ReplError::Roots)?)
            }
        };
        let mut tools: Vec<Arc<dyn Tool>> = if self.builtins {
            builtin_tools_with(self.sampler.clone())
        } else {
            vec![Arc::new(crate::tools::chdir::Chdir)]
        };
        tools.extend(self.tools.iter().cloned());
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
        let dispatcher = self.dispatcher()?;
        let engine = self.shared_engine()?;
        let session = self.session.clone();
        Repl::assemble(engine, dispatcher, self.limits.clone(), self.ambient.clone(), self.repo_hint.clone(), session)
            .await
    }
}
