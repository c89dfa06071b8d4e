#!/usr/bin/env python3
"""The reference side of scripts/gpu-run.sh's bench stage: exports the
two benchmark models to ONNX, times them in PyTorch and ONNX Runtime on the
GPU, and compares their outputs with beamml-bench's. Usage:

    bench_models.py export OUTDIR [NAME ...]
        OUTDIR/NAME.onnx and its weights (OUTDIR/NAME.pt) for each NAME
        (default: every model), with random weights from
        torch.manual_seed(0); written under a temporary name, then renamed,
        so that a run cut off leaves no half-written model.
    bench_models.py reference OUTDIR NAME BATCHES [DUMPDIR]
        JSON lines on stdout: one per runtime, mode and batch size (p50 and
        p90 ms per batch, items/s), then, when DUMPDIR holds beamml-bench's
        -dump of NAME (dump.json), one per runtime comparing its outputs on
        beamml's inputs with beamml's outputs.
    bench_models.py table RESULTS_DIR
        A markdown table of RESULTS_DIR/NAME.beamml.json (beamml-bench in
        fp32; NAME.beamml-tf32.json and NAME.beamml-fp16.json in the other modes
        -json) and RESULTS_DIR/NAME.reference.jsonl, one row per model and
        batch size, p50 ms per batch.

The models:
    resnet50  torchvision's ResNet-50 when torchvision imports, else the
              same network written out here; input float32[b, 3, 224, 224],
              output float32[b, 1000]. BatchNorm statistics are those of
              one training-mode pass over 8 random images, so that outputs
              are of order 1.
    bert      BERT-base-style encoder: token and position embeddings,
              LayerNorm, torch.nn.TransformerEncoder (12 layers, hidden 768,
              12 heads, FFN 3072, GELU, post-norm); input input_ids
              int64[b, 128], output hidden float32[b, 128, 768].
Both are exported with a dynamic batch axis by the TorchScript exporter
(dynamo=False where the torch version has the choice), opset 17.

Runtimes and modes, each timed end to end (a host array in, a host array
out, as beamml-bench times a Run):
    torch fp32       eager, TF32 off for matmul and cuDNN
    torch tf32       eager, TF32 on
    torch fp16       eager under torch.autocast(float16)
    ort cuda         ONNX Runtime's CUDA execution provider, where
                     onnxruntime imports and offers it
Needs torch with CUDA (and numpy); torchvision and onnxruntime are
optional. Nothing is downloaded."""
import json
import math
import os
import sys
import time

SEQ = 128
VOCAB = 30522
OPSET = 17


def emit(**kw):
    print(json.dumps(kw), flush=True)


# --------------------------------------------------------------- models --

def resnet50():
    """torchvision's ResNet-50 (random weights), or the same network."""
    import torch.nn as nn
    try:
        import torchvision
        return torchvision.models.resnet50(weights=None), "torchvision " + torchvision.__version__
    except Exception as e:  # torchvision absent, or one without weights=
        why = f"{type(e).__name__}: {e}"

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
            self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + (x if self.downsample is None else self.downsample(x)))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers), "written out here (" + why + ")"


def bert():
    """A BERT-base-style encoder over torch.nn.TransformerEncoder."""
    import torch
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(VOCAB, 768)
            self.positions = nn.Embedding(SEQ, 768)
            self.norm = nn.LayerNorm(768)
            layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
            # TransformerEncoder's layers are copies of one: draw each
            # anew, or the exporter stores one layer's weights for all 12.
            for m in self.encoder.modules():
                if isinstance(m, nn.MultiheadAttention):
                    m._reset_parameters()
                elif isinstance(m, (nn.Linear, nn.LayerNorm)):
                    m.reset_parameters()

        def forward(self, input_ids):
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            return self.encoder(self.norm(self.tokens(input_ids) + self.positions(positions)))

    return Encoder(), "torch.nn.TransformerEncoder"


# name → (constructor, input name, input shape without the batch axis,
# input dtype, output name)
MODELS = {
    "resnet50": (resnet50, "input", (3, 224, 224), "float32", "output"),
    "bert": (bert, "input_ids", (SEQ,), "int64", "hidden"),
}


def build(name):
    """The model with its seeded random weights, in eval mode."""
    import torch
    torch.manual_seed(0)
    model, source = MODELS[name][0]()
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if norms:
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # the cumulative average: this pass's statistics
        model.train()
        with torch.no_grad():
            model(torch.rand(8, 3, 224, 224))
    return model.eval(), source


