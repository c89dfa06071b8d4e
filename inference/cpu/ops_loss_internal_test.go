package cpu

import (
	"errors"
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Float results are held to rtol 1e-4, atol 1e-5. The loss operators do
// not broadcast or change meaning between opsets, so the cases cover the
// layouts instead: N-D targets.

func TestNegativeLogLikelihoodLoss(t *testing.T) {
	// Log-probabilities of 2 samples over 3 classes; targets 0 and 2.
	x := tensorOf(t, []int{2, 3}, float32(-1), -2, -3, -4, -5, -6)
	target := tensorOf(t, []int{2}, int64(0), 2)
	weight := tensorOf(t, []int{3}, float32(1), 2, 3)

	loss := runKernel(t, testNode("NegativeLogLikelihoodLoss", 24, map[string]graph.Attr{"reduction": attrString("none")}, 1), x, target, weight)[0]
	checkFloats(t, loss, []int{2}, 1*1, 3*6)
	// mean divides by the weights applied: (1 + 18) / (1 + 3).
	loss = runKernel(t, testNode("NegativeLogLikelihoodLoss", 24, nil, 1), x, target, weight)[0]
	checkFloats(t, loss, []int{}, 19.0/4)
	// An ignored position counts neither in the sum nor in the divisor; the
	// target may be int32.
	ignore := testNode("NegativeLogLikelihoodLoss", 24, map[string]graph.Attr{"ignore_index": attrInt(2)}, 1)
	loss = runKernel(t, ignore, x, tensorOf(t, []int{2}, int32(0), 2))[0]
	checkFloats(t, loss, []int{}, 1)

	// N-D: [N=1, C=2, d=3], summed.
	x3 := tensorOf(t, []int{1, 2, 3}, float32(-1), -2, -3, -4, -5, -6)
	loss = runKernel(t, testNode("NegativeLogLikelihoodLoss", 24, map[string]graph.Attr{"reduction": attrString("sum")}, 1), x3, tensorOf(t, []int{1, 3}, int64(1), 0, 1))[0]
	checkFloats(t, loss, []int{}, 4+2+6)

	n := testNode("NegativeLogLikelihoodLoss", 24, nil, 1)
	if _, err := lsNLLLoss(n, []inference.Tensor{x, tensorOf(t, []int{2}, int64(0), 3)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("target 3 of 3 classes: err %v, want ErrShape", err)
	}
	if _, err := lsNLLLoss(n, []inference.Tensor{x, tensorOf(t, []int{3}, int64(0), 1, 2)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("target [3] for scores [2 3]: err %v, want ErrShape", err)
	}
}

func TestSoftmaxCrossEntropyLoss(t *testing.T) {
	// One sample, 2 classes, 2 positions: softmax(0, ln 3) = (1/4, 3/4) and
	// softmax(0, 0) = (1/2, 1/2); targets 1 and 0.
	ln3 := float32(math.Log(3))
	x := tensorOf(t, []int{1, 2, 2}, 0, 0, ln3, 0)
	target := tensorOf(t, []int{1, 2}, int64(1), 0)
	out := runKernel(t, testNode("SoftmaxCrossEntropyLoss", 24, map[string]graph.Attr{"reduction": attrString("none")}, 2), x, target)
	checkFloats(t, out[0], []int{1, 2}, float32(-math.Log(0.75)), float32(math.Ln2))
	checkFloats(t, out[1], []int{1, 2, 2},
		float32(math.Log(0.25)), float32(-math.Ln2), float32(math.Log(0.75)), float32(-math.Ln2))
	// Without the second output only the loss comes back.
	out = runKernel(t, testNode("SoftmaxCrossEntropyLoss", 24, nil, 1), x, target)
	if len(out) != 1 {
		t.Fatalf("%d outputs, want 1", len(out))
	}
	checkFloats(t, out[0], []int{}, float32((-math.Log(0.75)+math.Ln2)/2))

	if _, err := lsSoftmaxCrossEntropyLoss(testNode("SoftmaxCrossEntropyLoss", 24, nil, 1), []inference.Tensor{x, tensorOf(t, []int{1, 2}, float32(1), 0)}); !errors.Is(err, inference.ErrType) {
		t.Errorf("float target: err %v, want ErrType", err)
	}
}
