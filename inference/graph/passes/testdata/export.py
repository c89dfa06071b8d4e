"""Exports the tiny PyTorch models the graph passes are tested on.

Run with Debian's Python, which has torch 1.13 and onnx 1.12:

    /usr/bin/python3 inference/graph/passes/testdata/export.py

Each model is written to a folder laid out like ONNX's backend test data
(testing/conformance): NAME/model.onnx and NAME/test_data_set_0/ with
input_K.pb and output_K.pb TensorProtos, the outputs being PyTorch's. The
weights are random with a fixed seed, so a second run writes the same files
(up to the exporter's own nondeterminism).
"""

import math
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


class ResidualBlock(nn.Module):
    """A ResNet basic block with the activations exporters meet: a stem
    Conv+BN+ReLU6 (Clip), Conv+BN+SiLU, Conv+BN plus the identity, then
    ReLU; a Hardswish and a linear head (Gemm) follow."""

    def __init__(self, c=8):
        super().__init__()
        self.stem = nn.Conv2d(4, c, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(c)
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c)
        self.head = nn.Linear(c, 5)
        for bn in (self.bn0, self.bn1, self.bn2):  # statistics other than 0 and 1
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):
        x = F.relu6(self.bn0(self.stem(x)))
        y = F.silu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        y = F.relu(y + x)
        y = F.hardswish(y)
        return self.head(y.mean(dim=(2, 3)))


class Encoder(nn.Module):
    """A one-layer BERT-style encoder: explicit multi-head attention with an
    additive padding mask, residuals, nn.LayerNorm and an erf GELU."""

    def __init__(self, e=32, heads=2, ffn=64):
        super().__init__()
        self.heads, self.d = heads, e // heads
        self.q, self.k, self.v, self.o = (nn.Linear(e, e) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(e), nn.LayerNorm(e)
        self.up, self.down = nn.Linear(e, ffn), nn.Linear(ffn, e)
        for ln in (self.ln1, self.ln2):
            ln.weight.data.uniform_(0.5, 1.5)
            ln.bias.data.uniform_(-0.5, 0.5)

    def split(self, t):
        b, s, _ = t.shape
        return t.view(b, s, self.heads, self.d).transpose(1, 2)

    def forward(self, x, mask):
        b, s, e = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
        ctx = torch.matmul(scores.softmax(dim=-1), v)
        ctx = ctx.transpose(1, 2).reshape(b, s, e)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.down(F.gelu(self.up(x))))


class GPTBlock(nn.Module):
    """A GPT-2-style pre-LN block: causal attention (an additive mask
    buffer), the tanh GELU written out as GPT-2 writes it, residuals."""

    def __init__(self, e=32, heads=4, seq=8):
        super().__init__()
        self.heads, self.d = heads, e // heads
        self.qkv, self.proj = nn.Linear(e, 3 * e), nn.Linear(e, e)
        self.ln1, self.ln2 = nn.LayerNorm(e), nn.LayerNorm(e)
        self.fc, self.out = nn.Linear(e, 4 * e), nn.Linear(4 * e, e)
        causal = torch.tril(torch.ones(seq, seq))
        self.register_buffer("mask", ((1 - causal) * -1e9).view(1, 1, seq, seq))

    @staticmethod
    def gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))

    def forward(self, x):
        b, s, e = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(e, dim=2)
        q, k, v = (t.view(b, s, self.heads, self.d).transpose(1, 2) for t in (q, k, v))
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d))
        att = (att + self.mask[:, :, :s, :s]).softmax(dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, s, e)
        x = x + self.proj(y)
        return x + self.out(self.gelu(self.fc(self.ln2(x))))


class GPTBlockTorchGelu(GPTBlock):
    """The same block with F.gelu(approximate='tanh'), whose export orders
    the products otherwise."""

    @staticmethod
    def gelu(x):
        return F.gelu(x, approximate="tanh")