def example(name, batch, device="cpu"):
    """Random inputs at the given batch size: floats uniform in [-1, 1),
    ids in [0, 4), as beamml-bench makes them."""
    import torch
    _, _, shape, dtype, _ = MODELS[name]
    if dtype == "int64":
        return torch.randint(0, 4, (batch, *shape), dtype=torch.int64, device=device)
    return torch.rand((batch, *shape), device=device) * 2 - 1


def export(outdir, names):
    import torch
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"bench_models.py: no model {', '.join(unknown)}: the models are {', '.join(MODELS)}")
    os.makedirs(outdir, exist_ok=True)
    for name in names:
        _, iname, _, _, oname = MODELS[name]
        model, source = build(name)
        torch.save(model.state_dict(), os.path.join(outdir, name + ".pt.part"))
        os.replace(os.path.join(outdir, name + ".pt.part"), os.path.join(outdir, name + ".pt"))
        path = os.path.join(outdir, name + ".onnx")
        part = path + ".part"
        kw = dict(input_names=[iname], output_names=[oname], opset_version=OPSET,
                  dynamic_axes={iname: {0: "batch"}, oname: {0: "batch"}})
        start = time.perf_counter()
        # Traced with grad enabled: under no_grad, TransformerEncoderLayer
        # takes its fused fast path, which has no ONNX export.
        try:
            torch.onnx.export(model, (example(name, 2),), part, dynamo=False, **kw)
        except TypeError:  # torch before 2.5 has no dynamo argument
            torch.onnx.export(model, (example(name, 2),), part, **kw)
        os.replace(part, path)
        emit(what="export", model=name, source=source, path=path, bytes=os.path.getsize(path),
             seconds=round(time.perf_counter() - start, 1), torch=torch.__version__)


# ------------------------------------------------------------ reference --

def percentiles(times_ms):
    t = sorted(times_ms)
    rank = lambda p: t[max(math.ceil(p * len(t) / 100) - 1, 0)]
    return rank(50), rank(90)


def timed(run, runs=20, warmup=3):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return percentiles(times)


def torch_runner(model, mode):
    """A function from a host numpy array to a host numpy array. The TF32
    switches are global, so each run sets them for its own mode: set once
    when the runner is built, the last runner built would decide every
    mode's."""
    import torch
    tf32 = mode == "tf32"

    def run(x):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16, enabled=mode == "fp16"):
            y = model(torch.from_numpy(x).cuda())
        return y.float().cpu().numpy()
    return run


def ort_runner(path):
    """ONNX Runtime's CUDA EP, or None (and why) when it is not there."""
    try:
        import onnxruntime as ort
    except Exception as e:
        return None, f"onnxruntime does not import: {e}"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return None, f"onnxruntime {ort.__version__} has no CUDAExecutionProvider: {ort.get_available_providers()}"
    s = ort.InferenceSession(path, providers=["CUDAExecutionProvider"])
    if s.get_providers()[0] != "CUDAExecutionProvider":
        return None, f"onnxruntime fell back to {s.get_providers()}"
    iname, oname = s.get_inputs()[0].name, s.get_outputs()[0].name
    return (lambda x: s.run([oname], {iname: x})[0]), f"onnxruntime {ort.__version__}"


def compare(got, want):
    """How far got is from want: the largest difference, absolute and
    over the largest magnitude of want (the output's scale: one
    element's relative error means little where it is near 0)."""
    d = abs(got.astype("float64") - want.astype("float64"))
    scale = float(abs(want.astype("float64")).max()) or 1.0
    return dict(max_abs=float(d.max()), scale=scale, of_scale=float(d.max()) / scale)


