#!/usr/bin/python3
"""Trains classical models with scikit-learn and XGBoost and writes each as
an ONNX model of the ai.onnx.ml domain with one test set, in the ONNX
backend-test layout, for beamml's runtime to be checked against. Usage:

    export_ml_models.py [TESTDATA [PROBES]]

TESTDATA (default testing/mlmodels/testdata) receives, for each model NAME:

    NAME/model.onnx
    NAME/test_data_set_0/input_K.pb    onnx.TensorProto named as graph input K
    NAME/test_data_set_0/output_K.pb   graph output K: a TensorProto, or for
                                       a ZipMap output an onnx.SequenceProto
                                       of onnx.MapProto (keys: the class
                                       labels, values: a sequence of scalar
                                       float tensors, in ZipMap's key order)

PROBES (default out/mlmodels/probes) receives, for each model with a ZipMap
output, NAME.onnx: the same model with the ZipMap's input declared as one
more graph output, because onnxruntime-node returns no sequence of maps;
scripts/check_ml_models.js compares that tensor to the expected maps.

Nothing here runs a model: the expected outputs are the library's own
predict, predict_proba, decision_function or transform on the test rows,
cast to the element type of the graph output. The inputs are float32 values
(float64 for the models with a DOUBLE input), and the library predicts on
exactly those values.

The graphs are written with onnx.helper, node by node, the way the
converters users run write them (skl2onnx for scikit-learn, onnxmltools
for XGBoost), without either installed: the same operators, attributes,
input and output names and node order, with what their post-passes remove
(Identity nodes) left out. Conventions that decide results:
  - A scikit-learn tree compares (float32)x <= t with t a double; the
    threshold written is the float w with x <= w for exactly the same
    float32 x: the largest float32 not above t (skl2onnx's
    sklearn_threshold). For a DOUBLE input, where scikit-learn casts x to
    float32 first, w is the largest double that rounds to a float32 not
    above t.
  - Tree leaves: a random forest's class counts are divided by their sum
    and by the number of trees, and summed (aggregate SUM); a binary
    classifier keeps one score per leaf, the positive class's (class id
    0); gradient boosting multiplies leaves by the learning rate and
    writes the initial raw prediction as base_values, then LOGISTIC
    (binary) or SOFTMAX; XGBoost trees use BRANCH_LT, its missing branch
    as nodes_missing_value_tracks_true, and base_score as base_values
    (logit(base_score) for binary:logistic, nothing when it is 0.5).
  - Classifiers end, unless built with zipmap=False, with a Cast (or, for
    string labels, nothing) to output_label and a ZipMap to
    output_probability; otherwise the outputs are label and probabilities.
    skl2onnx adds no ZipMap to SVC(probability=False) nor to LinearSVC,
    whose "probabilities" are decision values.
  - LogisticRegression: binary as two rows of coefficients, (-w, w) and
    (-b, b), LOGISTIC; multinomial as SOFTMAX and an L1 Normalizer.
  - SVC: scikit-learn stores a binary SVC's dual coefficients and
    intercept negated, and skl2onnx negates them back (libsvm's sign: a
    positive decision value votes for the pair's first class).
    probability=True adds prob_a and prob_b; the label is still the
    one-vs-one vote, as in scikit-learn's predict.
  - ai.onnx opset 15 (IR 8); the ai.onnx.ml opset is the highest version
    of the ml operators used (1; 2 with LabelEncoder; 3 with the
    *_as_tensor attributes). The TreeEnsemble models (names tree_ensemble5_*)
    use ai.onnx.ml 5 with ai.onnx 21 (IR 10); TreeEnsemble has no base
    values, so the initial prediction is added to the leaves of each
    target's first tree.

Test rows: 20 to 60 per model, drawn like the training data, with on
purpose some features set to the float32 nearest a split threshold of the
trained trees (and to its float32 neighbours), NaN where the model handles
missing values, categories not seen in training where the encoder
ignores them, and for SVMs and linear classifiers rows next to a
decision boundary (found by bisection between two rows of different
labels, then moved just far enough that the rule below holds). Rows where
a classifier's two highest probabilities (or decision values) are within
1e-3 of each other are left out: their label would be decided by
rounding, not by the model; so are SVM rows with a one-vs-one decision
value within 1e-3 of 0 (a vote).

Runs in a few seconds on 2 cores. Deterministic: fixed seeds, and
the same files on every run. Needs Debian's python3-sklearn,
python3-xgboost, python3-onnx (onnx 1.12) and numpy at /usr/bin/python3.
"""
import collections
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import sklearn
import xgboost
from onnx import TensorProto, helper, numpy_helper
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification, make_friedman1, make_regression
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import (
    Binarizer,
    LabelEncoder,
    MaxAbsScaler,
    MinMaxScaler,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)
from sklearn.svm import SVC, SVR, LinearSVC
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

ML = "ai.onnx.ml"
LEGACY_OPSET = 15  # ai.onnx opset of every model but the TreeEnsemble ones
LEGACY_IR = 8
TREE_ENSEMBLE_OPSET = 21  # ai.onnx opset paired with ai.onnx.ml 5
TREE_ENSEMBLE_IR = 10
TIE_GAP = 1e-3  # rows whose two highest probabilities are closer are left out

FLOAT, DOUBLE, INT64, STRING = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.STRING


# ---------------------------------------------------------------- graphs


class Graph:
    """An ONNX graph being written: nodes in the order added, initializers,
    inputs and outputs, and the highest ai.onnx.ml version its nodes need."""

    def __init__(self, name):
        self.name = name
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.outputs = []
        self.ml_opset = 1
        self._used = collections.Counter()

    def unique(self, hint):
        """A value or node name not used before: hint, then hint1, hint2, …"""
        n = self._used[hint]
        self._used[hint] += 1
        return hint if n == 0 else f"{hint}{n}"

    def input(self, name, elem_type, width):
        """Declares the graph input name of shape [N, width], N dynamic, or
        [N] when width is None."""
        shape = [None] if width is None else [None, width]
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        self._used[name] += 1
        return name

    def output(self, name, elem_type, shape):
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, shape))

    def output_zipmap(self, name, key_type):
        """Declares name as ZipMap's output: seq(map(key_type, float))."""
        map_type = onnx.TypeProto()
        map_type.map_type.key_type = key_type
        map_type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(FLOAT, []))
        self.outputs.append(helper.make_value_info(name, helper.make_sequence_type_proto(map_type)))

    def const(self, hint, array):
        """Adds array as an initializer and returns its name."""
        name = self.unique(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op_type, inputs, outputs=None, domain="", version=1, **attrs):
        """Adds a node; outputs defaults to one new value named after op_type.
        version is the node's ai.onnx.ml opset when domain is ML. Returns the
        output names (one name when there is one output)."""
        if outputs is None:
            outputs = [self.unique(op_type.lower())]
        elif isinstance(outputs, str):
            outputs = [outputs]
        for out in outputs:
            self._used[out] += 1
        if domain == ML:
            self.ml_opset = max(self.ml_opset, version)
        self.nodes.append(
            helper.make_node(op_type, list(inputs), outputs, name=self.unique(op_type), domain=domain, **attrs)
        )
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, doc, opset=LEGACY_OPSET, ir_version=LEGACY_IR, ml_opset=None):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.initializers)
        opsets = [helper.make_opsetid("", opset), helper.make_opsetid(ML, ml_opset or self.ml_opset)]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="beamml scripts/export_ml_models.py")
        model.ir_version = ir_version
        model.doc_string = doc
        return model


def reshape(g, value, shape, name=None):
    return g.node("Reshape", [value, g.const("shape", np.array(shape, np.int64))], name)


# ------------------------------------------------------------ thresholds


def float32_threshold(t):
    """The largest float32 not above t: for float32 x, x <= it exactly when
    x <= t (scikit-learn compares float32 features to double thresholds)."""
    w = np.float32(t)
    if w > t:
        w = np.nextafter(w, np.float32(-np.inf))
    return w


def float64_threshold(t):
    """The largest double w whose float32 rounding is not above t: for double
    x, x <= w exactly when float32(x) <= t (scikit-learn's trees cast a
    double input to float32 before comparing)."""
    below = float32_threshold(t)
    above = np.nextafter(below, np.float32(np.inf))
    mid = (np.float64(below) + np.float64(above)) / 2  # exact in float64
    return mid if np.float32(mid) == below else np.nextafter(mid, -np.inf)


def put_on_thresholds(X, splits, rng, rows):
    """In each given row of X, sets one feature to the float32 nearest a
    split threshold drawn from splits, a list of (feature, threshold); one
    row in three gets the next float32 below it instead, one in three the
    next above."""
    for k, row in enumerate(rows):
        feature, threshold = splits[rng.randint(len(splits))]
        value = np.float32(threshold)
        if k % 3 == 1:
            value = np.nextafter(value, np.float32(-np.inf))
        elif k % 3 == 2:
            value = np.nextafter(value, np.float32(np.inf))
        X[row, feature] = value


def sklearn_splits(tree, max_depth=3):
    """(feature, threshold) of the split nodes of a fitted scikit-learn tree_
    down to max_depth: the nodes most test rows pass through."""
    splits, stack = [], [(0, 0)]
    while stack:
        node, depth = stack.pop()
        if tree.children_left[node] < 0 or depth > max_depth:
            continue
        splits.append((int(tree.feature[node]), float(tree.threshold[node])))
        stack += [(tree.children_left[node], depth + 1), (tree.children_right[node], depth + 1)]
    return splits


# ------------------------------------------------ legacy tree ensembles


