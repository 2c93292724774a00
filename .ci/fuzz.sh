#!/usr/bin/env bash
# Runs each native Go fuzz target of the readers for a bounded time, one
# target per invocation (go test -fuzz takes one target at a time).
# Crashers found land in io/<pkg>/testdata/fuzz/<Target>/: commit them, and
# go test then runs them as regression cases (every committed crasher is a
# deterministic test in the main test run).
#
# FUZZ_STRICT=1 (the default) fails on a new crasher. .ci/run sets
# FUZZ_STRICT=0: fuzzing is random, so a new find there is printed in full
# (the input, base64, to commit) and marked in the log instead of failing a
# submission whose own tests pass; the committed corpus keeps failing tests
# strict.
set -euo pipefail
cd "$(dirname "$0")/.."
# A count of inputs (Nx), not a duration: Go 1.26's fuzzing coordinator can
# report a duration's end as "context deadline exceeded", a failure with no
# crasher (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline.
FUZZTIME="${FUZZTIME:-6000x}"
FUZZ_STRICT="${FUZZ_STRICT:-1}"
found=0
# package:target pairs: the input readers (shardio), the annotation reader
# (annotio) and the report's summary.json and output shards (reportio).
for pt in shardio:FuzzParquet shardio:FuzzArrowFile shardio:FuzzArrowStream shardio:FuzzColumns \
	annotio:FuzzAnnotations reportio:FuzzSummary reportio:FuzzOutputShard; do
	pkg=${pt%%:*}
	target=${pt#*:}
	corpus=io/$pkg/testdata/fuzz/$target
	echo "== $pkg $target ($FUZZTIME)"
	before=$(ls "$corpus" 2>/dev/null | sort || true)
	# No minimisation of new interesting inputs: by default each one is
	# minimised for up to a minute, and a seed of tens of KB took a
	# target's whole time (6-12 inputs run in 10-20 s, the deadline
	# sometimes hit mid-minimisation); a crasher is still written whole.
	if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 0s "./io/$pkg"; then
		found=1
		after=$(ls "$corpus" 2>/dev/null | sort || true)
		for f in $(comm -13 <(echo "$before") <(echo "$after")); do
			echo "FUZZ CRASHER $target/$f (commit it under $corpus/):"
			base64 -w0 "$corpus/$f"
			echo
		done
	fi
done
if [ "$found" = 1 ]; then
	echo "fuzzing found crashers (above)" >&2
	[ "$FUZZ_STRICT" = 1 ] && exit 1
fi
exit 0
