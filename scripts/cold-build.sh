#!/usr/bin/env bash
# cold-build.sh: what the README's first command costs a user who just cloned
# the repository: `go build ./cmd/relabel` with the module cache filled (as
# after `go mod download`) but an empty build cache. It builds into a
# temporary GOCACHE (the user's own cache is neither used nor touched) and
# prints wall time, CPU time (user + system, all compiler and linker
# processes), the largest process's peak memory, the package count, the
# binary's size, and the packages that took longest to compile (from the go
# command's action graph), so that what to make lighter is measured, not
# guessed.
#
#   bash scripts/cold-build.sh            # the default build
#   TAGS=openblas bash scripts/cold-build.sh
#
# Needs GNU time (/usr/bin/time, Debian package "time") for CPU and memory;
# without it only wall time is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-buildvcs=false

go mod download # the state measured: module cache filled
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GOCACHE="$tmp/cache"
tags=()
[ -n "${TAGS:-}" ] && tags=(-tags "$TAGS")

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg) before"
echo "go: $(go version)"
start=$(date +%s.%N)
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f '%U %S %M' -o "$tmp/time" go build "${tags[@]}" -debug-actiongraph="$tmp/actions.json" -o "$tmp/relabel" ./cmd/relabel
else
	go build "${tags[@]}" -debug-actiongraph="$tmp/actions.json" -o "$tmp/relabel" ./cmd/relabel
fi
end=$(date +%s.%N)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v s="$start" -v e="$end" 'BEGIN {printf "wall: %.0f s\n", e - s}'
if [ -f "$tmp/time" ]; then
	read -r user sys maxkb <"$tmp/time"
	awk -v u="$user" -v s="$sys" -v m="$maxkb" 'BEGIN {printf "cpu: %.0f s (user %.0f + system %.0f)\npeak memory of one process: %.2f GB\n", u + s, u, s, m / 1048576}'
fi
echo "packages: $(go list "${tags[@]}" -deps ./cmd/relabel | wc -l)"
echo "binary: $(du -m "$tmp/relabel" | cut -f1) MB"
echo "longest compiles (s, package):"
python3 - "$tmp/actions.json" <<'PY'
import json, sys
from datetime import datetime
def t(s):
    s = s.rstrip("Z")
    if "." in s:
        a, b = s.split(".")
        s = a + "." + b[:6]
    return datetime.fromisoformat(s)
acts = json.load(open(sys.argv[1]))
rows = []
for a in acts:
    if a.get("Mode") == "build" and a.get("TimeStart") and a.get("TimeDone"):
        rows.append(((t(a["TimeDone"]) - t(a["TimeStart"])).total_seconds(), a.get("Package", "")))
rows.sort(reverse=True)
for d, p in rows[:15]:
    print(f"  {d:6.1f}  {p}")
PY
