#!/usr/bin/env bash
# Snapshot benchmarks of whole processes (the targets of the snapshot issue),
# timed from outside with farm-bench (median of RUNS, paired with a baseline):
#
#   1. resume of a session of 2 blocks that computed about 5 s: `eval --session`
#      of it, and `--fork` of it into a new session, against a fresh session;
#   2. resume of a session of 3,000 trivial blocks, against a fresh session;
#   3. the same two with --snapshot-after never (replay of the whole log), for scale.
#
#   bench/snapshots.sh [RUNS]        (default 10; needs target/release/wrepl)
#
# The in-process figures (a 10 MiB heap's snapshot, waking a context, restore
# from a snapshot against replay) are criterion's: cargo bench --bench sandbox.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${1:-10}
W=${WREPL:-$ROOT/target/release/wrepl}
[ -x "$W" ] || { echo "bench/snapshots.sh: build it first: cargo build --release --bin wrepl" >&2; exit 1; }
command -v farm-bench >/dev/null || { echo "bench/snapshots.sh: farm-bench is not on PATH" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export WREPL_STORE=$work/sessions.sqlite3
# The compile cache stays where it is: the embedded precompiled guest is used anyway.

# About 2.5 s of guest compute per block on the reference machine.
compute='let s = 0; for (let i = 0; i < 4.5e7; i++) s += i % 7; s'
echo "== setting up: a session of 2 blocks of about 2.5 s each"
start=$(date +%s.%N)
"$W" eval --session heavy -e "globalThis.a = (() => { $compute })()" -e "globalThis.b = (() => { $compute })(); a + b"
echo "   recorded in $(echo "$(date +%s.%N) - $start" | bc) s"

echo "== 1a. resume: eval --session heavy (A) vs a fresh session (B)"
farm-bench -n "$RUNS" --timeout 600 \
  --vs "sh -c 'exec $W eval --session fresh-\$\$ -e 1'" \
  -- sh -c "exec $W eval --session heavy -e 'a + b'"
echo "== 1b. fork: eval --fork heavy --session <new> (A) vs a fresh session (B)"
farm-bench -n "$RUNS" --timeout 600 \
  --vs "sh -c 'exec $W eval --session fresh-\$\$ -e 1'" \
  -- sh -c "exec $W eval --fork heavy --session heavy2-\$\$ -e 'a + b'"
echo "== 1c. for scale: the same resume replaying the whole log (--snapshot-after never)"
farm-bench -n 3 --timeout 600 -- sh -c "exec $W eval --session heavy --snapshot-after never -e 'a + b'"

echo "== setting up: a session of 3,000 trivial blocks"
args=()
for i in $(seq 1 3000); do args+=(-e "globalThis.v$i = $i"); done
"$W" eval --session many "${args[@]}" >/dev/null
echo "== 2a. resume: eval --session many (A) vs a fresh session (B)"
farm-bench -n "$RUNS" --timeout 600 \
  --vs "sh -c 'exec $W eval --session fresh-\$\$ -e 1'" \
  -- sh -c "exec $W eval --session many -e 'v3000'"
echo "== 2b. for scale: the same resume replaying the whole log (--snapshot-after never)"
farm-bench -n 3 --timeout 600 -- sh -c "exec $W eval --session many --snapshot-after never -e 'v3000'"
"$W" log verify --replay many | tail -1
