#!/usr/bin/env bash
# The release config's snapshot build (issue 36 target 5): builds goreleaser
# from the Go module proxy (the only route here: its npm package fetches the
# binary from GitHub, and Debian has none), validates .goreleaser.yaml, and
# runs the snapshot build for this machine's target only (--single-target:
# the four targets are the same pure-Go build cross-compiled; one proves the
# config builds and the binary starts). Building goreleaser is most of its
# cost (356 CPU-s on the 2-core machine); the snapshot build is a cold
# CGO_ENABLED=0 -trimpath build that shares nothing with the tests' cache
# (docs/BUILDING.md: a cold build's cost).
#
# Usage: scripts/release-check.sh [WORKDIR]   (default: a temporary directory)
set -euo pipefail
cd "$(dirname "$0")/.."
GORELEASER_VERSION=${GORELEASER_VERSION:-v2.15.1} # newer need a newer Go than the proxy serves them with
work=${1:-$(mktemp -d)}
mkdir -p "$work/bin"
GOFLAGS= GOBIN="$work/bin" go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
gr="$work/bin/goreleaser"
# goreleaser writes dist/ in the repository and wants a git remote to name
# releases by: check and build a copy of the tracked tree (a fresh commit with
# the project's remote), so the checkout stays clean whatever its remotes.
src="$work/src"
rm -rf "$src"
mkdir -p "$src"
git ls-files -z | xargs -0 cp --parents -t "$src"
(cd "$src" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm snapshot &&
	git remote add origin https://github.com/relabel/relabel.git &&
	"$gr" check &&
	"$gr" build --snapshot --clean --single-target)
bin=$(find "$src/dist" -type f -name relabel | head -n1)
[ -n "$bin" ] || { echo "release-check: the snapshot build made no relabel binary" >&2; exit 1; }
"$bin" version
echo "release-check: ok ($(du -h "$bin" | cut -f1) $(basename "$(dirname "$bin")"))"
