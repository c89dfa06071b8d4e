package opsem

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
)

// Reshape returns the output shape of Reshape of data of shape data.
// Reshape-1 takes the attribute shape (the operand is ignored), later
// versions the operand shape. A 0 copies data's dimension at the same
// position (with allowzero=1, from Reshape-14, it is a zero dimension), one
// −1 takes what the others leave of data's element count, and the element
// counts must agree. A −1 next to a zero dimension (copied, or a 0 with
// allowzero) is undetermined, an error, as numpy's reshape of an empty array
// to (0, −1) is.
func Reshape(n Node, data []int, shape []int64) ([]int, error) {
	if n.Opset < 5 {
		if !n.Has("shape") {
			return nil, fmt.Errorf("no shape attribute: %w", inference.ErrBadModel)
		}
		shape = n.Ints("shape", nil)
	}
	allowZero := n.Int("allowzero", 0) == 1
	out := make([]int, len(shape))
	infer := -1
	// known is ∏ out without the −1; overflow notes a product of nonzero
	// dimensions past int, an error unless a zero dimension makes it 0.
	known, overflow := 1, false
	for i, d := range shape {
		switch {
		case d == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("data %v, shape %v: more than one -1: %w", data, shape, inference.ErrShape)
			}
			infer = i
			continue
		case d == 0 && !allowZero:
			if i >= len(data) {
				return nil, fmt.Errorf("data %v, shape %v: dimension %d copies one data lacks: %w", data, shape, i, inference.ErrShape)
			}
			out[i] = data[i]
		case d < 0 || d > maxDim:
			return nil, fmt.Errorf("data %v, shape %v: dimension %d is %d: %w", data, shape, i, d, inference.ErrShape)
		default:
			out[i] = int(d)
		}
		if d := out[i]; d != 0 && known > math.MaxInt/d {
			overflow = true
		} else {
			known *= d
		}
	}
	if overflow && known != 0 {
		return nil, fmt.Errorf("data %v, shape %v: element count overflows: %w", data, shape, inference.ErrShape)
	}
	total := Count(data)
	if infer >= 0 {
		if known == 0 {
			return nil, fmt.Errorf("data %v, shape %v: a zero dimension leaves the -1 undetermined: %w", data, shape, inference.ErrShape)
		}
		if total%known != 0 {
			return nil, fmt.Errorf("data %v, shape %v: %d elements are not a multiple of the other dimensions' %d: %w", data, shape, total, known, inference.ErrShape)
		}
		out[infer] = total / known
	} else if known != total {
		return nil, fmt.Errorf("data %v, shape %v: %d elements, data has %d: %w", data, shape, known, total, inference.ErrShape)
	}
	return out, nil
}

// ShapeRange returns the dimensions Shape returns of an input of the given
// rank: [start, end). Shape-15's start and end count from the back when
// negative, then clamp to [0, rank]; before Shape-15 it is every dimension.
func ShapeRange(n Node, rank int) (start, end int) {
	r := int64(rank)
	clamp := func(v int64) int {
		if v < 0 {
			v += r
		}
		return int(min(max(v, 0), r))
	}
	return clamp(n.Int("start", 0)), clamp(n.Int("end", r))
}

// Dropout is whether a Dropout node trains, and its ratio. Outside
// training (or with ratio 0) its output is its input and its mask, when
// asked for, is all ones; training draws random masks, which the runtime
// does not implement.
type Dropout struct {
	Training bool
	Ratio    float64
}

// DropoutMode returns how Dropout runs: Dropout-1 to -6 train unless the
// attribute is_test is set, with the attribute ratio (default 0.5);
// Dropout-7 to -11 never train; from Dropout-12 the operands ratio (nil:
// 0.5) and training_mode (nil: false) say. Training with a nonzero ratio is
// an unsupported case.
func DropoutMode(n Node, ratio []float32, trainingMode []int64) (Dropout, error) {
	d := Dropout{Training: n.Opset < 7 && n.Int("is_test", 0) == 0, Ratio: float64(n.Float("ratio", 0.5))}
	if n.Opset >= 12 {
		d.Ratio = 0.5
		if ratio != nil {
			if len(ratio) != 1 {
				return d, fmt.Errorf("ratio %v is not one float: %w", ratio, inference.ErrShape)
			}
			d.Ratio = float64(ratio[0])
		}
		if trainingMode != nil {
			if len(trainingMode) != 1 {
				return d, fmt.Errorf("training_mode %v is not one value: %w", trainingMode, inference.ErrShape)
			}
			d.Training = trainingMode[0] != 0
		}
	}
	if d.Training && d.Ratio != 0 {
		return d, n.Unsupported("training mode")
	}
	return d, nil
}

// DropoutMaskType is the element type of Dropout's mask for an input of
// type x: bool from Dropout-10, x before.
func DropoutMaskType(n Node, x inference.DType) inference.DType {
	if n.Opset < 10 {
		return x
	}
	return inference.Bool
}
