#!/usr/bin/env bash
# device-bundle.sh: builds the bundle that scripts/device-check.sh runs from on
# a GPU machine without a Go toolchain or network (issue 37 target 4):
#
#   bash scripts/device-bundle.sh [DIR]        # DIR defaults to .device-bundle
#   ...copy DIR to the GPU machine, then there:
#   bash DIR/device-check.sh --out RESULTS_DIR [--budget SECONDS]
#
# DIR holds: bin/relabel.xz (the cuda-tagged relabel, stripped: it runs every
# step, --device cpu and cuda alike), bin/gpu.test.xz (the cuda-tagged test
# binary of ./gpu: the kNN, LLC and rounds conformance suites and
# benchmarks),
# data/fashion_mnist_pca50/{noisy-idn-0.4.parquet,truth.i32} (from
# ../shared/data, or $RELABEL_SHARED/data), device-check.sh, peer_knn.py,
# MANIFEST (commit, build) and SHA256SUMS. The 1M-row input is generated there
# by `relabel synth`. It must stay under 60 MiB (a device machine takes 64 MiB
# with the repository); the script fails beyond that.
#
# Needs the CUDA headers and the driver library to link against (bash
# .ci/cuda.sh installs them; no GPU needed), and xz. XZ_LEVEL (default 9)
# trades build time for size: CI's dry run uses a lower one.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.device-bundle}
shared=${RELABEL_SHARED:-../shared}
level=${XZ_LEVEL:-9}
limit=$((60 << 20))

log() { printf '%s device-bundle.sh: %s\n' "$(date +%T)" "$*" >&2; }

fashion=$shared/data/fashion_mnist_pca50
for f in "$fashion/noisy-idn-0.4.parquet" "$fashion/truth.i32"; do
	[ -f "$f" ] || { log "$f is missing (set RELABEL_SHARED to the directory holding data/)"; exit 1; }
done
command -v xz >/dev/null || { log "xz is missing (apt-get install xz-utils)"; exit 1; }

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -d "$CUDA_HOME/include" ]; then
	export CGO_CFLAGS="${CGO_CFLAGS:-} -I$CUDA_HOME/include"
	export CGO_LDFLAGS="${CGO_LDFLAGS:-} -L$CUDA_HOME/lib64 -L$CUDA_HOME/lib64/stubs"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/b/bin" "$tmp/b/data/fashion_mnist_pca50"

# -s -w: no symbol tables (Beam looks the
# DoFns up in its registry, not in the symbols).
log "go build -tags cuda ./cmd/relabel"
go build -tags cuda -ldflags='-s -w' -o "$tmp/relabel" ./cmd/relabel
log "go test -c -tags cuda ./gpu"
go test -c -tags cuda -ldflags='-s -w' -o "$tmp/gpu.test" ./gpu
for b in relabel gpu.test; do
	log "xz -$level $b ($(du -m "$tmp/$b" | cut -f1) MiB)"
	xz -"$level" -T0 -c "$tmp/$b" >"$tmp/b/bin/$b.xz"
done
cp "$fashion/noisy-idn-0.4.parquet" "$fashion/truth.i32" "$tmp/b/data/fashion_mnist_pca50/"
cp scripts/device-check.sh scripts/peer_knn.py "$tmp/b/"
{
	echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "built $(date -u +%FT%TZ) on $(uname -srm), $(go version | cut -d' ' -f3), xz -$level"
	echo "relabel $(du -m "$tmp/relabel" | cut -f1) MiB unpacked, gpu.test $(du -m "$tmp/gpu.test" | cut -f1) MiB unpacked"
} >"$tmp/b/MANIFEST"
(cd "$tmp/b" && find . -type f ! -name SHA256SUMS | sort | xargs sha256sum >SHA256SUMS)

size=$(du -sb "$tmp/b" | cut -f1)
if [ "$size" -gt "$limit" ]; then
	log "the bundle is $((size >> 20)) MiB, over the 60 MiB limit"
	exit 1
fi
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
mv "$tmp/b" "$dir"
log "$dir: $((size >> 20)) MiB ($(du -b "$dir"/bin/* | awk '{printf "%s %.1f MiB, ", $2, $1/1048576}')data $(du -sm "$dir/data" | cut -f1) MiB)"
