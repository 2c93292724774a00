#!/usr/bin/env bash
# device-check.sh: everything a GPU machine needs to check relabel, in one
# call (issue 37 target 4). It runs from a bundle that scripts/device-bundle.sh
# builds (this script sits in it): the machine needs no Go toolchain and no
# network, only python3 with numpy, scikit-learn and pyarrow for the peer, and
# the NVIDIA driver for the GPU steps.
#
#   bash BUNDLE/device-check.sh [--out DIR] [--budget SECONDS] [--only STEPS] [--dry]
#
# Steps, in order of value (a step that would not fit in what is left of
# --budget is skipped, and says so):
#   env        machine, driver, bundle checksums, binaries unpacked
#   gpu-test   the cuda-tagged test binary of ./gpu (kNN, LLC and rounds
#              conformance suites on the device): must PASS, not SKIP
#   gpu-rounds BenchmarkRounds at 1,000,000 items (RELABEL_ROUNDS_ITEMS): one
#              round's sampling and MAP-EM on the device (gpu.Rounds) beside
#              all the machine's cores (engine.CPU), items/s, their ratio, and
#              the share of states the device computes bit for bit as the CPU
#   gpu-bench  BenchmarkSearch and BenchmarkCode: the CUDA searcher and coder
#              beside knn.CPU and llc.CPU on all the machine's cores
#   fashion    fashion_mnist_pca50 noisy-idn-0.4 (70,000 x 50), relabel's
#              defaults, --device cpu and --device cuda, each scored against
#              the truth, and the peer (peer_knn.py: scikit-learn's exact
#              10-NN and kNN vote) beside them
#   cores      the default run (--device cpu) at GOMAXPROCS 1, 2, 4, 8 and 16:
#              wall, CPU seconds, busy cores, speed-up over GOMAXPROCS 1
#   synth-1m   1,000,000 synthetic rows (d 64, C 20), --device cuda and cpu
#              (ivf mode, every round in one stage: kNN, LLC and the rounds'
#              sampling and MAP-EM on the device), each scored against the
#              truth; both wall times, their ratio (the target: the device
#              run >= 3x faster than the CPU run on all the machine's cores)
#              and how many cleaned labels differ
#
# --only gpu-test,fashion,... runs only those steps (env always runs).
# Without a GPU (no nvidia-smi, or no libcuda.so.1) the GPU steps say they
# skipped and the CPU steps run. --dry skips every heavy step too: it checks
# the bundle (checksums, the binaries start, the test list, the peer's
# imports) and writes the results file, for CI and for a machine without a
# GPU. Results: DIR/device-check.txt (one file: a RESULT line per figure, then
# each step's command and the tail of its output); the whole log beside it in
# DIR/device-check.log. DIR defaults to $OUT, else ./device-check-out.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/device-check-out}
budget=420
dry=0
only=""
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--out=*) out=${1#--out=}; shift ;;
	--budget) budget=$2; shift 2 ;;
	--budget=*) budget=${1#--budget=}; shift ;;
	--only) only=$2; shift 2 ;;
	--only=*) only=${1#--only=}; shift ;;
	--dry) dry=1; shift ;;
	-h | --help) sed -n '2,40p' "$0"; exit 0 ;;
	*) echo "device-check.sh: unknown argument $1 (want --out DIR, --budget SECONDS, --only STEPS, --dry)" >&2; exit 2 ;;
	esac
done
case $budget in '' | *[!0-9]*) echo "device-check.sh: --budget $budget: want whole seconds" >&2; exit 2 ;; esac
for s in ${only//,/ }; do
	case $s in gpu-test | gpu-rounds | gpu-bench | fashion | cores | synth-1m) ;;
	*) echo "device-check.sh: --only $only: unknown step $s (want gpu-test, gpu-rounds, gpu-bench, fashion, cores, synth-1m)" >&2; exit 2 ;;
	esac
done
# wanted STEP: whether --only leaves STEP in.
wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

