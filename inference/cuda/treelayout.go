package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// A tree ensemble compiled for the device (internal/kernels/ml.cu runs
// it; lower_mltree.go lowers the nodes to it). Each TreeEnsembleRegressor,
// TreeEnsembleClassifier and TreeEnsemble node of a model is read and
// validated by opsem.TreeEnsembleOf, as the CPU backend reads it, and laid
// out once per model, in the compare type its input takes
// (opsem.TreeEnsemble.CompareIn64), into one buffer that uploadWeights
// copies with the initializers:
//
//	header   13 int64: trees, targets, aggregate, transform, flags, base
//	         values, then the byte offsets of the sections below
//	nodes    16 bytes a node: value (8), info (4), child (4)
//	roots    int32 a tree: its root node
//	weights  {float64 value, int64 target} a weight, leaf by leaf
//	leaves   int32 a leaf + 1: where its weights start
//	members  the member sets, in the compare type
//	base     float64 a base value
//	labels   int64 a class: a classifier's labels
//
// Each section starts at a multiple of 16 bytes. A tree's nodes are laid
// out breadth-first, the two children of a node side by side: the
// child field names the first, the second follows it. An interior node's
// test is folded into one of three kinds: an ordering mode (≤, <, ≥, >)
// with its missing-value direction becomes "u ≤ thr takes the first
// child", u the feature or its negation (opsem.ThresholdTest, which the
// CPU layout uses too); EQ and NEQ become "x = thr takes the first
// child" (NEQ with its children swapped) and MEMBER "x is a member takes
// the first child", each with the side a NaN takes. A leaf is a node of
// its own (a leaf that two branches reach is laid out twice): one whose
// leaf has one weight holds it (value, target in child), as does every
// leaf of an ensemble of one target that sums (its weights summed in
// order, as the CPU backend does); any other names its leaf, whose
// weights are in the weights section.

// deviceEnsemble is a tree ensemble node laid out for the device, or why
// it is not.
type deviceEnsemble struct {
	why        string          // when not "": the node runs on the host, and why
	data       []byte          // the layout, until uploaded
	off        int64           // its offset in the weights
	x          inference.DType // the input type it was laid out for
	in64       bool            // compares in float64
	trees      int
	targets    int
	maxFeature int
	track      bool // the kernel keeps which targets each row reaches
}

// treeEnsembleOps are the operators of the tree ensembles, without their
// domain (ai.onnx.ml).
var treeEnsembleOps = []string{"TreeEnsembleRegressor", "TreeEnsembleClassifier", "TreeEnsemble"}

// layoutEnsembles lays out every tree ensemble node of g whose input the
// kernels take (float32 or float64).
func layoutEnsembles(g *graph.Graph) map[*graph.Node]*deviceEnsemble {
	var types map[string]inference.DType
	out := map[*graph.Node]*deviceEnsemble{}
	for _, n := range g.Nodes {
		if n.Domain != mlDomain || !slices.Contains(treeEnsembleOps, n.OpType) || len(n.Inputs) == 0 {
			continue
		}
		if types == nil {
			types = opsem.ValueTypes(g, nil)
		}
		d := &deviceEnsemble{x: types[n.Inputs[0]]}
		out[n] = d
		if d.x != inference.Float32 && d.x != inference.Float64 {
			d.why = fmt.Sprintf("input X of %v: the device's trees take float32 and float64", d.x)
			continue
		}
		e, err := opsem.TreeEnsembleOf(opsem.Node{Node: n, Opset: g.OpsetOf(n)})
		if err != nil {
			d.why = err.Error() // the host reports it
			continue
		}
		if err := d.layout(e); err != nil {
			d.why = err.Error()
		}
	}
	return out
}

// Bounds of the layout: a node's feature is 28 bits of its info, and
// nodes and weights are numbered in int32.
const (
	treeMaxFeature = 1<<(32-kernels.TREE_FEATURE_SHIFT) - 1
	treeMaxNodes   = math.MaxInt32 - 1
)

