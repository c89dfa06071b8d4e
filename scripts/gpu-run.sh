#!/usr/bin/env bash
# gpu-run.sh: check beamml's CUDA backend on a GPU machine, from the bundle
# that make gpu-bundle builds (out/gpu/: this script, payload.tar.xz,
# sources.sha256, MANIFEST.txt), inside the checkout it was built from: the
# tests' data, ONNX's conformance tests, the PTX and the PyTorch reference
# (scripts/gpu/) are read from there (REPO names the checkout; default: two
# folders up from the bundle). The GPU machine needs the NVIDIA driver,
# bash, coreutils, tar and xz (or python3); no Go, no network.
#
#   [DEADLINE=540] bash out/gpu/gpu-run.sh [STAGE ...]    (default: every stage)
#
# Stages, in the order given; each command in one is bounded by a time
# limit, and none stops the others:
#   env          GPU, driver, glibc, toolkit tools, the libraries found
#                (libcuda, NVML, cuBLAS), Python packages; every binary's
#                shared libraries and libcuda symbols resolve (ldd -r); the
#                checkout's files are those the bundle was built with
#                (sources.sha256). Fails when no cuBLAS is found. No GPU needed.
#   load         the kernel modules' fatbins loaded by the driver: load time
#                per module with no cache, filling a cache, and from it
#                (machine code for sm_75-sm_90 needs no JIT); ptxas for the
#                GPU's sm where ptxas is installed
#   unit         every cuda-tagged test binary (go test -c), in its package
#                folder; UNIT_CONFORMANCE=1 adds cu.test's TestConformance,
#                which the conformance stage covers
#   selfcheck    every operator case on the GPU against the CPU backend
#   conformance  ONNX's backend tests with --device cuda and --device cpu;
#                fails when a test passes on the CPU and not on the GPU
#   classify     examples/classify's pipeline tests on prism, Device(Auto)
#                on the GPU (BEAMML_REQUIRE_GPU=1 makes a CPU fallback fail)
#   bench        ResNet-50 and a BERT-style encoder (batch 1, 8, 32; seq
#                128), exported by scripts/gpu/bench_models.py with this
#                machine's torch: beamml-bench in fp32, tf32 and fp16 vs
#                PyTorch fp32, tf32, fp16 autocast and ONNX Runtime's CUDA EP
#                where it imports; outputs compared on one batch.
#                BENCH_MODELS="resnet50" times one.
#   sanitize     compute-sanitizer on a short cu.test run: SANITIZE_TOOLS
#                (default memcheck; also racecheck initcheck synccheck),
#                SANITIZE_RUN and SANITIZE_SKIP (its -test.run, -test.skip)
#   ncu          time per kernel of one ResNet-50 batch of 8 under ncu
#                (--clock-control none: the clocks stay as they run; nsys
#                where ncu is missing)
#
# Time: the whole run ends within DEADLINE seconds (default 540, inside a
# 600-second command limit; the unpacking and the GPU probe count): each
# command's own limit is cut to the time left, and a stage that would start
# with less than a minimum left is "NOT RUN: out of time".
#
# Results: $OUT (else gpu-results/ beside the bundle's folder) holds two
# files, both rewritten before and after every stage, so a run cut off from
# outside still leaves them: summary.txt (the GPU, the libraries, one line
# per stage: PASS, FAIL (why), TIMEOUT, NOT RUN: why, RUNNING or PENDING,
# then the benchmark table and the time per kernel) and results.tgz (every
# command's log, env.txt, bench/ and profile/, and the summary). Exported
# models stay outside the bundle, in MODELS_DIR (default under $TMPDIR), so
# a later call on the same machine uses them. PYTHON names the Python with
# torch (default python3). The libraries are found through LD_LIBRARY_PATH
# alone: libcuda and NVML in the driver's folders, cuBLAS 12, 13 or 11 in
# the loader's cache, the toolkit's folders or Python's nvidia/*/lib
# (GPU_LIB_DIRS replaces the list of folders searched).
#
# Exit status:
#   0  every stage that ran passed (stages NOT RUN for want of a tool, such
#      as ncu or torch, do not count)
#   1  a stage failed or timed out, or ran out of time; or a GPU is listed
#      but cannot be used (the probe's error, or no cuBLAS, in summary.txt)
#   2  usage: an unknown stage, no payload.tar.xz beside the script, no
#      checkout around it
#   3  no stage failed, but the stages that need a GPU were NOT RUN: this
#      machine has no GPU (no nvidia-smi listing one, and cuInit fails)
#
# On a device machine (15 minutes in all, the machine's start included),
# two calls back to back cover every stage (docs/gpu/README.md: the plan):
#   A  DEADLINE=440 bash out/gpu/gpu-run.sh env load unit selfcheck conformance classify bench
#   B  DEADLINE=170 bash out/gpu/gpu-run.sh ncu sanitize
set -uo pipefail
SECONDS=0

bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
all_stages=(env load unit selfcheck conformance classify bench sanitize ncu)
deadline=${DEADLINE:-540}
reserve=10   # seconds kept back to write the results
min_stage=15 # a stage needs this much time left to start

log() { printf '%s %4ds %s\n' "$(date +%H:%M:%S)" "$SECONDS" "$*" >&2; }
usage() { sed -n '2,/^set -uo pipefail/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# ------------------------------------------------------------------ time --

# left: the seconds left before the deadline, less what writing the results
# takes.
left() { echo $((deadline - reserve - SECONDS)); }

# capped LIMIT: LIMIT, or the time left when that is less (never below 0).
capped() {
	local l
	l=$(left)
	((l < 0)) && l=0
	((l < $1)) && echo "$l" || echo "$1"
}

# bounded LIMIT CMD...: runs CMD for at most LIMIT seconds (capped by the
# deadline), stdin from /dev/null; 124 when it ran out of time. For the
# commands around the steps (nvidia-smi, ldconfig, python), any of which
# can hang on a wedged driver.
bounded() {
	local limit
	limit=$(capped "$1")
	shift
	((limit > 0)) || return 124
	timeout -k 5 "$limit" "$@" </dev/null
}

# smi ARGS...: nvidia-smi ARGS, for at most 10 seconds; once one call has
# timed out (a wedged driver hangs every call), 124 at once. The mark is a
# file, since most calls run in a command substitution's subshell.
smi() {
	[ ! -e "$tmp/nvidia-smi-hung" ] || return 124
	command -v nvidia-smi >/dev/null || return 127
	bounded 10 nvidia-smi "$@"
	local rc=$?
	((rc != 124)) || : >"$tmp/nvidia-smi-hung"
	return $rc
}

# ------------------------------------------------------ results per stage --

declare -A status detail # stage → PASS | FAIL (…) | TIMEOUT … | NOT RUN: why | RUNNING; stage → its commands' outcomes

# step STAGE NAME LIMIT CMD...: runs CMD for at most LIMIT seconds (capped
# by the deadline), stdin from /dev/null, output in NAME.log, and folds its
# outcome into the stage's status (unless fold=0: a command whose exit
# status is not the verdict; its timeout still is). Returns CMD's status,
# 124 on a timeout.
step() {
	local stage=$1 name=$2 want=$3
	shift 3
	local limit rc outcome start=$SECONDS
	limit=$(capped "$want")
	if ((limit < 5)); then
		detail[$stage]+="${detail[$stage]:+; }$name: not started, out of time"
		verdict "$stage" "TIMEOUT: out of time (DEADLINE=${deadline}s) before $name"
		return 124
	fi
	log "$stage: $name (at most ${limit}s)"
	printf '$ %s\n' "$*" >"$work/$name.log"
	timeout -k 10 "$limit" "$@" </dev/null >>"$work/$name.log" 2>&1
	rc=$?
	local took=$((SECONDS - start))
	case $rc in
	0) outcome=PASS ;;
	124 | 137)
		if ((took < limit)); then
			outcome="FAIL (killed: status $rc)"
		elif ((limit < want)); then
			outcome="TIMEOUT after ${limit}s (the deadline)"
		else
			outcome="TIMEOUT after ${limit}s"
		fi
		;;
	*) outcome="FAIL ($rc)" ;;
	esac
	detail[$stage]+="${detail[$stage]:+; }$name: $outcome, ${took}s"
	if [ "${fold:-1}" = 1 ] || [[ $outcome == TIMEOUT* ]]; then verdict "$stage" "$outcome in $name"; fi
	[ "$outcome" = PASS ] || tail -n 3 "$work/$name.log" | sed 's/^/    | /' >&2
	return $rc
}