class LegacyTrees:
    """The attributes of a TreeEnsembleClassifier or TreeEnsembleRegressor
    (ai.onnx.ml 1 and 3), filled node by node in the converter's order:
    every node of a tree, leaves included, in nodes_*; each leaf's weights
    in class_* (classifier) or target_* (regressor)."""

    def __init__(self, classifier, hitrates=True):
        self.leaf = "class" if classifier else "target"
        keys = ["treeids", "nodeids", "featureids", "modes", "values", "truenodeids", "falsenodeids"]
        keys += ["missing_value_tracks_true"] + (["hitrates"] if hitrates else [])
        self.nodes = {k: [] for k in keys}
        self.leaves = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}

    def add(self, tree_id, node_id, feature, mode, value, true_id, false_id, missing=0):
        for key, v in zip(
            ("treeids", "nodeids", "featureids", "modes", "values", "truenodeids", "falsenodeids"),
            (tree_id, node_id, feature, mode, value, true_id, false_id),
        ):
            self.nodes[key].append(v)
        self.nodes["missing_value_tracks_true"].append(int(missing))
        if "hitrates" in self.nodes:
            self.nodes["hitrates"].append(1.0)

    def add_leaf(self, tree_id, node_id, weights):
        """weights: (class or target id, weight) pairs of the leaf."""
        self.add(tree_id, node_id, 0, "LEAF", 0.0, 0, 0)
        for target, weight in weights:
            self.leaves["treeids"].append(tree_id)
            self.leaves["nodeids"].append(node_id)
            self.leaves["ids"].append(target)
            self.leaves["weights"].append(float(weight))

    def attributes(self, double=False, base_values=None):
        """The node attributes. With double, the real-valued ones are written
        as *_as_tensor DOUBLE tensors (ai.onnx.ml 3) instead of floats."""
        attrs = {}
        real = {"nodes_values", "nodes_hitrates", f"{self.leaf}_weights", "base_values"}
        items = [(f"nodes_{k}", v) for k, v in self.nodes.items()]
        items += [(f"{self.leaf}_{k}", v) for k, v in self.leaves.items()]
        if base_values is not None:
            items.append(("base_values", list(base_values)))
        for key, values in items:
            if key in real and double:
                attrs[key + "_as_tensor"] = numpy_helper.from_array(np.array(values, np.float64), key + "_as_tensor")
            elif key in real:
                attrs[key] = np.array(values, np.float32).tolist()
            else:
                attrs[key] = values
        return attrs


def add_sklearn_tree(trees, tree, tree_id, weight=1.0, class_id=0, counts=False, binary=False,
                     threshold=float32_threshold):
    """Adds a fitted scikit-learn tree_ as skl2onnx does: nodes in tree_
    order, BRANCH_LEQ, true branch = left child. A leaf's values are
    multiplied by weight (1/n_estimators for a forest, the learning rate for
    gradient boosting), divided by their sum when they are class counts, and
    for a binary classifier only the positive class's is kept, as class id
    class_id; otherwise value k goes to id class_id + k."""
    for i in range(tree.node_count):
        if tree.children_left[i] > i or tree.children_right[i] > i:
            trees.add(tree_id, i, int(tree.feature[i]), "BRANCH_LEQ", threshold(tree.threshold[i]),
                      int(tree.children_left[i]), int(tree.children_right[i]))
            continue
        values = tree.value[i].ravel().astype(np.float64)
        factor = weight
        if counts:
            total = values.sum()
            factor /= total if total != 0 else 1.0
        values = values * factor
        if binary and len(values) == 2:
            values = values[1:]
        trees.add_leaf(tree_id, i, [(class_id + k, w) for k, w in enumerate(values)])


def add_hist_tree(trees, predictor, tree_id, class_id=0):
    """Adds a HistGradientBoosting predictor as skl2onnx does: BRANCH_LEQ on
    the adjusted num_threshold, missing_go_to_left as
    nodes_missing_value_tracks_true, the leaf value (learning rate already
    applied) as the weight of class_id. Numerical splits only."""
    for i, node in enumerate(predictor.nodes):
        if node["is_leaf"]:
            trees.add_leaf(tree_id, i, [(class_id, node["value"])])
            continue
        assert not node["is_categorical"], "categorical splits: see hgb_categorical_describe"
        trees.add(tree_id, i, int(node["feature_idx"]), "BRANCH_LEQ", float32_threshold(node["num_threshold"]),
                  int(node["left"]), int(node["right"]), missing=node["missing_go_to_left"])


def add_xgboost_trees(trees, booster, n_classes):
    """Adds every tree of an XGBoost booster as onnxmltools does, from its
    JSON dump: node ids renumbered in preorder, BRANCH_LT (XGBoost sends
    x < split_condition to "yes"), "missing" == "yes" as
    nodes_missing_value_tracks_true, leaf value as the weight of class
    tree_id mod n_classes (0 when binary)."""
    for tree_id, text in enumerate(booster.get_dump(with_stats=True, dump_format="json")):
        root = json.loads(text)
        renumber = {}

        def number(node):
            renumber[node["nodeid"]] = len(renumber)
            for child in node.get("children", []):
                number(child)

        def add(node):
            node_id = renumber[node["nodeid"]]
            if "children" not in node:
                trees.add_leaf(tree_id, node_id, [(tree_id % n_classes if n_classes > 1 else 0, node["leaf"])])
                return
            feature = int(node["split"][1:])  # "f3"
            trees.add(tree_id, node_id, feature, "BRANCH_LT", np.float32(node["split_condition"]),
                      renumber[node["yes"]], renumber[node["no"]], missing=node["missing"] == node["yes"])
            for child in node["children"]:
                add(child)

        number(root)
        add(root)


def xgboost_splits(booster):
    """(feature, split_condition) of the splits of the first trees."""
    splits = []
    for text in booster.get_dump(dump_format="json")[:8]:
        stack = [json.loads(text)]
        while stack:
            node = stack.pop()
            if "children" in node:
                splits.append((int(node["split"][1:]), float(node["split_condition"])))
                stack += node["children"]
    return splits


# ------------------------------------------------------------ classifiers


class ClassifierOutputs:
    """The outputs of a classifier as skl2onnx writes them. The classifier's
    own node writes self.label and self.probabilities; finish adds what
    follows it: with zipmap, a Cast of int labels (string labels go
    straight to output_label) and ZipMap(probabilities) → output_probability;
    without, label and probabilities are the graph outputs."""

    def __init__(self, g, classes, zipmap=True):
        self.g, self.classes, self.zipmap = g, np.asarray(classes), zipmap
        self.strings = self.classes.dtype.kind in "UO"
        self.label = "output_label" if zipmap and self.strings else "label"
        self.probabilities = "probabilities"

    def label_attribute(self, name_int="classlabels_int64s", name_str="classlabels_strings"):
        if self.strings:
            return {name_str: [str(c) for c in self.classes]}
        return {name_int: [int(c) for c in self.classes]}

    def finish(self):
        g = self.g
        label_type = STRING if self.strings else INT64
        if not self.zipmap:
            g.output("label", label_type, [None])
            g.output("probabilities", FLOAT, [None, len(self.classes)])
            return
        if not self.strings:
            g.node("Cast", [self.label], "output_label", to=INT64)
        g.node("ZipMap", [self.probabilities], "output_probability", domain=ML,
               **self.label_attribute("classlabels_int64s", "classlabels_strings"))
        g.output("output_label", label_type, [None])
        g.output_zipmap("output_probability", label_type)

    def expected(self, labels, probabilities):
        """The expected outputs, in graph output order."""
        labels = np.asarray(labels)
        labels = labels.astype(object) if self.strings else labels.astype(np.int64)
        probabilities = np.asarray(probabilities, np.float32)
        if not self.zipmap:
            return [labels, probabilities]
        keys = [str(c) for c in self.classes] if self.strings else [int(c) for c in self.classes]
        maps = [dict(zip(keys, row)) for row in probabilities]
        return [labels, maps]


def clear_rows(probabilities, want):
    """Indices of the first want rows whose two highest probabilities differ
    by at least TIE_GAP."""
    top = np.sort(probabilities, axis=1)
    keep = np.flatnonzero(top[:, -1] - top[:, -2] >= TIE_GAP)
    assert len(keep) >= want, f"only {len(keep)} rows without a near tie"
    return keep[:want]


def clear_scores(scores):
    """For each row of scores (probabilities or decision values), whether
    its two highest values differ by at least TIE_GAP."""
    top = np.sort(np.asarray(scores, np.float64), axis=1)
    return top[:, -1] - top[:, -2] >= TIE_GAP


def boundary_rows(predict, clear, X, n, rng):
    """n float32 rows next to a decision boundary of predict: for a pair of
    rows of X with different labels, the point of the segment between them
    where the label changes (40 bisections), then moved along the segment,
    away from the boundary alternately on either side, by the smallest step
    (doubling from 1e-6 of the segment) after which clear(row) holds."""
    labels = predict(X)
    rows = []
    while len(rows) < n:
        i, j = rng.randint(len(X), size=2)
        if labels[i] == labels[j]:
            continue
        a, b = X[i].astype(np.float64), X[j].astype(np.float64)

        def at(t):
            return f32(a + t * (b - a)).reshape(1, -1)

        lo, hi = 0.0, 1.0  # predict(at(lo)) is labels[i], predict(at(hi)) is not
        for _ in range(40):
            mid = (lo + hi) / 2
            if predict(at(mid))[0] == labels[i]:
                lo = mid
            else:
                hi = mid
        step = 1e-6
        while step < 0.5:
            row = at(lo - step if len(rows) % 2 == 0 else hi + step)
            if clear(row)[0]:
                rows.append(row[0])
                break
            step *= 2
    return np.array(rows)


# ------------------------------------- linear models and support vectors


def add_standard_scaler(g, scaler, input_name, output):
    """StandardScaler as skl2onnx writes it: Scaler, offset the mean, scale
    its inverse standard deviation, both float32."""
    return g.node("Scaler", [input_name], output, domain=ML,
                  offset=f32(scaler.mean_).tolist(), scale=f32(1.0 / scaler.scale_).tolist())


def add_linear_classifier(g, estimator, input_name, out):
    """A LogisticRegression or a multiclass LinearSVC as skl2onnx writes it,
    to out.label and out.probabilities: one LinearClassifier (coefficients
    and intercepts as doubles, stored as floats). Binary LogisticRegression:
    two rows, (-w, w) and (-b, b), multi_class 0, LOGISTIC. Multinomial
    LogisticRegression: multi_class 1, SOFTMAX, then an L1 Normalizer so
    that rows sum to 1. LinearSVC (one-vs-rest): multi_class 0, NONE, the
    scores its decision_function."""
    coefficients, intercepts = estimator.coef_.ravel(), np.ravel(estimator.intercept_)
    binary = len(estimator.classes_) == 2
    attrs = out.label_attribute("classlabels_ints")
    if isinstance(estimator, LinearSVC):
        assert not binary, "a binary LinearSVC ends in ArrayFeatureExtractor, not written here"
        g.node("LinearClassifier", [input_name], [out.label, out.probabilities], domain=ML,
               coefficients=coefficients.tolist(), intercepts=intercepts.tolist(), multi_class=0,
               post_transform="NONE", **attrs)
    elif binary:
        assert estimator.multi_class in ("auto", "ovr"), estimator.multi_class
        g.node("LinearClassifier", [input_name], [out.label, out.probabilities], domain=ML,
               coefficients=np.concatenate([-coefficients, coefficients]).tolist(),
               intercepts=np.concatenate([-intercepts, intercepts]).tolist(), multi_class=0,
               post_transform="LOGISTIC", **attrs)
    else:
        assert estimator.multi_class in ("auto", "multinomial") and estimator.solver != "liblinear"
        scores = g.unique("probability_tensor")
        g.node("LinearClassifier", [input_name], [out.label, scores], domain=ML,
               coefficients=coefficients.tolist(), intercepts=intercepts.tolist(), multi_class=1,
               post_transform="SOFTMAX", **attrs)
        g.node("Normalizer", [scores], out.probabilities, domain=ML, norm="L1")


