#!/usr/bin/python3
"""Trains the CPU benchmark's tree ensembles on synthetic data, exports them
to ONNX as skl2onnx and onnxmltools write them (the conventions and helpers
of export_ml_models.py) and adds them to OUTDIR/models.json, beside
export_bench_models.py's models (bench_manifest.py merges the two).
Usage:

    export_bench_tabular.py OUTDIR

The models, each over 50 float features (input float_input[N, 50]):
    rf500_d10  RandomForestRegressor(500 trees, max_depth 10,
               max_features 1/3) on make_regression's 20,000 rows:
               TreeEnsembleRegressor, output variable[N, 1]
    xgb300     xgboost.XGBClassifier(binary:logistic, 300 rounds,
               max_depth 6, hist) on make_classification's 50,000 rows:
               TreeEnsembleClassifier (BRANCH_LT, LOGISTIC)
    hgb255     HistGradientBoostingClassifier(100 iterations,
               max_leaf_nodes 255, LightGBM's shape) on the same rows:
               TreeEnsembleClassifier (BRANCH_LEQ, LOGISTIC)
The classifiers are written with zipmap=False: outputs label (int64[N])
and probabilities (float32[N, 2]), which testing/benchcpu compares with
ONNX Runtime's.

Every feature of the training data is standardized (mean 0, variance 1, as
the scaler before a model would leave it), so one range suits them all:
the manifest fills the input by the rule "uniform" over [-3, 3]
(testing/benchcpu/manifest.go), a hash of the element's index spread
evenly over the range, which holds 99% of the trained split thresholds or
more. So the rows take varied paths: the script prints, for rows drawn
uniformly from the range, how many distinct leaves of each tree 10,000 of
them reach, against the leaves the tree has. The manifest entry's "rows":
10000 has the models timed at 10,000 rows a run rather than at the batch
sizes of the neural models.

A model whose .onnx file exists is not trained again (delete it to
re-export); the manifest's entries are always rewritten. Deterministic
(fixed seeds). Takes about 2½ minutes on 2 cores the first time (the
forest most of it); the forest's file is 37 MB. Needs Debian's
python3-sklearn, python3-xgboost, python3-onnx (onnx 1.12) and numpy at
/usr/bin/python3.
"""
import json
import os
import sys
import time
import warnings

import numpy as np
import onnx
import xgboost
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestRegressor

from bench_manifest import merge_manifest
from export_ml_models import (
    FLOAT, ML, ClassifierOutputs, Graph, LegacyTrees, add_hist_tree, add_xgboost_trees, f32, sklearn_regressor_trees)

FEATURES = 50
ROWS = 10000  # per timed run
LOW, HIGH = -3.0, 3.0  # the range of the "uniform" fill
INPUT = "float_input"


def standardized(X):
    return f32((X - X.mean(axis=0)) / X.std(axis=0))


def classification_data():
    X, y = make_classification(n_samples=50000, n_features=FEATURES, n_informative=20, n_redundant=10,
                               random_state=2)
    return standardized(X), y


def rf500_d10():
    X, y = make_regression(n_samples=20000, n_features=FEATURES, n_informative=20, noise=5.0, random_state=1)
    X = standardized(X)
    model = RandomForestRegressor(n_estimators=500, max_depth=10, max_features=1 / 3, random_state=1,
                                  n_jobs=2).fit(X, y)
    g = Graph("rf500_d10")
    g.input(INPUT, FLOAT, FEATURES)
    g.node("TreeEnsembleRegressor", [INPUT], "variable", domain=ML, **sklearn_regressor_trees(model))
    g.output("variable", FLOAT, [None, 1])
    thresholds = np.concatenate([e.tree_.threshold[e.tree_.children_left >= 0] for e in model.estimators_])
    leaves = reached_leaves(model.apply, [e.tree_.n_leaves for e in model.estimators_])
    return g.model("RandomForestRegressor(500 trees, max_depth 10, max_features 1/3), 50 features; skl2onnx"), \
        thresholds, leaves


