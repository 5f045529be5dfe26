#!/usr/bin/env bash
# Build every cargo-fuzz target in fuzz/ and run each for SECONDS_PER_TARGET
# (default 20) against a temporary copy of its committed seed corpus.
# Prints the executions per target and fails if any target crashes, leaks,
# times out on an input or did not run at all. Crash inputs are kept in
# fuzz/artifacts/<target>/ (reproduce: see README "Fuzzing").
#
#   scripts/fuzz.sh [--shared] [SECONDS_PER_TARGET] [TARGET...]
#
# Environment: WREPL_FUZZ_SANITIZER (default: address; "none" builds with
# coverage instrumentation only), WREPL_FUZZ_JOBS (cargo build jobs).
#
# --shared (CI): no sanitizer, and only wrepl's own crates (the `wrepl`
# library, the fuzz crate and its targets) are instrumented for coverage
# (scripts/fuzz-rustc.sh); every dependency is compiled exactly as the
# test build compiles it, in the root target directory, so after
# `cargo test` the fuzz build compiles wrepl and the targets only, instead of
# the whole tree again with instrumentation (about 16 minutes on 2 cores).
# The default mode (cargo-fuzz, AddressSanitizer, everything instrumented)
# is the one for long local runs.
#
# Targets: script_transform, replay_log, dispatcher, wit_values,
# record_replay, cli_output (the terminal sanitizer and the settings loader),
# shell_rules — the Bash permission matcher against real
# bash (/bin/bash under a DEBUG-trap tracer, from a thread Landlock confines
# to a temporary directory; it fails when Landlock is not fully enforced) —
# and host_diff, the same generated programs in wrepl's host and the Node.js
# host (hosts/node, transpiled here first when it is installed).
set -euo pipefail

shared=0
if [ "${1:-}" = "--shared" ]; then
    shared=1
    shift
fi
secs="${1:-20}"
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/fuzz"

sanitizer="${WREPL_FUZZ_SANITIZER:-address}"
if [ "$shared" = 0 ] && ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

if [ "$#" -gt 0 ]; then
    targets="$*"
else
    targets="$(cargo metadata --locked --no-deps --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        if "bin" in t["kind"]:
            print(t["name"])')"
fi
# host_diff compares with the Node.js host when hosts/node is installed.
if [ -x "$root/hosts/node/node_modules/.bin/node" ]; then
    (cd "$root/hosts/node" && ./node_modules/.bin/node build.mjs)
fi
jobs=()
if [ -n "${WREPL_FUZZ_JOBS:-}" ]; then jobs=(--jobs "$WREPL_FUZZ_JOBS"); fi
if [ "$shared" = 1 ]; then
    # fuzz/Cargo.toml's dev profile gives dependencies the root workspace's
    # settings (see there); wrepl itself is optimised, so it is a separate
    # unit from the test build's unoptimised, uninstrumented one.
    # Nothing else in the environment may differ from the test build's:
    # build scripts track variables (cc's track CC, CFLAGS, SOURCE_DATE_EPOCH,
    # RUSTC_BOOTSTRAP and more), and a changed one rebuilds them and all that
    # depends on them.
    export CARGO_TARGET_DIR="$root/target" CARGO_BUILD_RUSTC_WRAPPER="$root/scripts/fuzz-rustc.sh" WREPL_FUZZ_ROOT="$root"
    cargo build --locked --bins "${jobs[@]}" 2>&1 | tee "${TMPDIR:-/tmp}/wrepl-fuzz-build.log"
    # After `cargo test`, only wrepl and the fuzz crate are left to compile
    # (and libfuzzer-sys, the first time); more means a dependency's features
    # or tracked environment differ between the two builds (see
    # host/Cargo.toml), which costs CI a second build of the tree.
    compiled=$(sed -n 's/^ *Compiling \([^ ]*\) .*/\1/p' "${TMPDIR:-/tmp}/wrepl-fuzz-build.log" | tr '\n' ' ')
    echo "fuzz build (--shared) compiled: ${compiled:-nothing}"
    unset CARGO_BUILD_RUSTC_WRAPPER
    bin_dir="$root/target/debug"
else
    # cargo-fuzz needs nightly-only flags; the stable toolchain accepts them
    # with RUSTC_BOOTSTRAP (only for this build, which has its own target dir).
    export RUSTC_BOOTSTRAP=1
    # --dev: the profile in fuzz/Cargo.toml optimises dependencies and keeps
    # debug assertions; a release build of wasmtime with instrumentation is far
    # slower to compile on two cores.
    cargo fuzz build --dev -s "$sanitizer" "${jobs[@]}"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# wasmtime turns guest faults into traps with its own signal handlers.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allow_user_segv_handler=1:handle_segv=1}"
passed=0
failed=0
for t in $targets; do
    corpus="$work/corpus/$t"
    mkdir -p "$corpus" "$work/artifacts/$t"
    if [ -d "corpus/$t" ]; then cp -a "corpus/$t/." "$corpus/"; fi
    args=(-max_total_time="$secs" -print_final_stats=1 -timeout=60 -rss_limit_mb=4096
        -artifact_prefix="$work/artifacts/$t/")
    if [ -f "dict/$t.dict" ]; then args+=(-dict="dict/$t.dict"); fi
    log="$work/$t.log"
    status=ok
    if [ "$shared" = 1 ]; then
        if ! "$bin_dir/$t" "${args[@]}" "$corpus" >"$log" 2>&1; then
            status=FAILED
        fi
    elif ! cargo fuzz run --dev -s "$sanitizer" "$t" "$corpus" -- "${args[@]}" >"$log" 2>&1; then
        status=FAILED
    fi
    execs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)"
    if [ -z "$execs" ] || [ "$execs" -eq 0 ]; then status=FAILED; fi
    echo "fuzz $t: ${execs:-0} executions in ${secs}s: $status"
    if [ "$status" = ok ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        tail -n 80 "$log"
        mkdir -p "artifacts/$t"
        cp -a "$work/artifacts/$t/." "artifacts/$t/" 2>/dev/null || true
        echo "fuzz $t: crash inputs kept in fuzz/artifacts/$t/"
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