def reference(outdir, name, batches, dumpdir=None):
    import numpy as np
    import torch
    if not torch.cuda.is_available():
        emit(what="error", error="torch " + torch.__version__ + " sees no CUDA device")
        sys.exit(1)
    emit(what="env", torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
         device=torch.cuda.get_device_name(0))
    model, source = build(name)
    model.load_state_dict(torch.load(os.path.join(outdir, name + ".pt")))
    model = model.cuda()
    torch.backends.cudnn.benchmark = True
    runners = [("torch", mode, torch_runner(model, mode)) for mode in ("fp32", "tf32", "fp16")]
    ort, why = ort_runner(os.path.join(outdir, name + ".onnx"))
    if ort is None:
        emit(what="skip", impl="ort", why=why)
    else:
        runners.append(("ort", "cuda", ort))

    for impl, mode, run in runners:
        for b in batches:
            x = example(name, b).numpy()
            try:
                p50, p90 = timed(lambda: run(x))
                emit(what="time", model=name, impl=impl, mode=mode, batch=b, p50_ms=p50, p90_ms=p90,
                     items_per_s=b * 1000 / p50)
            except Exception as e:
                emit(what="time", model=name, impl=impl, mode=mode, batch=b, error=str(e)[:300])

    # beamml-bench dumped one batch of each precision it ran
    # (DUMP, DUMP-tf32, DUMP-fp16). Each is held to torch in float32 on
    # the same input, and so is torch in its own reduced modes: beamml in
    # TF32 should be about as far from float32 as torch in TF32 is.
    for mode in ("fp32", "tf32", "fp16"):
        d = dumpdir and (dumpdir if mode == "fp32" else dumpdir + "-" + mode)
        index = os.path.join(d or "", "dump.json")
        if not d or not os.path.exists(index):
            continue
        dumped = json.load(open(index))
        x = np.load(os.path.join(d, dumped["inputs"][MODELS[name][1]]))
        got = np.load(os.path.join(d, dumped["outputs"][MODELS[name][4]]))
        want = runners[0][2](x)  # torch fp32
        emit(what="compare", model=name, got=f"beamml {mode}", vs="torch fp32", batch=dumped["batch"],
             **compare(got, want))
        if mode == "fp32":
            for impl, m, run in runners[1:]:
                emit(what="compare", model=name, got=f"{impl} {m}", vs="torch fp32", batch=dumped["batch"],
                     **compare(run(x), want))


# ---------------------------------------------------------------- table --

def table(results):
    rows, cols = {}, ["beamml"]
    notes = []
    for name in MODELS:
        # NAME.beamml.json is fp32; NAME.beamml-tf32.json and -fp16 the other modes.
        for suffix, col in (("", "beamml"), ("-tf32", "beamml tf32"), ("-fp16", "beamml fp16")):
            path = os.path.join(results, name + ".beamml" + suffix + ".json")
            if not os.path.exists(path):
                continue
            rep = json.load(open(path))
            if col not in cols:
                cols.append(col)
            notes.append(f"{name}: {col} on {rep['device']} ({rep['device_name']}), load {rep['load_ms']:.0f} ms, "
                         f"{len(rep.get('host_nodes') or [])} node(s) on the host")
            for b in rep["batches"]:
                rows.setdefault((name, b["batch"]), {})[col] = b.get("error") and "error" or b["p50_ms"]
        path = os.path.join(results, name + ".reference.jsonl")
        if os.path.exists(path):
            for line in open(path):
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("what") == "time":
                    col = r["impl"] + " " + r["mode"]
                    if col not in cols:
                        cols.append(col)
                    rows.setdefault((name, r["batch"]), {})[col] = r.get("error") and "error" or r["p50_ms"]
                elif r.get("what") == "compare":
                    notes.append(f"{name}: {r['got']} vs {r['vs']} at batch {r['batch']}: max |Δ| {r['max_abs']:.3g}, "
                                 f"{r['of_scale']:.2g} of the output's largest |x| ({r['scale']:.3g})")
    print("p50 ms per batch, end to end (host in, host out)\n")
    print("| model | batch | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    cell = lambda v: "" if v is None else v if isinstance(v, str) else f"{v:.2f}"
    for (name, b) in sorted(rows, key=lambda k: (list(MODELS).index(k[0]), k[1])):
        print(f"| {name} | {b} | " + " | ".join(cell(rows[(name, b)].get(c)) for c in cols) + " |")
    if notes:
        print()
        for n in notes:
            print("- " + n)


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "export" and len(sys.argv) >= 3:
        export(sys.argv[2], sys.argv[3:] or list(MODELS))
    elif cmd == "reference" and len(sys.argv) in (5, 6):
        reference(sys.argv[2], sys.argv[3], [int(b) for b in sys.argv[4].split(",")],
                  sys.argv[5] if len(sys.argv) == 6 else None)
    elif cmd == "table" and len(sys.argv) == 3:
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
