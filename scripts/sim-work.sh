#!/usr/bin/env bash
# make sim-work: what the GPU path asks of the device for one steady-state
# batch, counted on the simulated device (cmd/beamml-bench -device sim):
# kernel launches, cuBLAS GEMMs, copies each way, the calls that queue
# them (with CUDA graphs one, a replay; without, BEAMML_CUDA_GRAPHS=0, one
# per launch, GEMM and copy), and the device memory a model holds besides
# its weights, for ResNet-50, MobileNetV2, the
# BERT-style encoder and the ViT of make bench-cpu, at batch 2 (sequence
# 16 for the encoder). The counts do not depend on the batch size. Prints
# the markdown table the README quotes, and fails (exit 1) when a model
# breaks issue 15's bounds: ResNet-50 and the BERT-style encoder at most 60
# kernel launches per batch, one call with CUDA graphs, and no
# device-to-device copy for any model (views are free). .ci/run runs it.
#
# Needs what scripts/sim-models.sh needs (Go with cgo, Debian's
# python3-torchvision to export the models into out/bench-cpu).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=out/bench-cpu
mkdir -p "$dir"
if ! /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
	echo "sim-work: /usr/bin/python3 lacks torchvision (apt-get install python3-torchvision)" >&2
	exit 1
fi
/usr/bin/python3 scripts/export_bench_models.py "$dir" >/dev/null || exit 1
go build -o out/bin/beamml-bench ./cmd/beamml-bench || exit 1

echo "| model | kernel launches | GEMMs | host→device | device→host | device→device | calls (graph) | calls (no graph) | device MiB besides weights |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
failed=0
for model in resnet50 mobilenet_v2 bert vit; do
	json=$(mktemp) eager=$(mktemp)
	if ! out/bin/beamml-bench -device sim -model "$dir/$model.onnx" -batch 2 -dynamic 16 -n 0 -warmup 0 -json "$json" >/dev/null ||
		! BEAMML_CUDA_GRAPHS=0 out/bin/beamml-bench -device sim -model "$dir/$model.onnx" -batch 2 -dynamic 16 -n 0 -warmup 0 -json "$eager" >/dev/null; then
		echo "| $model | failed: see out/bin/beamml-bench -device sim -model $dir/$model.onnx | | | | | | | |"
		failed=1
		continue
	fi
	/usr/bin/python3 - "$model" "$json" "$eager" <<'PY'
import json, sys
w = json.load(open(sys.argv[2]))["device_work"]
e = json.load(open(sys.argv[3]))["device_work"]
model = sys.argv[1]
print(f"| {model} | {w['launches']} | {w['gemms']} | {w['copies_htod']} | {w['copies_dtoh']} | "
      f"{w['copies_dtod']} | {w['calls']} | {e['calls']} | {w['device_bytes'] / 2**20:.1f} |")
broken = []
if model in ("resnet50", "bert") and w["launches"] > 60:
    broken.append(f"{w['launches']} kernel launches, at most 60")
if w["copies_dtod"] > 0:
    broken.append(f"{w['copies_dtod']} device-to-device copies, want none")
if w["calls"] != 1:
    broken.append(f"{w['calls']} calls with CUDA graphs, want 1")
for b in broken:
    print(f"sim-work: {model}: {b}", file=sys.stderr)
sys.exit(1 if broken else 0)
PY
	[ $? = 0 ] || failed=1
	rm -f "$json" "$eager"
done
exit $failed
