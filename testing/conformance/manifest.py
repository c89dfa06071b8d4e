#!/usr/bin/env python3
"""Writes testdata/MANIFEST.tsv and the figures of testdata/README.md.

Usage (from the repository root; needs the onnx Python package, 1.12 or
newer, and nothing else):

    python3 testing/conformance/manifest.py [--check] [--readme] [TESTDATA]

TESTDATA defaults to testing/conformance/testdata. Without flags it
rewrites TESTDATA/MANIFEST.tsv from the test folders; --check instead
exits 1 when the file differs from what it would write. --readme prints
the figures README.md quotes: tests and bytes per suite, the node suite's
opsets, IR versions, expanded, rank-0 and zero-sized tests, the element
types, and the operator table.

A row is one test: suite, name, ops (the operator types its model uses,
subgraphs included, sorted, with the domain in front outside ai.onnx, as
"ai.onnx.ml.LabelEncoder"), input and output shapes and element types (as
in test_data_set_0's input_K.pb and output_K.pb, ";" between tensors),
opset (each imported domain:version as the model lists them, ai.onnx for
the default domain), IR version, number of data sets, and bytes (the sizes
of all the test's files added up). Rows are sorted by suite, then name.
"""
import os
import sys

import onnx
from onnx import AttributeProto, TensorProto

SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]

# Element type names, numpy's where it has one.
TYPE_NAMES = {
    TensorProto.FLOAT: "float32",
    TensorProto.UINT8: "uint8",
    TensorProto.INT8: "int8",
    TensorProto.UINT16: "uint16",
    TensorProto.INT16: "int16",
    TensorProto.INT32: "int32",
    TensorProto.INT64: "int64",
    TensorProto.STRING: "string",
    TensorProto.BOOL: "bool",
    TensorProto.FLOAT16: "float16",
    TensorProto.DOUBLE: "float64",
    TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64",
    TensorProto.BFLOAT16: "bfloat16",
}

COLUMNS = ["suite", "name", "ops", "input_shapes", "output_shapes", "opset", "ir_version",
           "n_datasets", "bytes", "input_types", "output_types"]


def op_types(graph, found):
    """Adds the operator types of graph's nodes, subgraphs included, to found."""
    for node in graph.node:
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        found.add(domain + "." + node.op_type if domain else node.op_type)
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                op_types(attr.g, found)
            elif attr.type == AttributeProto.GRAPHS:
                for g in attr.graphs:
                    op_types(g, found)
    return found


def tensors(folder, prefix):
    """The TensorProtos prefix_0.pb, prefix_1.pb, ... in folder, in order."""
    out = []
    while True:
        path = os.path.join(folder, "%s_%d.pb" % (prefix, len(out)))
        if not os.path.exists(path):
            return out
        t = TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        out.append(t)


def shapes(ts):
    return ";".join("[" + ",".join(str(d) for d in t.dims) + "]" for t in ts)


def types(ts):
    return ";".join(TYPE_NAMES.get(t.data_type, str(t.data_type)) for t in ts)


def row(suite, folder):
    model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    sets = sorted(d for d in os.listdir(folder) if d.startswith("test_data_set_"))
    first = os.path.join(folder, "test_data_set_0")
    ins, outs = tensors(first, "input"), tensors(first, "output")
    size = 0
    for root, _, files in os.walk(folder):
        size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    opset = ",".join("%s:%d" % (o.domain or "ai.onnx", o.version) for o in model.opset_import)
    return [suite, os.path.basename(folder), ",".join(sorted(op_types(model.graph, set()))),
            shapes(ins), shapes(outs), opset, str(model.ir_version), str(len(sets)), str(size),
            types(ins), types(outs)]


def rows(testdata):
    out = []
    for suite in SUITES:
        base = os.path.join(testdata, suite)
        for name in sorted(os.listdir(base)):
            if os.path.exists(os.path.join(base, name, "model.onnx")):
                out.append(row(suite, os.path.join(base, name)))
    return out


def manifest(rs):
    return "\n".join("\t".join(r) for r in [COLUMNS] + rs) + "\n"


def readme(rs):
    """Prints the figures testdata/README.md quotes."""
    total_bytes = 0
    for suite in SUITES:
        sr = [r for r in rs if r[0] == suite]
        b = sum(int(r[8]) for r in sr)
        total_bytes += b
        print("%s: %d tests, %d bytes (%.1f MB, %.1f kB)" % (suite, len(sr), b, b / 1e6, b / 1e3))
    print("all: %d tests, %d bytes (%.1f MB)" % (len(rs), total_bytes, total_bytes / 1e6))
    node = [r for r in rs if r[0] == "node"]
    versions, others, irs = set(), {}, set()
    for r in node:
        for o in r[5].split(","):
            domain, v = o.rsplit(":", 1)
            if domain == "ai.onnx":
                versions.add(int(v))
            else:
                others[domain] = others.get(domain, 0) + 1
        irs.add(int(r[6]))
    print("node: ai.onnx opsets %d to %d, IR versions %d to %d; other domains imported: %s" % (
        min(versions), max(versions), min(irs), max(irs), others))
    print("node: %d *_expanded* tests" % sum("_expanded" in r[1] for r in node))
    all_shapes = lambda r: (r[3] + ";" + r[4]).split(";")
    print("node: %d tests with a rank-0 tensor, %d with a zero-sized dimension" % (
        sum("[]" in all_shapes(r) for r in node),
        sum(any(s != "[]" and "0" in s.strip("[]").split(",") for s in all_shapes(r)) for r in node)))
    counts = {}
    for r in node:
        for t in set((r[9] + ";" + r[10]).split(";")) - {""}:
            counts[t] = counts.get(t, 0) + 1
    print("node: tests by element type (inputs and outputs):", dict(sorted(counts.items())))
    ops = {}
    for r in rs:
        for op in r[2].split(","):
            if op:
                ops[op] = ops.get(op, 0) + 1
    print("%d op types\n" % len(ops))
    print("| op type | tests |\n|---|---:|")
    for op in sorted(ops, key=str.lower):
        print("| %s | %d |" % (op, ops[op]))


def main(argv):
    check = "--check" in argv
    summary = "--readme" in argv
    args = [a for a in argv if not a.startswith("--")]
    testdata = args[0] if args else "testing/conformance/testdata"
    rs = rows(testdata)
    if summary:
        readme(rs)
        return 0
    text = manifest(rs)
    path = os.path.join(testdata, "MANIFEST.tsv")
    if check:
        with open(path) as f:
            if f.read() != text:
                print("%s is not what manifest.py writes" % path, file=sys.stderr)
                return 1
        return 0
    with open(path, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
