package passes_test

import (
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
)

const mlDomain = "ai.onnx.ml"

func aFloats(v ...float32) graph.Attr { return graph.Attr{Type: graph.AttrFloats, Floats: v} }
func aStrings(v ...string) graph.Attr { return graph.Attr{Type: graph.AttrStrings, Strings: v} }

// classifier builds x [8, 2] → a classifier op of ai.onnx.ml with attrs,
// whose label output (unless noLabel) and scores are the graph's outputs.
// imports says whether the graph imports ai.onnx.
func classifier(op string, a map[string]graph.Attr, noLabel, imports bool) func() *model {
	return func() *model {
		m := newModel(17)
		m.g.Opsets[mlDomain] = 3
		if !imports {
			delete(m.g.Opsets, "")
		}
		x := m.input("x", 8, 2)
		outs := m.opN(op, a, 2, x)
		n := m.g.Nodes[len(m.g.Nodes)-1]
		n.Domain = mlDomain
		if noLabel {
			n.Outputs[0] = ""
			m.output(outs[1])
		} else {
			m.output(outs...)
		}
		return m
	}
}

// A tree.
var treeAttrs = attrs("nodes_treeids", aInts(0, 0, 0, 0, 0), "nodes_nodeids", aInts(0, 1, 2, 3, 4),
	"nodes_featureids", aInts(0, 1, 0, 0, 0), "nodes_values", aFloats(0, 0.5, 0, 0, 0),
	"nodes_modes", aStrings("BRANCH_LEQ", "BRANCH_LT", "LEAF", "LEAF", "LEAF"),
	"nodes_truenodeids", aInts(1, 2, 0, 0, 0), "nodes_falsenodeids", aInts(4, 3, 0, 0, 0),
	"class_treeids", aInts(0, 0, 0, 0), "class_nodeids", aInts(2, 3, 4, 4), "class_ids", aInts(0, 1, 2, 0),
	"class_weights", aFloats(1, 1, 0.75, 0.25))

// A classifier of string labels becomes one of their indices and a
// Gather of the labels, with the same labels and scores: a tree ensemble
// (classlabels_int64s), a linear model of three classes and one of one
// row of coefficients and two labels (classlabels_ints).
func TestIndexClassLabels(t *testing.T) {
	for name, build := range map[string]func() *model{
		"TreeEnsembleClassifier": classifier("TreeEnsembleClassifier",
			withAttr(treeAttrs, "classlabels_strings", aStrings("cat", "dog", "fish")), false, true),
		"LinearClassifier": classifier("LinearClassifier", attrs("coefficients", aFloats(1, -1, 0.5, 2, -1, 0.25),
			"intercepts", aFloats(0, 0.5, -0.5), "classlabels_strings", aStrings("cat", "dog", "fish")), false, true),
		"LinearClassifier/binary": classifier("LinearClassifier", attrs("coefficients", aFloats(1, -1),
			"intercepts", aFloats(0.25), "classlabels_strings", aStrings("no", "yes")), false, true),
	} {
		t.Run(name, func(t *testing.T) {
			g := rewrite(t, build, passes.IndexClassLabels(), build().g.Nodes[0].OpType+" Gather", 0, 0)
			n := g.Nodes[0]
			if n.Has("classlabels_strings") {
				t.Errorf("the classifier keeps its string labels: %v", n.Attrs)
			}
			if table := g.Initializers[g.Nodes[1].Inputs[0]]; table.DType() != inference.String {
				t.Errorf("Gather reads %v, want the labels", table)
			}
		})
	}
}

// Classifiers of integer labels, whose label nothing reads, or in a graph
// that imports no ai.onnx opset are left alone.
func TestIndexClassLabelsLeavesAlone(t *testing.T) {
	linear := attrs("coefficients", aFloats(1, -1, 0.5, 2), "intercepts", aFloats(0, 0.5))
	for name, build := range map[string]func() *model{
		"integer labels":   classifier("LinearClassifier", withAttr(linear, "classlabels_ints", aInts(4, 7)), false, true),
		"label unread":     classifier("LinearClassifier", withAttr(linear, "classlabels_strings", aStrings("a", "b")), true, true),
		"no ai.onnx":       classifier("LinearClassifier", withAttr(linear, "classlabels_strings", aStrings("a", "b")), false, false),
		"tree int64 label": classifier("TreeEnsembleClassifier", withAttr(treeAttrs, "classlabels_int64s", aInts(1, 2, 3)), false, true),
	} {
		t.Run(name, func(t *testing.T) {
			if name == "no ai.onnx" {
				g := build().sorted(t)
				if err := passes.Optimize(g, passes.IndexClassLabels()); err != nil {
					t.Fatal(err)
				}
				if o := ops(g); o != "LinearClassifier" {
					t.Errorf("nodes %q, want the classifier alone", o)
				}
				return
			}
			unchanged(t, build, passes.IndexClassLabels())
		})
	}
}

// withAttr is a copy of a with name set to v.
func withAttr(a map[string]graph.Attr, name string, v graph.Attr) map[string]graph.Attr {
	out := map[string]graph.Attr{name: v}
	for k, w := range a {
		out[k] = w
	}
	return out
}