def add_svm_classifier(g, model, input_name, out):
    """SVC as skl2onnx writes it: SVMClassifier to out.label and its scores,
    then a Cast of the scores to out.probabilities (the decision values
    when probability=False). scikit-learn stores a binary SVC's dual coefficients and
    intercept negated; skl2onnx negates them back to libsvm's convention,
    in which a positive decision value votes for the pair's first class.
    With probability=True, prob_a and prob_b are libsvm's Platt scaling
    of each pair, and the scores are the coupled class probabilities."""
    sign = -1.0 if len(model.classes_) == 2 else 1.0
    attrs = {}
    if len(model.probA_) > 0:
        attrs = dict(prob_a=f32(model.probA_).tolist(), prob_b=f32(model.probB_).tolist())
    raw = g.unique("SVM02")
    g.node("SVMClassifier", [input_name], [out.label, raw], domain=ML, kernel_type=model.kernel.upper(),
           kernel_params=[float(model._gamma), float(model.coef0), float(model.degree)],
           support_vectors=f32(model.support_vectors_).ravel().tolist(),
           vectors_per_class=model.n_support_.tolist(), coefficients=f32(sign * model.dual_coef_).ravel().tolist(),
           rho=f32(sign * model.intercept_).tolist(), post_transform="NONE", **attrs,
           **out.label_attribute("classlabels_ints"))
    g.node("Cast", [raw], out.probabilities, to=FLOAT)


def add_svm_regressor(g, model, input_name, output):
    """SVR as skl2onnx writes it: SVMRegressor (kernel_params as float32),
    then a Cast to the float output."""
    raw = g.node("SVMRegressor", [input_name], g.unique("SVM03"), domain=ML,
                 kernel_type=model.kernel.upper(),
                 kernel_params=f32([model._gamma, model.coef0, model.degree]).tolist(),
                 support_vectors=f32(model.support_vectors_).ravel().tolist(),
                 coefficients=f32(model.dual_coef_).ravel().tolist(), rho=f32(model.intercept_).tolist(),
                 post_transform="NONE", n_supports=len(model.support_))
    return g.node("Cast", [raw], output, to=FLOAT)


# ------------------------------------------------------------------ cases

Case = collections.namedtuple("Case", "name model feeds expected")


def tree_classifier_case(name, estimator, X, classes, zipmap, input_name, doc):
    """A forest, a tree or gradient boosting classifier of scikit-learn on
    one float input, as skl2onnx writes it."""
    g = Graph(name)
    g.input(input_name, FLOAT, X.shape[1])
    out = ClassifierOutputs(g, classes, zipmap)
    attrs = sklearn_classifier_trees(estimator)
    g.node("TreeEnsembleClassifier", [input_name], [out.label, out.probabilities], domain=ML,
           **attrs, **out.label_attribute())
    out.finish()
    labels, proba = estimator.predict(X), estimator.predict_proba(X)
    return Case(name, g.model(doc), {input_name: X}, out.expected(labels, proba))


def sklearn_classifier_trees(estimator):
    """TreeEnsembleClassifier attributes (no class labels) of a fitted
    RandomForest/ExtraTrees/DecisionTree/GradientBoosting classifier."""
    n_classes = len(estimator.classes_)
    binary = n_classes == 2
    trees = LegacyTrees(classifier=True)
    if isinstance(estimator, GradientBoostingClassifier):
        for i in range(estimator.n_estimators_):
            for c in range(1 if binary else n_classes):
                add_sklearn_tree(trees, estimator.estimators_[i][c].tree_, i * (1 if binary else n_classes) + c,
                                 weight=estimator.learning_rate, class_id=c)
        base = estimator._raw_predict_init(np.zeros((1, estimator.n_features_in_))).ravel()
        attrs = trees.attributes(base_values=base)
        attrs["post_transform"] = "LOGISTIC" if binary else "SOFTMAX"
        return attrs
    members = getattr(estimator, "estimators_", [estimator])
    for tree_id, member in enumerate(members):
        add_sklearn_tree(trees, member.tree_, tree_id, weight=1.0 / len(members), counts=True, binary=binary)
    attrs = trees.attributes()
    attrs["post_transform"] = "NONE"
    return attrs


def sklearn_regressor_trees(estimator, double=False):
    """TreeEnsembleRegressor attributes of a fitted RandomForest/ExtraTrees/
    DecisionTree/GradientBoosting regressor; double writes the *_as_tensor
    form with thresholds for a DOUBLE input."""
    threshold = float64_threshold if double else float32_threshold
    trees = LegacyTrees(classifier=False)
    base = None
    if isinstance(estimator, GradientBoostingRegressor):
        for i in range(estimator.n_estimators_):
            add_sklearn_tree(trees, estimator.estimators_[i][0].tree_, i, weight=estimator.learning_rate,
                             threshold=threshold)
        base = np.ravel(estimator.init_.constant_)
    else:
        members = getattr(estimator, "estimators_", [estimator])
        for tree_id, member in enumerate(members):
            add_sklearn_tree(trees, member.tree_, tree_id, weight=1.0 / len(members), threshold=threshold)
    attrs = trees.attributes(double=double, base_values=base)
    attrs["n_targets"] = int(getattr(estimator, "n_outputs_", 1))
    attrs["post_transform"] = "NONE"
    return attrs


def regressor_case(name, g, input_name, X, prediction, doc, n_targets=1, output="variable"):
    g.output(output, FLOAT, [None, n_targets])
    expected = np.asarray(prediction, np.float32).reshape(len(X), n_targets)
    return Case(name, g.model(doc), {input_name: X}, [expected])


def f32(X):
    return np.asarray(X, np.float32)


def rf_classifier_int_labels():
    X, y = make_classification(n_samples=600, n_features=6, n_informative=4, n_redundant=1, n_classes=3,
                               n_clusters_per_class=1, random_state=1)
    X, y = f32(X), np.array([-1, 3, 7])[y]
    model = RandomForestClassifier(n_estimators=20, max_depth=8, random_state=1).fit(X[:500], y[:500])
    rng = np.random.RandomState(1)
    X_test = X[500:].copy()
    put_on_thresholds(X_test, [s for m in model.estimators_[:5] for s in sklearn_splits(m.tree_)], rng, range(0, 30))
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]
    return tree_classifier_case("rf_classifier_int_labels", model, X_test, model.classes_, True, "float_input",
                                "RandomForestClassifier(20 trees, depth 8), int64 labels -1, 3, 7; skl2onnx")


def rf_classifier_string_labels(zipmap=True):
    X, y = make_classification(n_samples=500, n_features=5, n_informative=3, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, random_state=2)
    X, y = f32(X), np.array(["cat", "dog", "bird"])[y]
    model = RandomForestClassifier(n_estimators=15, max_depth=7, random_state=2).fit(X[:420], y[:420])
    rng = np.random.RandomState(2)
    X_test = X[420:].copy()
    put_on_thresholds(X_test, [s for m in model.estimators_[:5] for s in sklearn_splits(m.tree_)], rng, range(0, 24))
    X_test = X_test[clear_rows(model.predict_proba(X_test), 36)]
    name = "rf_classifier_string_labels" + ("" if zipmap else "_nozipmap")
    return tree_classifier_case(name, model, X_test, model.classes_, zipmap, "input",
                                "RandomForestClassifier(15 trees, depth 7), string labels; skl2onnx" +
                                ("" if zipmap else ", zipmap=False"))


def gb_binary(zipmap=True):
    X, y = make_classification(n_samples=700, n_features=8, n_informative=5, random_state=3)
    X = f32(X)
    model = GradientBoostingClassifier(n_estimators=60, max_depth=3, random_state=3).fit(X[:600], y[:600])
    rng = np.random.RandomState(3)
    X_test = X[600:].copy()
    put_on_thresholds(X_test, [s for e in model.estimators_[:6, 0] for s in sklearn_splits(e.tree_)], rng, range(0, 20))
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]
    name = "gb_binary" + ("" if zipmap else "_nozipmap")
    return tree_classifier_case(name, model, X_test, model.classes_, zipmap, "float_input",
                                "GradientBoostingClassifier(60 trees, depth 3), binary; skl2onnx" +
                                ("" if zipmap else ", zipmap=False"))


def gb_regressor():
    X, y = make_friedman1(n_samples=600, n_features=6, noise=0.5, random_state=4)
    X = f32(X)
    model = GradientBoostingRegressor(n_estimators=80, max_depth=3, random_state=4).fit(X[:550], y[:550])
    rng = np.random.RandomState(4)
    X_test = X[550:].copy()
    put_on_thresholds(X_test, [s for e in model.estimators_[:6, 0] for s in sklearn_splits(e.tree_)], rng, range(0, 20))
    g = Graph("gb_regressor")
    g.input("float_input", FLOAT, 6)
    g.node("TreeEnsembleRegressor", ["float_input"], "variable", domain=ML, **sklearn_regressor_trees(model))
    return regressor_case("gb_regressor", g, "float_input", X_test, model.predict(X_test),
                          "GradientBoostingRegressor(80 trees, depth 3); skl2onnx")


