#!/usr/bin/env bash
# The figures a user sees, on a release build (`just bench-user`):
# - first run: `wrepl eval -e 1` with an empty cache directory, and with an
#   unwritable one (the guest is embedded precompiled: nothing to compile);
# - Grep and Glob against the ripgrep CLI, process start included, over a
#   generated tree shaped like a large repository (files, bytes and seconds
#   printed);
# - the installed binary's size.
# Needs hyperfine and rg (Debian: apt-get install hyperfine ripgrep).
#
#   bench/user-figures.sh [FILES]     (default 15000 files)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILES=${1:-15000}
for tool in hyperfine rg; do
  command -v "$tool" >/dev/null || { echo "user-figures: $tool is missing (apt-get install hyperfine ripgrep)" >&2; exit 1; }
done
cargo build --release --locked --bin wrepl --manifest-path "$ROOT/Cargo.toml" >&2
WREPL="$ROOT/target/release/wrepl"
WORK=$(mktemp -d /tmp/wrepl-user-figures.XXXXXX)
trap 'chmod -R u+w "$WORK"; rm -rf "$WORK"' EXIT

echo "== first run (release build, $(date -u +%F))"
mkdir -p "$WORK/ro-cache" && chmod 0555 "$WORK/ro-cache"
hyperfine --warmup 2 --runs 20 --export-json "$WORK/first.json" \
  -n 'empty cache' "XDG_CACHE_HOME=\$(mktemp -d) $WREPL eval -e 1" \
  -n 'unwritable cache' "XDG_CACHE_HOME=$WORK/ro-cache $WREPL eval -e 1" >/dev/null
python3 - "$WORK/first.json" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"  wrepl eval -e 1, {r['command']}: median {r['median'] * 1000:.1f} ms")
EOF

echo "== Grep against rg over a generated tree"
python3 - "$WORK/tree" "$FILES" <<'EOF'
# A tree shaped like a large source repository: nested directories, source
# files of a few KiB, a .gitignore'd build directory, some binary files.
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
words = ["fn", "let", "impl", "struct", "return", "match", "self", "pub", "use", "mod", "async", "await",
         "value", "error", "result", "config", "parse", "write", "read", "buffer", "index", "token"]
os.makedirs(os.path.join(root, "target"), exist_ok=True)
with open(os.path.join(root, ".gitignore"), "w") as f:
    f.write("target/\n")
for i in range(n):
    d = os.path.join(root, f"crate{i % 40}", "src", f"mod{i % 23}", f"sub{i % 7}")
    os.makedirs(d, exist_ok=True)
    lines = []
    for j in range(rng.randint(40, 160)):
        lines.append("    " + " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + ";")
        if rng.random() < 0.002:
            lines.append("fn main() {}")
    ext = rng.choice(["rs", "rs", "rs", "toml", "md", "js"])
    with open(os.path.join(d, f"file{i}.{ext}"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if i % 500 == 0:
        with open(os.path.join(d, f"blob{i}.bin"), "wb") as f:
            f.write(bytes(rng.getrandbits(8) for _ in range(4096)))
        with open(os.path.join(root, "target", f"junk{i}.rs"), "w") as f:
            f.write("fn main() {}\n" * 100)
EOF
# A git repository, so that rg honours .gitignore as wrepl does without one.
git -C "$WORK/tree" init -q
files=$(find "$WORK/tree" -path "$WORK/tree/.git" -prune -o -type f -print | wc -l)
bytes=$(du -sb "$WORK/tree" | cut -f1)
echo "  tree: $files files, $bytes bytes"
cd "$WORK/tree"
# medians RESULTS.json [REFERENCE...]: each command's median, and the ratio of
# each other command's to each reference's (by default the first command).
medians() {
  python3 - "$@" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
refs = sys.argv[2:] or [results[0]["command"]]
median = {x["command"]: x["median"] for x in results}
for x in results:
    ratios = ", ".join(f"{x['median'] / median[r]:.2f}x {r}" for r in refs if r != x["command"])
    print(f"  {x['command']}: median {x['median'] * 1000:.1f} ms" + (f" ({ratios})" if ratios and x["command"] not in refs else ""))
PY
}
# Both list the files that match, respecting .gitignore; the page cache is warm.
printf '%s\n' "(await Grep({pattern: String.raw\`fn\\s+main\`, output_mode: 'files_with_matches'})).numFiles" > "$WORK/grep.js"
hyperfine --warmup 3 --runs 15 --export-json "$WORK/grep.json" \
  -n 'rg -l' "rg -l -e 'fn\\s+main'" \
  -n 'wrepl Grep' "$WREPL eval --root . $WORK/grep.js" \
  -n 'wrepl Grep, one core' "taskset -c 0 $WREPL eval --root . $WORK/grep.js" >/dev/null
medians "$WORK/grep.json"
echo "  matching files: rg $(rg -l -e 'fn\s+main' | wc -l), wrepl $("$WREPL" eval --root . "$WORK/grep.js")"

echo "== Grep's content mode against rg -n over the same tree"
# Both print every matching line with its path and number. wrepl's lines come
# in walk order, the same every run; rg's plain run prints them in the order
# its threads finish, and --sort path gives the same guarantee as wrepl's on
# one thread.
printf '%s\n' "(await Grep({pattern: String.raw\`fn\\s+main\`, output_mode: 'content', head_limit: 0})).numLines" > "$WORK/content.js"
hyperfine --warmup 3 --runs 15 --export-json "$WORK/content.json" \
  -n 'rg -n' "rg -n -e 'fn\\s+main'" \
  -n 'rg -n --sort path' "rg -n --sort path -e 'fn\\s+main'" \
  -n 'wrepl Grep content' "$WREPL eval --root . $WORK/content.js" >/dev/null
medians "$WORK/content.json" 'rg -n' 'rg -n --sort path'
echo "  matching lines: rg $(rg -n -e 'fn\s+main' | wc -l), wrepl $("$WREPL" eval --root . "$WORK/content.js")"

echo "== Glob against rg --files over the same tree"
# Both walk the whole tree with .gitignore honoured; rg prints every match,
# Glob returns the 100 most recently modified (it reads each match's mtime).
printf '%s\n' "(await Glob({pattern: '**/*.rs'})).numFiles" > "$WORK/glob.js"
hyperfine --warmup 3 --runs 15 --export-json "$WORK/glob.json" \
  -n 'rg --files' "rg --files -g '*.rs'" \
  -n 'wrepl Glob' "$WREPL eval --root . $WORK/glob.js" >/dev/null
medians "$WORK/glob.json"
echo "  matching files: rg $(rg --files -g '*.rs' | wc -l), wrepl lists the newest $("$WREPL" eval --root . "$WORK/glob.js")"

echo "== binary"
echo "  $WREPL: $(stat -c %s "$WREPL") bytes ($(( $(stat -c %s "$WREPL") / 1048576 )) MiB)"
