package opsem

import (
	"fmt"

	"github.com/beamml/beamml/inference"
)

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
