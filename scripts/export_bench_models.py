#!/usr/bin/python3
"""Exports the CPU benchmark's models to ONNX and describes their inputs in
OUTDIR/models.json, the manifest both timing runners (testing/benchcpu and
scripts/ort_bench.js) fill their inputs from. Usage:

    export_bench_models.py OUTDIR

Every model has random weights (torch.manual_seed(0) before each one;
nothing is downloaded), is exported in eval mode with a dynamic batch axis
(axis 0 of every input and output), at opset 13, or 14 for the
transformers. So that every output is of order 1 and testing/benchcpu's
max |Δ| column compares something, BatchNorm running statistics are those
of one training-mode pass over 8 uniform random images (torchvision's
initial mean 0 and variance 1 let MobileNetV2's outputs decay to 1e-9 and
EfficientNet-B0's to 1e-14), and the ViT's classifier, which torchvision
initialises to zeros, is drawn from N(0, 0.02²). A model whose .onnx file
exists is not exported again (delete it to re-export); the manifest's
entries of these models are always rewritten, and those of other scripts
kept (bench_manifest.py; export_bench_tabular.py adds the tree ensembles).
digits.onnx, the MLP of examples/classify, is copied in as an extra row.

The models, in the manifest's (and the table's) order:
    mlp             784-512-256-10 MLP with ReLU, input float32[b, 784]
    chain64         64 elementwise nodes in a row (ReLU, then negation, in
                    turn) on float32[b, 16]: no arithmetic to speak of, so a
                    run's time is the runtime's overhead, per run and per
                    node
    digits          examples/classify's 64-32-10 MLP, input float32[b, 64]
    lstm            2-layer bidirectional LSTM (hidden 128) and a Linear
                    head on every step, input float32[b, 50, 64]
    resnet18, resnet50, mobilenet_v2, efficientnet_b0, convnext_tiny,
    squeezenet1_1   torchvision, input float32[b, 3, 224, 224]
    vit             torchvision VisionTransformer: 224², patch 16, 6 layers,
                    3 heads, hidden 192, MLP 768
    bert            post-LayerNorm encoder: 4 layers, hidden 256, 4 heads,
                    FFN 1024 with erf GELU; inputs input_ids and
                    attention_mask int64[b, 128]; output hidden[b, 128, 256]
    gpt             pre-LayerNorm decoder with a causal mask: 4 layers,
                    hidden 256, 4 heads, FFN 1024 with tanh GELU; input
                    input_ids int64[b, 128]; output logits[b, 128, 8192]

Manifest: {"models": [{"name", "file", "inputs": [{"name", "dtype",
"shape", "fill", "vocab"}]}]}: dtype is "float32" or "int64", shape has -1
for the batch axis, and fill names how element i of the batched tensor
(row-major) is set:
    sin    float32(sin(i)·0.5 + 0.5)
    ids    (i·7919 + 13) mod vocab
    mask   1, except 0 where i mod n ≥ n − n/4 (n: the last dimension):
           the last quarter of every sequence is padding
(testing/benchcpu/manifest.go states every rule, export_bench_tabular.py's
"uniform" too.)
Needs Debian's python3-torchvision (torch 1.13, torchvision 0.14)."""
import math
import os
import shutil
import sys
import time
import warnings

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from bench_manifest import merge_manifest

VOCAB = 8192
SEQ = 128
HIDDEN = 256
HEADS = 4
FFN = 1024
LAYERS = 4


class SelfAttention(nn.Module):
    """Multi-head self-attention written out as matmul, scale, mask add,
    softmax and matmul, so that the export is those ONNX operators."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x, mask):
        b, t, _ = x.shape
        heads = [p(x).view(b, t, HEADS, HIDDEN // HEADS).transpose(1, 2) for p in (self.q, self.k, self.v)]
        q, k, v = heads
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(HIDDEN // HEADS) + mask
        y = torch.matmul(F.softmax(scores, dim=-1), v)
        return self.out(y.transpose(1, 2).reshape(b, t, HIDDEN))


class Block(nn.Module):
    """One transformer layer: post-LayerNorm (BERT) or pre-LayerNorm (GPT)."""

    def __init__(self, pre_norm, gelu_approximate):
        super().__init__()
        self.pre_norm = pre_norm
        self.gelu_approximate = gelu_approximate
        self.attention = SelfAttention()
        self.norm1 = nn.LayerNorm(HIDDEN)
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)
        self.norm2 = nn.LayerNorm(HIDDEN)

    def ffn(self, x):
        return self.down(F.gelu(self.up(x), approximate=self.gelu_approximate))

    def forward(self, x, mask):
        if self.pre_norm:
            x = x + self.attention(self.norm1(x), mask)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.attention(x, mask))
        return self.norm2(x + self.ffn(x))


class Encoder(nn.Module):
    """BERT-style: token and position embeddings, LayerNorm, post-norm
    layers; attention_mask (1: token, 0: padding) becomes an additive mask
    of −10000 on the padded keys."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(SEQ, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)
        self.layers = nn.ModuleList(Block(pre_norm=False, gelu_approximate="none") for _ in range(LAYERS))

    def forward(self, input_ids, attention_mask):
        t = input_ids.shape[1]
        x = self.norm(self.tokens(input_ids) + self.positions(torch.arange(t)))
        mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Decoder(nn.Module):
    """GPT-style: token and position embeddings, pre-norm layers under a
    causal mask (−inf above the diagonal, from a registered triu buffer
    sliced to the sequence length), a final LayerNorm and the vocabulary
    projection."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(SEQ, HIDDEN)
        self.layers = nn.ModuleList(Block(pre_norm=True, gelu_approximate="tanh") for _ in range(LAYERS))
        self.norm = nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)
        self.register_buffer("causal", torch.triu(torch.full((SEQ, SEQ), float("-inf")), diagonal=1))

    def forward(self, input_ids):
        t = input_ids.shape[1]
        x = self.tokens(input_ids) + self.positions(torch.arange(t))
        mask = self.causal[:t, :t]
        for layer in self.layers:
            x = layer(x, mask)
        return self.head(self.norm(x))


class Recurrent(nn.Module):
    """2-layer bidirectional LSTM over [batch, 50, 64], hidden 128, and a
    10-way Linear head on every step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 128, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


