#!/usr/bin/env bash
# gpu-bundle.sh: build, on a Linux machine with the CUDA toolkit and no GPU,
# the binaries a GPU machine without Go needs to check beamml's CUDA
# backend, for gpu-run.sh to run there inside this checkout.
#
#   make gpu-bundle                 (or: bash scripts/gpu-bundle.sh [OUTDIR])
#
# Writes OUTDIR (default out/gpu/, which .gitignore covers):
#   gpu-run.sh        scripts/gpu-run.sh, which runs the checks there
#   payload.tar.xz    bin/      beamml-bench, selfcheck, conformance, and
#                               every package's cuda-tagged tests (go test -c),
#                               examples/classify's among them
#                     tests.tsv which test binary runs in which package folder
#   sources.sha256    the checkout's files the binaries and gpu-run.sh read
#                     there (the packages' testdata, ONNX's conformance data,
#                     the PTX, scripts/gpu): the payload holds none of them,
#                     since the device machine gets the checkout with the
#                     bundle, and gpu-run.sh's env stage checks they are the
#                     ones the binaries were built with
#   MANIFEST.txt      commit, toolkit, Go version, every binary's size and
#                     the shared libraries it needs
#
# Everything is built with CGO_ENABLED=1 -tags cuda -trimpath -ldflags='-s -w'.
# The binaries link libcuda.so.1 (the driver's; they cannot run without a GPU:
# docs/design.md, rule 1) and libc; beamml-bench and conformance also link
# libstdc++ and libgcc_s, for the simulated device's C++ kernels. cuBLAS is
# loaded at run time (docs/design.md, rule 13). MANIFEST.txt lists what each one
# needs.
#
# A device call sends the checkout (tracked and untracked-not-ignored files)
# with the carried bundle, and refuses more than 64 MiB: the script prints
# that total (scripts/gpu/send-size.sh) and fails above SEND_LIMIT (default
# 60 MiB). It needs Go, a C compiler, xz, and the CUDA toolkit's nvcc,
# cuda.h, cublas_v2.h and libcuda.so (Debian's nvidia-cuda-toolkit from
# non-free); it fails naming what is missing.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$repo/out/gpu}
send_limit=${SEND_LIMIT:-$((60 << 20))}

die() { echo "gpu-bundle: $*" >&2; exit 1; }

# first_of FILE...: the first of the files that exists.
first_of() {
	local f
	for f; do [ -e "$f" ] && { echo "$f"; return 0; }; done
	return 1
}

cd "$repo" || exit 1
command -v go >/dev/null || die "no Go toolchain on PATH"
command -v xz >/dev/null || die "no xz (Debian: xz-utils)"
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
mkdir -p "$pay/bin"

export CGO_ENABLED=1
export CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}
build=(-tags cuda -trimpath -ldflags='-s -w')

echo "gpu-bundle: building with $(go version | cut -d' ' -f3), $(nvcc --version | tail -1)"
for cmd in cmd/beamml-bench container/selfcheck testing/conformance; do
	go build "${build[@]}" -o "$pay/bin/$(basename "$cmd")" "./$cmd" || die "go build ./$cmd failed"
done

# The test binaries: every package with a cuda-tagged test file, and
# examples/classify, whose pipeline tests run on the GPU in a cuda build.
# Each runs in its package's folder of the checkout, as go test runs it.
mapfile -t pkgs < <({
	git ls-files '*_test.go' | xargs grep -l '^//go:build cuda' | xargs -n1 dirname
	echo examples/classify
} | sort -u)
for pkg in "${pkgs[@]}"; do
	bin=$(basename "$pkg").test
	[ ! -e "$pay/bin/$bin" ] || die "two test packages would make bin/$bin: name one apart in this script"
	go test -c "${build[@]}" -o "$pay/bin/$bin" "./$pkg" || die "go test -c ./$pkg failed"
	printf '%s\t%s\n' "$bin" "$pkg" >>"$pay/tests.tsv"
done

rm -rf "$out"
mkdir -p "$out" || exit 1
# What gpu-run.sh and the binaries read from the checkout.
sources=(testing/conformance/testdata internal/kernels/ptx scripts/gpu examples/classify/digits.onnx)
for pkg in "${pkgs[@]}"; do [ ! -d "$pkg/testdata" ] || sources+=("$pkg/testdata"); done
git ls-files -z -- "${sources[@]}" | xargs -0 sha256sum >"$out/sources.sha256" || die "sha256sum of the sources failed"

# -9 with one thread: a 64 MiB dictionary, which finds the code the
# binaries share (the Go runtime, Beam, gorgonia.org/cu) across files.
echo "gpu-bundle: compressing the payload (xz -9, about a minute)"
tar -C "$pay" -cf - . | xz -T1 -9 >"$out/payload.tar.xz" || die "xz failed"
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
	echo "sources:  $(wc -l <"$out/sources.sha256") files of the checkout (sources.sha256)"
	echo
	echo "payload.tar.xz, $(stat -c %s "$out/payload.tar.xz") bytes, holds (bytes, uncompressed; shared libraries needed):"
	for f in "$pay"/tests.tsv "$pay"/bin/*; do
		needed=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | xargs)
		printf '%10d  %s%s\n' "$(stat -c %s "$f")" "${f#"$pay"/}" "${needed:+  ($needed)}"
	done
	echo "bundle:   $(du -sb "$out" | cut -f1) bytes in all"
} >"$out/MANIFEST.txt"
cat "$out/MANIFEST.txt"

echo
case $out in
"$repo"/*)
	echo "gpu-bundle: a device call (bash ${out#"$repo"/}/gpu-run.sh, carrying ${out#"$repo"/}) sends:"
	bash scripts/gpu/send-size.sh --limit "$send_limit" "${out#"$repo"/}" ||
		die "what a device call sends is over $send_limit bytes (SEND_LIMIT): untrack or ignore what it need not send"
	;;
*) echo "gpu-bundle: $out is outside the checkout, which a device call would not send with it: send-size not checked" ;;
esac
echo "gpu-bundle: done. On the GPU machine, in this checkout: bash ${out#"$repo"/}/gpu-run.sh (docs/gpu/README.md: the plan)"
