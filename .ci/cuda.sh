#!/usr/bin/env bash
# .ci/cuda.sh: the CUDA leg of CI (issue 7).
#
# Usage: .ci/cuda.sh [--install-only]
#
# 1. Installs CUDA 11.8 headers, libraries and nvcc from Debian's non-free
#    component (nvidia-cuda-dev, nvidia-cuda-toolkit, libcuda1) through a private
#    apt sources file on the same mirror the machine already uses. Idempotent:
#    nothing is downloaded when nvcc, cuda.h and libcuda.so are present.
# 2. Builds and vets the cuda-tagged packages (and the cudaemu emulator build).
# 3. Checks that the PTX embedded in gpu/kernels equals what nvcc compiles from
#    gpu/kernels/*.cu (regenerated into a temporary directory and diffed).
# 4. Runs the gpu tests: under -tags cuda they skip without a device; under
#    -tags cudaemu the kernels run in the CPU emulator (no GPU needed), as
#    do the round stages' device tests and the pipeline's --device cuda run.
#
# No GPU is needed: the build links against the driver's user-space library
# (libcuda1), which loads without a GPU; gpu.Available then reports false and
# the device tests skip. On a machine with a GPU the same script runs them.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '%s cuda.sh: %s\n' "$(date +%T)" "$*"; }

have_cuda() {
	command -v nvcc >/dev/null 2>&1 &&
		[ -f /usr/include/cuda.h ] &&
		ldconfig -p | grep 'libcuda\.so\b' >/dev/null
}

# mirror prints the Debian mirror the machine's own apt sources use for the
# release (deb822 .sources first, then one-line sources.list), defaulting to
# deb.debian.org.
mirror() {
	local codename=$1 m=""
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		[ "$f" = "$SOURCES" ] && continue
		m=$(awk -v c="$codename" '
			/^URIs:/ { u = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == c) s = 1 }
			/^[ \t]*$/ { if (s && u) { print u; exit } s = 0; u = "" }
			END { if (s && u) print u }' "$f")
		[ -n "$m" ] && break
	done
	if [ -z "$m" ]; then
		m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -E 's/\[[^]]*\]//' |
			awk -v c="$codename" '$1 == "deb" && $3 == c { print $2; exit }')
	fi
	echo "${m:-http://deb.debian.org/debian}"
}

SOURCES=/etc/apt/sources.list.d/relabel-cuda.sources

if have_cuda; then
	log "CUDA toolkit already installed ($(nvcc --version | tail -1))"
else
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
	m=$(mirror "$codename")
	log "enabling contrib non-free non-free-firmware for $codename on $m"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO tee "$SOURCES" >/dev/null <<SRC
Types: deb
URIs: $m
Suites: $codename $codename-updates
Components: contrib non-free non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	$SUDO apt-get update -q
	# libcuda1 is the driver's user-space library (for -lcuda); without a GPU it
	# only links. --no-install-recommends keeps out the kernel module (dkms),
	# nsight and the docs.
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		nvidia-cuda-dev nvidia-cuda-toolkit libcuda1
	have_cuda || { log "CUDA install incomplete"; exit 1; }
	log "installed $(nvcc --version | tail -1)"
fi
# --install-only: .ci/run installs the toolkit in the background while the
# tests run, then calls this script again for the build and tests.
[ "${1:-}" = --install-only ] && exit 0

# Debian installs the CUDA headers in /usr/include and the libraries in the
# multiarch directory, both on the default search paths; the flags are set
# anyway so that a toolkit under /usr/local/cuda (NVIDIA's layout) also works.
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ -d "$CUDA_HOME/include" ]; then
	export CGO_CFLAGS="${CGO_CFLAGS:-} -I$CUDA_HOME/include"
	export CGO_LDFLAGS="${CGO_LDFLAGS:-} -L$CUDA_HOME/lib64 -L$CUDA_HOME/lib64/stubs"
fi

log "go build -tags cuda ./gpu/... ./cmd/relabel (the CUDA build of the binary and worker)"
go build -tags cuda ./gpu/... ./pipelines/stages/... ./pipelines/ivfstages/...
go build -tags cuda -o /tmp/relabel-cuda ./cmd/relabel
log "go vet -tags cuda ./gpu/... and -tags cudaemu"
go vet -tags cuda ./gpu/...
go vet -tags cudaemu ./gpu/... ./pipelines/...

log "checking embedded PTX against nvcc"
bash gpu/kernels/ptx.sh check

# Without a GPU the cuda tests skip, with a message saying why; that they run
# at all shows the cuda binary starts where the driver library has no device.
log "go test -tags cuda ./gpu/... (needs a GPU; skips without one)"
go test -tags cuda -count=1 ./gpu/...
# The emulator runs the kernels' own source on the CPU through the same host
# code: the conformance suites for the CUDA backend, GPU or not.
log "go test -tags cudaemu ./gpu/... (kernels emulated on the CPU)"
go test -tags cudaemu -count=1 ./gpu/...
# The stages resolve --device in Setup: with the emulated device their
# rounds run through gpu.Rounds, and a run with --device cuda writes what
# --device cpu writes (exact, ivf in one stage, ivf joined per round).
log "go test -tags cudaemu: the round stages and the pipeline on the emulated device"
go test -tags cudaemu -count=1 -run 'TestDeviceRuns' ./pipelines/
# The stages' own suites whole: with --device unset (auto) their kNN, LLC and
# rounds all run on the emulated device.
go test -tags cudaemu -count=1 ./pipelines/stages/ ./pipelines/ivfstages/

log "ok"
