# beamml: make demo runs the demo pipeline on prism; make test runs the
# tests a newcomer waits for; make check the rest, as CI does. demo and
# test need only Go (1.26 or newer); make check needs a C and C++ compiler
# as well (the race detector and the emulated CUDA kernels use cgo).

GO ?= go
# Packages whose tests run pipelines through ptest: run once on prism (the
# default) and once on the direct runner.
PIPELINE_PKGS := ./beam/runinference/ ./examples/classify/ ./examples/quickstart/
# make check's packages: the CUDA executor, whose tests run every operator
# on host-emulated kernels (the simulated device), and the GPU bring-up
# script on a fake device. make test runs the others, less CHECK_TESTS:
# the suites of other packages on the simulated device.
CHECK_PKGS := ./inference/cuda/ ./testing/gpurun/
# (= rather than :=: go list runs only for the targets that use it, not for make demo.)
TEST_PKGS = $(filter-out $(patsubst ./%/,github.com/beamml/beamml/%,$(CHECK_PKGS)),$(shell $(GO) list ./...))
CHECK_TESTS := ^(TestConformanceSim.*|TestRecurrentOnSimulatedDevice|TestExportsOnSimulatedDevice|TestWithCUDATag)$$
# Packages with concurrency: the shared model cache, the DoFns, the stub models.
# The GPU executor's package runs only its concurrency tests under the race
# detector: its 848 one-operator cases take minutes there and share no state.
RACE_PKGS := $(shell $(GO) list ./inference/... | grep -v 'inference/cuda$$') ./beam/runinference/ ./testing/stub/
CUDA_RACE_TESTS := TestConcurrentBatchesShareWeights|TestSteadyStateCopiesAndAllocations|TestOutOfMemory|TestMaxBatch|TestReplicaPerDevice|TestDeviceFaultIsFatal|TestGraphReplay

# go-nvml's header marks NVML calls deprecated; its cgo build would print
# hundreds of warnings.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

# ONNX's backend test data, in the repository (testing/conformance/testdata/README.md).
CONFORMANCE_DIR ?= testing/conformance/testdata

.PHONY: demo demo-streaming demo-tabular test test-direct check race build-nocgo lint bench bench-cpu conformance fuzz generate kernels ptxas build-cuda worker container

demo:
	$(GO) run ./examples/classify

# Classical ML: customer rows with string and numeric columns through a
# scikit-learn gradient-boosted classifier (examples/tabular), compared
# with scikit-learn's own predictions; out/tabular.
demo-tabular:
	$(GO) run ./examples/tabular

# The streaming demo on prism: a periodic source, fixed windows,
# MaxBatchDuration, one file per window in out/streaming. Not in
# PIPELINE_PKGS: the direct runner has no state or timers.
demo-streaming:
	$(GO) run ./examples/streaming

# What a newcomer runs to trust the project (at most 10 minutes cold on 2
# cores, docs/development.md): the unit tests, ONNX conformance on the
# CPU, and the pipeline tests on prism and on the direct runner. What it
# leaves out is make check's: the CUDA executor on the simulated device
# (CHECK_PKGS, and the suites CHECK_TESTS names in other packages), the GPU
# bring-up on a fake device, vet and gofmt, the CGO_ENABLED=0 build, the
# race detector and fuzzing.
test:
	$(GO) test -count=1 -skip '$(CHECK_TESTS)' $(TEST_PKGS)
	$(MAKE) --no-print-directory test-direct

test-direct:
	$(GO) test -count=1 $(PIPELINE_PKGS) -args -runner=direct