def tree_depth18():
    rng = np.random.RandomState(5)
    X = f32(rng.uniform(-3, 3, size=(2000, 4)))
    y = np.sin(3 * X[:, 0]) * X[:, 1] + np.cos(X[:, 2] * X[:, 3]) + rng.normal(scale=0.3, size=2000)
    model = DecisionTreeRegressor(max_depth=22, min_samples_leaf=2, random_state=5).fit(X[:1900], y[:1900])
    assert model.get_depth() >= 18, model.get_depth()
    X_test = X[1900:1950].copy()
    put_on_thresholds(X_test, sklearn_splits(model.tree_, max_depth=12), rng, range(0, 25))
    g = Graph("tree_depth18")
    g.input("float_input", FLOAT, 4)
    g.node("TreeEnsembleRegressor", ["float_input"], "variable", domain=ML, **sklearn_regressor_trees(model))
    return regressor_case("tree_depth18", g, "float_input", X_test, model.predict(X_test),
                          f"DecisionTreeRegressor, depth {model.get_depth()}, {model.tree_.node_count} nodes; skl2onnx")


def extra_trees_multitarget():
    X, y = make_regression(n_samples=500, n_features=5, n_informative=4, n_targets=3, noise=1.0, random_state=6)
    X = f32(X)
    model = ExtraTreesRegressor(n_estimators=10, max_depth=8, random_state=6).fit(X[:450], y[:450])
    rng = np.random.RandomState(6)
    X_test = X[450:490].copy()
    put_on_thresholds(X_test, [s for m in model.estimators_[:4] for s in sklearn_splits(m.tree_)], rng, range(0, 20))
    g = Graph("extra_trees_multitarget")
    g.input("float_input", FLOAT, 5)
    g.node("TreeEnsembleRegressor", ["float_input"], "variable", domain=ML, **sklearn_regressor_trees(model))
    return regressor_case("extra_trees_multitarget", g, "float_input", X_test, model.predict(X_test),
                          "ExtraTreesRegressor(10 trees, depth 8), 3 targets; skl2onnx", n_targets=3)


def rf_500_trees():
    X, y = make_friedman1(n_samples=800, n_features=5, noise=0.3, random_state=7)
    X = f32(X)
    model = RandomForestRegressor(n_estimators=500, max_depth=5, random_state=7, n_jobs=2).fit(X[:750], y[:750])
    rng = np.random.RandomState(7)
    X_test = X[750:].copy()
    put_on_thresholds(X_test, [s for m in model.estimators_[:10] for s in sklearn_splits(m.tree_)], rng, range(0, 20))
    g = Graph("rf_500_trees")
    g.input("float_input", FLOAT, 5)
    g.node("TreeEnsembleRegressor", ["float_input"], "variable", domain=ML, **sklearn_regressor_trees(model))
    return regressor_case("rf_500_trees", g, "float_input", X_test, model.predict(X_test),
                          "RandomForestRegressor(500 trees, depth 5); skl2onnx")


def double_input_tree():
    X, y = make_friedman1(n_samples=600, n_features=5, noise=0.3, random_state=8)
    model = GradientBoostingRegressor(n_estimators=25, max_depth=4, random_state=8).fit(X[:560], y[:560])
    rng = np.random.RandomState(8)
    X_test = X[560:].copy()  # float64, not float32 values
    splits = [s for e in model.estimators_[:6, 0] for s in sklearn_splits(e.tree_)]
    for k, row in enumerate(range(0, 24)):
        # The double threshold itself, the float32 nearest it, and the
        # double just above the last double that rounds to a float32 not
        # above it: the three sides of scikit-learn's cast to float32.
        feature, t = splits[rng.randint(len(splits))]
        X_test[row, feature] = [t, float(np.float32(t)), np.nextafter(float64_threshold(t), np.inf)][k % 3]
    g = Graph("double_input_tree")
    g.input("input", DOUBLE, 5)
    g.node("TreeEnsembleRegressor", ["input"], "variable", domain=ML, version=3,
           **sklearn_regressor_trees(model, double=True))
    # TreeEnsembleRegressor's output is float whatever the input (ONNX
    # Runtime rejects a graph that declares it double).
    return regressor_case("double_input_tree", g, "input", X_test, model.predict(X_test),
                          "GradientBoostingRegressor(25 trees, depth 4) on a DOUBLE input; skl2onnx, "
                          "target_opset ai.onnx.ml 3")


def scaler_logreg_multinomial(zipmap=True):
    X, y = make_classification(n_samples=400, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, class_sep=0.8, random_state=9)
    X = f32(X * [1.0, 10.0, 0.1, 3.0] + [0.0, 5.0, -1.0, 2.0])
    model = Pipeline([("scaler", StandardScaler()),
                      ("logreg", LogisticRegression(multi_class="multinomial", max_iter=1000))]).fit(X[:350], y[:350])
    X_test = X[350:]
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]
    scaler, logreg = model.named_steps["scaler"], model.named_steps["logreg"]
    name = "scaler_logreg_multinomial" + ("" if zipmap else "_nozipmap")
    g = Graph(name)
    g.input("float_input", FLOAT, 4)
    scaled = add_standard_scaler(g, scaler, "float_input", "variable")
    out = ClassifierOutputs(g, logreg.classes_, zipmap)
    add_linear_classifier(g, logreg, scaled, out)
    out.finish()
    return Case(name, g.model("Pipeline(StandardScaler, LogisticRegression(multinomial)); skl2onnx" +
                              ("" if zipmap else ", zipmap=False")),
                {"float_input": X_test}, out.expected(model.predict(X_test), model.predict_proba(X_test)))


def imputer_normalizer_linreg():
    rng = np.random.RandomState(10)
    X = rng.normal(size=(400, 5)) * [1, 2, 0.5, 3, 1] + [2, 0, 1, 5, -1]
    y = X @ [0.5, -1.0, 2.0, 0.1, 1.5] + rng.normal(scale=0.1, size=400)
    X = f32(X)
    X[rng.rand(*X.shape) < 0.1] = np.nan
    model = Pipeline([("imputer", SimpleImputer(strategy="mean")), ("normalizer", Normalizer(norm="l2")),
                      ("linreg", LinearRegression())]).fit(X[:360], y[:360])
    X_test = X[360:].copy()
    X_test[0, :] = np.nan  # every feature imputed
    X_test[1:6, 2] = np.nan
    imputer, linreg = model.named_steps["imputer"], model.named_steps["linreg"]
    g = Graph("imputer_normalizer_linreg")
    g.input("float_input", FLOAT, 5)
    # skl2onnx names each step's output "variable", made unique: the graph
    # output of this three-step pipeline is "variable2".
    imputed = g.node("Imputer", ["float_input"], "variable", domain=ML,
                     imputed_value_floats=f32(imputer.statistics_).tolist(), replaced_value_float=float("nan"))
    normalized = g.node("Normalizer", [imputed], "variable1", domain=ML, norm="L2")
    g.node("LinearRegressor", [normalized], "variable2", domain=ML,
           coefficients=f32(linreg.coef_).tolist(), intercepts=[float(np.float32(linreg.intercept_))])
    return regressor_case("imputer_normalizer_linreg", g, "float_input", X_test, model.predict(X_test),
                          "Pipeline(SimpleImputer(mean), Normalizer(l2), LinearRegression) with NaN inputs; skl2onnx",
                          output="variable2")


def string_column(values):
    return np.array(values, dtype=object).reshape(-1, 1)


def onehot_strings_tree():
    rng = np.random.RandomState(13)
    n = 600
    colors = np.array(["red", "green", "blue", "black"])[rng.randint(4, size=n)]
    sizes = np.array(["S", "M", "L"])[rng.randint(3, size=n)]
    weight = f32(rng.normal(70, 15, size=n))
    height = f32(rng.normal(170, 10, size=n))
    score = (colors == "red") * 1.0 + (sizes == "L") * 0.8 + (weight - 70) / 15 + rng.normal(scale=0.5, size=n)
    y = (score > 0.6).astype(np.int64)
    X = np.empty((n, 4), dtype=object)
    X[:, 0], X[:, 1], X[:, 2], X[:, 3] = colors, sizes, weight, height
    prep = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), [0, 1]),
                              ("num", "passthrough", [2, 3])])
    model = Pipeline([("prep", prep), ("tree", DecisionTreeClassifier(max_depth=6, random_state=13))])
    model.fit(X[:540], y[:540])
    X_test = X[540:].copy()
    X_test[0:3, 0] = "purple"  # categories not seen in training: all-zero one-hot
    X_test[2:5, 1] = "XL"
    tree = model.named_steps["tree"]
    encoder = model.named_steps["prep"].named_transformers_["cat"]
    n_onehot = sum(len(c) for c in encoder.categories_)
    numeric = [(f - n_onehot + 2, t) for f, t in sklearn_splits(tree.tree_, max_depth=5) if f >= n_onehot]
    numeric_part = X_test[:, 2:4].astype(np.float32)
    put_on_thresholds(numeric_part, [(f - 2, t) for f, t in numeric], rng, range(5, 25))
    X_test[:, 2:4] = numeric_part
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]

    g = Graph("onehot_strings_tree")
    for name, kind in (("color", STRING), ("size", STRING), ("weight", FLOAT), ("height", FLOAT)):
        g.input(name, kind, 1)
    # OneHotEncoder on two inputs: one ai.onnx.ml OneHotEncoder each
    # ([N,1] → [N,1,C]), concatenated on the last axis, reshaped to [N, C].
    encoded = [g.node("OneHotEncoder", [column], column + "out", domain=ML,
                      cats_strings=[str(c) for c in categories], zeros=1)
               for column, categories in zip(("color", "size"), encoder.categories_)]
    joined = g.node("Concat", encoded, "concat_result", axis=-1)
    onehot = reshape(g, joined, [-1, n_onehot], "variable")
    numeric_columns = g.node("Concat", ["weight", "height"], "merged_columns", axis=1)
    features = g.node("Concat", [onehot, numeric_columns], "transformed_column", axis=1)
    out = ClassifierOutputs(g, tree.classes_)
    g.node("TreeEnsembleClassifier", [features], [out.label, out.probabilities], domain=ML,
           **sklearn_classifier_trees(tree), **out.label_attribute())
    out.finish()
    feeds = {"color": string_column(X_test[:, 0]), "size": string_column(X_test[:, 1]),
             "weight": f32(X_test[:, 2:3]), "height": f32(X_test[:, 3:4])}
    return Case("onehot_strings_tree", g.model(
        "Pipeline(ColumnTransformer(OneHotEncoder(handle_unknown='ignore') on 2 string columns, passthrough "
        "on 2 float columns), DecisionTreeClassifier(depth 6)), binary; skl2onnx, one input per column"),
        feeds, out.expected(model.predict(X_test), model.predict_proba(X_test)))


