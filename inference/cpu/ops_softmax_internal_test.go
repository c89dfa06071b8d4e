package cpu

import (
	"math"
	"testing"

	"github.com/beamml/beamml/inference/graph"
)

func TestSoftmaxOpsets(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 2, 2}, 0, 1, 2, 3)
	e := func(v float64) float32 { return float32(v) }
	// Softmax-11 at axis 1 normalises the flattened [1, 4] row.
	s := math.Exp(0) + math.Exp(1) + math.Exp(2) + math.Exp(3)
	old := runKernel(t, testNode("Softmax", 11, map[string]graph.Attr{"axis": attrInt(1)}, 1), x)[0]
	checkFloats(t, old, []int{1, 2, 2}, e(1/s), e(math.E/s), e(math.Exp(2)/s), e(math.Exp(3)/s))
	// Softmax-13 at axis 1 normalises each column of the 2×2 block.
	a, b := 1/(1+math.Exp(2)), math.Exp(2)/(1+math.Exp(2))
	cur := runKernel(t, testNode("Softmax", 13, map[string]graph.Attr{"axis": attrInt(1)}, 1), x)[0]
	checkFloats(t, cur, []int{1, 2, 2}, e(a), e(a), e(b), e(b))

	big := tensorOf[float32](t, []int{3}, 1000, 1001, 1000)
	ls := runKernel(t, testNode("LogSoftmax", 13, nil, 1), big)[0]
	l := math.Log(2 + math.E)
	checkFloats(t, ls, []int{3}, e(-1-l+1), e(-l+1), e(-1-l+1))
	hm := runKernel(t, testNode("Hardmax", 13, nil, 1), big)[0]
	checkFloats(t, hm, []int{3}, 0, 1, 0)
}
