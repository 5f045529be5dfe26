#!/usr/bin/env python3
"""End-to-end test of `wrepl serve` with the official MCP Python SDK (mcp==2.3.0).

Usage:
    python tests/python/test_sdk.py path/to/wrepl

Self-contained: no pytest; plain anyio, as the SDK uses. Prints one `PASS` line
per check; exits 0 when every check passes, 1 with a `FAIL` message (and the
tail of the server's stderr) on the first failure.

Four configurations are tested, each against its own server and its own temp
workspace (`--root`):

    stdio  x default mode (the SDK negotiates 2026-07-28 via server/discover)
    stdio  x mode="legacy" (initialize handshake, 2025-11-25)
    HTTP   x default mode      (`serve --http 127.0.0.1:0 --token-file F --store S`,
    HTTP   x mode="legacy"      bearer token sent through the SDK's httpx client)

In every configuration:
  1. persistence: `let x = 41`, then `x + 1` == 42. At 2026-07-28 the second
     call passes the handle from structuredContent["context"] (and a call
     without it runs in a fresh context); legacy reuses the connection's
     context without a handle. At 2026-07-28 the text content's last line is
     `[context: HANDLE]`, matching structuredContent["context"]; a legacy
     result has no such line.
  2. progress: `(await gl('*')).length` with a progress_callback receives
     notifications/progress, including the inner Glob call's `start` and
     `complete` ones, before the result (5 calls, as losing them is a race).
  3. sampling: `await haiku(...)` is answered by sampling_callback
     (legacy: sampling/createMessage; 2026: an input_required round the SDK
     drives) and the script's result is the callback's text.
  4. elicitation: with the callback accepting ({"approve": true}),
     `await put('a.txt','x')` writes the file; with it declining,
     `await Edit(...)` is refused (isError) and the file is unchanged.
  5. registered tool: `registerTool('dbl', ...)` adds `eval_registered__dbl`
     (it shows in tools/list); calling it (with `context` at 2026-07-28) asks
     approval through the elicitation callback and returns 42.
  6. cancellation: a call awaiting a 60 s timer is cancelled by an anyio
     cancel scope after 1.5 s; the same context answers the next call at once,
     and a side effect the script would have made at 2.5 s never happens.
  7. errors: an unknown tool raises MCPError (protocol error); `repl` with
     a non-string `code` or no `code` returns isError.
And for HTTP at 2026-07-28 only:
  8. MRTR across a restart: one round is driven by hand with
     `client.session.call_tool(..., allow_input_required=True)`, which returns
     the InputRequiredResult (an elicitation input request + request_state)
     without answering it. The server is then killed (SIGKILL), restarted with
     the same --store and --token-file on a new port, and a new client retries
     the call on it with `input_responses` (accept, approve: true) and the
     echoed `request_state`: the result completes and the file is written
     (it did not exist before). A context handle issued by the first process
     also continues on the second.

Every wait is bounded (at most 60 s); all spawned servers are terminated at
the end (stdio servers are owned and reaped by the SDK's stdio transport).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
STEP_TIMEOUT = 60.0  # every single check is bounded by this
TOKEN = "wrepl-sdk-test-token-4f1c2a"
SAMPLE_REPLY = "pong from the python sdk"


class CheckFailed(Exception):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


def passed(label: str, what: str) -> None:
    print(f"PASS {label}: {what}", flush=True)


def meta_dict(meta: Any) -> dict[str, Any]:
    if meta is None:
        return {}
    if isinstance(meta, dict):
        return meta
    return meta.model_dump(by_alias=True, exclude_none=True)


def short(result: Any) -> str:
    text = repr(result.model_dump(exclude_none=True) if hasattr(result, "model_dump") else result)
    return text if len(text) < 1500 else text[:1500] + "..."


# --------------------------------------------------------------------------- callbacks


class Peer:
    """The client-side behaviour: sampling and elicitation callbacks with a switchable policy."""

    def __init__(self) -> None:
        self.approve = True
        self.elicitations: list[tuple[str, str]] = []  # (wrepl/tool, message)
        self.samples: list[str] = []

    def reset(self, approve: bool = True) -> None:
        self.approve = approve
        self.elicitations.clear()
        self.samples.clear()

    async def sampling(
        self, ctx: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        texts = []
        for m in params.messages:
            content = m.content if isinstance(m.content, list) else [m.content]
            texts += [c.text for c in content if isinstance(c, types.TextContent)]
        self.samples.append("\n".join(texts))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=SAMPLE_REPLY), model="sdk-test-model"
        )

    async def elicitation(self, ctx: Any, params: Any) -> types.ElicitResult:
        tool = str(meta_dict(getattr(params, "meta", None)).get("wrepl/tool", ""))
        self.elicitations.append((tool, getattr(params, "message", "")))
        schema = getattr(params, "requested_schema", None) or {}
        if "approve" not in (schema.get("properties") or {}):
            raise CheckFailed(f"elicitation without an `approve` field in its schema: {params!r}")
        if self.approve:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")


async def no_elicitation(ctx: Any, params: Any) -> types.ElicitResult:
    # Registered so the client advertises elicitation, but a hand-driven round must never reach it.
    raise CheckFailed(f"elicitation callback called during a hand-driven MRTR round: {params!r}")


# --------------------------------------------------------------------------- HTTP server process


class HttpServer:
    """`wrepl serve --http 127.0.0.1:0 ...`; its stderr is drained by a thread and kept for diagnostics."""

    def __init__(self, binary: str, root: str, token_file: str, store: str, log_path: str) -> None:
        self.log_path = log_path
        self.lines: list[str] = []
        self.url: str | None = None
        self._ready = threading.Event()
        self.proc = subprocess.Popen(
            [binary, "serve", "--http", "127.0.0.1:0", "--root", root, "--token-file", token_file, "--store", store],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        with open(self.log_path, "a") as log:
            for line in self.proc.stderr:
                log.write(line)
                log.flush()
                self.lines.append(line.rstrip("\n"))
                m = re.search(r"wrepl: serving MCP at (http://\S+)", line)
                if m and self.url is None:
                    self.url = m.group(1)
                    self._ready.set()
        self._ready.set()

    async def wait_ready(self, timeout: float = 30.0) -> str:
        ok = await anyio.to_thread.run_sync(self._ready.wait, timeout)
        if not ok or self.url is None:
            raise CheckFailed(
                f"server did not print 'wrepl: serving MCP at ...' within {timeout}s "
                f"(exit code {self.proc.poll()}); stderr:\n" + "\n".join(self.lines[-30:])
            )
        return self.url

    def kill(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._thread.join(timeout=5)


# --------------------------------------------------------------------------- the suite


class Config:
    def __init__(self, transport: str, legacy: bool, binary: str, workdir: str) -> None:
        self.transport = transport
        self.legacy = legacy
        self.binary = binary
        self.dir = os.path.join(workdir, f"{transport}-{'legacy' if legacy else 'modern'}")
        self.root = os.path.join(self.dir, "root")
        os.makedirs(self.root)
        self.token_file = os.path.join(self.dir, "tokens")
        with open(self.token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(self.token_file, 0o600)
        self.store = os.path.join(self.dir, "sessions.sqlite3")
        self.log_path = os.path.join(self.dir, "server.stderr")
        self.servers: list[HttpServer] = []
        self.peer = Peer()
        self.label = f"{transport}/{LEGACY + ' legacy' if legacy else MODERN}"

    def log_tail(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-30:])
        except OSError:
            return "(no server stderr)"

    async def start_http(self) -> str:
        server = HttpServer(self.binary, self.root, self.token_file, self.store, self.log_path)
        self.servers.append(server)
        return await server.wait_ready()

    async def client(self, stack: AsyncExitStack, url: str | None = None, elicitation: Any = None) -> Client:
        """An entered Client for this configuration (mode default or legacy)."""
        if self.transport == "stdio":
            errlog = stack.enter_context(open(self.log_path, "a"))
            transport: Any = stdio_client(
                StdioServerParameters(command=self.binary, args=["serve", "--root", self.root]), errlog=errlog
            )
        else:
            assert url is not None
            # The SDK's documented way to set headers: hand streamable_http_client an httpx2 client.
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30.0, read=STEP_TIMEOUT)
            )
            await stack.enter_async_context(http)
            transport = streamable_http_client(url, http_client=http)
        kwargs: dict[str, Any] = dict(
            read_timeout_seconds=STEP_TIMEOUT,
            sampling_callback=self.peer.sampling,
            elicitation_callback=elicitation or self.peer.elicitation,
        )
        if self.legacy:
            kwargs["mode"] = "legacy"
        # The handshake is bounded by read_timeout_seconds (a cancel scope cannot wrap the entry of
        # a context manager that owns task groups) and by run_config's overall deadline.
        client = await stack.enter_async_context(Client(transport, **kwargs))
        want = LEGACY if self.legacy else MODERN
        expect(client.protocol_version == want, f"negotiated {client.protocol_version!r}, expected {want!r}")
        return client

    def cleanup(self) -> None:
        for s in self.servers:
            s.kill()


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def sc(result: types.CallToolResult) -> dict[str, Any]:
    expect(isinstance(result.structured_content, dict), f"no structuredContent in {short(result)}")
    return result.structured_content  # type: ignore[return-value]


def ok_result(cfg: "Config", result: types.CallToolResult, what: str) -> dict[str, Any]:
    expect(not result.is_error, f"{what}: unexpected isError: {short(result)}")
    s = sc(result)
    expect(s.get("error") is None, f"{what}: script error {s.get('error')!r}")
    handle = s.get("context")
    expect(isinstance(handle, str) and handle != "", f"{what}: no context handle in structuredContent")
    last = text_of(result).rstrip("\n").split("\n")[-1]
    if not cfg.legacy:
        expect(last == f"[context: {handle}]", f"{what}: text does not end with '[context: {handle}]': {last!r}")
    else:
        # 2025-11-25: the connection continues its own context; no handle line.
        expect("[context:" not in text_of(result), f"{what}: a 2025-11-25 result names a handle: {last!r}")
    return s


async def repl(client: Client, code: str, context: str | None = None, **kw: Any) -> types.CallToolResult:
    args: dict[str, Any] = {"code": code}
    if context is not None:
        args["context"] = context
    with anyio.fail_after(STEP_TIMEOUT):
        return await client.call_tool("repl", args, **kw)


async def check_persistence(cfg: Config, client: Client) -> None:
    s1 = ok_result(cfg, await repl(client, "let x = 41"), "let x = 41")
    handle = s1["context"]
    if cfg.legacy:
        s2 = ok_result(cfg, await repl(client, "x + 1"), "x + 1")
        expect(s2["result"] == 42, f"legacy: `x + 1` on the same connection gave {s2['result']!r}, expected 42")
        passed(cfg.label, "persistence: `let x = 41` then `x + 1` == 42 on the same connection")
    else:
        s2 = ok_result(cfg, await repl(client, "x + 1", context=handle), "x + 1 (with handle)")
        expect(s2["result"] == 42, f"`x + 1` with the handle gave {s2['result']!r}, expected 42")
        s3 = ok_result(cfg, await repl(client, "typeof x"), "typeof x (no handle)")
        expect(s3["result"] == "undefined", f"a call without `context` saw x: typeof x == {s3['result']!r}")
        expect(s3["context"] != handle, "a call without `context` returned the same handle as the earlier context")
        passed(cfg.label, "persistence: `x + 1` == 42 via the context handle; no handle = fresh context")


PROGRESS_ROUNDS = 5


async def check_progress(cfg: Config, client: Client) -> None:
    """Every notifications/progress of a call must reach the client before the call's result.

    The SDK (like the spec) ignores progress for a request that has completed, and over HTTP a
    request's SSE stream ends with its result, so a notification sent after the result is lost.
    The inner Glob call starts and completes before the script can finish, so its `start` and
    `complete` notifications must both arrive. Repeated a few times: losing them is a race.
    """
    total = 0
    for round_no in range(1, PROGRESS_ROUNDS + 1):
        events: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            events.append((progress, total, message))

        s = ok_result(cfg, await repl(client, "(await gl('*')).length", progress_callback=on_progress), "gl progress")
        expect(isinstance(s["result"], int), f"`(await gl('*')).length` gave {s['result']!r}")
        calls = [c for c in s.get("calls", []) if c.get("type") == "tool_use"]
        expect(any(c.get("name") == "Glob" for c in calls), f"no Glob call recorded: {s.get('calls')!r}")

        def seen(phase: str) -> bool:
            return any((m or "").startswith("Glob ") and phase in (m or "") for _, _, m in events)

        # The SDK runs progress callbacks as spawned tasks: they may land just after the result.
        with anyio.move_on_after(3):
            while not (seen(" start") and seen(" complete")):
                await anyio.sleep(0.02)
        messages = [m for _, _, m in events]
        expect(
            seen(" start") and seen(" complete"),
            f"call {round_no}/{PROGRESS_ROUNDS}: the progress notifications for the inner Glob call did not all "
            f"arrive before the result (received {len(events)}: {messages!r}); the server must send every "
            "notifications/progress of a request before that request's response",
        )
        values = [p for p, _, _ in events]
        expect(
            values == sorted(values),
            f"call {round_no}/{PROGRESS_ROUNDS}: notifications/progress arrived out of order: {values!r} "
            f"({messages!r}); progress MUST increase with each notification",
        )
        total += len(events)
    passed(cfg.label, f"progress: {total} notifications/progress over {PROGRESS_ROUNDS} calls with an inner Glob call")


async def check_sampling(cfg: Config, client: Client) -> None:
    cfg.peer.reset()
    s = ok_result(cfg, await repl(client, "await haiku('Reply with the word pong.')"), "haiku")
    expect(s["result"] == SAMPLE_REPLY, f"haiku returned {s['result']!r}, expected {SAMPLE_REPLY!r}")
    expect(
        any("Reply with the word pong." in t for t in cfg.peer.samples),
        f"the sampling callback did not see the prompt: {cfg.peer.samples!r}",
    )
    passed(cfg.label, "sampling: haiku() returned the sampling callback's text")


async def check_elicitation(cfg: Config, client: Client) -> None:
    path = os.path.join(cfg.root, "a.txt")
    cfg.peer.reset(approve=True)
    s = ok_result(cfg, await repl(client, "await put('a.txt', 'x')"), "put (accepted)")
    expect(any(t == "Write" for t, _ in cfg.peer.elicitations), f"no Write elicitation: {cfg.peer.elicitations!r}")
    expect(os.path.exists(path), f"put was approved but {path} does not exist (result {s['result']!r})")
    with open(path) as f:
        expect(f.read() == "x", "a.txt does not hold 'x' after the approved put")
    passed(cfg.label, "elicitation accept: put('a.txt','x') was approved and wrote the file")

    cfg.peer.reset(approve=False)
    r = await repl(client, "await Edit({file_path: 'a.txt', old_string: 'x', new_string: 'y'})")
    expect(any(t == "Edit" for t, _ in cfg.peer.elicitations), f"no Edit elicitation: {cfg.peer.elicitations!r}")
    expect(r.is_error is True, f"declined Edit did not give isError: {short(r)}")
    with open(path) as f:
        content = f.read()
    expect(content == "x", f"declined Edit changed the file: {content!r}")
    passed(cfg.label, "elicitation decline: Edit refused (isError) and a.txt unchanged")
    cfg.peer.reset(approve=True)


async def check_registered(cfg: Config, client: Client) -> None:
    name = "eval_registered__dbl"
    code = (
        "registerTool('dbl', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']},"
        " async ({n}) => n * 2)"
    )
    s = ok_result(cfg, await repl(client, code), "registerTool")
    expect(name in (s.get("new_tools") or []), f"registerTool did not report {name}: {s.get('new_tools')!r}")
    with anyio.fail_after(STEP_TIMEOUT):
        tools = await client.list_tools(cache_mode="refresh")
    listed = {t.name: t for t in tools.tools}
    expect(name in listed, f"{name} is not in tools/list: {sorted(listed)!r}")
    args: dict[str, Any] = {"n": 21}
    if not cfg.legacy:
        args["context"] = s["context"]
    cfg.peer.reset(approve=True)
    with anyio.fail_after(STEP_TIMEOUT):
        r = await client.call_tool(name, args)
    expect(not r.is_error, f"{name} gave isError: {short(r)}")
    expect(any(t == name for t, _ in cfg.peer.elicitations), f"{name} did not ask approval: {cfg.peer.elicitations}")
    got = (r.structured_content or {}).get("result")
    expect(got == 42, f"{name}({{n: 21}}) gave {got!r}, expected 42: {short(r)}")
    passed(cfg.label, f"registered tool: {name}({{n: 21}}) == 42 after approval")


async def check_cancellation(cfg: Config, client: Client) -> None:
    s = ok_result(cfg, await repl(client, "let q = 1"), "let q = 1")
    handle = None if cfg.legacy else s["context"]
    code = (
        "await new Promise(r => setTimeout(r, 2500)); globalThis.late = 1;"
        " await new Promise(r => setTimeout(r, 60000)); 'finished'"
    )
    started = time.monotonic()
    returned: types.CallToolResult | None = None
    with anyio.move_on_after(1.5) as scope:
        returned = await repl(client, code, context=handle)
    if not scope.cancelled_caught:
        raise CheckFailed(f"the 60 s call was not cancelled; it returned {short(returned)}")
    with anyio.fail_after(20):
        s2 = ok_result(cfg, await repl(client, "q + 1", context=handle), "q + 1 after cancel")
    expect(s2["result"] == 2, f"the context after the cancel gave q + 1 == {s2['result']!r}")
    elapsed = time.monotonic() - started
    expect(elapsed < 10, f"the call after the cancel took until {elapsed:.1f}s: the evaluation kept the context busy")
    await anyio.sleep(max(0.0, started + 4.0 - time.monotonic()))
    s3 = ok_result(cfg, await repl(client, "typeof globalThis.late", context=handle), "typeof late")
    expect(
        s3["result"] == "undefined",
        f"the cancelled evaluation kept running: globalThis.late is {s3['result']!r} 4 s later",
    )
    passed(cfg.label, "cancellation: the cancelled evaluation stopped and the context answered the next call")


async def check_errors(cfg: Config, client: Client) -> None:
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            r = await client.call_tool("no_such_tool", {})
    except MCPError as e:
        passed(cfg.label, f"errors: unknown tool raised MCPError {e.code}: {e.error.message}")
    else:
        raise CheckFailed(f"calling an unknown tool did not raise; it returned {short(r)}")
    for bad in ({"code": 5}, {"timeout": 1}):
        with anyio.fail_after(STEP_TIMEOUT):
            r = await client.call_tool("repl", bad)
        expect(r.is_error is True, f"repl with bad arguments {bad!r} did not give isError: {short(r)}")
    passed(cfg.label, "errors: repl with bad arguments gives isError")


async def check_async_mode(binary: str, workdir: str) -> None:
    """`serve --async` (2025-11-25): the queued result and the polled result both pass the SDK's
    check of structuredContent against the repl tool's outputSchema."""
    root = os.path.join(workdir, "async-root")
    os.makedirs(root)
    label = "stdio/async legacy"
    async with AsyncExitStack() as stack:
        errlog = stack.enter_context(open(os.path.join(workdir, "async.stderr"), "a"))
        transport = stdio_client(
            StdioServerParameters(command=binary, args=["serve", "--async", "--root", root]), errlog=errlog
        )
        client = await stack.enter_async_context(Client(transport, read_timeout_seconds=STEP_TIMEOUT, mode="legacy"))
        with anyio.fail_after(STEP_TIMEOUT):
            tools = await client.list_tools()
        schema = next(t.output_schema for t in tools.tools if t.name == "repl")
        expect(isinstance(schema, dict) and "anyOf" in schema, f"the async repl tool's outputSchema: {schema!r}")
        with anyio.fail_after(STEP_TIMEOUT):
            queued = await client.call_tool("repl", {"code": "1 + 2"})
        s = sc(queued)
        expect(not queued.is_error and isinstance(s.get("eval_id"), str), f"queued: {short(queued)}")
        with anyio.fail_after(STEP_TIMEOUT):
            done = await client.call_tool("repl_result", {"eval_id": s["eval_id"], "wait_ms": 30000})
        expect(sc(done).get("result") == 3, f"the polled result: {short(done)}")
    passed(label, "async: the queued and the polled results match the declared outputSchema")