# verdict STAGE OUTCOME: the stage's status becomes OUTCOME unless it is
# already a failure. A PASS outcome leaves it as it is.
verdict() {
	case $2 in PASS*) return ;; esac
	case ${status[$1]:-RUNNING} in
	PASS | RUNNING) status[$1]=$2 ;;
	esac
}

not_run() { status[$1]="NOT RUN: $2"; }

# publish: results.tgz, then summary.txt, into $res, each written under a
# temporary name and renamed: either file is whole at any moment, and the
# logs of what summary.txt reports are already in results.tgz.
publish() {
	summary >"$work/summary.txt"
	trim_logs
	tar -C "$tmp" -czf "$res/.results.tgz.part" results 2>/dev/null && mv -f "$res/.results.tgz.part" "$res/results.tgz"
	cp "$work/summary.txt" "$res/.summary.txt.part" && mv -f "$res/.summary.txt.part" "$res/summary.txt"
}

# trim_logs: a log over 4 MiB keeps its first and last MiB, so that
# results.tgz stays far below what comes back from a device machine.
trim_logs() {
	local f
	while IFS= read -r -d '' f; do
		{ head -c 1M "$f"; printf '\n[... %d bytes cut by gpu-run.sh ...]\n' "$(($(stat -c %s "$f") - (2 << 20)))"; tail -c 1M "$f"; } >"$f.trim" &&
			mv -f "$f.trim" "$f"
	done < <(find "$work" -type f -size +4M -print0)
}

# summary: the summary as it stands.
summary() {
	echo "beamml GPU run, $(date -u +%FT%TZ), on $(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
	echo "bundle:   $(sed -n 's/^commit: *//p' "$bundle/MANIFEST.txt" 2>/dev/null), checkout $repo"
	case $gpu in
	yes) echo "GPU:      $gpu_name" ;;
	unusable) echo "GPU:      UNUSABLE: $gpu_why" ;;
	no) echo "GPU:      none: $gpu_why" ;;
	*) echo "GPU:      not probed yet" ;;
	esac
	echo "driver:   ${driver:-not found}"
	echo "cuBLAS:   ${cublas:-NOT FOUND: $cublas_why}"
	echo "time:     ${SECONDS}s of DEADLINE=${deadline}s"
	echo
	local s st
	for s in "${stages[@]}"; do
		st=${status[$s]:-PENDING}
		printf '%-12s %s\n' "$s" "$st${detail[$s]:+  [${detail[$s]}]}"
	done
	for s in bench/table.md profile/kernel-times.txt; do
		[ -s "$work/$s" ] && { echo; cat "$work/$s"; }
	done
	return 0
}

# ------------------------------------------------------------ libraries --

# The folders searched for the driver's and the toolkit's libraries,
# besides LD_LIBRARY_PATH and the loader's cache.
read -r -a lib_dirs <<<"${GPU_LIB_DIRS:-/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib $(echo /usr/local/cuda-*/lib64 /usr/local/cuda-*/targets/x86_64-linux/lib)}"
# Where the toolkit's tools may be, besides PATH.
read -r -a tool_dirs <<<"${GPU_TOOL_DIRS:-/usr/local/cuda/bin /usr/local/cuda/compute-sanitizer $(echo /opt/nvidia/nsight-compute/* /usr/local/cuda/nsight-compute-*)}"

# in_cache NAME: the path the loader's cache gives NAME ($ld_cache holds
# ldconfig -p, read once into a variable: grep -q on a pipe from ldconfig
# under pipefail fails when grep stops reading first).
in_cache() { awk -v n="$1" '$1 == n { print $NF; found = 1; exit } END { exit !found }' <<<"$ld_cache"; }

