package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the views: Reshape, Flatten, Squeeze, Unsqueeze, Identity
// and inference-mode Dropout, whose output is the input, maybe with
// another shape. The memory plan places a view's output at its input's
// bytes (graph.PlanMemoryViews), so it lowers to nothing; where it could
// not (the view's output is a graph output), and for Dropout, it is a
// device copy, for every element type (Dropout's mask is shape.cu's
// shape_fill; whether Dropout trains is opsem.DropoutMode's).

func init() {
	for _, op := range []string{"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"} {
		registerLowering(op, lowerView)
	}
	registerLowering("Dropout", lowerDropout)
	registerHalf("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
}

// lowerView lowers the operators whose output is the input with another
// shape: nothing when the plan put the output at the input's bytes, else
// a device copy.
func lowerView(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != y.DType || x.Len() != y.Len() {
		return l.NoKernel("%v%v viewed as %v%v", x.DType, x.Shape, y.DType, y.Shape)
	}
	if x.loc == y.loc {
		return nil
	}
	return l.Copy(y, x)
}

// lowerDropout lowers Dropout when opsem.DropoutMode says it does not
// train: the output is the input and the mask, when asked for, is all true
// (of opsem.DropoutMaskType).
func lowerDropout(l *lowering) error {
	x := l.In[0]
	var ratio []float32 // nil when left out or computed on the device
	var training []int64
	if r := l.input(1); r.Present() {
		if r.DType != inference.Float32 {
			return l.NoKernel("ratio of type %v", r.DType)
		}
		// A ratio computed on the device matters only to training,
		// which stays on the host.
		if t, ok := r.Host(); ok {
			ratio, _ = inference.Data[float32](t)
		} else if r.Len() != 1 {
			return l.NoKernel("ratio %v is not one float", r.Shape)
		}
	}
	if m := l.input(2); m.Present() {
		v, err := hostInts(l, m, "training_mode")
		if err != nil {
			return err
		}
		training = v
	}
	if _, err := opsem.DropoutMode(l.Node, ratio, training); err != nil {
		return l.NoKernel("%v", err)
	}
	if err := checkOut(l, 0, x.DType, x.Shape); err != nil {
		return err
	}
	if err := l.Copy(l.Out[0], x); err != nil {
		return err
	}
	if len(l.Out) < 2 || !l.Out[1].Present() {
		return nil
	}
	mt := opsem.DropoutMaskType(l.Node, x.DType)
	if err := checkOut(l, 1, mt, x.Shape); err != nil {
		return err
	}
	mask := l.Out[1]
	w, err := elemWidth(l, mt)
	if err != nil {
		return err
	}
	return l.Launch(kernels.ShapeFill, mask.Len(), ptrArg(mask), intArg(w), intArg(mask.Len()), intArg(int64(scalarBits(mt, 1))))
}
