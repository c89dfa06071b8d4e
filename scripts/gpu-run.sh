#!/usr/bin/env bash
# gpu-run.sh: check beamml's CUDA backend on a GPU machine, from the bundle
# that make gpu-bundle builds (out/gpu/: this script, payload.tar.xz,
# MANIFEST.txt). The GPU machine needs the NVIDIA driver and bash, tar, xz
# (or python3); no Go, no network.
#
#   bash out/gpu/gpu-run.sh [STAGE ...]        (default: every stage, in order)
#
# Stages; each command in one is bounded by a timeout, and none stops the
# others:
#   env          GPU, driver, glibc, toolkit tools, cuBLAS and the other
#                libraries found, Python packages; every binary's shared
#                libraries and libcuda symbols resolve (ldd -r). No GPU needed.
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
#                128), exported by py/bench_models.py with this machine's
#                torch: beamml-bench vs PyTorch fp32, tf32, fp16 autocast and
#                ONNX Runtime's CUDA EP where it imports; outputs compared on
#                one batch. BENCH_MODELS="resnet50" times one.
#   sanitize     compute-sanitizer memcheck, racecheck, initcheck, synccheck
#                on a short cu.test run (SANITIZE_RUN, SANITIZE_SKIP: its
#                -test.run and -test.skip)
#   ncu          time per kernel of one ResNet-50 batch of 8 under ncu
#                (nsys where ncu is missing)
#
# Results go to $OUT when it is set, else to results/ beside this script:
# one log per command, bench/ and profile/ tables, and summary.txt, with one
# line per stage run: PASS, FAIL (rc), TIMEOUT, or NOT RUN: why. Exported
# models stay in models/ beside this script (MODELS_DIR), for later pieces.
# PYTHON names the Python with torch (default python3). Where libcublas is
# not in the loader's cache, BEAMML_CUBLAS is pointed at the toolkit's or
# the Python packages' copy.
#
# Exit status:
#   0  every stage that ran passed (stages NOT RUN for want of a tool, such
#      as ncu or torch, do not count)
#   1  a stage failed or timed out
#   2  usage: an unknown stage, or no payload.tar.xz beside the script
#   3  no stage failed, but the stages that need a GPU were NOT RUN: this
#      machine has no GPU (no nvidia-smi listing one, no /dev/nvidia0, or
#      cuInit fails)
#
# Under a limit of 10 minutes per command, run it in pieces (each piece
# writes its own summary.txt):
#   gpu-run.sh env load unit selfcheck
#   gpu-run.sh conformance classify
#   BENCH_MODELS=resnet50 gpu-run.sh bench
#   BENCH_MODELS=bert gpu-run.sh bench
#   gpu-run.sh sanitize
#   gpu-run.sh ncu
set -uo pipefail

bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
all_stages=(env load unit selfcheck conformance classify bench sanitize ncu)
no_gpu_stages=" env "

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
usage() { sed -n '2,/^set -uo pipefail/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# ------------------------------------------------------ results per stage --

declare -A status detail # stage → PASS | FAIL (rc) | TIMEOUT | NOT RUN: why; stage → its commands' outcomes

# step STAGE NAME SECONDS CMD...: runs CMD with a timeout, output in
# $res/NAME.log, and folds its outcome into the stage's status (unless
# fold=0: a command whose exit status is not the verdict). Returns CMD's
# status.
step() {
	local stage=$1 name=$2 limit=$3
	shift 3
	log "$stage: $name"
	local start=$SECONDS rc outcome
	printf '$ %s\n' "$*" >"$res/$name.log"
	timeout -k 10 "$limit" "$@" >>"$res/$name.log" 2>&1
	rc=$?
	case $rc in
	0) outcome=PASS ;;
	124 | 137) outcome="TIMEOUT after ${limit}s" ;;
	*) outcome="FAIL ($rc)" ;;
	esac
	detail[$stage]+="${detail[$stage]:+; }$name: $outcome, $((SECONDS - start))s"
	if [ "${fold:-1}" = 1 ]; then verdict "$stage" "$outcome"; fi
	tail -n 3 "$res/$name.log" | sed 's/^/    | /' >&2
	return $rc
}

