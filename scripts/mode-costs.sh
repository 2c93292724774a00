#!/usr/bin/env bash
# What a default run costs in every mode, measured on one synthetic input, and
# written into docs/PERFORMANCE.md between the "mode-costs" markers.
#
#   scripts/mode-costs.sh [--rows N] [--d D] [--keep DIR]
#
# A default is a promise in every mode: before one changes, run this and
# compare the table with the one in git. The modes are the ones users run:
# the exact search (the default below 50,000 rows), the ivf search, a
# directory lake under --incremental (its first run, a rerun with nothing
# new, a 1% append and a full run over the appended data), simulated
# annotators, and separate worker processes (a `relabel worker` pool,
# EXTERNAL). Every run uses the defaults but for the flag its mode needs.
# Wall and CPU are /usr/bin/time's for the whole relabel process (and, for
# workers, the pool's and its workers' CPU too); peak is the largest RSS of
# one process. Timings depend on the machine and its load: the table says
# both. Not a test: nothing here fails on a slow machine.
set -euo pipefail
cd "$(dirname "$0")/.."

rows=10000 # before the append; the append is 1% more
d=256
keep=""
while [ $# -gt 0 ]; do
	case "$1" in
	--rows) rows=$2; shift 2 ;;
	--d) d=$2; shift 2 ;;
	--keep) keep=$2; shift 2 ;;
	*) echo "mode-costs: unknown argument $1 (use --rows N, --d D, --keep DIR)" >&2; exit 2 ;;
	esac
done
if [ $((rows % 100)) -ne 0 ] || [ "$rows" -lt 1000 ]; then
	echo "mode-costs: --rows must be a multiple of 100, at least 1000 (the append is one shard of rows/100)" >&2
	exit 2
fi
command -v /usr/bin/time >/dev/null || { echo "mode-costs: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
bin=$work/relabel
go build -o "$bin" ./cmd/relabel
rev=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo "+changes")
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# 101 shards of rows/100: the first 100 are the input, the last one the
# append. The clean copy has the same rows, ids and features (synth draws each
# row from its id), with the true labels.
shard=$((rows / 100))
# Classes closer and rows noisier than synth's defaults, so that the
# cleaned accuracy says something (with the defaults every mode is right on
# every row at d 256).
hard="--separation 0.15 --jitter 1.5"
"$bin" synth --rows $((rows + shard)) --d "$d" --classes 10 --noise 0.4 $hard --shards 101 --output "$work/noisy" >/dev/null
"$bin" synth --rows $((rows + shard)) --d "$d" --classes 10 --noise 0 $hard --shards 101 --output "$work/clean" >/dev/null
mkdir -p "$work/in" "$work/lake" "$work/clean-in"
for f in "$work"/noisy/part-*.parquet; do
	case "$f" in *part-00100.parquet) continue ;; esac
	cp "$f" "$work/in/" && cp "$f" "$work/lake/"
done
for f in "$work"/clean/part-*.parquet; do
	case "$f" in *part-00100.parquet) continue ;; esac
	cp "$f" "$work/clean-in/"
done
"$bin" noise --input "$work/clean-in/*.parquet" --output "$work/crowd.parquet" --kind annotators >/dev/null
truth=$work/clean/truth.i32

results=$work/results.tsv
: >"$results"

# record NAME OUTPUT WALL CPU RSS_KB: one row of the table, with the cleaned
# accuracy of OUTPUT against the truth.
record() {
	local name=$1 out=$2 wall=$3 cpu=$4 rss=$5 acc
	acc=$("$bin" eval --output "$out" --truth "$truth" --report=false 2>&1 | awk '/^cleaned accuracy/ {print $3}') || true
	[ -n "$acc" ] || { "$bin" eval --output "$out" --truth "$truth" --report=false >&2 || true; echo "mode-costs: relabel eval of $name failed" >&2; exit 1; }
	printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$wall" "$cpu" "$((rss / 1024))" "$acc" >>"$results"
	echo "mode-costs: $name: wall ${wall}s, CPU ${cpu}s, peak $((rss / 1024)) MiB, accuracy $acc" >&2
}

# measure NAME OUTPUT CMD...: runs CMD under /usr/bin/time and records it.
measure() {
	local name=$1 out=$2
	shift 2
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >"$work/log" 2>&1 || {
		cat "$work/log" >&2
		echo "mode-costs: $name failed" >&2
		exit 1
	}
	read -r wall user sys rss <"$work/time"
	record "$name" "$out" "$wall" "$(echo "$user + $sys" | bc)" "$rss"
}