async def run_config(cfg: Config) -> None:
    async with AsyncExitStack() as stack:
        url = await cfg.start_http() if cfg.transport == "http" else None
        client = await cfg.client(stack, url)
        passed(cfg.label, f"connected, negotiated {client.protocol_version}")
        await check_persistence(cfg, client)
        await check_progress(cfg, client)
        await check_sampling(cfg, client)
        await check_elicitation(cfg, client)
        await check_registered(cfg, client)
        await check_cancellation(cfg, client)
        await check_errors(cfg, client)
    if cfg.transport == "http" and not cfg.legacy:
        await check_mrtr_restart(cfg)


async def check_mrtr_restart(cfg: Config) -> None:
    path = os.path.join(cfg.root, "m.txt")
    code = "await put('m.txt', 'from-round-two'); 7"
    args = {"code": code}
    first_server = cfg.servers[-1]
    async with AsyncExitStack() as stack:
        client = await cfg.client(stack, first_server.url, elicitation=no_elicitation)
        s = ok_result(cfg, await repl(client, "let keep = 'persisted'"), "let keep")
        handle = s["context"]
        with anyio.fail_after(STEP_TIMEOUT):
            first = await client.session.call_tool("repl", args, allow_input_required=True)
    expect(
        isinstance(first, types.InputRequiredResult),
        f"put without a grant did not return input_required: {short(first)}",
    )
    assert isinstance(first, types.InputRequiredResult)
    expect(bool(first.request_state), "the InputRequiredResult has no request_state")
    requests = first.input_requests or {}
    expect(len(requests) == 1, f"expected one input request, got {short(first)}")
    (key, request), = requests.items()
    expect(isinstance(request, types.ElicitRequest), f"the input request is not an elicitation: {short(request)}")
    expect(not os.path.exists(path), "the write happened before it was approved")

    first_server.kill(signal.SIGKILL)
    url2 = await cfg.start_http()
    # A new process (the kernel may hand the freed port out again, so the
    # address alone does not tell).
    second = cfg.servers[-1]
    expect(
        second is not first_server and second.proc.pid != first_server.proc.pid and first_server.proc.poll() is not None,
        f"the round trip is not answered by a new server process at {url2}",
    )

    async with AsyncExitStack() as stack:
        client = await cfg.client(stack, url2, elicitation=no_elicitation)
        with anyio.fail_after(STEP_TIMEOUT):
            final = await client.session.call_tool(
                "repl",
                args,
                input_responses={key: types.ElicitResult(action="accept", content={"approve": True})},
                request_state=first.request_state,
                allow_input_required=True,
            )
        expect(isinstance(final, types.CallToolResult), f"the retry on the new server did not complete: {short(final)}")
        assert isinstance(final, types.CallToolResult)
        s = ok_result(cfg, final, "MRTR retry")
        expect(s["result"] == 7, f"the retried call gave {s['result']!r}, expected 7")
        expect(os.path.exists(path), "the retried call completed but m.txt was not written")
        with open(path) as f:
            expect(f.read() == "from-round-two", "m.txt has the wrong content")
        passed(cfg.label, "MRTR across a restart: input_required from server 1, answered retry completed on server 2")

        s2 = ok_result(cfg, await repl(client, "keep", context=handle), "keep on the restarted server")
        expect(s2["result"] == "persisted", f"the handle from server 1 gave keep == {s2['result']!r} on server 2")
        passed(cfg.label, "store: a context handle from the killed server continues on the restarted one")


