#!/usr/bin/env bash
# Report newer patch releases of the security-critical dependencies than
# Cargo.lock holds: the wasmtime line (wasmtime, wasmtime-wizer: the same
# major version, 48.x), rustls (0.23.x), tokio and hyper (the same
# major.minor). Reads the crates registry's sparse index
# (https://index.crates.io/, or $CRATES_INDEX).
#
# A patch counts as available only when the whole set of crates it needs is
# published: every `=`-pinned dependency of the candidate version (followed
# through the pinned crates in turn; dev-dependencies and optional ones this
# build does not use are skipped) must be in the index, unyanked. wasmtime
# publishes ~40 crates per release, one by one: a release can be listed while
# one of them (say wasmtime-internal-wit-bindgen) is not, and then it cannot
# be built. Yanked versions are never candidates.
#
# One line per crate: locked version, newest same-line patch, newest release
# overall, status. Exit status: 0 (this is a report; it does not fail CI),
# except 2 when the index cannot be read and --require-index is given (CI
# passes it: CI needs the registry anyway, and a report that silently stops
# running would defeat the policy in README.md "Security").
#
# Usage: scripts/check-updates.sh [--require-index]
set -euo pipefail
cd "$(dirname "$0")/.."
require=0
for arg in "$@"; do
  case "$arg" in
    --require-index) require=1 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--require-index]" >&2; exit 64 ;;
  esac
done
exec python3 - "$require" <<'PY'
import json, os, sys, tomllib, urllib.error, urllib.request

REQUIRE = sys.argv[1] == "1"
INDEX = os.environ.get("CRATES_INDEX", "https://index.crates.io").rstrip("/")
# crate -> how many leading version components make its line
LINES = {"wasmtime": 1, "wasmtime-wizer": 1, "rustls": 2, "tokio": 2, "hyper": 2}

with open("Cargo.lock", "rb") as f:
    lock = tomllib.load(f)
locked = {}
for p in lock["package"]:
    if p.get("source", "").startswith("registry+"):
        locked.setdefault(p["name"], []).append(p["version"])

def vkey(v):
    core, _, pre = v.partition("+")[0].partition("-")
    nums = tuple(int(x) for x in core.split("."))
    # a pre-release sorts before its release
    return nums + ((0, pre) if pre else (1, ""))

def is_pre(v):
    return "-" in v.partition("+")[0]

def path(name):
    n = name.lower()
    if len(n) <= 2:
        return f"{len(n)}/{n}"
    if len(n) == 3:
        return f"3/{n[0]}/{n}"
    return f"{n[:2]}/{n[2:4]}/{n}"

class IndexError_(Exception):
    pass

_cache = {}
def releases(name):
    """version -> index entry (unyanked only); {} when the crate is unknown."""
    if name in _cache:
        return _cache[name]
    url = f"{INDEX}/{path(name)}"
    req = urllib.request.Request(url, headers={"User-Agent": "wrepl-check-updates"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read().decode()
    except urllib.error.HTTPError as e:
        if e.code in (404, 410, 451):
            body = ""
        else:
            raise IndexError_(f"{url}: HTTP {e.code}")
    except (urllib.error.URLError, OSError) as e:
        raise IndexError_(f"{url}: {e}")
    out = {}
    for line in body.splitlines():
        if line.strip():
            e = json.loads(line)
            if not e.get("yanked"):
                out[e["vers"]] = e
    _cache[name] = out
    return out

def missing_pins(name, version, seen=None):
    """The `=`-pinned dependencies (transitively) of name@version that the
    index lacks, as 'crate =version' strings."""
    seen = set() if seen is None else seen
    if (name, version) in seen:
        return []
    seen.add((name, version))
    entry = releases(name).get(version)
    if entry is None:
        return [f"{name} ={version}"]
    missing = []
    for d in entry.get("deps", []):
        req = d.get("req", "")
        if d.get("kind") == "dev" or not req.startswith("="):
            continue
        dep = d.get("package") or d["name"]
        # an optional dependency matters only when this build uses the crate
        if d.get("optional") and dep not in locked:
            continue
        missing += missing_pins(dep, req[1:].strip(), seen)
    return sorted(set(missing))

def report(name, parts):
    have = sorted(locked.get(name, []), key=vkey)
    if not have:
        return f"{name:<16} not in Cargo.lock"
    cur = have[-1]
    line = cur.split(".")[:parts]
    rels = releases(name)
    stable = [v for v in rels if not is_pre(v)]
    newest = max(stable, key=vkey) if stable else "?"
    same = sorted((v for v in stable if v.split(".")[:parts] == line), key=vkey)
    newer = [v for v in same if vkey(v) > vkey(cur)]
    top = same[-1] if same else "?"
    status = "up to date"
    if newer:
        complete = None
        skipped = []
        for v in reversed(newer):
            gaps = missing_pins(name, v)
            if gaps:
                skipped.append(f"{v} is listed but cannot be built yet (missing {', '.join(gaps[:3])}{', ...' if len(gaps) > 3 else ''})")
            else:
                complete = v
                break
        if complete:
            status = f"UPDATE AVAILABLE: {complete} (its pinned crates are all published)"
            if skipped:
                status += "; " + "; ".join(skipped)
        else:
            status = "up to date among complete releases; " + "; ".join(skipped)
    extra = f" (Cargo.lock also holds {', '.join(have[:-1])})" if len(have) > 1 else ""
    return f"{name:<16} locked {cur:<9} newest {'.'.join(line)}.x {top:<9} newest {newest:<9} {status}{extra}"

failed = False
for name, parts in LINES.items():
    try:
        print(report(name, parts))
    except IndexError_ as e:
        failed = True
        print(f"{name:<16} the crates index cannot be read: {e}")
if failed:
    if REQUIRE:
        print("check-updates: the crates index could not be read (--require-index)", file=sys.stderr)
        sys.exit(2)
    print("check-updates: warning: the crates index could not be read; nothing was checked for those crates", file=sys.stderr)
PY
