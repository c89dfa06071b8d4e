package cpu

import (
	"math"

	"github.com/beamml/beamml/inference/graph/passes"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// clamp is a fused activation: y = min(max(y, lo), hi) when on.
type clamp struct {
	on     bool
	lo, hi float32
}

func (c clamp) apply(y []float32) {
	if !c.on {
		return
	}
	clamps(y, c.lo, c.hi) // NaN stays, as Relu and Clip keep it
}

// fusedClamp reads the activation passes.FuseActivations put on n.
func fusedClamp(n opsem.Node) clamp {
	if !n.Has(passes.FusedMin) {
		return clamp{}
	}
	return clamp{on: true, lo: n.Float(passes.FusedMin, float32(math.Inf(-1))), hi: n.Float(passes.FusedMax, float32(math.Inf(1)))}
}
