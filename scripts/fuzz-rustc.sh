#!/usr/bin/env bash
# The rustc wrapper of `scripts/fuzz.sh --shared` (CI): instrument only wrepl's
# own crates (the `wrepl` library and the fuzz crate with its targets) for
# libFuzzer's coverage, with debug assertions and `--cfg fuzzing`, and
# compile every dependency exactly as the test build does. The dependencies
# are then the test build's own artifacts in the shared target directory,
# and CI does not compile the whole tree a second time.
#
#   CARGO_BUILD_RUSTC_WRAPPER=scripts/fuzz-rustc.sh WREPL_FUZZ_ROOT=<checkout> cargo build ...
set -euo pipefail
rustc="$1"
shift
root="${WREPL_FUZZ_ROOT:?WREPL_FUZZ_ROOT must name the checkout}"
own=0
for a in "$@"; do
    case "$a" in
        # The fuzz crate is its workspace's member (cargo passes a relative
        # path); wrepl is a path dependency (an absolute path). Build
        # scripts run at build time and are never instrumented.
        build.rs | */build.rs) own=0; break ;;
        src/lib.rs | fuzz_targets/*.rs | "$root"/host/src/lib.rs | "$root"/fuzz/*.rs) own=1 ;;
    esac
done
if [ "$own" = 1 ]; then
    exec "$rustc" "$@" \
        -Cpasses=sancov-module \
        -Cllvm-args=-sanitizer-coverage-level=4 \
        -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
        -Cllvm-args=-sanitizer-coverage-pc-table \
        -Cllvm-args=-sanitizer-coverage-trace-compares \
        -Cllvm-args=-sanitizer-coverage-stack-depth \
        -Cllvm-args=-simplifycfg-branch-fold-threshold=0 \
        --cfg fuzzing -Cdebug-assertions
fi
exec "$rustc" "$@"