mkdir -p "$out" || exit 1
results=$out/device-check.txt
log=$out/device-check.log
: >"$results"
: >"$log"
work=$(mktemp -d "${TMPDIR:-/tmp}/relabel-device.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
failed=0

say() { printf '%s %s\n' "$(date -u +%T)" "$*" | tee -a "$log" >&2; }
result() { printf 'RESULT %s\n' "$*" | tee -a "$log" >>"$results"; }
note() { printf '%s\n' "$*" >>"$results"; }
left() { echo $((budget - ($(date +%s) - start))); }

# timed NAME LIMIT CMD...: runs CMD with a time limit, its output to the log
# (and its tail to the results file), then prints NAME's wall seconds, CPU
# seconds of the process tree (user+sys), busy cores and peak RSS as one
# RESULT line. Returns CMD's status.
timed() {
	local name=$1 limit=$2
	shift 2
	local tf=$work/$name.timing of=$work/$name.out
	say "step $name: $* (limit ${limit}s)"
	note "## $name"
	note "\$ $*"
	python3 - "$tf" "$limit" "$@" >"$of" 2>&1 <<'PY'
# Runs the command with its output lines stamped with the seconds since it
# started, and samples its CPU time (/proc/PID/stat) twice a second: the
# timeline of busy cores shows which phases run on one core.
import json, os, resource, subprocess, sys, threading, time
tf, limit, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
tick = os.sysconf("SC_CLK_TCK")
t0 = time.time()
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
def pump():
    for line in p.stdout:
        sys.stdout.write("[%7.2f] %s" % (time.time() - t0, line.decode(errors="replace")))
        sys.stdout.flush()
th = threading.Thread(target=pump)
th.start()
samples, last = [], (t0, 0.0)
rc = None
while rc is None:
    try:
        rc = p.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        if time.time() - t0 > limit:
            p.kill()
            p.wait()
            rc = 124
            break
        try:
            f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
            cpu = (int(f[11]) + int(f[12])) / tick
            now = time.time()
            samples.append(round((cpu - last[1]) / (now - last[0]), 1))
            last = (now, cpu)
        except (OSError, IndexError, ValueError):
            pass
th.join()
wall = time.time() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
print("busy cores every 0.5 s: " + " ".join("%g" % x for x in samples))
json.dump({"rc": rc, "wall": wall, "cpu": cpu, "rss_mib": ru.ru_maxrss / 1024}, open(tf, "w"))
PY
	cat "$of" >>"$log"
	tail -n 6 "$of" | cut -c1-2000 | sed 's/^/    /' >>"$results"
	python3 - "$tf" "$name" >>"$results" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
print("RESULT %s rc=%d wall_s=%.2f cpu_s=%.2f busy_cores=%.2f peak_rss_mib=%.0f" % (
    sys.argv[2], t["rc"], t["wall"], t["cpu"], t["cpu"] / max(t["wall"], 1e-9), t["rss_mib"]))
PY
	tail -n 1 "$results" | tee -a "$log" >&2
	local rc
	rc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rc"])' "$tf")
	[ "$rc" = 0 ] || failed=1
	return "$rc"
}

# fits NAME SECONDS: whether a step needing about SECONDS fits in the budget;
# says it skipped when not.
fits() {
	local l
	l=$(left)
	if [ "$l" -lt "$2" ]; then
		result "$1 skipped: needs about ${2}s, ${l}s of the budget left"
		return 1
	fi
}

skip() { result "$1 skipped: $2"; }

# ---- env ------------------------------------------------------------------
say "device-check.sh in $here, results in $results, budget ${budget}s, dry=$dry"
note "# relabel device check"
note "date: $(date -u +%FT%TZ)"
note "host: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
note "cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
[ -f "$here/MANIFEST" ] && sed 's/^/bundle: /' "$here/MANIFEST" >>"$results"
if (cd "$here" && sha256sum -c --quiet SHA256SUMS) >>"$log" 2>&1; then
	result "bundle checksums ok"
else
	result "bundle checksums FAILED"
	echo "device-check.sh: the bundle is damaged (sha256sum -c SHA256SUMS in $here)" >&2
	exit 1
fi

bin=$work/bin
mkdir -p "$bin"
# unxz FILE: decompressed on stdout, by xz or, where it is missing, Python's lzma.
unxz() {
	if command -v xz >/dev/null; then
		xz -dc "$1"
	else
		python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
	fi
}
for f in "$here"/bin/*.xz; do
	unxz "$f" >"$bin/$(basename "${f%.xz}")" && chmod +x "$bin/$(basename "${f%.xz}")" || {
		result "unpacking $f FAILED"
		exit 1
	}
done
relabel=$bin/relabel
gputest=$bin/gpu.test

# libcuda.so.1: the driver's library, where the loader finds it or where
# container runtimes mount it.
gpu=1
why=""
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib64 /usr/local/cuda/compat /usr/lib/wsl/lib; do
		if [ -e "$d/libcuda.so.1" ]; then
			export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
			break
		fi
	done
fi
if ! nvidia-smi -L >>"$log" 2>&1; then
	gpu=0
	why="no GPU (nvidia-smi -L failed or absent)"
fi
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo none)"
note "LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-}"
if [ "$dry" = 1 ]; then
	gpu=0
	why="dry run"
fi
# The cuda binaries link libcuda.so.1: without it they do not start at all.
cudalib=1
if ! "$relabel" version >>"$log" 2>&1; then
	cudalib=0
	gpu=0
	why="${why:+$why; }the cuda build does not start here (no libcuda.so.1?)"
	result "relabel version FAILED: $(tail -n 1 "$log")"
else
	result "$("$relabel" version)"
fi
note "python3: $(python3 -c 'import sys; print(sys.version.split()[0])' 2>&1)"
peer=1
if ! python3 -c 'import numpy, sklearn, pyarrow' >>"$log" 2>&1; then
	peer=0
	result "peer unavailable: python3 lacks numpy, scikit-learn or pyarrow"
else
	result "peer python3 with numpy $(python3 -c 'import numpy; print(numpy.__version__)'), scikit-learn $(python3 -c 'import sklearn; print(sklearn.__version__)'), pyarrow $(python3 -c 'import pyarrow; print(pyarrow.__version__)')"
fi
python3 -m py_compile "$here/peer_knn.py" || { result "peer_knn.py does not compile"; failed=1; }
if [ "$cudalib" = 1 ]; then
	tests=$("$gputest" -test.list '.*' 2>>"$log" | tr '\n' ' ')
	result "gpu.test lists: $tests"
	[ -n "$tests" ] || failed=1
	for t in TestRounds BenchmarkRounds; do
		[[ " $tests " == *" $t "* ]] || { result "gpu.test lacks $t"; failed=1; }
	done
fi

data=$here/data/fashion_mnist_pca50
fashion=$data/noisy-idn-0.4.parquet
truth=$data/truth.i32

# ---- gpu-test ---------------------------------------------------------------
if ! wanted gpu-test; then
	skip gpu-test "not in --only"
elif [ "$gpu" = 0 ]; then
	skip gpu-test "$why"
elif fits gpu-test 60; then
	# -test.v: the device is logged (gpu.Device()); a SKIP here means the
	# device was not usable, which is a failure on a GPU machine.
	timed gpu-test 150 "$gputest" -test.v -test.count=1 -test.timeout=140s
	p=$(grep -c -- '--- PASS' "$log" || true)
	s=$(grep -c -- '--- SKIP' "$log" || true)
	f=$(grep -c -- '--- FAIL' "$log" || true)
	result "gpu-test subtests pass=$p skip=$s fail=$f"
	grep -m 3 -i 'device' "$work/gpu-test.out" | sed 's/^/    /' >>"$results"
	[ "$s" = 0 ] && [ "$f" = 0 ] || failed=1
fi

# ---- gpu-rounds -------------------------------------------------------------
if ! wanted gpu-rounds; then
	skip gpu-rounds "not in --only"
elif [ "$gpu" = 0 ]; then
	skip gpu-rounds "$why"
elif fits gpu-rounds 90; then
	# One round of a million items: building them and the CPU's reference
	# round take about as long as the three timed rounds of each backend.
	RELABEL_ROUNDS_ITEMS=${RELABEL_ROUNDS_ITEMS:-1000000} timed gpu-rounds 300 \
		"$gputest" -test.run '^$' -test.bench '^BenchmarkRounds$' -test.benchtime 3x -test.timeout=290s
	sed -n 's/^\[ *[0-9.]*\] \(BenchmarkRounds.*\)/RESULT bench \1/p' "$work/gpu-rounds.out" | tr -s ' \t' ' ' | tee -a "$log" >>"$results"
	python3 - "$work/gpu-rounds.out" >>"$results" <<'PY'
import re, sys
rate = {}
for line in open(sys.argv[1]):
    m = re.search(r"BenchmarkRounds/(cuda|cpu)/\S+\s.*?([0-9.e+]+) items/s", line)
    if m:
        rate[m.group(1)] = float(m.group(2))
if "cuda" in rate and "cpu" in rate:
    print("RESULT gpu-rounds cuda %.0f items/s, cpu %.0f items/s: %.2fx" % (rate["cuda"], rate["cpu"], rate["cuda"] / rate["cpu"]))
else:
    print("RESULT gpu-rounds no items/s to compare (see the log)")
PY
fi

# ---- gpu-bench --------------------------------------------------------------
if ! wanted gpu-bench; then
	skip gpu-bench "not in --only"
elif [ "$gpu" = 0 ]; then
	skip gpu-bench "$why"
elif fits gpu-bench 60; then
	timed gpu-bench 150 "$gputest" -test.run '^$' -test.bench '^Benchmark(Search|Code)$' -test.benchtime 5x -test.timeout=140s
	# The lines are stamped "[   t.tt] Benchmark...": keep the benchmark's own words.
	sed -n 's/^\[ *[0-9.]*\] \(Benchmark.*\)/RESULT bench \1/p' "$work/gpu-bench.out" | tr -s ' \t' ' ' | tee -a "$log" >>"$results"
fi

# relabel_run NAME LIMIT OUTDIR [flags...]: relabel run on fashion or another
# input, then its accuracy against the truth when one is given (TRUTH=...).
relabel_run() {
	local name=$1 limit=$2 outdir=$3
	shift 3
	timed "$name" "$limit" "$relabel" run --output "$outdir" --report=false "$@" || return
	if [ -n "${TRUTH:-}" ]; then
		local acc
		acc=$("$relabel" eval --output "$outdir" --truth "$TRUTH" --json --report=false 2>>"$log" |
			python3 -c 'import json,sys; r=json.load(sys.stdin)["report"]; print(" ".join("%s=%s" % (k, r[k]) for k in ("noisy_accuracy", "cleaned_accuracy", "fixed", "broken") if k in r))' 2>>"$log")
		result "$name accuracy: ${acc:-unreadable (see the log)}"
	fi
	[ -f "$outdir/summary.json" ] && python3 - "$outdir/summary.json" "$name" >>"$results" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
keep = {k: s[k] for k in ("rows", "changed", "neighbours", "device", "timings") if k in s}
print("RESULT %s summary %s" % (sys.argv[2], json.dumps(keep, sort_keys=True)))
PY
}

# labels_differ DIR1 DIR2: how many rows' clean_label differ between two
# runs' outputs (rows by id), "?" when they cannot be read.
labels_differ() {
	local n
	n=$(python3 - "$1" "$2" <<'PY' 2>>"$log"
import glob, sys
import pyarrow.parquet as pq
import pyarrow as pa, pyarrow.ipc as ipc
def labels(d):
    ts = [ipc.open_file(f).read_all().select(["id", "clean_label"]) for f in sorted(glob.glob(d + "/*.arrow"))]
    ts += [pq.read_table(f, columns=["id", "clean_label"]) for f in sorted(glob.glob(d + "/*.parquet"))]
    t = pa.concat_tables(ts).sort_by("id")
    return t.column("clean_label").to_pylist()
a, b = labels(sys.argv[1]), labels(sys.argv[2])
print(sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b)))
PY
	)
	echo "${n:-?}"
}

# ---- fashion ----------------------------------------------------------------
heavy=1
[ "$dry" = 1 ] && heavy=0
if ! wanted fashion; then
	skip fashion "not in --only"
elif [ "$heavy" = 0 ]; then
	skip fashion "dry run"
elif [ "$cudalib" = 0 ]; then
	skip fashion "the cuda build does not start here"
else
	if fits fashion-cpu 30; then
		# --verbose: Prism's log of stages, stamped, beside the busy-cores timeline
		TRUTH=$truth relabel_run fashion-cpu 120 "$work/fashion-cpu" --input "$fashion" --device cpu --verbose
	fi
	if [ "$gpu" = 0 ]; then
		skip fashion-cuda "$why"
	elif fits fashion-cuda 30; then
		TRUTH=$truth relabel_run fashion-cuda 120 "$work/fashion-cuda" --input "$fashion" --device cuda
		if [ -d "$work/fashion-cpu" ] && [ -d "$work/fashion-cuda" ]; then
			result "fashion cpu vs cuda: $(labels_differ "$work/fashion-cpu" "$work/fashion-cuda") of 70000 cleaned labels differ"
		fi
	fi
	if [ "$peer" = 0 ]; then
		skip fashion-peer "python3 lacks numpy, scikit-learn or pyarrow"
	elif fits fashion-peer 20; then
		timed fashion-peer 120 python3 "$here/peer_knn.py" "$fashion" "$truth" &&
			result "fashion-peer $(tail -n 1 "$work/fashion-peer.out")"
	fi
fi

# ---- cores ------------------------------------------------------------------
if ! wanted cores; then
	skip cores "not in --only"
elif [ "$heavy" = 0 ]; then
	skip cores "dry run"
elif [ "$cudalib" = 0 ]; then
	skip cores "the cuda build does not start here"
else
	for p in 16 8 4 2 1; do
		# GOMAXPROCS 1 takes the longest: it goes last, so that a short
		# budget still gives the rest.
		need=$((10 + 64 / p))
		[ "$p" -gt "$(nproc)" ] && { skip "cores-gomaxprocs-$p" "only $(nproc) CPUs"; continue; }
		if fits "cores-gomaxprocs-$p" "$need"; then
			GOMAXPROCS=$p timed "cores-gomaxprocs-$p" $(($(left) - 5)) \
				"$relabel" run --input "$fashion" --output "$work/cores-$p" --report=false --device cpu
		fi
	done
	python3 - "$work" >>"$results" <<'PY'
import json, os, sys
w = sys.argv[1]
t = {}
for p in (1, 2, 4, 8, 16):
    f = os.path.join(w, "cores-gomaxprocs-%d.timing" % p)
    if os.path.exists(f):
        r = json.load(open(f))
        if r["rc"] == 0:
            t[p] = r
if 1 in t:
    for p in sorted(t):
        print("RESULT cores GOMAXPROCS=%d wall_s=%.2f speedup=%.2fx efficiency=%.2f busy_cores=%.2f"
              % (p, t[p]["wall"], t[1]["wall"] / t[p]["wall"], t[1]["wall"] / t[p]["wall"] / p, t[p]["cpu"] / t[p]["wall"]))
else:
    print("RESULT cores no GOMAXPROCS=1 run to compare against")
PY
	# The scan's outputs must be the same bytes at every GOMAXPROCS.
	ref=""
	for p in 1 2 4 8 16; do
		d=$work/cores-$p
		[ -f "$d/summary.json" ] || continue
		# every shard (Arrow by default), not summary.json, which holds timings
		sum=$(cd "$d" && find . -maxdepth 1 -type f ! -name summary.json ! -name report.html | sort | xargs -r cat | sha256sum | cut -c1-16)
		[ "$sum" = e3b0c44298fc1c14 ] && sum="no-shards"
		[ -z "$ref" ] && ref=$sum
		result "cores GOMAXPROCS=$p shards sha256 $sum $([ "$sum" = "$ref" ] && echo same || echo DIFFERS)"
		[ "$sum" = "$ref" ] && [ "$sum" != no-shards ] || failed=1
	done
fi

# ---- synth-1m -----------------------------------------------------------------
if ! wanted synth-1m; then
	skip synth-1m "not in --only"
elif [ "$heavy" = 0 ]; then
	skip synth-1m "dry run"
elif [ "$cudalib" = 0 ]; then
	skip synth-1m "the cuda build does not start here"
elif fits synth-1m-write 15; then
	timed synth-1m-write 60 "$relabel" synth --output "$work/synth" --rows 1000000 --d 64 --classes 20 --shards 8
	if [ "$gpu" = 1 ] && fits synth-1m-cuda 60; then
		TRUTH=$work/synth/truth.i32 relabel_run synth-1m-cuda $(($(left) - 5)) "$work/synth-cuda" \
			--input "$work/synth/part-*" --device cuda
	elif [ "$gpu" = 0 ]; then
		skip synth-1m-cuda "$why"
	fi
	if fits synth-1m-cpu 70; then
		TRUTH=$work/synth/truth.i32 relabel_run synth-1m-cpu $(($(left) - 3)) "$work/synth-cpu" \
			--input "$work/synth/part-*" --device cpu
	fi
	# The end-to-end figure of the rounds on the device: both runs' wall
	# times and their ratio, against the target of 3x the CPU run on all
	# of the machine's cores.
	python3 - "$work/synth-1m-cuda.timing" "$work/synth-1m-cpu.timing" "$(nproc)" >>"$results" <<'PY'
import json, os, sys
t = {}
for k, f in (("cuda", sys.argv[1]), ("cpu", sys.argv[2])):
    if os.path.exists(f):
        r = json.load(open(f))
        if r["rc"] == 0:
            t[k] = r["wall"]
if len(t) == 2:
    x = t["cpu"] / t["cuda"]
    print("RESULT synth-1m end to end: cuda wall_s=%.2f, cpu wall_s=%.2f (%s cores): cuda %.2fx faster, target >= 3x: %s"
          % (t["cuda"], t["cpu"], sys.argv[3], x, "met" if x >= 3 else "NOT met"))
else:
    print("RESULT synth-1m end to end: no ratio, runs that passed: %s" % (", ".join(sorted(t)) or "none"))
PY
	tail -n 1 "$results" | tee -a "$log" >&2
	if [ -d "$work/synth-cuda" ] && [ -d "$work/synth-cpu" ]; then
		result "synth-1m cpu vs cuda: $(labels_differ "$work/synth-cpu" "$work/synth-cuda") of 1000000 cleaned labels differ"
	fi
fi

result "done in $(($(date +%s) - start))s, $([ "$failed" = 0 ] && echo 'every step that ran passed' || echo 'SOME STEP FAILED (see above)')"
exit "$failed"