// The kernel's codes of the aggregates and post transforms.
var (
	treeAggregates = map[opsem.TreeAggregate]int64{opsem.AggregateAverage: kernels.TREE_AVERAGE, opsem.AggregateSum: kernels.TREE_SUM,
		opsem.AggregateMin: kernels.TREE_MIN, opsem.AggregateMax: kernels.TREE_MAX}
	treeTransforms = map[opsem.PostTransform]int64{opsem.PostNone: kernels.TREE_POST_NONE, opsem.PostSoftmax: kernels.TREE_POST_SOFTMAX,
		opsem.PostLogistic: kernels.TREE_POST_LOGISTIC, opsem.PostSoftmaxZero: kernels.TREE_POST_SOFTMAX_ZERO, opsem.PostProbit: kernels.TREE_POST_PROBIT}
)

// treeNode is a node of the device layout (ml.cu's tree_node).
type treeNode struct {
	value uint64
	info  uint32
	child int32
}

// layout lays e out into d.data for d.x.
func (d *deviceEnsemble) layout(e *opsem.TreeEnsemble) error {
	c := e.Classifier
	switch {
	case e.MaxFeature > treeMaxFeature:
		return fmt.Errorf("the trees read feature %d; the device's layout takes features up to %d", e.MaxFeature, treeMaxFeature)
	case c != nil && c.LabelsInt64 == nil:
		return fmt.Errorf("string labels: the device holds no strings")
	}
	d.in64 = e.CompareIn64(d.x)
	d.trees, d.targets, d.maxFeature = len(e.Roots), e.Targets, e.MaxFeature
	d.track = c != nil || e.Aggregate == opsem.AggregateMin || e.Aggregate == opsem.AggregateMax
	summed := e.Targets == 1 && (e.Aggregate == opsem.AggregateSum || e.Aggregate == opsem.AggregateAverage)

	threshold := func(v float64) uint64 {
		if d.in64 {
			return math.Float64bits(v)
		}
		return uint64(math.Float32bits(float32(v)))
	}
	leaf := func(l int) treeNode {
		ws := e.Weights[e.LeafStart[l]:e.LeafStart[l+1]]
		n := treeNode{info: kernels.TREE_LEAF | kernels.TREE_ONE}
		switch {
		case summed:
			sum := 0.0
			for _, w := range ws {
				sum += w.Value
			}
			n.value = math.Float64bits(sum)
		case len(ws) == 1:
			n.value, n.child = math.Float64bits(ws[0].Value), ws[0].Target
		default:
			n.info, n.child = kernels.TREE_LEAF, int32(l)
		}
		return n
	}
	// interior returns node i's device node (but for child) and its two
	// children in the order the kernel takes them.
	interior := func(nd *opsem.TreeNode) (treeNode, opsem.TreeChild, opsem.TreeChild) {
		n := treeNode{info: uint32(nd.Feature) << kernels.TREE_FEATURE_SHIFT}
		first, second := nd.True, nd.False
		nanFirst := uint32(0)
		if nd.MissingTrue {
			nanFirst = kernels.TREE_NAN_FIRST
		}
		switch nd.Mode {
		case opsem.BranchEQ:
			n.info |= kernels.TREE_EQ | nanFirst
			n.value = threshold(nd.Value)
		case opsem.BranchNEQ: // x = thr takes False; a NaN takes True, as IEEE's ≠ does
			n.info |= kernels.TREE_EQ
			n.value = threshold(nd.Value)
			first, second = second, first
		case opsem.BranchMember:
			n.info |= kernels.TREE_MEMBER | nanFirst
			n.value = uint64(uint32(nd.MemberLo)) | uint64(uint32(nd.MemberHi))<<32
		default:
			var neg, firstTrue bool
			if d.in64 {
				var thr float64
				neg, thr, firstTrue = opsem.ThresholdTest[float64](nd)
				n.value = math.Float64bits(thr)
			} else {
				var thr float32
				neg, thr, firstTrue = opsem.ThresholdTest[float32](nd)
				n.value = uint64(math.Float32bits(thr))
			}
			n.info |= kernels.TREE_LE
			if neg {
				n.info |= kernels.TREE_NEG
			}
			if !firstTrue {
				first, second = second, first
			}
		}
		return n, first, second
	}

	// The trees, breadth-first; each slot is filled when its node is
	// taken from the queue.
	type slot struct {
		c  opsem.TreeChild
		at int32
	}
	nodes := make([]treeNode, 0, len(e.Roots)+2*len(e.Nodes))
	roots := make([]int32, len(e.Roots))
	var queue []slot
	for t, root := range e.Roots {
		roots[t] = int32(len(nodes))
		nodes = append(nodes, treeNode{})
		queue = append(queue[:0], slot{root, roots[t]})
		for k := 0; k < len(queue); k++ {
			s := queue[k]
			if s.c.IsLeaf() {
				nodes[s.at] = leaf(s.c.Leaf())
				continue
			}
			if len(nodes)+2 > treeMaxNodes {
				return fmt.Errorf("more than %d nodes", treeMaxNodes)
			}
			n, first, second := interior(&e.Nodes[s.c])
			n.child = int32(len(nodes))
			nodes[s.at] = n
			nodes = append(nodes, treeNode{}, treeNode{})
			queue = append(queue, slot{first, n.child}, slot{second, n.child + 1})
		}
	}

	// The buffer: the header, then each section at a multiple of 16.
	const headerWords = 13
	buf := make([]byte, headerWords*8, headerWords*8+16*len(nodes)+16*len(e.Weights))
	var offsets []int64
	section := func() {
		for len(buf)%16 != 0 {
			buf = append(buf, 0)
		}
		offsets = append(offsets, int64(len(buf)))
	}
	le := binary.LittleEndian
	section()
	for _, n := range nodes {
		buf = le.AppendUint64(buf, n.value)
		buf = le.AppendUint32(buf, n.info)
		buf = le.AppendUint32(buf, uint32(n.child))
	}
	section()
	for _, r := range roots {
		buf = le.AppendUint32(buf, uint32(r))
	}
	section()
	for _, w := range e.Weights {
		buf = le.AppendUint64(buf, math.Float64bits(w.Value))
		buf = le.AppendUint64(buf, uint64(w.Target))
	}
	section()
	for _, s := range e.LeafStart {
		buf = le.AppendUint32(buf, uint32(s))
	}
	section()
	for _, v := range e.Members {
		if d.in64 {
			buf = le.AppendUint64(buf, math.Float64bits(v))
		} else {
			buf = le.AppendUint32(buf, math.Float32bits(float32(v)))
		}
	}
	section()
	for _, v := range e.Base {
		buf = le.AppendUint64(buf, math.Float64bits(v))
	}
	labels := int64(0)
	if c != nil {
		section()
		labels = offsets[len(offsets)-1]
		for _, v := range c.LabelsInt64 {
			buf = le.AppendUint64(buf, uint64(v))
		}
	}
	flags := int64(0)
	if c != nil {
		flags |= kernels.TREE_CLASSIFIER
		if c.OneClassID {
			flags |= kernels.TREE_ONE_CLASS_ID
		}
		if c.PositiveWeights {
			flags |= kernels.TREE_POSITIVE
		}
	}
	if d.track {
		flags |= kernels.TREE_TRACK
	}
	header := []int64{int64(len(e.Roots)), int64(e.Targets), treeAggregates[e.Aggregate], treeTransforms[e.Transform], flags, int64(len(e.Base)),
		offsets[0], offsets[1], offsets[2], offsets[3], offsets[4], offsets[5], labels}
	for i, v := range header {
		le.PutUint64(buf[8*i:], uint64(v))
	}
	d.data = buf
	return nil
}