def first_leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (possibly nested) exception groups (task groups wrap failures)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        failed = [e for e in exc.exceptions if isinstance(e, CheckFailed)]
        exc = failed[0] if failed else exc.exceptions[0]
    return exc


async def main(binary: str) -> int:
    workdir = tempfile.mkdtemp(prefix="wrepl-sdk-test-")
    started = time.monotonic()
    configs = [
        Config("stdio", False, binary, workdir),
        Config("stdio", True, binary, workdir),
        Config("http", False, binary, workdir),
        Config("http", True, binary, workdir),
    ]
    current: Config | None = None
    try:
        with anyio.fail_after(120):
            await check_async_mode(binary, workdir)
        for cfg in configs:
            current = cfg
            with anyio.fail_after(300):  # overall bound per configuration; each step has its own ≤ 60 s bound
                await run_config(cfg)
    except BaseException as exc:  # noqa: BLE001 - report any failure, then exit non-zero
        label = current.label if current else "setup"
        exc = first_leaf(exc)
        if isinstance(exc, CheckFailed):
            print(f"FAIL {label}: {exc}", file=sys.stderr, flush=True)
        else:
            print(f"FAIL {label}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            traceback.print_exception(exc)
        if current is not None:
            print(f"--- server stderr ({current.log_path}), last lines:\n{current.log_tail()}", file=sys.stderr)
        print(f"(work dir kept: {workdir})", file=sys.stderr)
        return 1
    finally:
        for cfg in configs:
            cfg.cleanup()
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"all checks passed in {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} PATH/TO/wrepl", file=sys.stderr)
        sys.exit(2)
    binary = os.path.abspath(sys.argv[1])
    if not os.access(binary, os.X_OK):
        print(f"FAIL: {binary} is not an executable", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, binary))
