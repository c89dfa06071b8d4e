#!/usr/bin/env python3
"""The Python side of scripts/gpu-run.sh, apart from the benchmark models
(bench_models.py). Usage:

    runtools.py env
        Python's version and, for torch, torchvision, onnxruntime and
        numpy, the version each imports at (or why not), one per line.
    runtools.py torch
        One line, torch's version, its CUDA and the first GPU it sees;
        exits 0 when torch imports with numpy and sees a CUDA device, else 1.
    runtools.py libdirs
        The folders of shared libraries that Python packages ship: every
        nvidia/*/lib (CUDA 12 wheels: nvidia/cublas/lib; CUDA 13:
        nvidia/cu13/lib) and torch/lib on sys.path, one per line.
    runtools.py kernel-times LOG WHAT
        ncu's CSV in LOG (--csv --page raw --print-units base, metric
        gpu__time_duration.sum) summed per kernel, largest first; WHAT
        names the run in the first line. Values may carry thousands
        separators ("1,234")."""
import collections
import csv
import glob
import importlib
import os
import sys


def env():
    print("python", sys.version.split()[0], sys.executable)
    for name in ("torch", "torchvision", "onnxruntime", "numpy"):
        try:
            m = importlib.import_module(name)
        except Exception as e:  # absent, or broken
            print(name, "does not import:", f"{type(e).__name__}: {e}"[:200])
            continue
        extra = ""
        if name == "torch":
            extra = f" cuda {m.version.cuda}, {'sees' if m.cuda.is_available() else 'sees no'} GPU"
        elif name == "onnxruntime":
            extra = " " + ",".join(m.get_available_providers())
        print(name, m.__version__ + extra)


def torch_gpu():
    try:
        import numpy  # noqa: F401  (the reference needs it)
        import torch
    except Exception as e:
        print(f"torch or numpy does not import: {type(e).__name__}: {e}"[:300])
        return 1
    if not torch.cuda.is_available():
        print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device")
        return 1
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    return 0


def libdirs():
    seen = set()
    for p in sys.path:
        if not p or not os.path.isdir(p):
            continue
        for d in sorted(glob.glob(os.path.join(p, "nvidia", "*", "lib"))) + [os.path.join(p, "torch", "lib")]:
            d = os.path.realpath(d)
            if os.path.isdir(d) and d not in seen:
                seen.add(d)
                print(d)


def number(s):
    """ncu's value: "1,234.5" or "1234.5"; None when not a number."""
    try:
        return float(s.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def kernel_times(log, what):
    rows = [line for line in open(log, errors="replace") if line.startswith('"')]
    total, count = collections.Counter(), collections.Counter()
    for r in csv.DictReader(rows):
        ns = number(r.get("gpu__time_duration.sum"))
        if ns is None:  # the units row, or a kernel without the metric
            continue
        name = (r.get("Kernel Name") or "?")[:70]
        total[name] += ns
        count[name] += 1
    if not count:
        print(f"{what}: no kernel durations in {log}")
        return 1
    all_ns = sum(total.values()) or 1
    print(f"{what}: {all_ns / 1e6:.2f} ms of kernels in {sum(count.values())} launches")
    for name, ns in total.most_common(30):
        print(f"{ns / 1e6:9.3f} ms {100 * ns / all_ns:5.1f}%  x{count[name]:<5d} {name}")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["env"]:
        env()
    elif args == ["torch"]:
        sys.exit(torch_gpu())
    elif args == ["libdirs"]:
        libdirs()
    elif len(args) == 3 and args[0] == "kernel-times":
        sys.exit(kernel_times(args[1], args[2]))
    else:
        sys.exit(__doc__)