def ordinal_strings_gb():
    rng = np.random.RandomState(14)
    n = 700
    cities = np.array(["Lyon", "Oslo", "Lima", "Pune", "Kobe", "Bonn"])
    city = cities[rng.randint(len(cities), size=n)]
    x1, x2 = f32(rng.normal(size=n)), f32(rng.uniform(0, 10, size=n))
    score = np.searchsorted(np.sort(cities), city) * 0.6 + x1 + x2 / 5 + rng.normal(scale=0.7, size=n)
    y = np.digitize(score, [2.0, 3.5])  # classes 0, 1, 2
    X = np.empty((n, 3), dtype=object)
    X[:, 0], X[:, 1], X[:, 2] = city, x1, x2
    prep = ColumnTransformer([("city", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), [0]),
                              ("num", "passthrough", [1, 2])])
    gb = GradientBoostingClassifier(n_estimators=40, max_depth=3, random_state=14)
    model = Pipeline([("prep", prep), ("gb", gb)])
    model.fit(X[:640], y[:640])
    X_test = X[640:].copy()
    X_test[0:4, 0] = "Atlantis"  # unknown: encoded as -1
    encoder = model.named_steps["prep"].named_transformers_["city"]
    splits = [(f - 1, t) for e in gb.estimators_[:5].ravel() for f, t in sklearn_splits(e.tree_) if f >= 1]
    numeric_part = X_test[:, 1:3].astype(np.float32)
    put_on_thresholds(numeric_part, splits, rng, range(4, 22))
    X_test[:, 1:3] = numeric_part
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]

    g = Graph("ordinal_strings_gb")
    for name, kind in (("city", STRING), ("x1", FLOAT), ("x2", FLOAT)):
        g.input(name, kind, 1)
    # OrdinalEncoder: one LabelEncoder (ai.onnx.ml 2) per column, unknown
    # strings to unknown_value, reshaped to [N,1], concatenated, cast to
    # float (the encoder's dtype).
    codes = g.node("LabelEncoder", ["city"], "label_encoder", domain=ML, version=2,
                   keys_strings=[str(c) for c in encoder.categories_[0]],
                   values_int64s=list(range(len(encoder.categories_[0]))), default_int64=-1)
    column = reshape(g, codes, [-1, 1], "ordinal_output")
    joined = g.node("Concat", [column], "concat_result", axis=1)
    ordinal = g.node("Cast", [joined], "variable", to=FLOAT)
    numeric_columns = g.node("Concat", ["x1", "x2"], "merged_columns", axis=1)
    features = g.node("Concat", [ordinal, numeric_columns], "transformed_column", axis=1)
    out = ClassifierOutputs(g, gb.classes_)
    g.node("TreeEnsembleClassifier", [features], [out.label, out.probabilities], domain=ML,
           **sklearn_classifier_trees(gb), **out.label_attribute())
    out.finish()
    feeds = {"city": string_column(X_test[:, 0]), "x1": f32(X_test[:, 1:2]), "x2": f32(X_test[:, 2:3])}
    return Case("ordinal_strings_gb", g.model(
        "Pipeline(ColumnTransformer(OrdinalEncoder(handle_unknown='use_encoded_value', unknown_value=-1) on a "
        "string column, passthrough on 2 float columns), GradientBoostingClassifier(40 trees, depth 3)), "
        "3 classes; skl2onnx, one input per column"),
        feeds, out.expected(model.predict(X_test), model.predict_proba(X_test)))


def with_missing(X, rng, fraction):
    X = X.copy()
    X[rng.rand(*X.shape) < fraction] = np.nan
    return X


def xgb_binary_missing():
    X, y = make_classification(n_samples=800, n_features=6, n_informative=4, random_state=11)
    rng = np.random.RandomState(11)
    X = with_missing(f32(X), rng, 0.15)
    model = xgboost.XGBClassifier(n_estimators=30, max_depth=4, learning_rate=0.3, base_score=0.3,
                                  tree_method="exact", n_jobs=2, random_state=11).fit(X[:740], y[:740])
    X_test = X[740:].copy()
    put_on_thresholds(X_test, xgboost_splits(model.get_booster()), rng, range(0, 24))
    X_test[24:28, :3] = np.nan
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]
    g = Graph("xgb_binary_missing")
    g.input("float_input", FLOAT, 6)
    trees = LegacyTrees(classifier=True, hitrates=False)
    add_xgboost_trees(trees, model.get_booster(), 1)
    base_score = np.float32(model.get_xgb_params()["base_score"])
    # binary:logistic: the margin starts at logit(base_score); at 0.5 it is
    # 0 and onnxmltools writes no base_values.
    base_values = None if base_score == 0.5 else [-np.log(1 / base_score - 1.0)]
    out = ClassifierOutputs(g, model.classes_)
    g.node("TreeEnsembleClassifier", ["float_input"], [out.label, out.probabilities], domain=ML,
           **trees.attributes(base_values=base_values), post_transform="LOGISTIC", **out.label_attribute())
    out.finish()
    return Case("xgb_binary_missing", g.model(
        "xgboost.XGBClassifier(30 trees, depth 4, base_score 0.3), binary:logistic, trained with NaN; "
        "onnxmltools' converter registered in skl2onnx (ZipMap)"),
        {"float_input": X_test}, out.expected(model.predict(X_test), model.predict_proba(X_test)))


def xgb_multiclass_softprob():
    X, y = make_classification(n_samples=900, n_features=8, n_informative=6, n_redundant=1, n_classes=5,
                               n_clusters_per_class=1, random_state=15)
    X = f32(X)
    model = xgboost.XGBClassifier(objective="multi:softprob", n_estimators=20, max_depth=3, learning_rate=0.3,
                                  tree_method="exact", n_jobs=2, random_state=15).fit(X[:840], y[:840])
    rng = np.random.RandomState(15)
    X_test = X[840:].copy()
    put_on_thresholds(X_test, xgboost_splits(model.get_booster()), rng, range(0, 20))
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]
    config = json.loads(model.get_booster().save_config())
    base_score = float(config["learner"]["learner_model_param"]["base_score"])
    g = Graph("xgb_multiclass_softprob")
    g.input("input", FLOAT, 8)
    trees = LegacyTrees(classifier=True, hitrates=False)
    add_xgboost_trees(trees, model.get_booster(), 5)
    out = ClassifierOutputs(g, model.classes_, zipmap=False)
    g.node("TreeEnsembleClassifier", ["input"], [out.label, out.probabilities], domain=ML,
           **trees.attributes(base_values=[base_score] * 5), post_transform="SOFTMAX", **out.label_attribute())
    out.finish()
    return Case("xgb_multiclass_softprob", g.model(
        "xgboost.XGBClassifier(multi:softprob, 5 classes, 20 rounds, depth 3); onnxmltools (label, probabilities)"),
        {"input": X_test}, out.expected(model.predict(X_test), model.predict_proba(X_test)))


def svm_classifier():
    X, y = make_classification(n_samples=300, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, class_sep=1.0, random_state=16)
    X = f32(X)
    model = SVC(kernel="rbf", C=1.0, gamma="scale", decision_function_shape="ovo").fit(X[:260], y[:260])
    X_test = X[260:300]
    g = Graph("svm_classifier")
    g.input("float_input", FLOAT, 4)
    # SVC(probability=False) has no ZipMap; its "probabilities" are the
    # one-vs-one decision values.
    out = ClassifierOutputs(g, model.classes_, zipmap=False)
    add_svm_classifier(g, model, "float_input", out)
    out.finish()
    expected = [model.predict(X_test).astype(np.int64), f32(model.decision_function(X_test))]
    return Case("svm_classifier", g.model(
        "SVC(rbf, probability=False, decision_function_shape='ovo'), 3 classes; skl2onnx"),
        {"float_input": X_test}, expected)


def svm_regressor():
    X, y = make_friedman1(n_samples=300, n_features=5, noise=0.2, random_state=17)
    X = f32(X)
    model = SVR(kernel="rbf", C=10.0, epsilon=0.1, gamma="scale").fit(X[:260], y[:260])
    X_test = X[260:300]
    g = Graph("svm_regressor")
    g.input("float_input", FLOAT, 5)
    add_svm_regressor(g, model, "float_input", "variable")
    return regressor_case("svm_regressor", g, "float_input", X_test, model.predict(X_test),
                          "SVR(rbf, C=10, epsilon=0.1); skl2onnx")


def hist_gb_classifier():
    X, y = make_classification(n_samples=900, n_features=6, n_informative=4, n_classes=3, n_clusters_per_class=1,
                               random_state=18)
    rng = np.random.RandomState(18)
    X = with_missing(f32(X), rng, 0.1)
    model = HistGradientBoostingClassifier(max_iter=25, max_leaf_nodes=15, learning_rate=0.2,
                                           random_state=18).fit(X[:840], y[:840])
    X_test = X[840:].copy()
    splits = [(int(n["feature_idx"]), float(n["num_threshold"])) for it in model._predictors[:3] for p in it
              for n in p.nodes if not n["is_leaf"]]
    put_on_thresholds(X_test, splits, rng, range(0, 24))
    X_test[24:28, 1:4] = np.nan
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]
    n_classes = model.n_trees_per_iteration_
    trees = LegacyTrees(classifier=True)
    for i, predictors in enumerate(model._predictors):
        for c, predictor in enumerate(predictors):
            add_hist_tree(trees, predictor, i * n_classes + c, class_id=c)
    g = Graph("hist_gb_classifier")
    g.input("float_input", FLOAT, 6)
    out = ClassifierOutputs(g, model.classes_)
    g.node("TreeEnsembleClassifier", ["float_input"], [out.label, out.probabilities], domain=ML,
           **trees.attributes(base_values=np.ravel(model._baseline_prediction)), post_transform="SOFTMAX",
           **out.label_attribute())
    out.finish()
    return Case("hist_gb_classifier", g.model(
        "HistGradientBoostingClassifier(25 iterations, 15 leaves), 3 classes, trained with NaN; skl2onnx"),
        {"float_input": X_test}, out.expected(model.predict(X_test), model.predict_proba(X_test)))


