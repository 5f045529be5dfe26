#!/usr/bin/env bash
# The README's test command: install what the tests use (the node packages:
# the MCP reference server, the TypeScript compiler, the MCP conformance
# suite and the Node.js 22 build it runs on; jco and Node.js 26 for the
# second host of the guest, hosts/node; the official MCP Python SDK in a
# venv; tmux for the interactive REPL; PostgreSQL, started as a throw-away
# cluster; headless Chromium), then run every test.
# Under this script a test whose component is missing fails; it never skips.
#
#   scripts/test.sh [cargo test arguments...]
#
# WREPL_LONG=1 runs the long versions of the chaos and soak tests (50 kills,
# an hour of load) instead of the CI-sized ones.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq nodejs npm
fi
echo "node $(node --version), npm $(npm --version)"
(cd tests/node && npm ci --no-audit --no-fund)
# The second host of the guest: jco and a Node.js build with JSPI.
(cd hosts/node && npm ci --no-audit --no-fund)
# The MCP bundle: the mcpb CLI and the server.json schema check (scripts/package-mcpb.sh).
(cd packaging/mcpb && npm ci --no-audit --no-fund)
export WREPL_REQUIRE_NPM=1
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq python3 python3-venv
fi
[ -x tests/python/.venv/bin/python ] || python3 -m venv tests/python/.venv
tests/python/.venv/bin/pip install -q --disable-pip-version-check -r tests/python/requirements.txt
echo "python SDK: $(tests/python/.venv/bin/python -c 'import importlib.metadata as m; print("mcp", m.version("mcp"))')"
export WREPL_REQUIRE_PYTHON=1
# tmux drives the interactive REPL in the terminal test.
if ! command -v tmux >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq tmux
fi
echo "$(tmux -V)"
export WREPL_REQUIRE_TMUX=1
# Headless Chromium renders the page `wrepl log export --html` writes.
if ! command -v chromium >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium
fi
echo "$(chromium --version 2>/dev/null || echo 'chromium: missing')"
export WREPL_REQUIRE_CHROMIUM=1
# A throw-away PostgreSQL cluster (Debian's packages; a unix socket only),
# stopped when the tests end.
pg_dir=$(mktemp -d /tmp/wrepl-pg.XXXXXX)
export WREPL_TEST_POSTGRES=$(bash scripts/pg-cluster.sh start "$pg_dir")
export WREPL_REQUIRE_POSTGRES=1
trap 'bash scripts/pg-cluster.sh stop "$pg_dir"; rm -rf "$pg_dir"' EXIT
echo "postgres: $WREPL_TEST_POSTGRES"
# The web-platform groups of the guest (guest-js/src/platform/*.js) against
# node's own implementations (Intl: its ICU data for en-US).
node --test guest-js/tests/platform/
cargo test --locked "$@"
