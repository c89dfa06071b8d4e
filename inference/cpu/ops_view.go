package cpu

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// View operators: Reshape, Flatten, Squeeze, Unsqueeze, Identity and
// Dropout (inference only) give their input a new shape or pass it on,
// sharing its data; Shape and Size describe it.

func init() {
	register("Reshape", vwReshape)
	register("Flatten", vwFlatten)
	register("Squeeze", vwSqueeze)
	register("Unsqueeze", vwUnsqueeze)
	register("Identity", vwIdentity)
	register("Dropout", vwDropout)
	register("Shape", vwShape)
	register("Size", vwSize)
}

// The view kernels keep their output's shape from run to run (opsem.Plan),
// and return their input's data under it (viewOutput): a run with the
// shapes of the one before allocates nothing. Inputs that are left out at
// the end are read with arg rather than padded (inputs), which would
// allocate.

func vwReshape(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	required := 2
	if n.Opset < 5 {
		required = 1 // Reshape-1 takes the attribute shape
	}
	if err := needInputs(in, required); err != nil {
		return nil, err
	}
	x := in[0]
	n = valuesKeyed(n, in, 1)
	shape, err := opsem.Plan(n, in, func() ([]int, error) {
		var spec []int64 // nil before Reshape-5, which takes the attribute
		if n.Opset >= 5 {
			var err error
			if spec, err = opsem.Int64s(in[1]); err != nil {
				return nil, fmt.Errorf("shape: %w", err)
			}
		}
		return opsem.Reshape(n, x.Shape(), spec)
	})
	if err != nil {
		return nil, err
	}
	return viewOutput(n, x, shape)
}

func vwFlatten(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	out, err := opsem.Plan(n, in, func() ([]int, error) {
		shape := x.Shape()
		// axis lies in [-rank, rank]; axis = rank gives [N, 1].
		axis := n.Int("axis", 1)
		if axis < 0 {
			axis += int64(len(shape))
		}
		if axis < 0 || axis > int64(len(shape)) {
			return nil, fmt.Errorf("axis %d out of range for %v: %w", n.Int("axis", 1), x, inference.ErrShape)
		}
		// The trailing block of a shape with no elements may not count within int.
		cols, err := inference.NumElements(shape[axis:])
		if err != nil {
			return nil, fmt.Errorf("%v flattened at axis %d: %w", x, axis, err)
		}
		return []int{opsem.Count(shape[:axis]), cols}, nil
	})
	if err != nil {
		return nil, err
	}
	return viewOutput(n, x, out)
}

// vwAxesOperand returns the axes a Squeeze/Unsqueeze-like node names: the
// axes attribute before opset since, input 1 from it on. ok is false when
// the node names none.
func vwAxesOperand(n opsem.Node, in []inference.Tensor, since int64) (axes []int64, ok bool, err error) {
	if n.Opset < since {
		if !n.Has("axes") {
			return nil, false, nil
		}
		return n.Ints("axes", nil), true, nil
	}
	if len(in) < 2 || !present(in[1]) {
		return nil, false, nil
	}
	axes, err = opsem.Int64s(in[1])
	if err != nil {
		return nil, false, fmt.Errorf("axes: %w", err)
	}
	return axes, true, nil
}

func vwSqueeze(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	n = valuesKeyed(n, in, 1)
	out, err := opsem.Plan(n, in, func() ([]int, error) { return vwSqueezed(n, in) })
	if err != nil {
		return nil, err
	}
	return viewOutput(n, x, out)
}