def xgb300():
    X, y = classification_data()
    model = xgboost.XGBClassifier(n_estimators=300, max_depth=6, learning_rate=0.1, tree_method="hist", n_jobs=2,
                                  random_state=2).fit(X, y)
    booster = model.get_booster()
    g = Graph("xgb300")
    g.input(INPUT, FLOAT, FEATURES)
    trees = LegacyTrees(classifier=True, hitrates=False)
    add_xgboost_trees(trees, booster, 1)
    base_score = np.float32(json.loads(booster.save_config())["learner"]["learner_model_param"]["base_score"])
    # binary:logistic: the margin starts at logit(base_score); at 0.5 it is
    # 0 and onnxmltools writes no base_values.
    base_values = None if base_score == 0.5 else [-np.log(1 / base_score - 1.0)]
    out = ClassifierOutputs(g, model.classes_, zipmap=False)
    g.node("TreeEnsembleClassifier", [INPUT], [out.label, out.probabilities], domain=ML,
           **trees.attributes(base_values=base_values), post_transform="LOGISTIC", **out.label_attribute())
    out.finish()
    thresholds = np.array(trees.nodes["values"])[np.array(trees.nodes["modes"]) != "LEAF"]
    n_leaves = np.bincount(np.array(trees.leaves["treeids"]))

    def apply(rows):
        return booster.predict(xgboost.DMatrix(rows), pred_leaf=True)

    return g.model("xgboost.XGBClassifier(binary:logistic, 300 rounds, max_depth 6, hist), 50 features; "
                   "onnxmltools (label, probabilities)"), thresholds, reached_leaves(apply, n_leaves)


def hgb255():
    X, y = classification_data()
    model = HistGradientBoostingClassifier(max_iter=100, max_leaf_nodes=255, learning_rate=0.1, early_stopping=False,
                                           random_state=3).fit(X, y)
    assert model.n_trees_per_iteration_ == 1
    predictors = [p[0] for p in model._predictors]
    g = Graph("hgb255")
    g.input(INPUT, FLOAT, FEATURES)
    trees = LegacyTrees(classifier=True)
    for i, predictor in enumerate(predictors):
        add_hist_tree(trees, predictor, i)
    out = ClassifierOutputs(g, model.classes_, zipmap=False)
    g.node("TreeEnsembleClassifier", [INPUT], [out.label, out.probabilities], domain=ML,
           **trees.attributes(base_values=np.ravel(model._baseline_prediction)), post_transform="LOGISTIC",
           **out.label_attribute())
    out.finish()
    thresholds = np.array([n["num_threshold"] for p in predictors for n in p.nodes if not n["is_leaf"]])
    known, f_idx_map = model._bin_mapper.make_known_categories_bitsets()

    def apply(rows):
        # A leaf's value stands for the leaf: distinct values, distinct leaves.
        return np.stack([p.predict(rows.astype(np.float64), known, f_idx_map, 1) for p in predictors], axis=1)

    leaves = reached_leaves(apply, [p.get_n_leaf_nodes() for p in predictors])
    return g.model("HistGradientBoostingClassifier(100 iterations, max_leaf_nodes 255), binary, 50 features; "
                   "skl2onnx (label, probabilities)"), thresholds, leaves


def reached_leaves(apply, n_leaves):
    """The mean over trees of the distinct leaves that 10,000 rows drawn
    uniformly from [LOW, HIGH] reach, and of the leaves the trees have;
    apply maps rows to an array [rows, trees] of leaf ids (or values)."""
    rows = f32(np.random.RandomState(0).uniform(LOW, HIGH, size=(ROWS, FEATURES)))
    ids = apply(rows)
    return np.mean([len(np.unique(ids[:, t])) for t in range(ids.shape[1])]), np.mean(n_leaves)


MODELS = {"rf500_d10": rf500_d10, "xgb300": xgb300, "hgb255": hgb255}


def main():
    warnings.simplefilter("ignore")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    entries = []
    start, exported = time.time(), 0
    for name, make in MODELS.items():
        path = os.path.join(out, name + ".onnx")
        if not os.path.exists(path):
            model, thresholds, (reached, leaves) = make()
            inside = np.mean((thresholds >= LOW) & (thresholds <= HIGH))
            onnx.save(model, path)
            exported += 1
            print(f"export_bench_tabular.py: {name}: {100 * inside:.1f}% of {len(thresholds)} split thresholds in "
                  f"[{LOW:g}, {HIGH:g}]; {ROWS} uniform rows reach {reached:.0f} of {leaves:.0f} leaves a tree",
                  file=sys.stderr)
        entries.append({"name": name, "file": name + ".onnx", "rows": ROWS, "inputs": [
            {"name": INPUT, "dtype": "float32", "shape": [-1, FEATURES], "fill": "uniform", "low": LOW, "high": HIGH}]})
    merge_manifest(out, entries)
    print(f"export_bench_tabular.py: {exported} of {len(MODELS)} models exported in {time.time() - start:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
