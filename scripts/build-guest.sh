#!/usr/bin/env bash
# Build the guest component reproducibly: guest-js/ -> guest-js/dist/wrepl-guest.wasm
# Needs Debian's rustc-web toolchain, clang-22/lld-22 and wasm-tools (see scripts/install-guest-toolchain.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WASM_TOOLS_VERSION=1.263.0
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
WASM_TOOLS=${WASM_TOOLS:-$(command -v wasm-tools || true)}
if [ -z "$WASM_TOOLS" ] || ! "$WASM_TOOLS" --version | grep -q " $WASM_TOOLS_VERSION"; then
  echo "build-guest: wasm-tools $WASM_TOOLS_VERSION is required (scripts/install-guest-toolchain.sh installs it)" >&2
  exit 1
fi
# The host toolchain (rustup's cargo) builds the snapshot step; remember it
# before PATH puts Debian's toolchain first.
HOST_CARGO=${HOST_CARGO:-$CARGO_HOME/bin/cargo}
[ -x "$HOST_CARGO" ] || HOST_CARGO=$(command -v cargo)
cd "$ROOT/guest-js"
# The committed guest takes no extra flags.
unset GUEST_RUSTFLAGS GUEST_CFLAGS
# shellcheck source=scripts/guest-env.sh
. "$ROOT/scripts/guest-env.sh"
unset CARGO_BUILD_TARGET_DIR CARGO_TARGET_DIR
/usr/bin/cargo build --release --locked --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort
# The host builds below run without the guest's variables: SOURCE_DATE_EPOCH,
# for one, is tracked by every build script that uses cc (ring, SQLite,
# wasmtime...), and a different value would make the test build that follows
# in CI compile them and everything above them again.
# Pre-initialise: boot QuickJS and the prelude at build time (wasmtime-wizer),
# so a sandbox starts from a copy-on-write image of the booted heap.
(cd "$ROOT" && env -u RUSTC -u RUSTDOC -u RUSTC_BOOTSTRAP -u RUSTFLAGS -u SOURCE_DATE_EPOCH PATH="$CARGO_HOME/bin:$PATH" \
  "$HOST_CARGO" run --locked --quiet -p wrepl-snapshot -- \
  guest-js/target/wasm32-unknown-unknown/release/wrepl_guest.wasm guest-js/target/wrepl_guest.snapshot.wasm)
mkdir -p dist
"$WASM_TOOLS" component new target/wrepl_guest.snapshot.wasm -o dist/wrepl-guest.wasm
"$WASM_TOOLS" validate dist/wrepl-guest.wasm
# The component must import nothing but the wrepl:sandbox interfaces (no WASI).
if "$WASM_TOOLS" component wit dist/wrepl-guest.wasm | grep -E '^\s*import ' | grep -v 'wrepl:sandbox/' ; then
  echo "build-guest: the component imports something outside wrepl:sandbox" >&2
  exit 1
fi
ls -l dist/wrepl-guest.wasm
sha256sum dist/wrepl-guest.wasm
# The guest compiled ahead of time, which the binary embeds so that no run
# compiles it (x86_64 Linux; the same guest and wasmtime give the same bytes).
(cd "$ROOT" && env -u RUSTC -u RUSTDOC -u RUSTC_BOOTSTRAP -u RUSTFLAGS -u SOURCE_DATE_EPOCH PATH="$CARGO_HOME/bin:$PATH" \
  "$HOST_CARGO" run --locked --quiet --bin wrepl-precompile)
sha256sum dist/wrepl-guest.x86_64-linux.cwasm
