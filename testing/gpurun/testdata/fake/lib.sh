# lib.sh: what the fake device's stand-ins share (sourced; see ../../gpurun_internal_test.go).
# The fake machine is described by the environment:
#   FAKE_GPU       yes (default), none (no driver answers), broken (listed, cuInit fails)
#   FAKE_HANG      names that sleep until killed: a payload binary's name,
#                  or nvidia-smi-query (every nvidia-smi call but -L)
#   FAKE_FAIL      test binaries with a failing subtest
#   FAKE_TORCH     yes (default) or no: torch sees the GPU
#   FAKE_LDCACHE   the loader's cache, as ldconfig -p prints it
#   FAKE_PYLIBDIRS Python's nvidia/*/lib and torch/lib folders
#   FAKE_LOG       every stand-in appends its name and arguments here

fake_log() { printf '%s %s\n' "$(basename "$0")" "$*" >>"${FAKE_LOG:-/dev/null}"; }
hangs() { [[ " ${FAKE_HANG:-} " == *" $1 "* ]]; }
hang() { exec sleep 1000; }

# resolve NAME: where the dynamic loader finds library NAME: a folder of
# LD_LIBRARY_PATH, then the cache. The C and C++ runtimes are always there.
resolve() {
	case $1 in libc.so.6 | libstdc++.so.6 | libm.so.6 | libgcc_s.so.1) echo "/lib/x86_64-linux-gnu/$1"; return 0 ;; esac
	local d IFS=:
	for d in ${LD_LIBRARY_PATH:-}; do
		[ -n "$d" ] && [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	[ -f "${FAKE_LDCACHE:-}" ] && awk -v n="$1" '$1 == n { print $NF; f = 1; exit } END { exit !f }' "$FAKE_LDCACHE"
}

# needed BINARY: the libraries a payload binary links, as readelf lists
# them for the real ones (scripts/gpu-bundle.sh's MANIFEST.txt).
needed() {
	case $(basename "$1") in
	cublas.test | curesult.test) echo libc.so.6 ;;
	beamml-bench | conformance) echo libcuda.so.1 libstdc++.so.6 libgcc_s.so.1 libc.so.6 ;;
	*) echo libcuda.so.1 libc.so.6 ;;
	esac
}