def binarizer_scaler_linear():
    rng = np.random.RandomState(19)
    a = f32(rng.uniform(0, 1, size=(500, 3)))
    b = f32(rng.normal(5, 3, size=(500, 2)))
    y = ((a[:, 0] > 0.5) + (a[:, 1] > 0.3) + b[:, 0] / 5 + rng.normal(scale=0.4, size=500) > 2.0).astype(np.int64)
    X = np.hstack([a, b])
    model = Pipeline([("union", FeatureUnion([("bin", Binarizer(threshold=0.5)), ("minmax", MinMaxScaler())])),
                      ("maxabs", MaxAbsScaler()), ("logreg", LogisticRegression(max_iter=1000))])
    model.fit(X[:450], y[:450])
    X_test = X[450:].copy()
    X_test[0:8, 0] = 0.5  # on Binarizer's threshold: 0 (it tests x > threshold)
    X_test[8:12, 1] = np.nextafter(np.float32(0.5), np.float32(1))
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]
    union = model.named_steps["union"]
    minmax = dict(union.transformer_list)["minmax"]
    maxabs, logreg = model.named_steps["maxabs"], model.named_steps["logreg"]

    g = Graph("binarizer_scaler_linear")
    g.input("float_input_a", FLOAT, 3)
    g.input("float_input_b", FLOAT, 2)
    # Each step that receives several inputs joins them with a
    # FeatureVectorizer of its own.
    joined = g.node("FeatureVectorizer", ["float_input_a", "float_input_b"], "concatenated", domain=ML,
                    inputdimensions=[3, 2])
    binarized = g.node("Binarizer", [joined], "variable", domain=ML, threshold=0.5)
    joined = g.node("FeatureVectorizer", ["float_input_a", "float_input_b"], "concatenated1", domain=ML,
                    inputdimensions=[3, 2])
    # MinMaxScaler is Mul and Add, not Scaler.
    cast = g.node("Cast", [joined], to=FLOAT)
    scaled = g.node("Mul", [cast, g.const("Mu_Mulcst", f32(minmax.scale_))])
    shifted = g.node("Add", [scaled, g.const("Ad_Addcst", f32(minmax.min_))], "variable1")
    union_out = g.node("Concat", [binarized, shifted], "union", axis=1)
    scaled = g.node("Scaler", [union_out], "variable2", domain=ML,
                    offset=[0.0] * len(maxabs.scale_), scale=f32(1.0 / maxabs.scale_).tolist())
    out = ClassifierOutputs(g, logreg.classes_)
    add_linear_classifier(g, logreg, scaled, out)
    out.finish()
    feeds = {"float_input_a": X_test[:, :3], "float_input_b": X_test[:, 3:]}
    return Case("binarizer_scaler_linear", g.model(
        "Pipeline(FeatureUnion(Binarizer(0.5), MinMaxScaler), MaxAbsScaler, LogisticRegression), binary, "
        "on two inputs; skl2onnx"), feeds, out.expected(model.predict(X_test), model.predict_proba(X_test)))


def svc_probability(name, kernel, class_labels, seed, doc, **params):
    """SVC(probability=True) on 4 features, as skl2onnx writes it: an
    SVMClassifier with prob_a and prob_b, and ZipMap. Its label comes from
    the one-vs-one votes, like scikit-learn's predict, not from the
    probabilities. Test rows: 30 held-out rows, 10 next to a boundary."""
    X, y = make_classification(n_samples=300, n_features=4, n_informative=3, n_redundant=0,
                               n_classes=len(class_labels), n_clusters_per_class=1, random_state=seed)
    X, y = f32(X), np.array(class_labels)[y]
    model = SVC(kernel=kernel, probability=True, random_state=seed, **params).fit(X[:260], y[:260])

    def clear(rows):
        # Each vote clear of 0, and the two highest probabilities apart.
        votes = np.abs(model._decision_function(rows)).reshape(len(rows), -1)
        return (votes.min(axis=1) >= TIE_GAP) & clear_scores(model.predict_proba(rows))

    held_out = X[260:][clear(X[260:])][:30]
    near = boundary_rows(model.predict, clear, X[:260], 10, np.random.RandomState(seed))
    X_test = np.vstack([held_out, near])
    g = Graph(name)
    g.input("float_input", FLOAT, 4)
    out = ClassifierOutputs(g, model.classes_)
    add_svm_classifier(g, model, "float_input", out)
    out.finish()
    return Case(name, g.model(doc), {"float_input": X_test},
                out.expected(model.predict(X_test), model.predict_proba(X_test)))


def svc_probability_rbf():
    return svc_probability("svc_probability_rbf", "rbf", [0, 1, 2], 23,
                           "SVC(rbf, probability=True), 3 classes; skl2onnx")


def svc_probability_poly():
    return svc_probability("svc_probability_poly", "poly", [0, 1], 24,
                           "SVC(poly, degree 3, coef0 1, probability=True), binary; skl2onnx",
                           degree=3, coef0=1.0)


def svc_probability_sigmoid():
    return svc_probability("svc_probability_sigmoid", "sigmoid", ["low", "mid", "high"], 25,
                           "SVC(sigmoid, probability=True), 3 string classes; skl2onnx")


def svc_probability_linear():
    return svc_probability("svc_probability_linear", "linear", [-2, 0, 5, 9], 26,
                           "SVC(linear, probability=True), 4 classes, labels -2, 0, 5, 9; skl2onnx")


def linear_classifier_rows(model, X_train, X_held_out, scores, n_near, seed):
    """Test rows for a linear classifier: the held-out rows whose two
    highest scores are apart, then n_near rows next to a boundary."""
    def clear(rows):
        return clear_scores(scores(rows))
    held_out = X_held_out[clear(X_held_out)][:60 - n_near]
    return np.vstack([held_out, boundary_rows(model.predict, clear, X_train, n_near, np.random.RandomState(seed))])


def logreg_binary(string_labels=False):
    X, y = make_classification(n_samples=400, n_features=5, n_informative=3, n_redundant=1, random_state=27)
    X = f32(X * [1.0, 4.0, 0.5, 2.0, 1.0])
    if string_labels:
        y = np.array(["spam", "ham"])[y]
    model = LogisticRegression(max_iter=1000).fit(X[:360], y[:360])
    X_test = linear_classifier_rows(model, X[:360], X[360:], model.predict_proba, 12, 27)
    name = "logreg_binary" + ("_string_labels" if string_labels else "")
    g = Graph(name)
    g.input("float_input", FLOAT, 5)
    out = ClassifierOutputs(g, model.classes_)
    add_linear_classifier(g, model, "float_input", out)
    out.finish()
    doc = "LogisticRegression, binary" + (", string labels ham/spam" if string_labels else "") + "; skl2onnx"
    return Case(name, g.model(doc), {"float_input": X_test},
                out.expected(model.predict(X_test), model.predict_proba(X_test)))


def linear_svc():
    X, y = make_classification(n_samples=500, n_features=6, n_informative=4, n_redundant=0, n_classes=4,
                               n_clusters_per_class=1, random_state=28)
    X, y = f32(X), np.array([2, 4, 6, 8])[y]
    model = LinearSVC(C=0.5, max_iter=5000, random_state=28).fit(X[:460], y[:460])
    X_test = linear_classifier_rows(model, X[:460], X[460:], model.decision_function, 12, 28)
    g = Graph("linear_svc")
    g.input("float_input", FLOAT, 6)
    # skl2onnx parses LinearSVC as a plain model: no ZipMap, no Cast;
    # its "probabilities" are decision_function's one-vs-rest scores.
    out = ClassifierOutputs(g, model.classes_, zipmap=False)
    add_linear_classifier(g, model, "float_input", out)
    out.finish()
    return Case("linear_svc", g.model("LinearSVC(one-vs-rest), 4 classes, labels 2, 4, 6, 8; skl2onnx"),
                {"float_input": X_test}, out.expected(model.predict(X_test), model.decision_function(X_test)))


def ridge_multitarget():
    X, y = make_regression(n_samples=300, n_features=6, n_informative=4, n_targets=2, noise=2.0, random_state=29)
    X = f32(X)
    model = Ridge(alpha=1.0).fit(X[:260], y[:260])
    X_test = X[260:300]
    g = Graph("ridge_multitarget")
    g.input("float_input", FLOAT, 6)
    # coefficients target by target (coef_ is [targets, features]).
    g.node("LinearRegressor", ["float_input"], "variable", domain=ML, coefficients=f32(model.coef_).ravel().tolist(),
           intercepts=f32(model.intercept_).tolist(), targets=2)
    return regressor_case("ridge_multitarget", g, "float_input", X_test, model.predict(X_test),
                          "Ridge(alpha=1), 2 targets; skl2onnx", n_targets=2)


def scaler_svr_linear():
    X, y = make_friedman1(n_samples=300, n_features=5, noise=0.2, random_state=30)
    X = f32(X * [1.0, 10.0, 100.0, 0.1, 1.0] + [0.0, -5.0, 20.0, 0.0, 3.0])
    model = Pipeline([("scaler", StandardScaler()), ("svr", SVR(kernel="linear", C=1.0, epsilon=0.2))])
    model.fit(X[:260], y[:260])
    X_test = X[260:300]
    g = Graph("scaler_svr_linear")
    g.input("float_input", FLOAT, 5)
    scaled = add_standard_scaler(g, model.named_steps["scaler"], "float_input", "variable")
    add_svm_regressor(g, model.named_steps["svr"], scaled, "variable1")
    return regressor_case("scaler_svr_linear", g, "float_input", X_test, model.predict(X_test),
                          "Pipeline(StandardScaler, SVR(linear, C=1, epsilon=0.2)); skl2onnx", output="variable1")


