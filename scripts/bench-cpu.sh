#!/usr/bin/env bash
# make bench-cpu: the project's CPU-speed yardstick. Times beamml's CPU
# backend against ONNX Runtime (onnxruntime-node 1.30.0, CPU execution
# provider) on the models of scripts/export_bench_models.py at batch sizes
# 1 and 8: three MLPs, a chain of 64 elementwise nodes that times the
# per-run overhead, a bidirectional LSTM, a unidirectional LSTM and a GRU;
# torchvision's ResNet-18 and -50, ResNeXt-50, MobileNetV2 and V3-Small,
# EfficientNet-B0, ConvNeXt-Tiny, SqueezeNet 1.1, RegNetY-400MF,
# ShuffleNetV2, DenseNet-121, GoogLeNet, a ViT and DeepLabV3 (segmentation);
# a convolutional autoencoder (ConvTranspose); a BERT-style encoder, the
# same written as transformers writes BERT, torch.nn.TransformerEncoder
# post-norm with a padding mask and pre-norm, torch.nn.MultiheadAttention
# alone, and two GPT-style decoders, one with the causal mask built in the
# graph; exported at opsets 13 to 17. It also times the tree ensembles of
# scripts/export_bench_tabular.py (a random forest, XGBoost, scikit-learn's
# histogram gradient boosting) at 10,000 rows a run, with 1 and 2 threads,
# and prints the markdown tables docs/performance.md quotes
# (testing/benchcpu).
#
# Needs: Go; Debian's python3-torchvision (torch 1.13, torchvision 0.14),
# python3-sklearn and python3-xgboost at /usr/bin/python3; node and npm,
# with the npm registry the first time (onnxruntime-node is installed in
# out/bench-cpu).
# Takes: about 20 s to export the 29 neural models and 2½ minutes to
# train and export the tree ensembles the first time (700 MB in
# out/bench-cpu, besides node_modules; a model is exported again only
# when its file is missing), then about 9 minutes of timing on 2 cores:
# 122 cells, each timed by ORT and by beamml for at least 3 runs and
# 1.5 s.
#
# Arguments go to testing/benchcpu, e.g. to time one model quickly:
#	make bench-cpu BENCH_ARGS='--threads 1 --batches 8 --models bert'
# or the tree ensembles alone:
#	make bench-cpu BENCH_ARGS='--models rf500_d10,xgb300,hgb255'
set -euo pipefail
cd "$(dirname "$0")/.."
dir=out/bench-cpu
mkdir -p "$dir"
if ! /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
	echo "bench-cpu: /usr/bin/python3 lacks torchvision (apt-get install python3-torchvision)" >&2
	exit 1
fi
if ! /usr/bin/python3 -c 'import sklearn, xgboost' 2>/dev/null; then
	echo "bench-cpu: /usr/bin/python3 lacks scikit-learn or XGBoost (apt-get install python3-sklearn python3-xgboost)" >&2
	exit 1
fi
/usr/bin/python3 scripts/export_bench_models.py "$dir"
/usr/bin/python3 scripts/export_bench_tabular.py "$dir"
if [ ! -d "$dir/node_modules/onnxruntime-node" ]; then
	# The installer would fetch GPU binaries; the CPU library is bundled.
	(cd "$dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --silent onnxruntime-node@1.30.0)
fi
go run ./testing/benchcpu --dir "$dir" "$@"
