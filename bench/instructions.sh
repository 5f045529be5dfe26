#!/usr/bin/env bash
# Instructions per inner call (W3) and per evaluation (W2), counted by
# valgrind's callgrind: the same count on every run, where wall time on a
# shared 2-core VM moves by 20-40 % between runs. Use it to compare two builds
# of one change; the wall-time figures stay the peer harness's.
#
# Each workload runs twice, with N and 2N iterations, in a fresh process; the
# difference divided by N is the cost of one iteration, without the process
# start, the engine and the sandbox (which the two runs share).
#
#   bench/instructions.sh [N]      (default N = 5000)
#
# Needs valgrind (Debian: apt-get install valgrind) and python3. Prints one
# line per workload, and with WREPL_BENCH_TOP=k the k functions whose
# per-iteration instructions are largest (guest code shows as JIT addresses).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-5000}
WORKLOADS=${WREPL_WORKLOADS:-$ROOT/../shared/peers/workloads.json}
for tool in valgrind callgrind_annotate python3; do
  command -v "$tool" >/dev/null || { echo "instructions: $tool is missing (apt-get install valgrind python3)" >&2; exit 1; }
done
[ -f "$WORKLOADS" ] || { echo "instructions: no workloads file at $WORKLOADS (set WREPL_WORKLOADS)" >&2; exit 1; }
cargo build --release --locked --bin wrepl-bench --manifest-path "$ROOT/Cargo.toml" >&2
BENCH="$ROOT/target/release/wrepl-bench"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# W3 with n calls and W2 with n evaluations, no warm-up runs.
python3 - "$WORKLOADS" "$WORK" "$N" <<'PY'
import json, sys
src, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc = json.load(open(src))
by_id = {w["id"]: w for w in doc["workloads"]}
for k in (n, 2 * n):
    w3 = dict(by_id["W3"], warmup_runs=0, calls=k, expect=k * (k - 1) // 2)
    if "10000" not in w3["code"]:
        sys.exit("instructions: W3's code no longer names its call count (10000)")
    w3["code"] = w3["code"].replace("10000", str(k))
    w2 = dict(by_id["W2"], iterations=k, expect=k)
    json.dump(dict(doc, workloads=[w3, w2]), open(f"{work}/w{k}.json", "w"))
PY

count() { # workload file, workload id, output file -> instructions collected
  WREPL_BENCH_POOL_SLOTS=4 WREPL_BENCH_NO_HOOK=1 valgrind --tool=callgrind --callgrind-out-file="$3" \
    "$BENCH" "$1" "$2" > "$3.stdout" 2> "$3.log"
  grep -q '"check"' "$3.stdout" || { echo "instructions: $2 failed:" >&2; tail -c 2000 "$3.stdout" "$3.log" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$3.log"
}
for id in W3 W2; do
  one=$(count "$WORK/w$N.json" "$id" "$WORK/$id.1.out")
  two=$(count "$WORK/w$((2 * N)).json" "$id" "$WORK/$id.2.out")
  unit=$([ "$id" = W3 ] && echo "inner call" || echo "evaluation")
  echo "$id: $(( (two - one) / N )) instructions per $unit (N = $N)"
  if [ -n "${WREPL_BENCH_TOP:-}" ]; then
    for r in 1 2; do
      callgrind_annotate --inclusive=no "$WORK/$id.$r.out" 2>/dev/null | awk '/^ *[0-9,]+ \(/' > "$WORK/$id.$r.txt"
    done
    python3 - "$WORK/$id.1.txt" "$WORK/$id.2.txt" "$N" "$WREPL_BENCH_TOP" <<'PY'
import re, sys
def load(path):
    d = {}
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \(.*?\)\s+(.*)$", line)
        if m:
            name = "guest (JIT code)" if m.group(2).startswith("???:0x") else m.group(2).replace("???:", "")
            d[name] = d.get(name, 0) + int(m.group(1).replace(",", ""))
    return d
a, b, n, top = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
per = {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b) if k != "PROGRAM TOTALS"}
for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:top]:
    print(f"  {v:9.0f}  {k[:140]}")
PY
  fi
done
