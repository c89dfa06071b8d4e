package opsem

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The tree ensembles of ai.onnx.ml: TreeEnsembleRegressor and
// TreeEnsembleClassifier (ml opsets 1 and 3; 3 adds the *_as_tensor
// attributes) and TreeEnsemble (ml 5). TreeEnsembleOf reads a node's
// attributes, whichever of the three it is, into one validated TreeEnsemble;
// the backends compile that into their layouts. The rules ONNX leaves open
// follow ONNX Runtime (onnxruntime/core/providers/cpu/ml/
// tree_ensemble_common.h, tree_ensemble_aggregator.h,
// tree_ensemble_attribute.h), which the exporters (skl2onnx, onnxmltools)
// are tested against; where this file departs from it, the comment says so.

// BranchMode is the test an interior node makes of its feature x against
// its Value; the numbers are TreeEnsemble's nodes_modes.
type BranchMode uint8

const (
	BranchLEQ    BranchMode = iota // x ≤ Value
	BranchLT                       // x < Value
	BranchGTE                      // x ≥ Value
	BranchGT                       // x > Value
	BranchEQ                       // x = Value
	BranchNEQ                      // x ≠ Value (true for NaN, as IEEE's ≠)
	BranchMember                   // x is one of the node's members
)

// legacyModes are nodes_modes' strings in TreeEnsembleRegressor and
// TreeEnsembleClassifier; LEAF marks a leaf (modeLeaf).
var legacyModes = map[string]BranchMode{
	"BRANCH_LEQ": BranchLEQ, "BRANCH_LT": BranchLT, "BRANCH_GTE": BranchGTE,
	"BRANCH_GT": BranchGT, "BRANCH_EQ": BranchEQ, "BRANCH_NEQ": BranchNEQ, "LEAF": modeLeaf,
}

const modeLeaf BranchMode = 255

// TreeAggregate is how the weights of a row's leaves combine per target;
// the numbers are TreeEnsemble's aggregate_function.
type TreeAggregate uint8

const (
	AggregateAverage TreeAggregate = iota // the sum over the number of trees
	AggregateSum
	AggregateMin
	AggregateMax
)

var legacyAggregates = map[string]TreeAggregate{"AVERAGE": AggregateAverage, "SUM": AggregateSum, "MIN": AggregateMin, "MAX": AggregateMax}

// legacyTransforms are the post_transform names of the ml 1 and 3
// operators; TreeEnsemble (ml 5) numbers them in the same order
// (PostTransform, mlscores.go).
var legacyTransforms = map[string]PostTransform{"NONE": PostNone, "SOFTMAX": PostSoftmax, "LOGISTIC": PostLogistic,
	"SOFTMAX_ZERO": PostSoftmaxZero, "PROBIT": PostProbit}

// MaxTreeTargets bounds n_targets and the number of class labels: a
// declared count is checked before anything the size of it is made.
const MaxTreeTargets = 1 << 20

// TreeChild is where a branch leads: an interior node (≥ 0, an index into
// TreeEnsemble.Nodes) or a leaf (^l for leaf l).
type TreeChild int32

// LeafChild is the TreeChild of leaf l.
func LeafChild(l int) TreeChild { return TreeChild(^int32(l)) }

// IsLeaf reports whether c is a leaf.
func (c TreeChild) IsLeaf() bool { return c < 0 }

// Leaf is the leaf c is, when IsLeaf.
func (c TreeChild) Leaf() int { return int(^c) }

// TreeNode is an interior node: a row whose feature Feature passes the
// node's test goes to True, any other to False.
type TreeNode struct {
	// Value is the threshold, the split value converted exactly from the
	// float32 or float64 the model holds.
	Value       float64
	Feature     int32
	True, False TreeChild
	// Members are TreeEnsemble.Members[MemberLo:MemberHi] for
	// BranchMember.
	MemberLo, MemberHi int32
	Mode               BranchMode
	// MissingTrue sends a NaN feature to True whatever the test says
	// (nodes_missing_value_tracks_true); without it a NaN goes where the
	// IEEE comparison sends it: False for every mode but BranchNEQ.
	MissingTrue bool
}

// TakesTrue reports whether a row whose feature is x goes to n.True;
// members are the ensemble's Members. x is the row's value converted to
// the type the ensemble compares in (TreeEnsemble.CompareIn64), then
// exactly to float64.
func (n *TreeNode) TakesTrue(x float64, members []float64) bool {
	var r bool
	switch n.Mode {
	case BranchLEQ:
		r = x <= n.Value
	case BranchLT:
		r = x < n.Value
	case BranchGTE:
		r = x >= n.Value
	case BranchGT:
		r = x > n.Value
	case BranchEQ:
		r = x == n.Value
	case BranchNEQ:
		r = x != n.Value
	case BranchMember:
		r = slices.Contains(members[n.MemberLo:n.MemberHi], x)
	}
	return r || n.MissingTrue && x != x
}

