"""Trains the model of examples/tabular and writes it with its input file.

A churn classifier over customer rows with string and numeric columns, as
a data team would train it in scikit-learn:

    Pipeline(ColumnTransformer([
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["plan", "country"]),
        ("num", SimpleImputer(strategy="median"), ["age", "monthly_spend", "tenure_months"])]),
      GradientBoostingClassifier(n_estimators=80, max_depth=3))

exported as skl2onnx writes it (scripts/export_ml_models.py has the
conventions): one graph input per column ([N, 1], string or float), an
OneHotEncoder per string column, an Imputer, a TreeEnsembleClassifier with
string labels ("churn", "stay"), and ZipMap as the last node.

Writes examples/tabular/churn.onnx and examples/tabular/testdata/customers.csv:
id,plan,country,age,monthly_spend,tenure_months,sklearn_label,sklearn_probability
(the probability of "churn" that scikit-learn's predict_proba gives), with
rows of plans and countries the model never saw and empty numbers (both as
the model defines them: an unknown category is all zeros, a missing number
the training median), and, at the end, three malformed rows that the
pipeline must send to its failures output. Rows whose probability lies
within 1e-3 of 0.5 are left out: their label would be decided by rounding.

Deterministic; needs Debian's python3-sklearn, python3-onnx and numpy at
/usr/bin/python3. Run from anywhere:  /usr/bin/python3 scripts/export_tabular_demo.py
"""
import os
import sys
import warnings

import numpy as np
import onnx
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_ml_models import (  # noqa: E402
    FLOAT, ML, STRING, ClassifierOutputs, Graph, f32, reshape, sklearn_classifier_trees)

PLANS = ["basic", "plus", "pro", "team"]
COUNTRIES = ["DE", "FR", "IN", "JP", "US", "BR"]
NUMERIC = ["age", "monthly_spend", "tenure_months"]


def customers(rng, n):
    plan = np.array(PLANS)[rng.randint(len(PLANS), size=n)]
    country = np.array(COUNTRIES)[rng.randint(len(COUNTRIES), size=n)]
    age = np.round(rng.normal(41, 12, size=n).clip(18, 90))
    spend = np.round(rng.gamma(2.0, 18.0, size=n), 2)
    tenure = np.round(rng.exponential(20, size=n))
    risk = (1.2 * (plan == "basic") - 0.8 * (plan == "team") + 0.5 * (country == "US") - 0.04 * tenure
            + 0.015 * spend - 0.01 * (age - 40) + rng.normal(scale=0.8, size=n))
    label = np.where(risk > 0.3, "churn", "stay")
    X = np.empty((n, 5), dtype=object)
    X[:, 0], X[:, 1] = plan, country
    X[:, 2:] = f32(np.stack([age, spend, tenure], axis=1))
    return X, label


def main():
    warnings.simplefilter("ignore")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    out = os.path.join(root, "examples", "tabular")
    rng = np.random.RandomState(2026)
    X, y = customers(rng, 3000)
    X[rng.rand(3000) < 0.05, 2] = np.nan  # ages not given
    prep = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), [0, 1]),
                              ("num", SimpleImputer(strategy="median"), [2, 3, 4])])
    gb = GradientBoostingClassifier(n_estimators=80, max_depth=3, random_state=2026)
    model = Pipeline([("prep", prep), ("gb", gb)]).fit(X, y)

    encoder = model.named_steps["prep"].named_transformers_["cat"]
    imputer = model.named_steps["prep"].named_transformers_["num"]
    n_onehot = sum(len(c) for c in encoder.categories_)
    g = Graph("churn")
    for name in ("plan", "country"):
        g.input(name, STRING, 1)
    for name in NUMERIC:
        g.input(name, FLOAT, 1)
    encoded = [g.node("OneHotEncoder", [column], column + "out", domain=ML,
                      cats_strings=[str(c) for c in categories], zeros=1)
               for column, categories in zip(("plan", "country"), encoder.categories_)]
    onehot = reshape(g, g.node("Concat", encoded, "concat_result", axis=-1), [-1, n_onehot], "variable")
    numeric = g.node("Concat", NUMERIC, "merged_columns", axis=1)
    imputed = g.node("Imputer", [numeric], "variable1", domain=ML,
                     imputed_value_floats=f32(imputer.statistics_).tolist(), replaced_value_float=float("nan"))
    features = g.node("Concat", [onehot, imputed], "transformed_column", axis=1)
    outputs = ClassifierOutputs(g, gb.classes_)
    g.node("TreeEnsembleClassifier", [features], [outputs.label, outputs.probabilities], domain=ML,
           **sklearn_classifier_trees(gb), **outputs.label_attribute())
    outputs.finish()
    onnx.save(g.model("examples/tabular's churn classifier: " + str(model).replace("\n", " ")),
              os.path.join(out, "churn.onnx"))

    T, _ = customers(np.random.RandomState(7), 400)
    T[:6, 0] = "enterprise"  # plans the model never saw
    T[6:10, 1] = "NZ"        # countries it never saw
    T[10:20, 2] = np.nan     # ages not given
    T[20:24, 3] = np.nan     # spends not given
    proba = model.predict_proba(T)[:, list(gb.classes_).index("churn")]
    keep = np.flatnonzero(np.abs(proba - 0.5) >= 1e-3)[:240]
    labels = model.predict(T)
    number = lambda v: "" if np.isnan(v) else str(np.float32(v))  # noqa: E731  shortest float32
    lines = ["id,plan,country,age,monthly_spend,tenure_months,sklearn_label,sklearn_probability"]
    for i in keep:
        row = T[i]
        lines.append(",".join([f"c{i:04d}", row[0], row[1]] + [number(v) for v in row[2:]] +
                              [labels[i], str(np.float32(proba[i]))]))
    lines += ["c9001,pro,DE,forty,12.5,3,,", "c9002,basic,FR,33,19.0", "c9003,team,US,29,1e999x,4,,"]
    with open(os.path.join(out, "testdata", "customers.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote churn.onnx ({os.path.getsize(os.path.join(out, 'churn.onnx'))} bytes) and "
          f"customers.csv ({len(keep)} rows and 3 malformed)")


if __name__ == "__main__":
    main()
