package passes

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// mlDomain is the domain of the classical-ML operators.
const mlDomain = "ai.onnx.ml"

// labeledClassifiers are the ai.onnx.ml classifiers whose first output is
// the label of each row's class, from classlabels_strings or the
// attribute of integer labels named here.
var labeledClassifiers = map[string]string{"TreeEnsembleClassifier": "classlabels_int64s", "LinearClassifier": "classlabels_ints",
	"SVMClassifier": "classlabels_ints"}

// IndexClassLabels rewrites a classifier of string labels (classlabels_strings)
// into one of the labels' indices (integer labels 0, 1, …), whose label
// output a Gather then maps to the strings, kept as an initializer: the
// classifier no longer holds strings, so a backend whose memory cannot
// hold them (a GPU) runs it, and only the Gather, at the graph's edge,
// touches strings. The classifier's rules choose a class by its index
// whatever the labels are, so the labels are the same. Graphs that import
// no ai.onnx opset (for Gather) are left alone.
func IndexClassLabels() Pass {
	return Pass{Name: "IndexClassLabels", Run: func(g *graph.Graph) (bool, error) {
		if g.Opsets[""] == 0 {
			return false, nil
		}
		changed := false
		x := newIndex(g)
		for _, n := range g.Nodes {
			labels, intLabels := n.Attrs["classlabels_strings"], labeledClassifiers[n.OpType]
			if n.Domain != mlDomain || intLabels == "" || labels.Type != graph.AttrStrings || len(labels.Strings) == 0 ||
				len(n.Outputs) == 0 || n.Outputs[0] == "" || n.Has(intLabels) {
				continue
			}
			table, err := inference.New([]int{len(labels.Strings)}, labels.Strings)
			if err != nil {
				return changed, err
			}
			label := n.Outputs[0]
			index, tableName := x.fresh(label+"/index"), x.fresh(label+"/labels")
			indices := make([]int64, len(labels.Strings))
			for i := range indices {
				indices[i] = int64(i)
			}
			attrs := make(map[string]graph.Attr, len(n.Attrs))
			for k, v := range n.Attrs {
				attrs[k] = v
			}
			delete(attrs, "classlabels_strings")
			attrs[intLabels] = graph.Attr{Type: graph.AttrInts, Ints: indices}
			n.Attrs = attrs
			n.Outputs = append([]string{index}, n.Outputs[1:]...)
			g.Initializers[tableName] = table
			g.Nodes = append(g.Nodes, &graph.Node{Name: n.Name + "/labels", OpType: "Gather",
				Inputs: []string{tableName, index}, Outputs: []string{label}})
			changed = true
		}
		return changed, nil
	}}
}
