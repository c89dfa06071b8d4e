package opsem

import "math"

// ClipBounds returns the bounds of Clip-1 to Clip-10, which takes them as
// the attributes min and max. Left out, a bound is ∓inf in Clip-1 and
// ∓FLT_MAX from Clip-6 on. Clip-11 takes its bounds as inputs instead.
func ClipBounds(n Node) (lo, hi float32) {
	lo, hi = float32(math.Inf(-1)), float32(math.Inf(1))
	if n.Opset >= 6 {
		lo, hi = -math.MaxFloat32, math.MaxFloat32
	}
	return n.Float("min", lo), n.Float("max", hi)
}