# verdict STAGE OUTCOME: the stage's status becomes OUTCOME unless it is
# already a failure.
verdict() {
	case ${status[$1]:-PASS} in
	PASS) status[$1]=$2 ;;
	esac
}

not_run() { status[$1]="NOT RUN: $2"; }

# --------------------------------------------------------------- setup --

# find_tool NAME: NAME on PATH or in the toolkit's usual folders.
find_tool() {
	local d
	command -v "$1" && return 0
	for d in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer /opt/nvidia/nsight-compute/* /usr/local/cuda/nsight-compute-*; do
		[ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}

# probe_gpu: sets gpu to yes, broken (the driver lists a GPU that our
# binaries cannot use) or no, and why to the reason when not yes.
probe_gpu() {
	local smi="" reasons=()
	if ! command -v nvidia-smi >/dev/null; then
		reasons+=("no nvidia-smi")
	elif smi=$(nvidia-smi -L 2>&1) && grep -q '^GPU ' <<<"$smi"; then
		smi=listed
	else
		reasons+=("nvidia-smi lists no GPU")
	fi
	[ -e /dev/nvidia0 ] || reasons+=("no /dev/nvidia0")
	# A binary built with the cuda tag calls cuInit before main and exits 2
	# when it fails (inference/cuda/cu).
	timeout -k 10 120 env CUDA_CACHE_DISABLE=1 "$bin/beamml-bench" -load-kernels >"$res/gpu-probe.log" 2>&1
	local rc=$?
	if [ $rc = 0 ]; then
		gpu=yes
		return
	fi
	local init
	init=$(grep -m1 -o 'cuInit failed: [A-Z_]*' "$res/gpu-probe.log") || init="beamml-bench -load-kernels exits $rc (gpu-probe.log)"
	reasons+=("$init")
	why=$(printf '%s; ' "${reasons[@]}")
	why=${why%; }
	if [ "$smi" = listed ]; then gpu=broken; else gpu=no; fi
}

# find_cublas: where libcublas is not in the loader's cache, points
# BEAMML_CUBLAS at the toolkit's or a Python package's copy (and
# LD_LIBRARY_PATH at its folder, for libcublasLt beside it).
find_cublas() {
	[ -z "${BEAMML_CUBLAS:-}" ] || return 0
	ldconfig -p 2>/dev/null | grep -qE 'libcublas\.so\.1[123] ' && return 0
	local dirs c
	dirs=$("$python" -c 'import os, importlib.util as u
for m, sub in (("nvidia.cublas", "lib"), ("torch", "lib")):
    s = u.find_spec(m)
    if s and s.submodule_search_locations: print(os.path.join(list(s.submodule_search_locations)[0], sub))' 2>/dev/null)
	for c in /usr/local/cuda/lib64/libcublas.so.1[123] $(for d in $dirs; do ls "$d"/libcublas.so.1[123] 2>/dev/null; done); do
		[ -f "$c" ] || continue
		export BEAMML_CUBLAS=$c LD_LIBRARY_PATH=$(dirname "$c")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		log "cuBLAS: $c"
		return 0
	done
}

# unpack: the payload into $tmp/payload.
unpack() {
	mkdir -p "$tmp/payload"
	if command -v xz >/dev/null; then
		xz -dc "$bundle/payload.tar.xz" | tar -C "$tmp/payload" -xf -
	else
		"$python" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle/payload.tar.xz" "$tmp/payload"
	fi
}

# test_binary PKG: the test binary of package folder PKG (tests.tsv).
test_binary() { awk -F'\t' -v p="$1" '$2 == p { print $1 }' "$pay/tests.tsv"; }

# ---------------------------------------------------------------- stages --

stage_env() {
	{
		echo "## host"; uname -a; ldd --version | head -1; echo "cpus: $(nproc)"; free -g | head -2
		echo; echo "## GPU"; nvidia-smi 2>&1
		nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total,compute_mode,mig.mode.current,clocks.max.sm,power.limit --format=csv 2>&1
		cat /proc/driver/nvidia/version 2>&1; ls -l /dev/nvidia* 2>&1
		echo; echo "## probe (beamml-bench -load-kernels, cold JIT)"; cat "$res/gpu-probe.log"
		echo; echo "## tools"
		local t
		for t in nvcc ptxas compute-sanitizer ncu nsys; do
			printf '%-18s %s\n' "$t" "$(p=$(find_tool $t) && echo "$p: $("$p" --version 2>&1 | grep -m1 -iE 'release|version')" || echo "not found")"
		done
		echo; echo "## libraries"; echo "BEAMML_CUBLAS=${BEAMML_CUBLAS:-<unset: the loader tries libcublas.so.12, .13, .11>}"
		ldconfig -p | grep -E 'libcuda\.so|libcublas|libnvidia-ml|libcudart' || echo "none of libcuda, libcublas, libnvidia-ml, libcudart in the loader's cache"
		echo; echo "## python"
		"$python" -c 'import sys; print("python", sys.version.split()[0])' 2>&1
		local m
		for m in torch torchvision onnxruntime numpy; do
			"$python" -c "import $m; print('$m', $m.__version__, getattr(getattr($m, 'version', None), 'cuda', '') or '', ($m.get_available_providers() if '$m' == 'onnxruntime' else ''))" 2>&1 | tail -1
		done
		echo; echo "## binaries"
		for t in "$bin"/*; do echo "--- $(basename "$t")"; ldd "$t" 2>&1; done
	} >"$res/env.txt" 2>&1
	export -f check_libraries
	step env ldd 120 bash -c 'check_libraries "$1"' _ "$bin"
}

# check_libraries DIR: every library of every binary in DIR is found, and
# every symbol they take from libcuda resolves against this machine's
# (gorgonia.org/cu binds ~300 driver entry points). go-nvml's nvml*
# symbols are looked up with dlsym, so ldd -r lists them as undefined by
# design.
check_libraries() {
	local b bad rc=0
	for b in "$1"/*; do
		bad=$(ldd -r "$b" 2>&1 | grep -E 'not found|undefined symbol: cu[A-Z]')
		[ -z "$bad" ] || { echo "$b:"; echo "$bad"; rc=1; }
	done
	[ $rc = 1 ] || echo "every library and libcuda symbol of the $(ls "$1" | wc -l) binaries resolves"
	return $rc
}

stage_load() {
	step load jit-cold 180 env CUDA_CACHE_DISABLE=1 "$bin/beamml-bench" -load-kernels
	step load jit-fill-cache 180 env CUDA_CACHE_PATH="$tmp/nv-cache" "$bin/beamml-bench" -load-kernels
	step load jit-from-cache 180 env CUDA_CACHE_PATH="$tmp/nv-cache" "$bin/beamml-bench" -load-kernels
	local ptxas sm
	if ptxas=$(find_tool ptxas); then
		sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
		[[ $sm =~ ^[0-9]+$ ]] || { detail[load]+="; ptxas not run: nvidia-smi gives no compute capability"; return; }
		sm=sm_$sm
		step load "ptxas-$sm" 300 bash -c 'for p in "$2"/*.ptx; do "$1" -arch="$3" -o /dev/null "$p" || exit 1; echo "ok: $p"; done' _ "$ptxas" "$pay/ptx" "$sm"
	fi
}

stage_unit() {
	local binary pkg skip='^TestConformance$'
	[ "${UNIT_CONFORMANCE:-0}" = 1 ] && skip='^$'
	while IFS=$'\t' read -r binary pkg; do
		[ "$pkg" = examples/classify ] && continue # the classify stage's
		step unit "$binary" 420 bash -c 'cd "$1" && exec "$2" -test.v -test.count=1 -test.timeout=400s -test.skip "$3"' \
			_ "$pay/src/$pkg" "$bin/$binary" "$skip"
		grep -E '^(--- FAIL|FAIL|ok|PASS)' "$res/$binary.log" >"$res/$binary.failures.txt"
	done <"$pay/tests.tsv"
}

stage_selfcheck() {
	step selfcheck selfcheck 300 "$bin/selfcheck"
	grep '^FAIL' "$res/selfcheck.log" >"$res/selfcheck.failures.txt"
}

stage_conformance() {
	local dir=$pay/src/testing/conformance/testdata d
	# The runner exits 1 when a test fails: the verdict is the comparison.
	for d in cuda cpu; do
		fold=0 step conformance "conformance-$d" 270 "$bin/conformance" --dir "$dir" --device "$d"
		if ! grep -qE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$res/conformance-$d.log"; then
			verdict conformance "FAIL (the $d run did not finish: conformance-$d.log)"
		fi
		sed -n 's/: PASS$//p' "$res/conformance-$d.log" | sort >"$tmp/$d.pass"
	done
	comm -23 "$tmp/cpu.pass" "$tmp/cuda.pass" >"$res/conformance-cpu-only.txt"
	local lost
	lost=$(wc -l <"$res/conformance-cpu-only.txt")
	detail[conformance]+="; $(wc -l <"$tmp/cpu.pass") pass on cpu, $(wc -l <"$tmp/cuda.pass") on cuda, $lost only on cpu"
	[ "$lost" = 0 ] || verdict conformance "FAIL ($lost tests pass on the cpu only: conformance-cpu-only.txt)"
}

stage_classify() {
	step classify classify 300 bash -c 'cd "$1" && BEAMML_REQUIRE_GPU=1 exec "$2" -test.v -test.count=1' \
		_ "$pay/src/examples/classify" "$bin/$(test_binary examples/classify)"
}

# have_torch: python3 with numpy and a torch that sees the GPU.
have_torch() {
	"$python" -c 'import sys, numpy, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1
}

# export_models: the benchmark models in $models, exported once.
export_models() {
	[ -f "$models/resnet50.onnx" ] && [ -f "$models/bert.onnx" ] && return 0
	step "$1" export-models 600 "$python" "$pay/py/bench_models.py" export "$models"
}

stage_bench() {
	if ! have_torch; then
		not_run bench "python3 with numpy and a CUDA-enabled torch is needed to export the models"
		return
	fi
	export_models bench || return
	mkdir -p "$res/bench"
	local name batches
	for name in ${BENCH_MODELS:-resnet50 bert}; do
		batches=1,8,32
		step bench "$name-beamml" 270 "$bin/beamml-bench" -model "$models/$name.onnx" -device cuda -batch "$batches" \
			-n 20 -warmup 3 -json "$res/bench/$name.beamml.json" -dump "$tmp/dump-$name" -dump-batch 8
		local p
		for p in tf32 fp16; do
			step bench "$name-beamml-$p" 270 "$bin/beamml-bench" -model "$models/$name.onnx" -device cuda -batch "$batches" \
				-n 20 -warmup 3 -precision "$p" -json "$res/bench/$name.beamml-$p.json"
		done
		step bench "$name-reference" 270 "$python" "$pay/py/bench_models.py" reference "$models" "$name" "$batches" "$tmp/dump-$name"
		cp "$res/$name-reference.log" "$res/bench/$name.reference.jsonl"
	done
	"$python" "$pay/py/bench_models.py" table "$res/bench" >"$res/bench/table.md" 2>&1
}

stage_sanitize() {
	local cs cu_test tool
	if ! cs=$(find_tool compute-sanitizer); then
		not_run sanitize "no compute-sanitizer (the CUDA toolkit's)"
		return
	fi
	cu_test=$(test_binary inference/cuda/cu)
	# A short run: copies, GEMMs, concurrent runs, and the operator cases
	# with shared memory and barriers (nn, norm, reduce, gather).
	local run=${SANITIZE_RUN:-'^(TestCopies|TestGemmMatchesSim|TestConcurrentRuns|TestOpsMatchCPU)$'}
	local skip=${SANITIZE_SKIP:-'^TestOpsMatchCPU$/^(shape|binary|logic|unary)$'}
	for tool in memcheck racecheck initcheck synccheck; do
		step sanitize "sanitize-$tool" 140 bash -c 'cd "$1" && exec "$2" --tool "$3" --error-exitcode 99 --print-limit 20 "$4" -test.count=1 -test.run "$5" -test.skip "$6"' \
			_ "$pay/src/inference/cuda/cu" "$cs" "$tool" "$bin/$cu_test" "$run" "$skip"
	done
}

stage_ncu() {
	local ncu nsys model=$models/resnet50.onnx
	if [ ! -f "$model" ]; then
		if have_torch; then export_models ncu || return; else model=$pay/src/examples/classify/digits.onnx; fi
	fi
	mkdir -p "$res/profile"
	local run=("$bin/beamml-bench" -model "$model" -device cuda -batch 8 -n 0 -warmup 0)
	if ncu=$(find_tool ncu); then
		step ncu ncu 540 "$ncu" --metrics gpu__time_duration.sum --csv --page raw --print-units base --launch-count 5000 "${run[@]}" &&
			kernel_times "$res/ncu.log" "$(basename "$model") at batch 8" >"$res/profile/kernel-times.txt"
	elif nsys=$(find_tool nsys); then
		step ncu nsys 540 "$nsys" profile -t cuda --stats=true -o "$tmp/profile" --force-overwrite true "${run[@]}"
	else
		not_run ncu "neither ncu nor nsys is installed"
	fi
}

# kernel_times LOG WHAT: ncu's CSV durations summed per kernel, largest first.
kernel_times() {
	"$python" - "$1" "$2" <<'EOF'
import collections, csv, sys
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
total, count = collections.Counter(), collections.Counter()
for r in csv.DictReader(rows):
    try:
        ns = float(r["gpu__time_duration.sum"])
    except (KeyError, ValueError):
        continue
    name = r.get("Kernel Name", "?")[:70]
    total[name] += ns
    count[name] += 1
all_ns = sum(total.values()) or 1
print(f"{sys.argv[2]}: {all_ns / 1e6:.2f} ms of kernels in {sum(count.values())} launches")
for name, ns in total.most_common(30):
    print(f"{ns / 1e6:9.3f} ms {100 * ns / all_ns:5.1f}%  x{count[name]:<5d} {name}")
EOF
}

# ------------------------------------------------------------------ main --

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=("${all_stages[@]}")
for s in "${stages[@]}"; do
	[[ " ${all_stages[*]} " == *" $s "* ]] || { echo "gpu-run.sh: no stage $s" >&2; usage; }
done
[ -f "$bundle/payload.tar.xz" ] || { echo "gpu-run.sh: no payload.tar.xz in $bundle: build it with make gpu-bundle" >&2; exit 2; }

python=${PYTHON:-python3}
res=${OUT:-$bundle/results}
mkdir -p "$res" || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/beamml-gpu-run.XXXXXX") || exit 2
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT
models=${MODELS_DIR:-$bundle/models}
mkdir -p "$models" 2>/dev/null || models=$tmp/models
log "unpacking $bundle/payload.tar.xz"
unpack || { echo "gpu-run.sh: cannot unpack $bundle/payload.tar.xz" >&2; exit 2; }
pay=$tmp/payload
bin=$pay/bin
find_cublas
gpu=no why=""
probe_gpu
log "GPU: $gpu${why:+ ($why)}; results in $res"

for s in "${stages[@]}"; do
	if [ "$gpu" != yes ] && [[ $no_gpu_stages != *" $s "* ]] && ! { [ "$gpu" = broken ] && [ "$s" = load ]; }; then
		if [ "$gpu" = broken ]; then not_run "$s" "the GPU that nvidia-smi lists does not answer ($why)"; else not_run "$s" "no GPU"; fi
		continue
	fi
	"stage_$s"
done

failed=0 missing_gpu=0
{
	echo "beamml GPU run, $(date -u +%FT%TZ), on $(hostname)"
	if [ "$gpu" = yes ]; then
		echo "GPU:    $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null | head -1)"
	else
		echo "GPU:    none usable: $why"
	fi
	echo "bundle: $(sed -n 's/^commit: *//p' "$bundle/MANIFEST.txt" 2>/dev/null)"
	echo
	for s in "${stages[@]}"; do
		printf '%-12s %s\n' "$s" "${status[$s]:-PASS}${detail[$s]:+  [${detail[$s]}]}"
	done
	for f in bench/table.md profile/kernel-times.txt; do
		[ -s "$res/$f" ] && { echo; cat "$res/$f"; }
	done
} >"$res/summary.txt"
for s in "${stages[@]}"; do
	case ${status[$s]:-PASS} in
	FAIL* | TIMEOUT*) failed=1 ;;
	"NOT RUN: no GPU"*) missing_gpu=1 ;;
	esac
done
# Keep what comes back from a device machine small.
find "$res" -name '*.log' -size +2M -exec gzip -9f {} \;
cat "$res/summary.txt"
if [ $failed = 1 ]; then exit 1; fi
if [ $missing_gpu = 1 ]; then exit 3; fi
exit 0
