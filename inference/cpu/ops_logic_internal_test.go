package cpu

import (
	"math"
	"testing"

	"github.com/beamml/beamml/inference/graph"
)

func TestGreaterBroadcast(t *testing.T) {
	a := tensorOf(t, []int{2, 3}, float32(1), 2, 3, 4, 5, 6)
	checkExact(t, runKernel(t, testNode("Greater", 13, nil, 1), a, tensorOf(t, nil, float32(3)))[0], []int{2, 3}, false, false, false, true, true, true)
}

func TestIsInf(t *testing.T) {
	checkExact(t, runKernel(t, testNode("IsInf", 10, map[string]graph.Attr{"detect_negative": attrInt(0)}, 1),
		tensorOf(t, []int{3}, float32(math.Inf(-1)), float32(math.Inf(1)), 1))[0], []int{3}, false, true, false)
}
