#!/usr/bin/env bash
# Build a variant of the guest for measurement, next to the committed one and
# without touching it: the same build as scripts/build-guest.sh, with extra
# compiler flags, an optional wasm-opt pass, or names kept for a profiler.
#
#   bench/guest-variant.sh NAME [EXTRA_RUSTFLAGS] [EXTRA_CFLAGS]
#     WASMOPT="-O3"  run wasm-opt (Debian: apt-get install binaryen) before the snapshot
#     NOSTRIP=1      keep the name section (perf then names guest functions;
#                    run wrepl-bench with WREPL_BENCH_PERFMAP=1, see bench/README.md)
#
# Writes target/guest-variants/NAME/guest.wasm; measure it with
#   WREPL_BENCH_GUEST=target/guest-variants/NAME/guest.wasm target/release/wrepl-bench <workloads.json> W5
# Needs what scripts/build-guest.sh needs (scripts/install-guest-toolchain.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=${1:?usage: bench/guest-variant.sh NAME [EXTRA_RUSTFLAGS] [EXTRA_CFLAGS]}
XR=${2:-}
XC=${3:-}
OUT=$ROOT/target/guest-variants/$NAME
mkdir -p "$OUT"
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
HOST_CARGO=${HOST_CARGO:-$CARGO_HOME/bin/cargo}
[ -x "$HOST_CARGO" ] || HOST_CARGO=$(command -v cargo)
(
  cd "$ROOT/guest-js"
  GUEST_RUSTFLAGS=$XR GUEST_CFLAGS=$XC
  # shellcheck source=scripts/guest-env.sh
  . "$ROOT/scripts/guest-env.sh"
  export CARGO_TARGET_DIR=$OUT/target
  if [ -n "${NOSTRIP:-}" ]; then export CARGO_PROFILE_RELEASE_STRIP=false; fi
  /usr/bin/cargo build --release --locked --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort
)
IN=$OUT/target/wasm32-unknown-unknown/release/wrepl_guest.wasm
if [ -n "${WASMOPT:-}" ]; then
  # shellcheck disable=SC2086 # the flags are words
  wasm-opt $WASMOPT --all-features "$IN" -o "$OUT/opt.wasm"
  IN=$OUT/opt.wasm
fi
(cd "$ROOT" && "$HOST_CARGO" run --locked --quiet -p wrepl-snapshot -- "$IN" "$OUT/snapshot.wasm")
wasm-tools component new "$OUT/snapshot.wasm" -o "$OUT/guest.wasm"
ls -l "$OUT/guest.wasm"