// vwSqueezed is Squeeze's output shape.
func vwSqueezed(n opsem.Node, in []inference.Tensor) ([]int, error) {
	x := in[0]
	shape := x.Shape()
	axes, given, err := vwAxesOperand(n, in, 13)
	if err != nil {
		return nil, err
	}
	drop := make([]bool, len(shape))
	// An empty axes list squeezes every 1, as onnxruntime does.
	if given && len(axes) > 0 {
		ax, err := opsem.NormAxes(axes, len(shape))
		if err != nil {
			return nil, fmt.Errorf("data %v: %w", x, err)
		}
		for _, a := range ax {
			if shape[a] != 1 {
				return nil, fmt.Errorf("data %v: axis %d has size %d, not 1: %w", x, a, shape[a], inference.ErrShape)
			}
			drop[a] = true
		}
	} else {
		for i, d := range shape {
			drop[i] = d == 1
		}
	}
	out := []int{}
	for i, d := range shape {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return out, nil
}

func vwUnsqueeze(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	n = valuesKeyed(n, in, 1)
	out, err := opsem.Plan(n, in, func() ([]int, error) { return vwUnsqueezed(n, in) })
	if err != nil {
		return nil, err
	}
	return viewOutput(n, x, out)
}

// vwUnsqueezed is Unsqueeze's output shape.
func vwUnsqueezed(n opsem.Node, in []inference.Tensor) ([]int, error) {
	x := in[0]
	axes, given, err := vwAxesOperand(n, in, 13)
	if err != nil {
		return nil, err
	}
	if !given {
		return nil, fmt.Errorf("no axes: %w", inference.ErrBadModel)
	}
	rank := x.Rank() + len(axes)
	ax, err := opsem.NormAxes(axes, rank)
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", x, err)
	}
	out := make([]int, rank)
	for _, a := range ax {
		out[a] = 1
	}
	shape := x.Shape()
	k := 0
	for i := range out {
		if !slices.Contains(ax, i) {
			out[i] = shape[k]
			k++
		}
	}
	return out, nil
}

func vwIdentity(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	return viewOutput(n, in[0], keptShape(n, in, 0))
}

// vwDropout is the inference form: the output is the input and the mask
// (of opsem.DropoutMaskType) keeps everything. Training with a nonzero
// ratio (opsem.DropoutMode) draws random masks: unsupported.
func vwDropout(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 3, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	var ratio []float32
	var training []int64
	if present(in[1]) {
		r, err := floats(in[1])
		if err != nil {
			return nil, fmt.Errorf("ratio %v is not a float: %w", in[1], inference.ErrType)
		}
		ratio = given(r)
	}
	if present(in[2]) {
		t, err := opsem.Int64s(in[2])
		if err != nil {
			return nil, fmt.Errorf("training_mode: %w", err)
		}
		training = given(t)
	}
	if _, err := opsem.DropoutMode(n, ratio, training); err != nil {
		return nil, err
	}
	outs := []inference.Tensor{x}
	if !wantsOutput(n, 1) {
		return outs, nil
	}
	one, err := scalarOf(opsem.DropoutMaskType(n, x.DType()), 1)
	if err != nil {
		return nil, err
	}
	zeros, err := limit.Make[int](n.Run, x.Len())
	if err != nil {
		return nil, err
	}
	mask, err := take(n.Run, one, x.Shape(), zeros, inference.Tensor{})
	return append(outs, mask), err
}

// vwValues is what Shape and Size keep from run to run: their output's
// shape and elements, which depend on their input's shape only.
type vwValues struct {
	shape  []int
	values []int64
}

// output returns p's elements, in a buffer from the run's pool, as the
// node's one output.
func (p *vwValues) output(n opsem.Node) ([]inference.Tensor, error) {
	out, err := limit.MakeOverwritten[int64](n.Run, p.shape...) // len(p.values) elements
	if err != nil {
		return nil, err
	}
	copy(out, p.values)
	return opsem.Single(n, p.shape, out)
}

func vwShape(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	p, _ := opsem.Plan(n, in, func() (*vwValues, error) {
		shape := in[0].Shape()
		start, end := opsem.ShapeRange(n, len(shape))
		out := []int64{}
		for i := start; i < end; i++ {
			out = append(out, int64(shape[i]))
		}
		return &vwValues{shape: []int{len(out)}, values: out}, nil
	})
	return p.output(n)
}

func vwSize(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	p, _ := opsem.Plan(n, in, func() (*vwValues, error) {
		return &vwValues{shape: []int{}, values: []int64{int64(in[0].Len())}}, nil
	})
	return p.output(n)
}