def onehot_int_categories():
    rng = np.random.RandomState(31)
    n = 600
    codes = np.array([3, 7, 12, 40, 41, 100])
    category = codes[rng.randint(len(codes), size=n)]
    x1, x2 = f32(rng.normal(size=n)), f32(rng.uniform(-1, 1, size=n))
    effect = dict(zip(codes, [0.0, 1.5, -1.0, 2.0, 0.5, -2.0]))
    score = np.array([effect[c] for c in category]) + x1 + 2 * x2 + rng.normal(scale=0.5, size=n)
    y = np.digitize(score, [-0.5, 1.0])  # classes 0, 1, 2
    X = np.empty((n, 3), dtype=object)
    X[:, 0], X[:, 1], X[:, 2] = category, x1, x2
    prep = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), [0]),
                              ("num", "passthrough", [1, 2])])
    model = Pipeline([("prep", prep), ("logreg", LogisticRegression(max_iter=1000))]).fit(X[:540], y[:540])
    X_test = X[540:].copy()
    X_test[0:2, 0] = 5  # categories not seen in training: all-zero one-hot
    X_test[2:4, 0] = -1
    X_test[4, 0] = 1000
    X_test = X_test[clear_rows(model.predict_proba(X_test), 50)]
    encoder, logreg = model.named_steps["prep"].named_transformers_["cat"], model.named_steps["logreg"]
    categories = [int(c) for c in encoder.categories_[0]]

    g = Graph("onehot_int_categories")
    for name, kind in (("category", INT64), ("x1", FLOAT), ("x2", FLOAT)):
        g.input(name, kind, 1)
    # An encoder of one input takes each of its columns with a Gather
    # (axis 1) and casts it to int64, int64 or not.
    column = g.node("Gather", ["category", g.const("category0", np.array([0], np.int64))], g.unique("category0"),
                    axis=1)
    encoded = g.unique(column + "out")
    cast = g.node("Cast", [column], g.unique(column + "cast"), to=INT64)
    g.node("OneHotEncoder", [cast], encoded, domain=ML, cats_int64s=categories, zeros=1)
    onehot = reshape(g, encoded, [-1, len(categories)], "variable")
    numeric_columns = g.node("Concat", ["x1", "x2"], "merged_columns", axis=1)
    features = g.node("Concat", [onehot, numeric_columns], "transformed_column", axis=1)
    out = ClassifierOutputs(g, logreg.classes_)
    add_linear_classifier(g, logreg, features, out)
    out.finish()
    feeds = {"category": X_test[:, 0:1].astype(np.int64), "x1": f32(X_test[:, 1:2]), "x2": f32(X_test[:, 2:3])}
    return Case("onehot_int_categories", g.model(
        "Pipeline(ColumnTransformer(OneHotEncoder(handle_unknown='ignore') on an int64 column, passthrough on "
        "2 float columns), LogisticRegression(multinomial)), 3 classes; skl2onnx, one input per column"),
        feeds, out.expected(model.predict(X_test), model.predict_proba(X_test)))


def label_encoder_int64():
    rng = np.random.RandomState(32)
    classes = np.array([-40, -3, 0, 7, 12, 1000, 2 ** 40])
    y = classes[rng.randint(len(classes), size=300)]
    model = LabelEncoder().fit(y[:250])
    x = y[250:290]  # scikit-learn rejects labels not seen in fit
    g = Graph("label_encoder_int64")
    g.input("input", INT64, None)
    g.node("LabelEncoder", ["input"], "variable", domain=ML, version=2,
           keys_int64s=[int(c) for c in model.classes_], values_int64s=list(range(len(model.classes_))))
    g.output("variable", INT64, [None])
    return Case("label_encoder_int64", g.model(
        "LabelEncoder fitted on int64 labels (one of them 2**40), standalone; skl2onnx"),
        {"input": x.astype(np.int64)}, [model.transform(x).astype(np.int64)])


# --------------------------------------------- TreeEnsemble, ai.onnx.ml 5

MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4, "BRANCH_NEQ": 5,
         "BRANCH_MEMBER": 6}
SUM, AVERAGE = 1, 0
POST_NONE = 0


class EnsembleTrees:
    """The attributes of a TreeEnsemble (ai.onnx.ml 5), filled tree by tree:
    interior nodes in nodes_* (a parent before its children), leaves in
    leaf_*, each tree's root in tree_roots, and the members of every
    BRANCH_MEMBER node, in node order, in membership_values, each set ended
    by a NaN."""

    def __init__(self):
        self.nodes = collections.defaultdict(list)
        self.leaves = collections.defaultdict(list)
        self.roots = []
        self.members = []

    def add_tree(self, root, describe):
        """Adds the tree under node root. describe(node) returns
        ("leaf", target, weight) or ("split", feature, mode, threshold or
        members, true node, false node, missing tracks true)."""

        def visit(node):
            d = describe(node)
            if d[0] == "leaf":
                self.leaves["targetids"].append(d[1])
                self.leaves["weights"].append(d[2])
                return 1, len(self.leaves["weights"]) - 1
            _, feature, mode, split, true_node, false_node, missing = d
            index = len(self.nodes["featureids"])
            self.nodes["featureids"].append(feature)
            self.nodes["modes"].append(MODES[mode])
            if mode == "BRANCH_MEMBER":
                self.nodes["splits"].append(np.nan)
                self.members += sorted(split) + [np.nan]
            else:
                self.nodes["splits"].append(split)
            self.nodes["missing_value_tracks_true"].append(int(missing))
            for key in ("trueleafs", "truenodeids", "falseleafs", "falsenodeids"):
                self.nodes[key].append(0)
            self.nodes["trueleafs"][index], self.nodes["truenodeids"][index] = visit(true_node)
            self.nodes["falseleafs"][index], self.nodes["falsenodeids"][index] = visit(false_node)
            return 0, index

        is_leaf, index = visit(root)
        if is_leaf:  # a tree that is one leaf: one node whose branches both reach it
            self.nodes["featureids"].append(0)
            self.nodes["modes"].append(0)
            self.nodes["splits"].append(0.0)
            self.nodes["missing_value_tracks_true"].append(0)
            for key, value in (("trueleafs", 1), ("truenodeids", index), ("falseleafs", 1), ("falsenodeids", index)):
                self.nodes[key].append(value)
            index = len(self.nodes["featureids"]) - 1
        self.roots.append(index)

    def attributes(self, dtype, n_targets, aggregate_function, post_transform):
        attrs = {f"nodes_{k}": v for k, v in self.nodes.items() if k not in ("modes", "splits")}
        attrs["nodes_modes"] = numpy_helper.from_array(np.array(self.nodes["modes"], np.uint8), "nodes_modes")
        attrs["nodes_splits"] = numpy_helper.from_array(np.array(self.nodes["splits"], dtype), "nodes_splits")
        attrs["leaf_targetids"] = self.leaves["targetids"]
        attrs["leaf_weights"] = numpy_helper.from_array(np.array(self.leaves["weights"], dtype), "leaf_weights")
        if self.members:
            attrs["membership_values"] = numpy_helper.from_array(np.array(self.members, dtype), "membership_values")
        attrs.update(tree_roots=self.roots, n_targets=n_targets, aggregate_function=aggregate_function,
                     post_transform=post_transform)
        return attrs


def describe_sklearn_tree(tree, target=0, scale=1.0, offset=0.0, threshold=float32_threshold):
    """describe for EnsembleTrees.add_tree over a scikit-learn tree_: leaves
    weigh scale * value + offset (one target)."""
    def describe(i):
        if tree.children_left[i] < 0:
            return "leaf", target, scale * float(tree.value[i].ravel()[0]) + offset
        return ("split", int(tree.feature[i]), "BRANCH_LEQ", threshold(tree.threshold[i]),
                int(tree.children_left[i]), int(tree.children_right[i]), False)
    return describe


def tree_ensemble5_model(g, doc):
    return g.model(doc, opset=TREE_ENSEMBLE_OPSET, ir_version=TREE_ENSEMBLE_IR, ml_opset=5)


def tree_ensemble5_gb_multiclass():
    X, y = make_classification(n_samples=700, n_features=5, n_informative=4, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, random_state=20)
    X = f32(X)
    model = GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=20).fit(X[:640], y[:640])
    rng = np.random.RandomState(20)
    X_test = X[640:].copy()
    put_on_thresholds(X_test, [s for e in model.estimators_[:4].ravel() for s in sklearn_splits(e.tree_)], rng,
                      range(0, 20))
    X_test = X_test[clear_rows(model.predict_proba(X_test), 40)]
    base = model._raw_predict_init(np.zeros((1, 5))).ravel()
    trees = EnsembleTrees()
    for i in range(model.n_estimators_):
        for c in range(3):
            tree = model.estimators_[i][c].tree_
            trees.add_tree(0, describe_sklearn_tree(tree, target=c, scale=model.learning_rate,
                                                    offset=base[c] if i == 0 else 0.0))
    g = Graph("tree_ensemble5_gb_multiclass")
    g.input("float_input", FLOAT, 5)
    # post_transform stays NONE and a Softmax follows: with several targets
    # ONNX Runtime 1.30 applies LOGISTIC for TreeEnsemble's post_transform 1
    # (SOFTMAX in the spec) and SOFTMAX for 2, so the spec's SOFTMAX would
    # not check against it.
    scores = g.node("TreeEnsemble", ["float_input"], "scores", domain=ML, version=5,
                    **trees.attributes(np.float32, 3, SUM, POST_NONE))
    g.node("Softmax", [scores], "probabilities", axis=1)
    g.node("ArgMax", ["probabilities"], "label", axis=1, keepdims=0)
    g.output("label", INT64, [None])
    g.output("probabilities", FLOAT, [None, 3])
    model_proto = tree_ensemble5_model(g, (
        "GradientBoostingClassifier(30 trees, depth 3), 3 classes (labels 0, 1, 2), as one TreeEnsemble "
        "(one target per class, SUM; the initial raw predictions added to the leaves of each class's "
        "first tree), Softmax and ArgMax"))
    expected = [model.predict(X_test).astype(np.int64), f32(model.predict_proba(X_test))]
    return Case(g.name, model_proto, {"float_input": X_test}, expected)


def tree_ensemble5_forest_average_double():
    X, y = make_friedman1(n_samples=600, n_features=5, noise=0.3, random_state=21)
    model = RandomForestRegressor(n_estimators=30, max_depth=6, random_state=21).fit(X[:560], y[:560])
    rng = np.random.RandomState(21)
    X_test = X[560:600].copy()
    splits = [s for m in model.estimators_[:5] for s in sklearn_splits(m.tree_)]
    for k, row in enumerate(range(0, 24)):
        feature, t = splits[rng.randint(len(splits))]
        X_test[row, feature] = [t, float(np.float32(t)), np.nextafter(float64_threshold(t), np.inf)][k % 3]
    trees = EnsembleTrees()
    for member in model.estimators_:
        trees.add_tree(0, describe_sklearn_tree(member.tree_, threshold=float64_threshold))
    g = Graph("tree_ensemble5_forest_average_double")
    g.input("input", DOUBLE, 5)
    g.node("TreeEnsemble", ["input"], "variable", domain=ML, version=5,
           **trees.attributes(np.float64, 1, AVERAGE, POST_NONE))
    g.output("variable", DOUBLE, [None, 1])
    model_proto = tree_ensemble5_model(g, (
        "RandomForestRegressor(30 trees, depth 6) on a DOUBLE input, as one TreeEnsemble with double "
        "splits and leaf weights, aggregate_function AVERAGE"))
    return Case(g.name, model_proto, {"input": X_test}, [model.predict(X_test).reshape(-1, 1)])


