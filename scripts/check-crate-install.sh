#!/usr/bin/env bash
# `cargo install` from the packaged crate, as a user would install wrepl from
# crates.io: package the crate (the precompiled guest and its WIT are inside
# it), unpack the .crate somewhere else, install from there with the guest
# toolchain out of PATH, and run `wrepl eval -e 1` with the installed binary
# in an empty HOME.
#
#   scripts/check-crate-install.sh [--release]
#
# Without --release (CI) the install is a debug build with the workspace's
# dev profile, in the workspace's target directory, so it reuses the test
# build's dependencies; with --release it is what `cargo install` builds.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
profile=(--debug
  --config 'profile.dev.debug="line-tables-only"'
  --config 'profile.dev.package."*".opt-level=2'
  --config 'profile.dev.package."*".debug=false'
  --config 'profile.dev.package.cranelift-codegen.opt-level=3')
[ "${1:-}" = --release ] && profile=()
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
WORK=$(mktemp -d /tmp/wrepl-crate.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cargo package -p wrepl --locked --no-verify --allow-dirty
CRATE=target/package/wrepl-$VERSION.crate
echo "check-crate-install: $CRATE ($(stat -c %s "$CRATE") bytes)"
tar -xzf "$CRATE" -C "$WORK"
for f in guest/wrepl-guest.wasm guest/wrepl-guest.x86_64-linux.cwasm wit/sandbox.wit; do
  [ -f "$WORK/wrepl-$VERSION/$f" ] && [ ! -L "$WORK/wrepl-$VERSION/$f" ] || {
    echo "check-crate-install: the packaged crate has no $f" >&2; exit 1; }
done
cmp guest-js/dist/wrepl-guest.x86_64-linux.cwasm "$WORK/wrepl-$VERSION/guest/wrepl-guest.x86_64-linux.cwasm"
# No guest toolchain: Debian's rustc-web, clang, lld and wasm-tools are not
# on the PATH the install sees (rustup's cargo and rustc are).
CARGO_BIN=$(dirname "$(command -v cargo)")
env -u RUSTC -u RUSTFLAGS PATH="$CARGO_BIN:/usr/bin:/bin" \
  cargo install --path "$WORK/wrepl-$VERSION" --locked "${profile[@]}" \
    --root "$WORK/root" --target-dir "$ROOT/target"
mkdir -p "$WORK/home"
out=$(cd "$WORK/home" && env -i HOME="$WORK/home" PATH=/usr/bin:/bin "$WORK/root/bin/wrepl" eval -e 1)
[ "$out" = 1 ] || { echo "check-crate-install: wrepl eval -e 1 printed: $out" >&2; exit 1; }
echo "check-crate-install: the crate installs, and its wrepl answers 1"