# Everything make test leaves out; CI runs make test, then make check,
# then the checks that need the CUDA toolkit (.ci/run).
check: lint build-nocgo
	$(GO) test -count=1 $(CHECK_PKGS)
	$(GO) test -count=1 -run '$(CHECK_TESTS)' $(TEST_PKGS)
	@if [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v "$$($(GO) env CC)" >/dev/null; then \
		$(MAKE) --no-print-directory race; \
	else \
		echo "NOT RUN: go test -race needs cgo and a C compiler ($$($(GO) env CC)); make race runs it"; exit 1; \
	fi
	$(MAKE) --no-print-directory fuzz

race:
	$(GO) test -race -count=1 $(RACE_PKGS)
	$(GO) test -race -count=1 -run '$(CUDA_RACE_TESTS)' ./inference/cuda/

# Beam cross-compiles workers with CGO_ENABLED=0: everything must build so.
build-nocgo:
	CGO_ENABLED=0 $(GO) build ./...

lint:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

# Benchmarks print go test's own tables; docs/performance.md quotes them.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./beam/runinference/

# The CPU-speed yardstick: the CPU backend vs ONNX Runtime on twelve neural
# models and a chain of 64 elementwise nodes (the per-run overhead) at
# batch 1 and 8 and three tree ensembles at 10,000 rows, 1 and 2 threads;
# docs/performance.md's tables come from it. Needs Debian's
# python3-torchvision, python3-sklearn, python3-xgboost, node and npm
# (scripts/bench-cpu.sh). BENCH_ARGS go to testing/benchcpu:
# BENCH_ARGS='--threads 1 --batches 8 --models bert' times one model.
BENCH_ARGS ?=
bench-cpu:
	bash scripts/bench-cpu.sh $(BENCH_ARGS)

# Every model of bench-cpu through the GPU path on the simulated device:
# no node on the host, the CPU backend's outputs in FP32, and what TF32 and
# FP16 mean (cuda.Reference) in those modes (scripts/sim-models.sh).
.PHONY: sim-models
sim-models:
	bash scripts/sim-models.sh

# What the GPU path asks of the device per steady-state batch (launches,
# GEMMs, copies, memory) on the simulated device, as docs/gpu.md's table
# (scripts/sim-work.sh).
.PHONY: sim-work
sim-work:
	bash scripts/sim-work.sh

# One line per ONNX conformance test, then the counts.
conformance:
	$(GO) run ./testing/conformance --dir $(CONFORMANCE_DIR)

# Bounded fuzzing of the decoders that read untrusted bytes, and of the CPU
# kernels on what a model may hand them.
FUZZTIME ?= 30s
FUZZ_TARGETS ?= FuzzDecode:./inference/onnx/ FuzzTensorUnmarshal:./inference/ \
	FuzzDecodeTensors:./inference/ FuzzRunNode:./inference/cpu/
fuzz:
	GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

# The ONNX protobuf code, from internal/onnxpb/onnx.proto.
generate:
	GOBIN=$(CURDIR)/out/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	PATH=$(CURDIR)/out/bin:$$PATH $(GO) generate ./internal/onnxpb/

# The CUDA kernels (internal/kernels/README.md): for each NAME.cu, the
# compute_60 PTX (ptx/NAME.ptx: readable, checked by ptxas, where the entry
# points are read from) and the image the device loads (fatbin/NAME.fatbin:
# SASS for FATBIN_SASS, so no process waits for the JIT on those GPUs; PTX
# for FATBIN_PTX, which the driver JITs on the others: compute_60 for
# P100/P4/V100, compute_90, CUDA 11.8's newest, for GPUs after Hopper;
# every image compressed), all committed and embedded; and what kernelgen
# derives from the sources: the Go constants of their codes and entry
# points (internal/kernels/codes_gen.go) and the emulator's registration
# files. Both nvcc outputs are the same bytes on every run and in every
# checkout, so CI regenerates them and diffs. go test ./internal/kernels/...
# checks kernelgen's files, and that every fatbin holds exactly FATBIN_SASS
# and FATBIN_PTX (internal/kernels's SASSArchs and PTXArchs), without nvcc.
# Needs nvcc (Debian's nvidia-cuda-toolkit 11.8 from non-free) and clang-14
# or g++-11 as its host compiler.
NVCC ?= nvcc
CCBIN ?= $(shell command -v clang-14 || command -v g++-11)
KERNEL_DIR := internal/kernels
KERNEL_SRCS := $(wildcard $(KERNEL_DIR)/*.cu)
PTX_TARGETS := sm_60 sm_70 sm_75 sm_80 sm_86 sm_89 sm_90
FATBIN_SASS := 75 80 86 89 90
FATBIN_PTX := 60 90
FATBIN_GENCODE := $(foreach a,$(FATBIN_SASS),-gencode arch=compute_$(a),code=sm_$(a)) \
	$(foreach a,$(FATBIN_PTX),-gencode arch=compute_$(a),code=compute_$(a))
kernels:
	$(GO) run ./$(KERNEL_DIR)/kernelgen $(KERNEL_DIR)
	mkdir -p $(KERNEL_DIR)/fatbin
	for out in $(KERNEL_DIR)/ptx/*.ptx $(KERNEL_DIR)/fatbin/*.fatbin; do \
		name=$$(basename $$out); [ -e $(KERNEL_DIR)/$${name%.*}.cu ] || rm -f $$out; \
	done
	for src in $(KERNEL_SRCS); do \
		name=$$(basename $$src .cu); \
		$(NVCC) -ccbin $(CCBIN) -ptx -arch=compute_60 -O3 -o $(KERNEL_DIR)/ptx/$$name.ptx $$src || exit 1; \
		$(NVCC) -ccbin $(CCBIN) -fatbin $(FATBIN_GENCODE) -Xfatbin=-compress-all -O3 -o $(KERNEL_DIR)/fatbin/$$name.fatbin $$src || exit 1; \
	done

# Assemble the committed PTX for every GPU generation we support, and list
# what each committed fatbin holds (cuobjdump): SASS for exactly
# FATBIN_SASS, PTX for exactly FATBIN_PTX.
FATBIN_WANT := $(sort $(foreach a,$(FATBIN_SASS),elf:sm_$(a)) $(foreach a,$(FATBIN_PTX),ptx:sm_$(a)))
ptxas:
	@for ptx in $(KERNEL_DIR)/ptx/*.ptx; do for arch in $(PTX_TARGETS); do \
		ptxas -arch=$$arch -o /dev/null $$ptx || { echo "ptxas $$arch $$ptx failed"; exit 1; }; \
	done; echo "ptxas ok: $$ptx for $(PTX_TARGETS)"; done
	@for fb in $(KERNEL_DIR)/fatbin/*.fatbin; do \
		got=$$(cuobjdump --list-elf --list-ptx $$fb | sed -n 's/^ELF file.*\.\(sm_[0-9]*\)\.cubin$$/elf:\1/p; s/^PTX file.*\.\(sm_[0-9]*\)\.ptx$$/ptx:\1/p' | sort | xargs); \
		[ "$$got" = "$(FATBIN_WANT)" ] || { echo "cuobjdump $$fb: $$got; want $(FATBIN_WANT)"; exit 1; }; \
		echo "cuobjdump ok: $$fb holds $$got ($$(wc -c <$$fb) bytes)"; \
	done

# The GPU build: links gorgonia.org/cu and the CUDA driver library, and
# links the cuda-tagged tests, which run only where a GPU is (their binary
# exits with status 2 at init without one; inference/cuda/cu). The tests of
# the cuBLAS loader and of the CUDA results' classification need no GPU and
# run here.
build-cuda:
	CGO_ENABLED=1 $(GO) build -tags cuda ./...
	CGO_ENABLED=1 $(GO) vet -tags cuda ./...
	CGO_ENABLED=1 $(GO) test -tags cuda -c -o /dev/null ./inference/cuda/cu/
	CGO_ENABLED=1 $(GO) test -count=1 -tags cuda ./inference/cuda/cu/internal/cublas/ ./inference/cuda/cu/internal/curesult/ ./inference/gpuinfo/

# The GPU self-check: lists the GPUs, compares every operator case (and
# SELFCHECK_ARGS='--model m.onnx') on the GPU with the CPU. Exit 0: all
# match, 1: a mismatch, 2: no GPU. Built without SELFCHECK_TAGS=cuda it has
# no GPU code, says so and exits 2. Built, then run, so that make sees the
# status (go run reports every failure as 1).
SELFCHECK_TAGS ?=
SELFCHECK_ARGS ?=
.PHONY: selfcheck
selfcheck:
	$(GO) build -tags '$(SELFCHECK_TAGS)' -o out/bin/selfcheck ./container/selfcheck
	out/bin/selfcheck $(SELFCHECK_ARGS)

# The Dataflow GPU worker: the pipeline binary built with cgo and the cuda
# tag, for linux/amd64 (needs the CUDA toolkit: Debian's nvidia-cuda-toolkit
# or NVIDIA's), then checked (container/checkworker): the worker's program,
# and that it can start in container/Dockerfile's image (glibc, shared
# libraries; cuBLAS is loaded at run time, so any toolkit major will do).
# Pass it to the launcher with --gpu_worker_binary.
WORKER_PKG ?= ./examples/dataflow
worker:
	CGO_ENABLED=1 GOOS=linux GOARCH=amd64 $(GO) build -tags cuda -trimpath -o out/worker $(WORKER_PKG)
	$(GO) run ./container/checkworker --package "$$($(GO) list $(WORKER_PKG))" out/worker

# The container image (where Docker runs): make container IMAGE=…
IMAGE ?= beamml-gpu:dev
container:
	docker build -f container/Dockerfile --build-arg WORKER_PKG=$(WORKER_PKG) -t $(IMAGE) .

# The Dataflow worker path without Docker (testing/e2e): builds Beam's boot
# binary and prism from go.mod's Beam version, and the pipeline twice
# (launcher, and CGO_ENABLED=0 worker); boot fetches the staged worker from
# prism and runs it. go test ./... runs it too; this runs it alone, verbosely.
.PHONY: e2e
e2e:
	$(GO) test -count=1 -v -run '^TestWorkerPath$$' ./testing/e2e/

# The GPU bring-up bundle: the binaries a GPU machine without Go needs to
# check the CUDA backend (the cuda-tagged test binaries, the self-check, the
# conformance runner, beamml-bench), built here with the CUDA toolkit and no
# GPU into out/gpu/; they read their data from the checkout beside them.
# Fails when a device call (this checkout and out/gpu) would send over
# 60 MiB. There: bash out/gpu/gpu-run.sh [STAGE...], in two calls
# (docs/gpu/README.md); scripts/gpu-run.sh says what each stage does.
.PHONY: gpu-bundle
gpu-bundle:
	bash scripts/gpu-bundle.sh
