#!/usr/bin/env bash
# The committed guest component implements wit/ exactly: it targets the
# world `guest` (imports nothing else, exports what the world says), and the
# interfaces embedded in it are the ones in wit/ (comments aside).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WASM=${1:-$ROOT/guest-js/dist/wrepl-guest.wasm}
wasm-tools component targets "$ROOT/wit" --world guest "$WASM"
# The interfaces, without comments, blank lines and indentation.
norm() { sed -e 's://.*$::' -e 's/^[[:space:]]*//' -e '/^$/d'; }
embedded=$(wasm-tools component wit "$WASM" |
  awk '/^package wrepl:sandbox@/{inside=1; next} inside && /^}/{inside=0} inside' | norm)
declared=$(wasm-tools component wit "$ROOT/wit" |
  awk '/^package /{next} /^world /{skip=1} skip{ if (/^}/) skip=0; next } {print}' | norm)
if [ "$embedded" != "$declared" ]; then
  echo "the interfaces in $WASM differ from wit/:" >&2
  diff <(echo "$declared") <(echo "$embedded") >&2 || true
  exit 1
fi
echo "the guest component implements wit/ (world guest) exactly"
