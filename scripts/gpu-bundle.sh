#!/usr/bin/env bash
# gpu-bundle.sh: build, on a Linux machine with the CUDA toolkit and no GPU,
# everything a GPU machine without Go needs to check beamml's CUDA backend.
#
#   make gpu-bundle                 (or: bash scripts/gpu-bundle.sh [OUTDIR])
#
# Writes OUTDIR (default out/gpu/, which .gitignore covers):
#   gpu-run.sh        scripts/gpu-run.sh, which runs the checks there
#   payload.tar.xz    bin/      beamml-bench, selfcheck, conformance, and
#                               every package's cuda-tagged tests (go test -c),
#                               examples/classify's among them
#                     tests.tsv which test binary runs in which package folder
#                     src/      the files those tests read, at their
#                               repository paths: ONNX's conformance data,
#                               examples/classify's model and records
#                     ptx/      the committed PTX (internal/kernels/ptx)
#                     py/       scripts/gpu/*.py, the PyTorch reference
#   MANIFEST.txt      commit, toolkit, Go version, and every file's size
#
# Everything is built with CGO_ENABLED=1 -tags cuda -trimpath -ldflags='-s -w',
# so the binaries link libcuda and libc only (cuBLAS is loaded at run time:
# DESIGN.md rule 13) and cannot run without a GPU (rule 1). The bundle must
# stay under 64 MiB, what a device machine accepts; the script says its
# size and fails above. It needs Go, a C compiler, and the CUDA toolkit's
# nvcc, cuda.h, cublas_v2.h and libcuda.so (Debian's nvidia-cuda-toolkit
# from non-free); it fails naming what is missing.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$repo/out/gpu}
limit=$((64 << 20))

die() { echo "gpu-bundle: $*" >&2; exit 1; }

# first_of FILE...: the first of the files that exists.
first_of() {
	local f
	for f; do [ -e "$f" ] && { echo "$f"; return 0; }; done
	return 1
}

cd "$repo" || exit 1
command -v go >/dev/null || die "no Go toolchain on PATH"
command -v nvcc >/dev/null || die "no nvcc: install the CUDA toolkit (Debian: nvidia-cuda-toolkit, component non-free)"
for h in cuda.h cublas_v2.h; do
	first_of /usr/include/$h /usr/local/cuda/include/$h >/dev/null ||
		die "no $h in /usr/include or /usr/local/cuda/include: install the CUDA toolkit"
done
first_of /usr/lib/x86_64-linux-gnu/libcuda.so /usr/lib64/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so >/dev/null ||
	die "no libcuda.so (the driver library gorgonia.org/cu links): install the CUDA toolkit (Debian: libcuda1 comes with it)"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/beamml-gpu-bundle.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
pay=$scratch/payload
mkdir -p "$pay/bin" "$pay/src" "$pay/ptx" "$pay/py"

export CGO_ENABLED=1
export CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}
build=(-tags cuda -trimpath -ldflags='-s -w')

echo "gpu-bundle: building with $(go version | cut -d' ' -f3), $(nvcc --version | tail -1)"
for cmd in cmd/beamml-bench container/selfcheck testing/conformance; do
	go build "${build[@]}" -o "$pay/bin/$(basename "$cmd")" "./$cmd" || die "go build ./$cmd failed"
done

# The test binaries: every package with a cuda-tagged test file, and
# examples/classify, whose pipeline tests run on the GPU in a cuda build.
# Each runs in its package's folder, as go test runs it, with the folder's
# testdata beside it.
mapfile -t pkgs < <({
	git ls-files '*_test.go' | xargs grep -l '^//go:build cuda' | xargs -n1 dirname
	echo examples/classify
} | sort -u)
for pkg in "${pkgs[@]}"; do
	bin=$(basename "$pkg").test
	[ ! -e "$pay/bin/$bin" ] || die "two test packages would make bin/$bin: name one apart in this script"
	go test -c "${build[@]}" -o "$pay/bin/$bin" "./$pkg" || die "go test -c ./$pkg failed"
	printf '%s\t%s\n' "$bin" "$pkg" >>"$pay/tests.tsv"
	mkdir -p "$pay/src/$pkg"
	[ ! -d "$pkg/testdata" ] || cp -r "$pkg/testdata" "$pay/src/$pkg/"
done
cp examples/classify/digits.onnx "$pay/src/examples/classify/"
mkdir -p "$pay/src/testing/conformance"
cp -r testing/conformance/testdata "$pay/src/testing/conformance/"
cp internal/kernels/ptx/*.ptx "$pay/ptx/"
cp scripts/gpu/*.py "$pay/py/"

rm -rf "$out"
mkdir -p "$out" || exit 1
echo "gpu-bundle: compressing the payload (xz)"
tar -C "$pay" -cf - . | xz -T2 -6 >"$out/payload.tar.xz" || die "xz failed"
cp scripts/gpu-run.sh "$out/"
chmod +x "$out/gpu-run.sh"

commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD 2>/dev/null || commit="$commit + uncommitted changes"
{
	echo "beamml GPU bundle"
	echo "commit:   $commit"
	echo "built:    $(date -u +%FT%TZ) on $(uname -srm), $(ldd --version | head -1)"
	echo "go:       $(go version)"
	echo "toolkit:  $(nvcc --version | tail -1)"
	echo
	echo "payload.tar.xz, $(stat -c %s "$out/payload.tar.xz") bytes, holds (bytes, uncompressed):"
	(cd "$pay" && find . -path ./src/testing/conformance/testdata -prune -o -type f -printf '%s\t%p\n') |
		sort -k2 | awk -F'\t' '{ printf "%10d  %s\n", $1, $2 }'
	printf '%10d  %s (%d tests)\n' "$(du -sb "$pay/src/testing/conformance/testdata" | cut -f1)" \
		./src/testing/conformance/testdata/ "$(find "$pay/src/testing/conformance/testdata" -name model.onnx | wc -l)"
} >"$out/MANIFEST.txt"
size=$(du -sb "$out" | cut -f1)
echo "bundle:   $size bytes in all" >>"$out/MANIFEST.txt"

cat "$out/MANIFEST.txt"
[ "$size" -lt "$limit" ] || die "the bundle is $size bytes, over 64 MiB ($limit)"
echo "gpu-bundle: $out is $((size >> 20)) MiB ($size bytes). On the GPU machine: bash ${out#"$repo"/}/gpu-run.sh"
