"""The CPU benchmark's manifest, OUTDIR/models.json, which more than one
export script writes (export_bench_models.py, export_bench_tabular.py):
each replaces its own entries and keeps the others'. testing/benchcpu
(manifest.go) documents the format and the fill rules."""
import json
import os


def merge_manifest(out, entries):
    """Writes entries into OUTDIR/models.json: an entry whose name is there
    already takes its place, the others go at the end, and the entries of
    other scripts stay as they are."""
    path = os.path.join(out, "models.json")
    models = []
    if os.path.exists(path):
        with open(path) as f:
            models = json.load(f)["models"]
    mine = {e["name"]: e for e in entries}
    merged = [mine.pop(m["name"], m) for m in models]
    merged += [e for e in entries if e["name"] in mine]
    with open(path, "w") as f:
        json.dump({"models": merged}, f, indent=1)