// ThresholdTest is how a node whose test orders x against its Value
// (BranchLEQ, LT, GTE or GT), with its NaN direction, tests in compare
// type T as one comparison: a row whose value u is ≤ thr goes to the
// first child, any other (NaN included) to the second, where u is the
// feature negated when neg is set; the first child is n.True when
// firstTrue. The node's true set is a ray of T ([−∞, a] for ≤ and <,
// [a, +∞] for ≥ and >, x < t being x ≤ nextDown(t)) or empty (a NaN
// threshold, < −∞, > +∞); the first child takes it, or, when NaN must go
// to True (MissingTrue), its complement. A lower ray [−∞, a] is u = x,
// thr = a; an upper ray [a, +∞] is u = −x, thr = −a; the empty set
// thr = NaN, all of T thr = +∞. Which of these a node is does not depend
// on T. Both backends lay their trees out with it.
func ThresholdTest[T float32 | float64](n *TreeNode) (neg bool, thr T, firstTrue bool) {
	const (
		empty = iota
		lower
		upper
		all
	)
	t := T(n.Value)
	inf := T(math.Inf(1))
	kind, a := empty, t
	switch {
	case t != t:
	case n.Mode == BranchLEQ:
		kind = lower
	case n.Mode == BranchLT && t != -inf:
		kind, a = lower, nextToward(t, -inf)
	case n.Mode == BranchGTE:
		kind = upper
	case n.Mode == BranchGT && t != inf:
		kind, a = upper, nextToward(t, inf)
	}
	firstTrue = !n.MissingTrue
	if n.MissingTrue { // the complement
		switch {
		case kind == empty:
			kind = all
		case kind == lower && a == inf, kind == upper && a == -inf:
			kind = empty
		case kind == lower:
			kind, a = upper, nextToward(a, inf)
		case kind == upper:
			kind, a = lower, nextToward(a, -inf)
		}
	}
	switch kind {
	case lower:
		return false, a, firstTrue
	case upper:
		return true, -a, firstTrue
	case all:
		return false, inf, firstTrue
	}
	return false, T(math.NaN()), firstTrue
}

// nextToward is the T next to x in the direction of y.
func nextToward[T float32 | float64](x, y T) T {
	if unsafe.Sizeof(x) == 4 {
		return T(math.Nextafter32(float32(x), float32(y)))
	}
	return T(math.Nextafter(float64(x), float64(y)))
}

// TreeWeight is one weight of a leaf: Value counts towards target (or
// class) Target.
type TreeWeight struct {
	Target int32
	Value  float64
}

// TreeEnsemble is a validated tree ensemble: every child is a node or leaf
// of the ensemble, each node is reached from one root along one path (no
// cycles, no node shared by two branches or trees; leaves may be shared),
// every weight's target is below Targets, and the base values match the
// targets. A row's path visits at most Depth nodes.
type TreeEnsemble struct {
	Nodes   []TreeNode
	Members []float64 // the member sets of the BranchMember nodes
	// Roots holds each tree's root; AVERAGE divides by len(Roots).
	Roots []TreeChild
	// Leaf l's weights are Weights[LeafStart[l]:LeafStart[l+1]].
	LeafStart []int32
	Weights   []TreeWeight
	// Targets is n_targets, or the number of classes of a classifier.
	Targets   int
	Aggregate TreeAggregate
	Transform PostTransform
	// Base holds the base values, none or one per target (a binary
	// classifier may have one: FinishClassification).
	Base []float64
	// DoubleSplits: the thresholds (or member values) are float64.
	DoubleSplits bool
	// MaxFeature is the largest feature a node reads.
	MaxFeature int
	// Depths[t] is the most interior nodes on a path from tree t's root
	// to a leaf; Depth the most of them.
	Depths []int
	Depth  int
	// Classifier is set for TreeEnsembleClassifier.
	Classifier *TreeClassifier

	// How errors name a node (index into Nodes) and the attribute entry
	// that holds it, and the attribute that holds the roots; check clears
	// them.
	name      func(node int) string
	entry     func(node int) int
	rootsAttr string
}

// TreeClassifier is what a TreeEnsembleClassifier adds: its labels (one
// of the two lists is set) and what ONNX Runtime's binary rule looks at.
type TreeClassifier struct {
	LabelsInt64  []int64
	LabelsString []string
	// OneClassID: two labels, and class_ids holds one class (a model that
	// keeps one score per leaf, skl2onnx's and onnxmltools' binary
	// classifiers).
	OneClassID bool
	// PositiveWeights: no class weight is below 0.
	PositiveWeights bool
}

