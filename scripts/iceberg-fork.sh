#!/usr/bin/env bash
# Regenerates third_party/iceberg-go, relabel's copy of the iceberg-go module
# (the version go.mod requires), and applies relabel's patches
# (third_party/iceberg-go/patches.diff); go.mod replaces the module with it.
#
# Why a copy: iceberg-go's table/substrait parses every Substrait extension
# YAML (substrait-go's default collection, with goccy/go-yaml) in its package
# initialisation, about 165 ms and 33 MB of allocations in every process that
# links it, whether or not it reads a table: most of a no-op incremental run
# and of `relabel version`. The patch loads the collection on first use. The
# copy holds the packages relabel links, not iceberg-go's tests, command or
# website (Apache License 2.0; LICENSE and NOTICE kept).
#
# After an iceberg-go upgrade (go get github.com/apache/iceberg-go@vX), run
#   scripts/iceberg-fork.sh
# and resolve any patch that no longer applies; TestIcebergFork (lake) fails
# until the copy matches the version in go.mod. A new import of an iceberg-go
# package the copy lacks fails the build: add it to pkgs below. To change a
# patch: edit the copy, then
#   scripts/iceberg-fork.sh --diff > third_party/iceberg-go/patches.diff
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/apache/iceberg-go
version=$(go list -m -f '{{.Version}}' "$mod")
src=$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "iceberg-fork: no source of $mod@$version" >&2; exit 1; }
dst=third_party/iceberg-go
patches=$dst/patches.diff
# The packages relabel's code and tests import, directly or not
# (go list -deps -test ./... | grep iceberg-go).
pkgs=". catalog catalog/internal catalog/rest catalog/sql config internal internal/datafileavro
internal/fileuri internal/scanmetrics internal/schemes io io/gocloud/blobfs io/gocloud/gcs metrics
puffin table table/dv table/internal table/substrait udf view view/internal"

# pristine DIR: the upstream module's files relabel builds, into DIR.
pristine() {
	local out=$1 p f
	for p in $pkgs; do
		mkdir -p "$out/$p"
		for f in "$src/$p"/*.go; do
			case "$f" in *_test.go) continue ;; esac
			cp "$f" "$out/$p/"
		done
	done
	cp "$src/go.mod" "$src/LICENSE" "$src/NOTICE" "$out/"
	cp "$src/table/substrait/functions_set.yaml" "$out/table/substrait/"
	echo "$version" >"$out/ICEBERG_VERSION"
	chmod -R u+w "$out"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pristine "$tmp/a"
if [ "${1:-}" = "--diff" ]; then
	# The patches: the difference between the pristine copy and the checked-in one.
	mkdir -p "$tmp/b"
	cp -r "$dst/." "$tmp/b/"
	rm -f "$tmp/b/patches.diff" "$tmp/b/README.md"
	(cd "$tmp" && diff -ruN a b | sed -E 's/^(---|\+\+\+) ([^\t]+)\t.*/\1 \2/') || true
	exit 0
fi
keep=$(mktemp -d)
for f in patches.diff README.md; do [ -f "$dst/$f" ] && cp "$dst/$f" "$keep/"; done
rm -rf "$dst"
mkdir -p "$dst"
cp -r "$tmp/a/." "$dst/"
cp -r "$keep/." "$dst/" && rm -rf "$keep"
if [ -s "$patches" ]; then
	(cd "$dst" && patch -p1 --no-backup-if-mismatch --forward <patches.diff)
fi
gofmt -l "$dst" | (! grep .) || { echo "iceberg-fork: gofmt differs in the copy" >&2; exit 1; }
echo "iceberg-fork: $dst is $mod $version with $(grep -c '^+++ ' "$patches" 2>/dev/null || echo 0) patched files"
