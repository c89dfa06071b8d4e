"""Writes the float16 models the CPU and GPU backends are checked on.

Run with Debian's Python, which has torch 1.13 and onnx 1.12:

    /usr/bin/python3 inference/cuda/testdata/float16/export.py

Two models, each in a folder laid out like ONNX's backend test data
(testing/conformance): NAME/model.onnx and NAME/test_data_set_0/ with
input_0.pb and output_0.pb TensorProtos, the output being PyTorch's.

  halfnet_opset17  a small image classifier in half precision: Conv, Relu,
                   strided Conv, Flatten, Linear (Gemm), LayerNorm, GELU
                   (erf), Linear, Softmax. Its input, weights, constants
                   and output are float16.
  mixed_opset17    a float32 model stored with float16 weights: its float32
                   input is cast to float16, and its float16 result back to
                   float32. Linear (MatMul + Add), GELU written out as GPT-2
                   writes it (tanh), a residual Add, LayerNorm, and a
                   softmax attention over the tokens.

PyTorch 1.13's CPU has no half kernels for these operators ("slow_conv2d_cpu"
not implemented for 'Half', likewise addmm, layer norm, GELU, softmax, …), so
it can neither trace a .half() model on the CPU nor run one. So each model
is exported in float32 and its ONNX graph converted to float16 with the onnx
package, as the exporter writes a .half() model: float16 initializers,
Constant values, graph inputs and outputs (mixed keeps float32 ones and
casts, as ONNX converters do with keep_io_types). And the reference output
is PyTorch's float32 kernels run with float16 storage: the weights, the
input and every value the float16 graph stores between two of its operators
rounded to float16 (round to nearest even, torch's .half()). That is what
a GPU computes for a half model whose kernels accumulate in float32 and
store float16, and the semantics the runtime gives float16 models
(passes.ComputeFloat16InFloat32); the differences that remain are those of
the kernels' float32 arithmetic, and the float16 roundings they flip.

The weights are random with a fixed seed, so a second run writes the same
files (up to the exporter's own nondeterminism).
"""

import io
import math
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def r(t, half):
    """t rounded to float16 when the model stores float16 (half)."""
    return t.half().float() if half else t


class HalfNet(nn.Module):
    """An image classifier: Conv+Relu, a strided Conv, then Linear,
    LayerNorm, GELU (exported as Div, Erf, Add, Mul, Mul), Linear and
    Softmax."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, stride=2)
        self.fc1 = nn.Linear(128, 32)
        self.ln = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 10)
        self.ln.weight.data.uniform_(0.5, 1.5)
        self.ln.bias.data.uniform_(-0.5, 0.5)
        self.half_storage = False

    def forward(self, x):
        h = self.half_storage
        y = F.relu(r(self.conv1(x), h))
        y = r(self.conv2(y), h).flatten(1)
        y = r(self.ln(r(self.fc1(y), h)), h)
        if h:  # the exported decomposition, each value stored in float16
            y = r(y * r(r(torch.erf(r(y / r(torch.tensor(math.sqrt(2.0)), h), h)), h) + 1.0, h), h) * 0.5
        else:
            y = F.gelu(y)
        return r(r(self.fc2(r(y, h)), h).softmax(-1), h)


class MixedBlock(nn.Module):
    """A transformer-style block over [batch, tokens, 16]: a GPT-2 MLP with
    a residual, LayerNorm, and softmax attention of the tokens over each
    other."""

    def __init__(self, e=16, ffn=32):
        super().__init__()
        self.up, self.down = nn.Linear(e, ffn), nn.Linear(ffn, e)
        self.q, self.k = nn.Linear(e, e), nn.Linear(e, e)
        self.ln = nn.LayerNorm(e)
        self.ln.weight.data.uniform_(0.5, 1.5)
        self.ln.bias.data.uniform_(-0.5, 0.5)
        self.half_storage = False

    def linear(self, x, m):
        # A Linear on 3-D input exports as MatMul, then Add.
        return r(r(x @ m.weight.t(), self.half_storage) + m.bias, self.half_storage)

    def gelu(self, x):
        h = self.half_storage
        c = r(torch.tensor(math.sqrt(2.0 / math.pi)), h)
        cube = r(r(x * x, h) * x, h)
        inner = r(x + r(r(torch.tensor(0.044715), h) * cube, h), h)
        return r(r(r(0.5 * x, h) * r(1.0 + r(torch.tanh(r(c * inner, h)), h), h), h), h)

    def forward(self, x):
        h = self.half_storage
        x = r(x, h)  # the Cast to float16
        y = r(x + self.linear(self.gelu(self.linear(x, self.up)), self.down), h)
        y = r(self.ln(y), h)
        scores = r(r(self.linear(y, self.q) @ self.linear(y, self.k).transpose(1, 2), h) / 4.0, h)
        return r(r(scores.softmax(-1), h) @ y, h)


def to_float16(model, keep_io_types):
    """Converts an exported float32 graph to float16: initializers and
    Constant values of type FLOAT become FLOAT16 (rounded to nearest even by
    numpy), and the graph's float inputs and outputs become FLOAT16, or,
    with keep_io_types, stay FLOAT and are cast to and from FLOAT16."""
    g = model.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    del g.value_info[:]
    if not keep_io_types:
        for v in list(g.input) + list(g.output):
            if v.type.tensor_type.elem_type == TensorProto.FLOAT:
                v.type.tensor_type.elem_type = TensorProto.FLOAT16
        return model
    casts = []
    for v in g.input:
        for n in g.node:
            n.input[:] = [v.name + "_float16" if i == v.name else i for i in n.input]
        casts.append(helper.make_node("Cast", [v.name], [v.name + "_float16"], name=v.name + "_to_float16", to=TensorProto.FLOAT16))
    for v in g.output:
        for n in g.node:
            n.output[:] = [v.name + "_float16" if o == v.name else o for o in n.output]
        g.node.append(helper.make_node("Cast", [v.name + "_float16"], [v.name], name=v.name + "_to_float", to=TensorProto.FLOAT))
    for c in reversed(casts):
        g.node.insert(0, c)
    return model


def export(name, model, x, keep_io_types):
    model.eval()
    folder = os.path.join(HERE, name)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    f = io.BytesIO()
    torch.onnx.export(model, (x,), f, opset_version=17, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    m = to_float16(onnx.load_from_string(f.getvalue()), keep_io_types)
    onnx.checker.check_model(m)
    path = os.path.join(folder, "model.onnx")
    onnx.save(m, path)

    model.half_storage = True
    with torch.no_grad():
        for p in model.parameters():
            p.data = p.data.half().float()
        out = model(x.half().float())
    io_type = np.float32 if keep_io_types else np.float16
    write(os.path.join(folder, "test_data_set_0", "input_0.pb"), x, "x", io_type)
    write(os.path.join(folder, "test_data_set_0", "output_0.pb"), out, "y", io_type)
    print(f"{name}: {os.path.getsize(path)} bytes, output {tuple(out.shape)} {io_type.__name__}")


def write(path, t, name, dtype):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(t.detach().numpy().astype(dtype), name).SerializeToString())


def main():
    torch.manual_seed(5)
    export("halfnet_opset17", HalfNet(), torch.randn(3, 3, 8, 8), keep_io_types=False)
    torch.manual_seed(6)
    export("mixed_opset17", MixedBlock(), torch.randn(2, 8, 16) * 2, keep_io_types=True)


if __name__ == "__main__":
    main()