// CompareIn64 reports whether the ensemble compares a row's values in
// float64 for an input of element type in: when its thresholds are double
// or the input is. Otherwise it compares in float32, as ONNX Runtime does:
// an int64 or int32 feature is rounded to float32 first, which decides the
// branch of a row exactly at a threshold.
func (e *TreeEnsemble) CompareIn64(in inference.DType) bool {
	return e.DoubleSplits || in == inference.Float64
}

// TreeEnsembleOf reads and validates the tree ensemble of n, a
// TreeEnsembleRegressor, TreeEnsembleClassifier or TreeEnsemble node. A
// model the attributes do not describe (a count that disagrees between
// attributes, a child, class or target out of range, a cycle) fails with
// an error wrapping inference.ErrBadModel that names the attribute; a
// single-label classifier, which ONNX Runtime answers with labels outside
// the list, with an *inference.UnsupportedOpError. Nothing is allocated
// by a count the attributes declare before the count is checked.
func TreeEnsembleOf(n Node) (*TreeEnsemble, error) {
	r := attrReader{n: n.Node}
	var e *TreeEnsemble
	var err error
	switch n.OpType {
	case "TreeEnsembleRegressor":
		e, err = legacyEnsemble(n, &r, false)
	case "TreeEnsembleClassifier":
		e, err = legacyEnsemble(n, &r, true)
	case "TreeEnsemble":
		e, err = ensemble5(&r)
	default:
		return nil, n.Unsupported("not a tree ensemble")
	}
	if err == nil {
		err = r.err
	}
	if err != nil {
		return nil, err
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	return e, nil
}

// badAttr is the error for attribute name.
func badAttr(name, format string, args ...any) error {
	return fmt.Errorf("attribute %s: %s: %w", name, fmt.Sprintf(format, args...), inference.ErrBadModel)
}

// attrReader reads a node's attributes, keeping the first one of the
// wrong kind as its error.
type attrReader struct {
	n   *graph.Node
	err error
}

func (r *attrReader) get(name string, want graph.AttrType, kind string) (graph.Attr, bool) {
	a, ok := r.n.Attrs[name]
	if !ok {
		return a, false
	}
	if a.Type != want {
		if r.err == nil {
			r.err = badAttr(name, "not %s", kind)
		}
		return a, false
	}
	return a, true
}

func (r *attrReader) ints(name string) []int64 {
	if a, ok := r.n.Attrs[name]; ok && a.Type == graph.AttrInt {
		return []int64{a.Int}
	}
	a, _ := r.get(name, graph.AttrInts, "a list of ints")
	return a.Ints
}

func (r *attrReader) strings(name string) []string {
	a, _ := r.get(name, graph.AttrStrings, "a list of strings")
	return a.Strings
}

func (r *attrReader) int(name string, def int64) int64 {
	if a, ok := r.get(name, graph.AttrInt, "an int"); ok {
		return a.Int
	}
	return def
}

func (r *attrReader) str(name, def string) string {
	if a, ok := r.get(name, graph.AttrString, "a string"); ok {
		return a.String
	}
	return def
}

// reals returns the values of the float list attribute list or of the
// tensor attribute tensor (float32, float64 or float16, any shape), as
// float64, whether they were float64, and whether either is there; a node
// with both fails.
func (r *attrReader) reals(list, tensor string) (v []float64, double, given bool) {
	_, hasList := r.n.Attrs[list]
	_, hasTensor := r.n.Attrs[tensor]
	if hasList && hasTensor && list != "" {
		if r.err == nil {
			r.err = badAttr(tensor, "the node has %s too; give one of them", list)
		}
		return nil, false, false
	}
	if hasTensor {
		a, ok := r.get(tensor, graph.AttrTensor, "a tensor")
		if !ok {
			return nil, false, false
		}
		switch t := a.Tensor; t.DType() {
		case inference.Float32:
			d, _ := inference.Data[float32](t)
			return float64s(d), false, true
		case inference.Float64:
			d, _ := inference.Data[float64](t)
			return d, true, true
		case inference.Float16:
			d, _ := inference.Data[inference.Half](t)
			v := make([]float64, len(d))
			for i, h := range d {
				v[i] = float64(h.Float32())
			}
			return v, false, true
		default:
			if r.err == nil {
				r.err = badAttr(tensor, "a tensor of %v, want float, double or float16", t.DType())
			}
			return nil, false, false
		}
	}
	if !hasList || list == "" {
		return nil, false, false
	}
	a, ok := r.get(list, graph.AttrFloats, "a list of floats")
	return float64s(a.Floats), false, ok
}

func float64s(d []float32) []float64 {
	v := make([]float64, len(d))
	for i, f := range d {
		v[i] = float64(f)
	}
	return v
}

// sameLength checks that every list named in lists has count entries;
// optional ones may also be empty.
func sameLength(count int, first string, lists map[string]int, optional ...string) error {
	for _, name := range slices.Sorted(maps.Keys(lists)) {
		if k := lists[name]; k != count && !(k == 0 && slices.Contains(optional, name)) {
			return badAttr(name, "%d entries, but %s has %d", k, first, count)
		}
	}
	return nil
}

// flags reads nodes_missing_value_tracks_true: 0 or 1 each.
func flags(name string, v []int64) error {
	for i, f := range v {
		if f != 0 && f != 1 {
			return badAttr(name, "entry %d is %d, want 0 or 1", i, f)
		}
	}
	return nil
}

// feature checks a feature id.
func feature(name string, i int, f int64) (int32, error) {
	if f < 0 || f > math.MaxInt32 {
		return 0, badAttr(name, "entry %d is %d, not a feature index", i, f)
	}
	return int32(f), nil
}

// targets checks a declared number of targets or classes.
func targets(name string, k int64) (int, error) {
	if k < 1 || k > MaxTreeTargets {
		return 0, badAttr(name, "%d targets; want 1 to %d", k, MaxTreeTargets)
	}
	return int(k), nil
}

// legacyEnsemble reads a TreeEnsembleRegressor or TreeEnsembleClassifier.
// Nodes are named by (tree id, node id); a tree's root is its first node
// in the attributes' order, and a LEAF node is a leaf with the weights
// whose (tree id, node id) name it. As ONNX Runtime, weights that name an
// interior node are ignored (old onnxmltools wrote some), and a leaf
// without weights adds nothing.
func legacyEnsemble(n Node, r *attrReader, classifier bool) (*TreeEnsemble, error) {
	treeIDs := r.ints("nodes_treeids")
	nodeIDs := r.ints("nodes_nodeids")
	features := r.ints("nodes_featureids")
	modes := r.strings("nodes_modes")
	trues := r.ints("nodes_truenodeids")
	falses := r.ints("nodes_falsenodeids")
	missing := r.ints("nodes_missing_value_tracks_true")
	values, double, _ := r.reals("nodes_values", "nodes_values_as_tensor")
	prefix := "target_"
	if classifier {
		prefix = "class_"
	}
	wIDs := r.ints(prefix + "ids")
	wNodes := r.ints(prefix + "nodeids")
	wTrees := r.ints(prefix + "treeids")
	wValues, _, _ := r.reals(prefix+"weights", prefix+"weights_as_tensor")
	base, _, _ := r.reals("base_values", "base_values_as_tensor")
	if r.err != nil {
		return nil, r.err
	}
	count := len(treeIDs)
	if count == 0 {
		return nil, badAttr("nodes_treeids", "no nodes")
	}
	if count >= math.MaxInt32 || len(wIDs) >= math.MaxInt32 {
		return nil, badAttr("nodes_treeids", "%d nodes and %d weights; at most 2³¹−2 of each", count, len(wIDs))
	}
	if err := sameLength(count, "nodes_treeids", map[string]int{
		"nodes_nodeids": len(nodeIDs), "nodes_featureids": len(features), "nodes_modes": len(modes),
		"nodes_truenodeids": len(trues), "nodes_falsenodeids": len(falses), "nodes_values": len(values),
		"nodes_missing_value_tracks_true": len(missing),
	}, "nodes_missing_value_tracks_true"); err != nil {
		return nil, err
	}
	if err := sameLength(len(wIDs), prefix+"ids", map[string]int{
		prefix + "nodeids": len(wNodes), prefix + "treeids": len(wTrees), prefix + "weights": len(wValues),
	}); err != nil {
		return nil, err
	}
	if err := flags("nodes_missing_value_tracks_true", missing); err != nil {
		return nil, err
	}

	e := &TreeEnsemble{DoubleSplits: double, Aggregate: AggregateSum}
	var err error
	if classifier {
		c := &TreeClassifier{LabelsInt64: r.ints("classlabels_int64s"), LabelsString: r.strings("classlabels_strings"), PositiveWeights: true}
		switch {
		case c.LabelsInt64 != nil && c.LabelsString != nil:
			return nil, badAttr("classlabels_strings", "the node has classlabels_int64s too; give one of them")
		case len(c.LabelsInt64)+len(c.LabelsString) == 0:
			return nil, badAttr("classlabels_int64s", "no class labels (classlabels_int64s or classlabels_strings)")
		}
		if e.Targets, err = targets("classlabels_int64s", int64(len(c.LabelsInt64)+len(c.LabelsString))); err != nil {
			return nil, err
		}
		if e.Targets == 1 {
			return nil, n.Unsupported("a classifier of one class label")
		}
		for _, w := range wValues {
			if w < 0 {
				c.PositiveWeights = false
				break
			}
		}
		c.OneClassID = e.Targets == 2 && len(wIDs) > 0 && !slices.ContainsFunc(wIDs, func(id int64) bool { return id != wIDs[0] })
		e.Classifier = c
	} else {
		k, ok := r.n.Attrs["n_targets"]
		if !ok || k.Type != graph.AttrInt {
			return nil, badAttr("n_targets", "missing, or not an int")
		}
		if e.Targets, err = targets("n_targets", k.Int); err != nil {
			return nil, err
		}
		agg := r.str("aggregate_function", "SUM")
		var known bool
		if e.Aggregate, known = legacyAggregates[agg]; !known {
			return nil, badAttr("aggregate_function", "%q; want AVERAGE, SUM, MIN or MAX", agg)
		}
	}
	post := r.str("post_transform", "NONE")
	var known bool
	if e.Transform, known = legacyTransforms[post]; !known {
		return nil, badAttr("post_transform", "%q; want NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT", post)
	}
	if err := e.setBase(base); err != nil {
		return nil, err
	}

	// Where each node is: its index in Nodes, or its leaf.
	at, err := newTreeIndex(treeIDs, nodeIDs)
	if err != nil {
		return nil, err
	}
	slot := make([]TreeChild, count)
	interior, leaves := 0, 0
	for i, m := range modes {
		mode, ok := legacyModes[m]
		if !ok {
			return nil, badAttr("nodes_modes", "entry %d is %.40q; want BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ or LEAF", i, m)
		}
		if mode == modeLeaf {
			slot[i] = LeafChild(leaves)
			leaves++
		} else {
			slot[i] = TreeChild(interior)
			interior++
		}
	}
	e.Nodes = make([]TreeNode, 0, interior)
	src := make([]int32, 0, interior) // each node's entry in the attributes
	e.name = func(k int) string { return fmt.Sprintf("%d of tree %d", nodeIDs[src[k]], treeIDs[src[k]]) }
	e.entry = func(k int) int { return int(src[k]) }
	e.rootsAttr = "nodes_treeids"
	for i, m := range modes {
		mode := legacyModes[m]
		if mode == modeLeaf {
			continue
		}
		src = append(src, int32(i))
		f, err := feature("nodes_featureids", i, features[i])
		if err != nil {
			return nil, err
		}
		nd := TreeNode{Value: values[i], Feature: f, Mode: mode, MissingTrue: len(missing) > 0 && missing[i] == 1}
		for _, c := range []struct {
			name string
			id   int64
			to   *TreeChild
		}{{"nodes_truenodeids", trues[i], &nd.True}, {"nodes_falsenodeids", falses[i], &nd.False}} {
			j, ok := at.find(treeIDs[i], c.id)
			if !ok {
				return nil, badAttr(c.name, "node %d of tree %d leads to node %d, which the tree does not have", nodeIDs[i], treeIDs[i], c.id)
			}
			*c.to = slot[j]
		}
		e.Nodes = append(e.Nodes, nd)
	}
	for _, first := range at.firsts {
		e.Roots = append(e.Roots, slot[first])
	}

	// The weights, by leaf in the order given.
	leafOf := make([]int32, len(wIDs))
	e.LeafStart = make([]int32, leaves+1)
	for j := range wIDs {
		i, ok := at.find(wTrees[j], wNodes[j])
		if !ok {
			return nil, badAttr(prefix+"nodeids", "entry %d names node %d of tree %d, which the ensemble does not have", j, wNodes[j], wTrees[j])
		}
		if wIDs[j] < 0 || wIDs[j] >= int64(e.Targets) {
			return nil, badAttr(prefix+"ids", "entry %d is %d; the ensemble has %d %s", j, wIDs[j], e.Targets, map[bool]string{true: "classes", false: "targets"}[classifier])
		}
		leafOf[j] = -1
		if s := slot[i]; s.IsLeaf() {
			leafOf[j] = int32(s.Leaf())
			e.LeafStart[s.Leaf()+1]++
		}
	}
	for l := range leaves {
		e.LeafStart[l+1] += e.LeafStart[l]
	}
	e.Weights = make([]TreeWeight, e.LeafStart[leaves])
	next := slices.Clone(e.LeafStart[:leaves])
	for j, l := range leafOf {
		if l >= 0 {
			e.Weights[next[l]] = TreeWeight{Target: int32(wIDs[j]), Value: wValues[j]}
			next[l]++
		}
	}
	return e, nil
}

// treeIndex finds the nodes of a TreeEnsembleRegressor or
// TreeEnsembleClassifier by (tree id, node id), and each tree's first node
// in the attributes' order (firsts, in the order the trees first appear).
type treeIndex struct {
	firsts []int
	// Sequential: each tree's nodes are together and numbered 0, 1, …
	// from its first; otherwise byID maps every node.
	start map[int64][2]int // tree → first node, node count
	byID  map[[2]int64]int
}

func newTreeIndex(treeIDs, nodeIDs []int64) (*treeIndex, error) {
	x := &treeIndex{start: map[int64][2]int{}}
	sequential := true
	for i, t := range treeIDs {
		s, seen := x.start[t]
		if !seen {
			x.firsts = append(x.firsts, i)
			s = [2]int{i, 0}
		} else if s[0]+s[1] != i {
			sequential = false // the tree's nodes are not together
		}
		if nodeIDs[i] != int64(s[1]) {
			sequential = false
		}
		s[1]++
		x.start[t] = s
	}
	if sequential {
		return x, nil
	}
	x.byID = make(map[[2]int64]int, len(treeIDs))
	for i, t := range treeIDs {
		k := [2]int64{t, nodeIDs[i]}
		if _, dup := x.byID[k]; dup {
			return nil, badAttr("nodes_nodeids", "node %d of tree %d appears twice", nodeIDs[i], t)
		}
		x.byID[k] = i
	}
	return x, nil
}

// find returns the index of node id of tree tree.
func (x *treeIndex) find(tree, id int64) (int, bool) {
	if x.byID != nil {
		i, ok := x.byID[[2]int64{tree, id}]
		return i, ok
	}
	s, ok := x.start[tree]
	if !ok || id < 0 || id >= int64(s[1]) {
		return 0, false
	}
	return s[0] + int(id), true
}

// setBase checks and keeps the base values: none, one per target, or one
// for a classifier of two classes (ONNX Runtime's reading: it adds to the
// first class's score).
func (e *TreeEnsemble) setBase(base []float64) error {
	if k := len(base); k != 0 && k != e.Targets && !(e.Classifier != nil && e.Targets == 2 && k == 1) {
		return badAttr("base_values", "%d values for %d targets", k, e.Targets)
	}
	e.Base = base
	return nil
}

// ensemble5 reads a TreeEnsemble (ai.onnx.ml 5). Nodes and leaves are
// indexed across trees; tree_roots names each tree's root node. A tree
// that is one leaf is a node whose two branches lead to that leaf, which
// is what evaluating the node gives.
func ensemble5(r *attrReader) (*TreeEnsemble, error) {
	roots := r.ints("tree_roots")
	features := r.ints("nodes_featureids")
	trues := r.ints("nodes_truenodeids")
	trueLeafs := r.ints("nodes_trueleafs")
	falses := r.ints("nodes_falsenodeids")
	falseLeafs := r.ints("nodes_falseleafs")
	missing := r.ints("nodes_missing_value_tracks_true")
	leafTargets := r.ints("leaf_targetids")
	splits, doubleSplits, _ := r.reals("", "nodes_splits")
	weights, _, _ := r.reals("", "leaf_weights")
	members, doubleMembers, _ := r.reals("", "membership_values")
	var modes []uint8
	if a, ok := r.get("nodes_modes", graph.AttrTensor, "a tensor"); ok {
		var err error
		if modes, err = inference.Data[uint8](a.Tensor); err != nil {
			return nil, badAttr("nodes_modes", "a tensor of %v, want uint8", a.Tensor.DType())
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	count, leaves := len(features), len(leafTargets)
	switch {
	case count == 0:
		return nil, badAttr("nodes_featureids", "no nodes")
	case len(roots) == 0:
		return nil, badAttr("tree_roots", "no trees")
	case count >= math.MaxInt32 || leaves >= math.MaxInt32:
		return nil, badAttr("nodes_featureids", "%d nodes and %d leaves; at most 2³¹−2 of each", count, leaves)
	}
	if err := sameLength(count, "nodes_featureids", map[string]int{
		"nodes_modes": len(modes), "nodes_splits": len(splits), "nodes_truenodeids": len(trues), "nodes_trueleafs": len(trueLeafs),
		"nodes_falsenodeids": len(falses), "nodes_falseleafs": len(falseLeafs), "nodes_missing_value_tracks_true": len(missing),
	}, "nodes_missing_value_tracks_true"); err != nil {
		return nil, err
	}
	if len(weights) != leaves {
		return nil, badAttr("leaf_weights", "%d weights, but leaf_targetids has %d", len(weights), leaves)
	}
	if err := flags("nodes_missing_value_tracks_true", missing); err != nil {
		return nil, err
	}
	e := &TreeEnsemble{DoubleSplits: doubleSplits || doubleMembers}
	var err error
	nTargets := r.int("n_targets", 0)
	if e.Targets, err = targets("n_targets", nTargets); err != nil {
		return nil, err
	}
	agg, post := r.int("aggregate_function", int64(AggregateSum)), r.int("post_transform", int64(PostNone))
	if r.err != nil {
		return nil, r.err
	}
	if agg < 0 || agg > int64(AggregateMax) {
		return nil, badAttr("aggregate_function", "%d; want 0 (AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX)", agg)
	}
	if post < 0 || post > int64(PostProbit) {
		return nil, badAttr("post_transform", "%d; want 0 (NONE) to 4 (PROBIT)", post)
	}
	e.Aggregate, e.Transform = TreeAggregate(agg), PostTransform(post)

	// The member sets, NaN-separated, in the order of the BRANCH_MEMBER
	// nodes; a NaN after the last set may be left out.
	sets := 0
	for i, m := range modes {
		if m > uint8(BranchMember) {
			return nil, badAttr("nodes_modes", "entry %d is %d; want 0 (BRANCH_LEQ) to 6 (BRANCH_MEMBER)", i, m)
		}
		if m == uint8(BranchMember) {
			sets++
		}
	}
	given := 0
	if len(members) > 0 {
		given = 1
		for i, v := range members {
			if v != v && i < len(members)-1 {
				given++
			}
		}
	}
	if given != sets {
		return nil, badAttr("membership_values", "%d sets, for %d BRANCH_MEMBER nodes", given, sets)
	}
	e.Members = members
	nextMember := 0

	e.Nodes = make([]TreeNode, count)
	e.name = func(k int) string { return fmt.Sprint(k) }
	e.entry = func(k int) int { return k }
	e.rootsAttr = "tree_roots"
	child := func(name string, i int, id, leaf int64) (TreeChild, error) {
		if leaf != 0 {
			if id < 0 || id >= int64(leaves) {
				return 0, badAttr(name, "entry %d leads to leaf %d; there are %d leaves", i, id, leaves)
			}
			return LeafChild(int(id)), nil
		}
		if id < 0 || id >= int64(count) {
			return 0, badAttr(name, "entry %d leads to node %d; there are %d nodes", i, id, count)
		}
		return TreeChild(id), nil
	}
	for i := range count {
		f, err := feature("nodes_featureids", i, features[i])
		if err != nil {
			return nil, err
		}
		nd := TreeNode{Value: splits[i], Feature: f, Mode: BranchMode(modes[i]), MissingTrue: len(missing) > 0 && missing[i] == 1}
		if nd.True, err = child("nodes_truenodeids", i, trues[i], trueLeafs[i]); err != nil {
			return nil, err
		}
		if nd.False, err = child("nodes_falsenodeids", i, falses[i], falseLeafs[i]); err != nil {
			return nil, err
		}
		if nd.Mode == BranchMember {
			nd.MemberLo = int32(nextMember)
			for nextMember < len(members) && members[nextMember] == members[nextMember] {
				nextMember++
			}
			nd.MemberHi = int32(nextMember)
			nextMember++ // the NaN
		}
		e.Nodes[i] = nd
	}
	for i, root := range roots {
		if root < 0 || root >= int64(count) {
			return nil, badAttr("tree_roots", "entry %d is %d; there are %d nodes", i, root, count)
		}
		e.Roots = append(e.Roots, TreeChild(root))
	}
	e.LeafStart = make([]int32, leaves+1)
	e.Weights = make([]TreeWeight, leaves)
	for l, t := range leafTargets {
		if t < 0 || t >= int64(e.Targets) {
			return nil, badAttr("leaf_targetids", "entry %d is %d; n_targets is %d", l, t, e.Targets)
		}
		e.Weights[l] = TreeWeight{Target: int32(t), Value: weights[l]}
		e.LeafStart[l+1] = int32(l + 1)
	}
	return e, nil
}

// check refuses an ensemble whose nodes do not form trees: a node
// reached twice (the child of two branches, a root and a child, two
// roots), which is what a cycle or a shared subtree is; then it walks each
// tree for Depths, Depth and MaxFeature. The walk keeps its own stack, so
// a path as long as the nodes are many does not overflow the goroutine's,
// and visits each node once.
func (e *TreeEnsemble) check() error {
	reached := make([]bool, len(e.Nodes))
	enter := func(c TreeChild, name string, from int) error {
		if c.IsLeaf() {
			return nil
		}
		if reached[c] {
			return badAttr(name, "entry %d leads to node %s, which another branch or root reaches too: a cycle, or trees that share nodes", from, e.name(int(c)))
		}
		reached[c] = true
		return nil
	}
	for i, root := range e.Roots {
		if err := enter(root, e.rootsAttr, i); err != nil {
			return err
		}
	}
	for i := range e.Nodes {
		if err := enter(e.Nodes[i].True, "nodes_truenodeids", e.entry(i)); err != nil {
			return err
		}
		if err := enter(e.Nodes[i].False, "nodes_falsenodeids", e.entry(i)); err != nil {
			return err
		}
	}
	e.name, e.entry, e.rootsAttr = nil, nil, ""

	// Each node is reached once: the walk from the roots is linear.
	height := make([]int32, len(e.Nodes)) // interior nodes on the longest path from the node down
	var stack []int32
	e.Depths = make([]int, len(e.Roots))
	e.MaxFeature = -1
	for t, root := range e.Roots {
		if root.IsLeaf() {
			continue
		}
		// Preorder onto order, then heights in reverse.
		order := stack[:0]
		order = append(order, int32(root))
		for k := 0; k < len(order); k++ {
			nd := &e.Nodes[order[k]]
			e.MaxFeature = max(e.MaxFeature, int(nd.Feature))
			for _, c := range [2]TreeChild{nd.True, nd.False} {
				if !c.IsLeaf() {
					order = append(order, int32(c))
				}
			}
		}
		for k := len(order) - 1; k >= 0; k-- {
			nd := &e.Nodes[order[k]]
			h := int32(0)
			for _, c := range [2]TreeChild{nd.True, nd.False} {
				if !c.IsLeaf() {
					h = max(h, height[c])
				}
			}
			height[order[k]] = h + 1
		}
		stack = order
		e.Depths[t] = int(height[root])
		e.Depth = max(e.Depth, e.Depths[t])
	}
	return nil
}

// FinishRegression turns one row's aggregated weights into its outputs,
// in place: p[k] holds the sum (SUM, AVERAGE), the least (MIN) or the
// greatest (MAX) of the weights the row's leaves give target k, and has[k]
// whether any does (read for MIN and MAX only: a target without weights
// is 0). AVERAGE divides by the number of trees; the base value is added
// after, then the post transform applies (PostTransform.Apply: with one
// target PROBIT alone, as ONNX Runtime does, the transform every exported
// model has been checked against).
func (e *TreeEnsemble) FinishRegression(p []float64, has []bool) {
	trees := float64(len(e.Roots))
	for k, v := range p {
		switch e.Aggregate {
		case AggregateAverage:
			v /= trees
		case AggregateMin, AggregateMax:
			if !has[k] {
				v = 0
			}
		}
		if len(e.Base) > 0 {
			v += e.Base[k]
		}
		p[k] = v
	}
	e.Transform.Apply(p)
}

// FinishClassification turns one row's class scores into its outputs,
// in place, and returns the index of its label: p[k] holds the sum of the
// weights the row's leaves give class k, has[k] whether any does (has is
// only read). The
// rules are ONNX Runtime's (TreeAggregatorClassifier):
//
// More than two classes: the base values are added, the label is the
// class of the highest score among those that have one (base values give
// one; the first on ties; class 0 when none has), and the post transform
// applies to every score.
//
// Two classes: with OneClassID (one score per leaf) the row's score s is
// class 1's when it has one, else class 0's; the label is class 1 when
// s > 0.5 for PositiveWeights, s > 0 otherwise, and class 0 on ties.
// When the model has a score of one class only, the two scores are
// [1−s, s] for PositiveWeights whatever the post transform (ONNX
// Runtime's rule; LOGISTIC is not applied), [σ(−s), σ(s)] for LOGISTIC
// and [−s, s] for the others; PROBIT gives [probit(s), 0]. Two base values
// make class 1's score base₁ + (class 0's score), class 0's its negation,
// when class 1 has a score; otherwise each class adds its own. One base
// value adds to class 0's. Without OneClassID the label is class 1 when
// class 1's score (or, without one, class 0's) is above 0; where only
// class 0 has a score the scores are [−s, s] (σ as above for LOGISTIC)
// without base values and [s, 0] with one.
func (e *TreeEnsemble) FinishClassification(p []float64, has []bool) int {
	c := e.Classifier
	if len(p) > 2 {
		for k, b := range e.Base {
			p[k] += b
		}
		best := -1
		for k, v := range p {
			if (has[k] || k < len(e.Base)) && (best < 0 || v > p[best]) {
				best = k
			}
		}
		e.Transform.Apply(p)
		return max(best, 0)
	}
	const (
		none = iota
		complement
		sign
	)
	two, expand := has[1], none
	switch len(e.Base) {
	case 2:
		if has[1] {
			p[1] = e.Base[1] + p[0]
			p[0] = -p[1]
		} else {
			p[0] += e.Base[0]
			p[1] += e.Base[1]
		}
		two = true
	case 1:
		p[0] += e.Base[0]
	case 0:
		expand = sign
	}
	var pos float64
	switch {
	case has[1]:
		pos = p[1]
	case has[0]:
		pos = p[0]
	}
	label := 0
	switch {
	case c.OneClassID && c.PositiveWeights:
		expand = complement
		if pos > 0.5 {
			label = 1
		}
	case c.OneClassID:
		expand = sign
		if pos > 0 {
			label = 1
		}
	case pos > 0:
		label = 1
	}
	if two {
		e.Transform.Apply(p)
		return label
	}
	s := p[0]
	switch {
	case e.Transform == PostProbit:
		p[0], p[1] = probit(s), 0
	case expand == complement:
		p[0], p[1] = 1-s, s
	case expand == sign && e.Transform == PostLogistic:
		p[0], p[1] = logistic(-s), logistic(s)
	case expand == sign:
		p[0], p[1] = -s, s
	default:
		p[1] = 0
	}
	return label
}
