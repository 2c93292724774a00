#!/usr/bin/env bash
# Regenerates runners/internal/prism/internal, relabel's copy of Beam's Prism
# runner (sdks/go/pkg/beam/runners/prism/internal of the Beam module in
# go.mod), and applies relabel's patches (runners/internal/prism/patches.diff).
#
# Why a copy: Beam's in-process Prism listens on every network interface
# (jobservices.NewServer: net.Listen("tcp", ":0")) with no way to pass an
# address, panics when an EXTERNAL worker pool cannot start a worker, and
# waits forever for a PROCESS environment whose command failed. The packages
# are internal to Beam, so they cannot be wrapped: the copy is Beam's code at
# the pinned version (Apache License 2.0, headers kept), with the import paths
# rewritten and the patches listed in runners/internal/prism/README.md.
#
# After a Beam upgrade (go get github.com/apache/beam/sdks/v2@vX), run
#   scripts/prism-fork.sh
# and resolve any patch that no longer applies; TestForkMatchesBeam
# (runners/internal/prism) fails until the copy matches the version in go.mod.
# To change a patch: edit the copy, then
#   scripts/prism-fork.sh --diff > runners/internal/prism/patches.diff
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/apache/beam/sdks/v2
src=$(go list -m -f '{{.Dir}}' "$mod")/go/pkg/beam/runners/prism/internal
version=$(go list -m -f '{{.Version}}' "$mod")
dst=runners/internal/prism/internal
patches=runners/internal/prism/patches.diff

# pristine DIR: the upstream packages, rewritten to build here, into DIR.
pristine() {
	local out=$1
	(cd "$src" && find . -name '*.go' ! -name '*_test.go' ! -path './web/*') | while read -r f; do
		mkdir -p "$out/$(dirname "$f")"
		# Beam's internal errors package is not importable from here: its one
		# use (errors.Errorf, in a file that imports fmt) becomes fmt.Errorf.
		sed -e "s#$mod/go/pkg/beam/runners/prism/internal#github.com/relabel/relabel/runners/internal/prism/internal#g" \
			-e "\#\"$mod/go/pkg/beam/internal/errors\"#d" \
			-e 's#errors\.Errorf(#fmt.Errorf(#g' \
			"$src/$f" >"$out/$f"
	done
	echo "$version" >"$out/BEAM_VERSION"
	gofmt -w "$out"
	chmod -R u+w "$out"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pristine "$tmp/a"
if [ "${1:-}" = "--diff" ]; then
	# The patches: the difference between the pristine copy and the checked-in one.
	mkdir -p "$tmp/b"
	cp -r "$dst/." "$tmp/b/"
	(cd "$tmp" && diff -ruN a b | sed -E 's/^(---|\+\+\+) ([^\t]+)\t.*/\1 \2/') || true
	exit 0
fi
rm -rf "$dst"
mkdir -p "$dst"
cp -r "$tmp/a/." "$dst/"
if [ -s "$patches" ]; then
	(cd "$dst" && patch -p1 --no-backup-if-mismatch --forward <"$OLDPWD/$patches")
fi
gofmt -l "$dst" | (! grep .) || { echo "prism-fork: gofmt differs after patching" >&2; exit 1; }
echo "prism-fork: $dst is Beam $version's Prism with $(grep -c '^+++ ' "$patches") patched files"
