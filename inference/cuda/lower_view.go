package cuda

import (
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the views: Reshape, Flatten, Squeeze, Unsqueeze, Identity
// and inference-mode Dropout, whose output is the input, maybe with
// another shape: a device copy, for every element type (Dropout's mask is
// shape.cu's shape_fill).

func init() {
	for _, op := range []string{"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"} {
		registerLowering(op, lowerView)
	}
	registerLowering("Dropout", lowerDropout)
}

// lowerView lowers the operators whose output is the input with another
// shape: a device copy.
func lowerView(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != y.DType || x.Len() != y.Len() {
		return l.NoKernel("%v%v viewed as %v%v", x.DType, x.Shape, y.DType, y.Shape)
	}
	return l.Copy(y, x)
}

// lowerDropout lowers inference-mode Dropout: the output is the input and
// the mask, when asked for, is all true (1 of the input's type before
// Dropout-10).
func lowerDropout(l *lowering) error {
	x := l.In[0]
	training := l.Opset < 7 && l.Int("is_test", 0) == 0
	ratio := float64(l.Float("ratio", 0.5))
	if l.Opset >= 12 {
		ratio = 0.5
		if r := l.input(1); r.Present() {
			if r.DType != inference.Float32 || r.Len() != 1 {
				return l.NoKernel("ratio %v%v is not one float", r.DType, r.Shape)
			}
			// Outside training the ratio is not used: a ratio computed
			// on the device matters only to training, which stays on
			// the host.
			ratio = math.NaN()
			if t, ok := r.Host(); ok {
				v, _ := inference.Data[float32](t)
				ratio = float64(v[0])
			}
		}
		if m := l.input(2); m.Present() {
			v, err := hostInts(l, m, "training_mode")
			if err != nil {
				return err
			}
			if len(v) != 1 {
				return l.NoKernel("training_mode has %d values", len(v))
			}
			training = v[0] != 0
		}
	}
	if training && ratio != 0 {
		return l.NoKernel("training mode")
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
	mt := inference.Bool
	if l.Opset < 10 {
		mt = x.DType
	}
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
