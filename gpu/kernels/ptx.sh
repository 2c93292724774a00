#!/usr/bin/env bash
# ptx.sh: compile the CUDA C kernels of this directory to the PTX that the
# cuda build embeds (ptx.go).
#
#   bash gpu/kernels/ptx.sh generate   # rewrite *.ptx from *.cu (go generate)
#   bash gpu/kernels/ptx.sh check      # compile into a temp dir, diff with *.ptx
#
# The PTX is target sm_70 (Volta; the driver JIT-compiles it for any later
# GPU). The checked-in PTX was made by nvcc 11.8 (Debian bookworm's
# nvidia-cuda-toolkit); another nvcc version writes a different header and
# possibly different code, so check only with 11.8 (NVCC names another binary).
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
FLAGS=(-ptx -arch=sm_70 -O3)

# extra FILE: the flags of one kernel file beyond FLAGS. rounds.cu reproduces
# the CPU's float64 arithmetic operation for operation, so nvcc must not fuse
# a multiply and an add into one rounding.
extra() {
	case $1 in
	rounds.cu) echo -fmad=false ;;
	esac
}

compile() {
	local out=$1 f
	for f in *.cu; do
		# shellcheck disable=SC2046
		"$NVCC" "${FLAGS[@]}" $(extra "$f") -o "$out/${f%.cu}.ptx" "$f"
	done
}

case "${1:-}" in
generate)
	compile .
	echo "ptx.sh: wrote $(ls ./*.ptx | tr '\n' ' ')"
	;;
check)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	compile "$tmp"
	status=0
	for f in *.cu; do
		p=${f%.cu}.ptx
		if [ ! -f "$p" ]; then
			echo "ptx.sh: $p missing: run 'go generate ./gpu/kernels'" >&2
			status=1
		elif ! diff -u "$p" "$tmp/$p" >"$tmp/$p.diff"; then
			echo "ptx.sh: $p differs from what $("$NVCC" --version | tail -1) compiles from $f:" >&2
			head -40 "$tmp/$p.diff" >&2
			echo "ptx.sh: regenerate with 'go generate ./gpu/kernels'" >&2
			status=1
		fi
	done
	for p in *.ptx; do
		[ -f "${p%.ptx}.cu" ] || { echo "ptx.sh: $p has no source ${p%.ptx}.cu" >&2; status=1; }
	done
	[ "$status" -eq 0 ] && echo "ptx.sh: embedded PTX matches the sources"
	exit "$status"
	;;
*)
	echo "usage: ptx.sh generate|check" >&2
	exit 2
	;;
esac