class Chain(nn.Module):
    """64 elementwise nodes in a row: ReLU and negation in turn."""

    def forward(self, x):
        for i in range(64):
            x = torch.relu(x) if i % 2 == 0 else -x
        return x


def vit():
    model = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=6, num_heads=3,
                                                 hidden_dim=192, mlp_dim=768)
    nn.init.normal_(model.heads.head.weight, std=0.02)
    return model


def image(name="input"):
    return {"name": name, "dtype": "float32", "shape": [-1, 3, 224, 224], "fill": "sin"}


def ids():
    return {"name": "input_ids", "dtype": "int64", "shape": [-1, SEQ], "fill": "ids", "vocab": VOCAB}


def torchvision_model(ctor):
    return lambda: ctor(weights=None)


# name → (constructor, inputs, output names, opset); None: copied, not exported.
MODELS = {
    "mlp": (mlp, [{"name": "input", "dtype": "float32", "shape": [-1, 784], "fill": "sin"}], ["output"], 13),
    "digits": (None, [{"name": "pixels", "dtype": "float32", "shape": [-1, 64], "fill": "sin"}], ["logits"], 13),
    "chain64": (Chain, [{"name": "input", "dtype": "float32", "shape": [-1, 16], "fill": "sin"}], ["output"], 13),
    "lstm": (Recurrent, [{"name": "input", "dtype": "float32", "shape": [-1, 50, 64], "fill": "sin"}], ["output"], 13),
    "resnet18": (torchvision_model(torchvision.models.resnet18), [image()], ["output"], 13),
    "resnet50": (torchvision_model(torchvision.models.resnet50), [image()], ["output"], 13),
    "mobilenet_v2": (torchvision_model(torchvision.models.mobilenet_v2), [image()], ["output"], 13),
    "efficientnet_b0": (torchvision_model(torchvision.models.efficientnet_b0), [image()], ["output"], 13),
    "convnext_tiny": (torchvision_model(torchvision.models.convnext_tiny), [image()], ["output"], 13),
    "squeezenet1_1": (torchvision_model(torchvision.models.squeezenet1_1), [image()], ["output"], 13),
    "vit": (vit, [image()], ["output"], 14),
    "bert": (Encoder, [ids(), {"name": "attention_mask", "dtype": "int64", "shape": [-1, SEQ], "fill": "mask"}],
             ["hidden"], 14),
    "gpt": (Decoder, [ids()], ["logits"], 14),
}


def example(spec, batch=2):
    """A tensor shaped like the input spec at the given batch size (the
    exporter traces with it; its values do not matter beyond being valid)."""
    shape = [batch if d == -1 else d for d in spec["shape"]]
    if spec["dtype"] == "int64":
        return torch.ones(shape, dtype=torch.int64)
    return torch.zeros(shape)


def calibrate(model):
    """Sets the BatchNorm running statistics of model to those of one
    training-mode pass over 8 uniform random images."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # the cumulative average: this pass's statistics
    model.train()
    with torch.no_grad():
        model(torch.rand(8, 3, 224, 224))


def export(name, ctor, inputs, outputs, opset, path):
    torch.manual_seed(0)
    model = ctor()
    calibrate(model)
    model.eval()
    names = [i["name"] for i in inputs] + outputs
    with torch.no_grad():
        torch.onnx.export(model, tuple(example(i) for i in inputs), path,
                          input_names=[i["name"] for i in inputs], output_names=outputs,
                          dynamic_axes={n: {0: "batch"} for n in names}, opset_version=opset)


def main():
    # The exporter warns that the LSTM's initial states might be fixed to
    # the traced batch size (they are built from the input's shape: checked
    # by running at batch 1 and 8), and that ViT's image-size assertion is
    # traced as a constant (the size is fixed at 224).
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    manifest = []
    start, exported = time.time(), 0
    for name, (ctor, inputs, outputs, opset) in MODELS.items():
        path = os.path.join(out, name + ".onnx")
        if not os.path.exists(path):
            if ctor is None:
                shutil.copyfile(os.path.join(repo, "examples", "classify", name + ".onnx"), path)
            else:
                export(name, ctor, inputs, outputs, opset, path)
            exported += 1
        manifest.append({"name": name, "file": name + ".onnx", "inputs": inputs})
    merge_manifest(out, manifest)
    print(f"export_bench_models.py: {exported} of {len(MODELS)} models exported in {time.time() - start:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
