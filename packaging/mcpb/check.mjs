// The checks of scripts/package-mcpb.sh, run with this package's node_modules
// (npm ci here first). Each command prints what it checked and exits 1 on the
// first failure.
//
//   node check.mjs sources VERSION
//       manifest.json and ../../server.json say VERSION (Cargo.toml's), the
//       registry entry points at this version's release asset, server.json
//       passes the registry's schema (registry-server.schema.json, a copy of
//       the official one), and README.md carries the mcp-name line.
//   node check.mjs bundle UNPACKED_DIR SOURCE_BINARY VERSION
//       the unpacked bundle holds this manifest and the binary as given,
//       executable, and the command its manifest resolves to (as an MCPB host
//       resolves it, with a scratch workspace) answers an MCP initialize with
//       wrepl VERSION and lists every tool the manifest declares.
//   node check.mjs release MCPB_FILE OUT_SERVER_JSON VERSION
//       writes server.json with the bundle's fileSha256 to OUT_SERVER_JSON and
//       checks it against the schema and the official registry's rules for
//       MCPB packages.

import { createHash } from "node:crypto";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

import Ajv from "ajv";
import addFormats from "ajv-formats";
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb/node";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../..");

// The official schema, https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json
// (modelcontextprotocol/static, schemas/2025-12-11/server.schema.json, MIT),
// byte for byte. A newer schema is a deliberate change: copy it, then update
// this digest and server.json's $schema together.
const SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0";
const SERVER_NAME = "io.github.wrepl/wrepl";

function fail(message) {
  console.error(`check: ${message}`);
  process.exit(1);
}

function ok(message) {
  console.log(`ok: ${message}`);
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    fail(`${path}: ${e.message}`);
  }
}

function sha256(path) {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** The release asset the registry entry of VERSION points at. */
function releaseUrl(version) {
  return `https://github.com/wrepl/wrepl/releases/download/v${version}/wrepl-${version}.mcpb`;
}

/** Validate `doc` (read from `what`) against the registry's server.json schema. */
function validateServerJson(doc, what) {
  const schemaPath = join(here, "registry-server.schema.json");
  const digest = sha256(schemaPath);
  if (digest !== SCHEMA_SHA256) {
    fail(`${schemaPath} is not the official 2025-12-11 schema (sha256 ${digest})`);
  }
  const schema = readJson(schemaPath);
  if (doc.$schema !== schema.$id) {
    fail(`${what}: $schema is ${JSON.stringify(doc.$schema)}, the schema checked against is ${schema.$id}`);
  }
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  if (!validate(doc)) {
    const errors = validate.errors.map((e) => `  ${e.instancePath || "/"} ${e.message}`).join("\n");
    fail(`${what} does not match ${schema.$id}:\n${errors}`);
  }
  ok(`${what} matches ${schema.$id}`);
}

/** The one MCPB package of a server.json. */
function mcpbPackage(server, what) {
  const packages = (server.packages ?? []).filter((p) => p.registryType === "mcpb");
  if (packages.length !== 1) fail(`${what}: expected one package with registryType "mcpb", found ${packages.length}`);
  return packages[0];
}

function sources(version) {
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version ?? "")) fail(`not a version: ${version}`);
  const manifest = readJson(join(here, "manifest.json"));
  if (manifest.version !== version) {
    fail(`packaging/mcpb/manifest.json has version ${manifest.version}, Cargo.toml ${version}: update the manifest`);
  }
  if (manifest.server?.entry_point !== "server/wrepl") fail("manifest.json: entry_point is not server/wrepl");
  ok(`manifest.json is version ${version}`);

  const server = readJson(join(repo, "server.json"));
  if (server.name !== SERVER_NAME) fail(`server.json: name is ${server.name}, not ${SERVER_NAME}`);
  if (server.version !== version) {
    fail(`server.json has version ${server.version}, Cargo.toml ${version}: update server.json`);
  }
  const pkg = mcpbPackage(server, "server.json");
  if (pkg.identifier !== releaseUrl(version)) {
    fail(`server.json: the mcpb package is ${pkg.identifier}, expected ${releaseUrl(version)}`);
  }
  if (pkg.version !== undefined && pkg.version !== version) {
    fail(`server.json: the mcpb package has version ${pkg.version}, Cargo.toml ${version}`);
  }
  if (pkg.fileSha256 !== undefined) {
    fail("server.json: fileSha256 is written into the release copy by scripts/package-mcpb.sh, not committed");
  }
  validateServerJson(server, "server.json");

  // The registry finds the server's name in the README of a package it checks
  // (PyPI, NuGet, crates.io read `mcp-name: NAME` followed by a boundary).
  const readme = readFileSync(join(repo, "README.md"), "utf8");
  const line = new RegExp(`mcp-name: ${SERVER_NAME.replace(/[.]/g, "\\.")}(?=\\s|<|$)`, "m");
  if (!line.test(readme)) fail(`README.md has no "mcp-name: ${SERVER_NAME}" line`);
  ok(`README.md names ${SERVER_NAME}`);
}

