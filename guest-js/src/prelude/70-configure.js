  // ---- shorthands: the same dispatcher as the full-name wrappers ----------
  // (`configure` installs those whose tool the sandbox has.)
  function opts(o) { return o !== null && typeof o === "object" ? o : {}; }
  function shQuote(s) { return "'" + StringCtor(s).replace(/'/g, "'\\''") + "'"; }
  define("shQuote", shQuote);

  // How many entries a search result holds (files, matches or lines).
  function shownCount(r) {
    return ArrayIsArray(r.filenames) ? r.filenames.length : ArrayIsArray(r.matches) ? r.matches.length : +r.numLines || 0;
  }
  // Files a search left out (unreadable, or past the per-file bound): the
  // shorthand returns plain text or names, so it says so on stderr (the
  // full-name Grep returns `skippedFiles`).
  function noteSkipped(fn, pattern, r) {
    if (r.skippedFiles > 0) {
      write(2, "[wrepl] " + fn + "(" + JSONStringify(StringCtor(pattern)) + "): " + r.skippedFiles +
        " file(s) could not be read or passed the per-file size bound (64 MiB) and were skipped (Grep() returns skippedFiles)\n");
    }
  }
  // A search whose output stopped at a bound (one the script did not
  // choose, or an internal one before its head_limit): the shorthand's error.
  function cutSearch(tool, fn, pattern, r) {
    const shown = ArrayIsArray(r.filenames) ? r.filenames.length + " files" : ArrayIsArray(r.matches) ? r.matches.length + " matches" : r.numLines + " lines";
    return makeToolError(tool, "limit", fn + "(" + JSONStringify(StringCtor(pattern)) + "): the output stopped at a bound after " + shown +
      ", so " + fn + "() returned nothing: narrow the pattern or the path (or a glob), or take the first N deliberately with {head_limit: N} (at most what one search returns)");
  }

  // ---- shorthand forms: how each kind of shorthand calls its tool ----------
  // The host names the globals and their tools (`configure`'s `shorthands`);
  // a form turns a tool's wire name into the function installed.
  const forms = {
    __proto__: null,
    shell: (tool) => async function sh(command, options) {
      const r = await callTool(tool, ObjectAssign({}, opts(options), { command: StringCtor(command) }));
      if (r.truncated === true) {
        // The command ran; only its output was cut, so the value would be a
        // part presented as the whole.
        const e = makeToolError(tool, "limit", "sh(" + JSONStringify(StringCtor(command)) + "): the command ran (" +
          (r.exitCode === null ? "killed by signal " + r.signal : "exit code " + r.exitCode) +
          "), but its output passed the bound of one stream (10 MiB) and was cut, so sh() returned nothing: write it to a file " +
          "and read that in parts (cat(path, {offset, limit})), or filter it in the command (| head, | grep); Bash() returns the cut output with truncated: true");
        e.exitCode = r.exitCode; e.signal = r.signal;
        throw e;
      }
      if (r.exitCode !== 0) {
        const why = r.exitCode === null ? "was killed by signal " + r.signal : "exited with code " + r.exitCode;
        const whole = (r.stderr || r.stdout || "").trim();
        // The message keeps the end of the output; e.stdout and e.stderr keep all of it.
        const detail = whole.length > 2000 ? "…[the last 2000 of " + whole.length + " characters; e.stderr and e.stdout hold all] " + whole.slice(-2000) : whole;
        const e = new ErrorCtor("the command " + why + (detail ? ": " + detail : ""));
        e.name = "ShellError";
        e.exitCode = r.exitCode; e.signal = r.signal; e.stdout = r.stdout; e.stderr = r.stderr;
        throw e;
      }
      return r.stdout;
    },
    // A shorthand never returns a cut result silently: where the tool's
    // output stopped at a bound the script did not choose (no `offset` or
    // `limit`, no `head_limit`), it fails, saying how much there was and how
    // to take it in parts. The full-name tools return the cut result with
    // its `truncated` marker.
    read: (tool) => async function cat(path, options) {
      const o = opts(options);
      const r = await callTool(tool, ObjectAssign({}, o, { file_path: StringCtor(path) }));
      if (typeof r.content !== "string") return r;
      const last = r.startLine + r.numLines - 1;
      if (r.truncated === true && o.limit === undefined) {
        throw makeToolError(tool, "limit", "cat(" + JSONStringify(StringCtor(path)) + "): the file has " + r.totalLines +
          " lines and one read returns lines " + r.startLine + "-" + last + " of them, so cat() returned nothing (it returns whole files, or the range " +
          "{offset, limit} names): read it in parts with cat(path, {offset: " + (last + 1) + ", limit: 2000}) (offset is the 1-based first line), or search it with rg()");
      }
      const left = r.totalLines - r.startLine + 1;
      if (r.truncated === true && r.numLines < (+o.limit < left ? +o.limit : left)) {
        // The range was cut short by the bound on one read's bytes, not by its limit.
        throw makeToolError(tool, "limit", "cat(" + JSONStringify(StringCtor(path)) + ", {limit: " + o.limit + "}): one read returns at most 10 MiB, " +
          "which ended at line " + last + " of the lines asked for, so cat() returned nothing: ask for fewer lines at a time (continue with offset " + (last + 1) + ")");
      }
      return r.content;
    },
    "grep-content": (tool) => async function rg(pattern, options) {
      const o = opts(options);
      const r = await callTool(tool, ObjectAssign({ output_mode: "content", "-n": true }, o, { pattern: StringCtor(pattern) }));
      if (r.truncated === true && (o.head_limit === undefined || shownCount(r) < +o.head_limit)) throw cutSearch(tool, "rg", pattern, r);
      noteSkipped("rg", pattern, r);
      if (typeof r.content === "string") return r.content;
      return ArrayIsArray(r.matches) ? r.matches : r;
    },
    "grep-files": (tool) => async function rgf(pattern, options) {
      const o = opts(options);
      const r = await callTool(tool, ObjectAssign({}, o, { output_mode: "files_with_matches", pattern: StringCtor(pattern) }));
      if (r.truncated === true && (o.head_limit === undefined || shownCount(r) < +o.head_limit)) throw cutSearch(tool, "rgf", pattern, r);
      noteSkipped("rgf", pattern, r);
      return ArrayIsArray(r.filenames) ? r.filenames : r;
    },
    glob: (tool) => async function gl(pattern, options) {
      const r = await callTool(tool, ObjectAssign({}, opts(options), { pattern: StringCtor(pattern) }));
      if (!ArrayIsArray(r.filenames)) return r;
      if (r.truncated === true) {
        throw makeToolError(tool, "limit", "gl(" + JSONStringify(StringCtor(pattern)) + "): " + r.totalFiles + " files match and one Glob lists at most " +
          r.filenames.length + " (the most recently modified), so gl() returned nothing: narrow the pattern, or list one directory at a time with gl(pattern, {path})");
      }
      return r.filenames;
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
    // With `chdir`, `pwd()`: the working directory, through the same
    // (read-only) tool, so no Bash grant is needed to learn it.
    chdir: (tool) => {
      define("pwd", function pwd() { return callTool(tool, { path: "." }); });
      return function chdir(dir) { return callTool(tool, { path: StringCtor(dir) }); };
    },
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