# on_path NAME: NAME in a folder of LD_LIBRARY_PATH.
on_path() {
	local d
	local IFS=:
	for d in ${LD_LIBRARY_PATH:-}; do
		[ -n "$d" ] && [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}

# where_lib NAME: where the dynamic loader finds NAME: LD_LIBRARY_PATH
# first, then its cache.
where_lib() { on_path "$1" || in_cache "$1"; }

add_lib_dir() { export LD_LIBRARY_PATH=$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; }

# find_libs: libcuda.so.1 and libnvidia-ml.so.1 (the driver's) and cuBLAS
# where the loader can find them, adding their folders to LD_LIBRARY_PATH
# where it cannot; sets libcuda, nvml, cublas (or cublas_why) and driver.
# cuBLAS is taken as package cublas loads it: libcublas.so.12, then .13,
# then .11 (BEAMML_CUBLAS, where the caller set it, names the file).
find_libs() {
	ld_cache=$(bounded 30 ldconfig -p 2>/dev/null)
	local name d v
	for name in libcuda.so.1 libnvidia-ml.so.1; do
		where_lib "$name" >/dev/null && continue
		for d in "${lib_dirs[@]}"; do
			[ -e "$d/$name" ] && { add_lib_dir "$d"; break; }
		done
	done
	libcuda=$(where_lib libcuda.so.1) || libcuda=
	nvml=$(where_lib libnvidia-ml.so.1) || nvml=
	if [ -n "${BEAMML_CUBLAS:-}" ]; then
		if [[ $BEAMML_CUBLAS != */* ]] || [ -e "$BEAMML_CUBLAS" ]; then
			cublas="$BEAMML_CUBLAS (BEAMML_CUBLAS)"
		else
			cublas_why="BEAMML_CUBLAS names $BEAMML_CUBLAS, which does not exist"
		fi
	else
		find_cublas
	fi
	if [ -r /proc/driver/nvidia/version ]; then
		driver=$(sed -n 's/.*Kernel Module *\([0-9.]*\).*/\1/p' /proc/driver/nvidia/version | head -1)
	fi
	if [ -z "${driver:-}" ]; then
		driver=$(smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
		[[ $driver =~ ^[0-9][0-9.]*$ ]] || driver=
	fi
	driver="${driver:+$driver, }libcuda ${libcuda:-not found}, NVML ${nvml:-not found}"
}

find_cublas() {
	local v d dirs=() py_dirs
	for v in 12 13 11; do
		if cublas=$(where_lib "libcublas.so.$v"); then
			cublas+=" ($(on_path "libcublas.so.$v" >/dev/null && echo LD_LIBRARY_PATH || echo "the loader's cache"))"
			return 0
		fi
	done
	py_dirs=$(bounded 60 "$python" "$repo/scripts/gpu/runtools.py" libdirs 2>/dev/null) || true
	dirs=("${lib_dirs[@]}")
	[ -z "$py_dirs" ] || mapfile -t -O "${#dirs[@]}" dirs <<<"$py_dirs"
	for v in 12 13 11; do
		for d in "${dirs[@]}"; do
			[ -e "$d/libcublas.so.$v" ] || continue
			add_lib_dir "$d"
			cublas="$d/libcublas.so.$v (LD_LIBRARY_PATH)"
			return 0
		done
	done
	cublas=
	cublas_why="no libcublas.so.12, .13 or .11 in LD_LIBRARY_PATH, the loader's cache, ${dirs[*]}"
	return 1
}

# find_tool NAME: NAME on PATH or in the toolkit's usual folders.
find_tool() {
	local d
	command -v "$1" && return 0
	for d in "${tool_dirs[@]}"; do
		[ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}

# ------------------------------------------------------------------ GPU --

# probe_gpu: sets gpu to yes, unusable (nvidia-smi lists a GPU that our
# binaries cannot use) or no, gpu_why to the reasons when not yes, and
# gpu_name.
probe_gpu() {
	local listing="" listed=no reasons=() rc
	if ! command -v nvidia-smi >/dev/null; then
		reasons+=("no nvidia-smi")
	elif listing=$(smi -L 2>&1) && grep -q '^GPU ' <<<"$listing"; then
		listed=yes
	else
		reasons+=("nvidia-smi lists no GPU${listing:+ ($(head -1 <<<"$listing"))}")
	fi
	[ $listed = yes ] || [ -e /dev/nvidia0 ] || reasons+=("no /dev/nvidia0")
	if [ -z "$libcuda" ]; then
		reasons+=("no libcuda.so.1 (the driver's library) in LD_LIBRARY_PATH, the loader's cache or ${lib_dirs[*]}")
	elif [ -z "$cublas" ] && [ $listed = yes ]; then
		reasons+=("no cuBLAS, which every run of the CUDA backend loads ($cublas_why)")
	else
		# A binary built with the cuda tag calls cuInit before main and exits
		# 2 when it fails (inference/cuda/cu); -load-kernels then opens the
		# device, cuBLAS and every kernel module.
		bounded 120 env CUDA_CACHE_DISABLE=1 "$bin/beamml-bench" -load-kernels >"$work/gpu-probe.log" 2>&1
		rc=$?
		if [ $rc = 0 ]; then
			gpu=yes
			gpu_name=$(smi --query-gpu=name,compute_cap,memory.total --format=csv,noheader 2>/dev/null | head -1)
			[ -n "$gpu_name" ] || gpu_name=$(sed -n 's/^device *//p' "$work/gpu-probe.log" | head -1)
			return
		fi
		local err
		err=$(grep -m1 -E 'cuInit failed|beamml-bench: |error while loading' "$work/gpu-probe.log") ||
			err="beamml-bench -load-kernels exits $rc$( ((rc == 124)) && echo ' (timed out)') (gpu-probe.log)"
		reasons+=("$err")
	fi
	gpu_why=$(printf '%s; ' "${reasons[@]}")
	gpu_why=${gpu_why%; }
	if [ $listed = yes ]; then
		gpu=unusable
		gpu_why="nvidia-smi lists $(sed -n '1s/ (UUID.*//p' <<<"$listing"), but $gpu_why"
	else
		gpu=no
	fi
}

# ---------------------------------------------------------------- stages --

# test_binary PKG: the test binary of package folder PKG (tests.tsv).
test_binary() { awk -F'\t' -v p="$1" '$2 == p { print $1 }' "$pay/tests.tsv"; }

stage_env() {
	{
		echo "## host"; uname -a; ldd --version 2>&1 | head -1; echo "cpus: $(nproc)"; free -g 2>&1 | head -2
		echo; echo "## GPU"
		smi 2>&1 || echo "nvidia-smi: status $? (124: timed out, or an earlier call did)"
		smi --query-gpu=index,name,compute_cap,driver_version,memory.total,compute_mode,mig.mode.current,clocks.max.sm,power.limit --format=csv 2>&1
		cat /proc/driver/nvidia/version 2>&1; ls -l /dev/nvidia* 2>&1
		echo; echo "## probe (beamml-bench -load-kernels, cold JIT)"; cat "$work/gpu-probe.log" 2>&1
		echo; echo "## libraries"
		echo "libcuda:  ${libcuda:-not found}"
		echo "NVML:     ${nvml:-not found}"
		echo "cuBLAS:   ${cublas:-not found: $cublas_why}"
		echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
		grep -E 'libcuda\.so|libcublas|libnvidia-ml|libcudart' <<<"$ld_cache" || echo "none of libcuda, libcublas, libnvidia-ml, libcudart in the loader's cache"
		echo; echo "## tools"
		local t p
		for t in nvcc ptxas compute-sanitizer ncu nsys; do
			if p=$(find_tool "$t"); then
				printf '%-18s %s: %s\n' "$t" "$p" "$(bounded 30 "$p" --version 2>&1 | grep -m1 -iE 'release|version')"
			else
				printf '%-18s not found\n' "$t"
			fi
		done
		echo; echo "## python ($python)"
		bounded 120 "$python" "$repo/scripts/gpu/runtools.py" env 2>&1
		echo; echo "## binaries"
		for t in "$bin"/*; do echo "--- $(basename "$t")"; ldd "$t" 2>&1; done
	} >"$work/env.txt" 2>&1
	export -f check_libraries
	step env ldd 120 bash -c 'check_libraries "$1"' _ "$bin"
	step env sources 120 bash -c 'cd "$1" && sha256sum --quiet -c "$2"' _ "$repo" "$bundle/sources.sha256"
	if [ -z "$cublas" ]; then
		detail[env]+="${detail[env]:+; }cublas: FAIL, not found"
		verdict env "FAIL (no cuBLAS: $cublas_why)"
	fi
}

# check_libraries DIR: every library of every binary in DIR is found, and
# every symbol they take from libcuda resolves against this machine's
# (gorgonia.org/cu binds ~300 driver entry points). go-nvml's nvml*
# symbols are looked up with dlsym, so ldd -r lists them as undefined by
# design. A statically linked binary has nothing to resolve.
check_libraries() {
	local b out bad rc=0
	for b in "$1"/*; do
		out=$(ldd -r "$b" 2>&1)
		grep -q 'not a dynamic executable' <<<"$out" && continue
		bad=$(grep -E 'not found|undefined symbol: cu[A-Z]' <<<"$out")
		[ -z "$bad" ] || { echo "$b:"; echo "$bad"; rc=1; }
	done
	[ $rc = 1 ] || echo "every library and libcuda symbol of the $(ls "$1" | wc -l) binaries resolves"
	return $rc
}

stage_load() {
	step load jit-cold 60 env CUDA_CACHE_DISABLE=1 "$bin/beamml-bench" -load-kernels
	step load jit-fill-cache 60 env CUDA_CACHE_PATH="$tmp/nv-cache" "$bin/beamml-bench" -load-kernels
	step load jit-from-cache 60 env CUDA_CACHE_PATH="$tmp/nv-cache" "$bin/beamml-bench" -load-kernels
	local ptxas sm
	if ptxas=$(find_tool ptxas); then
		sm=$(smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
		[[ $sm =~ ^[0-9]+$ ]] || { detail[load]+="; ptxas not run: nvidia-smi gives no compute capability"; return; }
		step load "ptxas-sm_$sm" 120 bash -c 'for p in "$2"/*.ptx; do "$1" -arch="$3" -o /dev/null "$p" || exit 1; echo "ok: $p"; done' \
			_ "$ptxas" "$repo/internal/kernels/ptx" "sm_$sm"
	fi
}

# unit_limit PKG: the seconds a package's test binary may take (cu.test
# runs every operator case, the conformance subset and the concurrency
# tests; the others take seconds).
unit_limit() { case $1 in inference/cuda/cu) echo 300 ;; *) echo 60 ;; esac; }

stage_unit() {
	local binary pkg limit skip='^TestConformance$'
	[ "${UNIT_CONFORMANCE:-0}" = 1 ] && skip='^$'
	while IFS=$'\t' read -r binary pkg <&3; do
		[ "$pkg" = examples/classify ] && continue # the classify stage's
		limit=$(capped "$(unit_limit "$pkg")")
		# -test.timeout inside the step's limit, so that a hang prints the
		# goroutines before the step kills the binary.
		step unit "$binary" "$limit" bash -c 'cd "$1" && exec "$2" -test.v -test.count=1 -test.timeout="$3s" -test.skip "$4"' \
			_ "$repo/$pkg" "$bin/$binary" $((limit > 15 ? limit - 10 : limit)) "$skip"
		test_failures "$work/$binary.log" >"$work/$binary.failures.txt"
	done 3<"$pay/tests.tsv"
}

# test_failures LOG: a go test log's failures (subtests' indented lines
# among them), panics and final lines.
test_failures() { grep -E '^[[:space:]]*--- FAIL|^(FAIL|ok|PASS)([[:space:]]|$)|^panic:' "$1"; }

stage_selfcheck() {
	step selfcheck selfcheck 180 "$bin/selfcheck"
	grep '^FAIL' "$work/selfcheck.log" >"$work/selfcheck.failures.txt"
}

stage_conformance() {
	local dir=$repo/testing/conformance/testdata d finished=0
	# The runner exits 1 when a test fails: the verdict is the comparison.
	for d in cuda cpu; do
		fold=0 step conformance "conformance-$d" 120 "$bin/conformance" --dir "$dir" --device "$d"
		if ! grep -qE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$work/conformance-$d.log" 2>/dev/null; then
			verdict conformance "FAIL (the $d run did not finish: conformance-$d.log)"
			continue
		fi
		finished=$((finished + 1))
		sed -n 's/: PASS$//p' "$work/conformance-$d.log" | sort >"$tmp/$d.pass"
	done
	[ $finished = 2 ] || return
	comm -23 "$tmp/cpu.pass" "$tmp/cuda.pass" >"$work/conformance-cpu-only.txt"
	local lost
	lost=$(wc -l <"$work/conformance-cpu-only.txt")
	detail[conformance]+="; $(wc -l <"$tmp/cpu.pass") pass on cpu, $(wc -l <"$tmp/cuda.pass") on cuda, $lost only on cpu"
	[ "$lost" = 0 ] || verdict conformance "FAIL ($lost tests pass on the cpu only: conformance-cpu-only.txt)"
}

stage_classify() {
	step classify classify 180 bash -c 'cd "$1" && BEAMML_REQUIRE_GPU=1 exec "$2" -test.v -test.count=1 -test.timeout=170s' \
		_ "$repo/examples/classify" "$bin/$(test_binary examples/classify)"
	test_failures "$work/classify.log" >"$work/classify.failures.txt"
}

# have_torch: python3 with numpy and a torch that sees the GPU; else
# torch_why says why not.
have_torch() {
	torch_why=$(bounded 90 "$python" "$repo/scripts/gpu/runtools.py" torch 2>&1) && return 0
	torch_why="the PyTorch reference needs python3 with numpy and a CUDA-enabled torch: ${torch_why:-$python does not answer}"
	return 1
}

# export_models STAGE NAME...: the named benchmark models in $models,
# exported where missing.
export_models() {
	local stage=$1 name missing=()
	shift
	for name; do [ -f "$models/$name.onnx" ] || missing+=("$name"); done
	[ ${#missing[@]} = 0 ] && return 0
	mkdir -p "$models" || return 1
	step "$stage" export-models 240 "$python" "$repo/scripts/gpu/bench_models.py" export "$models" "${missing[@]}"
}

stage_bench() {
	local names
	read -r -a names <<<"${BENCH_MODELS:-resnet50 bert}"
	have_torch || { not_run bench "$torch_why"; return; }
	export_models bench "${names[@]}" || return
	mkdir -p "$work/bench"
	local name p batches=1,8,32
	for name in "${names[@]}"; do
		step bench "$name-beamml" 120 "$bin/beamml-bench" -model "$models/$name.onnx" -device cuda -batch "$batches" \
			-n 20 -warmup 3 -json "$work/bench/$name.beamml.json" -dump "$tmp/dump-$name" -dump-batch 8
		for p in tf32 fp16; do
			step bench "$name-beamml-$p" 120 "$bin/beamml-bench" -model "$models/$name.onnx" -device cuda -batch "$batches" \
				-n 20 -warmup 3 -precision "$p" -json "$work/bench/$name.beamml-$p.json" -dump "$tmp/dump-$name-$p" -dump-batch 8
		done
		step bench "$name-reference" 180 "$python" "$repo/scripts/gpu/bench_models.py" reference "$models" "$name" "$batches" "$tmp/dump-$name"
		grep '^{' "$work/$name-reference.log" >"$work/bench/$name.reference.jsonl"
	done
	bounded 60 "$python" "$repo/scripts/gpu/bench_models.py" table "$work/bench" >"$work/bench/table.md" 2>&1
}

stage_sanitize() {
	local cs cu_test tool tools
	if ! cs=$(find_tool compute-sanitizer); then
		not_run sanitize "no compute-sanitizer (the CUDA toolkit's)"
		return
	fi
	cu_test=$(test_binary inference/cuda/cu)
	read -r -a tools <<<"${SANITIZE_TOOLS:-memcheck}"
	# A short run: copies, GEMMs, concurrent runs, and the operator cases
	# with shared memory and barriers (nn, norm, reduce, gather).
	local run=${SANITIZE_RUN:-'^(TestCopies|TestGemmMatchesSim|TestConcurrentRuns|TestOpsMatchCPU)$'}
	local skip=${SANITIZE_SKIP:-'^TestOpsMatchCPU$/^(shape|binary|logic|unary)$'}
	for tool in "${tools[@]}"; do
		case $tool in memcheck | racecheck | initcheck | synccheck) ;; *)
			verdict sanitize "FAIL (SANITIZE_TOOLS: no tool $tool)"
			continue
			;;
		esac
		step sanitize "sanitize-$tool" 150 bash -c 'cd "$1" && exec "$2" --tool "$3" --error-exitcode 99 --print-limit 20 "$4" -test.count=1 -test.run "$5" -test.skip "$6"' \
			_ "$repo/inference/cuda/cu" "$cs" "$tool" "$bin/$cu_test" "$run" "$skip"
	done
}

stage_ncu() {
	local ncu nsys model=$models/resnet50.onnx
	if [ ! -f "$model" ]; then
		if have_torch; then
			export_models ncu resnet50 || return
		else
			detail[ncu]="digits.onnx, not ResNet-50: $torch_why"
			model=$repo/examples/classify/digits.onnx
		fi
	fi
	mkdir -p "$work/profile"
	local run=("$bin/beamml-bench" -model "$model" -device cuda -batch 8 -n 0 -warmup 0)
	if ncu=$(find_tool ncu); then
		# --clock-control none: ncu would otherwise lock the clocks at base,
		# which neither the benchmarks nor production run at.
		step ncu ncu 240 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv --page raw --print-units base \
			--launch-count 5000 "${run[@]}" &&
			{ bounded 60 "$python" "$repo/scripts/gpu/runtools.py" kernel-times "$work/ncu.log" "$(basename "$model") at batch 8" \
				>"$work/profile/kernel-times.txt" 2>&1 || verdict ncu "FAIL (no kernel times in ncu.log: profile/kernel-times.txt)"; }
	elif nsys=$(find_tool nsys); then
		step ncu nsys 240 "$nsys" profile -t cuda --stats=true -o "$tmp/profile" --force-overwrite true "${run[@]}"
	else
		not_run ncu "neither ncu nor nsys is installed"
	fi
}

needs_gpu() { [ "$1" != env ]; }

# run_stage STAGE: runs it unless it cannot run here or now, publishing the
# results before and after.
run_stage() {
	local s=$1
	if needs_gpu "$s" && [ "$gpu" != yes ]; then
		case $gpu in
		no) not_run "$s" "no GPU" ;;
		*) not_run "$s" "the GPU cannot be used (GPU above)" ;;
		esac
		return
	fi
	if (($(left) < min_stage)); then
		not_run "$s" "out of time (DEADLINE=${deadline}s, ${SECONDS}s used)"
		return
	fi
	status[$s]=RUNNING
	publish
	log "stage $s"
	"stage_$s"
	[ "${status[$s]}" != RUNNING ] || status[$s]=PASS
	publish
}

# ------------------------------------------------------------------ main --

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=("${all_stages[@]}")
for s in "${stages[@]}"; do
	[[ " ${all_stages[*]} " == *" $s "* ]] || { echo "gpu-run.sh: no stage $s" >&2; usage; }
done
[[ $deadline =~ ^[0-9]+$ ]] && ((deadline >= reserve + min_stage)) ||
	{ echo "gpu-run.sh: DEADLINE=$deadline: want whole seconds, at least $((reserve + min_stage))" >&2; exit 2; }
[ -f "$bundle/payload.tar.xz" ] || { echo "gpu-run.sh: no payload.tar.xz in $bundle: build it with make gpu-bundle" >&2; exit 2; }
repo=$(cd "${REPO:-$bundle/../..}" 2>/dev/null && pwd)
[ -n "$repo" ] && [ -d "$repo/testing/conformance/testdata" ] && [ -d "$repo/scripts/gpu" ] || {
	echo "gpu-run.sh: ${REPO:-$bundle/../..} is not the beamml checkout the bundle was built in (no testing/conformance/testdata, scripts/gpu): run the bundle from out/gpu in its checkout, or set REPO" >&2
	exit 2
}

python=${PYTHON:-python3}
res=${OUT:-$(dirname "$bundle")/gpu-results}
mkdir -p "$res" || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/beamml-gpu-run.XXXXXX") || exit 2
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT
work=$tmp/results
mkdir -p "$work"
models=${MODELS_DIR:-${TMPDIR:-/tmp}/beamml-gpu-models-$(sha256sum <"$repo/scripts/gpu/bench_models.py" | cut -c1-12)}
gpu=unprobed gpu_why="" gpu_name="" cublas="" cublas_why="" libcuda="" nvml="" driver="" ld_cache=""
publish

log "unpacking $bundle/payload.tar.xz"
pay=$tmp/payload
mkdir -p "$pay"
if command -v xz >/dev/null; then
	bounded 120 bash -c 'xz -dc "$1" | tar -C "$2" -xf -' _ "$bundle/payload.tar.xz" "$pay"
else
	bounded 120 "$python" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle/payload.tar.xz" "$pay"
fi || { echo "gpu-run.sh: cannot unpack $bundle/payload.tar.xz" >&2; exit 2; }
bin=$pay/bin

find_libs
probe_gpu
log "GPU: $gpu${gpu_why:+ ($gpu_why)}; cuBLAS: ${cublas:-not found}; results in $res"
publish

for s in "${stages[@]}"; do
	run_stage "$s"
done

failed=0 missing_gpu=0
[ "$gpu" = unusable ] && failed=1
for s in "${stages[@]}"; do
	case ${status[$s]:-PENDING} in
	FAIL* | TIMEOUT* | "NOT RUN: out of time"*) failed=1 ;;
	"NOT RUN: no GPU"*) missing_gpu=1 ;;
	esac
done
publish
cat "$res/summary.txt"
if [ $failed = 1 ]; then exit 1; fi
if [ $missing_gpu = 1 ]; then exit 3; fi
exit 0