def hgb_categorical_describe(predictor, known_categories, offset):
    """describe for EnsembleTrees.add_tree over a HistGradientBoosting
    predictor with categorical splits. scikit-learn sends a category in the
    node's left bitset left, another known category right, and NaN, a
    negative value or an unknown category the missing way. A member set
    cannot list "every unknown value", so the set written is the one whose
    complement goes the missing way: the left categories when missing goes
    right, the known right categories (true branch = right child) when it
    goes left."""
    def describe(i):
        node = predictor.nodes[i]
        if node["is_leaf"]:
            return "leaf", 0, float(node["value"]) + offset
        feature, left, right = int(node["feature_idx"]), int(node["left"]), int(node["right"])
        if not node["is_categorical"]:
            return ("split", feature, "BRANCH_LEQ", float32_threshold(node["num_threshold"]), left, right,
                    bool(node["missing_go_to_left"]))
        bits = predictor.raw_left_cat_bitsets[node["bitset_idx"]]
        left_categories = {c for c in range(256) if bits[c // 32] >> (c % 32) & 1}
        known = {int(c) for c in known_categories[feature]}
        if node["missing_go_to_left"]:
            return "split", feature, "BRANCH_MEMBER", known - left_categories, right, left, False
        return "split", feature, "BRANCH_MEMBER", left_categories, left, right, False
    return describe


def tree_ensemble5_hgb_categorical():
    rng = np.random.RandomState(22)
    n = 800
    category = rng.randint(0, 8, size=n).astype(np.float32)
    x1, x2 = rng.normal(size=n), rng.uniform(-2, 2, size=n)
    effect = np.array([0.0, 2.0, -1.0, 3.0, 0.5, -2.0, 1.0, 2.5])
    y = effect[category.astype(int)] + x1 * 1.5 + np.abs(x2) + rng.normal(scale=0.3, size=n)
    X = f32(np.c_[category, x1, x2])
    X = np.where(rng.rand(*X.shape) < np.array([0.05, 0.1, 0.0]), np.float32(np.nan), X)
    model = HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=12, categorical_features=[0],
                                          random_state=22).fit(X[:740], y[:740])
    X_test = X[740:790].copy()
    X_test[0:3, 0] = 9  # a category not seen in training: the missing way
    X_test[3:5, 0] = -1  # negative: the missing way
    X_test[5:8, 0] = np.nan
    splits = [(int(nd["feature_idx"]), float(nd["num_threshold"])) for it in model._predictors[:3] for p in it
              for nd in p.nodes if not nd["is_leaf"] and not nd["is_categorical"]]
    put_on_thresholds(X_test, splits, rng, range(8, 26))
    known = model._bin_mapper.known_categories
    baseline = float(np.ravel(model._baseline_prediction)[0])
    trees = EnsembleTrees()
    for i, (predictor,) in enumerate(model._predictors):
        trees.add_tree(0, hgb_categorical_describe(predictor, known, baseline if i == 0 else 0.0))
    g = Graph("tree_ensemble5_hgb_categorical")
    g.input("float_input", FLOAT, 3)
    g.node("TreeEnsemble", ["float_input"], "variable", domain=ML, version=5,
           **trees.attributes(np.float32, 1, SUM, POST_NONE))
    g.output("variable", FLOAT, [None, 1])
    model_proto = tree_ensemble5_model(g, (
        "HistGradientBoostingRegressor(20 iterations, 12 leaves) with categorical feature 0 (categories 0-7), "
        "as one TreeEnsemble: BRANCH_MEMBER for categorical splits, BRANCH_LEQ with missing tracks true "
        "for numerical ones, the baseline added to the first tree's leaves"))
    return Case(g.name, model_proto, {"float_input": X_test}, [f32(model.predict(X_test)).reshape(-1, 1)])


CASES = [
    rf_classifier_int_labels,
    rf_classifier_string_labels,
    lambda: rf_classifier_string_labels(zipmap=False),
    gb_binary,
    lambda: gb_binary(zipmap=False),
    gb_regressor,
    tree_depth18,
    extra_trees_multitarget,
    scaler_logreg_multinomial,
    lambda: scaler_logreg_multinomial(zipmap=False),
    imputer_normalizer_linreg,
    onehot_strings_tree,
    ordinal_strings_gb,
    xgb_binary_missing,
    xgb_multiclass_softprob,
    double_input_tree,
    rf_500_trees,
    svm_classifier,
    svm_regressor,
    hist_gb_classifier,
    binarizer_scaler_linear,
    svc_probability_rbf,
    svc_probability_poly,
    svc_probability_sigmoid,
    svc_probability_linear,
    logreg_binary,
    lambda: logreg_binary(string_labels=True),
    linear_svc,
    ridge_multitarget,
    scaler_svr_linear,
    onehot_int_categories,
    label_encoder_int64,
    tree_ensemble5_gb_multiclass,
    tree_ensemble5_forest_average_double,
    tree_ensemble5_hgb_categorical,
]


# ---------------------------------------------------------------- writing


def tensor_proto(name, array):
    array = np.asarray(array)
    if array.dtype.kind in "UO":
        return helper.make_tensor(name, STRING, array.shape, [str(s).encode("utf-8") for s in array.ravel()])
    return numpy_helper.from_array(array, name)


def zipmap_proto(name, rows):
    """A ZipMap output: a SequenceProto of MapProto, one map per row, the
    values a sequence of scalar float tensors (onnx.numpy_helper.from_dict's
    layout, written here because onnx 1.12's from_dict fails on numpy keys)."""
    sequence = onnx.SequenceProto(name=name, elem_type=onnx.SequenceProto.MAP)
    for row in rows:
        entry = sequence.map_values.add()
        keys = list(row)
        if isinstance(keys[0], str):
            entry.key_type = STRING
            entry.string_keys.extend(k.encode("utf-8") for k in keys)
        else:
            entry.key_type = INT64
            entry.keys.extend(keys)
        entry.values.elem_type = onnx.SequenceProto.TENSOR
        entry.values.tensor_values.extend(numpy_helper.from_array(np.float32(v)) for v in row.values())
    return sequence


def elem_type(value):
    value = np.asarray(value)
    return STRING if value.dtype.kind in "UO" else numpy_helper.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype]


def check(case):
    """What can be checked without running the model: the names and types of
    the feeds and expected outputs against the graph, and, where onnx 1.12
    knows the operators (not TreeEnsemble), onnx.checker and type-checked
    shape inference."""
    graph = case.model.graph
    assert [i.name for i in graph.input] == list(case.feeds), case.name
    assert len(graph.output) == len(case.expected), case.name
    for declared, value in zip(graph.input, case.feeds.values()):
        assert declared.type.tensor_type.elem_type == elem_type(value), (case.name, declared.name)
    for declared, value in zip(graph.output, case.expected):
        if isinstance(value, list):
            assert declared.type.HasField("sequence_type"), (case.name, declared.name)
        else:
            assert declared.type.tensor_type.elem_type == elem_type(value), (case.name, declared.name)
    assert 20 <= len(next(iter(case.feeds.values()))) <= 60, case.name
    if not any(op.domain == ML and op.version >= 4 for op in case.model.opset_import):
        onnx.checker.check_model(case.model)
        # onnx 1.12 cannot infer ZipMap's map type: infer without it; and
        # not strictly, for it has no inference for OneHotEncoder.
        checked = onnx.ModelProto()
        checked.CopyFrom(case.model)
        maps = [n for n in checked.graph.node if n.op_type == "ZipMap"]
        for node in maps:
            checked.graph.node.remove(node)
            checked.graph.output.remove(next(o for o in checked.graph.output if o.name == node.output[0]))
        onnx.shape_inference.infer_shapes(checked, check_type=True)


def probe(model):
    """model with every ZipMap's input also a graph output, or None."""
    zipmaps = [n for n in model.graph.node if n.op_type == "ZipMap"]
    if not zipmaps:
        return None
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for node in zipmaps:
        labels = next(a for a in node.attribute if a.name.startswith("classlabels_"))
        n_classes = len(labels.ints) or len(labels.strings)
        copy.graph.output.append(helper.make_tensor_value_info(node.input[0], FLOAT, [None, n_classes]))
    return copy


def write(case, testdata, probes):
    directory = os.path.join(testdata, case.name)
    shutil.rmtree(directory, ignore_errors=True)
    data = os.path.join(directory, "test_data_set_0")
    os.makedirs(data)
    onnx.save(case.model, os.path.join(directory, "model.onnx"))
    for k, (name, value) in enumerate(case.feeds.items()):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(tensor_proto(name, value).SerializeToString())
    for k, (declared, value) in enumerate(zip(case.model.graph.output, case.expected)):
        proto = zipmap_proto(declared.name, value) if isinstance(value, list) else tensor_proto(declared.name, value)
        with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
            f.write(proto.SerializeToString())
    extra = probe(case.model)
    if extra is not None:
        os.makedirs(probes, exist_ok=True)
        onnx.save(extra, os.path.join(probes, case.name + ".onnx"))
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(directory) for f in files)


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    testdata = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "testing", "mlmodels", "testdata")
    probes = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "out", "mlmodels", "probes")
    warnings.simplefilter("ignore")  # ConvergenceWarning, FutureWarning: the models are small on purpose
    print(f"scikit-learn {sklearn.__version__}, xgboost {xgboost.__version__}, onnx {onnx.__version__}, "
          f"numpy {np.__version__}")
    print("| model | ops | ai.onnx.ml | rows | bytes |")
    print("|---|---|---|---|---|")
    total, written = 0, set()
    for make in CASES:
        case = make()
        check(case)
        size = write(case, testdata, probes)
        total += size
        written.add(case.name)
        ops = list(dict.fromkeys(n.op_type for n in case.model.graph.node))
        ml = next(op.version for op in case.model.opset_import if op.domain == ML)
        rows = len(next(iter(case.feeds.values())))
        print(f"| {case.name} | {', '.join(ops)} | {ml} | {rows} | {size} |")
    print(f"total: {total} bytes in {len(written)} models")
    stale = sorted(d for d in os.listdir(testdata) if os.path.isdir(os.path.join(testdata, d)) and d not in written)
    if stale:
        print("not written by this script (delete them?): " + ", ".join(stale))


if __name__ == "__main__":
    main()