/** Send `requests` (JSON-RPC lines) to the server and collect the answers by id. */
function exchange(command, args, env, cwd, requests, timeoutMs) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    const answers = new Map();
    const wanted = requests.filter((r) => r.id !== undefined).map((r) => r.id);
    let stderr = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no answer within ${timeoutMs} ms; stderr:\n${stderr}`));
    }, timeoutMs);
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (wanted.every((id) => answers.has(id))) resolvePromise(answers);
      else reject(new Error(`the server exited (${code ?? signal}) before answering; stderr:\n${stderr}`));
    });
    createInterface({ input: child.stdout }).on("line", (line) => {
      let v;
      try {
        v = JSON.parse(line);
      } catch {
        return;
      }
      if (v.id !== undefined) answers.set(v.id, v);
      // Everything asked is answered: closing stdin ends the server.
      if (wanted.every((id) => answers.has(id))) child.stdin.end();
    });
    for (const r of requests) child.stdin.write(JSON.stringify(r) + "\n");
  });
}

async function bundle(dir, sourceBinary, version) {
  const manifest = readJson(join(dir, "manifest.json"));
  const source = readJson(join(here, "manifest.json"));
  if (JSON.stringify(manifest) !== JSON.stringify(source)) fail("the bundle's manifest.json is not packaging/mcpb/manifest.json");
  const binary = join(dir, manifest.server.entry_point);
  const mode = statSync(binary).mode;
  if ((mode & 0o111) !== 0o111) fail(`${manifest.server.entry_point} is not executable (mode ${(mode & 0o777).toString(8)})`);
  if (sha256(binary) !== sha256(sourceBinary)) fail(`${manifest.server.entry_point} is not ${sourceBinary}`);
  ok(`the bundle holds manifest.json and ${manifest.server.entry_point} (mode ${(mode & 0o777).toString(8)}, the binary given)`);

  // The command as an MCPB host builds it: ${__dirname} is the unpacked
  // bundle, ${user_config.workspace} the directory the user picked.
  const workspace = mkdtempSync(join(tmpdir(), "wrepl-mcpb-workspace-"));
  try {
    const config = await getMcpConfigForManifest({
      manifest,
      extensionPath: resolve(dir),
      systemDirs: { HOME: process.env.HOME ?? workspace },
      userConfig: { workspace },
      pathSeparator: "/",
    });
    if (!config) fail("the manifest resolves to no MCP configuration");
    const unresolved = JSON.stringify([config.command, config.args, config.env]).match(/\$\{[^}]*\}/);
    if (unresolved) fail(`the resolved configuration still holds ${unresolved[0]}: ${JSON.stringify(config)}`);
    if (resolve(config.command) !== resolve(binary)) fail(`the manifest runs ${config.command}, not the bundle's binary`);
    const answers = await exchange(
      config.command,
      config.args ?? [],
      config.env ?? {},
      workspace,
      [
        {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: {
            protocolVersion: "2025-11-25",
            capabilities: {},
            clientInfo: { name: "package-mcpb", version: "0" },
          },
        },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: 2, method: "tools/list" },
      ],
      120_000,
    );
    const info = answers.get(1).result?.serverInfo;
    if (info?.name !== "wrepl" || info?.version !== version) {
      fail(`initialize answered ${JSON.stringify(answers.get(1))}, expected serverInfo wrepl ${version}`);
    }
    const listed = (answers.get(2).result?.tools ?? []).map((t) => t.name);
    for (const tool of manifest.tools ?? []) {
      if (!listed.includes(tool.name)) fail(`the manifest declares the tool ${tool.name}, the server lists ${listed.join(", ")}`);
    }
    ok(`${config.command} ${config.args.join(" ")} answers initialize as wrepl ${version} and lists ${listed.join(", ")}`);
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

function release(mcpbFile, out, version) {
  const server = readJson(join(repo, "server.json"));
  const pkg = mcpbPackage(server, "server.json");
  pkg.fileSha256 = sha256(mcpbFile);
  validateServerJson(server, `the release server.json`);
  // What the official registry requires of an MCPB package on top of the
  // schema: a GitHub or GitLab release URL that contains "mcp", and the hash.
  if (!/^https:\/\/(github\.com|gitlab\.com)\/[^/]+\/[^/]+\/.+\.mcpb$/.test(pkg.identifier) || !pkg.identifier.includes("mcp")) {
    fail(`the mcpb package ${pkg.identifier} is not a GitHub or GitLab release asset the registry accepts`);
  }
  if (!pkg.identifier.endsWith(`/wrepl-${version}.mcpb`)) fail(`${pkg.identifier} is not wrepl-${version}.mcpb`);
  writeFileSync(out, JSON.stringify(server, null, 2) + "\n");
  ok(`${out}: ${pkg.identifier} with fileSha256 ${pkg.fileSha256}`);
}

const [command, ...args] = process.argv.slice(2);
switch (command) {
  case "sources":
    sources(args[0]);
    break;
  case "bundle":
    await bundle(args[0], args[1], args[2]).catch((e) => fail(e.message));
    break;
  case "release":
    release(args[0], args[1], args[2]);
    break;
  default:
    fail(`usage: node check.mjs sources VERSION | bundle DIR BINARY VERSION | release MCPB OUT VERSION`);
}
