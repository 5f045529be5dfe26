#!/usr/bin/env bash
# Build wrepl's MCP Bundle (MCPB) and the release copy of its MCP registry
# entry, and check both:
#
#   scripts/package-mcpb.sh [WREPL_BINARY] [OUT_DIR]
#
# WREPL_BINARY defaults to target/release/wrepl, OUT_DIR to target/mcpb. It
# writes OUT_DIR/wrepl-<version>.mcpb (packaging/mcpb/manifest.json, the
# binary as server/wrepl, README.md and any LICENSE*) and OUT_DIR/server.json
# (the repository's server.json with the bundle's fileSha256: publish that
# file with `mcp-publisher publish` once the bundle is uploaded, unchanged, as
# the release asset its identifier names).
#
# The version is Cargo.toml's workspace.package.version. manifest.json and
# server.json carry it too and are not rewritten: the script fails when they
# say another version (or when the binary does), so bump all three together.
#
# Checks, in order: the versions agree; server.json matches the registry's
# schema (packaging/mcpb/registry-server.schema.json, the official
# 2025-12-11 schema) and README.md has its mcp-name line; `mcpb validate`
# accepts the manifest; `mcpb pack` builds the bundle; `mcpb info` reads it;
# `mcpb unpack` gives back the manifest and the binary, executable, and the
# command the manifest resolves to answers an MCP initialize over stdio and
# lists the manifest's tools; the release server.json matches the schema.
#
# Needs node and packaging/mcpb installed: (cd packaging/mcpb && npm ci).
set -euo pipefail

# The binary and the output directory, relative to where the script is run.
bin=${1:-}
[ -n "$bin" ] && bin=$(realpath -e -- "$bin")
out=${2:-}
[ -n "$out" ] && out=$(realpath -m -- "$out")
cd "$(dirname "$0")/.."
bin=${bin:-$PWD/target/release/wrepl}
out=${out:-$PWD/target/mcpb}

pkg=packaging/mcpb
mcpb=$pkg/node_modules/.bin/mcpb
if ! command -v node >/dev/null 2>&1 || [ ! -x "$mcpb" ] || [ ! -d "$pkg/node_modules/ajv" ]; then
  echo "package-mcpb: node and packaging/mcpb's packages are needed: (cd packaging/mcpb && npm ci)" >&2
  exit 1
fi
if [ ! -x "$bin" ]; then
  echo "package-mcpb: no wrepl binary at $bin (cargo build --release, or pass its path)" >&2
  exit 1
fi

# Cargo.toml's [workspace.package] version.
version=$(awk '
  /^\[/ { section = $0; next }
  section == "[workspace.package]" && $1 == "version" { gsub(/[" ]/, "", $3); print $3; exit }
' Cargo.toml)
[ -n "$version" ] || { echo "package-mcpb: no workspace.package.version in Cargo.toml" >&2; exit 1; }
echo "wrepl $version: $bin"

node $pkg/check.mjs sources "$version"
# The binary is this version, for Linux on x86-64 (ELF, e_machine 0x3e).
said=$("$bin" --version)
[ "$said" = "wrepl $version" ] || { echo "package-mcpb: $bin says \"$said\", not wrepl $version" >&2; exit 1; }
[ "$(od -An -tx1 -j0 -N4 "$bin" | tr -d ' ')" = 7f454c46 ] && [ "$(od -An -tx1 -j18 -N1 "$bin" | tr -d ' ')" = 3e ] \
  || { echo "package-mcpb: $bin is not an x86-64 ELF binary (the manifest is for Linux on x86_64)" >&2; exit 1; }
echo "ok: $bin is wrepl $version, x86-64 ELF"

work=$(mktemp -d "${TMPDIR:-/tmp}/wrepl-mcpb.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/wrepl
mkdir -p "$stage/server"
cp $pkg/manifest.json "$stage/manifest.json"
cp "$bin" "$stage/server/wrepl"
chmod 0755 "$stage/server/wrepl"
for f in README.md LICENSE*; do
  if [ -f "$f" ]; then cp "$f" "$stage/"; fi
done

"$mcpb" validate "$stage/manifest.json"
mkdir -p "$out"
bundle=$out/wrepl-$version.mcpb
rm -f "$bundle"
"$mcpb" pack "$stage" "$bundle"
"$mcpb" info "$bundle"
"$mcpb" unpack "$bundle" "$work/unpacked" >/dev/null
node $pkg/check.mjs bundle "$work/unpacked" "$bin" "$version"
node $pkg/check.mjs release "$bundle" "$out/server.json" "$version"

echo "package-mcpb: $bundle ($(du -h "$bundle" | cut -f1), sha256 $(sha256sum "$bundle" | cut -d' ' -f1))"
echo "package-mcpb: $out/server.json"
