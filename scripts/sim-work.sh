#!/usr/bin/env bash
# make sim-work: what the GPU path asks of the device for one steady-state
# batch, counted on the simulated device (cmd/beamml-bench -device sim):
# kernel launches, cuBLAS GEMMs, copies each way, the calls that queue
# them (with CUDA graphs one, a replay; without, BEAMML_CUDA_GRAPHS=0, one
# per launch, GEMM and copy), and the device memory a model holds besides
# its weights, for ResNet-50, MobileNetV2, the BERT-style encoder and the
# ViT of make bench-cpu, in the default precision and in FP16 mode
# (-precision fp16), and the float16 twins of ResNet-50 and the encoder,
# at batch 2 (sequence 16 for the encoder); then for tabular models of
# testing/mlmodels with tree ensembles, at batch 2. The counts do not
# depend on the batch size. Prints the markdown table docs/gpu.md quotes,
# and fails (exit 1) when a model breaks issue 15's bounds: ResNet-50 and
# the BERT-style encoder at most 60 kernel launches per batch (in either
# mode), one call
# with CUDA graphs, no device-to-device copy (views are free), no node on
# the host, and for the float16 twins no cast_convert but the model's own
# Casts (they run on their float16 kernels); or issue 32's for the
# tabular models: two launches per tree ensemble node (tree_walk_*: the
# walk and the aggregate; tree_finish: the base values, the post
# transform and the labels), one call with CUDA graphs and no node on the
# host (ZipMap's output, the scores, is a copy on the device; string
# labels and inputs stay on the host at the edges, outside the plan), and
# a device-to-device copy only for a graph output that a Cast or a ZipMap
# makes of a value (skl2onnx's Cast of the int64 label to int64, ZipMap's
# scores): the plan does not yet let the value's producer write into the
# graph output. .ci/run runs it.
#
# With arguments, only the rows named (resnet50, bert:fp16, rf_500_trees,
# …). Needs what scripts/sim-models.sh needs (Go with cgo, Debian's
# python3-torchvision to export the models into out/bench-cpu) and
# python3-onnx.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=out/bench-cpu
tabular=testing/mlmodels/testdata
runs=("$@")
if [ ${#runs[@]} = 0 ]; then
	runs=(resnet50 mobilenet_v2 bert vit resnet50:fp16 mobilenet_v2:fp16 bert:fp16 vit:fp16 resnet50_float16 bert_float16
		rf_500_trees xgb_multiclass_softprob hist_gb_classifier tree_ensemble5_gb_multiclass double_input_tree)
fi
exported=1
for run in "${runs[@]}"; do
	[ -e "$tabular/${run%:*}/model.onnx" ] || exported=0
done
mkdir -p "$dir"
if [ $exported = 1 ]; then
	: # tabular models only: nothing to export
elif ! /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
	echo "sim-work: /usr/bin/python3 lacks torchvision (apt-get install python3-torchvision)" >&2
	exit 1
fi
[ $exported = 1 ] || /usr/bin/python3 scripts/export_bench_models.py "$dir" >/dev/null || exit 1
# The float16 twins of ResNet-50 and the encoder: every float32 weight,
# input and output made float16 (inference/cuda/testdata/float16/export.py's
# to_float16, as onnx's tools convert a model), which the device keeps as
# float16.
[ $exported = 1 ] || /usr/bin/python3 - "$dir" <<'PY' || exit 1
import importlib.util, os, sys
import onnx
spec = importlib.util.spec_from_file_location("export16", "inference/cuda/testdata/float16/export.py")
export16 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(export16)
for name in ("resnet50", "bert"):
    src, dst = os.path.join(sys.argv[1], name + ".onnx"), os.path.join(sys.argv[1], name + "_float16.onnx")
    if not os.path.exists(dst) or os.path.getmtime(dst) < os.path.getmtime(src):
        m = export16.to_float16(onnx.load(src), keep_io_types=False)
        for n in m.graph.node:  # the encoder's mask, cast to FLOAT, takes the model's float type
            for a in n.attribute:
                if n.op_type == "Cast" and a.name == "to" and a.i == onnx.TensorProto.FLOAT:
                    a.i = onnx.TensorProto.FLOAT16
        onnx.save(m, dst)
PY
go build -o out/bin/beamml-bench ./cmd/beamml-bench || exit 1

echo "| model | kernel launches | GEMMs | host→device | device→host | device→device | calls (graph) | calls (no graph) | device MiB besides weights |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
failed=0
for run in "${runs[@]}"; do
	model=${run%:*} precision=fp32
	[ "$run" = "$model" ] || precision=${run#*:}
	json=$(mktemp) eager=$(mktemp)
	file=$dir/$model.onnx
	[ -e "$tabular/$model/model.onnx" ] && file=$tabular/$model/model.onnx
	bench=(out/bin/beamml-bench -device sim -precision "$precision" -model "$file" -batch 2 -dynamic 16 -n 0 -warmup 0)
	if ! "${bench[@]}" -json "$json" >/dev/null || ! BEAMML_CUDA_GRAPHS=0 "${bench[@]}" -json "$eager" >/dev/null; then
		echo "| $run | failed: see ${bench[*]} | | | | | | | |"
		failed=1
		continue
	fi
	counts=$(/usr/bin/python3 -c 'import onnx, sys; g = onnx.load(sys.argv[1], load_external_data=False).graph; nodes = g.node
outs = {o.name for o in g.output}
print(sum(n.op_type == "Cast" for n in nodes), sum(n.op_type.startswith("TreeEnsemble") for n in nodes),
      sum(n.op_type in ("Cast", "ZipMap") and n.domain in ("", "ai.onnx.ml") and n.output[0] in outs for n in nodes))' "$file")
	/usr/bin/python3 - "$model" "$json" "$eager" "$counts" "$precision" <<'PY'
import json, sys
w = json.load(open(sys.argv[2]))["device_work"]
e = json.load(open(sys.argv[3]))["device_work"]
model = sys.argv[1]
# output_copies: the graph outputs that a Cast or a ZipMap makes of a
# value (skl2onnx's Cast of the label to int64, ZipMap's scores), each a
# device-to-device copy: the plan does not yet let the value's producer
# write into the graph output.
model_casts, ensembles, output_copies = map(int, sys.argv[4].split())
row = model if sys.argv[5] == "fp32" else f"{model}, {sys.argv[5]} mode"
print(f"| {row} | {w['launches']} | {w['gemms']} | {w['copies_htod']} | {w['copies_dtoh']} | "
      f"{w['copies_dtod']} | {w['calls']} | {e['calls']} | {w['device_bytes'] / 2**20:.1f} |")
broken = []
if model in ("resnet50", "bert") and w["launches"] > 60:
    broken.append(f"{w['launches']} kernel launches, at most 60")
host = json.load(open(sys.argv[2])).get("host_nodes") or []
if ensembles:  # a tabular model: a launch per ensemble
    walks = sum(n for k, n in w["kernels"].items() if k.startswith("tree_walk_"))
    finishes = w["kernels"].get("tree_finish", 0)
    if walks != ensembles or finishes != ensembles:
        broken.append(f"{walks} tree_walk_* and {finishes} tree_finish launches for {ensembles} tree ensembles, want one of each")
if w["copies_dtod"] > output_copies:
    broken.append(f"{w['copies_dtod']} device-to-device copies, want at most {output_copies} (the graph outputs a Cast or ZipMap copies)")
if w["calls"] != 1:
    broken.append(f"{w['calls']} calls with CUDA graphs, want 1")
casts = w["kernels"].get("cast_convert", 0)
if model.endswith("_float16") and casts > model_casts:
    broken.append(f"{casts} cast_convert launches, the model has {model_casts} Casts: a node without its float16 kernels")
if host:
    broken.append(f"nodes on the host: {host}")
for b in broken:
    print(f"sim-work: {row}: {b}", file=sys.stderr)
sys.exit(1 if broken else 0)
PY
	[ $? = 0 ] || failed=1
	rm -f "$json" "$eager"
done
exit $failed