class HFCausalBlock(nn.Module):
    """Causal self-attention as Hugging Face's GPT-2 writes it: a boolean
    causal buffer sliced to the sequence and torch.where(causal, scores,
    finfo.min), the scores divided by √size."""

    def __init__(self, e=32, heads=4, seq=8):
        super().__init__()
        self.heads, self.d = heads, e // heads
        self.qkv, self.proj = nn.Linear(e, 3 * e), nn.Linear(e, e)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq))

    def forward(self, x, mask=None):
        b, s, e = x.shape
        q, k, v = self.qkv(x).split(e, dim=2)
        q, k, v = (t.view(b, s, self.heads, self.d).permute(0, 2, 1, 3) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5, dtype=v.dtype)
        causal = self.bias[:, :, :s, :s]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        if mask is not None:  # the padding mask, extended as GPT2Model extends it
            w = w + (1.0 - mask[:, None, None, :]) * torch.finfo(w.dtype).min
        y = torch.matmul(w.softmax(dim=-1), v).permute(0, 2, 1, 3).reshape(b, s, e)
        return self.proj(y)


def encoder_layer(norm_first, batch_first):
    """torch.nn.TransformerEncoderLayer as users build it, without dropout."""
    layer = nn.TransformerEncoderLayer(32, 2, dim_feedforward=64, dropout=0.0,
                                       batch_first=batch_first, norm_first=norm_first)
    for ln in (layer.norm1, layer.norm2):
        ln.weight.data.uniform_(0.5, 1.5)
        ln.bias.data.uniform_(-0.5, 0.5)
    return layer


class PaddedEncoder(nn.Module):
    """A post-norm TransformerEncoderLayer (batch first) given a boolean
    key-padding mask, True where a token is padding."""

    def __init__(self):
        super().__init__()
        self.layer = encoder_layer(norm_first=False, batch_first=True)

    def forward(self, x, pad):
        return self.layer(x, src_key_padding_mask=pad)


def export(name, model, inputs, input_names, opset):
    model.eval()
    folder = os.path.join(HERE, name)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    torch.onnx.export(model, inputs, path, opset_version=opset, input_names=input_names,
                      output_names=["y"], training=torch.onnx.TrainingMode.PRESERVE)
    onnx.checker.check_model(onnx.load(path))
    with torch.no_grad():
        out = model(*inputs)
    for i, t in enumerate(inputs):
        write(os.path.join(folder, "test_data_set_0", f"input_{i}.pb"), t, input_names[i])
    write(os.path.join(folder, "test_data_set_0", "output_0.pb"), out, "y")
    print(f"{name}: opset {opset}, {os.path.getsize(path)} bytes")


def write(path, t, name):
    a = t.detach().numpy()
    if a.dtype != np.bool_:
        a = a.astype(np.float32)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())


def main():
    torch.manual_seed(1)
    x = torch.randn(2, 4, 8, 8)
    tokens = torch.randn(2, 8, 32)
    mask = torch.ones(2, 8)
    mask[1, 5:] = 0  # the second sequence is padded
    for opset in (13, 17):
        torch.manual_seed(2)
        export(f"resblock_opset{opset}", ResidualBlock(), (x,), ["x"], opset)
    for opset in (14, 17):
        torch.manual_seed(3)
        export(f"encoder_opset{opset}", Encoder(), (tokens, mask), ["x", "mask"], opset)
    torch.manual_seed(4)
    export("gpt_opset14", GPTBlock(), (tokens,), ["x"], 14)
    torch.manual_seed(4)
    export("gpt_torchgelu_opset17", GPTBlockTorchGelu(), (tokens,), ["x"], 17)
    torch.manual_seed(5)
    export("hf_causal_opset14", HFCausalBlock(), (tokens,), ["x"], 14)
    torch.manual_seed(5)
    export("hf_causal_padded_opset17", HFCausalBlock(), (tokens, mask), ["x", "mask"], 17)
    # Gradients on: under no_grad, TransformerEncoderLayer takes a fused
    # path (torch._transformer_encoder_layer_fwd) that the exporter cannot
    # write.
    torch.manual_seed(6)
    export("tenc_post_opset17", PaddedEncoder(), (tokens, mask == 0), ["x", "pad"], 17)
    torch.manual_seed(7)
    export("tenc_pre_opset14", encoder_layer(norm_first=True, batch_first=False), (tokens.transpose(0, 1),), ["x"], 14)


if __name__ == "__main__":
    main()