measure exact "$work/out-exact" "$bin" run --input "$work/in/*.parquet" --output "$work/out-exact" --report=false
measure ivf "$work/out-ivf" "$bin" run --input "$work/in/*.parquet" --output "$work/out-ivf" --neighbours ivf --report=false
measure annotators "$work/out-ann" "$bin" run --input "$work/crowd.parquet" --output "$work/out-ann" --report=false
measure "incremental, first run" "$work/out-lake" "$bin" run --input "$work/lake/*.parquet" --output "$work/out-lake" --incremental --report=false
measure "incremental, nothing new" "$work/out-lake" "$bin" run --input "$work/lake/*.parquet" --output "$work/out-lake" --incremental --report=false
cp "$work/noisy/part-00100.parquet" "$work/lake/"
measure "incremental, +1%" "$work/out-lake" "$bin" run --input "$work/lake/*.parquet" --output "$work/out-lake" --incremental --report=false
measure "full run over the +1%" "$work/out-full" "$bin" run --input "$work/lake/*.parquet" --output "$work/out-full" --report=false

# Workers in separate processes: a pool on loopback, the run submitted to it.
/usr/bin/time -f '%U %S %M' -o "$work/pool-time" "$bin" worker --listen 127.0.0.1:0 --work-dir "$work" >"$work/pool-log" 2>&1 &
pool=$!
for _ in $(seq 100); do
	addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$work/pool-log" | head -1 || true)
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { cat "$work/pool-log" >&2; echo "mode-costs: the worker pool did not say its address" >&2; exit 1; }
measure_workers() {
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$bin" run --input "$work/in/*.parquet" --output "$work/out-workers" --report=false \
		--environment_type=EXTERNAL --environment_config="$addr" --worker_binary="$bin" >"$work/log" 2>&1 || {
		cat "$work/log" "$work/pool-log" >&2
		echo "mode-costs: workers failed" >&2
		exit 1
	}
	# The pool is /usr/bin/time's child: stopped, it stops its workers and
	# time writes the pool's CPU with theirs.
	pkill -TERM -P "$pool" 2>/dev/null || true
	wait "$pool" || true
	read -r wall user sys rss <"$work/time"
	read -r puser psys prss <"$work/pool-time"
	record "workers (EXTERNAL pool)" "$work/out-workers" "$wall" "$(echo "$user + $sys + $puser + $psys" | bc)" "$((rss > prss ? rss : prss))"
}
measure_workers
if ! (cd "$work/out-exact" && for f in *.arrow; do cmp -s "$f" "../out-workers/$f" || exit 1; done); then
	echo "mode-costs: the workers' output differs from the embedded run's" >&2
	exit 1
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# The table, relative to the exact run (the default for this size) and, for
# the incremental reruns, to the full run over the same data.
table=$work/table.md
{
	echo "<!-- mode-costs: generated by scripts/mode-costs.sh; do not edit by hand -->"
	echo "$(date -u +%Y-%m-%d), relabel at $rev, \`scripts/mode-costs.sh --rows $rows --d $d\`: \`relabel synth $hard\`, $rows x $d, 10 classes, 40% symmetric noise, 100 shards (+1 for the append); $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo) GiB; load average $load0 before, $load1 after (1, 5, 15 min)."
	echo
	echo "| mode | wall | CPU | peak RSS | cleaned accuracy | wall against |"
	echo "|---|---:|---:|---:|---:|---|"
	awk -F'\t' '
		$1 == "exact" {exact = $2}
		$1 == "full run over the +1%" {full = $2}
		{name[NR] = $1; wall[NR] = $2; cpu[NR] = $3; rss[NR] = $4; acc[NR] = $5}
		END {
			for (i = 1; i <= NR; i++) {
				rel = sprintf("%.2fx exact", wall[i] / exact)
				if (name[i] ~ /nothing new|\+1%$/) rel = sprintf("%.1f%% of the full run", 100 * wall[i] / full)
				if (name[i] == "exact") rel = "-"
				printf "| %s | %.2f s | %.1f s | %d MiB | %s | %s |\n", name[i], wall[i], cpu[i], rss[i], acc[i], rel
			}
		}' "$results"
	echo "<!-- /mode-costs -->"
} >"$table"
cat "$table"

doc=docs/PERFORMANCE.md
python3 - "$doc" "$table" <<'EOF'
import sys
doc, table = sys.argv[1], open(sys.argv[2]).read()
s = open(doc).read()
start = s.index("<!-- mode-costs:")
end = s.index("<!-- /mode-costs -->") + len("<!-- /mode-costs -->\n")
open(doc, "w").write(s[:start] + table + s[end:])
EOF
echo "mode-costs: wrote the table into $doc" >&2
