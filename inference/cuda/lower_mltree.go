package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the tree ensembles of ai.onnx.ml (TreeEnsembleRegressor,
// TreeEnsembleClassifier, TreeEnsemble), two launches a node (ml.cu):
// tree_walk_* walks every row down every tree, by lanes (blocks of
// trees) of its threads, and aggregates the leaves' weights; tree_finish
// folds each row's lanes and finishes it (base values, the classifier's
// binary rules and label, the post transform) into the scores and the
// int64 labels. The ensemble was laid out once per model with the
// weights (treelayout.go). On the host stay an ensemble whose input is
// not float32 or float64 (an integer or float16 X). A classifier of
// string labels reaches the device as one of indices
// (passes.IndexClassLabels), its labels mapped on the host (edges.go).

func init() {
	for _, op := range treeEnsembleOps {
		registerLowering(mlDomain+"."+op, lowerTreeEnsemble)
		// A float16 X reaches the lowering as it is (and stays on the
		// host), not widened to float32: the CPU backend rounds the
		// float64 scores once to float16, not through float32.
		registerHalf(mlDomain + "." + op)
	}
}

// The lanes of a plan (ml.cu's tree_walk): each row's trees are split
// into lanes contiguous blocks, each walked by a thread of its own, so
// that a small batch still fills the device. A plan takes the most lanes
// (a power of two, at most the trees and maxTreeLanes) that keep
// rows·lanes under treeThreads and the [lanes, rows, targets] partial
// results under treeScratch bytes.
const (
	maxTreeLanes = 256
	treeThreads  = 1 << 15
	treeScratch  = 32 << 20
)

// treeLanes is the number of lanes of a plan of rows rows.
func treeLanes(rows, trees, targets int, track bool) int {
	perLane := int64(rows) * int64(targets) * 8 // a lane's partial results
	if track {
		perLane += int64(rows) * int64(targets)
	}
	lanes := 1
	for 2*lanes <= min(trees, maxTreeLanes) && rows*lanes < treeThreads && int64(2*lanes)*perLane <= treeScratch {
		lanes *= 2
	}
	return lanes
}

func lowerTreeEnsemble(l *lowering) error {
	d := l.p.m.ensembles[l.Node.Node]
	x := l.input(0)
	switch {
	case d == nil:
		return l.NoKernel("not laid out for the device")
	case d.why != "":
		return l.NoKernel("%s", d.why)
	case x.DType != d.x:
		return l.NoKernel("input X of %v, laid out for %v", x.DType, d.x)
	}
	rows, feats, err := mlMatrix(l, x)
	if err != nil {
		return err
	}
	if feats <= d.maxFeature {
		return l.NoKernel("X has %d features; the trees read feature %d", feats, d.maxFeature) // the host reports it
	}
	scores := []int{rows, d.targets}
	var y, labels operand
	yType := kernels.TREE_Y_F32
	if l.OpType == "TreeEnsembleClassifier" {
		if len(l.Out) > 0 && l.Out[0].Present() {
			if err := checkOut(l, 0, inference.Int64, scores[:1]); err != nil {
				return err
			}
			labels = l.Out[0]
		}
		if len(l.Out) > 1 && l.Out[1].Present() {
			if err := checkOut(l, 1, inference.Float32, scores); err != nil {
				return err
			}
			y = l.Out[1]
		}
	} else {
		yt := inference.Float32
		if l.OpType == "TreeEnsemble" && x.DType == inference.Float64 {
			yt, yType = inference.Float64, kernels.TREE_Y_F64
		}
		if err := checkOut(l, 0, yt, scores); err != nil {
			return err
		}
		y = l.Out[0]
	}
	if rows == 0 {
		return nil
	}
	lanes := treeLanes(rows, d.trees, d.targets, d.track)
	partial := l.Scratch(inference.Float64, []int{lanes, rows, d.targets})
	var has operand
	if d.track {
		has = l.Scratch(inference.Uint8, []int{lanes, rows, d.targets})
	}
	walk := kernels.TreeWalkF32
	switch {
	case x.DType == inference.Float64:
		walk = kernels.TreeWalkF64
	case d.in64:
		walk = kernels.TreeWalkF32F64
	}
	ensemble := operand{Name: "(tree ensemble)", DType: inference.Uint8, loc: loc{reg: regWeights, off: d.off}}
	if err := l.Launch(walk, int64(rows)*int64(lanes), ptrArg(ensemble), ptrArg(x), intArg(rows), intArg(feats), intArg(lanes),
		ptrArg(partial), optionalArg(has)); err != nil {
		return err
	}
	return l.Launch(kernels.TreeFinish, int64(rows), ptrArg(ensemble), intArg(rows), intArg(lanes), ptrArg(partial), optionalArg(has),
		optionalArg(y), intArg(yType), optionalArg(labels))
}
