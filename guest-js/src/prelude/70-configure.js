  // ---- shorthands: the same dispatcher as the full-name wrappers ----------
  // (`configure` installs those whose tool the sandbox has.)
  function opts(o) { return o !== null && typeof o === "object" ? o : {}; }
  function shQuote(s) { return "'" + StringCtor(s).replace(/'/g, "'\\''") + "'"; }
  define("shQuote", shQuote);

  // ---- shorthand forms: how each kind of shorthand calls its tool ----------
  // The host names the globals and their tools (`configure`'s `shorthands`);
  // a form turns a tool's wire name into the function installed.
  const forms = {
    __proto__: null,
    shell: (tool) => async function sh(command, options) {
      const r = await callTool(tool, ObjectAssign({}, opts(options), { command: StringCtor(command) }));
      if (r.exitCode !== 0) {
        const why = r.exitCode === null ? "was killed by signal " + r.signal : "exited with code " + r.exitCode;
        const detail = (r.stderr || r.stdout || "").trim().slice(-2000);
        const e = new ErrorCtor("the command " + why + (detail ? ": " + detail : ""));
        e.name = "ShellError";
        e.exitCode = r.exitCode; e.signal = r.signal; e.stdout = r.stdout; e.stderr = r.stderr;
        throw e;
      }
      return r.stdout;
    },
    read: (tool) => async function cat(path, options) {
      const r = await callTool(tool, ObjectAssign({}, opts(options), { file_path: StringCtor(path) }));
      return typeof r.content === "string" ? r.content : r;
    },
    "grep-content": (tool) => async function rg(pattern, options) {
      const r = await callTool(tool, ObjectAssign({ output_mode: "content", "-n": true }, opts(options), { pattern: StringCtor(pattern) }));
      if (typeof r.content === "string") return r.content;
      return ArrayIsArray(r.matches) ? r.matches : r;
    },
    "grep-files": (tool) => async function rgf(pattern, options) {
      const r = await callTool(tool, ObjectAssign({}, opts(options), { output_mode: "files_with_matches", pattern: StringCtor(pattern) }));
      return ArrayIsArray(r.filenames) ? r.filenames : r;
    },
    glob: (tool) => async function gl(pattern, options) {
      const r = await callTool(tool, ObjectAssign({}, opts(options), { pattern: StringCtor(pattern) }));
      return ArrayIsArray(r.filenames) ? r.filenames : r;
    },
    write: (tool) => function put(path, text) {
      return callTool(tool, { file_path: StringCtor(path), content: typeof text === "string" ? text : str(text) });
    },
    // Model sampling (the client picks the model).
    sample: (tool) => async function haiku(prompt, schema) {
      const input = { prompt: typeof prompt === "string" ? prompt : str(prompt), model: "haiku" };
      if (schema !== undefined && schema !== null) {
        if (typeof schema !== "object" || ArrayIsArray(schema)) throw new TypeError("haiku(prompt, schema): schema must be a JSON Schema object");
        input.schema = schema;
      }
      return callTool(tool, input);
    },
    chdir: (tool) => function chdir(dir) { return callTool(tool, { path: StringCtor(dir) }); },
  };

  // ---- per-sandbox configuration ------------------------------------------
  // Everything above is the same for every sandbox (and may be captured in a
  // pre-initialised snapshot of the guest); `configure`, called once by the
  // guest's `init` (which then forgets it), installs the tool globals and
  // shorthands of this sandbox and returns the control object.
  bootNames = new SetCtor(ObjectGetOwnNames(G));
  return function configure(tools, repoHint, prefix, shorthands) {
    const firstConfigured = managedNames.length;
    setRegisteredPrefix(prefix);
    for (const t of tools) {
      if (t.global.startsWith("__wrepl_")) continue;
      define(t.global, nativeToolFunction(t.name, t.global));
    }
    // One function per form and tool: aliases of one form (haiku, sonnet,
    // ...) are the same function.
    const made = new MapCtor();
    for (const s of shorthands) {
      const make = forms[s.form];
      if (typeof make !== "function") throw new TypeError("unknown shorthand form " + s.form);
      const key = s.form + "\u0000" + s.tool;
      let f = call(MapGet, made, key);
      if (f === undefined) { f = make(s.tool); call(MapSet, made, key, f); }
      define(s.global, f);
    }
    if (typeof repoHint === "string" && repoHint) define("repoHint", repoHint);
    configNames = new SetCtor();
    for (let i = firstConfigured; i < managedNames.length; i++) call(SetAdd, configNames, managedNames[i]);
    return control;
  };
})
