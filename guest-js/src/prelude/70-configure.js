  // ---- shorthands: the same dispatcher as the full-name wrappers ----------
  // (`configure` installs those whose tool the sandbox has.)
  function opts(o) { return o !== null && typeof o === "object" ? o : {}; }
  function shQuote(s) { return "'" + StringCtor(s).replace(/'/g, "'\\''") + "'"; }
  define("shQuote", shQuote);

  // ---- per-sandbox configuration ------------------------------------------
  // Everything above is the same for every sandbox (and may be captured in a
  // pre-initialised snapshot of the guest); `configure`, called once by the
  // guest's `init` (which then forgets it), installs the tool globals and
  // shorthands of this sandbox and returns the control object.
  bootNames = new SetCtor(ObjectGetOwnNames(G));
  return function configure(tools, repoHint) {
    const firstConfigured = managedNames.length;
    const wired = new SetCtor();
    for (const t of tools) {
      const wire = t.name;
      wired.add(wire);
      if (t.global.startsWith("__wrepl_")) continue;
      define(t.global, nativeToolFunction(wire, t.global));
    }

    if (wired.has("Bash")) {
      define("sh", async function sh(command, options) {
        const r = await callTool("Bash", ObjectAssign({}, opts(options), { command: StringCtor(command) }));
        if (r.exitCode !== 0) {
          const why = r.exitCode === null ? "was killed by signal " + r.signal : "exited with code " + r.exitCode;
          const detail = (r.stderr || r.stdout || "").trim().slice(-2000);
          const e = new ErrorCtor("the command " + why + (detail ? ": " + detail : ""));
          e.name = "ShellError";
          e.exitCode = r.exitCode; e.signal = r.signal; e.stdout = r.stdout; e.stderr = r.stderr;
          throw e;
        }
        return r.stdout;
      });
    }
    if (wired.has("Read")) {
      define("cat", async function cat(path, options) {
        const r = await callTool("Read", ObjectAssign({}, opts(options), { file_path: StringCtor(path) }));
        return typeof r.content === "string" ? r.content : r;
      });
    }
    if (wired.has("Grep")) {
      define("rg", async function rg(pattern, options) {
        const r = await callTool("Grep", ObjectAssign({ output_mode: "content", "-n": true }, opts(options), { pattern: StringCtor(pattern) }));
        if (typeof r.content === "string") return r.content;
        return ArrayIsArray(r.matches) ? r.matches : r;
      });
      define("rgf", async function rgf(pattern, options) {
        const r = await callTool("Grep", ObjectAssign({}, opts(options), { output_mode: "files_with_matches", pattern: StringCtor(pattern) }));
        return ArrayIsArray(r.filenames) ? r.filenames : r;
      });
    }
    if (wired.has("Glob")) {
      define("gl", async function gl(pattern, options) {
        const r = await callTool("Glob", ObjectAssign({}, opts(options), { pattern: StringCtor(pattern) }));
        return ArrayIsArray(r.filenames) ? r.filenames : r;
      });
    }
    if (wired.has("Write")) {
      define("put", function put(path, text) {
        return callTool("Write", { file_path: StringCtor(path), content: typeof text === "string" ? text : str(text) });
      });
    }
    if (wired.has("Sample")) {
      // Model sampling; the aliases are the same function (the client picks the model).
      const haiku = async function haiku(prompt, schema) {
        const input = { prompt: typeof prompt === "string" ? prompt : str(prompt), model: "haiku" };
        if (schema !== undefined && schema !== null) {
          if (typeof schema !== "object" || ArrayIsArray(schema)) throw new TypeError("haiku(prompt, schema): schema must be a JSON Schema object");
          input.schema = schema;
        }
        return callTool("Sample", input);
      };
      define("haiku", haiku);
      define("sonnet", haiku);
      define("opus", haiku);
      define("fable", haiku);
    }
    if (wired.has("chdir")) {
      define("chdir", function chdir(dir) { return callTool("chdir", { path: StringCtor(dir) }); });
    }
    if (typeof repoHint === "string" && repoHint) define("repoHint", repoHint);
    configNames = new SetCtor();
    for (let i = firstConfigured; i < managedNames.length; i++) call(SetAdd, configNames, managedNames[i]);
    return control;
  };
})
