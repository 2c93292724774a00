#!/usr/bin/env bash
# Runs each native Go fuzz target of the readers for a bounded time, one
# target per invocation (go test -fuzz takes one target at a time).
# Crashers found land in io/shardio/testdata/fuzz/<Target>/: commit them, and
# go test then runs them as regression cases.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-20s}"
for target in FuzzParquet FuzzArrowFile FuzzArrowStream FuzzColumns; do
	echo "== $target ($FUZZTIME)"
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" ./io/shardio
done
