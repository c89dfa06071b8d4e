package cuda

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// float16 on the device. A float16 value of the model is float16 in
// device memory, two bytes an element: the GPU keeps the model's float16
// as it is (no passes.ComputeFloat16InFloat32, which the CPU backend
// runs). Every lowering computes in float32 and rounds what it stores to
// the nearest float16, which is the meaning that pass gives a model, node
// by node (and cpu.RunNode's, which runs a float16 node on the host and
// infers the plan's shapes: cpu's callKernel).
//
// A lowering that takes float16 operands itself registers its operators
// with registerHalf: it picks its kernels' float16 forms, which read float16
// into float32 and round once on the store (common.cuh's ld and st). Any
// other node with float16 operands is lowered in float32 between casts
// (lowerNode): each float16 input widened into scratch (an initializer
// or a plan constant widened once, on the host), the float32 lowering run,
// each float16 output rounded from scratch by one cast_convert.

// halfLowerings are the operators whose lowerings take float16 operands.
var halfLowerings = map[string]bool{}

// registerHalf records that the lowerings of ops take float16 operands.
func registerHalf(ops ...string) {
	for _, op := range ops {
		if _, ok := lowerings[op]; !ok {
			panic("cuda: registerHalf before registerLowering: " + op)
		}
		halfLowerings[op] = true
	}
}

// lowerNode lowers l's node with f, in float32 between casts when the node
// has float16 operands that f does not take.
func lowerNode(l *lowering, f lowerFunc) error {
	if halfLowerings[loweringKey(l.Node.Node)] || !hasHalf(l.In) && !hasHalf(l.Out) {
		return f(l)
	}
	return lowerInFloat32(l, f)
}

// lowerInFloat32 lowers l's node with f with its float16 operands widened
// to float32 and its float16 outputs rounded from float32 scratch. A
// lowering registered with registerHalf calls it for a mix of float16 and
// float32 operands that its kernels do not take.
func lowerInFloat32(l *lowering, f lowerFunc) error {
	in, out := slices.Clone(l.In), slices.Clone(l.Out)
	for i, o := range l.In {
		if o.DType == inference.Float16 {
			w, err := l.widen(o)
			if err != nil {
				return err
			}
			l.In[i] = w
		}
	}
	for i, o := range l.Out {
		if o.DType == inference.Float16 {
			l.Out[i] = l.Scratch(inference.Float32, o.Shape)
		}
	}
	err := f(l)
	if err == nil {
		for i, o := range out {
			if o.DType == inference.Float16 {
				if err = l.cast(o, l.Out[i]); err != nil {
					break
				}
			}
		}
	}
	l.In, l.Out = in, out // a node sent to the host reads and writes float16
	return err
}

func hasHalf(ops []operand) bool {
	return slices.ContainsFunc(ops, func(o operand) bool { return o.DType == inference.Float16 })
}

// widen returns the float32 copy of the float16 operand o: a plan constant
// when the host knows o, else scratch that a cast_convert fills.
func (l *lowering) widen(o operand) (operand, error) {
	if t, ok := o.Host(); ok {
		w, err := opsem.WidenToFloat32(nil, t)
		if err != nil {
			return operand{}, fmt.Errorf("cuda: node %v: input %q widened to float32: %w", l.Node, o.Name, err)
		}
		return l.p.constant(o.Name+"(float32)", w), nil
	}
	w := l.Scratch(inference.Float32, o.Shape)
	return w, l.cast(w, o)
}

// cast queues y = x converted to y's element type (cast_convert).
func (l *lowering) cast(y, x operand) error {
	from, ok1 := castCodes[x.DType]
	to, ok2 := castCodes[y.DType]
	if !ok1 || !ok2 || x.Len() != y.Len() {
		return l.Errorf(inference.ErrType, "cast of %v%v to %v%v", x.DType, x.Shape, y.DType, y.Shape)
	}
	return l.Launch(kernels.CastConvert, y.Len(), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(from), intArg(to))
}

// halfKernel picks the float32 or the float16 form of a kernel for element
// type t, or "" for other types.
func halfKernel(f32, f16 string, t inference.DType) string {
	switch t {
	case inference.Float32:
		return f32
	case inference.Float16:
		return f16
	}
	return ""
}
