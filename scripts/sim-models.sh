#!/usr/bin/env bash
# make sim-models: every model of make bench-cpu on the GPU path, on the
# simulated device (the CUDA executor with the host-emulated kernels):
# each must run with no node on the host and give the CPU backend's
# outputs. Times mean nothing here (the kernels are emulated).
#
# Needs: Go with cgo and a C++ compiler; Debian's python3-torchvision at
# /usr/bin/python3 to export the models (scripts/export_bench_models.py,
# into out/bench-cpu; a model is exported again only when its file is
# missing). Takes about three and a half minutes on 2 cores once the
# models are exported.
#
# Tolerances: the self-check's, rtol 1e-3 and atol 1e-4, except for
# EfficientNet-B0. Its random weights (no trained statistics) grow its
# logits to about 2,000, and the order of float32 sums then moves them by
# up to about 1%: ONNX Runtime and beamml's CPU backend differ by as much
# (22.6 at the largest), and the simulated device lies as close to ONNX
# Runtime (18.7); near zero, where logits cancel, the relative difference
# is larger still. It is compared at atol 50 (2.5% of its largest logit),
# which a wrong kernel would not pass. MobileNetV3-Small is compared at
# rtol 1e-2, atol 1e-3: its outputs, small differences of larger terms,
# move by up to 0.5% with the order of float32 sums. Node by node, the
# first to differ from the CPU backend is its first depthwise convolution,
# by 5e-5 of its outputs (0.0323013 against 0.0322998), its sums of nine
# taps in another order; the CPU backend and ONNX Runtime happen to sum in
# the same one (6.4e-8 apart). A wrong kernel would be off by far more.
# RegNetY-400MF and DeepLabV3 are left out: they differ by 1–2% here
# (RegNet's logits reach 160), which wants a float64 reference to say
# which side drifts; DenseNet-121, ResNeXt-50 and GoogLeNet pass but take
# half a minute each.
#
# Exit status: 0 when every model passes, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=out/bench-cpu
mkdir -p "$dir"
if ! /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
	echo "sim-models: /usr/bin/python3 lacks torchvision (apt-get install python3-torchvision)" >&2
	exit 1
fi
/usr/bin/python3 scripts/export_bench_models.py "$dir" || exit 1
go build -o out/bin/beamml-bench ./cmd/beamml-bench || exit 1

failed=0
for model in mlp digits chain64 lstm bert gpt squeezenet1_1 mobilenet_v2 efficientnet_b0 resnet18 resnet50 convnext_tiny vit \
	tenc_post tenc_pre mha hf_encoder causal_decoder gru lstm_uni mlp_drop shufflenet_v2_x1_0 mobilenet_v3_small \
	autoencoder; do
	tol=(-rtol 1e-3 -atol 1e-4)
	case $model in
	efficientnet_b0) tol=(-rtol 0 -atol 50) ;;
	mobilenet_v3_small) tol=(-rtol 1e-2 -atol 1e-3) ;;
	esac
	out=$(out/bin/beamml-bench -device sim -model "$dir/$model.onnx" -batch 2 -dynamic 16 -n 0 -warmup 0 \
		-compare cpu "${tol[@]}" -no-host-nodes 2>&1)
	rc=$?
	host=$(sed -n 's/^host *//p' <<<"$out")
	compare=$(sed -n 's/^compare *//p' <<<"$out")
	if [ $rc = 0 ]; then
		printf 'PASS  %-16s %s; %s\n' "$model" "$host" "$compare"
	else
		failed=1
		printf 'FAIL  %-16s (exit %d)\n%s\n' "$model" "$rc" "$(sed 's/^/      /' <<<"$out")"
	fi
done
exit $failed
