#!/usr/bin/env bash
# The guest as release artifacts for embedders: the committed component, the
# WIT folder it implements (with its contract, wit/README.md) and their
# SHA-256, in target/guest-package/ (and one tarball beside it).
#
#   scripts/package-guest.sh [OUT_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/target/guest-package}
VERSION=$(sed -n 's/^package wrepl:sandbox@\([0-9.]*\);/\1/p' "$ROOT/wit/sandbox.wit")
[ -n "$VERSION" ] || { echo "package-guest: no package version in wit/sandbox.wit" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT/wit"
cp "$ROOT/guest-js/dist/wrepl-guest.wasm" "$OUT/wrepl-guest-$VERSION.wasm"
cp "$ROOT"/wit/*.wit "$ROOT/wit/README.md" "$OUT/wit/"
(cd "$OUT" && find . -type f ! -name SHA256SUMS | sort | xargs sha256sum > SHA256SUMS)
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$(dirname "$OUT")" \
  -czf "$OUT.tar.gz" "$(basename "$OUT")"
echo "wrepl:sandbox@$VERSION: $(stat -c %s "$OUT/wrepl-guest-$VERSION.wasm") bytes"
cat "$OUT/SHA256SUMS"
